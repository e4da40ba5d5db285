"""The command line in process: what each command prints and the exit code it ends with,
for the paths no other in-process test takes (the table in sidecar/cli/common.py)."""

from __future__ import annotations

import logging
import os
import signal
import sys

import orjson
import pytest

from helpers import invoke, read_json
from sidecar.base import exitcodes
from sidecar.base.errors import SidecarError
from sidecar.base.outcome import Outcome
from sidecar.coordination.instances import Identity, Membership
from sidecar.followups import trust
from sidecar.followups.model import new_hook
from sidecar.followups.store import HookStore
from sidecar.hosts.base import Finding
from sidecar.install import service as service_mod
from sidecar.locks import LockTimeout
from support.stores import ingest

T0 = 1_795_900_000.0
COMMAND = ["notify-send", "done"]


def command_hook(ws, hook_id="notify", action=COMMAND):
    hook = new_hook(hook_id, hook_id, T0, action=action, promptFile=None)
    HookStore(ws, durable=False).change(T0, lambda d: d.hooks.update({hook_id: hook}))


@pytest.fixture
def serving(workspace):
    """An instance of this process that leads the workspace (its life lock held here)."""
    member = Membership(workspace, Identity(build="test"))
    member.join()
    member.heartbeat("leader", {}, "", None, {}, {})
    yield workspace
    member.leave()


@pytest.fixture
def logging_kept():
    """`run` sets up the daemon's logging: put it back after the test."""
    logger = logging.getLogger("sidecar")
    handlers, level = logger.handlers[:], logger.level
    yield
    logger.handlers[:], logger.level = handlers, level


# -- the top level ------------------------------------------------------------------------

def test_version_is_printed_by_the_option_too(monkeypatch):
    monkeypatch.setattr("sidecar.base.version.shown", lambda: "sidecar 9.9 (abc)")
    for args in (("--version",), ("version",)):
        result = invoke(*args)
        assert (result.returncode, result.stdout) == (exitcodes.OK, b"sidecar 9.9 (abc)\n")


def test_an_error_for_people_no_command_caught_is_one_line_and_exit_1(workspace, monkeypatch):
    def broken(*args, **kwargs):
        raise SidecarError("the registry is on fire")

    monkeypatch.setattr("sidecar.config.unregister", broken)
    result = invoke("unregister", str(workspace.root))
    assert result.returncode == exitcodes.FAILURE
    assert result.stderr == b"sidecar: the registry is on fire\n" and result.stdout == b""


def test_a_usage_error_is_exit_2():
    assert invoke("hooks", "add").returncode == exitcodes.USAGE
    assert invoke("no-such-command").returncode == exitcodes.USAGE


def test_emit_is_not_run_in_process():
    with pytest.raises(AssertionError, match="emit runs before the command line"):
        invoke("emit", "session-start")


# -- init and unregister ------------------------------------------------------------------

def test_init_of_a_file_is_refused(tmp_path, config_home):
    (tmp_path / "file").write_text("")
    result = invoke("init", str(tmp_path / "file"))
    assert result.returncode == exitcodes.FAILURE and b"is not a folder" in result.stderr


def test_init_with_a_registry_it_cannot_read_initialises_nothing(tmp_path, config_home):
    (config_home / "workspaces.json").write_text("[oops")
    root = tmp_path / "ws"
    root.mkdir()
    result = invoke("init", str(root))
    assert result.returncode == exitcodes.FAILURE
    assert result.stderr.startswith(f"sidecar: cannot initialise {root}: the registry ".encode())
    assert result.stderr.endswith(b"; left as it is\n") and not (root / ".context").exists()


def test_unregister_twice_says_it_is_not_registered(workspace):
    first = invoke("unregister", str(workspace.root))
    assert first.returncode == exitcodes.OK and first.stdout.startswith(b"unregistered ")
    again = invoke("unregister", str(workspace.root))
    assert again.returncode == exitcodes.FAILURE and b"is not registered" in again.stderr


