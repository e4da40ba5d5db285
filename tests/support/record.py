"""What the shared-workspace scenarios (tests/daemon/test_redis_record.py) drive and count:
events dropped by an emitter in the test's own namespace (tests/daemon/record_emitter.py, which
lists every file it dropped), a command follow-up that appends a line each time it starts and
ends, and the counts a user would check afterwards, each defined precisely:

- an event is **lost** when no line of its session's trace names its inbox file: whatever the
  event did (start, turn, end) never reached the session's record;
- an event is **applied twice** when a trace line's id occurs twice in its session's trace
  (a line's id is derived from the inbox file and the line's kind, so applying one event again
  repeats its ids; see sessions/rules.py `trace_line`): each extra copy counts once;
- a follow-up **fired twice** when its action started twice for one session (the lines it
  appends are counted, not the records), and was **lost** when it never ran and nothing records
  it; it is **recorded twice** when the hook's history has two entries for one session;
- a **binding left** is a session whose record is completed while host-sessions.json still
  binds it (a live session's binding is kept, as it must be).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from helpers import SIDECAR, instance_docs, read_json
from sidecar.base.ids import harness_id
from sidecar.coordination.base import workspace_key
from sidecar.layout import Workspace

HOST = "chaos"  # the host the emitter's events name: no host of sidecar's, so none is watched
EMITTER = Path(__file__).parent.parent / "daemon" / "record_emitter.py"
INTERRUPTED = "error: interrupted"
TURN = ["session-start", "turn-start", "tool-use", "tool-use", "turn-end"]
SESSION = [*TURN, "session-end"]  # the six events of a whole session
# The daemon's lines that say it wrote something of the workspace's (`-v` logs each batch).
WRITES = ("applied ", "fired ", "swept ", "adopted ", "interrupted by a dead instance")


# -- driving -------------------------------------------------------------------------------

def emit_from(machine, ws: Workspace, session: str, event: str, **fields: object) -> None:
    """A hook on `machine` runs the real `sidecar emit` with a payload of `event`."""
    payload = orjson.dumps({"event": event, "session_id": session, "host": HOST, **fields})
    done = machine.run([SIDECAR, "emit"], input=payload, cwd=ws.root)
    assert done.returncode == 0 and not done.stderr, done.stderr


def standing_by(ws: Workspace, machine) -> bool:
    return any(i.get("hostname") == machine.name and i.get("role") == "standby"
               for i in instance_docs(ws))


def use_hooks(ws: Workspace, hooks: list[dict]) -> None:
    """hooks.json with these hooks only (written before any daemon runs; each machine's user
    then trusts them on their own machine: NetMachine.join)."""
    doc = read_json(ws.hooks_file)
    doc["hooks"] = {hook["id"]: hook for hook in hooks}
    ws.hooks_file.write_bytes(orjson.dumps(doc))


def recording_hook(hook_id: str, out: Path, *, reason: str | None = None, delay: int = 1,
                   sleep: float = 0.0) -> dict:
    """A session-end command hook whose action appends `start <session> <machine> <time>`,
    sleeps, and appends `end ...` to `out` (in the shared tmp folder). The time is taken by a
    `date` without libfaketime, so a faked machine's firing is timed by the real clock. With
    `reason`, it follows up only sessions that end for that reason (a hook keeps the last 200
    firings in its history: sessions are spread over several hooks to count every one)."""
    real_now = "$(env -u LD_PRELOAD -u FAKETIME date +%s.%N)"
    line = f'"$SIDECAR_SESSION_ID" "$(hostname)" "{real_now}" >> {out}'
    script = f"echo start {line}; " + (f"sleep {sleep}; " if sleep else "") + f"echo end {line}"
    hook = {"id": hook_id, "name": hook_id, "event": "session-end", "delaySeconds": delay,
            "promptFile": None, "action": ["sh", "-c", script], "enabled": True,
            # Whatever the last turn did: every session here is followed up once.
            "alsoInterrupted": True}
    if reason is not None:
        hook["reasons"] = [reason]
    return hook


def plan(sessions: Iterable[str], events: list[str] = SESSION,
         reason: Callable[[str], str | None] = lambda session: None) -> list[dict]:
    return [{"session": s, "events": events, "reason": reason(s)} for s in sessions]


def start_emitter(ws: Workspace, sessions: list[dict], out: Path, seconds: float, seed: int,
                  window: int = 30) -> subprocess.Popen:
    """The emitter, in the test's own namespaces (its hooks are no machine's, so no power cut
    stops them), dropping every event of `sessions` over about `seconds`, `window` sessions
    open at a time; each file it dropped is listed in `out` as it goes."""
    plan_file = out.with_suffix(".plan.json")
    plan_file.write_text(json.dumps(sessions))
    return subprocess.Popen([sys.executable, str(EMITTER), str(ws.root), str(plan_file), str(out),
                             str(seconds), str(seed), str(window)], stdin=subprocess.DEVNULL)


class Drop(NamedTuple):
    file: str
    session: str
    event: str
    ts: float


def drops(out: Path) -> list[Drop]:
    if not out.exists():
        return []
    return [Drop(**json.loads(line)) for line in out.read_text().splitlines() if line.strip()]


# -- the workspace's records ---------------------------------------------------------------

def session_dir(ws: Workspace, session: str) -> Path:
    return ws.session_dir(harness_id(HOST, session))


def trace_of(ws: Workspace, session: str) -> tuple[list[dict], int]:
    """The session's trace lines, and how many lines were torn (not JSON: a write cut off)."""
    path = session_dir(ws, session) / "trace.jsonl"
    lines, torn = [], 0
    try:
        raw = path.read_bytes().splitlines()
    except FileNotFoundError:
        return [], 0
    for line in raw:
        try:
            lines.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            torn += 1
    return lines, torn


