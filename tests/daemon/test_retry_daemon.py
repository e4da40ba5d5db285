"""A failed follow-up run again with a real daemon: `sidecar hooks retry HOOK --session ID`
queues it, the daemon fires it as any follow-up (trust, preconditions), it runs exactly once,
its history says retry, and it counts once toward "once per session": the session's next end
queues nothing. The resume command is a stub from config.toml's `[resume]` whose first run
fails, as a resume of a `claude` the daemon could not find did on a user's first day."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from helpers import end_session, read_json, run_cli, wait_until

SESSION = "3c9d5e1a-7b2f-4e8d-9a6c-1f0e2d3b4a5c"  # of Claude Code's shape: a resume checks it
RESUME = """import sys
from pathlib import Path
tries = Path(sys.argv[1])
tries.write_text((tries.read_text() if tries.exists() else "") + sys.argv[2] + "\\n")
if len(tries.read_text().split()) == 1:
    sys.exit("the first try fails")
"""


def firings(ws) -> list[dict]:
    return [f for f in read_json(ws.hooks_file)["hooks"]["post-task"]["history"]
            if f["sessionId"] == SESSION]


def test_a_failed_resume_retried_runs_once_says_retry_and_never_queues_again(
        workspace, start_daemon, config_home, tmp_path: Path):
    script, tries = tmp_path / "resume.py", tmp_path / "tries.txt"
    script.write_text(RESUME)
    command = [sys.executable, str(script), str(tries), "{session_id}"]
    with (config_home / "config.toml").open("a") as config:
        config.write(f'[resume]\n"claude-code" = {orjson.dumps(command).decode()}\n')
    root = ("--root", str(workspace.root))
    assert run_cli("hooks", "update", "post-task", "--delay", "0", *root).returncode == 0
    start_daemon(workspace.root)
    end_session(workspace.root, SESSION)
    wait_until(lambda: firings(workspace), 20)
    assert firings(workspace)[0]["status"] == "error: exit status 1"

    retried = run_cli("hooks", "retry", "post-task", "--session", SESSION[:8], *root)
    assert retried.returncode == 0, retried.stderr
    assert b"post-task" in retried.stdout and b"the daemon fires it" in retried.stdout
    wait_until(lambda: len(firings(workspace)) == 2, 20)
    failed, again = firings(workspace)
    assert again["status"] == "ok" and again["retry"] is True and "retry" not in failed
    assert tries.read_text().split() == [SESSION, SESSION]  # the retry ran, once
    shown = run_cli("hooks", "history", "--session", SESSION[:8], *root).stdout.decode()
    assert "ok (retry)" in shown and "error: exit status 1" in shown
    story = orjson.loads(run_cli("status", "--session", SESSION[:8], "--json", *root).stdout)
    assert [(f["state"], f.get("retry")) for f in story["followUps"]] == [
        ("error: exit status 1", False), ("ok", True)]
    assert "ok (retry)" in run_cli("status", "--session", SESSION[:8], *root).stdout.decode()

    # Once per session: the conversation's next end queues nothing, and a success is not retried.
    end_session(workspace.root, SESSION)
    wait_until(lambda: "once per session" in (firings(workspace)[-1]["status"] or ""), 20)
    assert read_json(workspace.hooks_file)["pending"] == []
    again = run_cli("hooks", "retry", "post-task", "--session", SESSION, *root)
    assert again.returncode == 1 and b"ended ok" in again.stderr
    assert tries.read_text().split() == [SESSION, SESSION]
