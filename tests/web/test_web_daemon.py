"""The web view served by the daemon itself (`[web] serve = true`): off by default, and when
asked for, the same view and token as `sidecar web`, stopped with the daemon."""

from __future__ import annotations

import re

import httpx
import pytest

from helpers import emit, run_cli, wait_until

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


def test_a_daemon_hosted_view_that_cannot_start_says_why_in_the_daemons_log_and_frees_its_port(
        workspace, tmp_path, config_home):
    from support.inotify_limit import start_limited
    from support.redis_server import free_port

    port = free_port()
    with open(config_home / "config.toml", "a") as config:
        config.write(f'\n[web]\nserve = true\naddress = "127.0.0.1"\nport = {port}\n')
    daemon = start_limited(tmp_path, workspace.root, instances=1)  # none left for the view's feed
    try:
        wait_until(lambda: "the web view is not served" in daemon.output(), 10)
        assert "Too many open files" in daemon.output()
        assert "the web view is served on" not in daemon.output()
        with pytest.raises(httpx.ConnectError):  # its socket closed, not bound and unanswered
            httpx.get(f"http://127.0.0.1:{port}/api/sessions", timeout=2)
        assert daemon.proc.poll() is None  # the daemon goes on without it
    finally:
        assert daemon.stop() == 0


def test_show_token_prints_the_address_the_daemon_serves_on_from_config_toml(
        workspace, start_daemon, config_home):
    from support.redis_server import free_port

    port = free_port()
    with open(config_home / "config.toml", "a") as config:
        config.write(f'\n[web]\nserve = true\naddress = "127.0.0.1"\nport = {port}\n')
    daemon = start_daemon(workspace.root)
    wait_until(lambda: "the web view is served on" in daemon.output(), 10)
    shown = run_cli("web", "--show-token")
    assert shown.returncode == 0, shown.stderr.decode()
    address = shown.stdout.decode().strip()
    assert address.startswith(f"http://127.0.0.1:{port}/?token=")
    signed_in = httpx.get(address, follow_redirects=True)  # the daemon's view, signed in
    assert signed_in.status_code == 200 and "sidecar" in signed_in.text

    with open(config_home / "config.toml", "w") as config:  # any free port: the log names it
        config.write('[web]\nserve = true\nport = 0\n')
    shown = run_cli("web", "--show-token")
    assert shown.returncode == 0 and ":PORT/?token=" in shown.stdout.decode()
    assert "log names the address" in shown.stderr.decode()
