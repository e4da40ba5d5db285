"""Other programs' files: edited where they are, in their own layout, links and modes kept.

Integrating and then uninstalling gives the user's file back byte for byte; a file reached
through the user's symlink (dotfiles, stow) is edited at its target and the link stays; a
read-only file, or one of a shape sidecar cannot edit, is refused with one line.

Those that start real processes; the rest run in process in tests/unit/test_user_files.py.
"""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli
from support.user_files import dotfile, sidecar_hooks, user_env


def run(*args: str, cwd: Path, env: dict[str, str]):
    result = run_cli(*args, cwd=cwd, env=env)
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    return result


def test_a_symlinked_gemini_settings_file_neither_crashes_integrate_nor_doctor(workspace, tmp_path):
    env = user_env(tmp_path)
    target = dotfile(tmp_path, "gemini.json", '{"ui": {"theme": "dark"}}\n', 0o600)
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(target)
    assert run("integrate", "gemini", cwd=workspace.root, env=env).returncode == 0
    assert settings.is_symlink() and len(sidecar_hooks(target)) == 6  # Notification too
    doctor = run("doctor", cwd=workspace.root, env=env)
    assert doctor.returncode in (0, 1) and b"gemini" in doctor.stdout.lower()
