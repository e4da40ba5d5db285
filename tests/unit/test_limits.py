"""Usage limits, in process with an explicit clock: a failed turn, no post-task for a task
that is not finished, and resume-after-limit's tries (reset time or back-off, once a try).
In process; those that start real processes are in tests/daemon/test_limits_daemon.py.
"""

from __future__ import annotations

import orjson
import pytest

from helpers import TRANSCRIPTS, read_json
from sidecar.base.ids import harness_id
from sidecar.base.timeutil import iso, parse_ts
from sidecar.config import Config, ConfigError, load_config
from sidecar.followups.resets import BACKOFF_FIRST, MAX_TRIES, RESET_MARGIN
from sidecar.followups.seeds import LIMIT_HOOK
from sidecar.followups.store import HookStore
from sidecar.layout import Workspace
from sidecar.sessions import tokens
from sidecar.vocabulary import Verdict
from support.limits import LIMITED, T0, Harness, ev, failed


@pytest.fixture
def h(tmp_path) -> Harness:
    return Harness(Workspace(tmp_path / "ws"))


def test_a_turn_that_failed_on_a_limit_is_its_own_event_and_its_end_queues_no_post_task(h):
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), failed(T0 + 2),
            ev("SessionEnd", T0 + 3, reason="other"))
    record = h.record()
    assert record["status"] == "completed"
    trace = [orjson.loads(line) for line in
             (h.ws.session_dir(record["id"]) / "trace.jsonl").read_bytes().splitlines()]
    assert [t["message"] for t in trace if t["event"] == "turn.failed"] == [f"rate_limit: {LIMITED}"]
    limit = record["metadata"]["sidecar"]["limit"]
    assert limit["failures"] == 1 and limit["error"] == "rate_limit"
    [entry] = h.pending()  # resume-after-limit's first try, and no post-task
    assert entry.hook_id == LIMIT_HOOK
    assert parse_ts(entry.due_at) == T0 + 2 + BACKOFF_FIRST  # no reset in the text: back off
    assert "post-task" not in record["metadata"]["sidecar"].get("followUps", {})


def test_a_stated_reset_time_is_used(h):
    reset = T0 + 3 * 3600
    h.apply(ev("SessionStart", T0), failed(T0 + 1, f"Claude AI usage limit reached|{int(reset)}"))
    [entry] = h.pending()
    assert parse_ts(entry.due_at) == reset + RESET_MARGIN


def test_a_failure_that_is_not_a_limit_is_traced_and_the_task_ends_as_usual(h):
    h.apply(ev("SessionStart", T0), failed(T0 + 1, "API Error: 500", error="server_error"),
            ev("SessionEnd", T0 + 2))
    assert [e.hook_id for e in h.pending()] == ["post-task"]
    assert "limit" not in h.record()["metadata"]["sidecar"]


def test_a_resumed_turn_that_hits_the_limit_again_is_the_next_try_not_a_new_chain(tmp_path):
    h = Harness(Workspace(tmp_path / "ws"), scale=0.001)
    h.apply(ev("SessionStart", T0), failed(T0 + 1), ev("SessionEnd", T0 + 2))
    first = h.pending()[0]
    assert first.id.endswith("#1")
    assert parse_ts(first.due_at) == pytest.approx(T0 + 1 + BACKOFF_FIRST * 0.001)
    # The try fires (taken off the queue as the runner would), and its run fails again.
    h.hooks.change(T0 + 3, lambda d: d.pending.clear())
    h.apply(ev("SessionStart", T0 + 4, hook_id=LIMIT_HOOK, source="resume"),
            failed(T0 + 5, hook_id=LIMIT_HOOK), ev("SessionEnd", T0 + 6, hook_id=LIMIT_HOOK))
    [second] = h.pending()
    assert second.id.endswith("#2") and second.hook_id == LIMIT_HOOK
    assert parse_ts(second.due_at) == pytest.approx(T0 + 5 + 2 * BACKOFF_FIRST * 0.001)
    assert h.record()["metadata"]["sidecar"]["limit"]["failures"] == 2


def test_a_replayed_batch_or_a_second_failure_before_the_try_queues_nothing_more(h):
    events = (ev("SessionStart", T0), failed(T0 + 1))
    h.apply(*events)
    h.apply(failed(T0 + 2))  # the user tried again by hand, still limited
    assert len(h.pending()) == 1  # one try at a time


