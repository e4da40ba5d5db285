"""One workspace's stores, in process: a seeded workspace (and the `ws` fixture that makes
one), its ingestor, an event dropped into its inbox. Shared by the unit tests and their daemon
twins; a test module that needs another kind of `ws` defines its own."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from sidecar.config import Config
from sidecar.daemon.ingest import Ingestor
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions.batch import open_batch
from sidecar.sessions.store import SessionStore


def seeded_workspace(root: Path, now: float) -> Workspace:
    """A workspace with its runtime and the seeded hooks, as `sidecar init` leaves it."""
    workspace = Workspace(root)
    workspace.ensure_runtime()
    HookStore(workspace, durable=False).seed(now)
    return workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A workspace seeded at T0 (1_795_900_000.0, as the tests that take it count from)."""
    return seeded_workspace(tmp_path / "ws", 1_795_900_000.0)


def ingestor(ws: Workspace) -> Ingestor:
    store = SessionStore(ws, durable=False)
    return Ingestor(store, FollowUpQueue(HookStore(ws, durable=False), "me"),
                    lambda: Config(), lambda changes: None)


def drop(ws: Workspace, name: str, data: bytes, mtime: float) -> None:
    """An event file in the inbox, as old as `mtime` says."""
    path = ws.inbox / name
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def ingest(ws: Workspace, session: str, *kinds: str, at: float, host: str = "claude-code",
           **extra: object) -> None:
    """One session's events of these kinds, one second apart from `at`, applied in process
    as ingestion applies them (their follow-ups queued)."""
    events = [parse(orjson.dumps({"event": kind, "session_id": session, "host": host,
                                  "ts": at + i, **extra}), f"{at + i:020.3f}.json", at)
              for i, kind in enumerate(kinds)]
    queue = FollowUpQueue(HookStore(ws, durable=False), "me")
    with open_batch(SessionStore(ws, durable=False)) as batch:
        batch.commit(queue.add(batch.plan(events), at), at)
