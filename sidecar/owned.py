"""What sidecar owns inside other programs' files, remembered in sidecar's own folder.

An integration changes a host's configuration (a key it set, a file it created). Whether a
value there is sidecar's cannot be told from the value itself (`hooks = true` may be the
user's), so it is written down here, in `$XDG_CONFIG_HOME/sidecar/integrations.json`, and an
uninstall removes exactly what this file says sidecar added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from . import jsonfile, layout, locks

T = TypeVar("T")
Json = dict[str, Any]


def _file() -> Any:
    return layout.config_home() / "integrations.json"


def change(host: str, place: str, edit: Callable[[Json], T]) -> T:
    """Run `edit` on what sidecar owns for `host` at `place` (a folder or file), and save it."""
    home = layout.config_home()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locks.locked(home / "integrations.lock"):
        try:
            data = jsonfile.read_json(_file())
        except (FileNotFoundError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        per_host = data.setdefault(host, {})
        record = per_host.setdefault(place, {})
        result = edit(record)
        if not record:
            del per_host[place]
        if not per_host:
            del data[host]
        jsonfile.write_json_atomic(_file(), data)
        return result


def read(host: str, place: str) -> Json:
    try:
        data = jsonfile.read_json(_file())
    except (FileNotFoundError, ValueError):
        return {}
    record = data.get(host, {}).get(place, {}) if isinstance(data, dict) else {}
    return record if isinstance(record, dict) else {}


def places(host: str) -> list[str]:
    """Every place sidecar integrated `host` (for `sidecar uninstall`)."""
    try:
        data = jsonfile.read_json(_file())
    except (FileNotFoundError, ValueError):
        return []
    per_host = data.get(host, {}) if isinstance(data, dict) else {}
    return list(per_host) if isinstance(per_host, dict) else []
