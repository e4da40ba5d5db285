"""What the tests share: paths, the real CLI and daemon, fixtures by name, polling.

Tests import these from here (`from helpers import ...`); pytest's own fixtures live in
conftest.py files.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

TESTS = Path(__file__).parent
REPO = TESTS.parent
BIN = Path(sys.executable).parent
SIDECAR = str(BIN / "sidecar")
# Where tests/install-hosts.sh puts the real agent hosts.
HOSTS_CACHE = Path(os.environ.get("SIDECAR_TEST_HOSTS")
                   or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sidecar-test-hosts")


class FixtureFolder:
    """Recorded fixtures found by name wherever they live: each host's beside its e2e test
    (`tests/e2e/<host>/fixtures/`), the rest in `tests/fixtures/`. `FIXTURES / "codex-0.169.0"`
    is that folder; `TRANSCRIPTS / "codex-0.169.0.jsonl"` is that host's recorded transcript."""

    def __init__(self, below: str = "") -> None:
        self.below = below

    def __truediv__(self, name: str) -> Path:
        relative = f"{self.below}/{name}" if self.below else name
        bases = [TESTS / "fixtures", *sorted(TESTS.glob("e2e/*/fixtures"))]
        found = [base / relative for base in bases if (base / relative).exists()]
        if len(found) != 1:
            raise LookupError(f"fixture {relative!r} found {len(found)} times: {found}")
        return found[0]


FIXTURES = FixtureFolder()
TRANSCRIPTS = FixtureFolder("transcripts")


def npm_host(name: str, version: str, binary: str) -> Path:
    """A host CLI installed from npm by tests/install-hosts.sh; skips only where npm is absent."""
    if shutil.which("npm") is None:
        pytest.skip(f"npm is not installed, so {name} cannot be installed here")
    prefix = HOSTS_CACHE / f"{name}-{version}"
    path = prefix / "node_modules" / ".bin" / binary
    if not path.exists():
        pytest.skip(f"{name} {version} is not installed at {path} (tests/install-hosts.sh, "
                    f"which make test runs, says why in {prefix / 'npm-install.log'})")
    return path


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02):
    """Poll `predicate` until it returns something truthy; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


def wait_for_written(path: Path, complete: Callable[[bytes], bool], timeout: float = 10.0) -> bytes:
    """The bytes another process writes to `path`, once `complete` says they are whole: the file
    appears when its writer opens it, before it writes, so its existence alone is not enough."""
    def whole() -> bytes | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return data if complete(data) else None
    return wait_until(whole, timeout)


def wait_for_json(path: Path, timeout: float = 10.0):
    """The JSON document another process writes to `path`, once it parses."""
    def parses(data: bytes) -> bool:
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            return False
        return True
    return orjson.loads(wait_for_written(path, parses, timeout))


def fixture_payload(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def read_json(path: Path):
    return orjson.loads(path.read_bytes())


def trust_hooks(ws) -> None:
    """Trust every hook of the workspace as it stands, its prompt's bytes too, as its user
    would with `sidecar hooks trust` (a hand-written hooks.json or prompt, as these tests
    write, is not trusted by itself)."""
    from sidecar.followups import prompts, store, trust

    for hook in store.read_view(ws).hooks.values():
        try:
            found = trust.content(ws, hook)
        except (OSError, prompts.PromptError):
            continue  # a prompt that cannot be read: nothing of it to approve (its firing fails)
        trust.trust(ws, found, time.time())


def use_hooks(ws, hooks: dict) -> None:
    """hooks.json with these hooks only (keyed by id), trusted as its user would."""
    doc = read_json(ws.hooks_file)
    doc["hooks"] = hooks
    ws.hooks_file.write_bytes(orjson.dumps(doc))
    trust_hooks(ws)


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(*args: str, cwd: Path) -> None:
    """git run in `cwd` as a user of its own (name and email given), its output kept."""
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def clone_of(tmp_path: Path, name: str, files: dict[str, bytes], *, force: bool = False) -> Path:
    """A repository holding `files` (added with `-f` if `force`), cloned to `tmp_path/name`:
    what a user gets from `git clone`."""
    upstream = tmp_path / f"{name}-upstream"
    for rel, data in files.items():
        (upstream / rel).parent.mkdir(parents=True, exist_ok=True)
        (upstream / rel).write_bytes(data)
    git("init", "-q", cwd=upstream)
    git("add", *(["-f"] if force else []), ".", cwd=upstream)
    git("commit", "-qm", "x", cwd=upstream)
    clone = tmp_path / name
    git("clone", "-q", str(upstream), str(clone), cwd=tmp_path)
    return clone


def run_cli(*args: str, input: bytes | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SIDECAR, *args],
        input=input if input is not None else b"",
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def invoke(*args: str, input: bytes | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the command line in this process (as `sidecar.cli.main.main`, with its handling of
    errors and its exit code), from `cwd`, with `env` over the environment; its result as
    `run_cli`'s: returncode, stdout and stderr bytes. `emit` is dispatched before the command
    line (bin/sidecar): test it with `run_cli` or `emit`."""
    from typer.testing import CliRunner

    from sidecar.cli.main import main

    assert args[:1] != ("emit",), "emit runs before the command line: use run_cli or emit"
    before = os.getcwd()
    with CliRunner().isolation(input=input or b"", env=env) as (stdout, stderr, _):
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = main(list(args))
        finally:
            os.chdir(before)
        return subprocess.CompletedProcess(["sidecar", *args], code, stdout.getvalue(),
                                           stderr.getvalue())


