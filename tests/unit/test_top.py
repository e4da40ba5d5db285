"""`sidecar top` driven through Textual's pilot: what a user sees and what the keys change.

The workspace is real files made by sidecar's own ingestion (support/top_demo.py); the app
follows them through its real folder watch (inotify), so a change shows by its own event.

`top` also shows what hosts and logs say as text, never as markup; reads no hard-linked file;
and its footer and columns fit a 120- and a 100-column terminal. Hosts' messages, traces,
firing logs, paths and error texts are arbitrary text: a bracket in any of them must show as
itself, not end the app or become a clickable action, and a control character shows escaped,
never reaching the terminal.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import inotify_simple
import orjson
import pytest
from rich.style import Style

from helpers import read_json
from sidecar.base import words
from sidecar.base.ids import harness_id
from sidecar.base.outcome import error
from sidecar.followups import manual
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.live.feed import Feed
from sidecar.top import view
from sidecar.top.app import DetailScreen, TopApp
from support import top_demo
from support.stores import drop, ingestor

SIZE = (160, 30)  # room for every column and a follow-up outcome of 39 characters
ASKS = "b21d44f0-asks"
DONE = "e5a8f3d1-done"
# inotify_simple finds libc through ldconfig (a process) on its first instance: made here, at
# collection, so the real watch the tests follow files with starts none.
inotify_simple.INotify().close()


def demo(tmp_path: Path) -> tuple[Workspace, float]:
    now = time.time()
    return top_demo.build(tmp_path / "demo", now), now


def screen_lines(app: TopApp) -> list[str]:
    return [app.list.render_line(y).text for y in range(app.list.size.height)]


def footer(app: TopApp) -> str:
    return str(app.query_one("#foot").render())


def summary(app: TopApp) -> str:
    """The header line: the counts and the next follow-up."""
    return str(app.query_one("#summary").render())


def detail_text(app: TopApp) -> str:
    return str(app.screen.query_one("#detail").render())


def run(coro_fn, ws: Workspace, follow: bool = False, roots: list[Path] | None = None,
        size: tuple[int, int] = SIZE, beside: bool = False) -> None:
    """Drive top; without `beside`, `d` first hides the detail beside (every column shows)."""
    async def main() -> None:
        app = TopApp(Feed(roots or [ws.root]), follow=follow)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            if not beside and size[0] >= 140:
                await pilot.press("d")
            await coro_fn(app, pilot)

    asyncio.run(main())


async def until(pilot, predicate, timeout: float = 1.0) -> None:
    """Let the app run until `predicate()` holds (a change must show within `timeout`)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not shown in time"
        await pilot.pause(0.02)


async def opened(app: TopApp, pilot) -> None:
    """Until the session's detail screen has mounted its text (a loaded machine may take
    more than one pause to compose a pushed screen)."""
    for _ in range(100):
        await pilot.pause()
        if app.screen.query("#detail"):
            return
        await pilot.pause(0.05)
    raise AssertionError("the detail screen never showed its text")


def ingest(ws: Workspace, name: str, **event: object) -> None:
    """One event, its file a minute old, ingested in process now."""
    now = time.time()
    drop(ws, name, orjson.dumps({"ts": now, **event}), now - 60)
    ingestor(ws).drain(now)


def firing_log(ws: Workspace) -> Path:
    [log] = (ws.logs / "hooks" / "post-task").iterdir()
    return log


