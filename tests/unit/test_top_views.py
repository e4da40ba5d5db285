"""`sidecar top`'s views, driven through Textual's pilot: the detail beside the list (and what it
reads when), grouping by workspace and folding a group, each sort, the header's counts and next
follow-up, errors in red, and the MACHINE column of rows another machine published.

The workspaces are real files made by sidecar's own ingestion (support/top_demo.py), followed
through the real folder watch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Callable
from pathlib import Path

import inotify_simple
import orjson
from rich.style import Style

from sidecar.base.ids import harness_id
from sidecar.followups.store import HookStore
from sidecar.live.feed import Feed
from sidecar.live.timeline import Gathered
from sidecar.top import table as top_table
from sidecar.top import view
from sidecar.top.app import TopApp
from sidecar.top.listing import SessionList
from sidecar.views.sessions import RowKey, SessionRow
from support import top_demo
from support.stores import drop, ingestor

WIDE, NARROW = (170, 30), (120, 30)
ASKS, WORK, LIMIT, DONE = "b21d44f0-asks", "7f3a9c1e-work", "d4471b2c-limit", "e5a8f3d1-done"
EXIT = "f6b2c7e9-exit"
# inotify_simple finds libc through ldconfig (a process) on its first instance: made here, at
# collection, so the real watch the tests follow files with starts none.
inotify_simple.INotify().close()


def lines(app: TopApp) -> list[str]:
    return [app.list.render_line(y).text for y in range(app.list.size.height)]


def shown(app: TopApp) -> list[str]:
    return [line for line in lines(app) if line.strip()]


def beside(app: TopApp) -> str:
    return str(app.query_one("#beside-text").render())


def text_of(app: TopApp, selector: str) -> str:
    return str(app.query_one(selector).render())


def drive(feed, check, size: tuple[int, int] = WIDE, follow: bool = False) -> None:
    async def main() -> None:
        app = TopApp(feed, follow=follow)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await check(app, pilot)

    asyncio.run(main())


async def until(pilot, predicate: Callable[[], object], timeout: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not shown in time"
        await pilot.pause(0.02)


class CountedFeed(Feed):
    """The real feed, counting the detail's file reads."""

    def __init__(self, roots: list[Path]) -> None:
        super().__init__(roots)
        self.gathered: list[str] = []

    def gather(self, row: SessionRow) -> Gathered | None:
        self.gathered.append(row.session_id)
        return super().gather(row)


class Elsewhere(Feed):
    """Rows as the fleet gives them: another machine's sessions, whose files stay there. The
    rows are real ones, each named as published by `laptop`."""

    def load(self) -> None:
        super().load()
        self.rows = {row.key: row for row in (dataclasses.replace(r, machine="laptop")
                                              for r in self.rows.values())}

    def gather(self, row: SessionRow) -> Gathered | None:
        return None if row.machine else super().gather(row)


def test_the_selected_sessions_detail_shows_beside_the_list_and_follows_the_cursor(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())
    feed = CountedFeed([ws.root])

    async def check(app, pilot):
        assert app.query_one("#beside").display
        assert shown(app)[0].startswith("claude-code demo") and ASKS[:8] in shown(app)[0]
        text = beside(app)
        assert f"session {ASKS}" in text and "asked for permission" in text
        assert "TIMELINE" in text and "needs.input" in text and "FOLLOW-UPS" in text
        assert "WHY" not in text_of(app, "#head")  # the detail beside says it
        await pilot.press("down")
        await until(pilot, lambda: f"session {LIMIT}" in beside(app))
        await pilot.click(SessionList, offset=(5, 2))  # a click selects the third line
        await until(pilot, lambda: f"session {WORK}" in beside(app))
        await pilot.press("up")
        assert "usage limit reached, resets in 2 hours" in beside(app)
        reads = len(feed.gathered)
        await pilot.pause(1.3)  # a tick redraws the countdowns: no file is read again
        assert len(feed.gathered) == reads
        await pilot.press("slash", *DONE[:6], "enter")  # the cursor follows it
        await until(pilot, lambda: f"session {DONE}" in beside(app))
        text = beside(app)
        assert "post-task due in" in text and "| All 14 tests pass; committed the fix." in text
        assert "s sort · g group · space fold · d detail" in text_of(app, "#foot")
        await pilot.press("d")  # hidden: the list takes the width, WHY back
        assert not app.query_one("#beside").display and "WHY" in text_of(app, "#head")

    drive(feed, check)


def test_the_detail_beside_shows_a_new_event_of_the_selected_session(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())

    async def check(app, pilot):
        await pilot.press("slash", *WORK[:6], "enter")
        await until(pilot, lambda: f"session {WORK}" in beside(app))
        assert "Read" not in beside(app)
        now = time.time()
        drop(ws, "tool.json", orjson.dumps({"event": "tool-use", "session_id": WORK, "ts": now,
                                            "host": top_demo.HOST, "tool_name": "Read"}), now - 60)
        ingestor(ws).drain(now)
        await until(pilot, lambda: "last tool Read" in beside(app) and "tool.use" in beside(app))

    drive(Feed([ws.root]), check, follow=True)


