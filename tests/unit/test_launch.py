"""sidecar.launch's end of a hot command: its output flushed, then out at once where nothing
is registered to run at exit; the usual exit where something is, or a flush failed."""

from __future__ import annotations

import atexit
import io
import posix

import pytest

import sidecar


class Ended(Exception):
    pass


@pytest.fixture
def ends(monkeypatch) -> list[int]:
    """What posix._exit was called with (it raises instead of ending the test)."""
    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)
        raise Ended

    monkeypatch.setattr(posix, "_exit", fake_exit)
    return codes


def test_with_nothing_to_run_at_exit_it_ends_at_once_after_flushing(monkeypatch, ends):
    out = io.StringIO()
    flushed: list[bool] = []
    monkeypatch.setattr(out, "flush", lambda: flushed.append(True))
    monkeypatch.setattr(sidecar.sys, "stdout", out)
    monkeypatch.setattr(atexit, "_ncallbacks", lambda: 0)
    with pytest.raises(Ended):
        sidecar._hot_exit(3)
    assert ends == [3] and flushed == [True]


def test_with_something_registered_to_run_at_exit_it_exits_as_usual(monkeypatch, ends):
    monkeypatch.setattr(atexit, "_ncallbacks", lambda: 1)
    with pytest.raises(SystemExit) as exited:
        sidecar._hot_exit(0)
    assert exited.value.code == 0 and ends == []


def test_a_flush_that_fails_is_left_to_the_usual_exit(monkeypatch, ends):
    class Broken(io.StringIO):
        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sidecar.sys, "stdout", Broken())
    monkeypatch.setattr(atexit, "_ncallbacks", lambda: 0)
    with pytest.raises(SystemExit) as exited:
        sidecar._hot_exit(1)
    assert exited.value.code == 1 and ends == []
