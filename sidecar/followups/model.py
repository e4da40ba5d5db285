"""Typed records of `runtime/hooks.json`: hooks, their firings, queue entries, the document.

Each has one reader (`from_json`, which validates and names the JSON path at fault) and one
writer (`to_json`). Keys a record does not know are kept as they are. The document carries a
`version`; `delayMinutes` (from before versions, or a hand edit after older docs) becomes
`delaySeconds` on load, whatever the version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

import orjson

from sidecar.base import hooksjson
from sidecar.base.errors import SidecarError
from sidecar.base.files import as_text
from sidecar.base.outcome import Outcome
from sidecar.base.timeutil import iso, parse_ts
from sidecar.followups.notify.targets import Notify, TargetError, check, event_misfit
from sidecar.layout import HOOK_NAME
from sidecar.vocabulary import EventKind, FollowUpEvent

Json = dict[str, Any]
VERSION = hooksjson.VERSION
HISTORY_LIMIT = hooksjson.HISTORY_LIMIT
MAX_DELAY = hooksjson.MAX_DELAY
DEFAULT_DELAY = hooksjson.DEFAULT_DELAY
DEFAULT_PROMPT_FILE = "hooks/post-task.md"
PROMPT_FILE = re.compile(r"hooks/[^/\\]+\.md")
HOOK_ID = HOOK_NAME  # a hook id names its log folder: one plain name
FOLLOW_UP_EVENTS, HOOK_EVENTS = tuple(FollowUpEvent), tuple(EventKind) + tuple(FollowUpEvent)
HookEvent = EventKind | FollowUpEvent


class HooksError(SidecarError, ValueError):
    """hooks.json is unusable; the message says where (line and column, or JSON path)."""


def fail(path: str, message: str) -> NoReturn:
    raise HooksError(f"{path}: {message}")


def _whole(value: Any, path: str, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        limit = f"{low}..{high}" if high is not None else f">= {low}"
        fail(path, f"must be a whole number {limit}, not {value!r}")
    return value


def _flag(data: Json, key: str, default: bool, path: str) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        fail(f"{path}.{key}", f"must be true or false, not {value!r}")
    return value


def _string(value: Any, path: str) -> str:
    if type(value) is not str:
        fail(path, "must be a string")
    return value


@dataclass(slots=True)
class FiringRecord:
    """One entry of a hook's `history`."""

    at: str | None
    status: str | None
    host: str | None
    session_id: str | None
    log: str | None
    line: str | None = None  # a failed firing's last log line, kept as it finished
    kept: bool = False  # whether a line was kept (else, as in older entries: read the log)
    retry: bool = False  # a failed firing run again by hand (`sidecar hooks retry`)

    @classmethod
    def from_json(cls, data: Any) -> FiringRecord:
        get = data.get if isinstance(data, dict) else {}.get
        at, status, host, session_id, log, line = (
            as_text(get(k)) for k in ("at", "status", "host", "sessionId", "log", "lastLine"))
        return cls(at, status, host, session_id, log, line, isinstance(data, dict) and "lastLine" in data,
                   get("retry") is True)

    def to_json(self) -> Json:
        kept = {"lastLine": self.line} if self.kept else {}
        return {"at": self.at, "status": self.status, "host": self.host,
                "sessionId": self.session_id, "log": self.log, **kept,
                **({"retry": True} if self.retry else {})}


Action = str | list[str] | Notify  # "resume", a command's argv, or a notice to send


