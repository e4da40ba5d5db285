"""What sessions cost in `sidecar top`, driven through Textual's pilot: the COST column of the
list (and its place as the terminal narrows) and the cost in the opened session, where it came
from included. The demo workspace is real files (support/top_demo.py), given the cost object
the daemon records (docs/cost.md)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson

from sidecar.base.ids import harness_id
from sidecar.layout import Workspace
from sidecar.live.feed import Feed
from sidecar.top import view
from sidecar.top.app import TopApp
from support import top_demo

DONE, EXIT, ASKS = "e5a8f3d1-done", "f6b2c7e9-exit", "b21d44f0-asks"


def priced(ws: Workspace, session: str, cost: dict) -> None:
    path = ws.session_dir(harness_id(top_demo.HOST, session)) / "session.json"
    record = orjson.loads(path.read_bytes())
    record["metadata"]["sidecar"]["cost"] = cost
    path.write_bytes(orjson.dumps(record))


def demo(tmp_path: Path) -> Workspace:
    ws = top_demo.build(tmp_path / "demo", time.time())
    priced(ws, DONE, {"usd": 0.4213, "source": "table", "models": ["claude-sonnet-4-5"],
                      "unpriced": [], "days": {}})
    priced(ws, EXIT, {"usd": None, "source": "unknown", "models": [], "unpriced": [], "days": {},
                      "why": "the host names no model"})
    return ws


def run(check, ws: Workspace, size: tuple[int, int]) -> None:
    async def main() -> None:
        app = TopApp(Feed([ws.root]))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            if size[0] >= 140:
                await pilot.press("d")  # the detail beside hidden: the list takes the width
            await check(app, pilot)

    asyncio.run(main())


def lines(app: TopApp) -> list[str]:
    return [app.list.render_line(y).text for y in range(app.list.size.height)]


def test_the_list_shows_each_sessions_cost_in_its_column(tmp_path):
    ws = demo(tmp_path)

    async def check(app, pilot):
        shown = lines(app)
        start, end = view.place("COST", 150)
        cell = {sid: next(line for line in shown if sid[:12] in line)[start:end].strip()
                for sid in (DONE, EXIT, ASKS)}
        assert cell == {DONE: "$0.42", EXIT: "?", ASKS: "—"}

    run(check, ws, (150, 30))


def test_the_cost_stays_at_120_columns_where_the_tokens_give_way(tmp_path):
    ws = demo(tmp_path)

    async def check(app, pilot):
        [row] = [line for line in lines(app) if DONE[:8] in line]
        assert "$0.42" in row and "191.7k" not in row

    run(check, ws, (120, 30))


def test_the_opened_session_says_its_cost_and_where_it_came_from(tmp_path):
    ws = demo(tmp_path)

    async def check(app, pilot):
        await pilot.press("slash", *"e5a8f3d1-d", "enter", "enter")
        for _ in range(100):
            await pilot.pause(0.02)
            if app.screen.query("#detail"):
                break
        text = str(app.screen.query_one("#detail").render())
        assert "cost       $0.42 (priced by the genai-prices table; claude-sonnet-4-5)" in text
        await pilot.press("escape", "slash", *["backspace"] * 10, *"f6b2", "enter", "enter")
        for _ in range(100):
            await pilot.pause(0.02)
            if app.screen.query("#detail") and "f6b2" in str(app.screen.query_one("#detail").render()):
                break
        text = str(app.screen.query_one("#detail").render())
        assert "cost       unknown: the host names no model" in text

    run(check, ws, (150, 30))