def test_the_detail_reads_its_files_again_for_its_own_session_only(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())
    feed = CountedFeed([ws.root])

    def event(session: str, name: str, tool: str) -> None:
        now = time.time()
        drop(ws, name, orjson.dumps({"event": "tool-use", "session_id": session, "ts": now,
                                     "host": top_demo.HOST, "tool_name": tool}), now - 60)
        ingestor(ws).drain(now)

    async def check(app, pilot):
        await pilot.press("slash", *WORK[:6], "enter")
        await until(pilot, lambda: f"session {WORK}" in beside(app))
        await pilot.press("enter")  # and full screen, over it
        await until(pilot, lambda: app.screen.query("#detail"))
        await until(pilot, lambda: f"session {WORK}" in text_of(app.screen, "#detail"))
        reads = len(feed.gathered)
        event(ASKS, "other.json", "Grep")  # another session: its change reads nothing here
        await until(pilot, lambda: "Grep" in str(app.feed.rows.values()))
        await pilot.pause(0.2)
        assert len(feed.gathered) == reads
        event(WORK, "mine.json", "Edit")  # its own: read again, by each view of it
        await until(pilot, lambda: "tool.use" in text_of(app.screen, "#detail")
                    and "last tool Edit" in text_of(app.screen, "#detail"))
        await pilot.pause(0.2)
        after = len(feed.gathered)
        assert after > reads and set(feed.gathered[reads:]) == {WORK}
        await pilot.pause(1.2)  # and not again on the clock
        assert len(feed.gathered) == after

    drive(feed, check, follow=True)


def test_cancel_from_beside_the_detail_shows_there_by_the_files_own_event(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())

    async def check(app, pilot):
        await pilot.press("slash", *DONE[:6], "enter")
        await until(pilot, lambda: "post-task due in" in beside(app))
        await pilot.press("c")
        await until(pilot, lambda: "post-task cancelled by the user" in beside(app))
        assert "0 follow-ups queued" in text_of(app, "#summary")
        assert "next:" not in text_of(app, "#summary")

    drive(Feed([ws.root]), check, follow=True)


def test_a_failed_firing_and_its_last_log_lines_are_red_beside_the_list(tmp_path):
    now = time.time()
    ws = top_demo.build(tmp_path / "demo", now)
    log = ws.logs / "hooks" / "post-task" / "failed.log"
    log.write_text("$ header\nstarting claude\nerror: the model refused the resume\n")
    HookStore(ws, durable=False).change(now, lambda doc: doc.hooks["post-task"].record_firing(
        "error: exit status 1", now - 30, top_demo.HOST, EXIT, str(log)))

    async def check(app, pilot):
        await pilot.press("slash", *EXIT[:6], "enter")
        await until(pilot, lambda: f"session {EXIT}" in beside(app))
        shown_now = app.query_one("#beside-text").render()
        text = str(shown_now)
        red = {text[span.start:span.end] for span in shown_now.spans if "red" in str(span.style)}
        assert any(part.startswith("  post-task error: exit status 1 ") for part in red), red
        assert "    | error: the model refused the resume" in red

    drive(Feed([ws.root]), check)


def test_a_line_added_to_the_selected_sessions_trace_shows_beside_at_once(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())
    trace = ws.session_dir(harness_id(top_demo.HOST, ASKS)) / "trace.jsonl"

    async def check(app, pilot):
        await until(pilot, lambda: f"session {ASKS}" in beside(app))
        with trace.open("ab") as out:  # as the daemon appends: the record itself unchanged
            out.write(orjson.dumps({"event": "note.added", "message": "a line of its own",
                                    "createdAt": "2026-01-01T00:00:00Z"}) + b"\n")
        await until(pilot, lambda: "note.added" in beside(app), timeout=0.5)  # not the tick

    drive(Feed([ws.root]), check, follow=True)


def test_a_narrow_terminal_shows_no_detail_beside_and_enter_opens_it(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())

    async def check(app, pilot):
        assert not app.query_one("#beside").display
        assert "WHY" in text_of(app, "#head")
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.query("#detail"))
        await until(pilot, lambda: f"session {ASKS}" in text_of(app.screen, "#detail"))

    drive(Feed([ws.root]), check, size=NARROW)


def test_grouping_by_workspace_with_counts_and_folding_a_group(tmp_path):
    now = time.time()
    first = top_demo.build(tmp_path / "alpha", now)
    second = top_demo.build(tmp_path / "beta", now)

    async def check(app, pilot):
        await pilot.press("g")
        rows = shown(app)
        assert rows[0].startswith(
            "▾ alpha · 6 sessions · 1 working · 1 waiting for you · 1 usage limit · /")
        assert len(rows) == 14 and rows[7].startswith("▾ ") and "beta" in rows[7]
        assert "by workspace" in text_of(app, "#foot")
        await pilot.press("space")  # on a row of alpha: alpha folds, the cursor on its line
        rows = shown(app)
        assert rows[0].startswith("▸ ") and "alpha" in rows[0] and "beta" in rows[1]
        assert len(rows) == 8 and app.list.cursor == 0
        assert "12 sessions" in text_of(app, "#summary")  # the counts are of every session
        await pilot.press("down", "space")  # beta's line: beta folds too
        assert [row[:2] for row in shown(app)] == ["▸ ", "▸ "]
        await pilot.press("up", "enter")  # enter on a workspace's line opens it again
        assert len(shown(app)) == 8 and shown(app)[0].startswith("▾ ")
        await pilot.press("g")
        assert len(shown(app)) == 12 and not any(row.startswith(("▾", "▸")) for row in shown(app))

    drive(Feed([first.root, second.root]), check, size=NARROW)


