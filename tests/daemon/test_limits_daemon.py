"""Usage limits, in process with an explicit clock: a failed turn, no post-task for a task
that is not finished, and resume-after-limit's tries (reset time or back-off, once a try).
Those that start real processes; the rest run in process in tests/unit/test_limits.py.
"""

from __future__ import annotations

import itertools
import sys

import orjson
import pytest

from helpers import TRANSCRIPTS, read_json
from sidecar.config import Config
from sidecar.followups.decide import decide
from sidecar.followups.fire import FollowUps, transcript_facts
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.seeds import LIMIT_HOOK
from sidecar.followups.store import HookStore
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions.rules import harness_id
from sidecar.sessions.store import SessionStore
from sidecar.timeutil import parse_ts

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
    def __init__(self, ws: Workspace, scale: float = 1.0) -> None:
        ws.ensure_runtime()
        self.ws = ws
        self.sessions = SessionStore(ws, durable=False)
        self.hooks = HookStore(ws, durable=False)
        self.hooks.seed(T0)
        self.queue = FollowUpQueue(self.hooks, "me")
        self.scale = scale
        self.hooks.change(T0, lambda d: setattr(d.hooks[LIMIT_HOOK], "enabled", True))

    def apply(self, *events):
        with self.sessions.batch() as batch:
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
        return decide(hook, transcript_facts(facts), at).verdict


@pytest.fixture
def h(tmp_path) -> Harness:
    return Harness(Workspace(tmp_path / "ws"))


def test_the_try_fires_with_the_limit_prompt_in_the_same_session(tmp_path):
    """The firing resumes the session with the seeded prompt; its argv shows both."""
    h = Harness(Workspace(tmp_path / "ws"), scale=0.001)
    argv_file = tmp_path / "argv.txt"
    recorder = [sys.executable, "-c",
                "import sys; open(sys.argv[1], 'w').write(repr(sys.argv[2:]))", str(argv_file),
                "{session_id}", "{prompt}"]
    config = Config(resume={"claude-code": tuple(recorder)}, limit_backoff_scale=0.001)
    followups = FollowUps(h.ws, h.queue, h.sessions, lambda: config, lambda other: False)
    h.apply(ev("SessionStart", T0), failed(T0 + 1), ev("SessionEnd", T0 + 2))
    due = parse_ts(h.pending()[0].due_at)
    followups.step(due + 1)
    import time
    deadline = time.monotonic() + 20
    while (followups.running or not argv_file.exists()) and time.monotonic() < deadline:
        time.sleep(0.02)
        followups.check_running(due + 1)
    argv = argv_file.read_text()
    assert repr(S1) in argv and "Continue where you left off" in argv
    hook = h.hooks.snapshot(due + 2).hooks[LIMIT_HOOK]
    assert [f.status for f in hook.history] == ["ok"]


# -- what only the transcript says ------------------------------------------------------------


    # here, so the back-off applies


def test_status_shows_the_token_totals_and_a_sessions_figures_and_limit(h):
    from helpers import run_cli

    claude = str(TRANSCRIPTS / "claude-code-2.1.328.jsonl")
    h.apply(ev("SessionStart", T0), ev("SessionEnd", T0 + 1, transcript_path=claude))
    h.apply(ev("SessionStart", T0 + 2, session="s2"), failed(T0 + 3, session="s2"))
    root = str(h.ws.root)
    report = orjson.loads(run_cli("status", "--root", root, "--json").stdout)["workspaces"][0]
    assert report["tokens"] == {"input": 300, "output": 21, "cacheRead": 3000, "cacheWrite": 30,
                                "sessions": 1}
    text = run_cli("status", "--root", root).stdout.decode()
    assert "tokens     input 300, output 21, cache read 3,000, cache write 30 (1 session(s)" in text
    one = orjson.loads(run_cli("status", "--root", root, "--session", S1, "--json").stdout)
    assert one["tokens"]["cacheRead"] == 3000 and one["limit"] is None
    limited = run_cli("status", "--root", root, "--session", "s2").stdout.decode()
    assert "limit      rate_limit since" in limited and "1 failed turn(s)" in limited
    assert "resume-after-limit" in limited  # its try, queued, with its due time


