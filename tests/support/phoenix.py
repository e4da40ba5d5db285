"""A real Arize Phoenix of a test's own: the OpenTelemetry backend the export tests send spans
to, run offline on free loopback ports with its data in the test's tmp folder, and the spans
it stored read back through its own REST API as plain dicts.

tests/install-phoenix.sh installs Phoenix into a virtual environment of its own in the hosts'
cache; a test skips, saying why, where it is not there. Phoenix serves its web UI, its REST API
and OTLP over HTTP (`/v1/traces`) on one port and OTLP over gRPC on another. It is told to make
no request of its own to the internet (telemetry pixels, web fonts, the sandbox download) and
its assistant and MCP server are off. Its SQLite database lives in its working folder, so a
server stopped and started again (`stop()`, `start()`: the "collector stopped mid-run" case)
serves the same ports and still has every span it stored before.

The fixtures `phoenix` (started) and `phoenix_server` (not started) are registered for every
test by tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from helpers import HOSTS_CACHE, terminate
from support.redis_server import _die_with_parent, free_port

PHOENIX_VERSION = "20.26.1"
# A start takes 6-8 s here (its database migrations first on a fresh folder); its RSS is ~420 MB.
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0
# Phoenix's own project name for spans whose resource names none (`openinference.project.name`).
DEFAULT_PROJECT = "default"
PAGE = 1000  # the most spans one REST page holds


def phoenix_binary() -> Path:
    """The venv's `phoenix` command; the test skips, saying why, where there is none."""
    venv = HOSTS_CACHE / f"arize-phoenix-{PHOENIX_VERSION}"
    if not (venv / ".installed").exists():
        pytest.skip(f"arize-phoenix {PHOENIX_VERSION} is not installed at {venv} "
                    "(tests/install-phoenix.sh installs it)")
    return venv / "bin" / "phoenix"