def test_run_outside_a_workspace_is_exit_4(tmp_path, config_home, logging_kept):
    result = invoke("run", "--root", str(tmp_path))
    assert result.returncode == exitcodes.NOT_WORKSPACE
    assert b"is not in a workspace (no .context/); run `sidecar init" in result.stderr


def test_run_with_a_bad_config_is_exit_2(workspace, config_home, logging_kept):
    (config_home / "config.toml").write_text("concurrency = 'many'\n")
    result = invoke("run", "--root", str(workspace.root))
    assert result.returncode == exitcodes.USAGE and b"concurrency" in result.stderr


# -- status -------------------------------------------------------------------------------

def test_status_of_a_served_workspace_shows_its_sessions_bindings_and_queue(serving):
    command_hook(serving)
    ingest(serving, "ended", "session-start", "session-end", at=T0)
    ingest(serving, "live", "session-start", at=T0, host="codex")
    result = invoke("status", "--root", str(serving.root))
    assert result.returncode == exitcodes.OK, result.stderr
    text = result.stdout.decode()
    assert "served     yes" in text and "leader" in text
    assert "sessions   1 active, 1 completed" in text
    assert "bindings   1" in text and "codex" in text
    assert "queue      2" in text and "notify" in text  # post-task and notify, queued
    assert "NOT TRUSTED on this machine, so not run:\n      notify-send done" in text
    as_json = orjson.loads(invoke("status", "--json", "--root", str(serving.root)).stdout)
    [ws] = as_json["workspaces"]
    assert ws["served"] and len(ws["queue"]) == 2 and ws["instances"][0]["live"]


def test_an_untrusted_command_in_status_is_shown_whole_on_its_own_line(workspace):
    """Every line of the hook's block fits 100 columns but the command, which is shown whole
    (as `hooks list` shows it): a 64-character id, the longest there is, too."""
    hook_id = "h" * 64
    argv = ["sh", "-c", "echo " + "a-long-argument " * 8]
    command_hook(workspace, hook_id, argv)
    text = invoke("status", "--root", str(workspace.root)).stdout.decode()
    lines = text.splitlines()
    at = lines.index("    NOT TRUSTED on this machine, so not run:")
    assert lines[at + 1].strip() == trust.shown(argv) and len(lines[at + 1]) > 100
    assert lines[at + 2] == f"    to run it: sidecar hooks trust {hook_id}"
    assert all(len(line) <= 100 for line in lines if line != lines[at + 1]), text


def test_status_of_one_session_shows_its_timeline_and_follow_ups(workspace):
    ingest(workspace, "s1", "session-start", "session-end", at=T0)
    result = invoke("status", "--session", "s1", "--root", str(workspace.root))
    assert result.returncode == exitcodes.OK, result.stderr
    text = result.stdout.decode()
    assert text.startswith("session    claude-code s1 (") and "completed" in text
    assert "follow-up  post-task" in text


def test_status_of_an_unknown_session_is_exit_1(workspace):
    result = invoke("status", "--session", "nobody", "--root", str(workspace.root))
    assert result.returncode == exitcodes.FAILURE and b"no session 'nobody' in" in result.stderr
    elsewhere = invoke("status", "--session", "nobody", "--root", str(workspace.root.parent))
    assert elsewhere.returncode == exitcodes.NOT_WORKSPACE