def record_of(ws: Workspace, session: str) -> dict | None:
    try:
        return read_json(session_dir(ws, session) / "session.json")
    except (FileNotFoundError, ValueError):
        return None


def bound(ws: Workspace) -> set[str]:
    """The sessions (of the emitter's host) host-sessions.json binds."""
    try:
        doc = read_json(ws.bindings_file)
    except FileNotFoundError:
        return set()
    return set((doc.get("bindings") or {}).get(HOST, {}))


def inbox_left(ws: Workspace) -> list[str]:
    return [p.name for p in ws.inbox.glob("*.json")]


@dataclass
class EventCount:
    dropped: int = 0
    lost: list[str] = field(default_factory=list)  # session/inbox file
    doubled: list[str] = field(default_factory=list)  # session/line kind, once per extra copy
    wrong_status: list[str] = field(default_factory=list)  # session: found, expected
    bindings_left: list[str] = field(default_factory=list)  # completed, still bound
    bindings_missing: list[str] = field(default_factory=list)  # live, unbound
    torn: int = 0

    def figures(self) -> dict[str, int]:
        return {"dropped": self.dropped, "lost": len(self.lost), "doubled": len(self.doubled),
                "wrong status": len(self.wrong_status), "bindings left": len(self.bindings_left),
                "bindings missing": len(self.bindings_missing), "torn lines": self.torn}


def count_events(ws: Workspace, dropped: list[Drop]) -> EventCount:
    """Lost and doubled events, per the module's definitions; a session whose last event was
    its end must be completed and unbound, any other active and bound."""
    count = EventCount(dropped=len(dropped))
    by_session: dict[str, list[Drop]] = {}
    for drop in dropped:
        by_session.setdefault(drop.session, []).append(drop)
    binds = bound(ws)
    for session, its in sorted(by_session.items()):
        lines, torn = trace_of(ws, session)
        count.torn += torn
        seen = {(line.get("data") or {}).get("inboxFile") for line in lines}
        count.lost += [f"{session}/{d.file}" for d in its if d.file not in seen]
        ids = Counter(line["id"] for line in lines)
        kinds = {line["id"]: line.get("event") for line in lines}
        count.doubled += [f"{session}/{kinds[i]}" for i, n in ids.items() for _ in range(n - 1)]
        ended = its[-1].event == "session-end"
        record = record_of(ws, session)
        status = record.get("status") if record else None
        expected = "completed" if ended else "active"
        if status != expected:
            count.wrong_status.append(f"{session}: {status}, not {expected}")
        if ended and session in binds:
            count.bindings_left.append(session)
        if not ended and session not in binds:
            count.bindings_missing.append(session)
    return count


# -- follow-ups ----------------------------------------------------------------------------

class Firing(NamedTuple):
    what: str  # "start" or "end"
    session: str
    machine: str
    at: float  # by the real clock


def firings(out: Path) -> list[Firing]:
    """The recording hook's lines; a line cut off by a power cut is no firing's."""
    found = []
    for line in out.read_text().splitlines() if out.exists() else []:
        parts = line.split()
        if len(parts) == 4 and parts[0] in ("start", "end"):
            try:
                found.append(Firing(parts[0], parts[1], parts[2], float(parts[3])))
            except ValueError:
                continue
    return found


