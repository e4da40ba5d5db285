"""Headless Chromium, driven through Playwright for Python: the browser the web view's tests,
its screenshots and its benchmark use.

The chromium is Debian's (`apt-get install chromium`, tests/install-browser.sh), launched by
its path: Playwright's own browser download is never used. One browser is started per test
module or script; each page gets a context of its own (cookies, viewport), so pages never
share a sign-in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("chromium is not installed: run tests/install-browser.sh "
                           "(apt-get install chromium)")
    return found


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (a Playwright Browser), closed at the end."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise RuntimeError("Playwright for Python is not installed: run tests/install-browser.sh") from exc
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium_path(), headless=True,
            # --no-sandbox: root in a container has no user namespace for Chromium's sandbox
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            browser.close()


def signed_in(browser: Any, base: str, token: str, size: dict[str, int] | None = None,
              mobile: bool = False) -> Any:
    """A page of its own context, signed in as its user would be: by opening the address with
    the token `sidecar web` printed (the server then sets its cookie and drops the token from
    the address)."""
    context = browser.new_context(viewport=size or DESKTOP, is_mobile=mobile, has_touch=mobile,
                                  device_scale_factor=2 if mobile else 1)
    page = context.new_page()
    page.goto(f"{base}?token={token}")
    return page


class Served:
    """A real `sidecar web` on a free loopback port, for the screenshots and the benchmark:
    its address (`base`, ending in /) from the line it prints, its token from its file."""

    def __init__(self, roots: list[Path], config_home: Path, env: dict[str, str] | None = None) -> None:
        from helpers import SIDECAR

        args = [a for root in roots for a in ("--root", str(root))]
        self.proc = subprocess.Popen([SIDECAR, "web", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {}),
                                          "SIDECAR_CONFIG_HOME": str(config_home)})
        assert self.proc.stdout is not None
        seen = b""
        for line in self.proc.stdout:  # the serving line comes first
            seen += line
            found = re.search(rb"sidecar web: serving on (http://\S+/)", line)
            if found:
                self.base = found.group(1).decode()
                break
        else:
            raise RuntimeError(f"sidecar web did not start: {seen.decode(errors='replace')}")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # the pipe never fills
        self.token = (config_home / "web-token").read_text().strip()

    def stop(self) -> None:
        from helpers import terminate

        terminate(self.proc, 10)
