"""A workspace with a session in every state `sidecar top` shows, made by sidecar's own
ingestion from real event files (so the records are what a daemon writes), plus one fired
follow-up with its log. Used by the top tests and by tests/support/top_screenshot.py."""

from __future__ import annotations

from pathlib import Path

import orjson

from sidecar.base.ids import harness_id
from sidecar.base.outcome import OK
from sidecar.base.timeutil import iso
from sidecar.config import Config
from sidecar.daemon.ingest import Ingestor
from sidecar.followups import trust
from sidecar.followups.model import HooksDoc
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.sessions.store import SessionStore

HOST = "claude-code"
# session id -> its events: (seconds before now, event, extra fields)
STORIES: dict[str, list[tuple[float, str, dict[str, object]]]] = {
    "7f3a9c1e-work": [(900, "session-start", {}), (130, "turn-start", {}),
                      (4, "tool-use", {"tool_name": "Bash"})],
    "b21d44f0-asks": [(600, "session-start", {}), (200, "turn-start", {}),
                      (45, "needs-input", {"notification_type": "permission_prompt",
                                           "message": "Claude needs your permission to use Bash"})],
    "c90e12ab-idle": [(3000, "session-start", {}), (1500, "turn-start", {}),
                      (1300, "turn-end", {})],
    "d4471b2c-limit": [(7200, "session-start", {}), (400, "turn-start", {}),
                       (380, "turn-failed", {"error": "rate_limit",
                                             "message": "usage limit reached, resets in 2 hours"})],
    "e5a8f3d1-done": [(2400, "session-start", {}), (700, "turn-start", {}), (600, "turn-end", {}),
                      (2, "session-end", {"reason": "prompt_input_exit"})],
    "f6b2c7e9-exit": [(5000, "session-start", {}), (4000, "turn-start", {}),
                      (3600, "session-end", {"reason": "host-exited"})],
}
TOKENS = {"e5a8f3d1-done": {"input": 182_400, "output": 9_310},
          "f6b2c7e9-exit": {"input": 41_000, "output": 2_200}}
FIRED = "e5a8f3d1-old"  # a session whose post-task already ran, with its log
LOG_LINES = ["$ [\"claude\", \"--resume\", \"e5a8f3d1-old\"]", "Reading the task list…",
             "All 14 tests pass; committed the fix.", "Done."]


def build(root: Path, now: float) -> Workspace:
    """The demo workspace at `root`, as it is at `now`."""
    ws = Workspace(root)
    ws.ensure_runtime()
    hooks = HookStore(ws, durable=False)
    hooks.seed(now - 10_000)
    trust.trust_seeded(ws, hooks.snapshot(now).hooks.values(), now)  # as `sidecar init` does
    number = 0
    for session, story in STORIES.items():
        for ago, event, extra in story:
            payload = {"event": event, "session_id": session, "host": HOST, "ts": now - ago,
                       "cwd": str(root), **extra}
            number += 1
            (ws.inbox / f"{number:04d}-{session}.json").write_bytes(orjson.dumps(payload))
    sessions = SessionStore(ws, durable=False)
    ingest = Ingestor(sessions, FollowUpQueue(hooks, "demo"), lambda: Config(),
                      lambda changes: None)
    ingest.drain(now + 60)  # past the inbox's settle grace
    _fired_follow_up(ws, hooks, now)
    for session, figures in TOKENS.items():  # read from transcripts in real use
        record = sessions.load_session(harness_id(HOST, session))
        assert record is not None
        record.sidecar.tokens = figures
        sessions.save_session(record, [])
    return ws


def _fired_follow_up(ws: Workspace, hooks: HookStore, now: float) -> None:
    log_name = f"{iso(now - 5400).replace(':', '').replace('-', '')}-{FIRED}.log"
    folder = ws.logs / "hooks" / "post-task"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / log_name).write_text("\n".join(LOG_LINES) + "\n")

    def edit(doc: HooksDoc) -> None:
        doc.hooks["post-task"].record_firing(OK, now - 5300, HOST, "e5a8f3d1-done",
                                             str(folder / log_name))

    hooks.change(now, edit)


def record_path(ws: Workspace, session: str) -> Path:
    return ws.session_dir(harness_id(HOST, session)) / "session.json"
