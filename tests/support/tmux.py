"""A private tmux server (its own socket) holding one window: a real terminal for a TUI under
test, driven by its keys and read back from its screen."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path


class Tmux:
    def __init__(self, socket: Path, width: int = 160, height: int = 45) -> None:
        self.base = ["tmux", "-S", str(socket)]
        self.size = (str(width), str(height))

    def start(self, argv: list[str], env: dict[str, str], cwd: Path | None = None, *,
              unsized: bool = False, keep_open: bool = False) -> None:
        """Run `argv` in the window with `env`. `unsized`: without the test process's COLUMNS
        and LINES, which would size the program instead of the window. `keep_open`: the
        window stays after the program ends, showing `exit=<status>`."""
        command = shlex.join(["env", *(["-u", "COLUMNS", "-u", "LINES"] if unsized else []),
                              *(f"{k}={v}" for k, v in env.items()), *argv])
        if keep_open:
            command += "; echo exit=$?; sleep 30"
        where = ["-c", str(cwd)] if cwd is not None else []
        subprocess.run([*self.base, "new-session", "-d", "-x", self.size[0], "-y", self.size[1],
                        *where, command], check=True)

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run([*self.base, "send-keys", *(["-l"] if literal else []), *keys], check=True)

    def type(self, text: str) -> None:
        """Type `text` as it is, then Enter."""
        self.keys(text, literal=True)
        self.keys("Enter")

    def screen(self) -> str:
        return subprocess.run([*self.base, "capture-pane", "-p"], capture_output=True,
                              text=True).stdout

    def stop(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)
