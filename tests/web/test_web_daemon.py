"""The web view served by the daemon itself (`[web] serve = true`): off by default, and when
asked for, the same view and token as `sidecar web`, stopped with the daemon."""

from __future__ import annotations

import re

import httpx
import pytest

from helpers import emit, wait_until

pytestmark = pytest.mark.daemon


def test_the_daemon_serves_the_view_when_config_toml_asks(workspace, start_daemon, config_home):
    with open(config_home / "config.toml", "a") as config:
        config.write('\n[web]\nserve = true\naddress = "127.0.0.1"\nport = 0\n')
    daemon = start_daemon(workspace.root)
    wait_until(lambda: "the web view is served on" in daemon.output(), 10)
    base = re.search(r"the web view is served on (http://\S+/)", daemon.output()).group(1)
    token = (config_home / "web-token").read_text().strip()
    assert token not in daemon.output()  # never in the log
    assert httpx.get(base + "api/sessions").status_code == 401
    assert emit(workspace.root, None, "session-start", "--session-id", "daemon-served",
                "--source", "claude-code").returncode == 0

    def shown() -> bool:
        answer = httpx.get(base + "api/sessions", headers={"Authorization": f"Bearer {token}"})
        return any(r["sessionId"] == "daemon-served" for r in answer.json()["sessions"])

    wait_until(shown, 5)
    assert daemon.stop() == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(base + "api/sessions")


def test_the_daemon_serves_no_view_by_default(workspace, start_daemon, config_home):
    daemon = start_daemon(workspace.root)
    assert daemon.stop() == 0
    assert "web view" not in daemon.log_path.read_text()
    assert not (config_home / "web-token").exists()
