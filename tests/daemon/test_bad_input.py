"""Bad input: each class from the contract is set aside with its reason; nothing stops."""

from __future__ import annotations

import os
import time

import orjson
import pytest

from helpers import read_json, run_cli, wait_until
from sidecar.base.ids import harness_id

GOOD = b'{"event": "session-start", "session_id": "good-%d", "host": "t"}'

BAD_FILES = {
    "empty.json": b"",
    "binary.json": bytes(range(256)) * 4,
    "not-json.json": b"{this is not json",
    "array.json": b"[1, 2, 3]",
    "not-utf8.json": b'{"event": "x", "session_id": "\xff"}',
    "nan.json": b'{"event": "x", "session_id": "s", "n": NaN}',
    "no-event.json": b'{"session_id": "s"}',
    "no-session.json": b'{"event": "session-start"}',
    "wrong-type.json": b'{"event": ["x"], "session_id": "s"}',
    "slash-id.json": b'{"event": "x", "session_id": "a/b"}',
    "dotdot-id.json": b'{"event": "x", "session_id": ".."}',
    "dotdot-path-id.json": b'{"event": "x", "session_id": "../../etc"}',
    "nul-id.json": b'{"event": "x", "session_id": "a\\u0000b"}',
    "long-id.json": b'{"event": "x", "session_id": "' + b"x" * 200 + b'"}',
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
    "huge.json": b'{"event": "x", "session_id": "s", "pad": "' + b"a" * (10 * 1024 * 1024) + b'"}',
}


def old(path, seconds=10):
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp), follow_symlinks=False)


def test_every_bad_class_is_rejected_with_its_reason_and_good_events_still_apply(
        workspace, start_daemon, tmp_path):
    inbox = workspace.inbox
    for name, data in BAD_FILES.items():
        (inbox / name).write_bytes(data)
        old(inbox / name)
    outside = tmp_path / "outside-secret.json"
    outside.write_bytes(GOOD % 99)
    os.symlink(outside, inbox / "link.json")
    os.mkfifo(inbox / "fifo.json")
    (inbox / "folder.json").mkdir()
    (inbox / "notes.txt").write_text("not an event")
    for path in ("fifo.json", "folder.json", "notes.txt"):
        old(inbox / path)
    not_utf8 = os.fsdecode(b"caf\xe9-\xff.json")  # a name that is not UTF-8
    # Valid content under a name that is not UTF-8: the name alone is the reason.
    (inbox / not_utf8).write_bytes(GOOD % 98)
    old(inbox / not_utf8)
    (inbox / "dup-keys.json").write_bytes(
        b'{"event": "session-start", "session_id": "first", "session_id": "dup-last", "host": "t"}')
    for i in range(3):
        (inbox / f"0000-good-{i}.json").write_bytes(GOOD % i)

    daemon = start_daemon(workspace.root)
    expected = set(BAD_FILES) | {"link.json", "fifo.json", "folder.json", "notes.txt", not_utf8}
    wait_until(lambda: {p.name for p in workspace.rejected.iterdir()
                        if not p.name.endswith(".error.json")} == expected, 20)
    for name in expected - {not_utf8}:
        note = read_json(workspace.rejected / f"{name}.error.json")
        assert note["file"] == name and note["reason"]
    reasons = {name: read_json(workspace.rejected / f"{name}.error.json")["reason"] for name in expected}
    assert "symlink" in reasons["link.json"]
    assert "regular file" in reasons["fifo.json"] and "folder" in reasons["folder.json"]
    assert "larger than" in reasons["huge.json"]
    assert "session id" in reasons["slash-id.json"]
    assert (workspace.rejected / "link.json").is_symlink()  # set aside, never followed
    assert outside.read_bytes() == GOOD % 99
    # Good events of the same batch are applied right after the bad ones are set aside.
    wait_until(lambda: all((workspace.session_dir(harness_id("t", f"good-{i}")) / "session.json").exists()
                           for i in range(3)))
    assert not (workspace.session_dir(harness_id("t", "good-99"))).exists()
    assert read_json(workspace.rejected / f"{not_utf8}.error.json")["file"] == "caf\ufffd-\ufffd.json"
    assert "not UTF-8" in reasons[not_utf8]
    assert not (workspace.session_dir(harness_id("t", "good-98"))).exists()
    # A repeated key is not an error: the last value counts, as JSON parsers commonly do.
    assert (workspace.session_dir(harness_id("t", "dup-last")) / "session.json").exists()
    assert not (workspace.session_dir(harness_id("t", "first"))).exists()

    assert daemon.proc.poll() is None
    status = run_cli("status", "--root", str(workspace.root), "--json")
    assert status.returncode == 0
    report = orjson.loads(status.stdout)["workspaces"][0]
    assert report["rejected"] == len(expected)
    assert report["inbox"]["backlog"] == 0


def test_a_file_written_in_place_gets_its_grace_period(workspace, start_daemon):
    start_daemon(workspace.root)
    path = workspace.inbox / "in-place.json"
    with open(path, "wb") as handle:
        handle.write(b'{"event": "session-start", ')
        handle.flush()
        time.sleep(1.0)  # the daemon sees a half-written file, and must wait
        handle.write(b'"session_id": "slow", "host": "t"}')
    wait_until(lambda: not path.exists(), 10)
    assert not (workspace.rejected / "in-place.json").exists()
    assert (workspace.session_dir(harness_id("t", "slow")) / "session.json").exists()


@pytest.mark.slow
def test_a_file_that_stays_broken_is_rejected_after_the_grace_period(workspace, start_daemon):
    start_daemon(workspace.root)
    path = workspace.inbox / "broken.json"
    path.write_bytes(b'{"event": "session-start", ')
    began = time.monotonic()
    wait_until(lambda: (workspace.rejected / "broken.json").exists(), 10)
    assert time.monotonic() - began >= 1.5


def test_same_name_rejected_twice_keeps_both(workspace, start_daemon):
    start_daemon(workspace.root)
    for _ in range(2):
        (workspace.inbox / "dup.json").write_bytes(b"[]")
        old(workspace.inbox / "dup.json")
        wait_until(lambda: not (workspace.inbox / "dup.json").exists())
    names = sorted(p.name for p in workspace.rejected.iterdir())
    assert names == ["dup.json", "dup.json.1", "dup.json.1.error.json", "dup.json.error.json"]