def hooks_doc(ws: Workspace) -> dict:
    return read_json(ws.hooks_file)


@dataclass
class FollowUpCount:
    once: list[str] = field(default_factory=list)  # ran once, recorded ok
    interrupted: list[str] = field(default_factory=list)  # recorded interrupted, never run again
    twice: list[str] = field(default_factory=list)  # its action started more than once
    recorded_twice: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # neither run nor recorded nor queued
    wrong: list[str] = field(default_factory=list)  # recorded otherwise than what happened
    pending: list[str] = field(default_factory=list)  # still queued

    def figures(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.__dict__.items()}

    def problems(self) -> dict[str, list[str]]:
        """Every count that must be zero, with what it holds (the first few)."""
        return {k: v[:10] for k, v in self.__dict__.items()
                if v and k not in ("once", "interrupted")}


def count_follow_ups(ws: Workspace, hook_ids: Iterable[str], sessions: Iterable[str],
                     out: Path) -> FollowUpCount:
    """Each session's follow-up, per the module's definitions: exactly one of `once`,
    `interrupted` (its action started at most once, and its machine died), or a problem."""
    doc = hooks_doc(ws)
    records: dict[str, list[str]] = {}
    for hook_id in hook_ids:
        for entry in doc["hooks"].get(hook_id, {}).get("history", []):
            records.setdefault(entry.get("sessionId"), []).append(entry.get("status"))
    queued = {entry.get("sessionId") for entry in doc.get("pending", [])}
    lines = firings(out)
    starts = Counter(f.session for f in lines if f.what == "start")
    ends = Counter(f.session for f in lines if f.what == "end")
    count = FollowUpCount()
    for session in sessions:
        recs = records.get(session, [])
        if starts[session] > 1:
            count.twice.append(f"{session}: started {starts[session]} times, recorded {recs}")
        elif len(recs) > 1:
            count.recorded_twice.append(f"{session}: {recs}")
        elif not recs:
            (count.pending if session in queued else count.lost).append(session)
        elif recs[0] == "ok" and starts[session] == ends[session] == 1:
            count.once.append(session)
        elif recs[0] == INTERRUPTED:
            count.interrupted.append(session)
        else:
            count.wrong.append(f"{session}: {recs[0]!r} (started {starts[session]}, "
                               f"ended {ends[session]})")
    return count


# -- Redis's word ---------------------------------------------------------------------------

def refusals(server, ws: Workspace) -> int:
    """How many writes of a stale leader Redis refused: the counter
    `sidecar:<workspace key>:refused` that the store's fenced scripts increment each time they
    refuse a write whose lease token or term is not the current one (0 where there is none)."""
    with server.client() as client:
        value = client.get(f"sidecar:{workspace_key(ws)}:refused")
    return int(value or 0)


# -- who led when, by the machines' own logs ------------------------------------------------

def lead_timeline(machines, ws: Workspace) -> list[tuple[float, str]]:
    """(time, machine) of every time a machine took the lead, in time order (real clocks:
    every machine of a test that reads this shares the kernel's)."""
    taken = [(at, m.name) for m in machines for at, _, message in m.log_lines(ws)
             if message.startswith("leading (instance")]
    return sorted(taken)


def writes_while_deposed(machines, ws: Workspace, grace: float = 0.02) -> list[str]:
    """The lines in which a machine says it wrote to the workspace (applied events, fired,
    swept, adopted or settled follow-ups) at a time when another machine had taken the lead
    after it last did. `grace` is how much later than the write itself its line may be
    timed (the line is logged just after): a write logged within 20 ms of another's taking
    the lead is given the benefit of the doubt, far below a stale write's seconds."""
    timeline = lead_timeline(machines, ws)
    found = []
    for machine in machines:
        for at, _, message in machine.log_lines(ws):
            if not message.startswith(WRITES):
                continue
            before = [(when, who) for when, who in timeline if when <= at]
            if before and before[-1][1] != machine.name and before[-1][0] <= at - grace:
                found.append(f"{machine.name} at {at:.3f} while {before[-1][1]} led "
                             f"(since {before[-1][0]:.3f}): {message}")
    return found


def settle(done: Callable[[], object], timeout: float, interval: float = 0.25) -> bool:
    """Wait until `done()` or `timeout`; whether it came (the test then asserts the counts,
    which say more than a timeout)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True
