"""A user's own settings files: sidecar's hooks in them, dotfiles with a given mode; shared by
tests/unit/test_user_files.py, the status line tests and tests/daemon/test_user_files_daemon.py."""

from __future__ import annotations

from pathlib import Path

from helpers import SIDECAR, invoke
from sidecar.hosts.files import settings as settings_mod


def sidecar_hooks(path: Path, comments: bool = False) -> list[str]:
    settings = settings_mod.load_json(path, comments)
    return [event for event, groups in settings.get("hooks", {}).items()
            for group in groups for h in group["hooks"] if settings_mod.is_ours(h)]


def dotfile(tmp_path: Path, name: str, content: str, mode: int) -> Path:
    """A file kept in a dotfiles folder, as stow leaves it: the host's path is a link to it."""
    target = tmp_path / "dotfiles" / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(content)
    target.chmod(mode)
    return target


def user_env(tmp_path: Path) -> dict[str, str]:
    """A user of their own: an empty HOME, no XDG_CONFIG_HOME, this checkout's sidecar on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "XDG_CONFIG_HOME": "", "CODEX_HOME": str(home / ".codex"),
            "PATH": f"{Path(SIDECAR).parent}:/usr/bin:/bin"}


def run(*args: str, cwd: Path, env: dict[str, str]):
    """`sidecar ARGS` as that user, in `cwd`: whatever it says, never a traceback."""
    result = invoke(*args, cwd=cwd, env=env)
    assert b"Traceback" not in result.stderr, result.stderr.decode()
    return result
