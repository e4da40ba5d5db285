"""The web view's tests share a real `sidecar web` process: `serve_web(*roots)` starts one on a
free loopback port, reads the address from the line it prints, and stops it at the end."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import SIDECAR, terminate

SERVING = re.compile(rb"sidecar web: serving on (https?://\S+/)")


class WebProcess:
    """A real `sidecar web`: its address (`base`, ending in /), its token, what it printed."""

    def __init__(self, args: list[str], env: dict[str, str] | None, config_home: Path, log: Path) -> None:
        self.log_path = log
        with open(log, "wb") as err:
            self.proc = subprocess.Popen([SIDECAR, "web", "--port", "0", *args], stdout=subprocess.PIPE,
                                         stderr=err, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **(env or {})})
        self.lines: list[bytes] = []
        self.base = ""
        found = threading.Event()

        def read() -> None:  # the first line says where; the rest is kept for failures
            assert self.proc.stdout is not None
            with self.proc.stdout:
                for line in self.proc.stdout:
                    self.lines.append(line)
                    match = SERVING.search(line)
                    if match and not self.base:
                        self.base = match.group(1).decode()
                    if self.base and line.startswith(b"open "):  # the next: how to sign in
                        found.set()
            found.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not found.wait(20) or not self.base:
            terminate(self.proc, 5)
            raise AssertionError(f"sidecar web did not start: {self.output()}")
        self.token = (config_home / "web-token").read_text().strip()

    def output(self) -> str:
        return (b"".join(self.lines) + self.log_path.read_bytes()).decode(errors="replace")

    def stop(self) -> int | None:
        code = terminate(self.proc, 10)
        self.reader.join(5)
        return code


@pytest.fixture
def serve_web(config_home: Path, tmp_path: Path) -> Iterator[Callable[..., WebProcess]]:
    started: list[WebProcess] = []

    def start(*roots: Path, extra: list[str] | None = None,
              env: dict[str, str] | None = None) -> WebProcess:
        args = [a for root in roots for a in ("--root", str(root))] + (extra or [])
        web = WebProcess(args, env, config_home, tmp_path / f"web-{len(started)}.log")
        started.append(web)
        return web

    try:
        yield start
    finally:
        for web in started:
            web.stop()