@dataclass(slots=True)
class Hook:
    """A follow-up hook: what event queues it, after what delay, and what firing does."""

    id: str
    name: str
    event: HookEvent = EventKind.SESSION_END
    delay_seconds: int = DEFAULT_DELAY
    prompt_file: str | None = DEFAULT_PROMPT_FILE
    action: Action = "resume"
    enabled: bool = True
    skip_cron: bool = True
    skip_subagents: bool = True
    max_context_k: int = 0
    reasons: list[str] | None = None  # end reasons that queue it; None: every one but `stale`
    also_interrupted: bool = False  # a session-end hook: also when the last turn never ended
    again_after_user_turn: bool = False  # once more each time the user's own turn ends after it
    also_follow_ups: bool = False  # a notify hook: also for what a follow-up's own run does
    created_at: str | None = None
    last_status: str | None = None
    last_fired_at: str | None = None
    history: list[FiringRecord] = field(default_factory=list)
    extra: Json = field(default_factory=dict)

    KEYS = frozenset(("id", "name", "event", "delaySeconds", "promptFile", "action", "enabled", "skipCron",
            "skipSubagents", "maxContextK", "createdAt", "lastStatus", "lastFiredAt", "history",
            "reasons", "alsoInterrupted", "againAfterUserTurn", "alsoFollowUps"))

    @classmethod
    def from_json(cls, data: Any, path: str) -> Hook:
        """Validate one hook; HooksError names the JSON path of a bad value."""
        if not isinstance(data, dict):
            fail(path, "must be an object")
        for key in ("id", "name"):
            if not isinstance(data.get(key), str) or not data[key]:
                fail(f"{path}.{key}", "must be a non-empty string")
        if not HOOK_ID.fullmatch(data["id"]):
            fail(f"{path}.id", f"must be a plain name ([a-z0-9._-], like post-task), not "
                               f"{data['id'][:80]!r}: it names the hook's log folder")
        event = data.get("event", EventKind.SESSION_END.value)
        if event not in HOOK_EVENTS:
            fail(f"{path}.event", f"must be one of {', '.join(HOOK_EVENTS)}, not {event!r}")
        action = _action(data.get("action", "resume"), path)
        notify = isinstance(action, Notify)  # a notice: at once, and with no prompt
        if misfit := event_misfit(event, notify):
            fail(f"{path}.event", misfit)
        history = data.get("history", [])
        if not isinstance(history, list):
            fail(f"{path}.history", "must be a list")
        return cls(
            id=data["id"], name=data["name"], action=action,
            event=FollowUpEvent(event) if event in FOLLOW_UP_EVENTS else EventKind(event),
            delay_seconds=_whole(data.get("delaySeconds", 0 if notify else DEFAULT_DELAY),
                                 f"{path}.delaySeconds", 0, MAX_DELAY),
            prompt_file=_prompt_file(data.get("promptFile", None if notify else DEFAULT_PROMPT_FILE), path),
            enabled=_flag(data, "enabled", True, path), skip_cron=_flag(data, "skipCron", True, path),
            skip_subagents=_flag(data, "skipSubagents", True, path),
            max_context_k=_whole(data.get("maxContextK", 0), f"{path}.maxContextK", 0, None),
            reasons=_reasons(data.get("reasons"), f"{path}.reasons"),
            also_interrupted=_flag(data, "alsoInterrupted", False, path),
            again_after_user_turn=_flag(data, "againAfterUserTurn", False, path),
            also_follow_ups=_flag(data, "alsoFollowUps", False, path),
            created_at=as_text(data.get("createdAt")), last_status=as_text(data.get("lastStatus")),
            last_fired_at=as_text(data.get("lastFiredAt")),
            history=[FiringRecord.from_json(h) for h in history[-HISTORY_LIMIT:]],
            extra={k: v for k, v in data.items() if k not in cls.KEYS},
        )

    def to_json(self) -> Json:
        return {
            "id": self.id, "name": self.name, "event": self.event.value,
            "delaySeconds": self.delay_seconds, "promptFile": self.prompt_file,
            "action": self.action.to_json() if isinstance(self.action, Notify) else self.action,
            "enabled": self.enabled, "skipCron": self.skip_cron,
            "skipSubagents": self.skip_subagents, "maxContextK": self.max_context_k,
            **({} if self.reasons is None else {"reasons": self.reasons}),
            **({"alsoInterrupted": True} if self.also_interrupted else {}),
            **({"againAfterUserTurn": True} if self.again_after_user_turn else {}),
            **({"alsoFollowUps": True} if self.also_follow_ups else {}),
            "createdAt": self.created_at, "lastStatus": self.last_status,
            "lastFiredAt": self.last_fired_at, "history": [h.to_json() for h in self.history],
            **self.extra,
        }

    def record_firing(self, ended: Outcome, at: float, host: str | None, session_id: str | None,
                      log: str | None, fired: bool = True, line: str | None = None,
                      retry: bool = False) -> None:
        """One more entry of the history; `fired=False` for a note made when the hook was not
        even queued (it leaves `lastFiredAt` alone); `line`: a failed firing's last log line,
        kept so no reader has to read the log; `retry`: the entry was a retry (manual.py)."""
        self.last_status = str(ended)  # the text hooks.json keeps (outcome.py)
        if fired:
            self.last_fired_at = iso(at)
        self.history.append(FiringRecord(iso(at), self.last_status, host, session_id, log, line,
                                         line is not None, retry))
        del self.history[:-HISTORY_LIMIT]


