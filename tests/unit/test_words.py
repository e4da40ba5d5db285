"""The words and times people read: relative, local, as typed; colour only on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.base import words

NOW = 1_795_900_000.0


def test_times_are_relative_both_ways():
    assert words.ago(NOW - 180, NOW) == "3 min ago"
    assert words.ago(NOW + 12, NOW) == "in 12 s"
    assert words.ago(NOW - 2 * 3600 - 300, NOW) == "2 h 5 min ago"
    assert words.ago(None, NOW) == "-"
    assert words.due(NOW + 12, NOW) == "due in 12 s" and words.due(NOW - 1, NOW) == "due now"


def test_durations_read_back_as_typed():
    assert [words.duration(s) for s in (0, 45, 300, 5400, 7200, 86400)] == [
        "0s", "45s", "5m", "1h30m", "2h", "1d"]


def test_paths_are_short(tmp_path):
    root = tmp_path / "ws"
    assert words.path(root / "logs" / "a.log", root) == "logs/a.log"
    assert words.path(Path.home() / "x" / "y", root) == "~/x/y"
    assert words.path("/elsewhere/z", root) == "/elsewhere/z"


def test_end_reasons_are_words():
    assert words.end_reason("prompt_input_exit") == "you quit"
    assert words.end_reason("host-exited", mid_turn=True) == "the host process exited, mid-turn"
    assert words.end_reason("stale", stale_after=86400) == "no event for 1 day: swept"
    assert words.end_reason("some_new_reason") == "some new reason"


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert words.style_for(Tty())("PROBLEM", "red") == "\x1b[31mPROBLEM\x1b[0m"
    assert words.style_for(io.StringIO())("PROBLEM", "red") == "PROBLEM"
    monkeypatch.setenv("NO_COLOR", "1")
    assert words.style_for(Tty())("PROBLEM", "red") == "PROBLEM"


def test_under_a_second_to_come_is_now_not_in_0_s():
    assert words.ago(NOW + 0.6, NOW) == "just now"
    assert words.ago(NOW + 1, NOW) == "in 1 s"
    assert words.due(NOW + 0.4, NOW) == "due now"


def as_pathlib_said_it(value: str | Path | None, root: Path | None = None) -> str:
    """words.path as it was written with pathlib (it is now strings: pathlib costs `status`)."""
    if value is None or value == "":
        return "-"
    where = Path(value)
    if root is not None and where.is_absolute():
        try:
            return str(where.relative_to(root)) or "."
        except ValueError:
            pass
    home = Path.home()
    try:
        return "~/" + str(where.relative_to(home)) if where != home else "~"
    except ValueError:
        return str(where)


PATH_PARTS = st.lists(st.sampled_from(["", ".", "..", "home", "u", "ws", "a b", ".context"]),
                      max_size=5).map("/".join)
PATHS = st.tuples(st.sampled_from(["", "/", "//", "///", "/home/u/", "."]), PATH_PARTS).map("".join)


@settings(max_examples=400)
@given(PATHS, st.none() | PATHS, st.sampled_from(["/home/u", "/home/u/", "/", "", "//home/u",
                                                   "home/u", "/home/./u", None]))
def test_a_path_is_shown_as_pathlib_showed_it(value, root, home):
    with pytest.MonkeyPatch.context() as patch:  # (hypothesis runs many examples per test)
        if home is None:
            patch.delenv("HOME", raising=False)
        else:
            patch.setenv("HOME", home)
        said = as_pathlib_said_it(value, None if root is None else Path(root))
        assert words.path(value, root) == said
        assert words.path(Path(value) if value else value, root) == said
