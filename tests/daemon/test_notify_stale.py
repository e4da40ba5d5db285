"""A notice of a stale end says how long the session was quiet, by the workspace's own
`staleAfter`: the firing hands it to the sender (a stub sender here records its job)."""

from __future__ import annotations

import sys

import orjson

from sidecar.config import Config
from sidecar.followups import fire, trust
from sidecar.followups.fire import FollowUps
from sidecar.followups.model import Hook
from sidecar.followups.notify import send
from sidecar.followups.notify.targets import Notify
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.sessions.store import SessionStore
from sidecar.vocabulary import EventKind, SessionChange

T0 = 1_795_900_000.0


def test_a_stale_ends_notice_says_the_configured_quiet_time(tmp_path, config_home, monkeypatch):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    hooks = HookStore(ws, durable=False)
    told = Hook(id="told", name="told", event=EventKind.SESSION_END, delay_seconds=0,
                prompt_file=None, action=Notify("desktop"), reasons=["stale"])
    hooks.change(T0, lambda d: d.hooks.__setitem__("told", told))
    trust.trust(ws, trust.content(ws, told), T0)
    queue = FollowUpQueue(hooks, "me")
    queue.add([SessionChange(EventKind.SESSION_END, "claude-code", "s1", "h1", T0,
                             reason="stale")], T0)
    job_file = tmp_path / "job.json"
    monkeypatch.setattr(fire, "SENDER", [sys.executable, "-c", "import sys; open(sys.argv[1], "
                                         "'wb').write(sys.stdin.buffer.read())", str(job_file)])
    followups = FollowUps(ws, queue, SessionStore(ws, durable=False),
                          lambda: Config(stale_after=7200.0), lambda other: False)
    [entry] = queue.view(T0).pending
    claimed = queue.claim(entry.id, T0, str(followups.log_path(entry, T0)))
    assert claimed is not None
    followups.fire_now(claimed, T0)
    job = orjson.loads(job_file.read_bytes())
    assert job["staleAfter"] == 7200.0
    text = send.words(job, T0)
    assert text.title == "claude-code finished: no event for 2 h: swept"
    assert send.webhook_body(job, text)["reasonInWords"] == "no event for 2 h: swept"
    # A job from elsewhere (an older daemon's) without it: the words say no number.
    for missing in (None, "2h", True, -1):
        words = send.words({**job, "staleAfter": missing}, T0)
        assert words.title == "claude-code finished: no event for too long: swept"
