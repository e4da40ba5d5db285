"""A real daemon whose wall clock is stepped back and forward (libfaketime), monotonic real.

libfaketime fakes the wall clock of the daemon's process (and of what it starts) only; the
monotonic clock stays real, as it does when a machine's clock is set or NTP steps it. The
offset lives in a file the test rewrites, which libfaketime reads again every second.

(Debian's libfaketime 0.9.10 fails Python's `time.sleep` when the monotonic clock is left
real, wolfcw/libfaketime#426; the daemon never sleeps that way except to retry a contended
lock, which these tests do not provoke.)
"""

from __future__ import annotations

import glob
import os
import time
from pathlib import Path

import pytest
from test_daemon import bindings, inbox_empty
from test_hooks_daemon import command_hook, hook_status, lines, recorder

from helpers import emit, end_session, read_json, session_record, use_hooks, wait_until
from sidecar.base.timeutil import parse_ts
from sidecar.daemon.clocksteps import StepDetector

LIBFAKETIME = ("/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1",
               "/usr/local/lib/faketime/libfaketimeMT.so.1")
CACHE = 1  # seconds libfaketime keeps the offset file's content
TAKES_EFFECT = CACHE + 1.5  # after a rewrite, by when the daemon surely reads the new offset


class FakeClock:
    """The daemon's wall-clock offset from the real one, in seconds."""

    def __init__(self, folder: Path, library: str) -> None:
        self.file = folder / "faketime-offset"
        self.set(0)
        self.env = {"LD_PRELOAD": library, "FAKETIME_TIMESTAMP_FILE": str(self.file),
                    "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_CACHE_DURATION": str(CACHE)}

    def set(self, offset: int) -> None:
        self.file.write_text(f"{offset:+d}\n")

    def step(self, offset: int) -> None:
        """Step the daemon's wall clock to `offset` from the real one, and let it notice."""
        self.set(offset)
        time.sleep(TAKES_EFFECT)


@pytest.fixture
def fake_clock(tmp_path: Path) -> FakeClock:
    found = [path for pattern in LIBFAKETIME for path in sorted(glob.glob(pattern))]
    if not found:
        pytest.skip("libfaketime is not installed (tests/install-hosts.sh installs it: "
                    "apt-get install faketime libfaketime)")
    return FakeClock(tmp_path, found[0])


def tool_use(ws, session: str) -> None:
    emit(ws.root, b'{"event":"tool-use","session_id":"%s","host":"claude-code","tool_name":"Bash"}'
         % session.encode())


def start_session(ws, session: str) -> None:
    emit(ws.root, None, "session-start", "--session-id", session, "--source", "claude-code")


@pytest.mark.slow
def test_ingestion_goes_on_when_the_clock_steps_back_and_forward(workspace, start_daemon,
                                                                  fake_clock):
    daemon = start_daemon(workspace.root, env=fake_clock.env)
    start_session(workspace, "before")
    wait_until(lambda: inbox_empty(workspace) and session_record(workspace, "before"))
    fake_clock.step(-3600)
    start_session(workspace, "while-back")
    wait_until(lambda: inbox_empty(workspace), 30)
    fake_clock.step(0)
    for i in range(5):
        start_session(workspace, f"after-{i}")
        time.sleep(0.3)
    # Applied as they come, not an hour later (the timeout only bounds the wait).
    wait_until(lambda: inbox_empty(workspace) and all(
        session_record(workspace, f"after-{i}") for i in range(5)), 30)
    assert daemon.proc.poll() is None


@pytest.mark.slow
def test_a_forward_step_times_out_no_running_action(workspace, start_daemon, config_home,
                                                   fake_clock, tmp_path):
    with open(config_home / "config.toml", "a") as config:
        config.write("actionTimeout = 60\n")
    started = tmp_path / "started"
    use_hooks(workspace, {"slow": command_hook(
        "slow", ["sh", "-c", f"touch {started}; sleep 6"], delay=0)})
    start_daemon(workspace.root, env=fake_clock.env)
    end_session(workspace.root, "ends")
    wait_until(started.exists, 30)
    fake_clock.step(25 * 3600)  # far past actionTimeout by the wall clock, 3s by the real one
    wait_until(lambda: hook_status(workspace, "slow") is not None, 30)
    assert hook_status(workspace, "slow") == "ok"


@pytest.mark.slow
def test_a_forward_step_sweeps_no_session_touched_just_before(workspace, start_daemon,
                                                              fake_clock):
    start_daemon(workspace.root, env=fake_clock.env)
    start_session(workspace, "fresh")
    tool_use(workspace, "fresh")
    wait_until(lambda: inbox_empty(workspace) and session_record(workspace, "fresh"), 30)
    fake_clock.step(25 * 3600)  # past staleAfter (24h) by the wall clock
    time.sleep(2)  # sweeps run every second (sweepInterval = 1)
    assert session_record(workspace, "fresh")["status"] == "active"
    assert "fresh" in bindings(workspace)["claude-code"]


@pytest.mark.slow
def test_a_follow_up_queued_before_a_backward_step_fires_after_its_delay(
        workspace, start_daemon, fake_clock, tmp_path):
    fired = tmp_path / "fired.txt"
    use_hooks(workspace, {"rec": command_hook("rec", recorder(fired), delay=8)})
    start_daemon(workspace.root, env=fake_clock.env)
    end_session(workspace.root, "s1")
    wait_until(lambda: read_json(workspace.hooks_file)["pending"])
    fake_clock.step(-3600)
    # Eight seconds of delay, not an hour and eight (the timeout only bounds the wait).
    wait_until(lambda: lines(fired) == ["s1"], 40)


def environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.slow
def test_the_fake_clock_is_the_daemons_alone(workspace, start_daemon, fake_clock):
    """The set-up itself: the daemon runs under libfaketime, this test process does not."""
    daemon = start_daemon(workspace.root, env=fake_clock.env)
    assert environment_of(daemon.pid)["LD_PRELOAD"] == fake_clock.env["LD_PRELOAD"]
    assert "LD_PRELOAD" not in os.environ or "faketime" not in os.environ["LD_PRELOAD"]
    fake_clock.step(-3600)

    def heartbeat_back() -> bool:
        for path in workspace.instances.glob("*.json"):
            doc = read_json(path)
            at = parse_ts(doc.get("heartbeatAt"))
            if doc.get("pid") == daemon.pid and at is not None and at < time.time() - 3000:
                return True
        return False

    wait_until(heartbeat_back, 30)


def test_a_step_of_the_wall_clock_is_told_from_its_running_and_from_drift():
    detector = StepDetector()
    assert detector.stepped(1_000.0, 100.0) == 0.0  # the first look: nothing to compare with
    assert detector.stepped(1_060.5, 160.0) == 0.0  # ran, and slewed half a second: no step
    assert detector.stepped(1_065.5 - 3600, 165.0) == -3600.0  # set back an hour
    assert detector.stepped(1_070.5 + 24 * 3600, 170.0) == 25 * 3600.0  # and on a day
    # An hour between steps, with a drift NTP's slewing allows, is still no step.
    assert detector.stepped(1_070.5 + 25 * 3600 + 3.5, 3770.0) == 0.0
