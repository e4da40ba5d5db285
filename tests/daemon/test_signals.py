"""Signals to a real daemon: a flood of SIGHUPs is coalesced and stops nothing."""

from __future__ import annotations

import signal
import subprocess
import sys

import orjson
import pytest
from test_daemon import inbox_empty

from helpers import instance_docs, wait_until

STORMS = 5
SENDERS = 3  # processes sending at once, each as fast as it can
SIGNALS = 20000  # per sender and storm
EVENTS = 400  # per storm, dropped into the inbox while it rages
SEND = "import os, signal, sys\nfor _ in range(int(sys.argv[2])): os.kill(int(sys.argv[1]), signal.SIGHUP)"


def applied(ws, pid: int) -> int:
    return next((int(doc.get("applied", 0)) for doc in instance_docs(ws) if doc.get("pid") == pid), 0)


@pytest.mark.slow
def test_a_sighup_storm_loses_no_event_and_sigterm_still_stops_the_daemon(workspace,
                                                                         start_daemon):
    daemon = start_daemon(workspace.root)
    for storm in range(STORMS):
        senders = [subprocess.Popen([sys.executable, "-c", SEND, str(daemon.pid), str(SIGNALS)])
                   for _ in range(SENDERS)]
        for i in range(EVENTS):
            name = f"{storm}-{i:04d}"
            event = {"event": "tool-use", "session_id": f"s{i % 20}", "host": "t",
                     "tool_name": "x", "id": name}
            (workspace.inbox / f"{name}.json").write_bytes(orjson.dumps(event))
        for sender in senders:
            assert sender.wait(60) == 0
        assert daemon.proc.poll() is None, daemon.output()
        wait_until(lambda: inbox_empty(workspace), 60)
    wait_until(lambda: applied(workspace, daemon.pid) == STORMS * EVENTS, 30)
    assert daemon.proc.poll() is None, daemon.output()
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0, daemon.output()
    output = daemon.output()
    assert "Traceback" not in output and "RecursionError" not in output, output
    assert "configuration reloaded" in output
    # Reloads coalesce: SIGHUPs waiting while a reload runs are one more reload. (Measured:
    # about one reload per thousand signals here; one per hundred would mean they do not.)
    assert output.count("configuration reloaded") < STORMS * SENDERS * SIGNALS // 100
