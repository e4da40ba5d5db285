"""Events: parse one inbox file, validate it and name what it means.

A host's raw hook payload is a valid event as it stands; the fields sidecar reads are looked
up under each host's own names (a host whose payload keeps them in a shape of its own reads
them out itself: `Host.payload_fields`), and an event's name means what its host says it means
(`hosts/registry.py`). Anything it does not understand is kept, not refused.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from sidecar.base.errors import SidecarError
from sidecar.base.timeutil import parse_ts
from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts, Failure
from sidecar.vocabulary import EventKind, normalise

MAX_EVENT_BYTES = 1024 * 1024
ENVELOPE = "sidecarEnvelope"  # `sidecar emit`'s wrapper around a host's payload
SESSION_ID = re.compile(r"[A-Za-z0-9._:][A-Za-z0-9._:-]{0,127}")  # never an option: no leading -
HOST_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")

EVENT_FIELDS = ("event", "hook_event_name", "type", "hook")
SESSION_FIELDS = ("session_id", "sessionId", "thread-id")


class BadEvent(SidecarError, ValueError):
    """The file is not a usable event; the message is the reason shown in `rejected/`."""


def canonical(host: str, name: str) -> EventKind | None:
    """What event `name` from `host` means (each host's own names first), or None for one
    sidecar only traces."""
    return registry.event_kind(host, name)


@dataclass
class Event:
    """One validated event, as the session store applies it."""

    file: str  # the inbox file name: unique per drop, and the event's id
    name: str  # as the host named it
    kind: EventKind | None  # None for events that are only traced
    host: str
    session_id: str
    ts: float
    payload: dict[str, Any] = field(repr=False)
    hook_id: str | None = None  # the follow-up hook whose run produced it (SIDECAR_HOOK_ID)
    host_pid: int | None = None  # the host's process, and its start time (a reused pid differs)
    host_start: int | None = None
    host_space: str | None = None  # where that pid means something (proc.process_space)
    # The generic fields its host reads out of a payload of its own shape (Host.payload_fields)
    fields: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def sort_key(self) -> tuple[float, str]:
        return (self.ts, self.file)

    def text(self, key: str) -> str | None:
        value = self.fields.get(key) or self.payload.get(key)
        return value if isinstance(value, str) and value else None

    @property
    def cwd(self) -> str | None:
        return self.text("cwd")

    @property
    def transcript_path(self) -> str | None:
        return self.text("transcript_path") or self.text("transcriptPath")

    @property
    def reason(self) -> str | None:
        return self.text("reason")

    @property
    def recorded_end_at(self) -> float | None:
        """When the host's own record says the session ended (an end the daemon found in the
        host's files: hostends.py); None for an end the host sent."""
        value = self.payload.get("recordedEndAt")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def recorded_facts(self) -> EndFacts | None:
        """What the daemon read, as the workspace's owner, of the last turn and tokens along
        with a recorded end; None: the session's end reads them itself."""
        value = self.payload.get("recordedFacts")
        return EndFacts.from_json(value) if isinstance(value, dict) else None

    @property
    def error_kind(self) -> str:
        """A failed turn's error kind, as the host names it (Claude Code: `rate_limit`)."""
        stated = self._stated_failure()
        return stated.kind if stated is not None else normalise(
            self.text("error") or self.text("errorKind") or "unknown").replace("-", "_")

    @property
    def error_message(self) -> str:
        """A failed turn's text: where a host states when its limit resets."""
        stated = self._stated_failure()
        if stated is not None:
            return stated.message[:2000]
        for key in ("last_assistant_message", "error_message", "errorMessage", "message"):
            text = self.text(key)
            if text:
                return text[:2000]
        return ""

    def _stated_failure(self) -> Failure | None:
        host = registry.find(self.host)
        return host.stated_failure(self.payload) if host is not None else None

    @property
    def tool_name(self) -> str | None:
        return self.text("tool_name") or self.text("toolName") or self.text("tool")

    @property
    def input_kind(self) -> str:
        """What a needs-input event asks for, as its host names it (Claude Code:
        `permission_prompt`, `idle_prompt`); `input` when it does not say."""
        return self.text("notification_type") or self.text("notificationType") or "input"

    @property
    def input_message(self) -> str:
        """The host's own words for what it asks the user (a needs-input event)."""
        return (self.text("message") or "")[:500]

    @property
    def last_message(self) -> str | None:
        """The assistant's last message, where a turn end's payload carries it
        (`last_assistant_message`; a host that keeps it elsewhere maps it in its
        `payload_fields`). A subagent's turn end (it names the subagent's own transcript, as
        `agent_transcript_path`) tells of the subagent, not of the session: None."""
        return None if self.payload.get("agent_transcript_path") else self.text("last_assistant_message")

    @property
    def is_cron(self) -> bool:
        return bool(self.payload.get("cron"))

    @property
    def is_subagent(self) -> bool:
        return bool(self.payload.get("subagent"))


def _first_text(payload: dict[str, Any], keys: tuple[str, ...], what: str) -> str:
    for key in keys:
        if key in payload:
            value = payload[key]
            if not isinstance(value, str):
                raise BadEvent(f"{what} field {key!r} must be a string, not {type(value).__name__}")
            return value
    raise BadEvent(f"no {what} (expected one of: {', '.join(keys)})")


def unwrap(document: Any) -> tuple[Any, dict[str, Any]]:
    """A host's payload and the fields `sidecar emit` put beside it in its envelope.

    A plain dropped event (no envelope) is its own payload, with nothing beside it.
    """
    if isinstance(document, dict) and isinstance(document.get(ENVELOPE), dict) and "payload" in document:
        return document["payload"], document[ENVELOPE]
    return document, {}


def _load(data: bytes) -> Any:
    if len(data) > MAX_EVENT_BYTES:
        raise BadEvent(f"larger than {MAX_EVENT_BYTES} bytes")
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if not data.strip():
            raise BadEvent("empty file") from None
        try:
            return _lenient(data)
        except ValueError:
            raise BadEvent(f"not UTF-8 JSON: {exc}") from None


def _lenient(data: bytes) -> Any:
    """Valid JSON orjson refuses: a lone surrogate escape (what JavaScript writes when it cuts a
    string inside an emoji) becomes U+FFFD, and a number beyond a double (`1e400`) is kept as
    its text. Anything else still fails."""
    import json

    try:
        value = json.loads(data.decode("utf-8"), parse_float=_float_or_text,
                           parse_int=lambda text: int(text) if len(text) < 4000 else text,
                           parse_constant=_not_json)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return _clean(value)


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")  # NaN and Infinity: Python's extension, not JSON


def _float_or_text(text: str) -> float | str:
    number = float(text)
    return number if math.isfinite(number) else text


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return {_clean(k): _clean(v) for k, v in value.items()} if isinstance(value, dict) else value


def _host(payload: dict[str, Any], meta: dict[str, Any]) -> str:
    """The payload's own top-level `host` wins, then `emit --source`, then what it looks like;
    a host named is checked against what the payload and the hook's process say."""
    host = payload.get("host", meta.get("host"))
    if host is None:
        return registry.infer_host(payload)
    if not isinstance(host, str) or not HOST_NAME.fullmatch(host):
        raise BadEvent(f"host {str(host)[:80]!r} is not [A-Za-z0-9._-]{{1,64}}")
    # The hook's name is not the last word: another host may run this host's hooks (Cursor's
    # CLI runs Claude Code's), and its session must never be resumed with this host's program.
    process = meta.get("hostName")
    return registry.real_host(host, payload, process if isinstance(process, str) else None)


def _session_id(payload: dict[str, Any], meta: dict[str, Any]) -> str:
    fallback = meta.get("sessionId")
    if isinstance(fallback, str) and not any(key in payload for key in SESSION_FIELDS):
        session_id = fallback  # `emit --session-id`, for a payload that names none
    else:
        session_id = _first_text(payload, SESSION_FIELDS, "session id")
    if not SESSION_ID.fullmatch(session_id):
        raise BadEvent(f"session id {session_id[:140]!r} is not [A-Za-z0-9._:-]{{1,128}} not starting with -")
    if session_id in (".", ".."):
        raise BadEvent(f"session id {session_id!r} is a path component, not an id")
    return session_id


def parse(data: bytes, file: str, mtime: float) -> Event:
    """Validate the bytes of one event file; BadEvent says why it is unusable.

    Only the payload's top-level fields count: nothing nested in it (a tool's input or
    output) ever names the event, its session, its host or its time.
    """
    payload, meta = unwrap(_load(data))
    if not isinstance(payload, dict):
        raise BadEvent(f"not a JSON object but a {type(payload).__name__}")
    host = _host(payload, meta)
    known = registry.find(host)
    fields = known.payload_fields(payload) if known is not None else {}
    view = {**payload, **fields} if fields else payload  # where the event's names are read
    name = _event_name(view, meta)
    ts = parse_ts(payload["ts"]) if "ts" in payload else None
    if ts is None:
        ts = parse_ts(meta.get("ts"))
    hook_id = payload.get("sidecarHookId", meta.get("hookId"))
    host_pid = _whole(payload.get("hostPid", meta.get("hostPid")))
    host_start = _whole(payload.get("hostStart", meta.get("hostStart")))
    claimed = _claimed(known.pid_variable if known is not None else None, meta)
    if claimed is not None:  # the host's own word for its process, an ancestor of the hook
        host_pid, host_start = claimed
    event = Event(
        file=file,
        name=name,
        kind=canonical(host, name),
        host=host,
        session_id=_session_id(view, meta),
        ts=mtime if ts is None else ts,  # documented fallback: when it was dropped
        payload=payload,
        hook_id=hook_id if isinstance(hook_id, str) and hook_id else None,
        host_pid=host_pid if host_pid and host_pid > 1 else None,
        host_start=host_start,
        host_space=_text_or_none(payload.get("hostSpace", meta.get("hostSpace"))),
        fields=fields,
    )
    if event.kind == EventKind.NEEDS_INPUT and known is not None and not known.is_ask(event.input_kind):
        event.kind = None  # a notice, not an ask: traced only (Host.asks)
    return event


def _claimed(variable: str | None, meta: dict[str, Any]) -> tuple[int, int] | None:
    """The pid and start time of the process the host's own `variable` names, where `emit`
    found it among the hook's ancestors (its `pidClaims`); None otherwise."""
    claims = meta.get("pidClaims")
    found = claims.get(variable) if variable is not None and isinstance(claims, dict) else None
    if isinstance(found, list) and len(found) == 2:
        pid, start = _whole(found[0]), _whole(found[1])
        if pid is not None and pid > 1 and start is not None:
            return pid, start
    return None


def _event_name(payload: dict[str, Any], meta: dict[str, Any]) -> str:
    """`emit --event`'s name (the hook command of a host whose payloads name no event says which
    it is: a payload field such as `type` may mean something else), else the payload's own."""
    named = meta.get("event")
    if isinstance(named, str):
        name = named.strip()
    else:
        name = _first_text(payload, EVENT_FIELDS, "event name").strip()
    if not name or len(name) > 128:
        raise BadEvent("event name must be 1 to 128 characters")
    return name


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