def test_the_tries_stop_after_eight(tmp_path, caplog):
    h = Harness(Workspace(tmp_path / "ws"), scale=0.001)
    h.apply(ev("SessionStart", T0))
    for attempt in range(MAX_TRIES + 1):
        h.hooks.change(T0, lambda d: d.pending.clear())
        h.apply(failed(T0 + 10 * (attempt + 1)))
        assert len(h.pending()) == (1 if attempt < MAX_TRIES else 0), attempt
    assert "still limited after 8 tries" in caplog.text


def test_a_turn_that_ends_well_closes_the_episode_and_the_pending_try_is_skipped(h):
    h.apply(ev("SessionStart", T0), failed(T0 + 1), ev("SessionEnd", T0 + 2))
    assert h.verdict(T0 + 3) == Verdict.FIRE
    # The user came back after the reset and carried on by hand: the try has no work left.
    h.apply(ev("SessionStart", T0 + 100, source="resume"), ev("Stop", T0 + 101))
    assert "limit" not in h.record()["metadata"]["sidecar"]
    h.apply(ev("SessionEnd", T0 + 102))
    assert h.verdict(T0 + 2000) == Verdict.SKIP
    assert "post-task" in h.record()["metadata"]["sidecar"]["followUps"]  # the task finished


def test_a_try_waits_while_the_session_is_live_again(h):
    h.apply(ev("SessionStart", T0), failed(T0 + 1))  # still in the interactive session
    assert h.verdict(T0 + 2000) == Verdict.POSTPONE


