"""Regenerate docs/assets/top.svg and top-grouped.svg: `sidecar top` on the demo workspaces
(top_demo.py), a session in every state, as Textual saves its own screen: the list with the
selected session's detail beside it, and (narrower) the sessions grouped by workspace.

Run: .venv/bin/python tests/support/top_screenshot.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

from sidecar.live.feed import Feed  # noqa: E402
from sidecar.top.app import TopApp  # noqa: E402
from support import top_demo  # noqa: E402

ASSETS = TESTS.parent / "docs" / "assets"


async def shoot(roots: list[Path], now: float, target: Path, size: tuple[int, int],
                keys: tuple[str, ...] = ()) -> None:
    app = TopApp(Feed(roots), clock=lambda: now, follow=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        target.write_text(app.export_screenshot(title="sidecar top"))


def main() -> None:
    now = time.time()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["HOME"] = folder  # the paths read `~/my-project`, as on a user's machine
        project = Path(folder) / "my-project"
        other = Path(folder) / "api-server"
        top_demo.build(project, now)
        top_demo.build(other, now - 3600)
        asyncio.run(shoot([project], now, ASSETS / "top.svg", (170, 24), ("down",)))
        asyncio.run(shoot([project, other], now, ASSETS / "top-grouped.svg", (120, 16),
                          ("g", "space")))
    print(f"wrote {ASSETS / 'top.svg'} and {ASSETS / 'top-grouped.svg'}")


if __name__ == "__main__":
    main()