class PhoenixServer:
    """One `phoenix serve` process; its working folder, log and HOME are in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.binary = phoenix_binary()
        self.folder = folder
        self.working_dir = folder / "working"
        self.working_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / "phoenix.log"
        self.port = free_port()
        self.grpc_port = free_port()
        while self.grpc_port == self.port:
            self.grpc_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The base URL: the UI, `/v1/...` REST and `/v1/traces` OTLP/HTTP all hang off it;
        what `OTEL_EXPORTER_OTLP_ENDPOINT` is given (the exporter adds `/v1/traces`)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_endpoint(self) -> str:
        """OTLP over HTTP, the full path (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)."""
        return f"{self.url}/v1/traces"

    @property
    def grpc_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def env(self) -> dict[str, str]:
        """The process's environment: offline, loopback, its own ports and folders; no OTEL_*
        of the test's (Phoenix would trace itself to it)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
        env.update({
            "HOME": str(self.folder),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_WORKING_DIR": str(self.working_dir),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
            "PHOENIX_ENABLE_MCP_SERVER": "false",
            "PHOENIX_LOG_MIGRATIONS": "false",
        })
        return env

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None, "Phoenix was never started"
        return self.proc.pid

    def start(self) -> PhoenixServer:
        """Start Phoenix on its ports and wait until it answers; one that cannot start fails
        the test with its log."""
        if self.running:
            raise RuntimeError(f"Phoenix is already running (pid {self.pid})")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([str(self.binary), "serve"], env=self.env(),
                                         cwd=self.folder, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"Phoenix did not start on {self.url}:\n{self.log()[-4000:]}")
            time.sleep(0.2)
        return self

    def _answers(self) -> bool:
        """Whether Phoenix answers its REST API (`/healthz` answers before the database is
        ready to be read; the projects list does not)."""
        try:
            return bool(self.get("/v1/projects", timeout=2).get("data") is not None)
        except (OSError, ValueError):
            return False

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM and wait (SIGKILL past `timeout`); the exit status, None if never started."""
        if self.proc is None:
            return None
        self.thaw()  # a frozen one would take SIGTERM only once resumed
        return terminate(self.proc, timeout)

    def kill(self) -> None:
        """SIGKILL, at once (a crash, or a teardown that must not wait)."""
        if self.proc is not None and self.proc.poll() is None:
            self.thaw()  # a stopped process dies of SIGKILL too; resumed, its children see it
            self.proc.kill()
            self.proc.wait()

    def freeze(self) -> None:
        """SIGSTOP: a collector that hangs. The kernel still accepts connections on its port,
        so an exporter connects, sends, and waits for an answer that never comes."""
        assert self.running, "Phoenix is not running"
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGCONT)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log was written)"

    def get(self, path: str, timeout: float = 10) -> Any:
        """GET a path of Phoenix's API, the JSON it answers."""
        with urllib.request.urlopen(self.url + path, timeout=timeout) as reply:
            return json.loads(reply.read())

    def projects(self) -> list[str]:
        return [p["name"] for p in self.get("/v1/projects?limit=1000")["data"]]

    def spans(self, project: str = DEFAULT_PROJECT, **filters: Any) -> list[dict[str, Any]]:
        """Every span Phoenix stored in `project`, oldest first, as plain dicts (`plain_span`).
        `filters` are the REST API's own (trace_id=..., name=..., parent_id="null" for roots,
        status_code="ERROR"); a project not yet created (no span arrived) has none."""
        spans: list[dict[str, Any]] = []
        query: dict[str, Any] = {"limit": PAGE, **filters}
        while True:
            path = f"/v1/projects/{quote(project, safe='')}/spans?{urlencode(query, doseq=True)}"
            try:
                page = self.get(path)
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return []
                raise
            spans += [plain_span(s) for s in page["data"]]
            if not page.get("next_cursor"):
                return sorted(spans, key=lambda s: (s["start_time"], s["name"]))
            query["cursor"] = page["next_cursor"]

    def wait_for_spans(self, enough: Callable[[list[dict[str, Any]]], bool],
                       project: str = DEFAULT_PROJECT, timeout: float = 30,
                       **filters: Any) -> list[dict[str, Any]]:
        """The project's spans once `enough` accepts them (Phoenix stores what it receives
        in batches, a moment later); fails the test with what was there at `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans(project, **filters)
            if enough(spans):
                return spans
            if time.monotonic() > deadline:
                shown = json.dumps(spans, indent=1, default=str)[-6000:]
                raise AssertionError(f"Phoenix never had the spans awaited in {project!r} "
                                     f"within {timeout}s; it has:\n{shown}")
            time.sleep(0.3)


def plain_span(span: dict[str, Any]) -> dict[str, Any]:
    """One span of Phoenix's REST answer as the test reads it: ids in lowercase hex, the
    status as "OK" / "ERROR" / "UNSET", attributes flat as the exporter named them
    ("gen_ai.usage.input_tokens"), events as {name, attributes, timestamp}. Phoenix adds its
    own OpenInference names beside the GenAI ones it maps (`session.id` from
    `gen_ai.conversation.id`, `llm.token_count.*`). It keeps no span links (its REST model has
    none), so there is no "links" key to be read."""
    return {
        "name": span["name"],
        "trace_id": span["context"]["trace_id"],
        "span_id": span["context"]["span_id"],
        "parent_id": span.get("parent_id"),
        "kind": span.get("span_kind"),
        "start_time": span["start_time"],
        "end_time": span["end_time"],
        "status": span["status_code"],
        "status_message": span.get("status_message") or "",
        "attributes": flat(span.get("attributes") or {}),
        "events": [{"name": e["name"], "timestamp": e["timestamp"],
                    "attributes": flat(e.get("attributes") or {})} for e in span.get("events") or []],
    }


def flat(attributes: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted names joined back: Phoenix stores attributes nested by their dots and its REST
    answer flattens a span's own but passes an event's as stored."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, name + "."))
        else:
            out[name] = value
    return out


@pytest.fixture
def phoenix_server(tmp_path: Path) -> Iterator[PhoenixServer]:
    """A Phoenix of the test's own, not yet started (`start()`, `stop()`, `start()` again on
    the same ports); stopped at teardown, and killed if it would not stop."""
    server = PhoenixServer(tmp_path / "phoenix")
    try:
        yield server
    finally:
        server.stop()
        server.kill()


@pytest.fixture
def phoenix(phoenix_server: PhoenixServer) -> PhoenixServer:
    """A started Phoenix on free loopback ports."""
    return phoenix_server.start()
