"""The daemon reads a transcript an event names with a hard bound: a file that never ends, or
one of millions of lines, neither holds much memory nor keeps its session from completing."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import orjson
import pytest

from helpers import SIDECAR, emit, read_json, wait_until
from sidecar.base.ids import harness_id
from sidecar.hosts.transcripts import MAX_TRANSCRIPT
from sidecar.layout import Workspace


def _record(ws: Workspace, session: str):
    path = ws.session_dir(harness_id("claude-code", session)) / "session.json"
    return read_json(path) if path.exists() else None


def _serve_one_session(ws: Workspace, log: Path, transcript: str) -> tuple[dict, int]:
    """Run a real daemon for one session ending with `transcript`; its record and the
    daemon's peak resident memory in bytes."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([SIDECAR, "run", "--root", str(ws.root)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        for event in ("session-start", "session-end"):
            doc = {"event": event, "session_id": "big", "host": "claude-code",
                   "transcript_path": transcript}
            assert emit(ws.root, orjson.dumps(doc)).returncode == 0
        wait_until(lambda: (_record(ws, "big") or {}).get("status") == "completed", 60)
        peak = _peak_rss(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return _record(ws, "big"), peak


def _peak_rss(pid: int) -> int:
    """The daemon's own peak resident memory (VmHWM), in bytes. Not wait4's ru_maxrss: that
    counts the moment between fork and exec, when the child still has the test runner's
    memory (hundreds of MB late in a long run)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # in kB
    raise AssertionError("no VmHWM in /proc/PID/status")


@pytest.mark.slow
def test_a_transcript_that_never_ends_does_not_stop_the_completion(workspace, tmp_path):
    record, peak = _serve_one_session(workspace, tmp_path / "daemon.log", "/proc/self/pagemap")
    assert record["status"] == "completed"
    assert "tokens" not in record["metadata"]["sidecar"]
    assert peak < 3 * MAX_TRANSCRIPT


@pytest.mark.slow
def test_a_large_transcript_of_empty_lines_holds_little_memory(workspace, tmp_path):
    transcript = tmp_path / "t.jsonl"
    with open(transcript, "wb") as out:
        for _ in range(21):
            out.write(b"{}\n" * 1_000_000)  # 63 MB, just under the cap
    assert transcript.stat().st_size < MAX_TRANSCRIPT
    record, peak = _serve_one_session(workspace, tmp_path / "daemon.log", str(transcript))
    assert record["status"] == "completed"
    assert peak < 3 * MAX_TRANSCRIPT
