"""The agent's environment: what a follow-up needs to find and run a host under the service.

A service does not start from the user's shell, so a `claude` installed in `~/.local/bin` or
under nvm is not on its PATH, and a key exported in a shell profile is not in its environment.
Three things close the gap:

- `sidecar integrate <host>` records the absolute path of the host's executable (as the
  user's PATH finds it) in `[resume]` of config.toml, edited with tomlkit (comments and
  layout stay); an entry the user wrote is left alone.
- `sidecar service install` writes the installing shell's PATH into the unit (or LaunchAgent)
  and points the unit at `environment` in sidecar's config folder, which the daemon also
  reads itself for every action (launchd has no environment files): the place for the keys
  a host reads from the environment.
- `doctor` checks, for every integrated host, that its resume command resolves in that
  environment, and names each variable the host needs that it lacks. Where a daemon runs,
  that environment is the one it reports (followups/run/environment.py), whoever started it.

The environment file itself is read by envfile.py (the daemon reads it with config.toml).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit

from sidecar import layout
from sidecar.envfile import env_file, read_env_file, read_or_none
from sidecar.hosts import registry
from sidecar.hosts.base import Host
from sidecar.hosts.files import owned
from sidecar.hosts.files.settings import save_toml

RESUME_PLACE = "resume"  # where `owned` remembers the executables sidecar recorded


def record_executable(agent: Host, uninstall: bool = False) -> str | None:
    """Write the host's executable, by absolute path, into `[resume]` of config.toml (or take
    it back out on uninstall); returns what it did, or None where it did nothing."""
    host, name, default = agent.name, agent.executable, agent.resume
    if name is None or not default:
        return None
    path = layout.config_file()
    doc = _load(path)
    resume = doc.get("resume")
    current = list(resume[host]) if resume is not None and host in resume else None
    ours = owned.read(host, RESUME_PLACE)
    mine = ours.get("argv")
    if uninstall:
        owned.change(host, RESUME_PLACE, lambda record: record.clear())
        if current is None or current != mine:
            return None  # not sidecar's (or changed since): the user's
        _take_out(path, doc, host, bool(ours.get("table")))
        return f"removed the resume command sidecar recorded for {host} from {path}"
    if current is not None and current != mine and current[0] != name:
        return None  # the user's own command: left as written
    found = shutil.which(name)
    if found is None:
        return None  # not installed here: the default (by name) stays
    argv = [str(Path(found).absolute()), *(current[1:] if current else default[1:])]
    if argv == current:
        return None
    created = resume is None
    if resume is None:
        resume = tomlkit.table()
        doc["resume"] = resume
    resume[host] = argv
    save_toml(path, doc)
    owned.change(host, RESUME_PLACE,
                 lambda record: record.update(argv=argv, table=created or record.get("table")))
    return f"resume runs {argv[0]} (recorded in {path})"


def _take_out(path: Path, doc: Any, host: str, table_was_ours: bool) -> None:
    """Remove the host's entry (and `[resume]` if sidecar added it and it is now empty)."""
    resume = doc["resume"]
    del resume[host]
    if not resume:
        del doc["resume"]
    save_toml(path, doc, tidy_end=not resume and table_was_ours)


def _load(path: Path) -> Any:
    try:
        return tomlkit.parse(path.read_text())
    except FileNotFoundError:
        return tomlkit.document()


def needed(agent: Host, env: Mapping[str, str], home: Path) -> tuple[str, ...]:
    """The variables the host's own settings say it needs, read as this user."""
    return agent.needed_variables(env, home, read_or_none)


def unit_environment(unit_text: str) -> dict[str, str]:
    """The `Environment=` values a systemd unit sets (PATH among them)."""
    found: dict[str, str] = {}
    for line in unit_text.splitlines():
        if not line.startswith("Environment="):
            continue
        value = line.split("=", 1)[1].strip()
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        key, _, rest = value.partition("=")
        found[key] = rest
    return found


def resolve(argv0: str, path_value: str) -> str | None:
    """Where the service would find `argv0`: itself if absolute (and executable), else the
    first match on `path_value`."""
    if os.path.isabs(argv0):
        return argv0 if os.access(argv0, os.X_OK) else None
    return shutil.which(argv0, path=path_value)


SERVICE = "the service's environment"


def problems(host: str, command: str, resolved: str | None, service_env: Mapping[str, str],
             shell_env: Mapping[str, str], needed: tuple[str, ...] = (), where: str = SERVICE,
             reload: str = "") -> list[str]:
    """What stops `host`'s resume in the environment follow-ups get (`service_env`, named
    `where`): its executable `command` if it resolves to none there (`resolved`), each
    variable the host needs (`needed`) or the user's shell has that it lacks. `reload` says
    how to make a running daemon read the environment file again, for a variable the file
    has and the daemon does not."""
    found: list[str] = []
    path_value = service_env.get("PATH", "")
    if resolved is None:
        on = "the service's PATH" if where == SERVICE else f"the PATH of {where}"
        why = "does not exist or is not executable" if os.path.isabs(command) else \
            f"is not on {on} ({path_value or 'empty'})"
        found.append(f"{host}: the resume command's {command!r} {why}; run `sidecar integrate "
                     f"{host}` to record it by absolute path, or set [resume] in config.toml")
    in_file = read_env_file().variables if reload else {}
    lacking = [(name, "is missing from") for name in needed if name not in service_env]
    lacking += [(name, "is set in your shell but missing from")
                for name in _key_variables(host)
                if name in shell_env and name not in service_env and name not in needed]
    for name, how in lacking:
        if name in in_file:
            found.append(f"{host}: {name} is in {env_file()} but not in {where}, which read "
                         f"the file before; {reload}")
        else:
            found.append(f"{host}: {name} {how} {where}; add `{name}=...` to {env_file()}")
    return found


def _key_variables(host: str) -> tuple[str, ...]:
    """Variables `host` reads its credentials or endpoint from: flagged when the user's shell
    has one and the service's environment lacks it (a login may keep a key elsewhere)."""
    known = registry.find(host)
    return known.key_variables if known is not None else ()
