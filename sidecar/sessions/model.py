"""Typed records for the session files, one reader (`from_json`) and one writer (`to_json`) each.

The files are dotcontext's schema, and dotcontext writes them too: every key a record does not
know is carried in `extra` and written back unchanged, so neither tool loses the other's data.
sidecar's own state lives under `metadata.sidecar`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sidecar.base.files import as_text
from sidecar.base.timeutil import parse_ts

Json = dict[str, Any]
Key = tuple[str, str]  # (host, host session id)
_METADATA_KEYS = frozenset(("host", "hostSessionId", "sidecar"))


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rest(data: Json, known: frozenset[str]) -> Json:
    return {k: v for k, v in data.items() if k not in known}


def _tokens(value: Any) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {k: _count(v) for k, v in value.items() if isinstance(k, str)}


def ts_or(value: str | None, default: float) -> float:
    """Epoch seconds of a stored timestamp, or `default` when it is missing or unreadable."""
    parsed = parse_ts(value)
    return default if parsed is None else parsed


@dataclass(frozen=True)
class Facts:
    """What is known of a session at fire time: what the follow-up scheduler decides on."""

    live: bool  # active again, or bound
    cron: bool = False
    subagent: bool = False
    cwd: str | None = None  # where it ran: a follow-up runs there if it lies in the workspace
    transcript_size: int | None = None  # None: no transcript, or none that can be read
    transcript_mtime: float | None = None
    limited: bool = False  # a usage limit holds (its episode is open)
    id_misfit: str | None = None  # why the session id cannot be its host's (Host.id_misfit)
    host_resumes: str | None = None  # the host said it resumes the session itself: in words
    host_resumed: str | None = None  # the host resumed it itself in this limit episode: in words


@dataclass
class LimitEpisode:
    """A usage limit the session is under: since its first failed turn, until a turn ends
    well. `failures` counts its failed turns (the first, then each resume that failed too)."""

    since: str
    failures: int
    error: str
    message: str

    @classmethod
    def from_json(cls, data: Any) -> LimitEpisode | None:
        if not isinstance(data, dict) or not isinstance(data.get("since"), str):
            return None
        return cls(data["since"], max(1, _count(data.get("failures"))),
                   as_text(data.get("error")) or "", as_text(data.get("message")) or "")

    def to_json(self) -> Json:
        return {"since": self.since, "failures": self.failures, "error": self.error, "message": self.message}


@dataclass
class HostResume:
    """What the host said of its own resume after a usage limit (Claude Code's auto-resume):
    `expected` (its limit named a reset within its horizon, so it resumes the open session
    itself at `at`), `fired`, `disabled` (it will not), `stale` (it waits for the user to
    press enter), `beyond` (the reset is more than 24 h away: it will not)."""

    state: str
    since: str
    at: str | None = None  # when it resumes (the reset it waits for)
    by: str = ""  # the host, as people know it
    message: str = ""  # its notice's own words

    @classmethod
    def from_json(cls, data: Any) -> HostResume | None:
        if not isinstance(data, dict) or not isinstance(data.get("state"), str) \
                or not isinstance(data.get("since"), str):
            return None
        return cls(data["state"], data["since"], as_text(data.get("at")), as_text(data.get("by")) or "",
                   as_text(data.get("message")) or "")

    def to_json(self) -> Json:
        return {"state": self.state, "since": self.since, "by": self.by, "message": self.message,
                **({"at": self.at} if self.at else {})}


@dataclass
class NeedsInput:
    """The host asked the user something (a permission, a question, an idle prompt) and has
    not heard back: until the next turn, tool use or end of the session."""

    since: str
    kind: str  # as the host names it: permission_prompt, idle_prompt...
    message: str

    @classmethod
    def from_json(cls, data: Any) -> NeedsInput | None:
        if not isinstance(data, dict) or not isinstance(data.get("since"), str):
            return None
        return cls(data["since"], as_text(data.get("kind")) or "input", as_text(data.get("message")) or "")

    def to_json(self) -> Json:
        return {"since": self.since, "kind": self.kind, "message": self.message}


@dataclass
class SidecarMeta:
    """What sidecar keeps in a session record: where it ran, what queued for it, replay ids."""

    cwd: str | None = None
    transcript_path: str | None = None
    cron: bool = False
    subagent: bool = False
    started_by_hook: str | None = None
    completion_reason: str | None = None
    own_end_reason: str | None = None  # how it ended before a follow-up's run reopened it
    host_pid: int | None = None  # the host's process while the session is active
    host_start: int | None = None
    host_space: str | None = None  # where that pid means something (proc.process_space)
    recent_events: list[str] = field(default_factory=list)
    follow_ups: dict[str, Json] = field(default_factory=dict)
    limit: LimitEpisode | None = None
    turn_failed: bool = False  # the current turn failed (its failure is counted already)
    turn_open: bool = False  # a turn began and has not ended (nor failed) yet
    user_turn_ended_at: str | None = None  # the last end of a turn the user ran themselves
    tokens: dict[str, int] | None = None  # from the transcript at each turn end and completion
    cost: Json | None = None  # what those cost (sidecar/cost/session.py's object); None: never priced
    needs_input: NeedsInput | None = None  # the host is waiting for the user
    host_resume: HostResume | None = None  # what the host said of its own resume in this limit
    turn_started_at: str | None = None  # when the open (or last) turn began
    last_tool: str | None = None  # the last tool the session used, for "working (last tool)"
    last_message: str | None = None  # the first lines of the assistant's last message
    activity: Json | None = None  # its state, as the rules left it (views/activity.py reads it)
    extra: Json = field(default_factory=dict)

    KEYS = frozenset(("cwd", "transcriptPath", "cron", "subagent", "startedByHook", "completionReason",
            "ownEndReason", "recentEvents", "followUps", "hostPid", "hostStart", "limit", "turnFailed",
            "tokens", "turnOpen", "userTurnEndedAt", "needsInput", "turnStartedAt", "lastTool",
            "lastMessage", "hostSpace", "activity", "cost", "hostResume"))

    @classmethod
    def from_json(cls, data: Any) -> SidecarMeta:
        if not isinstance(data, dict):
            return cls()
        recent = data.get("recentEvents")
        follow_ups = data.get("followUps")
        return cls(
            cwd=as_text(data.get("cwd")),
            transcript_path=as_text(data.get("transcriptPath")),
            cron=data.get("cron") is True,
            subagent=data.get("subagent") is True,
            started_by_hook=as_text(data.get("startedByHook")),
            completion_reason=as_text(data.get("completionReason")),
            own_end_reason=as_text(data.get("ownEndReason")),
            host_pid=_number(data.get("hostPid")),
            host_start=_number(data.get("hostStart")),
            host_space=as_text(data.get("hostSpace")),
            recent_events=[e for e in recent if isinstance(e, str)] if isinstance(recent, list) else [],
            follow_ups={k: v for k, v in follow_ups.items() if isinstance(v, dict)}
            if isinstance(follow_ups, dict) else {},
            limit=LimitEpisode.from_json(data.get("limit")),
            turn_failed=data.get("turnFailed") is True,
            turn_open=data.get("turnOpen") is True,
            user_turn_ended_at=as_text(data.get("userTurnEndedAt")),
            tokens=_tokens(data.get("tokens")),
            cost=data.get("cost") if isinstance(data.get("cost"), dict) else None,
            needs_input=NeedsInput.from_json(data.get("needsInput")),
            host_resume=HostResume.from_json(data.get("hostResume")),
            turn_started_at=as_text(data.get("turnStartedAt")),
            last_tool=as_text(data.get("lastTool")),
            last_message=as_text(data.get("lastMessage")),
            activity=data.get("activity") if isinstance(data.get("activity"), dict) else None,
            extra=_rest(data, cls.KEYS),
        )

    def to_json(self) -> Json:
        out: Json = {"cron": self.cron, "subagent": self.subagent}
        optional = (("cwd", self.cwd), ("transcriptPath", self.transcript_path),
                    ("startedByHook", self.started_by_hook), ("completionReason", self.completion_reason),
                    ("ownEndReason", self.own_end_reason), ("hostPid", self.host_pid),
                    ("hostStart", self.host_start),
                    ("hostSpace", self.host_space), ("userTurnEndedAt", self.user_turn_ended_at),
                    ("turnStartedAt", self.turn_started_at), ("lastTool", self.last_tool),
                    ("lastMessage", self.last_message), ("recentEvents", self.recent_events or None),
                    ("followUps", self.follow_ups or None),
                    ("limit", None if self.limit is None else self.limit.to_json()),
                    ("turnFailed", self.turn_failed or None), ("turnOpen", self.turn_open or None),
                    ("tokens", self.tokens), ("cost", self.cost),
                    ("needsInput", None if self.needs_input is None else self.needs_input.to_json()),
                    ("hostResume", None if self.host_resume is None else self.host_resume.to_json()),
                    ("activity", self.activity))
        out.update((k, v) for k, v in optional if v is not None)
        return {**out, **self.extra}


@dataclass
class SessionRecord:
    """`runtime/sessions/<id>/session.json`: one harness session."""

    id: str
    name: str
    status: str  # "active" or "completed"
    repo_path: str | None
    created_at: str | None
    updated_at: str | None
    started_at: str | None
    completed_at: str | None = None
    last_trace_at: str | None = None
    trace_count: int = 0
    host: str | None = None
    host_session_id: str | None = None
    sidecar: SidecarMeta = field(default_factory=SidecarMeta)
    metadata_extra: Json = field(default_factory=dict)
    extra: Json = field(default_factory=dict)

    KEYS = frozenset(("id", "name", "status", "repoPath", "createdAt", "updatedAt", "startedAt",
            "completedAt", "lastTraceAt", "traceCount", "metadata"))

    @property
    def active(self) -> bool:
        return self.status != "completed"

    @classmethod
    def new(cls, harness_id: str, host: str, session_id: str, repo: str, at: str) -> SessionRecord:
        return cls(
            id=harness_id, name=f"hook:{host}:{session_id}", status="active", repo_path=repo,
            created_at=at, updated_at=at, started_at=at, last_trace_at=at, host=host,
            host_session_id=session_id,
            extra={"artifactCount": 0, "checkpointCount": 0, "checkpoints": []},
        )

    @classmethod
    def from_json(cls, data: Json) -> SessionRecord:
        metadata = data.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        return cls(
            id=str(data.get("id") or ""), name=str(data.get("name") or ""),
            status=str(data.get("status") or "active"), repo_path=as_text(data.get("repoPath")),
            created_at=as_text(data.get("createdAt")), updated_at=as_text(data.get("updatedAt")),
            started_at=as_text(data.get("startedAt")), completed_at=as_text(data.get("completedAt")),
            last_trace_at=as_text(data.get("lastTraceAt")), trace_count=_count(data.get("traceCount")),
            host=as_text(metadata.get("host")), host_session_id=as_text(metadata.get("hostSessionId")),
            sidecar=SidecarMeta.from_json(metadata.get("sidecar")),
            metadata_extra=_rest(metadata, _METADATA_KEYS), extra=_rest(data, cls.KEYS),
        )

    def to_json(self) -> Json:
        metadata: Json = {}
        if self.host is not None:
            metadata["host"] = self.host
        if self.host_session_id is not None:
            metadata["hostSessionId"] = self.host_session_id
        metadata.update(self.metadata_extra)
        metadata["sidecar"] = self.sidecar.to_json()
        out: Json = {"id": self.id, "name": self.name, "status": self.status}
        dated = (("repoPath", self.repo_path), ("createdAt", self.created_at),
                 ("updatedAt", self.updated_at), ("startedAt", self.started_at),
                 ("completedAt", self.completed_at))
        out.update((k, v) for k, v in dated if v is not None)
        out["traceCount"] = self.trace_count
        out.update(self.extra)
        out["metadata"] = metadata
        if self.last_trace_at is not None:
            out["lastTraceAt"] = self.last_trace_at
        return out


@dataclass
class TraceLine:
    """One line of `trace.jsonl`. Its id derives from the inbox file, so a replay is known."""

    id: str
    session_id: str
    event: str
    message: str
    created_at: str
    data: Json = field(default_factory=dict)
    level: str = "info"

    def to_json(self) -> Json:
        return {"id": self.id, "sessionId": self.session_id, "level": self.level,
                "event": self.event, "message": self.message, "createdAt": self.created_at,
                "data": self.data}


@dataclass
class Binding:
    """One host session's entry in `runtime/hooks/host-sessions.json`."""

    harness_session_id: str | None
    host_session_id: str
    source: str
    repo_path: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    extra: Json = field(default_factory=dict)

    KEYS = frozenset(("harnessSessionId", "hostSessionId", "source", "repoPath", "createdAt", "updatedAt"))

    @property
    def touched(self) -> float:
        return ts_or(self.updated_at, ts_or(self.created_at, 0.0))

    @classmethod
    def from_json(cls, host: str, session_id: str, data: Json) -> Binding:
        return cls(
            harness_session_id=as_text(data.get("harnessSessionId")) or None,
            host_session_id=as_text(data.get("hostSessionId")) or session_id,
            source=as_text(data.get("source")) or host, repo_path=as_text(data.get("repoPath")),
            created_at=as_text(data.get("createdAt")), updated_at=as_text(data.get("updatedAt")),
            extra=_rest(data, cls.KEYS),
        )

    def to_json(self) -> Json:
        out: Json = {"harnessSessionId": self.harness_session_id,
                     "hostSessionId": self.host_session_id, "source": self.source}
        dated = (("repoPath", self.repo_path), ("createdAt", self.created_at), ("updatedAt", self.updated_at))
        out.update((k, v) for k, v in dated if v is not None)
        return {**out, **self.extra}


@dataclass
class Bindings:
    """The whole bindings document: {"bindings": {host: {host session id: binding}}}.

    A per-host value or a binding that is not an object is dropped when read: nothing can use
    it, and the sweep used to remove such entries one by one.
    """

    by_host: dict[str, dict[str, Binding]] = field(default_factory=dict)
    extra: Json = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Json) -> Bindings:
        raw = data.get("bindings")
        by_host: dict[str, dict[str, Binding]] = {}
        for host, per_host in (raw.items() if isinstance(raw, dict) else ()):
            if not isinstance(per_host, dict):
                continue
            kept = {sid: Binding.from_json(host, sid, b) for sid, b in per_host.items()
                    if isinstance(b, dict)}
            if kept:
                by_host[host] = kept
        return cls(by_host, _rest(data, frozenset(("bindings",))))

    def to_json(self) -> Json:
        bindings = {host: {sid: b.to_json() for sid, b in per_host.items()}
                    for host, per_host in self.by_host.items() if per_host}
        return {"bindings": bindings, **self.extra}

    def get(self, key: Key) -> Binding | None:
        return self.by_host.get(key[0], {}).get(key[1])

    def put(self, key: Key, binding: Binding) -> None:
        self.by_host.setdefault(key[0], {})[key[1]] = binding

    def remove(self, key: Key) -> bool:
        per_host = self.by_host.get(key[0])
        if per_host is None or key[1] not in per_host:
            return False
        del per_host[key[1]]
        if not per_host:
            del self.by_host[key[0]]
        return True

    def items(self) -> list[tuple[Key, Binding]]:
        return [((host, sid), b) for host, per_host in self.by_host.items() for sid, b in per_host.items()]

    def __len__(self) -> int:
        return sum(len(per_host) for per_host in self.by_host.values())
