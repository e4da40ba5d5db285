"""`sidecar status`'s report: its JSON contract (REPORT_VERSION and the shape of each part).

The shapes are for the type checker only: `status` builds its report without loading typing
(views/status.py), so they are defined where only the checker reads them.
"""

from __future__ import annotations

REPORT_VERSION = 1

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any, NotRequired, TypedDict

    class InstanceRow(TypedDict):
        id: str
        pid: int | None
        hostname: str | None
        version: str | None
        build: str | None
        role: str | None
        startedAt: str | None
        heartbeatAt: str | None
        heartbeatAgeSeconds: float | None
        live: bool
        applied: int
        rejected: int
        errors: int
        lastError: str
        plugins: dict[str, dict[str, int]]
        # OpenTelemetry export, only while the instance exports: endpoint, exported, dropped,
        # queued, error, errorAt (telemetry/feed.py)
        telemetry: NotRequired[dict[str, Any]]

    class BindingRow(TypedDict):
        host: str
        sessionId: str
        harnessSessionId: str | None
        updatedAt: str | None
        ageSeconds: float | None
        hostPid: int | None  # the host's process, when the session reported it
        hostAlive: bool | None

    class HookRow(TypedDict):
        id: str
        name: str
        enabled: bool
        event: str
        delaySeconds: int
        action: str | list[str] | dict[str, str]  # a notice's target masked
        lastStatus: str | None
        lastFiredAt: str | None
        lastLog: str | None
        lastLine: str | None  # a failed firing's: the last line its log says
        trusted: bool  # an enabled hook is trusted on this machine as it stands (disabled: true)

    class QueueRow(TypedDict):
        hookId: str
        host: str
        sessionId: str
        dueInSeconds: float
        retries: int
        claimedBy: str | None
        running: dict[str, Any] | None  # its action: pid, startedAt, log, alive, and how it ended

    class BudgetRow(TypedDict):  # views/budget.py: a resume a budget held back, or let through
        hook: str
        host: str
        session: str
        held: bool
        reason: str  # over budget ($5.12 of $5.00 today); cost unknown: not held (why)
        at: str

    class HooksSection(TypedDict):
        hooks: list[HookRow]
        queue: list[QueueRow]
        error: str | None

    class WorkspaceReport(HooksSection):
        root: str
        served: bool
        storage: str | None  # why nothing can be written in its runtime (storage.py), while so
        instances: list[InstanceRow]
        inbox: dict[str, Any]
        rejected: int
        sessions: dict[str, int]
        tokens: dict[str, int] | None  # the workspace's totals (usage.json); None before any
        cost: dict[str, Any] | None  # its spend (usage.json): `usd` in all, `today`'s; None before any
        bindings: list[BindingRow]
        plugins: dict[str, dict[str, int]]
        errors: list[str]
        budget: NotRequired[list[BudgetRow]]  # only where a budget has something to say today

    class CoordinationRow(TypedDict):
        backend: str  # "file" or "redis"
        url: str | None  # the Redis URL, its password masked
        reachable: bool
        error: str | None
        since: str | None  # since when it has been unreachable, as the instances found
        # This machine's wall clock minus Redis's, in seconds (None: the file backend, or
        # unknown). Measured by `status` itself rather than read from a daemon's instance
        # file: it is this machine's clock that is judged, also where no daemon runs here, and
        # TIME costs the round trip the ping it replaces did.
        clockOffsetSeconds: float | None
        persistence: dict[str, Any] | None  # Redis's: appendonly, appendfsync, evicts
        warnings: list[str]  # a clock off Redis's by more than a second; persistence wanting

    class FleetRow(TypedDict):
        url: str | None  # the fleet's Redis, its password masked
        machine: str | None  # the name this machine publishes under
        publishing: bool  # its heartbeat is in the fleet's Redis now
        error: str | None  # why it is not, or cannot be told

    class Report(TypedDict):
        version: int
        sidecar: str
        coordination: CoordinationRow
        fleet: NotRequired[FleetRow]  # only where a fleet is configured (docs/fleet.md)
        workspaces: list[WorkspaceReport]


class _ByOrjson(Exception):
    """A value the standard library would write otherwise than orjson."""


def dumps(report: object) -> bytes:
    """The report as jsonfile.dumps writes it (orjson, indented by 2, a newline after), with
    `_json`'s C quoting: `json` itself costs `status` more than its report (it loads `re`), and
    orjson more. A value written otherwise (a float below 1e-4, text no UTF-8 can hold) is
    written by jsonfile, imported then."""
    try:
        return (_dumps(report, "") + "\n").encode()
    except (_ByOrjson, UnicodeEncodeError):
        from sidecar.base.startup import full_start

        full_start()
        from sidecar import jsonfile

        return jsonfile.dumps(report)


def _dumps(value: object, indent: str) -> str:
    from _json import encode_basestring  # the C quoting json.dumps(ensure_ascii=False) uses

    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{encode_basestring(key)}: {_dumps(item, inner)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + _dumps(item, inner) for item in value) + "\n" + indent + "]"
    if isinstance(value, str):
        return str(encode_basestring(value))
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and value and abs(value) < 1e-4:
        raise _ByOrjson("a float orjson writes otherwise (1e-5, not 1e-05)")
    if isinstance(value, int | float):
        return repr(value)
    raise _ByOrjson(f"{type(value).__name__} in a report")
