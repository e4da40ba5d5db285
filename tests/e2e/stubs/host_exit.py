"""The process watch's promise, asserted the same way for every host's kill test: a killed
host's session stays active while the host lives (across a restart of the daemon) and is
completed as a host exit within 2 s of its death."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping

from helpers import read_json, wait_until


@contextlib.contextmanager
def running_host(argv: list, cwd, env: dict[str, str],
                 base: Mapping[str, str] = os.environ) -> Iterator[subprocess.Popen]:
    """A host started in a session of its own (`env` over `base`, its output dropped); its
    whole process group killed at the end of the block, whatever is left of it."""
    run = subprocess.Popen([str(word) for word in argv], cwd=cwd, env={**base, **env},
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield run
    finally:
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()


def active_session(workspace, host):
    """The one session of `host` once it is tracked (its record), else None."""
    per_host = (read_json(workspace.bindings_file)["bindings"].get(host, {})
                if workspace.bindings_file.exists() else {})
    for binding in per_host.values():
        path = workspace.session_dir(binding["harnessSessionId"]) / "session.json"
        if path.exists():
            return path
    return None


def assert_ends_as_host_exit(workspace, start_daemon, daemon, host, kill):
    """While the host lives: active, across a restart. After `kill()`: ended within 2 s."""
    record = wait_until(lambda: active_session(workspace, host), 60, 0.1)
    wait_until(lambda: read_json(record)["metadata"]["sidecar"].get("hostPid"), 10)
    assert daemon.stop() == 0
    start_daemon(workspace.root)
    time.sleep(0.5)  # the new leader re-armed its watch; a wrong completion would come now
    assert read_json(record)["status"] == "active"
    kill(read_json(record)["metadata"]["sidecar"]["hostPid"])
    killed = time.monotonic()
    wait_until(lambda: read_json(record)["status"] == "completed", 5, 0.02)
    took = time.monotonic() - killed
    assert read_json(record)["metadata"]["sidecar"]["completionReason"] == "host-exited"
    # The record is saved before the bindings (a crash between leaves the binding to clean):
    # the binding goes a moment after the record says completed.
    wait_until(lambda: read_json(workspace.bindings_file)["bindings"].get(host, {}) == {}, 2)
    assert took < 2, f"completed {took:.2f} s after the kill"
