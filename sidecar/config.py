"""The user's settings (`config.toml`) and registry of workspaces.

Every setting has a working default, so the file may be absent. Durations are seconds or
text such as `15m`, `24h`, `30d`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from sidecar import jsonfile, layout, locks
from sidecar.base import paths
from sidecar.base.errors import SidecarError
from sidecar.base.files import NotRegular
from sidecar.base.timeutil import parse_duration
from sidecar.envfile import EnvFile, read_env_file, read_settings_file
from sidecar.fleet.settings import FleetTableError
from sidecar.fleet.settings import parse_table as parse_fleet
from sidecar.followups.budget import Budget, BudgetError, parse_budget
from sidecar.hosts import registry
from sidecar.hosts.base import Option
from sidecar.telemetry.settings import OtelTableError, parse_table
from sidecar.web import settings as web_settings

# Each host's resume as shipped (`Host.resume`); `[resume]` in config.toml overrides it per host.
DEFAULT_RESUME: Mapping[str, tuple[str, ...]] = registry.default_resume()
# The hosts' resume options (`Host.options`: permission mode, sandbox...), by config.toml key.
HOST_OPTIONS = registry.options()


MAX_CONFIG_BYTES = 1024 * 1024


class ConfigError(SidecarError):
    """config.toml is unreadable or holds a bad value; the message says which."""


@dataclass(frozen=True)
class SettingsRead:
    """A running daemon's last read of config.toml and the environment file: when (wall
    clock), the files as it found them (`settings_files_now`), and why the read failed, if
    it did (the daemon then runs with the settings it had)."""

    at: float
    files: tuple[jsonfile.Signature | None, ...]
    error: str | None = None

    def report(self) -> dict[str, Any]:
        """As its instance file says it, for `doctor` and `reload`; `folder` says whose files."""
        return {"folder": str(layout.config_home()), "readAt": self.at, "error": self.error,
                "files": [None if s is None else list(s) for s in self.files]}


def settings_files_now() -> tuple[jsonfile.Signature | None, ...]:
    """config.toml's and the environment file's (inode, size, mtime) now, None where missing:
    a change to either, an edit in place or a file written anew, changes them."""
    found: list[jsonfile.Signature | None] = []
    for path in (layout.config_file(), layout.config_home() / "environment"):
        try:
            found.append(jsonfile.signature(path))
        except OSError:  # a folder that cannot be looked into: as good as missing
            found.append(None)
    return tuple(found)


@dataclass(frozen=True)
class Config:
    """The user's settings. Immutable: a reload makes a new one and swaps it in whole."""

    stale_after: float = 24 * 3600
    retention: float = 30 * 86400
    action_timeout: float = 15 * 60
    concurrency: int = 2
    sweep_interval: float = 60.0
    reconcile_interval: float | None = None  # None: by the kind of folder watch (ingest)
    heartbeat_interval: float = 60.0
    limit_backoff_scale: float = 1.0  # resume-after-limit's back-off and margin, scaled
    host_resume: bool = True  # a resume stands down while the host resumes the session itself
    # The environment file's variables (envfile.env_file()), given to every follow-up.
    agent_env: Mapping[str, str] = field(default_factory=dict)
    env_problems: tuple[str, ...] = ()  # the file's lines that could not be used, named
    plugin_timeout: float = 5.0
    stop_grace: float = 10.0  # accepted for old config files; SIGTERM no longer waits for actions
    resume: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: DEFAULT_RESUME)
    # The hosts' resume options by placeholder name (permission_mode = "acceptEdits", ...).
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType(registry.default_options()))
    # `[coordination] url`: the Redis every instance of a shared workspace coordinates through;
    # None: the file backend (locks on the workspace's own files), the default.
    coordination_url: str | None = None
    budget: Budget = field(default_factory=Budget)  # `[budget]`: what holds resumes back
    # `[otel]`, checked (telemetry/settings.py): where the daemon exports spans, with the
    # OTLP variables; read at start.
    otel: Mapping[str, Any] = field(default_factory=dict)
    # `[web]`, checked (web/settings.py): whether the daemon serves the web view, and where.
    web: Mapping[str, Any] = field(default_factory=dict)
    # `[fleet]`, checked (fleet/settings.py): the Redis this machine publishes its sessions to,
    # under which name, how often it says it is alive; read at start.
    fleet: Mapping[str, Any] = field(default_factory=dict)

    def option(self, key: str) -> str:
        """A host's resume option by its config.toml key (permissionMode)."""
        return self.options[HOST_OPTIONS[key].name]


