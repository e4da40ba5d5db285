"""Codex: the host (`host.py`); its hooks and their trust (`hooks.py`) and its config.toml
(`config_toml.py`), integration code imported only to integrate or check."""
