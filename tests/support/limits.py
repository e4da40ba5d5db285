"""Usage-limit scenarios, stepped in process: events of a Claude Code session that hits its
limit, and a harness over one workspace's stores and queue. Shared by the unit tests and
their daemon twins (tests/unit/test_limits.py, tests/daemon/test_limits_daemon.py)."""

from __future__ import annotations

import itertools

import orjson

from helpers import read_json, trust_hooks
from sidecar.base.ids import harness_id
from sidecar.followups.decide import decide
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.seeds import LIMIT_HOOK
from sidecar.followups.store import HookStore
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions.batch import open_batch
from sidecar.sessions.store import SessionStore

T0 = 1_795_900_000.0
_names = itertools.count()
LIMITED = ("API Error: Request rejected (429) · This request would exceed your account's rate "
           "limit. Please try again later.")  # Claude Code 2.1.328's text, with no reset in it
S1 = "0b4cb7a4-5d8e-4a6f-9f0e-2c1d3b4a5e6f"  # a session id of Claude Code's shape


def ev(name, ts, session=S1, hook_id=None, **extra):
    payload = {"hook_event_name": name, "session_id": session, "ts": ts, **extra}
    wrapped = {"sidecarEnvelope": {"version": 1, "host": "claude-code", "ts": ts,
                                   **({"hookId": hook_id} if hook_id else {})},
               "payload": payload}
    return parse(orjson.dumps(wrapped), f"{next(_names):020d}.json", ts)


def failed(ts, message=LIMITED, error="rate_limit", **kw):
    return ev("StopFailure", ts, error=error, last_assistant_message=message, **kw)


class Harness:
    def __init__(self, ws: Workspace, scale: float = 1.0, host_resume: bool = True) -> None:
        ws.ensure_runtime()
        self.ws = ws
        self.sessions = SessionStore(ws, durable=False)
        self.hooks = HookStore(ws, durable=False)
        self.hooks.seed(T0)
        self.queue = FollowUpQueue(self.hooks, "me")
        self.scale = scale
        self.host_resume = host_resume  # config.toml's hostResume, as the daemon passes it
        self.hooks.change(T0, lambda d: setattr(d.hooks[LIMIT_HOOK], "enabled", True))
        trust_hooks(ws)  # as `sidecar init` and `sidecar hooks enable` trust them

    def apply(self, *events):
        with open_batch(self.sessions, host_resume=self.host_resume) as batch:
            return batch.commit(self.queue.add(batch.plan(list(events)), events[-1].ts,
                                               self.scale), events[-1].ts)

    def pending(self):
        return self.hooks.snapshot(T0).pending

    def record(self):
        path = self.ws.session_dir(harness_id("claude-code", S1)) / "session.json"
        return read_json(path)

    def verdict(self, at):
        facts = self.sessions.facts(harness_id("claude-code", S1), ("claude-code", S1))
        hook = self.hooks.snapshot(at).hooks[LIMIT_HOOK]
        return decide(hook, facts, at).verdict
