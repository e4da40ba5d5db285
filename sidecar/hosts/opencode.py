"""`sidecar integrate opencode`: a small plugin that drops opencode's session events.

opencode has no hook commands, only plugins that run inside it; the plugin
(`opencode_plugin.js`, shipped with the package) writes events straight into the inbox. It is
installed into the project's `.opencode/plugins/` (it holds no machine-specific path, so a
project may commit it) or, with `--user`, into the user's opencode plugin folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from sidecar import jsonfile
from sidecar.hosts.settings import IntegrateError

FILE_NAME = "sidecar.js"
MARK = "// sidecar: opencode's session events into the workspace's inbox."


def plugin_source() -> bytes:
    return (Path(__file__).parent / "opencode_plugin.js").read_bytes()


def project_plugin(root: Path) -> Path:
    return root / ".opencode" / "plugins" / FILE_NAME


def user_plugin(home: Path) -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "opencode" / "plugins" / FILE_NAME


def is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.readline().decode(errors="replace").rstrip("\n") == MARK
    except OSError:
        return False


def integrate(path: Path, uninstall: bool = False) -> bool:
    """Write (or remove) the plugin file; True if anything changed. Never touches a file of
    the same name that sidecar did not write."""
    exists = path.exists() or path.is_symlink()
    if exists and not is_ours(path):
        raise IntegrateError(f"{path} exists and is not sidecar's plugin; left as it is")
    if uninstall:
        if exists:
            path.unlink()
        return exists
    source = plugin_source()
    if exists and path.read_bytes() == source:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfile.write_bytes_atomic(path, source)
    os.chmod(path, 0o644)
    return True
