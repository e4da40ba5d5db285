"""`resume-started` notices with a real daemon: a Claude Code session hits its usage limit,
`resume-after-limit` resumes it (a stub resume command from config.toml's `[resume]`, which
files the resumed run's events through the real `sidecar emit`, as the host's hooks would),
and a notify hook on `resume-started` tells a loopback receiver (tests/support/receiver.py).

What the code promises (followups/notify/notices.py, queue.py's `_add_limit_try`): one notice per start of a
resume, each try of a limit episode being a start of its own; a postponed try is no start.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson
from test_notify_daemon import history

from helpers import SIDECAR, emit, fixture_payload, read_json, run_cli, wait_until
from sidecar.followups.seeds import LIMIT_HOOK
from sidecar.layout import Workspace

SESSION = "0b4cb7a4-5d8e-4a6f-9f0e-2c1d3b4a5e6f"  # of Claude Code's shape: a resume checks it

# The resume command: each run records itself, files what a resumed Claude Code's hooks
# would (through `sidecar emit`, with the follow-up's SIDECAR_HOOK_ID in its environment).
# Its first run waits for the test's `go`, then hits the limit again (a reset already
# passed); its second finishes the turn.
RESUMED = r"""
import json, os, subprocess, sys, time
from pathlib import Path

sidecar, state, session = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
run = len(list(state.glob("run-*"))) + 1
(state / f"run-{run}").write_text(json.dumps({"hook": os.environ.get("SIDECAR_HOOK_ID"),
                                              "session": session}))

def emit(**body):
    body = {"session_id": session, "cwd": os.getcwd(), **body}
    subprocess.run([sidecar, "emit", "--source", "claude-code"], check=True,
                   input=json.dumps(body).encode(), capture_output=True)

emit(hook_event_name="SessionStart", source="resume")
emit(hook_event_name="UserPromptSubmit", prompt=sys.argv[4])
if run == 1:
    waited = time.monotonic() + 30
    while not (state / "go").exists() and time.monotonic() < waited:
        time.sleep(0.05)
    emit(hook_event_name="StopFailure", error="rate_limit",
         last_assistant_message=f"Claude AI usage limit reached|{int(time.time()) - 10}")
else:
    emit(hook_event_name="Stop", last_assistant_message="Carried on, and finished.")
emit(hook_event_name="SessionEnd", reason="other")
"""


def claude(ws: Workspace, name: str, **changes: object) -> None:
    """One of Claude Code 2.1.328's recorded payloads, for this session, through `emit`."""
    body = orjson.loads(fixture_payload(f"claude-code-2.1.328/{name}.json"))
    body.pop("transcript_path", None)  # the recording's: not on this machine
    body |= {"session_id": SESSION, "cwd": str(ws.root), **changes}
    done = emit(ws.root, orjson.dumps(body), "--source", "claude-code")
    assert done.returncode == 0, done.stderr


def test_each_resume_of_a_limit_episode_is_one_notice(tmp_path, workspace, config_home,
                                                        start_daemon, receiver):
    ws = workspace
    state = tmp_path / "resumed"
    state.mkdir()
    script = tmp_path / "resumed.py"
    script.write_text(RESUMED)
    command = [sys.executable, str(script), SIDECAR, str(state), "{session_id}", "{prompt}"]
    with (config_home / "config.toml").open("a") as config:
        config.write("limitBackoffScale = 0.001\n"  # the reset's margin: 60 ms, not a minute
                     f'[resume]\n"claude-code" = {orjson.dumps(command).decode()}\n')
    assert run_cli("hooks", "enable", LIMIT_HOOK, "--root", str(ws.root)).returncode == 0
    added = run_cli("hooks", "add", "resumed", "--event", "resume-started", "--notify",
                    f"{receiver.url}/resumed", "--root", str(ws.root))
    assert added.returncode == 0, added.stderr
    start_daemon(ws.root)
    try:
        claude(ws, "UserPromptSubmit")
        # The limit resets in a few seconds, as Claude Code says it (an epoch after `|`).
        claude(ws, "StopFailure.rate_limit",
               last_assistant_message=f"Claude AI usage limit reached|{int(time.time()) + 2}")
        claude(ws, "SessionEnd")
        assert receiver.received == []  # a failed turn is no resume yet

        [first] = wait_until(lambda: receiver.at("/resumed"), 20)
        assert (state / "run-1").exists()  # it tells of a resume that started...
        body = first.json()
        assert body["event"] == "resume-started" and body["host"] == "claude-code"
        assert body["sessionId"] == SESSION and body["hookId"] == "resumed"
        assert body["followUpHook"] == LIMIT_HOOK and body["reason"] == "started"
        assert body["title"] == "claude-code resumed after its usage limit"
        assert orjson.loads((state / "run-1").read_bytes()) == {"hook": LIMIT_HOOK,
                                                               "session": SESSION}
        time.sleep(1.5)  # ...once, while it runs
        assert len(receiver.at("/resumed")) == 1 and not (state / "run-2").exists()
    finally:
        (state / "go").touch()  # the first run goes on (and never outlives the test)

    # It hit the limit again: the episode's next try is a second start, so a second notice.
    wait_until(lambda: len(receiver.at("/resumed")) == 2, 30)
    assert (state / "run-2").exists()
    second = receiver.at("/resumed")[1].json()
    assert (second["event"], second["sessionId"], second["followUpHook"]) == \
        ("resume-started", SESSION, LIMIT_HOOK)
    wait_until(lambda: [h["status"] for h in history(ws, LIMIT_HOOK)] == ["ok", "ok"], 20)
    time.sleep(1.5)  # the second run's turn ended well: no third try, no third notice
    assert len(receiver.at("/resumed")) == 2 and not (state / "run-3").exists()
    assert [h["status"] for h in history(ws, "resumed")] == ["ok", "ok"]
    record = read_json(next(Path(ws.sessions).glob("*/session.json")))
    assert "limit" not in record["metadata"]["sidecar"]  # the episode closed
