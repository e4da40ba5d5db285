"""safedir.holding: a folder held open for a batch, and opened below without a walk from the
root, with every guarantee of the walk kept: no link followed, private folders made private,
another thread untouched, a folder that cannot be held left to the usual refusals."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from sidecar import jsonfile, safedir


def counting_walks(monkeypatch) -> list[str]:
    """Every walk from the root (safedir._open_base), by the folder it reaches."""
    walks: list[str] = []
    real = safedir._open_base

    def counted(base: str) -> int:
        walks.append(base)
        return real(base)

    monkeypatch.setattr(safedir, "_open_base", counted)
    return walks


def test_below_a_held_folder_files_and_folders_open_without_a_walk(ws, monkeypatch):
    walks = counting_walks(monkeypatch)
    with safedir.holding(ws.runtime):
        held_walks = len(walks)
        safedir.make_dirs(ws.sessions / "abc" / "deeper")
        jsonfile.write_json_atomic(ws.sessions / "abc" / "session.json", {"a": 1})
        assert jsonfile.read_json(ws.sessions / "abc" / "session.json") == {"a": 1}
        with safedir.opened(ws.runtime) as fd:
            assert os.path.samestat(os.fstat(fd), os.stat(ws.runtime))
        assert len(walks) == held_walks == 1  # the one walk: to hold it
    jsonfile.read_json(ws.sessions / "abc" / "session.json")
    assert len(walks) == 2  # released: a walk again


def test_what_is_made_below_a_held_runtime_is_private(ws):
    os.umask(0o022)
    with safedir.holding(ws.runtime):
        safedir.make_dirs(ws.sessions / "new" / "inner")
    for folder in (ws.sessions / "new", ws.sessions / "new" / "inner"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_link_swapped_in_for_a_held_folder_is_never_followed(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with safedir.holding(ws.sessions):
        ws.sessions.rename(tmp_path / "sessions.real")
        ws.sessions.symlink_to(elsewhere)  # the folder swapped for a link mid-batch
        safedir.make_dirs(ws.sessions / "abc")
        jsonfile.write_json_atomic(ws.sessions / "abc" / "session.json", {"a": 1})
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    assert (tmp_path / "sessions.real" / "abc" / "session.json").exists()  # but where it was held
    with pytest.raises(safedir.LinkRefused):  # once let go, the link is refused as ever
        jsonfile.read_json(ws.sessions / "abc" / "session.json")


def test_a_link_below_a_held_folder_is_refused_as_without_holding(ws, tmp_path):
    (tmp_path / "secret").mkdir()
    (ws.sessions / "evil").symlink_to(tmp_path / "secret")
    with safedir.holding(ws.runtime):
        with pytest.raises(safedir.LinkRefused):
            jsonfile.write_json_atomic(ws.sessions / "evil" / "session.json", {})
        with pytest.raises(OSError):
            safedir.open_file(ws.sessions / "evil", os.O_RDONLY)  # the link itself: ELOOP
    assert list((tmp_path / "secret").iterdir()) == []


def test_a_folder_that_cannot_be_held_is_refused_at_each_open_as_without(ws, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    ws.instances.rmdir()
    ws.instances.symlink_to(tmp_path / "elsewhere")
    with safedir.holding(ws.instances):  # (a link: not held)
        with pytest.raises(safedir.LinkRefused):
            jsonfile.write_json_atomic(ws.instances / "x.json", {})
    ws.instances.unlink()
    with safedir.holding(ws.instances):  # (absent: not held)
        with pytest.raises(FileNotFoundError):
            jsonfile.read_json(ws.instances / "x.json")


def test_another_thread_walks_as_ever_and_a_nested_hold_is_given_back(ws, monkeypatch):
    jsonfile.write_json_atomic(ws.runtime / "hooks.json", {})
    walks = counting_walks(monkeypatch)
    seen: list[int] = []

    def other() -> None:
        before = len(walks)
        jsonfile.read_json(ws.runtime / "hooks.json")
        seen.append(len(walks) - before)

    with safedir.holding(ws.runtime):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        with safedir.holding(ws.runtime):
            pass
        count = len(walks)
        jsonfile.read_json(ws.runtime / "hooks.json")
        assert len(walks) == count  # still held after the inner hold let go
    assert seen == [1]  # the other thread walked from the root
