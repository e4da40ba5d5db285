"""The launcher's rewrite (install/launcher.py): pip's `#!<python>` becomes `#!<python> -S`
with the package's folder written in, once, atomically, only where the file is sidecar's
launcher and the user's own."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from helpers import REPO, invoke
from sidecar.doctor import checks
from sidecar.install import launcher, service

PYTHON = "/opt/venv/bin/python"


def pip_installed(folder: Path, interpreter: str = PYTHON) -> Path:
    """bin/sidecar as pip installs it: `#!python` made `#!<interpreter>`, mode 0755."""
    path = folder / "sidecar"
    source = (REPO / "bin" / "sidecar").read_bytes()
    assert source.startswith(b"#!python\n")
    path.write_bytes(b"#!" + interpreter.encode() + source[len(b"#!python"):])
    path.chmod(0o755)
    return path


def test_the_rewrite_adds_the_flag_and_the_folders_and_keeps_the_rest(tmp_path):
    path = pip_installed(tmp_path)
    before = path.read_bytes()
    assert launcher.rewrite(path, ("/opt/venv/lib/python3.11/site-packages",)) is True
    after = path.read_bytes()
    first, rest = after.split(b"\n", 1)
    assert first == b"#!/opt/venv/bin/python -S"
    assert b"\nFOLDERS: tuple[str, ...] = ('/opt/venv/lib/python3.11/site-packages',)\n" in rest
    # every other line is the launcher's own, unchanged
    assert [line for line in rest.splitlines() if not line.startswith(b"FOLDERS")] == \
        [line for line in before.split(b"\n", 1)[1].splitlines() if not line.startswith(b"FOLDERS")]
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["sidecar"]  # no temporary file left
    compile(after, "sidecar", "exec")  # still Python


def test_the_rewrite_is_done_once_and_follows_a_new_folder(tmp_path):
    path = pip_installed(tmp_path)
    assert launcher.rewrite(path, ("/a",)) is True
    once = path.read_bytes()
    inode = path.stat().st_ino
    assert launcher.rewrite(path, ("/a",)) is False
    assert path.read_bytes() == once and path.stat().st_ino == inode  # not even replaced
    assert launcher.rewrite(path, ("/b",)) is True
    assert path.read_bytes().split(b"\n", 1)[0] == b"#!/opt/venv/bin/python -S"  # one flag
    assert b"FOLDERS: tuple[str, ...] = ('/b',)\n" in path.read_bytes()


def test_the_folder_written_is_the_one_sidecar_is_imported_from():
    import sidecar

    (folder,) = launcher.package_folders()
    assert (Path(folder) / "sidecar" / "__init__.py").samefile(sidecar.__file__)


def test_a_link_to_the_launcher_rewrites_the_launcher_and_keeps_the_link(tmp_path):
    path = pip_installed(tmp_path)
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "sidecar"
    link.symlink_to(path)  # pipx's ~/.local/bin/sidecar
    assert launcher.rewrite(link, ("/a",)) is True
    assert link.is_symlink() and path.read_bytes().startswith(b"#!/opt/venv/bin/python -S\n")
    assert launcher.why_slow(link) is not None  # the folders differ from this process's ...
    launcher.rewrite(link)
    assert launcher.why_slow(link) is None  # ... and, written as this process has them, none


@pytest.mark.parametrize("text, why", [
    (b"#!/opt/venv/bin/python\nprint('not sidecar')\n", "is not sidecar's launcher"),
    (b"#!/opt/my venv/bin/python\nFOLDERS: tuple[str, ...] = ()\n", "can take a flag"),
    (b"#!python\nFOLDERS: tuple[str, ...] = ()\n", "can take a flag"),
    (b"#!/" + b"x" * 130 + b"/python\nFOLDERS: tuple[str, ...] = ()\n", "too long"),
])
def test_what_is_not_a_launcher_that_can_take_the_flag_is_left_as_it_is(tmp_path, text, why):
    path = tmp_path / "sidecar"
    path.write_bytes(text)
    with pytest.raises(ValueError, match=why):
        launcher.rewrite(path, ("/a",))
    assert path.read_bytes() == text
    assert why in launcher.why_slow(path)
    launcher.prepare(path)  # says nothing, changes nothing
    assert path.read_bytes() == text


def test_a_folder_or_fifo_in_its_place_is_never_read(tmp_path):
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for name in ("dir", "fifo"):
        with pytest.raises(ValueError, match="not a regular file"):
            launcher.rewrite(tmp_path / name, ("/a",))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_launcher_is_never_rewritten(tmp_path):
    path = pip_installed(tmp_path)
    os.chown(path, 4242, 4242)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="belongs to another user"):
        launcher.rewrite(path, ("/a",))
    assert path.read_bytes() == before and path.stat().st_uid == 4242


def test_a_folder_it_cannot_write_leaves_the_launcher_as_it_was(tmp_path, monkeypatch):
    path = pip_installed(tmp_path)
    before = path.read_bytes()

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(launcher.jsonfile, "replace_in", refused)
    with pytest.raises(PermissionError):
        launcher.rewrite(path, ("/a",))
    launcher.prepare(path)  # a launcher that cannot be rewritten still works: nothing said
    assert path.read_bytes() == before


# -- who rewrites it, and who says it was not -------------------------------------------------


def test_integrate_rewrites_the_launcher_its_hooks_run(tmp_path, monkeypatch, workspace):
    path = pip_installed(tmp_path)
    monkeypatch.setattr(service, "sidecar_path", lambda: path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = invoke("integrate", "claude-code", "--root", str(workspace.root))
    assert result.returncode == 0, result.stderr
    assert path.read_bytes().startswith(b"#!/opt/venv/bin/python -S\n")
    assert launcher.why_slow(path) is None


def test_integrate_goes_on_where_the_launcher_cannot_be_rewritten(tmp_path, monkeypatch, workspace):
    path = tmp_path / "sidecar"
    path.write_text("#!/opt/my venv/bin/python\nFOLDERS: tuple[str, ...] = ()\n")
    monkeypatch.setattr(service, "sidecar_path", lambda: path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = invoke("integrate", "claude-code", "--root", str(workspace.root))
    assert result.returncode == 0, result.stderr
    assert (workspace.root / ".claude" / "settings.local.json").exists()


def test_doctor_notes_a_launcher_that_starts_with_site_and_how_to_fix_it(tmp_path, monkeypatch):
    path = pip_installed(tmp_path)
    monkeypatch.setattr(service, "sidecar_path", lambda: path)
    [finding] = checks._launcher()
    assert finding.ok and finding.note and "starts Python with site" in finding.what
    assert finding.fix == f"{Path(sys.executable)} -m sidecar.install.launcher {path}"
    launcher.rewrite(path)
    assert checks._launcher() == []


def test_doctor_says_the_launcher_costs_hooks_only_once_a_host_runs_them(
        tmp_path, monkeypatch, workspace):
    from helpers import invoke
    from sidecar.doctor import checks
    from sidecar.install import service

    path = pip_installed(tmp_path)
    monkeypatch.setattr(service, "sidecar_path", lambda: path)
    monkeypatch.setattr(launcher, "prepare", lambda path: None)  # as if it could not be rewritten
    monkeypatch.setattr(service, "state", lambda *_, **__: (False, "not installed"))
    monkeypatch.setattr(service, "check_manager", lambda *_: None)  # (they ask systemctl)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))

    def site_notes() -> list[str]:
        found = checks.check(workspace.root, home, proc=tmp_path / "no-proc")
        return [f.what for f in found if "starts Python with site" in f.what]

    assert site_notes() == []  # no host is integrated: no hook pays for it
    assert invoke("integrate", "claude-code", "--root", str(workspace.root)).returncode == 0
    assert len(site_notes()) == 1