def _reasons(value: Any, path: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(r, str) and r for r in value):
        fail(path, 'must be a list of end reasons, like ["exit", "host-exited"], or absent')
    return list(value)


def _prompt_file(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or ".." in value or not PROMPT_FILE.fullmatch(value):
        fail(f"{path}.promptFile",
             f"must name a .md file directly under hooks/ (like hooks/post-task.md), not {value!r}")
    return value


def _action(value: Any, path: str) -> Action:
    if value == "resume":
        return "resume"
    if isinstance(value, dict) and value.keys() == {"notify"}:
        try:
            return check(value["notify"])
        except TargetError as exc:
            fail(f"{path}.action.notify", str(exc))
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value) or not value[0]:
        fail(f"{path}.action", 'must be "resume", a command as a non-empty list of strings, '
                               'or {"notify": TARGET}')
    return list(value)


@dataclass(slots=True)
class Run:
    """A started action: the runner's process (pid and start time), its log, when it began.
    Written before anything waits for it, so any later leader can adopt it. `mac` proves
    this user's sidecar wrote it (see trust.sign): a record without one is never adopted."""

    pid: int
    start: int | None
    log: str
    started_at: str
    mac: str | None = None

    @classmethod
    def from_json(cls, data: Any, path: str) -> Run:
        if not isinstance(data, dict) or type(data.get("pid")) is not int \
                or not isinstance(data.get("log"), str):
            fail(path, "must be an object with the action's pid and log")
        start = data.get("start")
        return cls(data["pid"], start if type(start) is int else None, data["log"],
                   as_text(data.get("startedAt")) or "", as_text(data.get("mac")))

    def to_json(self) -> Json:
        return {"pid": self.pid, "start": self.start, "log": self.log, "startedAt": self.started_at,
                "mac": self.mac}


def entry_id(hook_id: str, host: str, session_id: str) -> str:
    return f"{hook_id}:{host}:{session_id}"


