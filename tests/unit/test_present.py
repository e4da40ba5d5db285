"""The words and times people read: relative, local, as typed; colour only on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

from sidecar.cli import present

NOW = 1_795_900_000.0


def test_times_are_relative_both_ways():
    assert present.ago(NOW - 180, NOW) == "3 min ago"
    assert present.ago(NOW + 12, NOW) == "in 12 s"
    assert present.ago(NOW - 2 * 3600 - 300, NOW) == "2 h 5 min ago"
    assert present.ago(None, NOW) == "-"
    assert present.due(NOW + 12, NOW) == "due in 12 s" and present.due(NOW - 1, NOW) == "due now"


def test_durations_read_back_as_typed():
    assert [present.duration(s) for s in (0, 45, 300, 5400, 7200, 86400)] == [
        "0s", "45s", "5m", "1h30m", "2h", "1d"]


def test_paths_are_short(tmp_path):
    root = tmp_path / "ws"
    assert present.path(root / "logs" / "a.log", root) == "logs/a.log"
    assert present.path(Path.home() / "x" / "y", root) == "~/x/y"
    assert present.path("/elsewhere/z", root) == "/elsewhere/z"


def test_end_reasons_are_words():
    assert present.end_reason("prompt_input_exit") == "you quit"
    assert present.end_reason("host-exited", mid_turn=True) == "the host process exited, mid-turn"
    assert present.end_reason("stale", stale_after=86400) == "no event for 1 day: swept"
    assert present.end_reason("some_new_reason") == "some new reason"


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert present.style_for(Tty())("PROBLEM", "red") == "\x1b[31mPROBLEM\x1b[0m"
    assert present.style_for(io.StringIO())("PROBLEM", "red") == "PROBLEM"
    monkeypatch.setenv("NO_COLOR", "1")
    assert present.style_for(Tty())("PROBLEM", "red") == "PROBLEM"


def test_under_a_second_to_come_is_now_not_in_0_s():
    assert present.ago(NOW + 0.6, NOW) == "just now"
    assert present.ago(NOW + 1, NOW) == "in 1 s"
    assert present.due(NOW + 0.4, NOW) == "due now"
