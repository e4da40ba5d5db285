"""The real opencode plugin, as `sidecar integrate opencode` installs it, run under node by a
small harness that hands it recorded events (what opencode itself would do)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sidecar.hosts.opencode import host as opencode


def run_opencode_plugin(root: Path, tmp_path: Path, harness: str, *args: str) -> None:
    """Run `harness` (ES module source) with the plugin's path and `args`, in `root`."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, so the opencode plugin cannot run here")
    plugin = tmp_path / "sidecar.mjs"
    plugin.write_bytes(opencode.plugin_source())
    script = tmp_path / "harness.mjs"
    script.write_text(harness)
    result = subprocess.run([node, str(script), str(plugin), *args], cwd=root,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
