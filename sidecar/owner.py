"""Whose workspace it is, and acting as them: a daemon never has more rights than the owner.

A workspace belongs to the owner of its root folder. When the daemon's user is someone else
(root serving a user), every action for that workspace runs as the owner: their uid, gid and
supplementary groups, and a clean environment with their HOME, holding only their own
sidecar environment file. Their settings (trust, `config.toml`) are read from their own
config folder (`~/.config/sidecar`, their home from the password database), and only files
that belong to them are read there, so a link in their home cannot make root read its own.
A daemon that is not root cannot switch users, and says so instead of acting.
"""

from __future__ import annotations

import os
import pwd
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sidecar import layout
from sidecar.base import files
from sidecar.base.errors import SidecarError
from sidecar.config import Config, ConfigError, parse_config
from sidecar.envfile import EnvFile, parse_env
from sidecar.hosts import transcripts
from sidecar.layout import Workspace

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"  # an owner's PATH when the daemon's is not theirs
MAX_OWNED_BYTES = 1024 * 1024


class CannotActAsOwner(SidecarError):
    """The workspace's owner is not the daemon's user, and the daemon cannot become them."""


@dataclass(frozen=True)
class Account:
    """The user an action runs as."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    name: str
    home: str
    shell: str


def owner_uid(ws: Workspace) -> int:
    """Who controls the workspace: the owner of its root folder, found by walking its path
    from `/` without following a link. A folder on the way that someone else could rename or
    replace (owned by another user, or writable by others without the sticky bit) decides
    instead, so a workspace is taken for root's only if every folder leading to it is root's.
    CannotActAsOwner where the path holds a link or two users could change it."""
    path = Path(os.path.abspath(ws.root))
    controller: int | None = None
    shown = Path("/")
    for part in ("/", *path.parts[1:]):
        shown = shown / part if part != "/" else shown
        st = os.lstat(shown)
        if stat.S_ISLNK(st.st_mode):
            raise CannotActAsOwner(f"{shown} is a symlink; a workspace is acted for only "
                                   "through real folders (nothing was run)")
        uid = st.st_uid
        if st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX and shown != path:
            raise CannotActAsOwner(f"{shown} may be changed by anyone; nothing was run")
        if uid == 0:
            continue
        if controller is not None and controller != uid:
            raise CannotActAsOwner(f"{shown} belongs to uid {uid}, inside a folder of uid "
                                   f"{controller}, who could replace it; nothing was run")
        controller = uid
    return 0 if controller is None else controller


def foreign_owner(ws: Workspace) -> Account | None:
    """The owner to act as, or None where the daemon's user owns the workspace.
    CannotActAsOwner where it is someone else and this process is not root."""
    uid = owner_uid(ws)
    if uid == os.geteuid():
        return None
    if os.geteuid() != 0:
        raise CannotActAsOwner(
            f"{ws.root} belongs to uid {uid}, and this sidecar runs as uid {os.geteuid()}, "
            "which cannot act as its owner; nothing was run (serve it as its owner)")
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        raise CannotActAsOwner(f"{ws.root} belongs to uid {uid}, which has no account here; "
                               "nothing was run") from None
    groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return Account(uid, entry.pw_gid, groups, entry.pw_name, entry.pw_dir, entry.pw_shell)


def runs_as(ws: Workspace) -> int:
    """The uid this process's actions for `ws` run as: the owner's where it is root."""
    return owner_uid(ws) if os.geteuid() == 0 else os.geteuid()


def config_home_of(uid: int) -> Path:
    """A user's sidecar folder: this process's own (which honours SIDECAR_CONFIG_HOME and
    XDG_CONFIG_HOME) for its own user, else `~/.config/sidecar` of that user's home."""
    if uid == os.geteuid():
        return layout.config_home()
    try:
        home = pwd.getpwuid(uid).pw_dir
    except KeyError:
        return Path("/nonexistent")
    return Path(home) / ".config" / "sidecar"


def read_owned(path: Path, uid: int) -> bytes | None:
    """A regular file's bytes read for `uid`; None if it is missing or fails the tests.

    For this process's own user, its own file (which may be a dotfiles link). For another
    user, from their home down every folder and the file itself are opened without following
    a link and must belong to them, and nobody else may write the file: a link in their home
    can never make root read its own files. Only a regular file is ever opened
    (transcripts.open_regular): a FIFO or device in its place is not."""
    if uid == os.geteuid():
        try:
            fd = transcripts.open_regular(str(path))
        except transcripts.Unreadable:
            return None
        return files.read_owned(fd, uid, MAX_OWNED_BYTES)
    try:
        home = Path(pwd.getpwuid(uid).pw_dir)
        names = path.relative_to(home).parts
    except (KeyError, ValueError):
        return None
    try:
        folder = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for name in names[:-1]:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            os.close(folder)
            folder = child
            if os.fstat(folder).st_uid != uid:
                return None
        fd = transcripts.open_regular(names[-1], follow=False, dir_fd=folder)
    except (OSError, transcripts.Unreadable):
        return None
    finally:
        os.close(folder)
    return files.read_owned(fd, uid, MAX_OWNED_BYTES)


def read_system(path: Path) -> bytes | None:
    """A system-wide file outside every home (a host's managed settings): only a regular file
    of root's that nobody else may write (None otherwise, or if it is missing)."""
    try:
        fd = transcripts.open_regular(str(path))
    except transcripts.Unreadable:
        return None
    return files.read_owned(fd, 0, MAX_OWNED_BYTES)


def owner_config(account: Account) -> Config:
    """The owner's own settings (`config.toml` and `environment` in their sidecar folder),
    read only where the files are theirs: what their actions resume with, and the variables
    they get. Absent files give the defaults; ConfigError names a bad one."""
    folder = config_home_of(account.uid)
    path = folder / "config.toml"
    data = read_owned(path, account.uid)
    try:
        table = tomllib.loads(data.decode("utf-8", "replace")) if data else {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    env_path = folder / "environment"
    env = read_owned(env_path, account.uid)
    if env is not None:
        return parse_config(table, path, parse_env(env, env_path))
    refused = (f"{env_path} is not a regular file that only {account.name} can write; no "
               "variable was read from it",) if os.path.lexists(env_path) else ()
    return parse_config(table, path, EnvFile(problems=refused))


def owner_environment(account: Account, own_file: dict[str, str]) -> dict[str, str]:
    """A clean environment for an action run as `account`: who they are, a PATH, the
    locale, then their own sidecar environment file (`own_file`, already read)."""
    env = {"HOME": account.home, "USER": account.name, "LOGNAME": account.name,
           "SHELL": account.shell or "/bin/sh", "PATH": SAFE_PATH}
    for key in ("LANG", "LC_ALL", "TZ"):
        if key in os.environ:
            env[key] = os.environ[key]
    return {**env, **own_file}
