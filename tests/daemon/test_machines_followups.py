"""Follow-ups across machines: real `sidecar run`s on two "machines" (PID namespaces of their
own, support/machines.py) serve one workspace through a real redis-server, while an outside
process holds every one of the workspace's flock locks (support/lock_holder.py), so Redis alone
coordinates them. A due follow-up fires once across the machines; one running when its
machine loses its power is recorded `error: interrupted`, once, and never run again; one
running across a SIGTERM cutover is adopted by the new leader, which records its real outcome.

Each hook's action records "start <session> <machine>" and "end <session> <machine>" lines in
a file outside the workspace: what ran, where, and how often.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from helpers import use_hooks, wait_until
from sidecar.emit import drop
from sidecar.followups.run.lease import TTL_MS
from support.cluster import (
    coordinate_through,
    daemon_log,
    inbox_events,
    leader_of,
    start_sidecar,
    wait_for_leader,
)
from support.lock_holder import holding_locks
from support.record import hooks_doc

pytestmark = pytest.mark.slow

HOOK = "rec"
RUN_LEASE_TTL = TTL_MS / 1000
SETTLE = 4.0  # seconds to watch a settled workspace for a second firing


def recording_hook(out: Path, sleep: float, delay: int = 1) -> dict:
    """A session-end command hook whose action records its start, sleeps, records its end."""
    line = f'"$SIDECAR_SESSION_ID $(hostname)" >> {out}'
    script = f"echo start {line}; sleep {sleep}; echo end {line}"
    return {"id": HOOK, "name": HOOK, "event": "session-end", "delaySeconds": delay,
            "promptFile": None, "action": ["sh", "-c", script], "enabled": True}


def end_sessions(ws, sessions: list[str]) -> None:
    """Each session starts and ends, through sidecar's own emit code."""
    for session in sessions:
        for event in ("session-start", "session-end"):
            data = (f'{{"event":"{event}","session_id":"{session}","host":"chaos",'
                    f'"ts":{time.time()!r}}}').encode()
            drop(str(ws.root), data)


def recorded(out: Path, what: str) -> Counter[str]:
    """How often each session's action recorded `what` ("start" or "end")."""
    lines = out.read_text().splitlines() if out.exists() else []
    return Counter(line.split()[1] for line in lines if line.split()[:1] == [what])


def where(out: Path, session: str) -> list[str]:
    """The machines on which the session's action started."""
    lines = out.read_text().splitlines() if out.exists() else []
    return [line.split()[2] for line in lines if line.split()[:2] == ["start", session]]


def history(ws) -> list[dict]:
    return hooks_doc(ws)["hooks"][HOOK].get("history", [])  # none until it first fires


def running_on_the_leader(ws, server, out: Path, machines: list, session: str) -> tuple:
    """End `session`, wait until its follow-up's action runs, on the leader's machine; the
    leader, and the other machine."""
    leader = wait_for_leader(ws, server, machines)
    end_sessions(ws, [session])
    wait_until(lambda: where(out, session), 30)
    assert where(out, session) == [leader.name]  # the leader's machine runs it
    wait_until(lambda: hooks_doc(ws)["pending"] and hooks_doc(ws)["pending"][0].get("run"), 10)
    return leader, next(m for m in machines if m is not leader)


def outcome(ws) -> tuple[list[tuple[str, str]], list]:
    """(session, status) of every recorded firing, and what is queued."""
    doc = hooks_doc(ws)
    firings = doc["hooks"][HOOK].get("history", [])
    return sorted((h["sessionId"], h["status"]) for h in firings), doc["pending"]


@pytest.fixture
def cluster(workspace, config_home, redis_server, machines, tmp_path):
    """Two machines' sidecars coordinating through Redis only; their leader, once one leads."""
    coordinate_through(config_home, redis_server)
    out = tmp_path / "fired.txt"

    def boot(hook: dict):
        use_hooks(workspace, {hook["id"]: hook})
        a, b = machines("a"), machines("b")
        start_sidecar(a, workspace)
        start_sidecar(b, workspace)
        wait_for_leader(workspace, redis_server, [a, b])
        return a, b

    with holding_locks(workspace.root) as holder:
        yield workspace, redis_server, out, boot
        assert holder.poll() is None, "the workspace's flock locks were let go meanwhile"


