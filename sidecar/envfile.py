"""sidecar's environment file (`environment` in its config folder): the variables every
follow-up gets, read by the daemon with config.toml and by doctor; and the careful read of a
settings file both go through.

A bad line of the environment file is skipped and named, never the whole file lost; only a
regular file is read (a FIFO would hang the daemon and doctor). Only the standard library:
the daemon's configuration is read without any of the integration code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sidecar import layout
from sidecar.base.files import NotRegular, read_capped

ENV_LINE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")


def env_file() -> Path:
    return layout.config_home() / "environment"


MAX_ENV_BYTES = 1024 * 1024  # far above any real environment file


@dataclass(frozen=True)
class EnvFile:
    """An environment file's variables, and what in it could not be used (each a line that
    names the file and the line): one bad line never costs the others."""

    variables: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


def read_settings_file(path: Path, limit: int = MAX_ENV_BYTES) -> bytes:
    """A settings file's bytes (the environment file, config.toml), opened without blocking
    and read only if it is a regular file: a FIFO there would hang whoever reads it.
    FileNotFoundError if it is missing, NotRegular (saying why, after the path) if it is not
    a regular file or larger than `limit`, OSError if it cannot be read."""
    return read_capped(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), limit)


def read_env_file(path: Path | None = None) -> EnvFile:
    """`KEY=value` lines (systemd's EnvironmentFile syntax: `#` comments, optional quotes
    and `export`); a missing file is empty, one that cannot be read gives no variable and
    says why."""
    path = path or env_file()
    try:
        data = read_settings_file(path)
    except FileNotFoundError:
        return EnvFile()
    except NotRegular as exc:
        return EnvFile(problems=(f"{path} {exc}; no variable was read from it",))
    except OSError as exc:
        return EnvFile(problems=(f"{path} cannot be read ({exc.strerror}); no variable was read from it",))
    return parse_env(data, path)


def parse_env(data: bytes, path: Path) -> EnvFile:
    """The variables of an environment file's bytes; each line that is not UTF-8 or not
    `KEY=value` is skipped and named (`path` in the message)."""
    found: dict[str, str] = {}
    problems: list[str] = []
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{path}: line {number} is not UTF-8 text; skipped")
            continue
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        match = ENV_LINE.fullmatch(line)
        if not match:
            problems.append(f"{path}: line {number} is not KEY=value; skipped")
            continue
        value = match.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found[match.group(1)] = value
    return EnvFile(found, tuple(problems))


def read_or_none(path: Path) -> bytes | None:
    """A host's small settings file, as this user reads it; None if missing or unusable."""
    try:
        return read_settings_file(path)
    except (OSError, ValueError):
        return None
