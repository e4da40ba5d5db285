"""The harness of machines with a network and a HOME of their own (support/netmachines.py):
two machines lead and stand by through a real Redis over their veths, each with its own user's
files; cutting the leader's link makes the other lead; a machine's proxy slows Redis's
answers (or its requests) by as much as it is told; a machine's faked wall clock leaves its
monotonic clock real.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from helpers import SIDECAR, wait_until
from sidecar.base.ids import harness_id
from support.cluster import leader_of, start_sidecar, wait_for_leader
from support.record import emit_from, standing_by

pytestmark = pytest.mark.slow

TAKEOVER = 1.5 + 0.5 + 1.0  # the lease, a probe, the promised second
MARGIN = 4.0  # what a loaded 2-core CI machine may add (printed, not asserted)
# A PING's round trip through the machine's link, timed inside the machine.
PING = ("import sys, time, redis\n"
        "client = redis.Redis.from_url(sys.argv[1], socket_timeout=10)\n"
        "began = time.monotonic(); client.ping(); first = time.monotonic() - began\n"
        # connected: the second PING's time is its round trip alone
        "began = time.monotonic(); client.ping(); print(first, time.monotonic() - began)\n")
CLOCKS = ("import json, time\n"
          "began = time.monotonic(); time.sleep(0.2); slept = time.monotonic() - began\n"
          "print(json.dumps([time.time(), time.monotonic(), slept]))\n")


def idle(machine):
    """Boot a machine that runs nothing of sidecar's (its commands are run into it)."""
    return machine.start(["sleep", "infinity"])


def test_two_machines_of_their_own_lead_through_redis_and_a_cut_link_moves_the_lead(
        workspace, redis_server, net_machines):
    a, b = net_machines("a", redis_server), net_machines("b", redis_server)
    assert a.home != b.home and a.link.inside_ip != b.link.inside_ip
    for machine in (a, b):
        machine.join(workspace)  # booted for the commands alone: its sidecar is not running
    # Each user trusted the hooks on their own machine, in their own folder.
    assert (a.config_home / "trust.json").exists() and (b.config_home / "trust.json").exists()

    start_sidecar(a, workspace)
    assert wait_for_leader(workspace, redis_server, [a, b]) is a
    start_sidecar(b, workspace)
    wait_until(lambda: standing_by(workspace, b), 15)
    for machine in (a, b):
        assert machine.proxy.connections > 0  # its sidecar reached Redis through its own link
        status = machine.run([SIDECAR, "status", "--root", str(workspace.root)], cwd=workspace.root)
        assert status.returncode == 0, status.stdout + status.stderr
        assert machine.redis_url in status.stdout.decode()  # its own config.toml's URL
        address = machine.run(["ip", "-o", "-4", "addr", "show", machine.link.inside])
        assert f"{machine.link.inside_ip}/30" in address.stdout.decode()

    emit_from(b, workspace, "from-b", "session-start")  # a hook on b: applied by a, the leader
    wait_until(lambda: (workspace.session_dir(harness_id("chaos", "from-b")) / "session.json").exists(), 10)

    cut = time.monotonic()
    a.partition()
    wait_until(lambda: leader_of(workspace, redis_server, [a, b]) is b, TAKEOVER + MARGIN)
    print(f"\ntakeover of a cut-off leader: {time.monotonic() - cut:.2f} s")
    emit_from(b, workspace, "while-cut", "session-start")
    wait_until(lambda: (workspace.session_dir(harness_id("chaos", "while-cut")) / "session.json").exists(), 10)
    a.heal()
    # Back on the network, the old leader finds its lead gone and stands by.
    wait_until(lambda: standing_by(workspace, a), 15)
    assert leader_of(workspace, redis_server, [a, b]) is b
    assert any("no longer leading" in m or "the lead was lost" in m for _, _, m in a.log_lines(workspace))


def test_a_machines_proxy_delays_redis_answers_and_requests_by_its_delays(
        redis_server, net_machines):
    a = idle(net_machines("a", redis_server))
    timings = {}
    for answers, requests in ((1.8, 0.0), (0.0, 1.0), (0.0, 0.0)):
        a.proxy.delay, a.proxy.request_delay = answers, requests
        done = a.run([sys.executable, "-c", PING, a.redis_url])
        assert done.returncode == 0, done.stderr
        timings[answers, requests] = float(done.stdout.split()[1])
    print(f"\nPING through the proxy (answers, requests delayed): {timings}")
    assert 1.8 <= timings[1.8, 0.0] < 1.8 + 0.5
    assert 1.0 <= timings[0.0, 1.0] < 1.0 + 0.5
    assert timings[0.0, 0.0] < 0.5
    # Requests held from the first PING on, released 2 s later: the first PING waits (for
    # what is left of the 2 s once the command has started), the next one does not.
    a.proxy.hold_requests(b"PING")
    release = threading.Timer(2.0, a.proxy.release)
    release.start()
    try:
        done = a.run([sys.executable, "-c", PING, a.redis_url])
    finally:
        release.join()
    held, after = (float(t) for t in done.stdout.split())
    print(f"PING held until released: {held:.2f} s; the next: {after:.4f} s")
    assert 1.0 <= held < 2.5 and after < 0.5


def test_a_faked_wall_clock_moves_date_and_leaves_the_monotonic_clock_real(
        redis_server, net_machines):
    ahead = idle(net_machines("ahead", redis_server, clock="+25h"))
    behind = idle(net_machines("behind", redis_server, clock="-2m"))
    for machine, offset in ((ahead, 25 * 3600), (behind, -120)):
        date = machine.run(["date", "+%s"])
        assert abs(int(date.stdout) - time.time() - offset) < 5, (machine.name, date.stdout)
        done = machine.run([sys.executable, "-c", CLOCKS])
        assert done.returncode == 0, done.stderr
        wall, monotonic, slept = json.loads(done.stdout)
        assert abs(wall - time.time() - offset) < 5
        assert abs(monotonic - time.monotonic()) < 5  # one kernel, one monotonic clock
        assert 0.2 <= slept < 1.0, slept  # and a sleep takes as long as it should
