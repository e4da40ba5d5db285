"""`status`, `status --session` and `sessions` answered before typer is loaded (the dispatch in
sidecar/__init__.py), through the real launcher: the same words, JSON and exit codes as typer's
command gives (run in process here, `invoke`), and typer's answer for help and errors."""

from __future__ import annotations

import os
import subprocess

import orjson
import pytest

from helpers import SIDECAR, emit, invoke, read_json, trust_hooks, wait_until

# What a moment later reads differently: ages and countdowns.
MOVING = ("ageSeconds", "heartbeatAgeSeconds", "dueInSeconds", "oldestAgeSeconds", "heartbeatAt")


def launched(*args: str, cwd=None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real launcher, saying what it imported (PYTHONVERBOSE) on stderr."""
    return subprocess.run([SIDECAR, *args], capture_output=True, cwd=cwd, timeout=60,
                          env={**os.environ, "PYTHONVERBOSE": "1", **(env or {})})


def loaded(result: subprocess.CompletedProcess) -> set[str]:
    return {line.split("'")[1] for line in result.stderr.decode(errors="replace").splitlines()
            if line.startswith("import '")}


def said(result: subprocess.CompletedProcess) -> str:
    """stderr without the import trace."""
    return "".join(line for line in result.stderr.decode(errors="replace").splitlines(True)
                   if not line.startswith(("import ", "#", "Python ", "Type ")))


def steady(value):
    """A report without what moves from one moment to the next."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in MOVING}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def served_with_a_session(ws, start_daemon, session_id: str):
    """A daemon serving `ws`, once it has applied a Claude Code session's start and prompt."""
    daemon = start_daemon(ws.root)
    for event in ("SessionStart", "UserPromptSubmit"):
        emit(ws.root, orjson.dumps({"hook_event_name": event, "session_id": session_id,
                                    "cwd": str(ws.root), "prompt": "go"}), "--source", "claude-code")
    wait_until(lambda: list(ws.sessions.iterdir()) and not list(ws.inbox.glob("*.json")))
    return daemon


def test_status_answers_without_typer_or_orjson_as_the_full_command(workspace, start_daemon):
    unserved = launched("status", "--root", str(workspace.root))
    assert unserved.returncode == 3 == invoke("status", "--root", str(workspace.root)).returncode
    assert b"no live instance" in unserved.stdout
    assert not loaded(unserved) & {"typer", "orjson", "site", "dataclasses", "pathlib"}
    daemon = served_with_a_session(workspace, start_daemon, "s-1")
    fast = launched("status", "--root", str(workspace.root), "--json")
    assert fast.returncode == 0 and "typer" not in loaded(fast), said(fast)
    whole = invoke("status", "--root", str(workspace.root), "--json")
    assert steady(orjson.loads(fast.stdout)) == steady(orjson.loads(whole.stdout))
    report = orjson.loads(fast.stdout)["workspaces"][0]
    assert report["served"] and [i["pid"] for i in report["instances"]] == [daemon.pid]
    text = launched("status", "--root", str(workspace.root))
    assert text.returncode == 0 and b"served     yes" in text.stdout
    assert b"claude-code  s-1" in text.stdout and "typer" not in loaded(text)


def test_all_and_the_current_folder_choose_the_workspaces_as_the_full_command(workspace, tmp_path):
    inside = workspace.root / "src" / "deep"
    inside.mkdir(parents=True)
    here = launched("status", "--json", cwd=inside)
    assert orjson.loads(here.stdout)["workspaces"][0]["root"] == str(workspace.root)
    every = launched("status", "--all", "--json", cwd=tmp_path)
    assert "typer" not in loaded(every)
    assert steady(orjson.loads(every.stdout)) == steady(orjson.loads(
        invoke("status", "--all", "--json", cwd=tmp_path).stdout))


def test_a_rare_branch_is_answered_without_typer_by_the_module_that_knows_it(workspace):
    doc = read_json(workspace.hooks_file)
    doc["hooks"]["lint"] = {"id": "lint", "name": "lint", "action": ["make", "lint"]}
    workspace.hooks_file.write_bytes(orjson.dumps(doc))  # a hand edit: trust to check
    untrusted = launched("status", "--root", str(workspace.root))
    assert "typer" not in loaded(untrusted) and "sidecar.followups.trust" in loaded(untrusted)
    assert b"NOT TRUSTED" in untrusted.stdout and untrusted.returncode == 3
    trust_hooks(workspace)
    trusted = launched("status", "--root", str(workspace.root))
    assert b"NOT TRUSTED" not in trusted.stdout


@pytest.mark.parametrize("args, code, words", [
    (("status", "--bogus"), 2, b"No such option"),
    (("status", "--help"), 0, b"Usage: sidecar status"),
    (("sessions", "--limit", "0"), 2, b"--limit"),
    (("sessions", "--since", "soon"), 2, b"--since"),
])
def test_help_and_bad_options_are_the_full_commands(workspace, args, code, words):
    result = launched(*args, cwd=workspace.root)
    assert result.returncode == code
    assert words in result.stdout + result.stderr and "typer" in loaded(result)


def test_a_folder_that_is_no_workspace_is_said_by_the_full_command(tmp_path, config_home):
    result = launched("status", "--root", str(tmp_path))
    assert result.returncode == 4 and "not a workspace" in said(result)


def test_sessions_and_one_sessions_story_answer_without_typer(workspace, start_daemon):
    served_with_a_session(workspace, start_daemon, "s-2")
    listed = launched("sessions", "--root", str(workspace.root), "--json")
    assert listed.returncode == 0 and "typer" not in loaded(listed), said(listed)
    full_list = invoke("sessions", "--root", str(workspace.root), "--json")
    assert steady(orjson.loads(listed.stdout)) == steady(orjson.loads(full_list.stdout))
    table = launched("sessions", "--root", str(workspace.root), "--active")
    assert b"s-2" in table.stdout and "typer" not in loaded(table)
    story = launched("status", "--session", "s-2", "--root", str(workspace.root), "--json")
    assert story.returncode == 0 and "typer" not in loaded(story), said(story)
    assert orjson.loads(story.stdout) == orjson.loads(
        invoke("status", "--session", "s-2", "--root", str(workspace.root), "--json").stdout)
    unknown = launched("status", "--session", "nope", "--root", str(workspace.root))
    assert unknown.returncode == 1 and "no session 'nope'" in said(unknown)


def test_a_registered_folder_that_is_no_workspace_any_more_is_said_by_the_full_command(
        workspace, tmp_path, config_home):
    gone = tmp_path / "gone"
    (gone / ".context").mkdir(parents=True)
    assert invoke("init", str(gone)).returncode == 0
    for part in sorted(gone.rglob("*"), reverse=True):
        part.rmdir() if part.is_dir() else part.unlink()
    for args in (("status", "--all"), ("sessions",)):
        result = launched(*args, cwd=tmp_path)
        assert "typer" in loaded(result), args  # the full command, which says so
        assert f"{gone} is registered but is not a workspace" in said(result), args
