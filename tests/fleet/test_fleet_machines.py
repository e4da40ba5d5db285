"""The issue's fleet: three "machines" (PID and UTS namespaces, each with its own host name,
user folder and workspace) publish to one real redis-server. Every session is listed within a
second of its event; a machine whose power is cut is unreachable within its heartbeat and 2 s;
a Redis restart recovers by itself; a cancel asked from another machine's FleetFeed is done
on the machine that owns the session."""

from __future__ import annotations

import time

import pytest

from helpers import SIDECAR, read_json, run_cli, wait_until
from sidecar.config import load_config
from sidecar.fleet.read import FleetFeed, source_from_config

pytestmark = [pytest.mark.daemon, pytest.mark.slow]

HEARTBEAT = 0.5
LISTED = 1.0  # the promise: every session listed within a second of its event
UNREACHABLE = HEARTBEAT + 2.0  # the promise: a dead machine is unreachable within this
MARGIN = 2.0  # what a loaded 2-core CI machine may add (the figures are printed)


class Box:
    """One machine: its sidecar daemon, its user's folders and its workspace."""

    def __init__(self, machine, folder, url: str) -> None:
        self.machine = machine
        self.config = folder / "config"
        self.config.mkdir(parents=True)
        (self.config / "config.toml").write_text(
            f"reconcileInterval = 0.5\nheartbeatInterval = 0.5\nsweepInterval = 1\n"
            f'[fleet]\nurl = "{url}"\nheartbeat = {HEARTBEAT}\n')  # machine: its host name
        self.env = {"SIDECAR_CONFIG_HOME": str(self.config), "XDG_STATE_HOME": str(folder / "state"),
                    "HOME": str(folder)}
        self.root = folder / "ws"
        self.root.mkdir()
        assert run_cli("init", str(self.root), env=self.env).returncode == 0

    def boot(self):
        self.machine.start([SIDECAR, "run", "--root", str(self.root)], self.env, cwd=self.root)
        return self

    def emit(self, *args: str) -> None:
        done = self.machine.run([SIDECAR, "emit", *args], cwd=self.root, env=self.env)
        assert done.returncode == 0, done.stderr


def listed(feed: FleetFeed) -> dict[str, list[str]]:
    feed.apply()
    found: dict[str, list[str]] = {}
    for row in feed.rows.values():
        if feed.live(row):
            found.setdefault(row.machine, []).append(row.session_id)
    return found


def test_three_machines_publish_to_one_redis(machines, redis_server, tmp_path, config_home):
    boxes = [Box(machines(name), tmp_path / name, redis_server.url).boot() for name in ("a", "b", "c")]
    (config_home / "config.toml").write_text(f'[fleet]\nurl = "{redis_server.url}"\n')
    feed = source_from_config(load_config())
    feed.follow(lambda: None)
    try:
        # Each daemon beats, under its machine's host name (config.toml names none).
        wait_until(lambda: (feed.apply(), set(feed.heard) == {"a", "b", "c"})[1], 15)
        sent = time.monotonic()
        for box in boxes:
            box.emit("session-start", "--session-id", f"s-{box.machine.name}", "--source", "codex")
        emitted = time.monotonic() - sent
        want = {name: [f"s-{name}"] for name in ("a", "b", "c")}
        wait_until(lambda: listed(feed) == want, 10)
        took = time.monotonic() - sent
        print(f"three machines' sessions listed {took:.2f}s after the first event "
              f"(the emits themselves took {emitted:.2f}s)")
        assert took < emitted + LISTED + MARGIN

        boxes[2].machine.kill()  # the power cut: no goodbye
        cut = time.monotonic()
        wait_until(lambda: listed(feed) == {k: v for k, v in want.items() if k != "c"}, 10)
        took = time.monotonic() - cut
        print(f"a machine whose power was cut is unreachable after {took:.2f}s")
        assert took < UNREACHABLE + MARGIN
        assert feed.errors["machine:c"].startswith("c: unreachable since ")
        assert [r.session_id for r in feed.rows.values() if r.machine == "c"] == ["s-c"]  # kept

        redis_server.stop()  # every key is lost (no persistence)
        redis_server.start()
        wait_until(lambda: listed(feed) == {"a": ["s-a"], "b": ["s-b"]}, 10)

        # A cancel asked through the fleet is carried out by the machine that owns the session.
        a = boxes[0]
        assert run_cli("hooks", "disable", "post-task", "--root", str(a.root), env=a.env).returncode == 0
        added = run_cli("hooks", "add", "note", "--delay", "1h", "--root", str(a.root), "--",
                        "true", env=a.env)
        assert added.returncode == 0, added.stderr
        a.emit("session-end", "--session-id", "s-a", "--source", "codex")
        hooks = a.root / ".context" / "runtime" / "hooks.json"
        wait_until(lambda: [e["hookId"] for e in read_json(hooks)["pending"]] == ["note"], 10)
        row = wait_until(lambda: next((r for r in (feed.apply(), feed.rows.values())[1]
                                       if r.session_id == "s-a" and r.follow_ups), None), 10)
        said = feed.act(row, "cancel", time.time())
        assert said == "a: cancelled note for codex session s-a"
        assert [e["hookId"] for e in read_json(hooks)["pending"]] == []
    finally:
        feed.stop()