@dataclass(slots=True)
class QueueEntry:
    """One queued firing of a hook for a host session."""

    id: str
    hook_id: str
    host: str
    session_id: str
    harness_session_id: str | None = None
    enqueued_at: str | None = None
    due_at: str | float | None = None  # an unreadable value counts as due now
    retries: int = 0
    claimed_by: str | None = None
    claimed_at: str | None = None
    log: str | None = None  # set with the claim: where its action will log (and say it started)
    run: Run | None = None  # once its action has started: which process, where it logs
    retry: bool = False  # queued by hand to run a failed firing again (manual.py)
    extra: Json = field(default_factory=dict)

    KEYS = frozenset(("id", "hookId", "host", "sessionId", "harnessSessionId", "enqueuedAt", "dueAt",
            "retries", "claimedBy", "claimedAt", "log", "run", "retry"))

    @property
    def due(self) -> float:
        """When it is due; an unreadable `dueAt` counts as due at once."""
        parsed = parse_ts(self.due_at)
        return float("-inf") if parsed is None else parsed

    @classmethod
    def from_json(cls, data: Any, path: str) -> QueueEntry:
        # Written for speed as well as clarity: a restart or a hand edit reloads every entry.
        if not isinstance(data, dict):
            fail(path, "must be an object")
        get = data.get
        hook_id = _string(get("hookId"), f"{path}.hookId")
        host = _string(get("host"), f"{path}.host")
        session_id = _string(get("sessionId"), f"{path}.sessionId")
        key_id = get("id")
        if key_id is None:
            key_id = entry_id(hook_id, host, session_id)
        elif type(key_id) is not str or not key_id:
            fail(f"{path}.id", f"must be a non-empty string, not {key_id!r}")
        claimed = get("claimedBy")
        if claimed is not None and type(claimed) is not str:
            fail(f"{path}.claimedBy", f"must be an instance id or null, not {claimed!r}")
        due, retries = get("dueAt"), get("retries", 0)
        return cls(
            key_id, hook_id, host, session_id, as_text(get("harnessSessionId")),
            as_text(get("enqueuedAt")),
            due if isinstance(due, (str, float, int)) and not isinstance(due, bool) else None,
            retries if type(retries) is int else 0, claimed or None, as_text(get("claimedAt")),
            as_text(get("log")),
            Run.from_json(get("run"), f"{path}.run") if get("run") is not None else None,
            get("retry") is True,
            {} if data.keys() <= cls.KEYS else {k: v for k, v in data.items() if k not in cls.KEYS},
        )

    def to_json(self) -> Json:
        out: Json = {"id": self.id, "hookId": self.hook_id, "host": self.host,
                     "sessionId": self.session_id, "harnessSessionId": self.harness_session_id,
                     "enqueuedAt": self.enqueued_at, "dueAt": self.due_at,
                     "retries": self.retries, "claimedBy": self.claimed_by}
        for key, value in (("claimedAt", self.claimed_at), ("log", self.log),
                           ("run", self.run.to_json() if self.run is not None else None),
                           ("retry", True if self.retry else None)):
            if value is not None:
                out[key] = value
        return {**out, **self.extra}


@dataclass(slots=True)
class HooksDoc:
    """The whole of hooks.json."""

    hooks: dict[str, Hook] = field(default_factory=dict)
    pending: list[QueueEntry] = field(default_factory=list)
    extra: Json = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> HooksDoc:
        hooks, pending, extra = hooksjson.outer(data, fail)
        doc = cls(extra=extra)
        for hook_id, raw in hooks.items():
            # Whatever the version: a hand edit from older docs may add `delayMinutes` to a
            # versioned file, and its delay must never fall back to the default silently.
            raw = hooksjson.migrate_delay_minutes(raw, f"$.hooks.{hook_id}", fail)
            hook = Hook.from_json(raw, f"$.hooks.{hook_id}")
            if hook.id != hook_id:
                fail(f"$.hooks.{hook_id}.id", f"must equal its key {hook_id!r}, not {hook.id!r}")
            doc.hooks[hook_id] = hook
        doc.pending = [QueueEntry.from_json(e, f"$.pending[{i}]") for i, e in enumerate(pending)]
        return doc

    def to_json(self) -> Json:
        return {"version": VERSION, "hooks": {k: h.to_json() for k, h in self.hooks.items()},
                "pending": [e.to_json() for e in self.pending], **self.extra}

    def entry(self, key: str) -> QueueEntry | None:
        return next((e for e in self.pending if e.id == key), None)

    def drop_orphans(self) -> list[QueueEntry]:
        """Remove queued entries whose hook was deleted or disabled; returns them."""
        keep: list[QueueEntry] = []
        dropped: list[QueueEntry] = []
        for entry in self.pending:
            hook = self.hooks.get(entry.hook_id)
            (keep if hook is not None and hook.enabled else dropped).append(entry)
        self.pending = keep
        return dropped


def parse(data: bytes) -> HooksDoc:
    """Parse and validate bytes of hooks.json; HooksError with line and column if not JSON."""
    try:
        raw = orjson.loads(hooksjson.without_bom(data))
    except orjson.JSONDecodeError as exc:
        raise HooksError(f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return HooksDoc.from_json(raw)


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64] or "hook"


def new_hook(hook_id: str, name: str, created: float, **fields: Any) -> Hook:
    """A hook from JSON-named fields (`delaySeconds=30`, `action=[...]`), validated."""
    return Hook.from_json({"id": hook_id, "name": name, "createdAt": iso(created), **fields},
                          f"hook {hook_id}")
