"""Regenerate docs/assets/web-{list,detail}-{desktop,phone}.png: `sidecar web` on the demo
workspace (top_demo.py: a session in every state, a follow-up queued and one fired with its
log), in headless Chromium (Debian's, through Playwright: tests/support/browser.py) at a
desktop's 1280×800 and a phone's 390×844.

Run: .venv/bin/python tests/support/web_screenshot.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

from support import top_demo  # noqa: E402
from support.browser import DESKTOP, PHONE, Served, chromium, signed_in  # noqa: E402

ASSETS = TESTS.parent / "docs" / "assets"
OPENED = "e5a8f3d1-done"  # ended, its post-task queued, an earlier one fired with its log


def shoot(browser: Any, web: Served, size: dict[str, int], name: str) -> None:
    phone = size == PHONE
    page = signed_in(browser, web.base, web.token, size, mobile=phone)
    page.locator("#rows tr", has_text=OPENED).wait_for()
    page.wait_for_selector("#live.on")
    page.screenshot(path=ASSETS / f"web-list-{name}.png")
    page.locator("#rows tr", has_text=OPENED).click()
    page.locator("#d-timeline li").first.wait_for()
    page.screenshot(path=ASSETS / f"web-detail-{name}.png")
    page.context.close()
    print(f"wrote {ASSETS}/web-list-{name}.png and web-detail-{name}.png")


def main() -> None:
    now = time.time()
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config"
        config.mkdir()
        os.environ["SIDECAR_CONFIG_HOME"] = str(config)  # the demo's trust, and the web's token
        roots = [Path(folder) / "my-project"]
        top_demo.build(roots[0], now)
        web = Served(roots, config)
        try:
            with chromium() as browser:
                shoot(browser, web, DESKTOP, "desktop")
                shoot(browser, web, PHONE, "phone")
        finally:
            web.stop()


if __name__ == "__main__":
    main()
