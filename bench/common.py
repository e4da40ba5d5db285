"""Helpers shared by the benchmarks: temporary workspaces, a real daemon, timing."""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent
SIDECAR = str(BIN / "sidecar")
# The hosts' recorded payloads, beside their end-to-end tests.
HOST_FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "e2e"
COORDINATION_ENV = "SIDECAR_COORDINATION_URL"


@contextmanager
def sandbox(config: str = "", coordination_url: str | None = None
            ) -> Iterator[tuple[Path, dict[str, str]]]:
    """A temporary workspace (initialised) and a private user config; removed afterwards.
    With `coordination_url`, every daemon and command started with its env coordinates
    through that Redis; without, through files (whatever the caller's environment says)."""
    top = Path(tempfile.mkdtemp(prefix="sidecar-bench-"))
    env = {**os.environ, "SIDECAR_CONFIG_HOME": str(top / "config")}
    env.pop(COORDINATION_ENV, None)
    if coordination_url is not None:
        env[COORDINATION_ENV] = coordination_url
    (top / "config").mkdir()
    (top / "config" / "config.toml").write_text(config)
    root = top / "ws"
    root.mkdir()
    subprocess.run([SIDECAR, "init", str(root)], env=env, check=True, capture_output=True)
    try:
        yield root, env
    finally:
        shutil.rmtree(top, ignore_errors=True)


@contextmanager
def daemon(root: Path, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_leader(root, proc.pid)
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, timeout: float = 60) -> float:
    """SIGTERM, then SIGKILL after `timeout`; returns the seconds until it exited."""
    start = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return time.perf_counter() - start


def wait_for_leader(root: Path, pid: int, timeout: float = 30) -> None:
    wait_for_role(root, pid, "leader", timeout)


def wait_for_role(root: Path, pid: int, role: str, timeout: float = 30) -> None:
    """Until the instance of process `pid` says it is `role` ("leader" or "standby")."""
    import orjson

    deadline = time.monotonic() + timeout
    instances = root / ".context/runtime/instances"
    while time.monotonic() < deadline:
        for path in instances.glob("*.json"):
            try:
                doc = orjson.loads(path.read_bytes())
            except ValueError:
                continue
            if doc.get("pid") == pid and doc.get("role") == role:
                return
        time.sleep(0.02)
    raise RuntimeError(f"daemon did not become {role}")


def time_command(args: list[str], stdin: bytes | None = None, runs: int = 30,
                 cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    """Median wall time of a command, in seconds."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=cwd, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def drop(inbox: Path, name: str, data: bytes) -> Path:
    """Write-then-rename, as `sidecar emit` does."""
    temp = inbox / f".{name}.tmp"
    temp.write_bytes(data)
    final = inbox / f"{name}.json"
    os.rename(temp, final)
    return final


def session_events(session: str, ts: float) -> list[bytes]:
    """One session as the benchmarks model it: 1 start, 20 tool-use, 3 turn-end, 1 end."""
    import orjson

    turn = ["PostToolUse"] * 7 + ["Stop"]
    kinds = ["SessionStart"] + turn * 2 + ["PostToolUse"] * 6 + ["Stop", "SessionEnd"]
    assert len(kinds) == 25 and kinds.count("PostToolUse") == 20 and kinds.count("Stop") == 3
    return [
        orjson.dumps({"hook_event_name": kind, "session_id": session, "host": "claude-code",
                      "ts": ts + i * 1e-3, "tool_name": "Bash", "cwd": "/w"})
        for i, kind in enumerate(kinds)
    ]


@contextmanager
def bytecode_cached() -> Iterator[None]:
    """Commands started meanwhile cache their bytecode (in a folder of the bench's own), as an
    installed sidecar does (pip compiles the package): an environment that forbids it would
    add compiling every module at each start to every figure."""
    saved = {name: os.environ.get(name) for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    folder = tempfile.mkdtemp(prefix="sidecar-bench-pycache-")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def report(name: str, value: str, floor: str = "", verdict: str = "") -> None:
    print(f"{name:<44} {value:<26} {floor:<34} {verdict}", flush=True)
