"""`sidecar hooks ...`: safe edits with clear errors."""

from __future__ import annotations

import time

import orjson
import pytest

from helpers import invoke, read_json
from sidecar.base.outcome import OK, error
from sidecar.followups.store import HookStore
from support.stores import ingest


def cli(ws, *args):
    return invoke("hooks", *args, cwd=ws.root)


def test_init_seeds_post_task_and_its_prompt(workspace):
    doc = read_json(workspace.hooks_file)
    hook = doc["hooks"]["post-task"]
    assert hook["enabled"] and hook["event"] == "session-end" and hook["delaySeconds"] == 10
    assert hook["action"] == "resume" and hook["promptFile"] == "hooks/post-task.md"
    assert (workspace.prompts / "post-task.md").read_text().startswith("---")
    assert doc["pending"] == []


def test_add_list_update_disable_enable_remove(workspace):
    r = cli(workspace, "add", "Post Task 2", "--delay", "2m", "--event", "turn-end", "--",
            "notify-send", "it's done; $(whoami)")
    assert r.returncode == 0 and b"added post-task-2" in r.stdout
    hook = read_json(workspace.hooks_file)["hooks"]["post-task-2"]
    assert hook["delaySeconds"] == 120 and hook["event"] == "turn-end"
    assert hook["action"] == ["notify-send", "it's done; $(whoami)"]
    assert hook["promptFile"] is None  # a command hook gets no prompt it did not ask for

    assert b"post-task-2" in cli(workspace, "list").stdout
    listed = orjson.loads(cli(workspace, "list", "--json").stdout)
    assert set(listed["hooks"]) == {"post-task", "post-task-2", "resume-after-limit"}

    assert cli(workspace, "update", "post-task-2", "--delay", "5", "--resume").returncode == 0
    hook = read_json(workspace.hooks_file)["hooks"]["post-task-2"]
    assert hook["delaySeconds"] == 5 and hook["action"] == "resume"

    assert cli(workspace, "disable", "post-task-2").returncode == 0
    assert read_json(workspace.hooks_file)["hooks"]["post-task-2"]["enabled"] is False
    assert cli(workspace, "enable", "post-task-2").returncode == 0
    assert read_json(workspace.hooks_file)["hooks"]["post-task-2"]["enabled"] is True
    assert cli(workspace, "remove", "post-task-2").returncode == 0
    assert set(read_json(workspace.hooks_file)["hooks"]) == {"post-task", "resume-after-limit"}


@pytest.mark.parametrize("args,message", [
    (["add", "x", "--delay", "90000"], b"delaySeconds"),
    (["add", "x", "--delay", "soon"], b"not a duration"),
    (["add", "x", "--delay", "1.5"], b"whole seconds"),
    (["add", "x", "--event", "whenever"], b"event"),
    (["add", "x", "--prompt-file", "../../etc/passwd.md"], b"promptFile"),
    (["add", "x", "--max-context-k", "-1"], b"maxContextK"),
    (["update", "nope", "--delay", "5"], b"no hook 'nope'"),
    (["update", "post-task"], b"nothing to change"),
    (["remove", "nope"], b"no hook 'nope'"),
])
def test_bad_values_are_refused_clearly_and_change_nothing(workspace, args, message):
    before = workspace.hooks_file.read_bytes()
    result = cli(workspace, *args)
    assert result.returncode != 0
    assert message in result.stderr
    assert workspace.hooks_file.read_bytes() == before


def test_edits_refuse_to_overwrite_a_broken_file(workspace):
    workspace.hooks_file.write_text('{"hooks": {,}')
    result = cli(workspace, "add", "x")
    assert result.returncode == 1 and b"line 1, column 12" in result.stderr
    assert workspace.hooks_file.read_text() == '{"hooks": {,}'


def test_removing_or_disabling_a_hook_drops_its_queue(workspace):
    doc = read_json(workspace.hooks_file)
    doc["pending"] = [{"id": "post-task:h:s", "hookId": "post-task", "host": "h", "sessionId": "s",
                       "dueAt": "2030-01-01T00:00:00Z", "retries": 0}]
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    result = cli(workspace, "disable", "post-task")
    assert b"dropped 1 queued" in result.stdout
    assert read_json(workspace.hooks_file)["pending"] == []


