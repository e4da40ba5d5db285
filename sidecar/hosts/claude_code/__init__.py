"""Claude Code: the host (`host.py`) and its status line (`statusline.py`, integration code)."""
