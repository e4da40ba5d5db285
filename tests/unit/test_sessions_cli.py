"""`sidecar sessions`, and sessions named by the start of an id (`status --session`, `hooks
history --session`), through the command line in process, over records the session store made.

Tests run with output piped, so they see plain text; the colour tests force it (FORCE_COLOR)
and take it away (NO_COLOR)."""

from __future__ import annotations

import os
import re
import time

import orjson
import pytest
from typer.testing import CliRunner

from helpers import invoke
from sidecar.base import exitcodes
from sidecar.base.outcome import Outcome
from sidecar.cli.main import app
from sidecar.followups.store import HookStore
from sidecar.hosts.base import Finding
from sidecar.layout import Workspace
from sidecar.sessions.store import SessionStore
from support.stores import ingest

ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOW = time.time()  # set again as each test starts: its times are relative to it
CLAUDE_A = "3f2a9c1d-77aa-4b1e-9c0e-1a2b3c4d5e6f"
CLAUDE_B = "3f2a0000-1111-2222-3333-444455556666"  # starts as CLAUDE_A does, up to "3f2a"
CODEX = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"


@pytest.fixture(autouse=True)
def _now():
    global NOW
    NOW = time.time()


def make_workspace(tmp_path, name: str) -> Workspace:
    root = tmp_path / name
    root.mkdir()
    assert CliRunner().invoke(app, ["init", str(root)]).exit_code == 0
    return Workspace(root)


@pytest.fixture
def two(workspace, tmp_path):
    """Two registered workspaces: `ws` with three sessions of two hosts, `api` with one."""
    api = make_workspace(tmp_path, "api")
    ingest(workspace, CODEX, "session-start", "session-end", host="codex", at=NOW - 5400)
    ingest(workspace, CLAUDE_A, "session-start", "turn-start", at=NOW - 60)
    ingest(workspace, CLAUDE_B, "session-start", "needs-input", at=NOW - 30,
           notification_type="permission_prompt", message="Claude needs your permission")
    ingest(api, "g-1", "session-start", "turn-start", "turn-end", host="gemini", at=NOW - 600)
    store = SessionStore(api, durable=False)
    [record] = [store.load_session(p.name) for p in api.sessions.iterdir()]
    record.sidecar.tokens = {"input": 12_345, "output": 4_000, "cacheRead": 0, "cacheWrite": 0}
    store.save_session(record, [])
    return workspace, api


def sessions(*args: str, env: dict[str, str] | None = None):
    return invoke("sessions", *args, env=env)


def data_lines(text: str) -> list[str]:
    table = text.partition("\n\n")[0]  # (--since adds the spend of its days below)
    return [line for line in table.splitlines()[1:] if not line.startswith("...")]


# -- the list -------------------------------------------------------------------------------


def test_sessions_lists_every_registered_workspace_newest_activity_first(two):
    result = sessions()
    assert result.returncode == exitcodes.OK, result.stderr
    text = result.stdout.decode()
    header, *rows = text.splitlines()
    assert header.split() == ["HOST", "WORKSPACE", "SESSION", "STATE", "STARTED", "ENDED",
                              "TOKENS", "FOLLOW-UP"]
    assert [row.split()[:3] for row in rows] == [
        ["claude-code", "ws", CLAUDE_B[:8]], ["claude-code", "ws", CLAUDE_A[:8]],
        ["gemini", "api", "g-1"], ["codex", "ws", CODEX[:8]]]
    waiting, working, idle, ended = rows
    assert " 12.3k/4k " in idle  # input/output tokens
    assert "waiting for you" in waiting and "working" in working and " idle " in idle
    assert "1m ago" in working  # started, as a relative time
    # Why it ended (in the state), when, and its newest follow-up (--json has them whole).
    assert "ended: host ended it" in ended and " 1h ago   1h ago " in ended
    assert ended.endswith("post-task due now")
    assert all(len(line) <= 100 for line in text.splitlines())