def test_outside_a_workspace_is_exit_4(tmp_path, config_home):
    result = invoke("hooks", "list", cwd=tmp_path)
    assert result.returncode == 4


def test_a_name_in_use_is_refused_unless_replaced(workspace):
    before = workspace.hooks_file.read_bytes()
    result = cli(workspace, "add", "Post Task", "--delay", "5")
    assert result.returncode == 1 and b"'post-task' exists already" in result.stderr
    assert b"--replace" in result.stderr and workspace.hooks_file.read_bytes() == before
    assert cli(workspace, "add", "Post Task", "--delay", "5", "--replace").returncode == 0
    assert read_json(workspace.hooks_file)["hooks"]["post-task"]["delaySeconds"] == 5


def test_a_prompt_file_that_does_not_exist_is_refused_now_not_at_firing(workspace):
    before = workspace.hooks_file.read_bytes()
    result = cli(workspace, "add", "review", "--prompt-file", "hooks/review.md")
    assert result.returncode == 1 and b"review.md does not exist" in result.stderr
    assert cli(workspace, "update", "post-task", "--prompt-file", "hooks/gone.md").returncode == 1
    assert workspace.hooks_file.read_bytes() == before
    (workspace.prompts / "review.md").write_text("Review the change.\n")
    assert cli(workspace, "add", "review", "--prompt-file", "hooks/review.md").returncode == 0
    hook = read_json(workspace.hooks_file)["hooks"]["review"]
    assert hook["promptFile"] == "hooks/review.md" and hook["action"] == "resume"


def test_retry_runs_again_only_a_hook_whose_last_firing_for_the_session_failed(workspace):
    ingest(workspace, "s-retry", "session-start", "session-end", at=time.time())  # queues post-task

    def refused(hook: str, session: str = "s-re") -> str:
        before = workspace.hooks_file.read_bytes()
        result = cli(workspace, "retry", hook, "--session", session)
        assert result.returncode == 1 and workspace.hooks_file.read_bytes() == before
        return result.stderr.decode()

    def fired(doc, status=None) -> None:  # the queued entry, claimed (None) or ended as `status`
        doc.pending[0].claimed_by = "another-instance"
        if status is not None:
            doc.pending.clear()
            doc.hooks["post-task"].record_firing(status, time.time(), "claude-code", "s-retry", None)

    assert "post-task for claude-code session s-retry is queued already" in refused("post-task")
    HookStore(workspace).change(time.time(), fired)
    assert "is running" in refused("post-task")
    HookStore(workspace).change(time.time(), lambda doc: fired(doc, OK))
    assert "ended ok just now; only a failed firing is run again" in refused("post-task")
    assert "resume-after-limit is switched off" in refused("resume-after-limit")
    assert cli(workspace, "enable", "resume-after-limit").returncode == 0
    assert "never fired for claude-code session s-retry" in refused("resume-after-limit")
    assert "no hook 'nope'" in refused("nope")
    assert "no session 'zz'" in refused("post-task", "zz")
    assert b"--session ID" in cli(workspace, "retry", "post-task").stderr

    HookStore(workspace).change(time.time(), lambda doc: doc.hooks["post-task"].record_firing(
        error("exit status 1"), time.time(), "claude-code", "s-retry", None))
    (workspace.prompts / "post-task.md").write_text("Changed behind the user's back.\n")
    assert "not trusted" in refused("post-task") and "sidecar hooks trust post-task" in refused("post-task")
    assert invoke("hooks", "trust", "post-task", "--yes", cwd=workspace.root).returncode == 0
    assert cli(workspace, "retry", "post-task", "--session", "s-re").returncode == 0
    [entry] = read_json(workspace.hooks_file)["pending"]  # due now, for the daemon to fire
    assert (entry["hookId"], entry["sessionId"], entry["retry"], entry["claimedBy"]) == (
        "post-task", "s-retry", True, None)
    assert "is queued already" in refused("post-task")
