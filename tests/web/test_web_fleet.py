"""`web --fleet` shows every machine's sessions from a real redis-server with the machine's name,
an action from it reaches the daemon of the machine that owns the session, and a machine whose
daemon stops is shown unreachable, its sessions not live."""

from __future__ import annotations

import pytest

from helpers import emit, fleet_config, read_json, wait_until
from support.webapi import act, add_hook, listed

pytestmark = pytest.mark.daemon


def test_web_fleet_shows_the_machine_and_cancel_reaches_the_owning_daemon(
        workspace, config_home, redis_server, start_daemon, serve_web, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out)
    fleet_config(config_home, redis_server.url, machine="devbox")
    daemon = start_daemon(workspace.root)
    for event in ("session-start", "session-end"):
        emit(workspace.root, None, event, "--session-id", "s-web-fleet", "--source", "codex")
    web = serve_web(extra=["--fleet"])

    def queued():
        found = [r for r in listed(web)["sessions"] if r["sessionId"] == "s-web-fleet" and r["canCancel"]]
        return found[0] if found else None

    row = wait_until(queued, 10)
    assert row["machine"] == "devbox" and row["reachable"] is True
    (machine,) = listed(web)["machines"]
    assert (machine["name"], machine["reachable"], machine["unreachableSince"]) == ("devbox", True, None)
    answer = act(web, row["key"], "cancel")
    assert answer.status_code == 200, answer.text
    assert answer.json()["said"].startswith("devbox: cancelled note for codex session s-web-fl")
    assert read_json(workspace.hooks_file)["pending"] == []  # the owner's queue changed
    daemon.stop()
    gone = wait_until(lambda: next((r for r in listed(web)["sessions"] if not r["reachable"]), None), 5)
    assert gone["stateWords"] == "unreachable" and gone["whyWords"] == "as last heard: ended"
    assert listed(web)["machines"][0]["reachable"] is False and not out.exists()