def test_sessions_filters_active_since_and_limit(two):
    active = data_lines(sessions("--active").stdout.decode())
    assert len(active) == 3 and not any(" ended " in row for row in active)
    recent = data_lines(sessions("--since", "5m").stdout.decode())
    # Both in one workspace: the table leaves out the WORKSPACE column.
    assert [row.split()[1] for row in recent] == [CLAUDE_B[:8], CLAUDE_A[:8]]
    limited = sessions("--limit", "1").stdout.decode().splitlines()
    assert len(limited) == 3 and limited[-1].startswith("... and 3 more")
    bad = sessions("--since", "soon")
    assert bad.returncode == exitcodes.USAGE and b"--since: not a duration: 'soon'" in bad.stderr
    assert sessions("--active", "--since", "1s").stdout.startswith(b"no sessions\n\nspent ")


def test_sessions_json_is_versioned_with_every_row_and_stable_keys(two):
    ws, api = two
    doc = orjson.loads(sessions("--json", "--limit", "50").stdout)
    assert doc["version"] == 1 and doc["total"] == 4 and doc["errors"] == []
    assert [s["sessionId"] for s in doc["sessions"]] == [CLAUDE_B, CLAUDE_A, "g-1", CODEX]
    waiting, _, idle, ended = doc["sessions"]
    assert set(waiting) == {"workspace", "host", "sessionId", "harnessSessionId", "state",
                            "stateSince", "why", "detail", "startedAt", "lastActivityAt",
                            "endedAt", "endReason", "endedWhy", "midTurn", "tokens", "cost", "cwd",
                            "followUps"}
    assert (waiting["state"], waiting["why"]) == ("waiting", "asked for permission")
    assert waiting["detail"] == "Claude needs your permission"
    assert idle["workspace"] == str(api.root) and idle["endedAt"] is None
    assert (ended["state"], ended["endReason"], ended["endedWhy"]) == (
        "ended", "session-end", "the host ended it")
    assert ended["followUps"][0]["hookId"] == "post-task"
    assert orjson.loads(sessions("--json", "--active").stdout)["total"] == 3


def test_sessions_of_one_root_leave_out_workspaces_and_a_root_no_workspace_fails(two, tmp_path):
    ws, api = two
    header, row = sessions("--root", str(api.root)).stdout.decode().splitlines()
    # One workspace: the table leaves out the WORKSPACE column.
    assert header.split()[:3] == ["HOST", "SESSION", "STATE"] and row.split()[:2] == [
        "gemini", "g-1"]
    plain = tmp_path / "plain"
    plain.mkdir()
    both = sessions("--root", str(plain), "--root", str(api.root))
    assert both.returncode == exitcodes.FAILURE
    assert f"{plain}: not a workspace".encode() in both.stderr
    assert b"gemini" in both.stdout  # the rest still listed


def test_a_workspace_that_cannot_be_read_is_said_and_the_rest_listed(two, tmp_path):
    ws, api = two
    moved = tmp_path / "elsewhere"
    api.runtime.rename(moved)
    api.runtime.symlink_to(moved)  # never read through a link
    result = sessions()
    assert result.returncode == exitcodes.FAILURE
    assert f"{api.root}: cannot read the runtime".encode() in result.stderr
    assert [row.split()[0] for row in data_lines(result.stdout.decode())] == [
        "claude-code", "claude-code", "codex"]


def test_a_record_that_cannot_be_read_is_said_and_the_others_listed(two):
    ws, _ = two
    [hid] = [p.name for p in ws.sessions.iterdir()
             if CODEX in (p / "session.json").read_text()]
    (ws.sessions / hid / "session.json").write_text("{not json")
    result = sessions("--root", str(ws.root))
    assert result.returncode == exitcodes.FAILURE
    assert f"cannot read session {hid}".encode() in result.stderr
    assert len(data_lines(result.stdout.decode())) == 2


def test_rows_fit_100_columns_with_long_names(tmp_path, config_home):
    long_ws = make_workspace(tmp_path, "a-workspace-with-a-very-long-folder-name-indeed")
    ingest(long_ws, "x" * 60, "session-start", "session-end", host="copilot",
           reason="prompt_input_exit", at=NOW)
    other = make_workspace(tmp_path, "b")  # two workspaces: the WORKSPACE column is shown
    ingest(other, "y" * 60, "session-start", host="copilot", at=NOW)
    text = sessions().stdout.decode()
    assert all(len(line) <= 100 for line in text.splitlines()), text
    assert "…-folder-name-indeed" in text and "ended: you quit" in text


