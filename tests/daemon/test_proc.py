"""base/proc.py: a process as /proc tells it, which every reader (the hook, status, the
daemon's watch) takes from this one module."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sidecar.base import proc


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_process_is_named_by_its_pid_and_start():
    name, state, parent, start = proc.stat(os.getpid()) or ("", "", 0, 0)
    assert name and state in "RS" and parent == os.getppid() and start > 0
    assert proc.is_alive(os.getpid(), start) and proc.is_alive(os.getpid(), None)
    assert not proc.is_alive(os.getpid(), start + 1)  # the pid, reused by another process


def test_a_process_that_is_gone_or_a_zombie_is_not_alive():
    assert proc.stat(_gone_pid()) is None and not proc.is_alive(_gone_pid(), None)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        while (proc.stat(zombie.pid) or ("", "Z"))[1] != "Z":
            pass
        assert not proc.is_alive(zombie.pid, None)
    finally:
        zombie.wait()


def test_without_proc_kill_zero_is_all_there_is(monkeypatch):
    monkeypatch.setattr(proc, "stat", lambda pid: None)
    assert proc.is_alive(os.getpid(), 12345)  # no start time to compare: it exists
    assert not proc.is_alive(_gone_pid(), None)


def test_a_hooks_host_is_the_shells_parent():
    """Hosts run hooks through `sh -c`, which exits with the hook: the host is its parent."""
    code = "from sidecar.base.proc import host_process; print(host_process()[0])"
    shown = subprocess.run(["sh", "-c", f"{sys.executable} -c '{code}'; true"],
                           capture_output=True, text=True, check=True).stdout
    assert int(shown) == os.getpid()



def hook_claims(command: str, claude_pid: str | None) -> dict:
    """The `*_PID` claims `sidecar emit` records for a hook run as `command` (`{hook}`)."""
    code = "from sidecar.emit import host_meta; print(dict(host_meta()).get('pidClaims', '{}'))"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PID")}
    if claude_pid is not None:
        env["CLAUDE_PID"] = claude_pid
    hook = f"{sys.executable} -c \"{code}\""
    return json.loads(subprocess.run(["sh", "-c", command.format(hook=hook)], env=env,
                                     capture_output=True, text=True, check=True).stdout)


def test_a_pid_variable_is_recorded_only_where_it_names_an_ancestor_of_the_hook():
    """`timeout` forks the hook and waits, so it looks like the host (its exit would end the
    session at once); a host's own `*_PID` names the process behind it, and is recorded with
    its start time. A number naming no ancestor (inherited from elsewhere) is not."""
    wrapped = "timeout 30 {hook}; true"
    assert hook_claims(wrapped, None) == {}
    assert hook_claims(wrapped, str(os.getpid())) == {"CLAUDE_PID": [os.getpid(), proc.start_time(os.getpid())]}
    with subprocess.Popen(["sleep", "30"]) as unrelated:
        try:
            assert hook_claims("{hook}; true", str(unrelated.pid)) == {}
            assert hook_claims("{hook}; true", "not-a-pid") == {}
            assert hook_claims("{hook}; true", "١٢") == {}  # digits, not ASCII ones
            # No pid has 5,000 digits: the event is still emitted (int() of it would raise).
            assert hook_claims("{hook}; true", "9" * 5000) == {}
        finally:
            unrelated.kill()
