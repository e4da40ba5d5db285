"""Cline CLI: its file hooks, its payload's shape, and the session manifest it writes.

Cline 3.0.65 names a hook by its file (`TaskStart`, ...; `hooks.py` writes them) and
its payload by `hookName` (`agent_start`, ...). The conversation's id is
`sessionContext.rootSessionId` (`taskId` changes on every run of it), and the folder is
`workspaceRoots[0]`: `payload_fields` reads them out.

It often sends no end of its own: a one-shot run fires TaskComplete only, `/exit` in its
terminal UI nothing, and later runs execute inside a detached hub daemon that keeps running,
so the process a hook names may never exit. What it writes does say:
`~/.cline/data/sessions/<id>/<id>.json` (the manifest) has `status` running, then completed,
cancelled or failed, the `model`, and `metadata.usage` (its token figures and
`totalCost`, Cline's own price of them in US dollars). `<id>.messages.json` holds the
conversation; a turn the API refused ends it with an assistant message whose
`metadata.displayRole` is `error`, holding the provider's text.

There is no unattended resume: `cline --id <id>` needs a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from sidecar.base.timeutil import parse_ts
from sidecar.hosts import transcripts
from sidecar.hosts.base import (
    EndFacts,
    Failure,
    Host,
    Reader,
    RecordedEnd,
    Scope,
    Tokens,
    Use,
    count,
    moment,
    spend_by_day,
)
from sidecar.vocabulary import EventKind

VERSION = "3.0.65"
# The hook file names sidecar writes, and the `hookName` each one's payload carries.
HOOK_NAMES = {"TaskStart": "agent_start", "TaskComplete": "agent_end",
              "TaskError": "agent_error", "TaskCancel": "agent_abort",
              "PreToolUse": "tool_call", "PostToolUse": "tool_result",
              "SessionShutdown": "session_shutdown"}
EVENTS = list(HOOK_NAMES)
BY_HOOK_NAME = {hook: event for event, hook in HOOK_NAMES.items()}
ENDED = frozenset({"completed", "cancelled", "failed"})  # a manifest's final statuses
MAX_RECORD = 4 * 1024 * 1024  # a larger manifest or messages file is not read
# A refused turn's text, as providers word it (the hook gives no status code): its kind.
LIMIT_TEXTS = ((re.compile(r"rate.?limit|too many requests|\b429\b", re.I), "rate_limit"),
               (re.compile(r"usage.?limit", re.I), "usage_limit"),
               (re.compile(r"quota", re.I), "quota_exceeded"))


def sessions_folder(home: Path) -> Path:
    return home / ".cline" / "data" / "sessions"


def manifest_path(home: Path, session_id: str) -> Path:
    return sessions_folder(home) / session_id / f"{session_id}.json"


def messages_path(home: Path, session_id: str) -> Path:
    return sessions_folder(home) / session_id / f"{session_id}.messages.json"


def error_kind(text: str) -> str:
    """The kind of a refused turn, from the provider's text."""
    return next((kind for pattern, kind in LIMIT_TEXTS if pattern.search(text)), "api_error")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _inner(payload: Mapping[str, Any], key: str, field: str) -> str | None:
    value = payload.get(key)
    return _text(value.get(field)) if isinstance(value, dict) else None


def fields(payload: Mapping[str, Any]) -> dict[str, str]:
    """The generic fields of a Cline hook payload (empty for any other shape)."""
    found: dict[str, str] = {}
    event = BY_HOOK_NAME.get(str(payload.get("hookName")))
    session = _inner(payload, "sessionContext", "rootSessionId")
    if event is None:
        return found  # not a hook's payload (`sidecar emit --source cline` by hand, say)
    found["event"] = event
    if session is not None:
        found["session_id"] = session
    roots = payload.get("workspaceRoots")
    if isinstance(roots, list) and roots and _text(roots[0]):
        found["cwd"] = roots[0]
    tool = _inner(payload, "tool_call", "name") or _inner(payload, "tool_result", "name")
    if tool:
        found["tool_name"] = tool
    answer = _inner(payload, "turn", "outputText")
    if event == "TaskComplete" and answer:
        found["last_assistant_message"] = answer  # its agent_end: the turn's own answer
    message = _inner(payload, "error", "message")
    if event == "TaskError":
        found["error"] = error_kind(message or "")
        if message:
            found["error_message"] = message
    return found


