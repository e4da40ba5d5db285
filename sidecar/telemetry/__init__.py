"""OpenTelemetry export by the daemon: each session a trace (see docs/opentelemetry.md)."""
