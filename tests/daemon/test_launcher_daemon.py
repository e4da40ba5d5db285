"""The launcher, rewritten to start Python without `site` (install/launcher.py), run for real:
the hot commands load neither `site` nor `os` and still do their whole job; every other
command gets its packages as a normal start would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_dispatch_daemon import loaded

from helpers import REPO, SIDECAR, fixture_payload, inbox_files


def installed(folder: Path) -> Path:
    """bin/sidecar as pip installs it beside this Python (`#!python` made `#!<it>`)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sidecar"
    source = (REPO / "bin" / "sidecar").read_bytes()
    path.write_bytes(b"#!" + sys.executable.encode() + source[len(b"#!python"):])
    path.chmod(0o755)
    return path


def rewritten(folder: Path) -> Path:
    path = installed(folder)
    done = subprocess.run([sys.executable, "-m", "sidecar.install.launcher", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == f"{path} starts Python without site\n", done
    return path


def run(launcher: Path, *args: str, cwd: Path, payload: bytes = b"",
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(launcher), *args], input=payload, capture_output=True, cwd=cwd,
                          env={**os.environ, "PYTHONVERBOSE": "1", **(env or {})}, timeout=60)


def test_the_launcher_the_tests_and_hooks_run_starts_without_site():
    """make install rewrites it, as `sidecar integrate` does for a user."""
    assert Path(SIDECAR).read_bytes().split(b"\n", 1)[0] == f"#!{sys.executable} -S".encode()


def test_emit_loads_neither_site_nor_os_and_drops_the_event(workspace, tmp_path):
    launcher = rewritten(tmp_path / "bin")
    payload = fixture_payload("claude-code-2.1.328/PostToolUse.json")
    result = run(launcher, "emit", "--source", "claude-code", cwd=workspace.root, payload=payload)
    assert result.returncode == 0 and result.stdout == b'{"continue": true}\n'
    modules = loaded(result)
    assert "sidecar.emit" in modules and not modules & {"site", "os", "posixpath"}
    [event] = inbox_files(workspace)  # the registry was found through SIDECAR_CONFIG_HOME
    assert payload.strip() in event.read_bytes()


def test_emit_through_a_linked_folder_finds_the_registered_workspace(workspace, tmp_path):
    """The registry holds the real path; emit, without os.path.realpath, names it the same."""
    launcher = rewritten(tmp_path / "bin")
    (tmp_path / "elsewhere").symlink_to(workspace.root)
    result = run(launcher, "emit", "x", "--session-id", "s", cwd=tmp_path / "elsewhere")
    assert result.returncode == 0 and "os" not in loaded(result)
    assert len(inbox_files(workspace)) == 1


def test_the_status_line_runs_without_site(workspace, tmp_path):
    launcher = rewritten(tmp_path / "bin")
    result = run(launcher, "status", "--line", "--root", str(workspace.root), cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == b"no active sessions\n"
    assert "site" not in loaded(result)


@pytest.mark.parametrize("args", [("version",), ("hooks", "list"), ("status", "--help")])
def test_every_other_command_starts_as_with_site(workspace, tmp_path, args):
    launcher = rewritten(tmp_path / "bin")
    fast, slow = (run(path, *args, cwd=workspace.root)
                  for path in (launcher, installed(tmp_path / "pip")))
    assert (fast.returncode, fast.stdout) == (slow.returncode, slow.stdout)
    assert "site" in loaded(fast) and "typer" in loaded(fast)


def test_started_with_s_by_hand_without_folders_it_still_works(workspace, tmp_path):
    launcher = installed(tmp_path / "pip")  # FOLDERS empty: pip's copy
    result = subprocess.run([sys.executable, "-S", str(launcher), "emit", "x", "--session-id",
                             "s"], capture_output=True, cwd=workspace.root)
    assert result.returncode == 0 and result.stdout == b'{"continue": true}\n'
    assert len(inbox_files(workspace)) == 1


def test_the_rewrite_says_why_a_file_cannot_be_rewritten(tmp_path):
    other = tmp_path / "other"
    other.write_text("#!/bin/sh\necho hi\n")
    done = subprocess.run([sys.executable, "-m", "sidecar.install.launcher", str(other)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == f"sidecar: {other} still starts Python with site: {other} is not " \
        "sidecar's launcher\n"
    assert other.read_text() == "#!/bin/sh\necho hi\n"
