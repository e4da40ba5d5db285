"""The daemon's log file: one line per record, rotated at its cap, shared by daemons."""

from __future__ import annotations

import logging

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
    one, two = SharedLogFile(path, max_bytes=400, backups=2), SharedLogFile(path, max_bytes=400,
                                                                          backups=2)
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


def test_a_log_that_cannot_be_written_is_said_once_and_stops_nothing(tmp_path, capsys):
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder belongs")
    handler = SharedLogFile(blocker / "daemon.log")
    handler.emit(record("one"))
    handler.emit(record("two"))
    assert capsys.readouterr().err.count("cannot write the log file") == 1
