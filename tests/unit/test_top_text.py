"""`sidecar top` shows what hosts and logs say as text, never as markup; reads no hard-linked
file; and its footer and columns fit a 120- and a 100-column terminal.

Hosts' messages, traces, firing logs, paths and error texts are arbitrary text: a bracket in
any of them must show as itself, not end the app or become a clickable action, and a
control character shows escaped, never reaching the terminal.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import orjson

from sidecar.base import words
from sidecar.base.ids import harness_id
from sidecar.config import Config
from sidecar.daemon.ingest import Ingestor
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.sessions.store import SessionStore
from sidecar.top import view
from sidecar.top.app import DetailScreen, TopApp
from sidecar.top.feed import Feed
from support import top_demo

ASKS = "b21d44f0-asks"
DONE = "e5a8f3d1-done"


def demo(tmp_path: Path) -> tuple[Workspace, float]:
    now = time.time()
    return top_demo.build(tmp_path / "demo", now), now


def drive(ws: Workspace, check, size: tuple[int, int] = (150, 30),
          notes: list[str] | None = None, roots: list[Path] | None = None) -> None:
    async def main() -> None:
        app = TopApp(Feed(roots or [ws.root]), follow=False, notes=notes)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await check(app, pilot)

    asyncio.run(main())


def shown(app: TopApp) -> list[str]:
    return [app.list.render_line(y).text for y in range(app.list.size.height)]


def footer(app: TopApp) -> str:
    return str(app.query_one("#foot").render())


def detail_text(app: TopApp) -> str:
    return str(app.screen.query_one("#detail").render())


async def opened(app: TopApp, pilot) -> None:
    """Until the session's detail screen has mounted its text (a loaded machine may take
    more than one pause to compose a pushed screen)."""
    for _ in range(100):
        await pilot.pause()
        if app.screen.query("#detail"):
            return
        await pilot.pause(0.05)
    raise AssertionError("the detail screen never showed its text")


def ask(ws: Workspace, now: float, message: str) -> None:
    """The host asks the user, saying `message` (as Claude Code's Notification does)."""
    payload = {"event": "needs-input", "session_id": ASKS, "host": top_demo.HOST, "ts": now,
               "notification_type": "permission_prompt", "message": message}
    (ws.inbox / "ask.json").write_bytes(orjson.dumps(payload))
    os.utime(ws.inbox / "ask.json", (now - 60, now - 60))
    Ingestor(SessionStore(ws, durable=False), FollowUpQueue(HookStore(ws), "t"),
             lambda: Config(), lambda changes: None).drain(now + 60)


def firing_log(ws: Workspace) -> Path:
    [log] = (ws.logs / "hooks" / "post-task").iterdir()
    return log


def test_brackets_and_controls_in_a_message_and_a_log_show_as_text_in_row_and_detail(tmp_path):
    ws, now = demo(tmp_path)
    ask(ws, time.time(), "Bash: ls [/tmp] \x1b]0;owned\x07")
    with firing_log(ws).open("a") as log:
        log.write("[@click=app.quit]\n")

    async def check(app, pilot):
        [row] = [line for line in shown(app) if ASKS[:12] in line]
        assert "asked for permission: Bash: ls [/" in row  # clipped at 150 columns
        await pilot.press("slash", *"b21d", "enter", "enter")
        await opened(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "permission_prompt: Bash: ls [/tmp] \\x1b]0;owned\\x07" in detail_text(app)
        await pilot.press("escape", "slash", *["backspace"] * 4, *"e5a8", "enter", "enter")
        await opened(app, pilot)
        assert "| [@click=app.quit]" in detail_text(app)
        assert app.is_running and app.return_value is None

    drive(ws, check)


def test_brackets_in_an_error_a_note_and_the_filter_show_as_text_in_the_footer(tmp_path):
    ws = top_demo.build(tmp_path / "\x1b[2J[@click=app.quit]", time.time())  # a folder's name
    broken = ws.sessions / "broken-record"
    broken.mkdir()
    (broken / "session.json").write_text("{not json")

    async def check(app, pilot):
        escaped = str(ws.root).replace("\x1b", "\\x1b")
        assert f"error: {escaped}: session broken-record" in footer(app)
        rows = [line for line in shown(app) if line.strip()]
        assert rows and all(line.split()[1] == "\\x1b[2J[@clic…" for line in rows), rows
        app.notes.insert(0, "cannot read /srv/[/x]/.sidecar.toml")
        app.feed.errors.clear()
        app.show_footer()
        assert "note: cannot read /srv/[/x]/.sidecar.toml" in footer(app)
        await pilot.press("slash", *"[/b]", "enter")
        assert "filter [/b]" in footer(app)
        assert app.is_running

    drive(ws, check)


def test_a_hard_linked_trace_or_log_is_not_shown_in_the_detail(tmp_path):
    ws, now = demo(tmp_path)
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(orjson.dumps({"event": "leaked.event", "message": "a secret line",
                                     "createdAt": "2026-01-01T00:00:00Z"}) + b"\n")
    trace = ws.session_dir(harness_id(top_demo.HOST, DONE)) / "trace.jsonl"
    trace.unlink()
    os.link(secret, trace)
    log = firing_log(ws)
    log.unlink()
    os.link(secret, log)

    async def check(app, pilot):
        await pilot.press("slash", *"e5a8", "enter", "enter")
        await opened(app, pilot)
        text = detail_text(app)
        assert "post-task ok" in text  # the follow-up itself shows, its log does not
        assert "leaked.event" not in text and "a secret line" not in text
        assert "(no events recorded)" in text

    drive(ws, check)


def test_the_footer_counts_in_words_and_fits_one_line_at_120_and_100_columns(tmp_path):
    ws, _ = demo(tmp_path)
    for width in (120, 100):
        async def check(app, pilot, width=width):
            text = footer(app)
            assert "\n" not in text and len(text) <= width, text
            assert "1 follow-up queued" in text and "q quit" in text
            assert app.query_one("#foot").size.height == 1

        drive(ws, check, size=(width, 20))
    assert view.Counts(0, 0, 2, 3, 3).footer() == ("0 working · 0 waiting · 2 follow-ups queued"
                                                    " · 3 sessions")
    assert view.Counts(1, 0, 0, 1, 1).footer().endswith("0 follow-ups queued · 1 session")
    assert view.Counts(1, 0, 0, 1, 2).footer().endswith(" · 1 of 2 sessions")


def test_the_follow_up_outcome_reads_whole_at_120_and_100_columns(tmp_path):
    ws, now = demo(tmp_path)
    doc = orjson.loads(ws.hooks_file.read_bytes())
    doc["pending"] = []  # the session's last outcome shows, not its queued follow-up
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    fired_at = now - 5300  # as top_demo records it
    for width in (120, 100):
        async def check(app, pilot, width=width):
            [row] = [line for line in shown(app) if DONE[:8] in line]
            outcome = f"post-task ok {words.ago(fired_at, time.time())}"  # `1 h 28 min ago`
            assert row.rstrip().endswith(outcome), row
            assert len(row) == width
            [asks] = [line for line in shown(app) if ASKS[:8] in line]
            assert "waiting for you asked for" in asks  # the why gives way, still there
            assert view.header(width).split() == [
                "HOST", "WORKSPACE", "SESSION", "STATE", "WHY", "LAST",
                *(["TOKENS"] if width == 120 else []), "FOLLOW-UPS"]

        drive(ws, check, size=(width, 20))
