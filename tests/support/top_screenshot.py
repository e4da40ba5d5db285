"""Regenerate docs/assets/top.svg: `sidecar top` on the demo workspace (top_demo.py), a session
in every state, as Textual saves its own screen.

Run: .venv/bin/python tests/support/top_screenshot.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

from sidecar.top.app import TopApp  # noqa: E402
from sidecar.views.feed import Feed  # noqa: E402
from support import top_demo  # noqa: E402

TARGET = TESTS.parent / "docs" / "assets" / "top.svg"


async def shoot(root: Path, now: float, target: Path) -> None:
    app = TopApp(Feed([root]), clock=lambda: now, follow=False)
    async with app.run_test(size=(140, 14)) as pilot:
        await pilot.pause()
        target.write_text(app.export_screenshot(title="sidecar top"))


def main() -> None:
    now = time.time()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "my-project"
        top_demo.build(root, now)
        asyncio.run(shoot(root, now, TARGET))
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
