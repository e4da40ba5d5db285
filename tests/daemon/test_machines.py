"""The test support's "machines" (PID namespaces): a machine sees only its own processes, its
power cut kills every one of them, its sidecar can be frozen, thawed and stopped, and two real
`sidecar run`s on two machines share one workspace as over a network volume."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson
import pytest

from helpers import SIDECAR, fixture_payload, instance_docs, wait_until
from support import machines as machines_mod


def cmdlines(machine) -> str:
    """Every command line the machine's /proc shows, from inside it."""
    listing = machine.run([sys.executable, "-c",
                           "import os\n"
                           "for p in os.listdir('/proc'):\n"
                           "    if p.isdigit():\n"
                           "        try: print(p, open(f'/proc/{p}/cmdline').read().replace(chr(0), ' '))\n"
                           "        except OSError: pass\n"])
    assert listing.returncode == 0, listing.stderr
    return listing.stdout.decode()


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_a_machine_sees_only_its_own_processes_and_has_its_own_name(machines, tmp_path):
    a = machines("a").start(["sleep", "301"])
    b = machines("b").start(["sleep", "302"])
    for machine, own, other in ((a, "sleep 301", "sleep 302"), (b, "sleep 302", "sleep 301")):
        seen = cmdlines(machine)
        assert own in seen and other not in seen, seen
        assert machine.run(["hostname"]).stdout == f"{machine.name}\n".encode()
    # pid 1 and 2 in each: the same pids name different processes on different machines
    assert machines_mod.namespace_pids(a.init_pid())[-1] == 1
    assert machines_mod.namespace_pids(a.main_pid())[-1] == 2
    assert machines_mod.namespace_pids(b.main_pid())[-1] == 2
    assert a.main_pid() != b.main_pid()
    # a command run inside has a parent there, as a hook's emit has its host
    parent = a.run([sys.executable, "-c", "import os; print(os.getppid())"]).stdout
    assert int(parent) > 2


def test_the_power_cut_kills_every_process_of_the_machine(machines):
    a = machines("a").start(["sh", "-c", "sleep 300 & setsid sleep 300 & "
                             "(trap '' TERM; sleep 300) & wait"])
    wait_until(lambda: cmdlines(a).count("sleep 300") >= 3)
    everyone = a.pids()
    other = machines("b").start(["sleep", "300"])
    a.kill()
    assert not a.up
    assert all(gone(pid) for pid in everyone), [p for p in everyone if not gone(p)]
    assert other.up and not gone(other.main_pid())  # another machine runs on


def test_its_command_is_frozen_thawed_and_terminated(machines, tmp_path):
    ticks = tmp_path / "ticks"
    # os.write, not a file object: Python drops an exception raised in a file object's
    # finaliser, so a SIGTERM landing while `open(...).write()`'s unnamed file is closed would
    # have its handler's SystemExit swallowed and the ticker tick on.
    ticker = ("import os, signal, sys, time\n"
              "signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))\n"
              f"fd = os.open({str(ticks)!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n"
              "while True:\n    os.write(fd, b'.'); time.sleep(0.02)\n")
    a = machines("a").start([sys.executable, "-c", ticker])
    wait_until(lambda: ticks.exists() and ticks.stat().st_size > 3)
    a.stop()
    time.sleep(0.1)  # a tick being written when it stopped lands
    frozen = ticks.stat().st_size
    time.sleep(0.3)
    assert ticks.stat().st_size == frozen
    a.cont()
    wait_until(lambda: ticks.stat().st_size > frozen + 3)
    assert a.terminate() == 3  # its own SIGTERM handler's status
    wait_until(lambda: not a.up)  # nothing else ran on it: the machine ends with it
    assert a.main_pid() is None


def test_a_machine_outlives_its_command_while_a_detached_process_runs(machines):
    a = machines("a").start(["sh", "-c", "setsid sleep 300 & exit 5"])
    wait_until(lambda: a.status_file.exists())
    assert a.exit_status() == 5
    assert a.up and "sleep 300" in cmdlines(a)
    a.kill()
    assert not a.up


def test_a_command_that_ignores_sigterm_fails_the_test_and_is_killed(machines):
    a = machines("a").start(["sh", "-c", "trap '' TERM; sleep 300 & wait; sleep 300"])
    wait_until(lambda: len(a.pids()) >= 3)
    with pytest.raises(AssertionError, match="did not exit within"):
        a.terminate(timeout=0.5)
    assert not a.up


def test_a_machine_is_started_once_until_it_is_down(machines):
    a = machines("a").start(["sleep", "300"])
    with pytest.raises(RuntimeError, match="still up"):
        a.start(["sleep", "1"])
    a.kill()
    a.start(["sleep", "300"])  # a reboot
    assert a.up and machines_mod.namespace_pids(a.main_pid())[-1] == 2


def test_without_root_no_machine_is_made_and_the_test_says_why(monkeypatch):
    monkeypatch.setattr(machines_mod.os, "geteuid", lambda: 1000)
    assert "needs root" in machines_mod.why_not.__wrapped__()
    monkeypatch.setattr(machines_mod, "why_not", lambda: "unshare: operation not permitted")
    with pytest.raises(pytest.skip.Exception, match="no machines here: unshare"):
        machines_mod.Machine("a", Path("/nonexistent"))


def leader_host(ws) -> str | None:
    return next((f"{doc.get('hostname')}:{doc.get('pid')}" for doc in instance_docs(ws)
                 if doc.get("role") == "leader"), None)


def test_two_sidecars_on_two_machines_share_a_workspace(machines, workspace, config_home, tmp_path):
    run = [SIDECAR, "run", "--root", str(workspace.root)]
    a = machines("a").start(run, cwd=workspace.root, log_path=tmp_path / "a.log")
    wait_until(lambda: leader_host(workspace), 20)
    assert leader_host(workspace) == "a:2"  # its pid and name on its own machine
    b = machines("b").start(run, cwd=workspace.root, log_path=tmp_path / "b.log")
    wait_until(lambda: "stands by" in b.output(), 20)
    body = orjson.loads(fixture_payload("claude-code-2.1.328/SessionStart.json"))
    body.pop("transcript_path", None)
    body |= {"session_id": "s-from-b", "cwd": str(workspace.root)}
    emitted = b.run([SIDECAR, "emit", "--source", "claude-code"], input=orjson.dumps(body),
                    cwd=workspace.root)
    assert emitted.returncode == 0, emitted.stderr
    wait_until(lambda: any(b"s-from-b" in p.read_bytes()
                           for p in workspace.sessions.glob("*/session.json")), 20)
    a.kill()  # the leader's machine loses its power; b leads
    wait_until(lambda: leader_host(workspace) == "b:2", 30)
    assert b.terminate() == 0


def test_the_children_of_a_process_are_found_without_proc_children_too(machines, monkeypatch):
    a = machines("a").start(["sleep", "300"])
    init = a.init_pid()
    real_read = Path.read_text

    def no_children_files(path, *args, **kwargs):
        if path.name == "children":
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", no_children_files)
    assert machines_mod.children(a.pid) == [init]
    assert machines_mod.children(init) == [a.main_pid()]


def test_a_machine_reaches_the_tests_redis(machines, redis_servers):
    over_tcp, over_socket = redis_servers(), redis_servers(unix_socket=True, password="pw")
    a = machines("a").start(["sleep", "300"])
    for server in (over_tcp, over_socket):
        ping = a.run([sys.executable, "-c", "import redis, sys; "
                      "print(redis.Redis.from_url(sys.argv[1]).ping())", server.url])
        assert ping.stdout == b"True\n", ping.stderr
