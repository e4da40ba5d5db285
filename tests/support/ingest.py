"""Ingestion stepped in process: one workspace's stores, queue and ingestor, with an explicit
clock; shared by tests/unit/test_ingest.py and tests/daemon/test_ingest_daemon.py."""

from __future__ import annotations

import os
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
        path = self.ws.inbox / f"{name}.json"
        payload = {"event": event, "session_id": session, "host": "t", "ts": ts, **extra}
        path.write_bytes(orjson.dumps(payload))
        os.utime(path, (mtime, mtime))
        return path

    def record(self, session: str):
        return read_json(self.ws.session_dir(harness_id("t", session)) / "session.json")
