"""Every path sidecar uses, in one place: a workspace's files and the user's own."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CONFIG_ENV = "SIDECAR_CONFIG_HOME"  # overrides the user's config folder (tests use it)


@dataclass(frozen=True)
class Workspace:
    """A folder with a `.context/`; sidecar owns `.context/runtime/`."""

    root: Path

    @property
    def context(self) -> Path:
        return self.root / ".context"

    @property
    def runtime(self) -> Path:
        return self.context / "runtime"

    @property
    def inbox(self) -> Path:
        return self.runtime / "inbox"

    @property
    def rejected(self) -> Path:
        return self.inbox / "rejected"

    @property
    def hooks_file(self) -> Path:
        return self.runtime / "hooks.json"

    @property
    def bindings_file(self) -> Path:
        return self.runtime / "hooks" / "host-sessions.json"

    @property
    def sessions(self) -> Path:
        return self.runtime / "sessions"

    @property
    def prompts(self) -> Path:
        return self.context / "hooks"

    @property
    def locks(self) -> Path:
        return self.runtime / "locks"

    @property
    def instances(self) -> Path:
        return self.runtime / "instances"

    @property
    def logs(self) -> Path:
        return self.runtime / "logs"

    def lock(self, name: str) -> Path:
        return self.locks / f"{name}.lock"

    def session_dir(self, harness_id: str) -> Path:
        return self.sessions / harness_id

    def private_dirs(self) -> list[Path]:
        """The runtime folders, created 0700 by `init` and by the daemon."""
        return [
            self.runtime,
            self.inbox,
            self.rejected,
            self.bindings_file.parent,
            self.sessions,
            self.locks,
            self.instances,
            self.logs,
        ]

    def is_initialised(self) -> bool:
        return self.runtime.is_dir()

    def ensure_runtime(self) -> None:
        for folder in self.private_dirs():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
        ignore = self.runtime / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")


def find_workspace(start: Path) -> Workspace | None:
    """The nearest workspace at or above `start`."""
    path = start.resolve()
    for folder in (path, *path.parents):
        if (folder / ".context").is_dir():
            return Workspace(folder)
    return None


def config_home() -> Path:
    """The user's sidecar folder: $SIDECAR_CONFIG_HOME, else $XDG_CONFIG_HOME/sidecar."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg) / "sidecar"


def registry_file() -> Path:
    return config_home() / "workspaces.json"


def config_file() -> Path:
    return config_home() / "config.toml"
