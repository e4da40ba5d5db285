"""Codex's config.toml, structurally: the trust entries of sidecar's hooks (`[hooks.state]`)
and `[features] hooks`, edited with tomlkit so that comments and layout stay and only
sidecar's own keys change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from sidecar.hosts.base import IntegrateError
from sidecar.hosts.files.settings import read_text

OLD_MARKERS = ("# >>> sidecar integrate codex: trust for sidecar's hooks (managed; do not edit)",
               "# <<< sidecar integrate codex")  # the text block of versions before 0.2


def load_config(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = read_text(path)
        if text is None:
            return tomlkit.document()
        lines = text.splitlines(keepends=True)
        text = "".join(line for line in lines if line.rstrip("\n") not in OLD_MARKERS)
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise IntegrateError(f"{path} is not valid TOML ({exc}); fix it first") from None


def _state_table(doc: tomlkit.TOMLDocument, create: bool) -> Table | None:
    """The `[hooks.state]` table (made, as implicit super-tables, when `create`)."""
    parent: Any = doc
    for key in ("hooks", "state"):
        table = parent.get(key)
        if table is None:
            if not create:
                return None
            table = tomlkit.table(is_super_table=True)
            parent.add(key, table)
        if not isinstance(table, Table):
            raise IntegrateError(f"config.toml: `{key}` is not a table; fix it first")
        parent = table
    return parent if isinstance(parent, Table) else None


def set_trust(doc: tomlkit.TOMLDocument, old_keys: list[str], entries: dict[str, str]) -> None:
    """Replace sidecar's trust entries: remove the ones it wrote before, add the new ones."""
    state = _state_table(doc, create=bool(entries))
    if state is not None:
        for key in old_keys:
            if key in state:
                del state[key]
        for key, digest in entries.items():
            entry = tomlkit.table()
            entry.add("trusted_hash", digest)
            state[key] = entry
        _drop_if_empty(doc)


def _drop_if_empty(doc: tomlkit.TOMLDocument) -> None:
    """Remove the `[hooks.state]` containers once nothing is left in them."""
    hooks = doc.get("hooks")
    if isinstance(hooks, Table) and isinstance(hooks.get("state"), Table) and not hooks["state"]:
        del hooks["state"]
    if isinstance(hooks, Table) and not hooks:
        del doc["hooks"]


def enable_hooks(doc: tomlkit.TOMLDocument, path: Path) -> bool:
    """Make sure `[features] hooks = true`; True if sidecar had to set it."""
    features = doc.get("features")
    if features is None:
        features = tomlkit.table()
        doc.add("features", features)
    if not isinstance(features, Table):
        raise IntegrateError(f"{path}: `features` is not a table; fix it first")
    if "hooks" in features:
        if features["hooks"] is not True:
            raise IntegrateError(f"{path}: [features] hooks is off; set hooks = true")
        return False
    features["hooks"] = True
    return True


def disable_hooks(doc: tomlkit.TOMLDocument) -> None:
    features = doc.get("features")
    if isinstance(features, Table) and "hooks" in features:
        del features["hooks"]
        if not features:
            del doc["features"]