def test_the_seeded_hook_is_off_until_enabled_and_comes_back_only_once(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    store = HookStore(ws, durable=False)
    store.seed(T0)
    hook = store.snapshot(T0).hooks[LIMIT_HOOK]
    assert hook.enabled is False and hook.event == "turn-failed" and hook.action == "resume"
    assert "Continue where you left off" in (ws.prompts / f"{LIMIT_HOOK}.md").read_text()
    store.change(T0, lambda d: d.hooks.pop(LIMIT_HOOK))  # the user removes it
    store.seed(T0 + 1)
    assert LIMIT_HOOK not in store.snapshot(T0 + 1).hooks  # and it stays removed


def test_a_hooks_file_from_before_gets_the_limit_hook_once(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    old = {"version": 1, "hooks": {"post-task": {"id": "post-task", "name": "post-task"}},
           "pending": []}
    ws.hooks_file.write_bytes(orjson.dumps(old))
    store = HookStore(ws, durable=False)
    store.seed(T0)
    doc = read_json(ws.hooks_file)
    assert set(doc["hooks"]) == {"post-task", LIMIT_HOOK}
    assert doc["seeded"] == ["post-task", LIMIT_HOOK]


def test_the_back_off_scale_is_a_config_value(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("limitBackoffScale = 0.002\n")
    assert load_config(path).limit_backoff_scale == 0.002
    assert Config().limit_backoff_scale == 1.0
    path.write_text("limitBackoffScale = 0\n")
    with pytest.raises(ConfigError, match="limitBackoffScale must be a number above 0"):
        load_config(path)


def test_a_running_try_that_fails_again_queues_the_next(tmp_path):
    h = Harness(Workspace(tmp_path / "ws"), scale=0.001)
    h.apply(ev("SessionStart", T0), failed(T0 + 1), ev("SessionEnd", T0 + 2))
    first = h.pending()[0]
    assert h.queue.claim(first.id, T0 + 3) is not None  # the try is running
    h.apply(ev("SessionStart", T0 + 4, hook_id=LIMIT_HOOK, source="resume"),
            failed(T0 + 5, hook_id=LIMIT_HOOK))  # and its turn is refused again
    assert sorted(e.id.rsplit("#", 1)[1] for e in h.pending()) == ["1", "2"]


# -- what only the transcript says ------------------------------------------------------------


@pytest.mark.parametrize("came", [False, True], ids=["stop-failure-never-came", "it-came"])
def test_a_claude_session_end_reads_its_refusal_from_the_transcript_counted_once(h, came):
    """`claude -p` can exit before its StopFailure hook is delivered: the transcript's last
    assistant entry is the API's refusal, so the end is a limited one all the same; a
    StopFailure that did come is not counted twice at the end."""
    path = str(TRANSCRIPTS / "claude-code-2.1.328.rate-limit.jsonl")
    h.apply(ev("SessionStart", T0), ev("UserPromptSubmit", T0 + 1), *([failed(T0 + 2)] if came else []),
            ev("SessionEnd", T0 + 3, reason="other", transcript_path=path))
    assert h.record()["metadata"]["sidecar"]["limit"]["failures"] == 1
    [entry] = h.pending()
    assert entry.hook_id == LIMIT_HOOK  # and no post-task
    assert parse_ts(entry.due_at) > T0 + 3  # its text names a reset: its epoch, long past
    # here, so the back-off applies


def test_codex_says_only_in_its_rollout_that_the_usage_limit_refused_the_turn(h):
    path = str(TRANSCRIPTS / "codex-0.169.0.usage-limit.jsonl")
    start = ev("SessionStart", T0, session="c1")
    end = ev("SessionEnd", T0 + 3, session="c1", reason="other", transcript_path=path)
    for event in (start, end):
        event.host = "codex"
    h.apply(start, end)
    record = read_json(h.ws.session_dir(harness_id("codex", "c1")) / "session.json")
    limit = record["metadata"]["sidecar"]["limit"]
    assert limit["error"] == "usage_limit" and "try again at 6:18 AM" in limit["message"]
    [entry] = h.pending()
    # "try again at 6:18 AM" (the machine's zone): a time within a day, not the back-off.
    due = parse_ts(entry.due_at)
    assert due != T0 + 3 + BACKOFF_FIRST and T0 + 3 < due <= T0 + 3 + 86400 + RESET_MARGIN


def test_token_figures_are_kept_per_session_and_summed_per_workspace(h):
    claude = str(TRANSCRIPTS / "claude-code-2.1.328.jsonl")
    h.apply(ev("SessionStart", T0), ev("SessionEnd", T0 + 1, transcript_path=claude))
    assert h.record()["metadata"]["sidecar"]["tokens"] == {
        "input": 300, "output": 21, "cacheRead": 3000, "cacheWrite": 30}
    # Resumed and ended again: the transcript's figures are the conversation's, so the
    # workspace adds only what they grew by (nothing here).
    h.apply(ev("SessionStart", T0 + 5, source="resume"),
            ev("SessionEnd", T0 + 6, transcript_path=claude))
    h.apply(ev("SessionStart", T0 + 7, session="s2"),
            ev("SessionEnd", T0 + 8, session="s2", transcript_path="/nonexistent/t.jsonl"))
    assert tokens.totals(h.ws) == {"input": 300, "output": 21, "cacheRead": 3000,
                                  "cacheWrite": 30, "sessions": 1}  # s2 has no figures
    record = read_json(h.ws.session_dir(harness_id("claude-code", "s2")) / "session.json")
    assert record["status"] == "completed" and "tokens" not in record["metadata"]["sidecar"]


def test_a_turn_end_that_closes_a_refused_turn_closes_no_episode(h):
    """opencode ends a refused turn with an idle status (a turn-end) right after its error."""
    h.apply(ev("SessionStart", T0), ev("turn-failed", T0 + 1, error="rate_limit",
                                       error_message="Please try again in 20s."),
            ev("Stop", T0 + 1.001), ev("SessionEnd", T0 + 2))
    assert h.record()["metadata"]["sidecar"]["limit"]["failures"] == 1
    assert [e.hook_id for e in h.pending()] == [LIMIT_HOOK]  # and no post-task
    assert parse_ts(h.pending()[0].due_at) == pytest.approx(T0 + 1 + 20 + RESET_MARGIN)


def test_a_step_of_the_wall_clock_moves_a_delay_but_not_the_time_a_limit_resets(h):
    """A post-task delay lasts what it says whichever way the clock is stepped; a limit's try
    is due when the limit resets, a time on the wall clock, and stays there."""
    h.apply(ev("SessionStart", T0), failed(T0 + 1), ev("SessionEnd", T0 + 2))
    h.apply(ev("SessionStart", T0 + 3, session="s2"), ev("SessionEnd", T0 + 4, session="s2"))
    before = {e.id: e.due_at for e in h.pending()}
    assert any("#" in key for key in before) and any("#" not in key for key in before)
    h.queue.shift_due(3600.0, T0 + 5)  # the clock was set an hour forward
    after = {e.id: e.due_at for e in h.pending()}
    for key, due in before.items():
        expected = due if "#" in key else iso(parse_ts(due) + 3600)
        assert after[key] == expected, key