def test_every_state_shows_with_its_reason(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        lines = screen_lines(app)
        by_id = {sid: next(line for line in lines if sid[:12] in line) for sid in top_demo.STORIES}
        assert "working" in by_id["7f3a9c1e-work"] and "last tool Bash" in by_id["7f3a9c1e-work"]
        assert "waiting for you" in by_id["b21d44f0-asks"]
        assert "asked for permission" in by_id["b21d44f0-asks"]
        assert "idle" in by_id["c90e12ab-idle"] and "its last turn ended" in by_id["c90e12ab-idle"]
        assert "usage limit" in by_id["d4471b2c-limit"] and "resets at" in by_id["d4471b2c-limit"]
        assert "its own end: you quit" in by_id["e5a8f3d1-done"]
        assert "post-task due in" in by_id["e5a8f3d1-done"]  # the delay still running
        assert "191.7k" in by_id["e5a8f3d1-done"]
        assert "the host process exited mid-turn" in by_id["f6b2c7e9-exit"]
        assert "1 h ago" in by_id["f6b2c7e9-exit"]
        # who needs the user comes first
        assert lines[0] == by_id["b21d44f0-asks"]
        assert summary(app).startswith(
            "1 working · 1 waiting · 1 limited · 1 follow-up queued · 6 sessions   next: post-task"
            " for claude-code e5a8f3d1 in ")
        await pilot.press("q")
        assert app.return_value == 0

    run(check, ws)


def test_the_countdown_moves_each_second_without_a_file_read(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        def due() -> str:
            line = next(line for line in screen_lines(app) if "e5a8f3d1-don" in line)
            return line.split("post-task ")[1].strip()

        first = due()
        reads = app.feed.version
        await until(pilot, lambda: due() != first, 2.5)
        assert app.feed.version == reads  # redrawn from memory

    run(check, ws)


def test_the_filter_and_active_only(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        await pilot.press("slash", *"asks", "enter")
        lines = [line for line in screen_lines(app) if line.strip()]
        assert len(lines) == 1 and "b21d44f0" in lines[0]
        assert "1 of 6 sessions" in summary(app)
        await pilot.press("slash", *["backspace"] * 4, *"ended", "enter")
        assert {line.split()[2][:8] for line in screen_lines(app) if line.strip()} == {
            "e5a8f3d1", "f6b2c7e9"}
        await pilot.press("slash", *["backspace"] * 5, "enter", "a")
        shown = [line for line in screen_lines(app) if line.strip()]
        assert len(shown) == 4 and "ended" not in {line[40:55].strip() for line in shown}
        assert "active only" in footer(app)

    run(check, ws)


def test_enter_opens_the_session_with_its_timeline_and_logs(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        await pilot.press("slash", *"e5a8", "enter", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text = str(app.screen.query_one("#detail").render())
        assert "claude-code session e5a8f3d1-done" in text
        assert "TIMELINE" in text and "session.completed" in text and "turn.end" in text
        assert "post-task due in" in text and "post-task ok" in text
        assert "| All 14 tests pass; committed the fix." in text  # the firing's log
        assert '$ ["claude"' not in text  # sidecar's own header line is left out
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)

    run(check, ws)


def test_cancel_drops_the_queued_follow_up_and_says_so(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        assert len(read_json(ws.hooks_file)["pending"]) == 1
        await pilot.press("slash", *"e5a8", "enter", "c")
        assert read_json(ws.hooks_file)["pending"] == []
        last = read_json(ws.hooks_file)["hooks"]["post-task"]["history"][-1]
        assert (last["status"], last["sessionId"]) == ("cancelled by the user", "e5a8f3d1-done")
        # the app sees its own change by the file's event, like anyone else's
        await until(pilot, lambda: "cancelled by the user" in screen_lines(app)[0])
        assert "0 follow-ups queued" in summary(app)
        before = read_json(ws.hooks_file)
        await pilot.press("c")  # nothing waits any more: nothing changes
        assert read_json(ws.hooks_file) == before

    run(check, ws, follow=True)


def test_fire_now_makes_the_follow_up_due_at_once(tmp_path):
    ws, _ = demo(tmp_path)
    due_before = read_json(ws.hooks_file)["pending"][0]["dueAt"]

    async def check(app, pilot):
        await pilot.press("slash", *"e5a8", "enter", "enter")  # from the opened session too
        pressed = time.time()
        await pilot.press("f")
        [entry] = read_json(ws.hooks_file)["pending"]
        assert entry["dueAt"] != due_before
        assert abs(time.mktime(time.strptime(entry["dueAt"][:19], "%Y-%m-%dT%H:%M:%S"))
                   - time.timezone - pressed) < 2
        assert entry["claimedBy"] is None  # the daemon claims and fires it, as any due entry

    run(check, ws)


def test_f_on_a_failed_row_queues_a_retry_for_the_daemon_once(tmp_path):
    ws, now = demo(tmp_path)
    HookStore(ws, durable=False).change(now, lambda doc: doc.hooks["post-task"].record_firing(
        error("cannot start 'claude': No such file or directory"), now - 60, top_demo.HOST,
        "f6b2c7e9-exit", None))

    def retries() -> list[dict]:
        return [e for e in read_json(ws.hooks_file)["pending"] if e["sessionId"] == "f6b2c7e9-exit"]

    async def check(app, pilot):
        await pilot.press("slash", *"f6b2", "enter", "f")
        [entry] = retries()
        assert (entry["hookId"], entry["retry"], entry["claimedBy"]) == ("post-task", True, None)
        await until(pilot, lambda: "post-task due now" in " ".join(screen_lines(app)))
        await pilot.press("f")  # it waits now: `f` makes it due, and never queues a second
        assert [e["retry"] for e in retries()] == [True]

    run(check, ws, follow=True)


def test_a_claimed_follow_up_is_neither_cancelled_nor_moved(tmp_path):
    ws, now = demo(tmp_path)
    doc = read_json(ws.hooks_file)
    doc["pending"][0]["claimedBy"] = "another-instance"
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    entry_id = doc["pending"][0]["id"]
    for change in (manual.cancel, manual.fire_now):
        with pytest.raises(manual.NotChangeable, match="started already"):
            change(ws, entry_id, now)
    assert read_json(ws.hooks_file)["pending"] == doc["pending"]
    with pytest.raises(manual.NotChangeable, match="no longer queued"):
        manual.cancel(ws, "post-task:claude-code:gone", now)


def test_a_new_session_shows_within_a_second_of_its_record(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        ingest(ws, "new.json", event="session-start", session_id="a0000000-new", host="gemini")
        await until(pilot, lambda: any("a0000000-new" in line for line in screen_lines(app)))
        assert "7 sessions" in summary(app)
        ingest(ws, "next.json", event="turn-start", session_id="a0000000-new", host="gemini")
        await until(pilot, lambda: "2 working" in summary(app))

    run(check, ws, follow=True)


def test_a_hook_not_trusted_as_it_stands_is_a_note(tmp_path):
    ws, _ = demo(tmp_path)
    prompt = ws.prompts / "post-task.md"
    prompt.write_text(prompt.read_text() + "Also push to production.\n")  # a pull

    async def check(app, pilot):
        assert "error:" in footer(app)
        assert "not trusted on this machine as they stand, so not run: post-task" in footer(app)
        assert "sidecar hooks trust post-task" in footer(app)

    run(check, ws)


def test_an_unreadable_record_or_workspace_is_a_note_and_the_rest_is_shown(tmp_path):
    ws, _ = demo(tmp_path)
    broken = ws.sessions / "broken-record"
    broken.mkdir()
    (broken / "session.json").write_text("{not json")
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "session.json").write_bytes(top_demo.record_path(ws, "7f3a9c1e-work").read_bytes())
    (ws.sessions / "planted").symlink_to(secret)  # never followed
    gone = tmp_path / "gone"
    (gone / ".context").mkdir(parents=True)
    (gone / ".context" / "runtime").symlink_to(secret)  # a tampered runtime

    async def check(app, pilot):
        assert "6 sessions" in summary(app)
        assert "error:" in footer(app) and "(and 2 more)" in footer(app)
        errors = " ".join(app.feed.errors.values())
        assert "broken-record" in errors and "planted" in errors and "symlink" in errors

    run(check, ws, roots=[ws.root, gone])


# -- what hosts and logs say, shown as text; the footer and columns at 120 and 100 ----------


def test_brackets_and_controls_in_a_message_and_a_log_show_as_text_in_row_and_detail(tmp_path):
    ws, now = demo(tmp_path)
    ingest(ws, "ask.json", event="needs-input", session_id=ASKS, host=top_demo.HOST,
           notification_type="permission_prompt", message="Bash: ls [/tmp] \x1b]0;owned\x07")
    with firing_log(ws).open("a") as log:
        log.write("[@click=app.quit]\n")

    async def check(app, pilot):
        [row] = [line for line in screen_lines(app) if ASKS[:12] in line]
        assert "asked for permission: Bash: ls [/" in row  # clipped at 150 columns
        await pilot.press("slash", *"b21d", "enter", "enter")
        await opened(app, pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "permission_prompt: Bash: ls [/tmp] \\x1b]0;owned\\x07" in detail_text(app)
        await pilot.press("escape", "slash", *["backspace"] * 4, *"e5a8", "enter", "enter")
        await opened(app, pilot)
        assert "| [@click=app.quit]" in detail_text(app)
        assert app.is_running and app.return_value is None

    run(check, ws)


def test_brackets_in_an_error_a_note_and_the_filter_show_as_text_in_the_footer(tmp_path):
    ws = top_demo.build(tmp_path / "\x1b[2J[@click=app.quit]", time.time())  # a folder's name
    broken = ws.sessions / "broken-record"
    broken.mkdir()
    (broken / "session.json").write_text("{not json")

    async def check(app, pilot):
        escaped = str(ws.root).replace("\x1b", "\\x1b")
        assert f"error: {escaped}: session broken-record" in footer(app)
        rows = [line for line in screen_lines(app) if line.strip()]
        assert rows and all(line.split()[1] == "\\x1b[2J[@clic…" for line in rows), rows
        app.notes.insert(0, "cannot read /srv/[/x]/.sidecar.toml")
        app.feed.errors.clear()
        app.show_footer()
        assert "note: cannot read /srv/[/x]/.sidecar.toml" in footer(app)
        await pilot.press("slash", *"[/b]", "enter")
        assert "filter [/b]" in footer(app)
        assert app.is_running

    run(check, ws)


def test_a_tick_while_the_detail_screen_has_no_text_yet_or_any_more_draws_nothing(tmp_path):
    ws, _ = demo(tmp_path)

    async def check(app, pilot):
        await pilot.press("enter")
        await opened(app, pilot)
        screen = app.screen
        await screen.query("#detail, #detail-keys").remove()  # as between its mount and its text's
        app.tick()
        await pilot.pause()
        assert app.screen is screen and app.is_running

    run(check, ws)


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

    run(check, ws)


def test_the_header_counts_in_words_and_the_footer_fits_one_line_at_120_and_100_columns(tmp_path):
    ws, _ = demo(tmp_path)
    for width in (120, 100):
        async def check(app, pilot, width=width):
            text = footer(app)
            assert "\n" not in text and len(text) <= width, text
            assert "q quit" in text and "1 follow-up queued" in summary(app)
            assert app.query_one("#foot").size.height == 1

        run(check, ws, size=(width, 20))
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
            [row] = [line for line in screen_lines(app) if DONE[:8] in line]
            outcome = f"post-task ok {words.ago(fired_at, time.time())}"  # `1 h 28 min ago`
            assert row.rstrip().endswith(outcome), row
            assert len(row) == width
            [asks] = [line for line in screen_lines(app) if ASKS[:8] in line]
            assert "waiting for you asked for" in asks  # the why gives way, still there
            assert view.header(width).split() == [
                "HOST", "WORKSPACE", "SESSION", "STATE", "WHY", "LAST",
                *(["COST"] if width == 120 else []), "FOLLOW-UPS"]

        run(check, ws, size=(width, 20))


def test_colours_keep_their_meaning_on_the_selected_row_and_errors_are_red(tmp_path):
    ws, now = demo(tmp_path)

    def failed(doc) -> None:
        doc.hooks["post-task"].record_firing("error: exit status 1", now + 120, top_demo.HOST,
                                             "f6b2c7e9-exit", str(ws.logs / "x.log"))

    HookStore(ws, durable=False).change(now, failed)

    def styles(app, session: str) -> dict[str, Style]:
        """Each painted column of the session's row: its text, and how it is drawn."""
        y = next(i for i, line in enumerate(screen_lines(app)) if session[:8] in line)
        return {seg.text.strip(): seg.style for seg in app.list.render_line(y) if seg.text.strip()}

    async def check(app, pilot):
        red = Style.parse("bold red")
        failing = styles(app, "f6b2c7e9-exit")
        [shown] = [text for text in failing if text.startswith("post-task error")]
        assert failing[shown].color == red.color and not failing[shown].reverse
        working = next(r for r in app.table.items if r.activity.state == "working")
        app.list.cursor = app.table.items.index(working)
        selected = styles(app, working.session_id)
        assert selected["working"].reverse and selected["working"].color == Style.parse("green").color
        app.feed.errors["x"] = "cannot read the record"
        app.show_footer()
        foot = app.query_one("#foot").render()
        assert "error: cannot read the record" in str(foot)
        assert any(str(span.style) == "bold red" and str(foot)[span.start:span.end] == "error:"
                   for span in foot.spans)

    run(check, ws)