def load(data: bytes | None) -> dict[str, Any]:
    """A JSON object from bytes; {} for anything else."""
    try:
        value = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def figures(manifest: Mapping[str, Any], failure: Failure | None = None) -> EndFacts:
    """The manifest's token figures (`metadata.usage`, the session's own, its subagents'
    apart) as the spend of the model it names, at Cline's own price of them
    (`metadata.usage.totalCost`, US dollars), on the day it ended (while it runs, the day
    it began: the manifest dates nothing else)."""
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    usage = metadata.get("usage")
    if not isinstance(usage, dict):
        return EndFacts(failure)
    tokens = Tokens(input=count(usage.get("inputTokens")),
                    output=count(usage.get("outputTokens")),
                    cache_read=count(usage.get("cacheReadTokens")),
                    cache_write=count(usage.get("cacheWriteTokens")))
    model = _text(manifest.get("model")) or _text(metadata.get("model"))
    at = moment(manifest.get("ended_at")) or moment(manifest.get("started_at"))
    return EndFacts(failure, tokens, spend_by_day([Use(model, at, tokens, _dollars(usage.get("totalCost")))]))


def _dollars(value: object) -> float | None:
    """Cline's own price as it wrote it: a finite number of US dollars, not below 0 (else none)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        and 0 <= value < float("inf") else None


def last_failure(messages: Mapping[str, Any]) -> Failure | None:
    """The provider's refusal, if the conversation's last message is Cline's error entry."""
    entries = messages.get("messages")
    last = entries[-1] if isinstance(entries, list) and entries else None
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return None
    metadata = last.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("displayRole") != "error":
        return None
    content = last.get("content")
    texts = [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)] \
        if isinstance(content, list) else []
    text = " ".join(texts)[:2000]
    return Failure(error_kind(text), text)


class Cline(Host):
    name = "cline"
    title = "Cline CLI"
    executable = None  # no resume it can run unattended (resume_refusal says why)
    events = MappingProxyType({
        "TaskStart": EventKind.SESSION_START,  # every run of the conversation, resumed or new
        "TaskComplete": EventKind.TURN_END, "TaskError": EventKind.TURN_FAILED,
        "PreToolUse": EventKind.TOOL_USE, "PostToolUse": EventKind.TOOL_USE,
        "SessionShutdown": EventKind.SESSION_END})  # TaskCancel is traced
    key_variables = ()  # its provider and key are in ~/.cline/data/settings/providers.json
    scopes = (
        Scope(None, "", in_project=False),
        Scope("--project", "The workspace's .cline/hooks/, calling `sidecar` from PATH.",
              on_path=True, note="the workspace's hooks call `sidecar` from PATH, so they work "
              "on every machine where sidecar is installed"),
    )
    integrate_help = "Hook files in ~/.cline/hooks/ for TaskStart, TaskComplete, TaskError, " \
                     "TaskCancel, PreToolUse, PostToolUse and SessionShutdown."
    # Its ids: milliseconds since 1970, `_` and a few letters or digits.
    id_shape = (re.compile(r"[0-9]{10,16}_[0-9A-Za-z]{1,16}"),
                "milliseconds, `_` and a few letters or digits")
    ends_recorded = True

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return root / ".cline" / "hooks" if scope.in_project and root is not None \
            else home / ".cline" / "hooks"

    def written(self, place: Path) -> list[Path]:
        return [place, *(place / name for name in EVENTS)]  # the folder, and a file per event

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.cline import hooks  # integration code: see base.py

        return hooks.integrate(place, EVENTS, sidecar, uninstall)

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.cline import hooks

        folders = [home / ".cline" / "hooks"] + ([root / ".cline" / "hooks"] if root else [])
        return any(hooks.integrated(folder, EVENTS) for folder in folders)

    def payload_fields(self, payload: Mapping[str, Any]) -> dict[str, str]:
        return fields(payload)

    def recorded_end(self, session_id: str, home: Path, read: Reader) -> RecordedEnd | None:
        if session_id in (".", "..") or "/" in session_id:
            return None  # never a path out of its sessions folder
        manifest = load(read(manifest_path(home, session_id)))
        status = manifest.get("status")
        if status not in ENDED:
            return None  # running, or unreadable: it says nothing
        messages = messages_path(home, session_id)
        failure = last_failure(load(read(messages))) if status == "failed" else None
        return RecordedEnd(str(status), str(messages), parse_ts(manifest.get("ended_at")),
                           figures(manifest, failure))

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        """Tokens from the manifest beside the conversation (the one an end names, else the
        daemon's own user's), and a refused last turn from the conversation itself."""
        if not session_id or "/" in session_id or session_id in (".", ".."):
            return EndFacts()
        messages = transcript_path or str(messages_path(Path.home(), session_id))
        manifest = load(transcripts.read_small(Path(messages).with_name(f"{session_id}.json"), MAX_RECORD))
        failure = None
        if manifest.get("status") == "failed":
            failure = last_failure(load(transcripts.read_small(messages, MAX_RECORD)))
        return figures(manifest, failure)

    def resume_refusal(self) -> str | None:
        return f"Cline {VERSION} cannot resume a session without a terminal (`cline --id` " \
               "needs one); not resumed"


HOST = Cline()
