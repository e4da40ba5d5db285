"""Host exits and cutovers: how soon a dead host's session is completed, and how soon a
SIGTERMed leader hands over while a follow-up action runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
from common import SIDECAR, daemon, percentile, report, sandbox, wait_for_leader

HOST = """
import subprocess, sys, time
sidecar, root, sid, name = sys.argv[1:5]
payload = '{"hook_event_name": "%s", "session_id": "%s", "cwd": "%s"}' % (name, sid, root)
subprocess.run(["sh", "-c", sidecar + " emit --source bench"], input=payload.encode(), check=True,
               capture_output=True)
print("ready", flush=True)
time.sleep(3600)
"""


def _status(root: Path, sid: str) -> str | None:
    from sidecar.base.ids import harness_id

    path = root / ".context/runtime/sessions" / harness_id("bench", sid) / "session.json"
    try:
        record = orjson.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return str(record["status"]) + ("+pid" if record["metadata"]["sidecar"].get("hostPid") else "")


def _until(predicate, timeout: float = 10.0) -> float:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if predicate():
            return time.perf_counter()
        time.sleep(0.001)
    raise RuntimeError("timed out")


def host_exit(runs: int = 20) -> None:
    """SIGKILL of a host -> its session completed; floor: the host's own end event -> completed."""
    exits, ends = [], []
    with sandbox() as (root, env):
        with daemon(root, env):
            for i in range(runs):
                for kind, samples in (("kill", exits), ("end", ends)):
                    sid = f"{kind}-{i}"
                    host = subprocess.Popen([sys.executable, "-c", HOST, SIDECAR, str(root), sid,
                                             "SessionStart"], stdout=subprocess.PIPE, env=env,
                                            start_new_session=True)
                    assert host.stdout is not None and host.stdout.readline() == b"ready\n"
                    _until(lambda s=sid: _status(root, s) == "active+pid")
                    time.sleep(0.05)  # the watch is armed
                    start = time.perf_counter()
                    if kind == "kill":
                        host.kill()
                    else:
                        payload = orjson.dumps({"hook_event_name": "SessionEnd", "session_id": sid,
                                                "cwd": str(root)})
                        subprocess.run([SIDECAR, "emit", "--source", "bench"], input=payload,
                                       env=env, capture_output=True)
                    samples.append(_until(lambda s=sid: (_status(root, s) or "").startswith(
                        "completed")) - start)
                    host.kill()
                    host.wait()
                    host.stdout.close()
    floor = percentile(ends, 50)
    report("host exit (SIGKILL) -> completed: p50", f"{percentile(exits, 50) * 1000:.1f} ms",
           f"floor: its own end event {floor * 1000:.1f} ms",
           f"{percentile(exits, 50) / floor:.1f}x floor; contract < 2 s")
    report("host exit (SIGKILL) -> completed: p99", f"{percentile(exits, 99) * 1000:.1f} ms",
           f"floor p99 {percentile(ends, 99) * 1000:.1f} ms")


def sigterm_handoff(runs: int = 5) -> None:
    """SIGTERM to the leader while an 8 s action runs -> it exits, the stand-by leads."""
    with_action, without = [], []
    for busy, samples in ((True, with_action), (False, without)):
        for i in range(runs):
            with sandbox() as (root, env):
                hooks = root / ".context/runtime/hooks.json"
                doc = orjson.loads(hooks.read_bytes())
                doc["hooks"]["post-task"].update(
                    delaySeconds=0, promptFile=None,
                    action=[sys.executable, "-c", "import time; time.sleep(8)"])
                hooks.write_bytes(orjson.dumps(doc))
                subprocess.run([SIDECAR, "hooks", "trust", "post-task", "--yes", "--root",
                                str(root)], env=env, check=True, capture_output=True)
                with daemon(root, env) as old:
                    standby = subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                                               stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL)
                    try:
                        if busy:
                            subprocess.run([SIDECAR, "emit", "session-end", "--session-id",
                                            f"s{i}", "--source", "bench"], cwd=root, env=env,
                                           capture_output=True)
                            _until(lambda h=hooks: b'"run"' in h.read_bytes(), 15)
                        start = time.perf_counter()
                        old.send_signal(signal.SIGTERM)
                        old.wait(30)
                        samples.append(time.perf_counter() - start)
                        wait_for_leader(root, standby.pid)
                    finally:
                        standby.send_signal(signal.SIGTERM)
                        standby.wait(30)
    report("SIGTERM -> exit, an 8 s action running: p50", f"{percentile(with_action, 50) * 1000:.0f} ms",
           f"floor: no action {percentile(without, 50) * 1000:.0f} ms",
           f"{percentile(with_action, 50) / percentile(without, 50):.1f}x floor; contract < 1 s")
    report("SIGTERM -> exit, an 8 s action running: max", f"{max(with_action) * 1000:.0f} ms")


if __name__ == "__main__":
    host_exit()
    sigterm_handoff()
