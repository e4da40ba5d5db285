"""Cline CLI: the host (`host.py`) and its hook files (`hooks.py`, integration code)."""
