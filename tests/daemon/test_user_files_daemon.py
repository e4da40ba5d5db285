"""Other programs' files: edited where they are, in their own layout, links and modes kept.

Integrating and then uninstalling gives the user's file back byte for byte; a file reached
through the user's symlink (dotfiles, stow) is edited at its target and the link stays; a
read-only file, or one of a shape sidecar cannot edit, is refused with one line.

Those that start real processes; the rest run in process in tests/unit/test_user_files.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SIDECAR, run_cli
from sidecar.hosts import settings as integrate


def run(*args: str, cwd: Path, env: dict[str, str]):
    result = run_cli(*args, cwd=cwd, env=env)
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    return result


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "XDG_CONFIG_HOME": "", "CODEX_HOME": str(home / ".codex"),
            "PATH": f"{Path(SIDECAR).parent}:/usr/bin:/bin"}


def sidecar_hooks(path: Path, comments: bool = False) -> list[str]:
    settings = integrate.load_json(path, comments)
    return [event for event, groups in settings.get("hooks", {}).items()
            for group in groups for h in group["hooks"] if integrate.is_ours(h)]


def dotfile(tmp_path: Path, name: str, content: str, mode: int) -> Path:
    """A file kept in a dotfiles folder, as stow leaves it: the host's path is a link to it."""
    target = tmp_path / "dotfiles" / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(content)
    target.chmod(mode)
    return target


def test_a_symlinked_gemini_settings_file_neither_crashes_integrate_nor_doctor(workspace, env,
                                                                              tmp_path):
    target = dotfile(tmp_path, "gemini.json", '{"ui": {"theme": "dark"}}\n', 0o600)
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(target)
    assert run("integrate", "gemini", cwd=workspace.root, env=env).returncode == 0
    assert settings.is_symlink() and len(sidecar_hooks(target)) == 5
    doctor = run("doctor", cwd=workspace.root, env=env)
    assert doctor.returncode in (0, 1) and b"gemini" in doctor.stdout.lower()