def test_two_workspaces_of_one_name_are_told_apart(tmp_path, config_home):
    for parent in ("one", "two"):
        (tmp_path / parent).mkdir()
        ws = make_workspace(tmp_path / parent, "app")
        ingest(ws, f"s-{parent}", "session-start", host="codex", at=NOW)
    names = {row.split()[1] for row in data_lines(sessions().stdout.decode())}
    assert len(names) == 2 and {name[-8:] for name in names} == {"/one/app", "/two/app"}


# -- prefixes -------------------------------------------------------------------------------


def test_status_session_takes_a_unique_prefix_or_the_harness_id_and_says_whom_others_fit(two):
    ws, _ = two
    root = ("--root", str(ws.root))
    by_prefix = invoke("status", "--session", "019a", "--json", *root)
    assert by_prefix.returncode == exitcodes.OK, by_prefix.stderr
    report = orjson.loads(by_prefix.stdout)
    assert (report["host"], report["sessionId"]) == ("codex", CODEX)
    by_harness = invoke("status", "--session", report["harnessSessionId"], *root)
    assert by_harness.returncode == exitcodes.OK, by_harness.stderr
    assert by_harness.stdout.decode().startswith(f"session    codex {CODEX} (")
    harness_prefix = invoke("status", "--session", report["harnessSessionId"][:6], "--json", *root)
    assert orjson.loads(harness_prefix.stdout)["sessionId"] == CODEX
    whole = orjson.loads(invoke("status", "--session", CLAUDE_A, "--json", *root).stdout)
    assert whole["sessionId"] == CLAUDE_A  # a whole id, though CLAUDE_B starts alike
    ambiguous = invoke("status", "--session", "3f2a", *root)  # says whom it could be
    assert ambiguous.returncode == exitcodes.FAILURE
    said = ambiguous.stderr.decode()
    assert "'3f2a' is the start of 2 sessions' ids" in said
    assert f"claude-code {CLAUDE_A}" in said and f"claude-code {CLAUDE_B}" in said
    unknown = invoke("status", "--session", "zz", *root)
    assert unknown.returncode == exitcodes.FAILURE and b"no session 'zz'" in unknown.stderr


def fired(ws: Workspace, session: str, host: str, status: str, at: float) -> str:
    """A firing of post-task recorded in the hooks' history, with its log; the log's path."""
    log = ws.logs / "hooks" / "post-task" / f"{int(at)}-{session[:8]}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("$ resume\nNot logged in\n")

    def edit(doc):
        doc.hooks["post-task"].record_firing(Outcome.parse(status), at, host, session, str(log))

    HookStore(ws, durable=False).change(at, edit)
    return str(log)


def test_hooks_history_session_takes_prefixes_and_harness_ids(two):
    ws, _ = two
    root = ("--root", str(ws.root))
    fired(ws, CODEX, "codex", "ok", NOW - 7000)
    fired(ws, CLAUDE_A, "claude-code", "error: exit status 1", NOW - 50)
    fired(ws, "gone-session-1", "codex", "ok", NOW - 40)  # its record was pruned since
    def ids(*args: str) -> list[str]:
        result = invoke("hooks", "history", "--json", *args, *root)
        assert result.returncode == exitcodes.OK, result.stderr
        return [f["sessionId"] for f in orjson.loads(result.stdout)["firings"]]

    assert ids("--session", "019") == [CODEX]
    assert ids("--session", CLAUDE_A) == [CLAUDE_A]
    assert ids("--session", "gone") == ["gone-session-1"]  # known from the history alone
    record = orjson.loads(invoke("status", "--session", CODEX, "--json", *root).stdout)
    assert ids("--session", record["harnessSessionId"]) == [CODEX]
    ambiguous = invoke("hooks", "history", "--session", "3f2a", *root)
    assert ambiguous.returncode == exitcodes.FAILURE
    assert f"claude-code {CLAUDE_B}".encode() in ambiguous.stderr
    unknown = invoke("hooks", "history", "--session", "nobody", *root)
    assert unknown.returncode == exitcodes.FAILURE and b"no session 'nobody'" in unknown.stderr


