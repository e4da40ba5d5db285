"""The environment follow-ups run with, and what of it each running instance reports.

A follow-up gets the daemon's own environment with the environment file over it, or, where a
root daemon acts for another user, that user's clean one (owner.py). `doctor`, run from a
shell, can see neither, and a `sidecar run` started by hand has whatever environment its
starter had: so each instance reports in its instance file the PATH its follow-ups get, the
user they run as, which of the variables hosts read are set (names only, never a value), the
environment file's lines it could not use, the executable each host's resume command resolves
to there (or that it resolves to none), and its last read of its settings files. `doctor`
checks that, not its own shell nor the files; the report is made again as soon as the settings
are read again (daemon/settings.py).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar import envfile, owner
from sidecar.base.errors import SidecarError
from sidecar.config import Config, ConfigError, SettingsRead
from sidecar.coordination import instances
from sidecar.hosts import registry
from sidecar.layout import Workspace

REFRESH = 30.0  # seconds: an owner's files, read where a root daemon serves them, may change

Json = dict[str, Any]


def follow_up_base(account: owner.Account | None, config: Config) -> dict[str, str]:
    """The environment a follow-up starts from, before its own SIDECAR_* variables."""
    if account is None:
        return {**os.environ, **config.agent_env}
    return owner.owner_environment(account, dict(config.agent_env))


def report(ws: Workspace, config: Config, read: SettingsRead | None = None) -> Json:
    """What `doctor` needs to know of the environment `ws`'s follow-ups get from here, and
    (`read`) of this daemon's last read of its settings files."""
    said: Json = {} if read is None else {"settings": read.report()}
    try:
        account = owner.foreign_owner(ws)
        settings = config if account is None else owner.owner_config(account)
    except (owner.CannotActAsOwner, ConfigError, OSError) as exc:  # OSError: a folder gone
        return {**said, "error": str(exc)}
    env = follow_up_base(account, settings)
    wanted = registry.key_variables() | set(_needed(account, env))
    return {"user": account.name if account is not None else _own_name(), "path": env.get("PATH", ""),
            "variables": sorted(name for name in wanted if name in env),
            "envFileProblems": list(settings.env_problems),
            "resume": _resolved(settings, env.get("PATH", os.defpath)), **said}


def _resolved(settings: Config, path: str) -> Json:
    """Each host's resume executable, as its follow-up would find it (None: it would not)."""
    return {host: {"command": argv[0], "path": shutil.which(argv[0], path=path)}
            for host, argv in settings.resume.items()}


def _needed(account: owner.Account | None, env: dict[str, str]) -> list[str]:
    """The variables the hosts' own settings say a follow-up needs, read as the user it runs
    as (as root for another user, only from files that are theirs, never through a link)."""
    home = Path(env.get("HOME", "/nonexistent"))

    def read(path: Path) -> bytes | None:
        return envfile.read_or_none(path) if account is None else owner.read_owned(path, account.uid)

    return [name for host in registry.hosts() for name in host.needed_variables(env, home, read)]


def _own_name() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


class Reporter:
    """`report`, made again when the settings are read again (well or not) or REFRESH
    seconds have passed."""

    def __init__(self, ws: Workspace, config: Callable[[], Config],
                 read: Callable[[], SettingsRead | None] = lambda: None) -> None:
        self.ws = ws
        self.config = config
        self.read = read
        self.made_for: tuple[Config, SettingsRead | None] | None = None
        self.made_at = 0.0
        self.last: Json = {}

    def current(self) -> Json:
        config, read = self.config(), self.read()
        at = time.monotonic()
        if self.made_for is None or config is not self.made_for[0] or read is not self.made_for[1] \
                or at >= self.made_at + REFRESH:
            self.last = report(self.ws, config, read)
            self.made_for, self.made_at = (config, read), at
        return self.last


@dataclass(frozen=True)
class Reported:
    """A live instance's report, as `doctor` checks it."""

    pid: int | None
    env: dict[str, str]  # PATH, and each host variable set (blank: only names are reported)
    problems: tuple[str, ...]  # the environment file's lines it could not use
    error: str | None  # why it cannot run follow-ups for the workspace at all
    # Each host's resume command and the executable it resolves to there (None: none); None
    # from a daemon of an earlier version, which did not report it.
    resume: dict[str, tuple[str, str | None]] | None = None
    settings: Json | None = None  # its last read of its settings (SettingsRead.report)
    here: bool = True  # it runs on this machine


def reported(ws: Workspace) -> Reported | None:
    """What the live instance serving `ws` reports (its leader's, which runs the follow-ups);
    None where no live instance reports it (none runs, or one from before reports began)."""
    try:
        seen = [s.info for s in instances.seen(ws) if s.live and s.info.environment is not None]
    except (OSError, ValueError, SidecarError):  # Unreachable: who lives cannot be told now
        return None
    if not seen:
        return None
    info = min(seen, key=lambda i: i.role != "leader")
    data = info.environment or {}
    variables = dict.fromkeys(_texts(data.get("variables")), "")
    path = data.get("path")
    error = data.get("error")
    settings = data.get("settings")
    return Reported(info.pid, {"PATH": path if isinstance(path, str) else "", **variables},
                    tuple(_texts(data.get("envFileProblems"))),
                    error if isinstance(error, str) else None, _resume_of(data.get("resume")),
                    settings if isinstance(settings, dict) else None,
                    info.hostname == socket.gethostname())


def _resume_of(value: Any) -> dict[str, tuple[str, str | None]] | None:
    if not isinstance(value, dict):
        return None
    found: dict[str, tuple[str, str | None]] = {}
    for host, said in value.items():
        if isinstance(said, dict) and isinstance(said.get("command"), str):
            path = said.get("path")
            found[host] = (said["command"], path if isinstance(path, str) else None)
    return found


def _texts(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
