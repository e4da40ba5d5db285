"""An emitter process for the chaos test: drops every event of its sessions, interleaved,
through the real `sidecar.emit` code, and lists the file names it dropped."""

from __future__ import annotations

import os
import random
import sys
import time

from sidecar.emit import drop, json_string


def main() -> None:
    root, names_out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sessions = sys.argv[4:]
    rng = random.Random(seed)
    pause = float(os.environ.get("CHAOS_MAX_PAUSE", "0.004"))  # seconds between drops, at most
    # 20 events per session: start, 18 tool-use / turn-end, end; sessions interleaved.
    plans = {s: ["session-start"] + rng.choices(["PostToolUse", "Stop"], k=18) + ["session-end"]
             for s in sessions}
    names = []
    while plans:
        session = rng.choice(sorted(plans))
        event = plans[session].pop(0)
        if not plans[session]:
            del plans[session]
        data = (f'{{"event":{json_string(event)},"session_id":"{session}","host":"chaos",'
                f'"ts":{time.time()!r},"tool_name":"Bash"}}').encode()
        names.append(drop(root, data).rsplit("/", 1)[1])
        time.sleep(rng.uniform(0, pause))
    with open(names_out, "w") as out:
        out.write("\n".join(names) + "\n")


if __name__ == "__main__":
    main()