# -- how it reads ---------------------------------------------------------------------------


def test_history_and_list_show_short_paths_delays_as_typed_and_aligned_columns(two):
    ws, _ = two
    root = ("--root", str(ws.root))
    log = fired(ws, CODEX, "codex", "error: exit status 1", NOW - 7000)
    assert invoke("hooks", "update", "post-task", "--delay", "5m", *root).returncode == 0
    history = invoke("hooks", "history", *root).stdout.decode()
    relative = os.path.relpath(log, ws.root)
    assert f"error: exit status 1: Not logged in\n  log {relative}\n" in history
    assert str(ws.root) not in history and "Z " not in history  # no UTC ISO moment
    listed = invoke("hooks", "list", *root).stdout.decode()
    lines = listed.splitlines()
    assert re.search(r"^post-task +on +session-end +5m +resume +error: exit status 1 \(",
                     listed, re.M), listed
    assert "300s" not in listed
    starts = {line.index("session-end" if "session-end" in line else "turn-failed")
              for line in lines[1:3]}
    assert len(starts) == 1 and lines[0].index("EVENT") in starts  # one column, not overrun
    status = invoke("status", *root).stdout.decode()
    assert "delay 5m" in status and f"    log {relative}" in status
    assert [line for line in status.splitlines() if len(line) > 100 and " log " not in line] == []


