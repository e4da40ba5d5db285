"""posixos: each helper gives what its `os` namesake gives, on the paths hooks meet."""

from __future__ import annotations

import os
import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.base import posixos

# Paths built from the parts that make normalising hard: slashes, dots, dot-dots, names.
parts = st.lists(st.sampled_from(["", ".", "..", "a", "b c", "é", "x.y", "..."]), max_size=8)
paths = st.builds(lambda lead, p, trail: lead + "/".join(p) + trail,
                  st.sampled_from(["", "/", "//", "///"]), parts, st.sampled_from(["", "/", "//"]))


@given(paths)
def test_dirname_and_abspath_are_posixpaths(path):
    assert posixos.dirname(path) == posixpath.dirname(path)
    assert posixos.abspath(path) == posixpath.abspath(path)


@given(st.lists(st.sampled_from(["", "/", "a", "/b", "c/", "d//", ".context"]), min_size=1,
                max_size=5))
def test_join_is_posixpaths(pieces):
    assert posixos.join(*pieces) == posixpath.join(*pieces)


def test_isdir_follows_links_as_os_does(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "folder")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("folder", "file", "link", "dangling", "missing", "file/below"):
        assert posixos.isdir(str(tmp_path / name)) == os.path.isdir(tmp_path / name), name
    assert posixos.isdir("a\0b") is False  # a NUL in a path is no folder, never an error


def test_realpath_is_the_open_folders_own_name(tmp_path):
    real = tmp_path / "real" / "ws"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    given_path = str(tmp_path / "link" / ".." / "link" / "ws")
    fd = os.open(given_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert posixos.realpath(fd, given_path) == os.path.realpath(given_path) == str(real)
    finally:
        os.close(fd)


def test_realpath_without_proc_falls_back_to_os(tmp_path, monkeypatch):
    (tmp_path / "ws").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "ws")

    def no_proc(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(posixos.posix, "readlink", no_proc)
    assert posixos.realpath(-1, str(tmp_path / "link")) == str(tmp_path / "ws")


def test_getenv_reads_the_environment_as_os_environ_has_it(monkeypatch):
    monkeypatch.setenv("SIDECAR_BAREOS_TEST", "é value")
    assert posixos.getenv("SIDECAR_BAREOS_TEST") == os.environ["SIDECAR_BAREOS_TEST"]
    monkeypatch.delenv("SIDECAR_BAREOS_TEST")
    assert posixos.getenv("SIDECAR_BAREOS_TEST") is None


@pytest.mark.parametrize("home", ["/home/user", "/home/user/", "/", "", None])
def test_home_is_expanduser(monkeypatch, home):
    if home is None:  # without HOME: the password database's
        monkeypatch.delenv("HOME")
    else:
        monkeypatch.setenv("HOME", home)
    assert posixos.home() == os.path.expanduser("~")


def test_read_regular_reads_a_file_and_refuses_the_rest(tmp_path):
    (tmp_path / "file").write_bytes(b"abc")
    assert posixos.read_regular(str(tmp_path / "file"), 3) == b"abc"
    assert posixos.read_regular(str(tmp_path / "none"), 3) is None
    with pytest.raises(OSError, match="larger than 2 bytes"):
        posixos.read_regular(str(tmp_path / "file"), 2)
    os.mkfifo(tmp_path / "fifo")
    for other in (tmp_path / "fifo", tmp_path, "/dev/null"):
        with pytest.raises(OSError):
            posixos.read_regular(str(other), 3)
