"""Where sidecar's own files are, found once for every command: the workspace a folder
belongs to, the user's config folder, and the registry of workspaces (its bytes, and the
roots it names). Text in, text out, on `posixos`: `emit` and `status --line` use these at the
cost of a hook; layout.py and config.py wrap them in Paths for the typed code."""

from __future__ import annotations

from sidecar.base import posixos

CONTEXT = ".context"  # the folder that makes a folder a workspace
REGISTRY_LIMIT = 16 * 1024 * 1024  # far above any real registry; bounds a hostile one
REGISTRY_SHAPE = 'not {"workspaces": [folder, ...]}'  # what a registry of another shape is told


def find_workspace(start: str) -> str | None:
    """The nearest folder at or above `start` (made absolute, links kept as given) that holds
    a `.context/` folder; None where there is none."""
    path = posixos.abspath(start)
    while True:
        if posixos.isdir(posixos.join(path, CONTEXT)):
            return path
        parent = posixos.dirname(path)
        if parent == path:
            return None
        path = parent


def config_home() -> str:
    """The user's sidecar folder: $SIDECAR_CONFIG_HOME, else $XDG_CONFIG_HOME/sidecar."""
    override = posixos.getenv("SIDECAR_CONFIG_HOME")
    if override:
        return override
    return posixos.join(posixos.getenv("XDG_CONFIG_HOME")
                        or posixos.join(posixos.home(), ".config"), "sidecar")


def registry_file() -> str:
    """The user's registry of workspaces."""
    return posixos.join(config_home(), "workspaces.json")


def read_registry() -> bytes | None:
    """The registry's bytes; None where there is none, OSError where it cannot be read (a FIFO
    or anything else that is no regular file included: reading one could wait for ever)."""
    return posixos.read_regular(registry_file(), REGISTRY_LIMIT)


def registry_roots(data: object) -> list[str]:
    """The workspace roots a parsed registry names, in registration order; ValueError (saying
    REGISTRY_SHAPE) for any other shape: nothing may then act as if it were empty."""
    roots = data.get("workspaces") if isinstance(data, dict) else None
    if not isinstance(roots, list) or not all(isinstance(root, str) for root in roots):
        raise ValueError(REGISTRY_SHAPE)
    return roots
