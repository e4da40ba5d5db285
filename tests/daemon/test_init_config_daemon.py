"""`sidecar init`, the user's registry and config.toml.

Those that start real processes; the rest run in process in tests/unit/test_init_config.py.
"""

from __future__ import annotations

from helpers import run_cli


def test_run_refuses_a_bad_config_with_a_clear_error(workspace, config_home):
    (config_home / "config.toml").write_text("concurrency = 'many'\n")
    result = run_cli("run", "--root", str(workspace.root), timeout=10)
    assert result.returncode == 2 and b"concurrency" in result.stderr
