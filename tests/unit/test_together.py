"""together: a batch's durable writes made durable together. Every file is fsynced before
any replace is put in place, every folder a replace changed is fsynced after; a failure, or a
leader fenced out, puts nothing in place and leaves no temporary file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from sidecar import jsonfile, together
from sidecar.coordination.base import LeaseLost
from sidecar.layout import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.ensure_runtime()
    (ws.sessions / "s1").mkdir()
    return ws


def record_calls(monkeypatch) -> list[tuple[str, str]]:
    """fsyncs and renames in order: ("fsync", what was synced), ("rename", the final name)."""
    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[1]))
        real_fsync(fd)

    def replace(src, dst, **kwargs) -> None:
        calls.append(("rename", str(dst)))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


def writes(ws: Workspace) -> None:
    jsonfile.append_lines(ws.sessions / "s1" / "trace.jsonl", [{"id": 1}])
    jsonfile.write_json_atomic(ws.sessions / "s1" / "session.json", {"id": "s1"})
    jsonfile.write_json_atomic(ws.bindings_file, {"bindings": {}})


def test_every_file_is_on_disk_before_any_is_put_in_place(ws, monkeypatch):
    calls = record_calls(monkeypatch)
    with together.together():
        writes(ws)
        assert calls == []  # nothing synced, nothing in place yet
        assert not (ws.sessions / "s1" / "session.json").exists()
        assert (ws.sessions / "s1" / "trace.jsonl").read_bytes() == b'{"id":1}\n'  # written
    kinds = [kind for kind, _ in calls]
    assert kinds == ["fsync"] * 3 + ["rename"] * 2 + ["fsync"] * 2
    assert [name for _, name in calls[3:5]] == ["session.json", "host-sessions.json"]
    assert {name for _, name in calls[5:]} == {"s1", "hooks"}  # the folders renamed into
    assert jsonfile.read_json(ws.sessions / "s1" / "session.json") == {"id": "s1"}
    assert [p.name for p in (ws.sessions / "s1").iterdir() if p.name.startswith(".")] == []


def test_one_by_one_outside_a_block(ws, monkeypatch):
    calls = record_calls(monkeypatch)
    writes(ws)
    assert [kind for kind, _ in calls] == ["fsync", "fsync", "rename", "fsync", "fsync", "rename",
                                          "fsync"]


def test_a_failure_in_the_block_puts_nothing_in_place_and_leaves_no_temporary(ws):
    with pytest.raises(RuntimeError):
        with together.together():
            writes(ws)
            raise RuntimeError("the batch failed")
    assert not (ws.sessions / "s1" / "session.json").exists() and not ws.bindings_file.exists()
    assert sorted(p.name for p in (ws.sessions / "s1").iterdir()) == ["trace.jsonl"]
    assert list(ws.bindings_file.parent.iterdir()) == []


def test_a_failed_fsync_at_the_end_puts_nothing_in_place(ws, monkeypatch):
    real = os.fsync
    state = {"n": 0}

    def failing(fd: int) -> None:
        state["n"] += 1
        if state["n"] == 2:
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="Input/output"):
        with together.together():
            writes(ws)
    assert not (ws.sessions / "s1" / "session.json").exists()
    assert [p.name for p in (ws.sessions / "s1").iterdir()] == ["trace.jsonl"]


def test_a_leader_fenced_out_at_the_end_puts_nothing_in_place(ws):
    def fenced() -> None:
        raise LeaseLost("the lead was lost")

    with pytest.raises(LeaseLost):
        with together.together(fenced):
            writes(ws)
    assert not (ws.sessions / "s1" / "session.json").exists() and not ws.bindings_file.exists()
    assert sorted(p.name for p in (ws.sessions / "s1").iterdir()) == ["trace.jsonl"]


def test_a_write_that_fails_at_once_fails_at_once(ws, monkeypatch):
    real = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with together.together():
        jsonfile.append_lines(ws.sessions / "s1" / "trace.jsonl", [{"id": 1}])
        monkeypatch.setattr(os, "write", full)
        with pytest.raises(OSError, match="No space"):
            jsonfile.write_json_atomic(ws.sessions / "s1" / "session.json", {"id": "s1"})
        monkeypatch.setattr(os, "write", real)
        jsonfile.write_json_atomic(ws.bindings_file, {"bindings": {}})  # the rest goes on
    assert ws.bindings_file.exists() and not (ws.sessions / "s1" / "session.json").exists()
    assert sorted(p.name for p in (ws.sessions / "s1").iterdir()) == ["trace.jsonl"]


def test_a_block_inside_a_block_is_part_of_it(ws):
    with together.together():
        with together.together():
            jsonfile.write_json_atomic(ws.bindings_file, {"bindings": {}})
        assert not ws.bindings_file.exists()  # put in place with the outer block's end
    assert ws.bindings_file.exists()


def test_writes_that_need_no_fsync_are_not_held_back(ws):
    with together.together():
        jsonfile.write_json_atomic(ws.bindings_file, {"bindings": {}}, durable=False)
        assert ws.bindings_file.exists()


def test_what_waits_for_the_fence_runs_after_it_and_only_if_it_passed(ws):
    said: list[str] = []

    def fence() -> None:
        said.append("fence" if together.current().finishing else "early")

    with together.together(fence, lambda: said.append("forgotten")):
        together.current().once_accepted(lambda: said.append("then"))
        assert not together.current().finishing
    assert said == ["fence", "then"]

    said.clear()

    def refused() -> None:
        said.append("refused")
        raise LeaseLost("another leads")

    with pytest.raises(LeaseLost):
        with together.together(refused, lambda: said.append("forgotten")):
            together.current().once_accepted(lambda: said.append("then"))
    assert said == ["refused", "forgotten"]  # nothing of the block is kept, nothing after it