def test_a_due_follow_up_fires_once_across_the_machines(cluster):
    ws, server, out, boot = cluster
    a, b = boot(recording_hook(out, sleep=0.05))
    sessions = [f"fu-{i:02d}" for i in range(10)]
    end_sessions(ws, sessions)
    wait_until(lambda: len(history(ws)) >= len(sessions) and not hooks_doc(ws)["pending"], 60)
    settled = outcome(ws)
    assert settled == ([(s, "ok") for s in sessions], [])
    assert recorded(out, "start") == Counter(sessions)  # every action ran, once
    assert recorded(out, "end") == Counter(sessions)
    time.sleep(SETTLE)  # nothing queued again, nothing fired again
    assert outcome(ws) == settled
    assert recorded(out, "start") == Counter(sessions)
    assert not inbox_events(ws)
    assert a.up and b.up


def test_a_follow_up_whose_machine_dies_is_recorded_interrupted_once(cluster):
    ws, server, out, boot = cluster
    a, b = boot(recording_hook(out, sleep=60))
    leader, other = running_on_the_leader(ws, server, out, [a, b], "doomed")
    leader.kill()  # every process of it, the action too
    killed_at = time.monotonic()
    assert wait_for_leader(ws, server, [a, b], timeout=15) is other
    wait_until(lambda: history(ws), RUN_LEASE_TTL + 15)
    took = time.monotonic() - killed_at
    settled = outcome(ws)
    assert settled == ([("doomed", "error: interrupted")], [])
    print(f"\nkill -> recorded interrupted: {took:.2f}s (run lease TTL {RUN_LEASE_TTL:g}s)")
    time.sleep(SETTLE)  # never run again
    assert outcome(ws) == settled
    assert recorded(out, "start") == Counter(["doomed"]) and not recorded(out, "end")
    booted = len(leader.output())
    start_sidecar(leader, ws)  # the machine comes back: it stands by, and nothing changes
    wait_until(lambda: "stands by" in leader.output()[booted:], 15)
    time.sleep(SETTLE)
    assert outcome(ws) == settled
    assert recorded(out, "start") == Counter(["doomed"]) and not recorded(out, "end")
    assert leader_of(ws, server, [a, b]) is other


def test_a_follow_up_running_across_a_sigterm_cutover_is_recorded_by_the_new_leader(cluster):
    ws, server, out, boot = cluster
    a, b = boot(recording_hook(out, sleep=3))
    old, new = running_on_the_leader(ws, server, out, [a, b], "cutover")
    log_before = daemon_log().read_text(errors="replace")
    termed_at = time.monotonic()
    assert old.terminate(timeout=10) == 0
    exited = time.monotonic() - termed_at
    assert old.up  # the action runs on inside the old leader's machine
    assert wait_for_leader(ws, server, [a, b], timeout=15) is new
    led = time.monotonic() - termed_at
    wait_until(lambda: "adopted 1 running follow-up action" in new.output(), 15)
    adopted = time.monotonic() - termed_at
    wait_until(lambda: history(ws), 30)
    recorded_after = time.monotonic() - termed_at
    settled = outcome(ws)
    assert settled == ([("cutover", "ok")], [])
    assert recorded(out, "start") == Counter(["cutover"])
    assert recorded(out, "end") == Counter(["cutover"])
    adoption = [line for line in daemon_log().read_text(errors="replace")[len(log_before):]
                .splitlines() if "adopted 1 running follow-up action" in line]
    assert adoption, daemon_log().read_text(errors="replace")[len(log_before):]
    print(f"\nSIGTERM -> old sidecar exit: {exited:.2f}s; -> new leader: {led:.2f}s; "
          f"-> adopted: {adopted:.2f}s; -> ok recorded: {recorded_after:.2f}s")
    time.sleep(SETTLE)  # never run again
    assert outcome(ws) == settled
    assert recorded(out, "start") == Counter(["cutover"])


def test_a_follow_up_running_while_redis_restarts_empty_is_recorded_ok_and_never_again(cluster):
    """Redis restarts without persistence while an action runs: every key is gone (the lead,
    the leases, the fencing counter). Whoever leads next must neither take the action for
    dead (its runner sets its lease again) nor take the old term's claim for its own."""
    ws, server, out, boot = cluster
    a, b = boot(recording_hook(out, sleep=6))
    end_sessions(ws, ["restarted"])
    wait_until(lambda: where(out, "restarted"), 30)
    server.stop()
    time.sleep(1)
    server.start()
    wait_for_leader(ws, server, [a, b], 15)
    wait_until(lambda: history(ws), 30)
    time.sleep(SETTLE)
    assert outcome(ws) == ([("restarted", "ok")], [])
    assert recorded(out, "start") == Counter(["restarted"])
    assert recorded(out, "end") == Counter(["restarted"])
