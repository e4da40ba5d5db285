"""sidecar: a filesystem-native daemon that owns the session lifecycle of AI coding agents."""

__version__ = "0.1.0"
