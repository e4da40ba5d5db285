"""Usage limits, in process with an explicit clock: a failed turn, no post-task for a task
that is not finished, and resume-after-limit's tries (reset time or back-off, once a try).
Those that start real processes; the rest run in process in tests/unit/test_limits.py.
"""

from __future__ import annotations

import sys

import orjson
import pytest
from test_followups import wait_out

from helpers import TRANSCRIPTS, run_cli
from sidecar.base.timeutil import parse_ts
from sidecar.config import Config
from sidecar.followups.fire import FollowUps
from sidecar.followups.seeds import LIMIT_HOOK
from sidecar.layout import Workspace
from support.limits import S1, T0, Harness, ev, failed


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
    wait_out(followups, due + 1)
    argv = argv_file.read_text()
    assert repr(S1) in argv and "Continue where you left off" in argv
    hook = h.hooks.snapshot(due + 2).hooks[LIMIT_HOOK]
    assert [f.status for f in hook.history] == ["ok"]


def test_status_shows_the_token_totals_and_a_sessions_figures_and_limit(h):
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