def test_each_sort_in_turn(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())
    priced = ws.session_dir(harness_id(top_demo.HOST, "c90e12ab-idle")) / "session.json"
    record = orjson.loads(priced.read_bytes())
    record["metadata"]["sidecar"]["cost"] = {"usd": 3.5, "source": "table", "models": []}
    priced.write_bytes(orjson.dumps(record))

    async def check(app, pilot):
        def order() -> list[str]:
            return [line.split()[2][:8] for line in shown(app)]

        rows = {row.session_id[:8]: row for row in app.feed.rows.values()}
        assert order()[:3] == ["b21d44f0", "d4471b2c", "7f3a9c1e"]  # who needs you first
        expected = {
            "last activity": sorted(rows, key=lambda s: -(rows[s].updated_at or 0)),
            "cost": ["c90e12ab"],  # the only priced one, before every unpriced
            "host": sorted(rows, key=lambda s: (rows[s].host, view.sort_key(rows[s]))),
            "started": sorted(rows, key=lambda s: -(rows[s].started_at or 0)),
            "needs you": ["b21d44f0", "d4471b2c", "7f3a9c1e"],
        }
        for name, first in expected.items():
            await pilot.press("s")
            assert f"sorted by {name}" in text_of(app, "#foot")
            assert order()[:len(first)] == first, name

    drive(Feed([ws.root]), check, size=NARROW)


def test_the_header_counts_and_names_the_next_follow_up_and_errors_are_red(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())

    async def check(app, pilot):
        head = text_of(app, "#summary")
        assert head.startswith("1 working · 1 waiting · 1 limited · 1 follow-up queued · 6 sessions")
        assert "next: post-task for claude-code e5a8f3d1 in " in head
        y = next(i for i, line in enumerate(lines(app)) if LIMIT[:8] in line)
        styles = {seg.text.strip(): seg.style for seg in app.list.render_line(y) if seg.text.strip()}
        assert styles["usage limit"].color == Style.parse("red").color
        app.feed.errors["x"] = "cannot read the record"
        app.show_footer()
        foot = app.query_one("#foot").render()
        assert all(str(span.style) in ("bold red", "red") for span in foot.spans
                   if "cannot read" in str(foot)[span.start:span.end])

    drive(Feed([ws.root]), check, size=NARROW)


def test_another_machines_rows_show_a_machine_column_and_their_files_stay_there(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())

    async def check(app, pilot):
        assert text_of(app, "#head").split()[:2] == ["MACHINE", "HOST"]
        assert all(line.startswith("laptop ") for line in shown(app))
        assert "its timeline and logs stay on laptop" in beside(app)
        assert f"session {ASKS} on laptop" in beside(app)
        await pilot.press("slash", *"lapt", "enter")  # the filter reads the machine too
        assert len(shown(app)) == 6

    drive(Elsewhere([ws.root]), check)
    drive(Feed([ws.root]), lambda app, pilot: _no_machine(app))


async def _no_machine(app: TopApp) -> None:
    assert "MACHINE" not in text_of(app, "#head")


def test_the_table_taken_up_change_by_change_is_the_table_sorted_whole(tmp_path):
    """What keeps 10,000 sessions cheap (a changed row put back in its place, the counts
    moved by it) shows exactly what sorting every row again shows."""
    ws = top_demo.build(tmp_path / "demo", time.time())
    feed = Feed([ws.root])
    feed.load()
    pool = list(feed.rows.values())
    shuffle = random.Random(36)
    rows: dict[RowKey, SessionRow] = {}
    for grouped in (False, True):
        kept = top_table.Table()
        kept.grouped = grouped
        for step in range(300):
            base = shuffle.choice(pool)
            made = dataclasses.replace(base, harness_id=f"{base.harness_id}-{step % 40}",
                                       root=Path(f"/w/{step % 3}"),
                                       updated_at=shuffle.random() * 1e6)
            if shuffle.random() < 0.2:
                rows.pop(made.key, None)
            else:
                rows[made.key] = made
            kept.sort = step // 60
            kept.update(rows, step)
            whole = top_table.Table()
            whole.grouped, whole.sort = grouped, kept.sort
            whole.update(rows, step)
            assert [item.key for item in kept.items] == [item.key for item in whole.items]
            assert kept.counts == whole.counts == view.counts(rows.values(), len(rows))
            assert kept.next == whole.next
            for at, item in enumerate(kept.items):
                assert kept.index_of(item.key) == at