_DURATIONS = {
    "staleAfter": "stale_after",
    "retention": "retention",
    "actionTimeout": "action_timeout",
    "sweepInterval": "sweep_interval",
    "reconcileInterval": "reconcile_interval",
    "heartbeatInterval": "heartbeat_interval",
    "pluginTimeout": "plugin_timeout",
    "stopGrace": "stop_grace",
}


def load_config(path: Path | None = None) -> Config:
    """Read config.toml; ConfigError names the key and what is wrong with it."""
    path = path or layout.config_file()
    try:
        data = tomllib.loads(read_settings_file(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError:
        data = {}
    except NotRegular as exc:
        raise ConfigError(f"{path} {exc}; it is never read") from None
    except (OSError, ValueError) as exc:  # not UTF-8, not TOML
        raise ConfigError(f"{path}: {exc}") from None
    config = parse_config(data, path, read_env_file(path.with_name("environment")))
    url = os.environ.get(COORDINATION_ENV)
    if url is not None:  # the variable wins over the file, and "" chooses the file backend
        config = replace(config, coordination_url=_coordination({"url": url}, Path(f"${COORDINATION_ENV}")))
    return config


# The tables whose own modules check them: key -> (Config field, parser, the error it raises).
_TABLES: Mapping[str, tuple[str, Callable[[Any], Any], type[Exception]]] = {
    "budget": ("budget", parse_budget, BudgetError),
    "otel": ("otel", lambda value: MappingProxyType(parse_table(value)), OtelTableError),
    "web": ("web", lambda value: MappingProxyType(web_settings.parse_table(value)),
            web_settings.WebTableError),
    "fleet": ("fleet", lambda value: MappingProxyType(parse_fleet(value)), FleetTableError),
}


def parse_config(data: Mapping[str, Any], path: Path, env: EnvFile) -> Config:
    """Settings from config.toml's table (`path` names it in errors) and the environment
    file; ConfigError names a bad key."""
    values: dict[str, Any] = {}
    options = registry.default_options()
    for key, value in data.items():
        if key in _DURATIONS:
            try:
                values[_DURATIONS[key]] = parse_duration(value)
            except ValueError as exc:
                raise ConfigError(f"{path}: {key}: {exc}") from None
        elif key == "concurrency":
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 64:
                raise ConfigError(f"{path}: concurrency must be a whole number from 1 to 64")
            values["concurrency"] = value
        elif key in _CHECKED:
            field_name, check = _CHECKED[key]
            values[field_name] = check(value, path)
        elif key == "resume":
            values["resume"] = _resume(value, path)
        elif key == "coordination":
            values["coordination_url"] = _coordination(value, path)
        elif key in _TABLES:
            field_name, parse, error = _TABLES[key]
            try:
                values[field_name] = parse(value)
            except error as exc:
                raise ConfigError(f"{path}: {exc}") from None
        elif key in HOST_OPTIONS:
            options[HOST_OPTIONS[key].name] = _choice(HOST_OPTIONS[key], value, path)
        else:
            raise ConfigError(f"{path}: unknown setting {key!r}")
    values["options"] = MappingProxyType(options)
    values["agent_env"] = MappingProxyType(dict(env.variables))
    values["env_problems"] = env.problems
    return Config(**values)


def _choice(option: Option, value: Any, path: Path) -> str:
    if value not in option.choices:
        raise ConfigError(f"{path}: {option.key} must be one of {', '.join(option.choices)}, not {value!r}")
    return str(value)


def _host_resume(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: hostResume must be true or false")
    return value


def _scale(value: Any, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1000:
        raise ConfigError(f"{path}: limitBackoffScale must be a number above 0 (1 is the "
                          f"documented back-off; 0.001 makes its minutes about seconds)")
    return float(value)


# The single values checked here: key -> (Config field, check).
_CHECKED: Mapping[str, tuple[str, Callable[[Any, Path], Any]]] = {
    "limitBackoffScale": ("limit_backoff_scale", _scale), "hostResume": ("host_resume", _host_resume)}

COORDINATION_ENV = "SIDECAR_COORDINATION_URL"
COORDINATION_SCHEMES = ("redis://", "rediss://", "unix://")


def _coordination(value: Any, path: Path) -> str | None:
    if not isinstance(value, dict) or set(value) - {"url"}:
        raise ConfigError(f"{path}: [coordination] takes one key, url = \"redis://host:6379/0\"")
    url = value.get("url")
    if url is None or url == "":
        return None
    if not isinstance(url, str) or not url.startswith(COORDINATION_SCHEMES):
        raise ConfigError(f"{path}: coordination.url must start with {', '.join(COORDINATION_SCHEMES)}")
    return url


def _resume(value: Any, path: Path) -> Mapping[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [resume] must be a table of host = [argv...]")
    resume = dict(DEFAULT_RESUME)
    for host, argv in value.items():
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise ConfigError(f"{path}: resume.{host} must be a non-empty list of strings")
        resume[host] = tuple(argv)
    return MappingProxyType(resume)


class RegistryError(SidecarError):
    """workspaces.json cannot be read: the message says why, and that it is left as it is."""


def last_good_registry() -> Path:
    """A copy of what sidecar last wrote to the registry, to restore it by hand from."""
    return layout.registry_file().with_name("workspaces.last-good.json")


def load_registry() -> list[Path]:
    """The registered workspace roots, in registration order (none if there is no registry);
    RegistryError if it cannot be read: nothing may then act as if it were empty."""
    try:
        data = paths.read_registry()
        return [] if data is None else [Path(root) for root in paths.registry_roots(
            orjson.loads(data.removeprefix(b"\xef\xbb\xbf")))]
    except (OSError, ValueError) as exc:
        raise RegistryError(_unreadable(layout.registry_file(), str(exc))) from None


def _unreadable(path: Path, why: str) -> str:
    backup = last_good_registry()
    restore = f"; the last good copy is {backup}" if backup.is_file() else ""
    return f"the registry {path} cannot be read ({why}); left as it is{restore}"


def _write_registry(roots: list[str]) -> None:
    """Replace the registry, and keep the same copy beside it as the last good one."""
    jsonfile.write_json_atomic(layout.registry_file(), {"workspaces": roots})
    jsonfile.write_json_atomic(last_good_registry(), {"workspaces": roots})


def register(root: Path) -> bool:
    """Add `root` to the registry; False when it was there already. RegistryError, and
    nothing written, if the registry cannot be read."""
    home = layout.config_home()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locks.locked(home / "workspaces.lock"):
        roots = [str(p) for p in load_registry()]
        if str(root) in roots:
            return False
        roots.append(str(root))
        _write_registry(roots)
    return True


def unregister(root: Path) -> bool:
    """Take `root` off the registry; False when it was not there. RegistryError, and
    nothing written, if the registry cannot be read."""
    home = layout.config_home()
    if not layout.registry_file().exists():
        return False
    with locks.locked(home / "workspaces.lock"):
        roots = [str(p) for p in load_registry()]
        if str(root) not in roots:
            return False
        roots.remove(str(root))
        _write_registry(roots)
    return True
