"""Many workspaces on one daemon: a fixed set of threads, one folder watch, one timer heap,
nothing that wakes for an idle workspace, and clear words when the open-file limit is low."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import orjson
import pytest

from helpers import emit, instance_docs, run_with_open_files, session_record, wait_until
from sidecar.config import Config
from sidecar.coordination.instances import Identity
from sidecar.daemon.loop import StepLoop
from sidecar.daemon.watch import InotifyWatch, WatchError
from sidecar.daemon.workspace import WorkspaceServer
from sidecar.followups.store import initialise
from sidecar.layout import Workspace

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc")


def make_workspaces(top: Path, count: int) -> list[Path]:
    """Workspaces as `sidecar init` makes them (registered, so hooks drop events into them),
    without a thousand process starts."""
    roots = []
    for i in range(count):
        root = top / f"ws-{i:03d}"
        root.mkdir()
        initialise(Workspace(root), time.time())
        roots.append(root)
    register(Path(os.environ["SIDECAR_CONFIG_HOME"]), roots)
    return roots


def register(config_home: Path, roots: list[Path]) -> None:
    config_home.mkdir(exist_ok=True)
    (config_home / "workspaces.json").write_bytes(
        orjson.dumps({"workspaces": [str(r) for r in roots]}))


def led(root: Path, pid: int) -> bool:
    return any(doc.get("pid") == pid and doc.get("role") == "leader"
               for doc in instance_docs(Workspace(root)))


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def lifecycle(root: Path, session: str) -> None:
    """A session starts, ends a turn and ends, through the real `sidecar emit`; its record
    says it completed within 10 s."""
    for event in ("session-start", "turn-end", "session-end"):
        payload = {"event": event, "session_id": session, "host": "claude-code"}
        assert emit(root, orjson.dumps(payload)).returncode == 0
    wait_until(lambda: (session_record(Workspace(root), session) or {}).get("status") == "completed", 10)


# -- the daemon ------------------------------------------------------------------------------

@linux_only
def test_sixty_workspaces_cost_no_more_threads_than_one(tmp_path, config_home, start_daemon):
    roots = make_workspaces(tmp_path, 60)
    register(config_home, roots[:1])
    one = start_daemon(wait_leader=False)
    wait_until(lambda: led(roots[0], one.pid), 20)
    threads_for_one = threads_of(one.pid)
    one.stop()

    register(config_home, roots)
    many = start_daemon(wait_leader=False)
    wait_until(lambda: all(led(r, many.pid) for r in roots), 30)
    assert threads_of(many.pid) == threads_for_one < 20
    # Every one of them is served: an event in the last is applied through its watch.
    lifecycle(roots[-1], "last")


def test_with_default_timers_events_arrive_through_the_watch(tmp_path, config_home,
                                                             start_daemon):
    """No reconcile timer to fall back on (the default lists the inbox every 10 minutes
    where inotify reports overflows): a replaced inbox folder is watched again."""
    (config_home / "config.toml").write_text("")
    roots = make_workspaces(tmp_path, 2)
    daemon = start_daemon(*roots)
    lifecycle(roots[0], "first")

    inbox = Workspace(roots[1]).inbox
    inbox.rename(inbox.with_name("inbox.old"))  # someone replaces the folder
    inbox.mkdir(mode=0o700)
    (inbox / "rejected").mkdir(mode=0o700)
    time.sleep(0.5)  # the watch on the old folder is gone, its server rewatches the new one
    lifecycle(roots[1], "second")
    assert "Traceback" not in daemon.output()


@linux_only
def test_a_low_open_file_limit_is_named_and_the_workspaces_within_it_are_served(
        tmp_path, config_home, start_daemon):
    roots = make_workspaces(tmp_path, 150)
    register(config_home, roots)
    log = tmp_path / "daemon.log"
    proc = run_with_open_files(200, log)  # 68 workspaces fit, with files to spare for their work
    try:
        wait_until(lambda: sum(led(r, proc.pid) for r in roots) == 68, 20)
        wait_until(lambda: "too many open files: the limit is 200" in log.read_text(), 10)
        text = log.read_text()
        assert "150 workspaces need about 364 open files, but the limit is 200" in text
        assert "LimitNOFILE=" in text and "Traceback" not in text
        served = [r for r in roots if led(r, proc.pid)]
        lifecycle(served[0], "within")  # those it could take are served as usual
        assert proc.poll() is None
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def test_a_workspace_that_cannot_be_watched_stops_no_other(tmp_path, config_home):
    """The inotify watch limit cannot be lowered for one test, so the kernel's answer is
    played by a folder watch that refuses one workspace the way it does at the limit."""
    from sidecar.daemon.process import Daemon

    roots = make_workspaces(tmp_path, 3)
    daemon = Daemon(roots, Config())
    real_add = daemon.folders.add
    refused = roots[1]

    def add(path: Path, on_change):  # type: ignore[no-untyped-def]
        if refused in path.parents:
            raise WatchError(errno.ENOSPC, "the inotify watch limit is reached", str(path))
        return real_add(path, on_change)

    daemon.folders.add = add  # type: ignore[method-assign]
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        wait_until(lambda: len(daemon.servers) == 2 and refused in daemon.failing, 10)
        assert "inotify watch limit" in daemon.failing[refused]
        lifecycle(roots[2], "other")
        daemon.folders.add = real_add  # type: ignore[method-assign]
        wait_until(lambda: refused in daemon.servers and refused not in daemon.failing, 10)
        lifecycle(refused, "late")
    finally:
        daemon.stop.set()
        thread.join(10)
    assert not thread.is_alive()  # and it shut down cleanly


# -- an idle workspace ----------------------------------------------------------------------

T0 = 1_800_000_000.0


def test_an_idle_workspace_sleeps_until_its_heartbeat(tmp_path, config_home):
    (root,) = make_workspaces(tmp_path, 1)
    server = WorkspaceServer(Workspace(root), Config, Identity(), watch_reliable=True)
    server.open()
    assert server.step(T0) == T0 + Config().heartbeat_interval == T0 + 60
    assert server.step(T0 + 60) == T0 + 120  # nothing else: no listing, no sweep, no recovery
    server.close()


def test_an_active_session_wakes_its_workspace_when_it_could_go_stale(tmp_path, config_home):
    (root,) = make_workspaces(tmp_path, 1)
    cfg = Config(heartbeat_interval=10 * 24 * 3600, reconcile_interval=10 * 24 * 3600)
    server = WorkspaceServer(Workspace(root), lambda: cfg, Identity(), watch_reliable=True)
    server.open()
    server.step(T0)
    payload = {"event": "session-start", "session_id": "s", "host": "claude-code",
               "ts": T0 + 1}
    assert emit(root, orjson.dumps(payload)).returncode == 0
    server.notice_arrival()
    # The hourly pruning of old sessions is its only other timer.
    assert server.step(T0 + 1) == T0 + 3600
    assert server.ingest.timers.sweep == pytest.approx(T0 + 1 + cfg.stale_after, abs=1)
    server.close()


# -- the loop and the watch in process -----------------------------------------------------

def test_the_loop_steps_what_is_due_and_what_is_woken():
    stepped: list[tuple[str, float]] = []
    again = threading.Event()

    def step(name: str, at: float) -> float | None:
        stepped.append((name, at))
        again.set()
        return at + 3600

    loop: StepLoop[str] = StepLoop(step, time.time, workers=2)
    loop.start()
    loop.add("idle", time.time() + 3600)
    loop.add("due", time.time())
    wait_until(lambda: [n for n, _ in stepped] == ["due"], 5)
    loop.wake("idle")
    wait_until(lambda: [n for n, _ in stepped] == ["due", "idle"], 5)
    loop.stop(5)


def test_a_workspace_that_blocks_delays_only_itself():
    release = threading.Event()
    fast_steps = []
    concurrent = []
    inside: set[str] = set()

    def step(name: str, at: float) -> float | None:
        if name in inside:
            concurrent.append(name)
        inside.add(name)
        try:
            if name == "slow":
                release.wait(10)
            else:
                fast_steps.append(at)
        finally:
            inside.discard(name)
        return at + 0.05

    loop: StepLoop[str] = StepLoop(step, time.time, workers=2)
    loop.start()
    loop.add("slow", time.time())
    loop.add("fast", time.time())
    wait_until(lambda: len(fast_steps) >= 10, 5)  # it goes on while "slow" is stuck
    loop.wake("slow")  # woken while busy: stepped again once it returns, not alongside
    release.set()
    time.sleep(0.2)
    loop.stop(5)
    assert concurrent == []


@linux_only
def test_one_inotify_watch_serves_many_folders_and_says_when_one_is_gone(tmp_path):
    watch = InotifyWatch()
    seen: dict[str, list[str | None]] = {}
    handles = {}
    for i in range(50):
        folder = tmp_path / f"f{i}"
        folder.mkdir()
        seen[folder.name] = []
        handles[folder.name] = watch.add(folder, seen[folder.name].append)
    before = set(threading.enumerate())  # (threads other tests left may end meanwhile)
    watch.start()
    try:
        assert len(set(threading.enumerate()) - before) == 1  # one thread for all 50 folders
        (tmp_path / "f7" / "a.json").write_bytes(b"{}")
        wait_until(lambda: "a.json" in seen["f7"], 5)
        assert all(not names for name, names in seen.items() if name != "f7")
        (tmp_path / "f9").rename(tmp_path / "moved")
        wait_until(lambda: watch.lost(handles["f9"]), 5)
        assert seen["f9"][-1] is None and not watch.lost(handles["f8"])
        link = tmp_path / "link"
        link.symlink_to(tmp_path / "f1")
        with pytest.raises(WatchError):
            watch.add(link, print)  # never watched through a symlink
    finally:
        watch.stop()


def test_the_watchdog_fallback_reports_names_and_refuses_a_missing_folder(tmp_path):
    """Where there is no inotify (macOS) watchdog's observer does the watching."""
    from sidecar.daemon.watch import WatchdogWatch

    watch = WatchdogWatch()
    seen: list[str | None] = []
    folder = tmp_path / "inbox"
    folder.mkdir()
    handle = watch.add(folder, seen.append)
    watch.start()
    try:
        (folder / "a.json").write_bytes(b"{}")
        wait_until(lambda: "a.json" in seen, 5)
        assert not watch.lost(handle)
        watch.remove(handle)
        with pytest.raises(WatchError):
            watch.add(tmp_path / "missing", seen.append)
    finally:
        watch.stop()