def fake_systemctl(tmp_path, answers: bool) -> str:
    """A PATH whose systemctl has a user manager behind it (or, like a container's, none)."""
    bin_dir = tmp_path / ("withbus" if answers else "nobus")
    bin_dir.mkdir(exist_ok=True)
    body = ("exit 0\n" if answers else
            'echo "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    (bin_dir / "systemctl").write_text("#!/bin/sh\n" + body)
    (bin_dir / "systemctl").chmod(0o755)
    return f"{bin_dir}:{Path(SIDECAR).parent}:{os.environ['PATH']}"


class DaemonProcess:
    """A real `sidecar run` process, stopped (and if need be killed) at the end of the test."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log_path = log
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [SIDECAR, "run", *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 15) -> int | None:
        code = terminate(self.proc, timeout)
        self.log.close()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def terminate(proc: subprocess.Popen, timeout: float = 15) -> int | None:
    """SIGTERM and wait (SIGKILL past `timeout`); the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def instance_docs(ws) -> list[dict]:
    """The workspace's instance files that read whole (one being replaced is passed over)."""
    docs = []
    for path in ws.instances.glob("*.json"):
        try:
            docs.append(read_json(path))
        except (OSError, ValueError):
            continue  # being replaced
    return docs


def has_leader(ws) -> bool:
    """Whether some instance file of the workspace names a leader."""
    return any(doc.get("role") == "leader" for doc in instance_docs(ws))


def is_serving(ws, daemon: DaemonProcess) -> bool:
    if daemon.proc.poll() is not None:
        raise AssertionError(f"daemon exited early:\n{daemon.output()}")
    return any(doc.get("pid") == daemon.pid and doc.get("role") == "leader"
               for doc in instance_docs(ws))


def emit(ws_root: Path, payload: bytes | None = None, *args: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the real `sidecar emit`, from inside the workspace unless told otherwise."""
    return run_cli("emit", *args, input=payload, cwd=cwd or ws_root, env=env)


def end_session(ws_root: Path, session: str, host: str = "claude-code") -> None:
    """A session starts and ends, through the real `sidecar emit`."""
    for event in ("session-start", "session-end"):
        result = emit(ws_root, None, event, "--session-id", session, "--source", host)
        assert result.returncode == 0, result.stderr


def session_record(ws, session: str, host: str = "claude-code") -> dict | None:
    """A session's record, None until it is written."""
    from sidecar.base.ids import harness_id

    path = ws.session_dir(harness_id(host, session)) / "session.json"
    return read_json(path) if path.exists() else None


def inbox_files(ws) -> list[Path]:
    return sorted(p for p in ws.inbox.iterdir() if p.name.endswith(".json") and p.is_file())


def no_manager_path(tmp_path: Path) -> str:
    """A PATH whose systemctl finds no user service manager, as in a container."""
    return fake_systemctl(tmp_path, answers=False)


def no_manager_env(tmp_path: Path) -> dict[str, str]:
    """A user of their own (HOME `tmp_path/home`, no XDG_CONFIG_HOME) with no_manager_path."""
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": "", "PATH": no_manager_path(tmp_path)}


def record_service_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """systemctl, loginctl and launchctl that only record how they were called."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    for tool in ("systemctl", "loginctl", "launchctl"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\n'
                          + ('[ "$1" = show-user ] && echo no\n' if tool == "loginctl" else "")
                          + "exit 0\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return lambda: calls.read_text().splitlines() if calls.exists() else []


def write_file(path: Path, data: str | bytes) -> Path:
    """`data` written to `path` (text as UTF-8), its missing folders made first; the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def run_with_open_files(limit: int, log: Path) -> subprocess.Popen:
    """A real `sidecar run` (serving what the registry names) allowed `limit` open files, its
    output in `log`; the test terminates it."""
    import resource

    with open(log, "wb") as out:
        return subprocess.Popen([SIDECAR, "run"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))


def fleet_config(config_home, url: str, machine: str = "laptop", heartbeat: float = 0.5) -> None:
    """config.toml's `[fleet]`: this machine publishes to `url` as `machine`."""
    with open(config_home / "config.toml", "a") as config:
        config.write(f'\n[fleet]\nurl = "{url}"\nmachine = "{machine}"\nheartbeat = {heartbeat}\n')
