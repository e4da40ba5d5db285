"""GitHub Copilot CLI: the host (`host.py`) and its hooks in its own flat shape (`hooks.py`,
integration code)."""
