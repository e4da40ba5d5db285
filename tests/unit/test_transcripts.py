"""Reading the hosts' own transcripts (recorded from the real programs against loopback
stubs), as each host's `end_facts` does: a turn Codex ended on a usage limit, and each
session's token figures."""

from __future__ import annotations

import os

import pytest

from helpers import TRANSCRIPTS
from sidecar.hosts import registry
from sidecar.hosts.base import Failure, Tokens


def last_turn_failure(host: str, path: str | None) -> Failure | None:
    return registry.get(host).end_facts(path, "").failure


def token_totals(host: str, path: str | None, session_id: str = "") -> Tokens | None:
    return registry.get(host).end_facts(path, session_id).tokens


def test_codex_says_only_in_its_transcript_that_a_turn_hit_the_usage_limit():
    failure = last_turn_failure("codex", str(TRANSCRIPTS / "codex-0.169.0.usage-limit.jsonl"))
    assert isinstance(failure, Failure) and failure.kind == "usage_limit"
    assert "try again at" in failure.message


def test_a_codex_session_whose_last_turn_completed_did_not_fail():
    assert last_turn_failure("codex", str(TRANSCRIPTS / "codex-0.169.0.jsonl")) is None
    assert last_turn_failure("claude-code", str(TRANSCRIPTS / "codex-0.169.0.usage-limit.jsonl")) is None


def test_claude_code_tokens_count_each_api_message_once():
    # Two turns: the stub answered 100/200 input, 7/14 output, 1000/2000 cache reads and
    # 10/20 cache writes; Claude Code writes a message once per content block.
    assert token_totals("claude-code", str(TRANSCRIPTS / "claude-code-2.1.328.jsonl")) == \
        Tokens(input=300, output=21, cache_read=3000, cache_write=30)


def test_codex_tokens_are_its_last_running_total_with_cached_input_apart():
    # Two turns: 1000 + 2000 input of which 400 + 800 cached, 30 + 60 output.
    assert token_totals("codex", str(TRANSCRIPTS / "codex-0.169.0.jsonl")) == \
        Tokens(input=1800, output=90, cache_read=1200, cache_write=0)


@pytest.mark.parametrize("make", [
    lambda p: None,  # missing
    lambda p: p.write_bytes(b"not json at all\n"),
    lambda p: os.mkfifo(p),  # never opened for a read that could wait
    lambda p: p.mkdir(),
])
def test_a_transcript_that_is_missing_or_unreadable_gives_no_figures(tmp_path, make):
    path = tmp_path / "t.jsonl"
    make(path)
    assert token_totals("claude-code", str(path)) is None
    assert last_turn_failure("codex", str(path)) is None


def test_hosts_without_a_reader_give_none():
    assert token_totals("hermes", str(TRANSCRIPTS / "claude-code-2.1.328.jsonl")) is None
    assert token_totals("claude-code", None) is None


def test_gemini_tokens_count_each_message_once_with_cached_input_apart():
    # Two turns: 1000 + 2000 prompt tokens of which 400 + 800 cached, 30 + 60 output and
    # 5 + 10 thinking; Gemini CLI also rewrites its message list in `$set` lines.
    assert token_totals("gemini", str(TRANSCRIPTS / "gemini-cli-0.61.0.jsonl")) == \
        Tokens(input=1800, output=105, cache_read=1200, cache_write=0)


def test_opencode_tokens_are_its_sessions_totals_in_its_database(monkeypatch, tmp_path):
    # The session row of the database the real opencode 1.18.33 wrote for two turns.
    data = tmp_path / "share"
    (data / "opencode").mkdir(parents=True)
    (data / "opencode" / "opencode.db").write_bytes((TRANSCRIPTS / "opencode-1.18.33.db").read_bytes())
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    assert token_totals("opencode", None, "ses_dcfa51527ffeRezOj8hMNsbJ2h") == \
        Tokens(input=3000, output=150, cache_read=2000, cache_write=0)
    assert token_totals("opencode", None, "ses_unknown") is None
    (data / "opencode" / "opencode.db").write_bytes(b"not a database")
    assert token_totals("opencode", None, "ses_dcfa51527ffeRezOj8hMNsbJ2h") is None


# -- a transcript is named by an event, so it is untrusted: bounded whatever it is ------------

def test_a_file_that_says_it_is_empty_but_never_ends_is_read_only_to_the_cap():
    # /proc/self/pagemap is a regular file whose st_size is 0, yet reads give gigabytes.
    import tracemalloc

    from sidecar.hosts.transcripts import MAX_TRANSCRIPT

    tracemalloc.start()
    try:
        assert token_totals("claude-code", "/proc/self/pagemap") is None
        assert last_turn_failure("codex", "/proc/self/pagemap") is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_TRANSCRIPT


def test_a_transcript_of_many_lines_is_streamed_not_kept(tmp_path):
    # Lines that are JSON but carry no figures are not kept, however many there are.
    import tracemalloc

    path = tmp_path / "t.jsonl"
    real = (TRANSCRIPTS / "claude-code-2.1.328.jsonl").read_bytes()
    path.write_bytes(b"{}\n" * 2_000_000 + real)
    tracemalloc.start()
    try:
        assert token_totals("claude-code", str(path)) == \
            Tokens(input=300, output=21, cache_read=3000, cache_write=30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * path.stat().st_size


def test_an_overlong_line_is_skipped_and_the_rest_still_counted(tmp_path):
    from sidecar.hosts.transcripts import MAX_LINE

    path = tmp_path / "t.jsonl"
    real = (TRANSCRIPTS / "claude-code-2.1.328.jsonl").read_bytes()
    huge = b'{"type":"assistant","usage":"' + b"x" * (MAX_LINE + 10) + b'"}\n'
    path.write_bytes(huge + real + huge[:-1])
    assert token_totals("claude-code", str(path)) == \
        Tokens(input=300, output=21, cache_read=3000, cache_write=30)
