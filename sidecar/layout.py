"""Every path sidecar uses, in one place: a workspace's files and the user's own."""

from __future__ import annotations

import errno
import os
import pwd
import re
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from sidecar import safedir
from sidecar.base import paths
from sidecar.base.errors import SidecarError

PLAIN_NAME = re.compile(r"[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,127}")
LOG_NAME = re.compile(r"[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,199}\.log")
HOOK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")  # a hook id (followups/model.py)


class TamperedRuntime(SidecarError):
    """`.context/runtime` holds a symlink or a file where a folder belongs."""


class UnconfinedName(SidecarError, ValueError):
    """A name that would lead out of its folder (a path, `..`), refused."""


def confined(name: str) -> str:
    """`name` if it is one plain file name (no separator, not `.` or `..`, no leading dot)."""
    if not PLAIN_NAME.fullmatch(name):
        raise UnconfinedName(f"{name[:80]!r} is not a plain name; refused")
    return name


@dataclass(frozen=True)
class Workspace:
    """A folder with a `.context/`; sidecar owns `.context/runtime/`. Its paths are made once
    (a daemon serving a thousand workspaces would otherwise spend its start building them)."""

    root: Path

    @cached_property
    def context(self) -> Path:
        return self.root / ".context"

    @cached_property
    def runtime(self) -> Path:
        return self.context / "runtime"

    @cached_property
    def inbox(self) -> Path:
        return self.runtime / "inbox"

    @cached_property
    def rejected(self) -> Path:
        return self.inbox / "rejected"

    @cached_property
    def hooks_file(self) -> Path:
        return self.runtime / "hooks.json"

    @cached_property
    def identity_file(self) -> Path:
        """The workspace's random id (followups/trust.py): what a clone at its path lacks."""
        return self.runtime / "workspace-id"

    @cached_property
    def bindings_file(self) -> Path:
        return self.runtime / "hooks" / "host-sessions.json"

    @cached_property
    def sessions(self) -> Path:
        return self.runtime / "sessions"

    @cached_property
    def prompts(self) -> Path:
        return self.context / "hooks"

    @cached_property
    def locks(self) -> Path:
        return self.runtime / "locks"

    @cached_property
    def instances(self) -> Path:
        return self.runtime / "instances"

    @cached_property
    def logs(self) -> Path:
        return self.runtime / "logs"

    def firing_log(self, hook_id: str, name: str) -> Path | None:
        """A firing's log: always in `logs/hooks/<hook>/`; of a path read from hooks.json only
        its last part counts, and only if it is a plain `*.log` name (None otherwise)."""
        name = Path(name).name
        if not LOG_NAME.fullmatch(name) or not HOOK_NAME.fullmatch(hook_id):
            return None
        return self.logs / "hooks" / hook_id / name

    def lock(self, name: str) -> Path:
        return self.locks / f"{name}.lock"

    def session_dir(self, harness_id: str) -> Path:
        """A session's folder; an id that is not one plain name (a hand-edited binding) is
        refused, so no derived path leaves `sessions/`."""
        return self.sessions / confined(harness_id)

    def private_dirs(self) -> list[Path]:
        """The runtime folders, created 0700 by `init` and by the daemon."""
        return [
            self.runtime, self.inbox, self.rejected, self.bindings_file.parent, self.sessions, self.locks,
            self.instances, self.logs,
        ]

    def is_initialised(self) -> bool:
        return self.runtime.is_dir()

    def ensure_runtime(self) -> None:
        """Create the runtime folders that are missing (private: 0700). A folder that exists is
        left as it is (sidecar never changes the mode of what it did not create), and one that
        is a symlink or not a folder at all is refused (TamperedRuntime: see `check_runtime`);
        every folder is made and opened without following a link (see safedir)."""
        self.check_runtime()
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            for folder in self.private_dirs():
                safedir.make_dirs(folder)
            fd = safedir.open_file(self.runtime / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self.check_runtime()  # names the folder
            raise
        with open(fd, "wb") as ignore:
            ignore.write(b"*\n")

    def check_runtime(self) -> None:
        """Refuse a runtime whose folders are symlinks or not folders: sidecar would write (or
        change modes) wherever they point. Raises TamperedRuntime, saying which."""
        for folder in [self.context, *self.private_dirs()]:
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                raise TamperedRuntime(f"{folder} is a symlink; sidecar never writes through one. "
                                      "Replace it with a folder to serve this workspace again")
            if not stat.S_ISDIR(st.st_mode):
                raise TamperedRuntime(f"{folder} is not a folder; remove it to serve this workspace again")


def find_workspace(start: Path) -> Workspace | None:
    """The nearest workspace at or above `start`, its links resolved."""
    found = paths.find_workspace(str(start.resolve()))
    return None if found is None else Workspace(Path(found))


def config_home() -> Path:
    """The user's sidecar folder: $SIDECAR_CONFIG_HOME, else $XDG_CONFIG_HOME/sidecar."""
    return Path(paths.config_home())


def registry_file() -> Path:
    return Path(paths.registry_file())


def config_file() -> Path:
    return config_home() / "config.toml"


def state_home() -> Path:
    """Where sidecar keeps what it writes for the user (the daemon's log):
    $XDG_STATE_HOME/sidecar, else ~/.local/state/sidecar, if that is this process's user's
    (see `is_mine`). Root started with a user's environment (`sudo -E`) would otherwise make a
    root-owned log in the user's home that their own daemon could never write again: it gets
    the folder in its own home, from the password database, instead."""
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    given = Path(xdg) / "sidecar"
    if is_mine(given):
        return given
    try:
        home = pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        return given  # no home of its own: the log file refuses the folder itself (logfile.py)
    return Path(home) / ".local" / "state" / "sidecar"


def is_mine(folder: Path) -> bool:
    """Whether `folder` is this process's user's to write, made as needed: the last folder on
    its path that belongs to someone other than root belongs to this user, or, where a part
    is still to be made, no such folder lies above it. For root that means every folder on
    the path is root's: nothing root writes lands in a user's tree."""
    me = os.geteuid()
    controller = 0  # the last non-root owner on the path, as owner.owner_uid walks it
    real = Path(os.path.realpath(folder))
    for part in (*reversed(real.parents), real):
        try:
            uid = os.lstat(part).st_uid
        except FileNotFoundError:
            return controller in (0, me)  # the rest is made by this user
        except OSError:
            return False
        if uid != 0:
            controller = uid
    return controller == me


def daemon_log() -> Path:
    """The daemon's own log (rotated beside it as daemon.log.1, .2...: daemon/logfile.py)."""
    return state_home() / "daemon.log"
