"""The emitter of the shared-workspace scenarios (support/record.py `start_emitter`): drops
every event of a plan through the real `sidecar.emit` code, at a steady pace, and lists each
file it dropped, as it goes, so a run cut short still says what it dropped.

    python record_emitter.py WS PLAN.json OUT.jsonl SECONDS SEED WINDOW

PLAN is [{"session": id, "events": [names], "reason": end reason or null}]. Sessions run
`WINDOW` at a time, in the plan's order, their events interleaved at random (each session's
own in order), so sessions start and end all along the run. Each OUT line is
{"file", "session", "event", "ts"}: `ts` is the event's time, by this process's (real) clock.
"""

from __future__ import annotations

import json
import random
import sys
import time

from sidecar.emit import drop


def main() -> None:
    root, plan_path, out_path, seconds, seed, window = sys.argv[1:7]
    with open(plan_path) as handle:
        plan = json.load(handle)
    rng = random.Random(int(seed))
    left = {entry["session"]: list(entry["events"]) for entry in plan}
    order = [entry["session"] for entry in plan]  # the sessions still to run, in plan order
    reasons = {entry["session"]: entry.get("reason") for entry in plan}
    step = float(seconds) / max(1, sum(len(events) for events in left.values()))
    began, dropped = time.monotonic(), 0
    with open(out_path, "a") as out:
        while order:
            session = rng.choice(order[:int(window)])
            event = left[session].pop(0)
            if not left[session]:
                order.remove(session)
            payload = {"event": event, "session_id": session, "host": "chaos", "ts": time.time(),
                       "tool_name": "Bash"}
            if event == "session-end" and reasons[session]:
                payload["reason"] = reasons[session]
            name = drop(root, json.dumps(payload).encode()).rsplit("/", 1)[1]
            out.write(json.dumps({"file": name, "session": session, "event": event,
                                  "ts": payload["ts"]}) + "\n")
            out.flush()
            dropped += 1
            wait = began + dropped * step - time.monotonic()
            if wait > 0:
                time.sleep(wait)


if __name__ == "__main__":
    main()
