"""transcripts.open_regular: the one open of every file an event names. Only a regular file is
ever opened, and under `reading_as` only one the given user could read themselves (the file's
bits, search on every folder down to it, no ACL they do not own)."""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.hosts import transcripts
from sidecar.hosts.transcripts import Reader, Unreadable, open_regular, reading_as

OTHER = Reader(uid=os.geteuid() + 4242, groups=frozenset({os.getegid() + 4242}))


@pytest.fixture
def top() -> Iterator[Path]:
    """A folder anyone may search, outside the test's private tmp_path."""
    folder = Path(tempfile.mkdtemp(prefix="sidecar-reading-as-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def readable(path: Path, reader: Reader | None = OTHER, follow: bool = True) -> bool:
    try:
        with reading_as(reader):
            fd = open_regular(str(path), follow)
    except Unreadable:
        return False
    os.close(fd)
    return True


def write(path: Path, mode: int) -> Path:
    path.write_bytes(b"{}\n")
    os.chmod(path, mode)
    return path


def test_only_a_regular_file_is_opened(top):
    os.mkfifo(top / "fifo")
    master, slave = os.openpty()
    try:
        for path in (top / "fifo", Path(os.ttyname(slave)), Path("/dev/null"), top):
            assert not readable(path, None), path
    finally:
        os.close(master)
        os.close(slave)
    (top / "link").symlink_to(write(top / "file", 0o644))
    assert readable(top / "link", None) and not readable(top / "link", None, follow=False)
    assert transcripts.tail_entries(str(top / "fifo")) == []  # no hang
    assert transcripts.tail_entries(str(top / "a\0b")) == []  # a NUL byte an event named
    with pytest.raises(transcripts.Unreadable):
        transcripts.open_regular(str(top / "a\0b"))


def test_a_reader_reads_only_what_the_bits_let_them(top):
    assert readable(write(top / "all.jsonl", 0o644))
    assert not readable(write(top / "mine.jsonl", 0o600))
    assert readable(top / "mine.jsonl", None)  # this process's own rights
    ours = write(top / "group.jsonl", 0o640)
    assert not readable(ours)
    assert readable(ours, Reader(OTHER.uid, frozenset({ours.stat().st_gid})))
    closed = top / "closed"
    closed.mkdir(mode=0o700)
    hidden = write(closed / "all.jsonl", 0o644)
    assert not readable(hidden)  # readable by all, in a folder they may not search
    (top / "link.jsonl").symlink_to(hidden)
    assert not readable(top / "link.jsonl")
    owner = Reader(os.geteuid(), frozenset())
    assert readable(top / "mine.jsonl", owner) and readable(hidden, owner)


def deny(uid: int) -> bytes:
    """A POSIX access ACL (the kernel's xattr form) of rw-r--r-- that gives `uid` nothing."""
    everyone = 0xFFFFFFFF
    entries = [(0x01, 6, everyone), (0x02, 0, uid), (0x04, 4, everyone), (0x10, 4, everyone),
               (0x20, 4, everyone)]  # user::rw- user:uid:--- group::r-- mask::r-- other::r--
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def test_an_acl_on_what_the_reader_does_not_own_refuses_it(top):
    path = write(top / "acl.jsonl", 0o644)
    try:
        os.setxattr(path, transcripts.ACL, deny(OTHER.uid))
    except (AttributeError, OSError) as exc:
        pytest.skip(f"no POSIX ACLs here: {exc}")
    assert not readable(path)  # the bits say others may read; the ACL denies this user
    assert readable(path, Reader(os.geteuid(), frozenset()))  # its owner: the bits decide


def test_a_transcripts_age_is_told_only_where_it_may_be_read(top, tmp_path):
    from sidecar.layout import Workspace
    from sidecar.sessions import endfacts

    os.mkfifo(top / "fifo")
    ws = Workspace(tmp_path)  # this user's own
    assert endfacts.transcript_stat(str(top / "fifo"), ws) is None
    assert endfacts.transcript_stat(str(write(top / "t.jsonl", 0o600)), ws).st_size == 3
