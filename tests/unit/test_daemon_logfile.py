"""The daemon's log file: one line per record, rotated at its cap, shared by daemons."""

from __future__ import annotations

import logging
import os
import pwd
import time
from pathlib import Path

import pytest

from sidecar import layout
from sidecar.cli.logread import RECORD
from sidecar.daemon.logfile import SharedLogFile, rotated


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("sidecar", logging.INFO, __file__, 1, message, None, None)


def test_records_are_timed_lines_and_a_traceback_stays_with_its_record(tmp_path):
    path = tmp_path / "state" / "daemon.log"
    handler = SharedLogFile(path)
    handler.emit(record("first"))
    handler.emit(record("second\nTraceback line"))
    handler.close()
    lines = path.read_text().splitlines()
    assert [RECORD.fullmatch(line) is not None for line in lines] == [True, True, False]
    assert lines[0].endswith(" INFO first") and lines[2] == "  Traceback line"
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700


def test_two_daemons_share_the_file_and_rotate_it_once(tmp_path):
    path = tmp_path / "daemon.log"
    one, two = (SharedLogFile(path, max_bytes=400, backups=2) for _ in range(2))
    for n in range(40):
        (one if n % 2 else two).emit(record(f"line {n:02d}"))
    one.close()
    two.close()
    kept = [line.split()[-1] for p in rotated(path, 2) if p.exists()
            for line in p.read_text().splitlines()]
    assert all(p.stat().st_size <= 400 for p in rotated(path, 2))
    assert not path.with_name("daemon.log.3").exists()  # at most `backups` old files
    # The newest lines survive in order, none lost or doubled within what is kept.
    assert kept == [f"{n:02d}" for n in range(40 - len(kept), 40)]


def test_a_log_that_cannot_be_written_is_said_once_stops_nothing_and_is_tried_again(tmp_path,
                                                                                     capsys):
    """A transient failure (the folder briefly a file, the disk full) is not the end of the
    log file: after a pause the next record tries again, and writing resumes."""
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder belongs")
    handler = SharedLogFile(blocker / "daemon.log")
    handler.retry_seconds = 0.2
    handler.emit(record("lost"))
    handler.emit(record("lost too"))
    blocker.unlink()
    time.sleep(0.3)
    handler.emit(record("written again"))
    handler.close()
    assert (blocker / "daemon.log").read_text().rstrip().endswith(" INFO written again")
    said = capsys.readouterr().err
    assert said.count("cannot write the log file") == 1 and "is written again" in said


AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files to another user")
NOBODY = 65534


@AS_ROOT
def test_root_writes_no_log_into_a_folder_of_another_user(tmp_path, capsys):
    """A root daemon run with a user's environment (sudo -E) would otherwise make a root-owned
    log in the user's state folder that their own daemon could never write again."""
    theirs = tmp_path / "home" / ".local" / "state"
    theirs.mkdir(parents=True)
    for folder in (tmp_path / "home", tmp_path / "home" / ".local", theirs):
        os.chown(folder, NOBODY, NOBODY)
    handler = SharedLogFile(theirs / "sidecar" / "daemon.log")
    handler.emit(record("root's line"))
    handler.close()
    assert list(theirs.iterdir()) == []
    assert "is not this user's" in capsys.readouterr().err


@AS_ROOT
def test_root_writes_into_no_log_file_of_another_user(tmp_path, capsys):
    path = tmp_path / "state" / "daemon.log"
    path.parent.mkdir()
    path.write_text("")
    os.chown(path, NOBODY, NOBODY)
    handler = SharedLogFile(path)
    handler.emit(record("root's line"))
    handler.close()
    assert path.read_text() == ""
    assert "is not this user's" in capsys.readouterr().err


@AS_ROOT
def test_root_given_a_users_environment_keeps_its_log_in_its_own_home(tmp_path, monkeypatch):
    """Where the environment points root at a user's folders (sudo -E keeps HOME and
    XDG_STATE_HOME), root's log goes to root's own home, from the password database."""
    home = tmp_path / "home"
    (home / ".local" / "state").mkdir(parents=True)
    for folder in (home, home / ".local", home / ".local" / "state"):
        os.chown(folder, NOBODY, NOBODY)
    roots_own = Path(pwd.getpwuid(0).pw_dir) / ".local" / "state" / "sidecar" / "daemon.log"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME")
    assert layout.daemon_log() == roots_own
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    assert layout.daemon_log() == roots_own
    # A folder of root's own is used as given, made or not yet.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "root-state"))
    assert layout.daemon_log() == tmp_path / "root-state" / "sidecar" / "daemon.log"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert layout.daemon_log() == tmp_path / ".local" / "state" / "sidecar" / "daemon.log"
