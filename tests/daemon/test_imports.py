"""What starting the daemon loads: its configuration is read without the integration code
(tomlkit, the install and settings-merge modules), in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import orjson

LOADED = ("import sys, json, sidecar.daemon.process; "
          "print(json.dumps(sorted(sys.modules)))")


def test_the_daemon_does_not_load_the_integration_code():
    out = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, check=True).stdout
    loaded = orjson.loads(out)
    assert "sidecar.config" in loaded and "sidecar.envfile" in loaded
    assert "tomlkit" not in loaded
    assert [m for m in loaded if m == "sidecar.install" or m.startswith("sidecar.install.")] == []
    assert "sidecar.hosts.settings" not in loaded and "sidecar.cli" not in loaded
