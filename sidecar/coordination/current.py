"""Which backend this process coordinates through: chosen once, from the configuration.

The daemon chooses at its start (`use`); a command (`hooks add`, `top`'s cancel, `status`)
takes what config.toml or `SIDECAR_COORDINATION_URL` names the first time it needs a lock
(`get`). A change of the URL takes a restart of the daemon: two instances of one workspace
that coordinate through different backends would not see each other's locks, so it is not
swapped under a running daemon.
"""

from __future__ import annotations

import os
import threading

from sidecar.base.errors import SidecarError
from sidecar.coordination.base import Coordination
from sidecar.coordination.files import FileCoordination

_lock = threading.Lock()
_current: Coordination | None = None


class MissingExtra(SidecarError):
    """A Redis URL is configured but redis-py is not installed."""


def for_url(url: str | None) -> Coordination:
    """The backend a URL names; the file backend for None."""
    if url is None:
        return FileCoordination()
    try:
        from sidecar.coordination.redis.backend import RedisCoordination
    except ImportError as exc:
        raise MissingExtra(
            f"[coordination] url needs the redis extra ({exc.name} is missing): "
            "pipx install 'agent-sidecar[redis]' (or pip install 'agent-sidecar[redis]')") from None
    return RedisCoordination(url)


def use(backend: Coordination) -> None:
    global _current
    with _lock:
        if _current is not None and _current is not backend:
            _current.close()
        _current = backend


def get() -> Coordination:
    """This process's backend; the configured one, chosen at the first call."""
    global _current
    with _lock:
        if _current is None:
            _current = for_url(_configured_url())
        return _current


def _configured_url() -> str | None:
    """The configured URL. A config.toml that cannot be read names none (its error is said
    by whatever reads the rest of it), unless SIDECAR_COORDINATION_URL does."""
    from sidecar import config

    try:
        return config.load_config().coordination_url
    except config.ConfigError:
        url = os.environ.get(config.COORDINATION_ENV)
        return url or None


def reset() -> None:
    """Forget the backend (tests, which change the configuration between cases)."""
    global _current
    with _lock:
        if _current is not None:
            _current.close()
        _current = None
