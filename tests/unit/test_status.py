"""`sidecar status`: text, JSON and exit codes, with and without a live daemon.

In process; those that start real processes are in tests/daemon/test_status_daemon.py.
"""

from __future__ import annotations

import orjson

from helpers import invoke
from support.stores import ingest


def test_not_a_workspace_exits_4(tmp_path, config_home):
    lonely = tmp_path / "plain"
    lonely.mkdir()
    result = invoke("status", "--root", str(lonely))
    assert result.returncode == 4
    assert b"not a workspace" in result.stderr
    assert invoke("status", cwd=lonely).returncode == 4


def test_session_status_finds_a_completed_session_of_a_host_it_does_not_know(workspace):
    from sidecar.sessions.store import SessionStore

    ingest(workspace, "aid-1", "session-start", "session-end", at=1_795_900_000.0, host="aider")
    store = SessionStore(workspace, durable=False)
    assert store.load_bindings().items() == []  # completed: nothing binds it any more
    result = invoke("status", "--session", "aid-1", "--json", "--root", str(workspace.root))
    assert result.returncode == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert (report["host"], report["status"]) == ("aider", "completed")
    assert [t["event"] for t in report["timeline"]][-1] == "session.completed"
