"""End to end with the real opencode 1.18.33, offline against a loopback chat-completions stub.

`sidecar integrate opencode` installs the plugin; an `opencode run` session is tracked and
completed when the process exits (opencode sends no session end of its own); `post-task`
resumes it once through `opencode run --session`, and the resumed run's end queues nothing.
"""

from __future__ import annotations

import json

from helpers import npm_host, run_cli
from stubs.chat_stub import ChatStub, LimitedChatStub
from stubs.lifecycle import (
    assert_resumed_after_limit,
    assert_whole_lifecycle,
    enable_limit_resume,
    prepare_post_task,
    set_resume,
    settled_record,
    wait_for_the_limit_resume,
)
from stubs.opencode_family import run_in_project, stub_provider

OPENCODE_VERSION = "1.18.33"
# Without these, opencode's first start tries to npm-install its plugin SDK (a 70 s stall).
OFFLINE_MARKER = '{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}'


def opencode_setup(tmp_path, root, stub_url):
    home = tmp_path / "home"
    for folder in (root / ".opencode", home / ".config" / "opencode"):
        (folder / "node_modules").mkdir(parents=True, exist_ok=True)
        (folder / "package-lock.json").write_text(OFFLINE_MARKER)
    (tmp_path / "tmp").mkdir()
    (root / "opencode.json").write_text(stub_provider(stub_url))
    return {"HOME": str(home), "TMPDIR": str(tmp_path / "tmp"), "TERM": "dumb",
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def test_an_opencode_session_is_completed_at_exit_and_resumed_once(workspace, start_daemon,
                                                                   config_home, tmp_path):
    opencode = npm_host("opencode", OPENCODE_VERSION, "opencode")
    prepare_post_task(workspace)
    set_resume(config_home, "opencode", [str(opencode), "run", "--session", "{session_id}",
                                         "<{prompt}"])
    result = run_cli("integrate", "opencode", cwd=workspace.root)
    assert result.returncode == 0, result.stderr
    plugin = workspace.root / ".opencode" / "plugins" / "sidecar.js"
    assert str(tmp_path) not in plugin.read_text()  # nothing machine-specific: a project may commit it
    with ChatStub() as stub:
        env = opencode_setup(tmp_path, workspace.root, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_in_project(opencode, workspace.root, env, "--format", "json", "remember",
                             "banana")
        assert first.returncode == 0, first.stderr[-3000:]
        session_id = json.loads(first.stdout.splitlines()[0])["sessionID"]
        record = settled_record(workspace, "opencode", session_id)
        requests = list(stub.requests)
    done = assert_whole_lifecycle(workspace, record, requests, "remember banana", end_reason="exit")
    assert done["metadata"]["sidecar"]["cwd"] == str(workspace.root)


def test_a_user_wide_plugin_does_nothing_outside_a_workspace(tmp_path, config_home):
    opencode = npm_host("opencode", OPENCODE_VERSION, "opencode")
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    with ChatStub() as stub:
        env = opencode_setup(tmp_path, lonely, stub.url)
        result = run_cli("integrate", "opencode", "--user", env=env)
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "home" / ".config" / "opencode" / "plugins" / "sidecar.js").exists()
        run = run_in_project(opencode, lonely, env, "say", "hi")
        assert run.returncode == 0, run.stderr[-3000:]
        assert stub.requests  # it really ran, with the plugin loaded
    assert not (lonely / ".context").exists()


def test_integrate_never_replaces_a_plugin_file_that_is_not_sidecars(workspace):
    project = workspace.root
    theirs = project / ".opencode" / "plugins" / "sidecar.js"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("export const Mine = async () => ({})\n")
    result = run_cli("integrate", "opencode", "--root", str(project))
    assert result.returncode == 1 and b"not sidecar's plugin" in result.stderr
    assert run_cli("integrate", "opencode", "--uninstall", "--root", str(project)).returncode == 1
    assert theirs.read_text() == "export const Mine = async () => ({})\n"
    theirs.unlink()
    assert run_cli("integrate", "opencode", "--root", str(project)).returncode == 0
    assert b"nothing changed" in run_cli("integrate", "opencode", "--root", str(project)).stdout
    assert run_cli("integrate", "opencode", "--uninstall", "--root", str(project)).returncode == 0
    assert not theirs.exists()


def test_an_opencode_turn_refused_by_a_rate_limit_is_resumed_once_it_resets(
        workspace, start_daemon, config_home, tmp_path):
    """opencode retries a 429 itself, then reports `session.error` (statusCode 429) and an idle
    status: the plugin makes it a turn-failed, the end queues no post-task, and
    resume-after-limit resumes the same session once the stated reset has come."""
    opencode = npm_host("opencode", OPENCODE_VERSION, "opencode")
    enable_limit_resume(workspace, config_home, "opencode",
                        [str(opencode), "run", "--session", "{session_id}", "<{prompt}"])
    assert run_cli("integrate", "opencode", cwd=workspace.root).returncode == 0
    with LimitedChatStub("Rate limit reached for requests. Please try again in 3s.") as stub:
        env = opencode_setup(tmp_path, workspace.root, stub.url)
        start_daemon(workspace.root, env=env)
        first = run_in_project(opencode, workspace.root, env, "--format", "json", "remember",
                             "banana")
        assert first.returncode == 1 and stub.refused, first.stdout[-2000:]
        session_id = json.loads(first.stdout.splitlines()[0])["sessionID"]
        stub.refusing = False  # the limit resets

        wait_for_the_limit_resume(workspace)
        answered = [r for r in stub.requests[stub.refused:] if r["body"]]
    assert_resumed_after_limit(workspace, "opencode", session_id, answered)