def test_colour_only_when_forced_and_never_with_no_color(two, monkeypatch):
    ws, _ = two
    found = [Finding(True, "all is well"), Finding(False, "something is missing", "do this")]
    monkeypatch.setattr("sidecar.doctor.checks.check", lambda *args: found)
    plain = sessions().stdout.decode()
    assert not ANSI.search(plain)
    forced = sessions(env={"FORCE_COLOR": "1"}).stdout.decode()
    assert "\x1b[1mHOST" in forced and "\x1b[33;1mwaiting for you" in forced
    assert ANSI.sub("", forced) == plain  # the same words, painted
    doctor = invoke("doctor", env={"FORCE_COLOR": "1"}).stdout.decode()
    assert "\x1b[31;1mPROBLEM\x1b[0m something is missing" in doctor
    assert "\x1b[32mok     \x1b[0m all is well" in doctor
    status = invoke("status", "--root", str(ws.root), env={"FORCE_COLOR": "1"}).stdout.decode()
    assert "\x1b[31;1mNO: no live instance" in status and "\x1b[1mworkspace" in status
    for command in (("sessions",), ("status", "--root", str(ws.root)), ("doctor",),
                    ("hooks", "list", "--root", str(ws.root)),
                    ("status", "--session", CODEX, "--root", str(ws.root))):
        off = invoke(*command, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
        assert off.stdout and not ANSI.search(off.stdout.decode()), command


def test_a_record_or_session_folder_that_is_a_link_is_never_followed(two, tmp_path):
    ws, _ = two
    folders = sorted(p for p in ws.sessions.iterdir())
    outside = tmp_path / "outside"
    folders[0].rename(outside)
    folders[0].symlink_to(outside)  # a session folder swapped for a link
    record = folders[1] / "session.json"
    (tmp_path / "planted.json").write_bytes(record.read_bytes())
    record.unlink()
    record.symlink_to(tmp_path / "planted.json")  # a record swapped for a link
    result = sessions("--root", str(ws.root), "--json")
    assert result.returncode == exitcodes.FAILURE
    doc = orjson.loads(result.stdout)
    assert doc["total"] == 1 and len(doc["errors"]) == 2
    assert f"cannot read session {folders[0].name}" in result.stderr.decode()
    assert f"cannot read session {folders[1].name}" in result.stderr.decode()


def test_the_follow_up_column_says_how_the_newest_one_ended(two):
    ws, api = two
    fired(api, "g-1", "gemini", "ok", NOW - 180)
    fired(api, "g-1", "gemini", "error: exit status 2", NOW - 400)  # older: not the one shown
    [row] = data_lines(sessions("--root", str(api.root)).stdout.decode())
    # How it ended, not when: the time is `hooks history`'s (the table has no room for both).
    assert row.endswith("post-task ok") and "error" not in row, row
    [queued] = [r for r in data_lines(sessions("--root", str(ws.root)).stdout.decode())
                if r.startswith("codex")]
    assert queued.endswith("post-task due now"), queued  # queued, and its delay has passed
    doc = orjson.loads(sessions("--root", str(api.root), "--json").stdout)
    assert [f["state"] for f in doc["sessions"][0]["followUps"]] == ["ok", "error: exit status 2"]


def test_a_follow_up_due_within_a_second_is_due_now_never_due_just_now():
    from sidecar.cli.sessions import follow_up_shown
    from sidecar.views.sessions import FollowUp

    def shown(at: float, state: str = "queued") -> str:
        return follow_up_shown((FollowUp("post-task", state, at),), NOW)

    assert shown(NOW + 0.5) == "post-task due now"
    assert shown(NOW + 0.5, "postponed") == "post-task postponed, due now"
    assert shown(NOW - 5) == "post-task due now"
    assert shown(NOW + 90) == "post-task due in 1m"


def test_sessions_skips_a_registered_folder_that_is_no_workspace_as_status_all_does(
        two, tmp_path, config_home):
    ws, api = two
    (api.root / ".context").rename(api.root / "was-context")
    result = sessions()
    assert result.returncode == exitcodes.OK
    said = f"{api.root} is registered but is not a workspace (any more); skipped. To forget " \
           f"it: sidecar unregister {api.root}"
    assert said.encode() in result.stderr
    assert said.encode() in invoke("status", "--all").stderr  # the same words
    assert "gemini" not in result.stdout.decode() and "codex" in result.stdout.decode()
    (config_home / "workspaces.json").write_text("[oops")
    assert sessions().returncode == exitcodes.USAGE


def test_a_wide_terminal_shows_the_state_in_full_words(tmp_path, config_home):
    """At 100 columns a crowded row cuts STATE; a terminal that has room shows it whole."""
    for name in ("a-workspace-with-a-very-long-folder-name-indeed", "another-long-folder-name"):
        ws = make_workspace(tmp_path, name)
        ingest(ws, "x" * 60, "session-start", "turn-start", "session-end", host="claude-code",
               reason="host-exited", at=NOW)
    narrow, wide = (sessions(env={**os.environ, "COLUMNS": width}).stdout.decode()
                    for width in ("100", "200"))
    assert "ended: host exited mid-turn" not in narrow and "ended: host exit" in narrow
    assert wide.count("ended: host exited mid-turn") == 2, wide


def test_status_session_finds_a_session_in_any_registered_workspace(two, tmp_path, monkeypatch,
                                                                   capsys):
    """From a folder outside any workspace, or inside another one, `status --session` finds
    the session where it is (the launcher's answer and typer's alike); --root keeps it to one
    workspace."""
    from sidecar.cli.status import answer_session

    ws, api = two
    for where in (tmp_path, ws.root):
        found = invoke("status", "--session", "g-1", "--json", cwd=where)
        assert found.returncode == exitcodes.OK, found.stderr
        assert orjson.loads(found.stdout)["host"] == "gemini"
        monkeypatch.chdir(where)
        assert answer_session({"--session": "g-1", "--json": True}) == exitcodes.OK
        assert orjson.loads(capsys.readouterr().out)["host"] == "gemini"
    kept = invoke("status", "--session", "g-1", "--root", str(ws.root))
    assert kept.returncode == exitcodes.FAILURE
    assert f"no session 'g-1' in {ws.root}".encode() in kept.stderr
    assert answer_session({"--session": "g-1", "--root": str(ws.root)}) is None  # typer says
    nowhere = invoke("status", "--session", "nope", cwd=tmp_path)
    assert b"no session 'nope' in the registered workspaces" in nowhere.stderr
    ingest(ws, "g-1", "session-start", host="gemini", at=NOW)  # the same id in two workspaces
    both = invoke("status", "--session", "g-1", cwd=tmp_path)
    assert both.returncode == exitcodes.FAILURE
    assert f"'g-1' names sessions in 2 workspaces ({ws.root}, {api.root})".encode() in both.stderr
