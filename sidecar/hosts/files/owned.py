"""What sidecar owns inside other programs' files, remembered in sidecar's own folder.

An integration changes a host's configuration (a key it set, a file it created). Whether a
value there is sidecar's cannot be told from the value itself (`hooks = true` may be the
user's), so it is written down here, in `$XDG_CONFIG_HOME/sidecar/integrations.json`, and an
uninstall removes exactly what this file says sidecar added.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

from sidecar import jsonfile, layout, locks

T = TypeVar("T")
Json = dict[str, Any]


def _file() -> Any:
    return layout.config_home() / "integrations.json"


def _load() -> Json:
    """The whole integrations file; {} where it is missing or not what sidecar writes."""
    try:
        data = jsonfile.read_json(_file())
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def change(host: str, place: str, edit: Callable[[Json], T]) -> T:
    """Run `edit` on what sidecar owns for `host` at `place` (a folder or file), and save it."""
    home = layout.config_home()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locks.locked(home / "integrations.lock"):
        data = _load()
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
    record = _load().get(host, {}).get(place, {})
    return record if isinstance(record, dict) else {}


def places(host: str) -> list[str]:
    """Every place sidecar integrated `host` (for `sidecar uninstall`)."""
    per_host = _load().get(host, {})
    return list(per_host) if isinstance(per_host, dict) else []


# -- what sidecar created: files and folders that were not there before it wrote -------------

CREATED = "created"  # the pseudo-host under which created paths are remembered


def absent(paths: list[Path]) -> list[Path]:
    """Each path, and each folder above it, that does not exist yet: what writing them makes."""
    found: list[Path] = []
    for path in paths:
        while not os.path.lexists(path) and path != path.parent and path not in found:
            found.append(path)
            path = path.parent
    return found


def note_created(before: list[Path]) -> None:
    """Of what was absent before a write, remember what exists now: sidecar created it."""
    for path in before:
        if os.path.lexists(path):
            change(CREATED, str(path), lambda record: record.update(created=True))


def remove_created(under: list[Path] | None = None) -> list[str]:
    """Remove what sidecar created that holds nothing now (an empty folder, a file of `{}`
    or blanks), deepest first; `under`: only those paths and the folders above them. What
    holds anything else stays, and stays remembered. Returns what was removed."""
    wanted = None if under is None else {str(p) for path in under for p in (path, *path.parents)}
    removed = []
    for place in sorted(places(CREATED), key=lambda p: p.count(os.sep), reverse=True):
        if wanted is not None and place not in wanted:
            continue
        emptied = _remove_if_empty(Path(place))
        if emptied or not os.path.lexists(place):  # gone already (its host took it out)
            change(CREATED, place, lambda record: record.clear())
        if emptied:
            removed.append(place)
    return removed


def _remove_if_empty(path: Path) -> bool:
    with suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            path.rmdir()  # fails (ENOTEMPTY) if anything is in it
            return True
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 4096 \
                and path.read_bytes().strip() in (b"", b"{}"):
            path.unlink()
            return True
    return False
