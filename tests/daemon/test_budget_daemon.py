"""Budgets with a real daemon: `[budget] session = 5.00` in config.toml holds back the resume
follow-ups of a session whose record says it cost that much already (skipped, with the reason,
in the hook's history), the `over-budget` notice reaches a loopback receiver once
(tests/support/receiver.py), a command hook of the same session still runs, and a session
whose cost is unknown is resumed all the same, `status` saying why.

The session's cost is written into its record as the cost code records it (the record's
`cost` object: its `usd`, `source`, `unpriced`, `why`), under the sessions' lock, before the
session ends; the resume command is a stub from `[resume]` that notes each session it resumes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson

from helpers import emit, read_json, run_cli, session_record, wait_until
from sidecar.base.ids import harness_id
from sidecar.layout import Workspace
from sidecar.sessions.store import SessionStore

OVER = "0b4cb7a4-5d8e-4a6f-9f0e-2c1d3b4a5e6f"  # of Claude Code's shape: a resume checks it
UNKNOWN = "5b428364-70de-498a-b886-4c3dc8ffa7fe"
NOTES = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')"


def history(ws: Workspace, hook: str) -> list[dict[str, object]]:
    return read_json(ws.hooks_file)["hooks"][hook]["history"]


def hooks(ws: Workspace, command: str, *argv: str) -> None:
    done = run_cli("hooks", command, "--root", str(ws.root), *argv)
    assert done.returncode == 0, done.stderr


def start_with_cost(ws: Workspace, session: str, cost: dict[str, object]) -> None:
    """The session starts (through the real `sidecar emit`), and its record gets `cost`."""
    assert emit(ws.root, None, "session-start", "--session-id", session,
                "--source", "claude-code").returncode == 0
    wait_until(lambda: session_record(ws, session) is not None)
    path = ws.session_dir(harness_id("claude-code", session)) / "session.json"
    with SessionStore(ws, durable=False).locked():  # as the daemon writes it
        record = read_json(path)
        record["metadata"]["sidecar"]["cost"] = cost
        path.write_bytes(orjson.dumps(record))


def end(ws: Workspace, session: str) -> None:
    assert emit(ws.root, None, "session-end", "--session-id", session,
                "--source", "claude-code").returncode == 0


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_a_session_over_its_budget_is_not_resumed_and_the_user_is_told_once(
        tmp_path, workspace, config_home, start_daemon, receiver):
    ws = workspace
    resumed, ran = tmp_path / "resumed.txt", tmp_path / "ran.txt"
    resume = [sys.executable, "-c", NOTES, str(resumed), "{session_id}"]
    with (config_home / "config.toml").open("a") as config:
        config.write(f'[resume]\n"claude-code" = {orjson.dumps(resume).decode()}\n'
                     "[budget]\nsession = 5.00\n")
    hooks(ws, "update", "post-task", "--delay", "1")  # the seeded resume, and a second one
    hooks(ws, "add", "again", "--delay", "1")
    hooks(ws, "add", "tidy", "--delay", "1", "--", sys.executable, "-c", NOTES, str(ran), "tidied")
    hooks(ws, "add", "money", "--event", "over-budget", "--notify", f"{receiver.url}/money")
    start_daemon(ws.root)

    start_with_cost(ws, OVER, {"usd": 5.12, "source": "host", "models": ["claude-sonnet-4-5"],
                               "unpriced": [], "days": {time.strftime("%Y-%m-%d"): 5.12}})
    end(ws, OVER)
    held = "skipped: over budget ($5.12 of $5.00 this session)"
    wait_until(lambda: [h["status"] for h in history(ws, "post-task")] == [held], 20)
    wait_until(lambda: [h["status"] for h in history(ws, "again")] == [held], 20)
    wait_until(lambda: [h["status"] for h in history(ws, "tidy")] == ["ok"], 20)
    assert lines(ran) == ["tidied"]  # a command is never held
    assert lines(resumed) == []

    [told] = wait_until(lambda: receiver.at("/money"), 20)
    body = told.json()
    assert body["event"] == "over-budget" and body["sessionId"] == OVER
    assert body["reason"] == "over budget ($5.12 of $5.00 this session)"
    assert body["followUpHook"] in ("post-task", "again")  # whichever was held first
    assert body["title"] == f"follow-up {body['followUpHook']} held back: over budget ($5.12 of " \
                            "$5.00 this session)"
    time.sleep(1.5)  # two resumes of the session were held: one episode, one notice
    assert len(receiver.at("/money")) == 1

    status = run_cli("status", "--root", str(ws.root)).stdout.decode()
    assert "budget     post-task held back for claude-code session 0b4cb7a4" in status
    assert "over budget ($5.12 of $5.00 this session)" in status
    doctor = run_cli("doctor", cwd=ws.root).stdout.decode()
    assert "post-task held back for claude-code session 0b4cb7a4: over budget ($5.12 of $5.00 " \
           "this session)" in doctor

    # A session whose cost no price is known for: nothing holds its resume, and status says so.
    start_with_cost(ws, UNKNOWN, {"usd": None, "source": "unknown", "models": ["my-local-model"],
                                  "unpriced": ["my-local-model"], "days": {},
                                  "why": "no price for model my-local-model"})
    end(ws, UNKNOWN)
    wait_until(lambda: sorted(lines(resumed)) == [UNKNOWN, UNKNOWN], 20)
    wait_until(lambda: [h["status"] for h in history(ws, "post-task")] == [held, "ok"], 20)
    status = run_cli("status", "--root", str(ws.root)).stdout.decode()
    assert "cost unknown: not held (no price for model my-local-model)" in status
    assert len(receiver.at("/money")) == 1


def test_the_day_budget_holds_every_sessions_resume_and_tells_it_once_a_day(tmp_path):
    """In process: two sessions' resumes on a day whose spend (the ledger) is over the day
    budget are both held back; one over-budget notice is queued for the day, not one a session."""
    from dataclasses import replace

    from test_followups import T0, Harness, ev

    from sidecar.followups.budget import Budget
    from sidecar.followups.model import new_hook

    h = Harness(tmp_path)
    h.use_resume_hook()
    h.config = replace(h.config, budget=Budget(day=1.0))
    money = new_hook("money", "money", T0, event="over-budget", action={"notify": "desktop"})
    h.hooks.change(T0, lambda doc: doc.hooks.update(money=money))
    day = time.strftime("%Y-%m-%d")
    (h.ws.runtime / "usage.json").write_bytes(orjson.dumps({"usd": 3.0, "days": {day: {"usd": 3.0, "sessions": 2}}}))
    for session in (OVER, UNKNOWN):
        h.apply(ev("SessionStart", session=session), ev("SessionEnd", session=session, ts=T0 + 1))
    for _ in range(2):
        h.fire_due(next(e.id for e in h.pending() if e.hook_id == "rec"))
    assert [f.status for f in h.hook().history] == ["skipped: over budget ($3.00 of $1.00 today)"] * 2
    assert h.firings() == []
    [told] = [e for e in h.pending() if e.hook_id == "money"]
    assert told.extra["notice"]["reason"] == "over budget ($3.00 of $1.00 today)"
