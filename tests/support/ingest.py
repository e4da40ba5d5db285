"""Ingestion stepped in process: one workspace's stores, queue and ingestor, with an explicit
clock; shared by tests/unit/test_ingest.py and tests/daemon/test_ingest_daemon.py."""

from __future__ import annotations

from pathlib import Path

import orjson

from helpers import read_json
from sidecar.base.ids import harness_id
from sidecar.config import Config
from sidecar.daemon.ingest import Ingestor
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.sessions.store import SessionStore
from support.stores import drop

T0 = 1_795_900_000.0
CONFIG = Config(reconcile_interval=2.0, sweep_interval=60.0, stale_after=3600.0)


class Fixture:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.sessions = SessionStore(ws, durable=False)
        self.queue = FollowUpQueue(HookStore(ws, durable=False), "me")
        self.reported: list = []
        self.stop = False
        self.ingest = Ingestor(self.sessions, self.queue, lambda: CONFIG, self.reported.extend,
                               lambda: self.stop)

    def drop(self, name: str, event: str, session: str, ts: float, mtime: float = T0 - 60,
             **extra) -> Path:
        payload = {"event": event, "session_id": session, "host": "t", "ts": ts, **extra}
        drop(self.ws, f"{name}.json", orjson.dumps(payload), mtime)
        return self.ws.inbox / f"{name}.json"

    def record(self, session: str):
        return read_json(self.ws.session_dir(harness_id("t", session)) / "session.json")
