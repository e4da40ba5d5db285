"""The daemon reads a transcript an event names with a hard bound: a file that never ends, or
one of millions of lines, neither holds much memory nor keeps its session from completing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from helpers import emit, session_record, wait_until
from sidecar.hosts.transcripts import MAX_TRANSCRIPT
from sidecar.layout import Workspace


def _serve_one_session(ws: Workspace, start_daemon, transcript: str) -> dict:
    """Run a real daemon for one session ending with `transcript`: the session completes and
    the daemon's peak resident memory stays under three times the cap; its record."""
    daemon = start_daemon(ws.root)
    for event in ("session-start", "session-end"):
        doc = {"event": event, "session_id": "big", "host": "claude-code",
               "transcript_path": transcript}
        assert emit(ws.root, orjson.dumps(doc)).returncode == 0
    wait_until(lambda: (session_record(ws, "big") or {}).get("status") == "completed", 60)
    assert _peak_rss(daemon.pid) < 3 * MAX_TRANSCRIPT
    return session_record(ws, "big")


def _peak_rss(pid: int) -> int:
    """The daemon's own peak resident memory (VmHWM), in bytes. Not wait4's ru_maxrss: that
    counts the moment between fork and exec, when the child still has the test runner's
    memory (hundreds of MB late in a long run)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # in kB
    raise AssertionError("no VmHWM in /proc/PID/status")


@pytest.mark.slow
def test_a_transcript_that_never_ends_does_not_stop_the_completion(workspace, start_daemon):
    record = _serve_one_session(workspace, start_daemon, "/proc/self/pagemap")
    assert "tokens" not in record["metadata"]["sidecar"]


@pytest.mark.slow
def test_a_large_transcript_of_empty_lines_holds_little_memory(workspace, tmp_path, start_daemon):
    transcript = tmp_path / "t.jsonl"
    with open(transcript, "wb") as out:
        for _ in range(21):
            out.write(b"{}\n" * 1_000_000)  # 63 MB, just under the cap
    assert transcript.stat().st_size < MAX_TRANSCRIPT
    _serve_one_session(workspace, start_daemon, str(transcript))