def test_status_all_skips_a_deleted_workspace_and_says_how_to_forget_it(workspace, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    assert invoke("init", str(other)).returncode == 0
    (other / ".context").rename(other / "was-context")
    result = invoke("status", "--all")
    assert result.returncode == exitcodes.UNSERVED  # no daemon serves the one left
    assert b"is registered but is not a workspace (any more); skipped" in result.stderr
    assert str(workspace.root).encode() in result.stdout


@pytest.mark.parametrize("args, registry", [(("status", "--all"), "[oops"), (("reload",), "{}")])
def test_status_all_and_reload_with_a_registry_they_cannot_read_are_exit_2(config_home, args,
                                                                           registry):
    (config_home / "workspaces.json").write_text(registry)
    result = invoke(*args)
    assert result.returncode == exitcodes.USAGE and result.stderr.startswith(b"sidecar: ")


# -- reload -------------------------------------------------------------------------------

def test_reload_signals_no_instance_that_is_not_a_sidecar_run(serving):
    result = invoke("reload", "--root", str(serving.root))
    assert result.returncode == exitcodes.UNSERVED
    assert b"is not a `sidecar run`; not signalled" in result.stderr  # this test's process
    assert b"no running daemon of yours serves" in result.stderr


def test_reload_signals_each_live_sidecar_run_once_and_says_whom_it_could_not(serving,
                                                                              monkeypatch):
    sent = []

    def kill(pid, sig):
        sent.append((pid, sig))
        if outcome:
            raise outcome.pop(0)

    monkeypatch.setattr("sidecar.cli.stop.is_sidecar_run", lambda pid: True)
    monkeypatch.setattr("sidecar.cli.reload.os.kill", kill)
    outcome: list[BaseException] = []
    result = invoke("reload", "--root", str(serving.root))
    assert result.returncode == exitcodes.OK, result.stderr
    assert sent == [(os.getpid(), signal.SIGHUP)]
    assert f"sent SIGHUP to the daemon with pid {os.getpid()}".encode() in result.stdout
    outcome.append(PermissionError())
    refused = invoke("reload", "--root", str(serving.root))
    assert refused.returncode == exitcodes.UNSERVED
    assert b"is another user's daemon; not signalled" in refused.stderr
    outcome.append(ProcessLookupError())
    gone = invoke("reload")  # it ended meanwhile: nothing to say but that none was reloaded
    assert gone.returncode == exitcodes.UNSERVED and b"is another user" not in gone.stderr


def test_reload_without_a_daemon_is_exit_3_and_outside_a_workspace_exit_4(workspace, tmp_path):
    assert invoke("reload").returncode == exitcodes.UNSERVED
    result = invoke("reload", "--root", str(tmp_path))
    assert result.returncode == exitcodes.NOT_WORKSPACE and b"is not a workspace" in result.stderr


# -- hooks --------------------------------------------------------------------------------

def test_trusting_a_command_hook(workspace):
    command_hook(workspace)
    args = ("hooks", "trust", "notify", "--root", str(workspace.root))
    refused = invoke(*args)  # stdin is no terminal: no question can be asked
    assert refused.returncode == exitcodes.FAILURE
    assert refused.stderr == b"sidecar hooks: not trusted: add --yes to trust it without a question\n"
    trusted = invoke(*args, "--yes")
    assert trusted.returncode == exitcodes.OK and b"trusted notify (in " in trusted.stdout
    again = invoke(*args)
    assert again.returncode == exitcodes.OK and b"already trusted on this machine" in again.stdout
    resume = invoke("hooks", "trust", "post-task", "--root", str(workspace.root))
    assert resume.returncode == exitcodes.OK and b"already trusted on this machine" in resume.stdout
    assert b"\n    | The task in this conversation has ended." in resume.stdout  # what it says
    missing = invoke("hooks", "trust", "nope", "--root", str(workspace.root))
    assert missing.returncode == exitcodes.FAILURE and b"no hook 'nope'" in missing.stderr


def test_trust_asks_at_a_terminal(workspace, monkeypatch):
    command_hook(workspace)
    monkeypatch.setattr("typer.testing._NamedTextIOWrapper.isatty", lambda self: True)
    args = ("hooks", "trust", "notify", "--root", str(workspace.root))
    said_no = invoke(*args, input=b"n\n")
    assert said_no.returncode == exitcodes.FAILURE
    assert said_no.stderr == b"sidecar hooks: not trusted\n"
    assert b"does      runs notify-send done\n" in said_no.stdout
    assert b"a script it names can change without a new question)\nTrust notify as shown on " \
        b"this machine?" in said_no.stdout
    said_yes = invoke(*args, input=b"y\n")
    assert said_yes.returncode == exitcodes.OK and b"trusted notify (in " in said_yes.stdout


def test_history_lists_firings_and_says_when_there_are_none(workspace):
    root = ("--root", str(workspace.root))
    empty = invoke("hooks", "history", *root)
    assert empty.returncode == exitcodes.OK and empty.stdout == b"no firings yet\n"
    hooks = HookStore(workspace, durable=False)
    hooks.change(T0, lambda d: d.hooks["post-task"].record_firing(
        Outcome.parse("error: exit status 2"), T0, "codex", "s1", None))
    text = invoke("hooks", "history", "post-task", *root).stdout.decode()
    assert "post-task" in text and "codex" in text and "error: exit status 2" in text
    doc = orjson.loads(invoke("hooks", "history", "--json", "--session", "s1", *root).stdout)
    assert [f["status"] for f in doc["firings"]] == ["error: exit status 2"]
    missing = invoke("hooks", "history", "nope", *root)
    assert missing.returncode == exitcodes.FAILURE and b"no hook 'nope'" in missing.stderr


def test_kill_running_with_nothing_running(workspace):
    result = invoke("hooks", "kill-running", "--root", str(workspace.root))
    assert result.returncode == exitcodes.OK and result.stdout == b"no follow-up action is running\n"


def test_reasons_and_turn_options_are_written(workspace):
    root = ("--root", str(workspace.root))
    result = invoke("hooks", "update", "post-task", "--reasons", "exit, host-exited",
                    "--also-interrupted", "--again-after-user-turn", *root)
    assert result.returncode == exitcodes.OK, result.stderr
    hook = read_json(workspace.hooks_file)["hooks"]["post-task"]
    assert hook["reasons"] == ["exit", "host-exited"]
    assert hook["alsoInterrupted"] is True and hook["againAfterUserTurn"] is True
    assert invoke("hooks", "update", "post-task", "--reasons", "default", *root).returncode == 0
    assert read_json(workspace.hooks_file)["hooks"]["post-task"].get("reasons") is None
    empty = invoke("hooks", "update", "post-task", "--reasons", " , ", *root)
    assert empty.returncode == exitcodes.FAILURE
    assert b"--reasons needs at least one end reason" in empty.stderr
    nothing = invoke("hooks", "update", "post-task", *root)
    assert nothing.returncode == exitcodes.FAILURE and b"nothing to change" in nothing.stderr


def test_a_delay_of_a_fraction_of_a_second_is_refused(workspace):
    result = invoke("hooks", "update", "post-task", "--delay", "1.5", "--root",
                    str(workspace.root))
    assert result.returncode == exitcodes.FAILURE
    assert b"delay must be whole seconds, not '1.5'" in result.stderr


def test_a_hooks_edit_while_another_holds_the_lock_is_exit_75(workspace, monkeypatch):
    def held(*args, **kwargs):
        raise LockTimeout(f"{workspace.hooks_file} is locked")

    monkeypatch.setattr(HookStore, "change", held)
    result = invoke("hooks", "disable", "post-task", "--root", str(workspace.root))
    assert result.returncode == exitcodes.BUSY
    assert b"another sidecar command or a daemon holds it; try again" in result.stderr


# -- service and doctor -------------------------------------------------------------------

def test_service_install_print_shows_the_unit_and_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = invoke("service", "install", "--print")
    assert result.returncode == exitcodes.OK, result.stderr
    assert result.stdout.startswith(b"# ") and b"# then: " in result.stdout
    assert not (tmp_path / "home").exists()
    removal = invoke("service", "uninstall", "--print")
    assert removal.returncode == exitcodes.OK and b"# remove " in removal.stdout


@pytest.mark.parametrize("command, error, code, said", [
    ("install", service_mod.NoServiceManager("no systemd user manager is reachable here",
                                             "sidecar run"),
     exitcodes.NO_SERVICE_MANAGER, b"sidecar: no systemd user manager is reachable here\n"),
    ("uninstall", service_mod.ServiceError("systemctl --user enable failed"),  # it failed
     exitcodes.FAILURE, b"sidecar: systemctl --user enable failed\n"),
])
def test_no_service_manager_is_exit_5_and_a_failing_one_exit_1_in_one_line(monkeypatch, command,
                                                                             error, code, said):
    def failing(**kwargs):
        raise error

    monkeypatch.setattr(service_mod, command, failing)
    result = invoke("service", command)
    assert (result.returncode, result.stderr) == (code, said)


def test_service_install_and_uninstall_say_what_they_did(tmp_path, monkeypatch):
    unit = tmp_path / "sidecar.service"
    plan = service_mod.Plan(unit, "[Unit]\n", notes=["linger is off"])
    monkeypatch.setattr(service_mod, "install", lambda **kwargs: plan)
    monkeypatch.setattr(service_mod, "uninstall", lambda **kwargs: service_mod.Plan(unit, None))
    installed = invoke("service", "install")
    assert installed.stdout == f"installed {unit} and started it\n".encode()
    assert installed.stderr == b"note: linger is off\n"
    assert invoke("service", "install", "--no-start").stdout == f"installed {unit}\n".encode()
    assert invoke("service", "uninstall").stdout == f"removed {unit}\n".encode()


def test_service_status_is_exit_3_unless_it_runs(monkeypatch):
    monkeypatch.setattr(service_mod, "state", lambda: (False, "not installed"))
    result = invoke("service", "status")
    assert (result.returncode, result.stdout) == (exitcodes.UNSERVED, b"not installed\n")
    monkeypatch.setattr(service_mod, "state", lambda: (True, "active"))
    assert invoke("service", "status").returncode == exitcodes.OK


def test_doctor_exits_1_when_something_is_missing(monkeypatch):
    found = [Finding(True, "sidecar is on PATH"), Finding(False, "no daemon serves this",
                                                          "run sidecar service install")]
    monkeypatch.setattr("sidecar.doctor.checks.check", lambda *args: found)
    result = invoke("doctor")
    assert result.returncode == exitcodes.FAILURE
    assert b"no daemon serves this" in result.stdout and b"sidecar service install" in result.stdout
    monkeypatch.setattr("sidecar.doctor.checks.check", lambda *args: found[:1])
    assert invoke("doctor").returncode == exitcodes.OK


@pytest.mark.skipif(sys.platform != "linux", reason="the codex home is found the same way")
def test_integrate_uninstall_of_what_was_never_integrated_changes_nothing(workspace, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = invoke("integrate", "opencode", "--uninstall", "--root", str(workspace.root))
    assert result.returncode == exitcodes.OK, result.stderr
    assert b"(already so; nothing changed)" in result.stdout


def test_only_a_sidecar_run_itself_is_a_daemon_to_signal(monkeypatch):
    """`stop`, `reload` and `uninstall` signal a pid an instance file names only if it runs
    `sidecar run` itself: never a wrapper (`sudo -u bob sidecar run`) that would pass the
    signal on to a daemon that is not the caller's."""
    from sidecar.daemon import running

    cases = {("/u/.venv/bin/python", "-S", "/u/.venv/bin/sidecar", "run", "--root", "/w"): True,
             ("/u/.venv/bin/sidecar", "run"): True, ("/usr/bin/python3", "-s", "/u/sidecar", "run"): True,
             ("sudo", "-u", "bob", "sidecar", "run"): False, ("/u/sidecar", "status", "run"): False,
             ("sh", "-c", "sidecar run"): False, ("python3", "-c", "x", "sidecar", "run"): False}
    for args, expected in cases.items():
        monkeypatch.setattr(running, "command_line", lambda pid, given=args: list(given))
        assert running.is_sidecar_run(1) is expected, args
