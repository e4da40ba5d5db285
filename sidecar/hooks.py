"""Follow-up hooks: `runtime/hooks.json` (hooks and their pending queue), validated.

Shape: {"hooks": {"<id>": {...}}, "pending": [...]}. Every change is a read-modify-write under
the workspace's `hooks` lock, starting from the file as it is on disk, so `sidecar hooks ...`,
daemons and hand edits can all change it.

A hand edit that does not parse or validate is never overwritten. The daemon then works on its
last good copy, kept in `runtime/hooks.last-good.json` so it survives restarts too, and merges
what it did meanwhile back in once the file is fixed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from . import jsonfile, locks
from .layout import Workspace
from .timeutil import iso, parse_ts

log = logging.getLogger("sidecar")

HISTORY_LIMIT = 200
MAX_DELAY = 86400
DEFAULT_DELAY = 10
HOOK_EVENTS = ("session-start", "session-end", "session-reset", "turn-end", "tool-use")
PROMPT_FILE = re.compile(r"hooks/[^/\\]+\.md")
DEFAULT_PROMPT = """---
description: runs once, shortly after an agent's session ends, in that same conversation
---
The task in this conversation has ended. Before you finish for good, please:

1. Save anything worth remembering about this task for next time.
2. Update any documentation the change made out of date.
3. Remove temporary files or debugging code you left behind.

Keep it short, and do not start new work. Reply DONE when you are finished.
"""

Doc = dict[str, Any]
BROKEN_SINCE = "sidecarBrokenSince"  # kept in hooks.last-good.json only while hooks.json is broken
FIRED_WHILE_BROKEN = "sidecarFiredWhileBroken"


class HooksError(ValueError):
    """hooks.json is unusable; the message says where (line and column, or JSON path)."""


def slug(name: str) -> str:
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return text[:64] or "hook"


def unique_id(name: str, taken: set[str]) -> str:
    base = slug(name)
    candidate, n = base, 2
    while candidate in taken:
        candidate = f"{base}-{n}"
        n += 1
    return candidate


def new_hook(hook_id: str, name: str, created: float, **fields: Any) -> Doc:
    hook = {
        "id": hook_id,
        "name": name,
        "event": "session-end",
        "delaySeconds": DEFAULT_DELAY,
        "promptFile": "hooks/post-task.md",
        "action": "resume",
        "enabled": True,
        "skipCron": True,
        "skipSubagents": True,
        "maxContextK": 0,
        "createdAt": iso(created),
        "lastStatus": None,
        "lastFiredAt": None,
        "history": [],
    }
    hook.update(fields)
    return hook


def default_doc(created: float) -> Doc:
    return {"hooks": {"post-task": new_hook("post-task", "post-task", created)}, "pending": []}


def _fail(path: str, message: str) -> None:
    raise HooksError(f"{path}: {message}")


def _check_int(value: Any, path: str, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        limit = f"{low}..{high}" if high is not None else f">= {low}"
        _fail(path, f"must be a whole number {limit}, not {value!r}")


def validate_hook(hook: Any, path: str) -> Doc:
    """Check one hook in place (migrating `delayMinutes`); returns it."""
    if not isinstance(hook, dict):
        _fail(path, "must be an object")
    if "delayMinutes" in hook:
        minutes = hook.pop("delayMinutes")
        if "delaySeconds" not in hook:
            if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
                _fail(f"{path}.delayMinutes", f"must be a number, not {minutes!r}")
            hook["delaySeconds"] = int(round(minutes * 60))
    for key in ("id", "name"):
        if not isinstance(hook.get(key), str) or not hook[key]:
            _fail(f"{path}.{key}", "must be a non-empty string")
    hook.setdefault("event", "session-end")
    if hook["event"] not in HOOK_EVENTS:
        _fail(f"{path}.event", f"must be one of {', '.join(HOOK_EVENTS)}, not {hook['event']!r}")
    hook.setdefault("delaySeconds", DEFAULT_DELAY)
    _check_int(hook["delaySeconds"], f"{path}.delaySeconds", 0, MAX_DELAY)
    prompt = hook.setdefault("promptFile", "hooks/post-task.md")
    if prompt is not None:
        if not isinstance(prompt, str) or ".." in prompt or not PROMPT_FILE.fullmatch(prompt):
            _fail(f"{path}.promptFile",
                  f"must name a .md file directly under hooks/ (like hooks/post-task.md), not {prompt!r}")
    action = hook.setdefault("action", "resume")
    if action != "resume":
        if not isinstance(action, list) or not action or not all(
                isinstance(a, str) for a in action) or not action[0]:
            _fail(f"{path}.action", 'must be "resume" or a command as a non-empty list of strings')
    for key, default in (("enabled", True), ("skipCron", True), ("skipSubagents", True)):
        hook.setdefault(key, default)
        if not isinstance(hook[key], bool):
            _fail(f"{path}.{key}", f"must be true or false, not {hook[key]!r}")
    hook.setdefault("maxContextK", 0)
    _check_int(hook["maxContextK"], f"{path}.maxContextK", 0, None)
    history = hook.setdefault("history", [])
    if not isinstance(history, list):
        _fail(f"{path}.history", "must be a list")
    del history[:-HISTORY_LIMIT]
    hook.setdefault("lastStatus", None)
    hook.setdefault("lastFiredAt", None)
    hook.setdefault("createdAt", None)
    return hook


def validate(doc: Any) -> Doc:
    """Validate and normalise a whole document; HooksError names the JSON path at fault."""
    if not isinstance(doc, dict):
        _fail("$", "must be an object with `hooks` and `pending`")
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        _fail("$.hooks", "must be an object of hooks by id")
    for hook_id, hook in hooks.items():
        validate_hook(hook, f"$.hooks.{hook_id}")
        if hook["id"] != hook_id:
            _fail(f"$.hooks.{hook_id}.id", f"must equal its key {hook_id!r}, not {hook['id']!r}")
    pending = doc.setdefault("pending", [])
    if not isinstance(pending, list):
        _fail("$.pending", "must be a list")
    for i, entry in enumerate(pending):
        if not isinstance(entry, dict):
            _fail(f"$.pending[{i}]", "must be an object")
        for key in ("hookId", "host", "sessionId"):
            if not isinstance(entry.get(key), str):
                _fail(f"$.pending[{i}].{key}", "must be a string")
        entry.setdefault("id", entry_id(entry["hookId"], entry["host"], entry["sessionId"]))
        entry.setdefault("retries", 0)
    return doc


def parse(data: bytes) -> Doc:
    """Parse and validate bytes of hooks.json; HooksError with line and column if it is not JSON."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise HooksError(f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return validate(doc)


def entry_id(hook_id: str, host: str, session_id: str) -> str:
    return f"{hook_id}:{host}:{session_id}"


def due_at(entry: Doc) -> float:
    """When an entry is due; an unreadable `dueAt` counts as due now."""
    parsed = parse_ts(entry.get("dueAt"))
    return float("-inf") if parsed is None else parsed


def record_firing(hook: Doc, status: str, at: float, entry: Doc, log: str | None) -> None:
    hook["lastStatus"] = status
    hook["lastFiredAt"] = iso(at)
    hook["history"].append({
        "at": iso(at),
        "status": status,
        "host": entry.get("host"),
        "sessionId": entry.get("sessionId"),
        "log": log,
    })
    del hook["history"][:-HISTORY_LIMIT]


@dataclass
class HookState:
    """What one process knows of hooks.json: the last good document and any error."""

    doc: Doc
    error: str | None = None
    signature: jsonfile.Signature | None = None
    broken_at: float | None = None
    fired_while_broken: set[str] = field(default_factory=set)


class HookStore:
    """Reads and changes one workspace's hooks.json under its lock."""

    def __init__(self, ws: Workspace, *, durable: bool = True) -> None:
        self.ws = ws
        self.durable = durable
        self.state: HookState | None = None

    @property
    def last_good_file(self) -> Path:
        return self.ws.runtime / "hooks.last-good.json"

    @property
    def lock_file(self) -> Path:
        return self.ws.lock("hooks")

    def read_file(self) -> Doc:
        """The document on disk; HooksError if it is broken, FileNotFoundError if absent."""
        return parse(self.ws.hooks_file.read_bytes())

    def _last_good(self) -> HookState:
        """The state kept beside a broken file, with what was done while it was broken."""
        try:
            doc = validate(jsonfile.read_json(self.last_good_file))
        except (OSError, ValueError):
            doc = {"hooks": {}, "pending": []}
        state = HookState(doc)
        state.broken_at = parse_ts(doc.pop(BROKEN_SINCE, None))
        state.fired_while_broken = set(doc.pop(FIRED_WHILE_BROKEN, None) or [])
        return state

    def refresh(self, now: float) -> HookState:
        """Bring the in-memory state up to date with the file; call with the lock held."""
        sig = jsonfile.signature(self.ws.hooks_file)
        state = self.state
        if state is not None and sig == state.signature:
            return state
        try:
            doc = self.read_file()
        except FileNotFoundError:
            doc = state.doc if state is not None and state.error is None else None
            if doc is None:
                doc = {"hooks": {}, "pending": []}
            self.state = HookState(doc, None, sig)
            return self.state
        except HooksError as exc:
            if state is None:  # started on a broken file: carry on from the kept copy
                state = self._last_good()
                state.broken_at = state.broken_at or now
            elif state.error is None:  # it just broke
                state.broken_at = now
            if state.error != str(exc):
                log.error("%s is broken, so it is left as it is and the last good hooks and "
                          "queue are used: %s", self.ws.hooks_file, exc)
            state.error = str(exc)
            state.signature = sig
            self.state = state
            return state
        repaired = state is not None and state.error is not None
        if repaired:
            log.info("%s is valid again; taken up", self.ws.hooks_file)
            doc = self._merge_after_repair(doc, state)
        self.state = HookState(doc, None, sig)
        if drop_orphans(doc) or repaired:
            self._write(doc)  # the file is valid, so writing over it loses nothing
        else:
            # Someone else wrote a good version: keep it as the copy a later break falls back on.
            jsonfile.write_json_atomic(self.last_good_file, doc, durable=self.durable)
        return self.state

    @staticmethod
    def _merge_after_repair(doc: Doc, old: HookState) -> Doc:
        """The user's fixed file, plus queue work done while it was broken."""
        ids = {e["id"] for e in doc["pending"]}
        for entry in old.doc["pending"]:
            queued = parse_ts(entry.get("enqueuedAt")) or 0.0
            if entry["id"] not in ids and old.broken_at is not None and queued >= old.broken_at:
                doc["pending"].append(entry)
        doc["pending"] = [e for e in doc["pending"] if e["id"] not in old.fired_while_broken]
        for hook_id, hook in old.doc["hooks"].items():
            if hook_id in doc["hooks"] and hook.get("lastFiredAt") and (
                    hook["lastFiredAt"] or "") > (doc["hooks"][hook_id].get("lastFiredAt") or ""):
                target = doc["hooks"][hook_id]
                target["lastStatus"] = hook["lastStatus"]
                target["lastFiredAt"] = hook["lastFiredAt"]
                target["history"] = hook["history"][-HISTORY_LIMIT:]
        drop_orphans(doc)
        return doc

    def _write(self, doc: Doc) -> None:
        data = jsonfile.dumps(doc)
        written = jsonfile.write_bytes_atomic(self.ws.hooks_file, data, durable=self.durable)
        if self.state is not None:
            self.state.signature = written
        jsonfile.write_bytes_atomic(self.last_good_file, data, durable=self.durable)

    def change(self, now: float, edit: Callable[[Doc], Any]) -> Any:
        """Run `edit` on the current document and save it: the one way to change hooks.json.

        While the file is broken the edit applies to the last good copy only, and the broken
        file stays exactly as the user left it.
        """
        with locks.locked(self.lock_file):
            state = self.refresh(now)
            doc = state.doc
            try:
                result = edit(doc)
                validate(doc)
            except BaseException:
                self.state = None  # the edit may have half-changed it: start again from disk
                raise
            if state.error is None:
                self._write(doc)
            else:
                # Only the copy changes; it also remembers since when, for the merge on repair.
                kept = {**doc, BROKEN_SINCE: iso(state.broken_at or now),
                        FIRED_WHILE_BROKEN: sorted(state.fired_while_broken)}
                jsonfile.write_json_atomic(self.last_good_file, kept, durable=self.durable)
            return result

    def listened_events(self, now: float) -> set[str]:
        """The events some enabled hook waits for (no copy of the queue: cheap per batch)."""
        with locks.locked(self.lock_file):
            state = self.refresh(now)
            return {h["event"] for h in state.doc["hooks"].values() if h.get("enabled")}

    def snapshot(self, now: float) -> tuple[Doc, list[Doc], str | None]:
        """Copies of the hooks and the queue as they are now, and the file's error if broken."""
        with locks.locked(self.lock_file):
            state = self.refresh(now)
            hooks = {k: dict(v) for k, v in state.doc["hooks"].items()}
            return hooks, [dict(e) for e in state.doc["pending"]], state.error

    def seed(self, now: float) -> bool:
        """Give a fresh workspace its `post-task` hook and prompt, each only if missing."""
        created = False
        prompt = self.ws.prompts / "post-task.md"
        if not prompt.exists():
            self.ws.prompts.mkdir(parents=True, exist_ok=True)
            prompt.write_text(DEFAULT_PROMPT)
            created = True
        with locks.locked(self.lock_file):
            if not self.ws.hooks_file.exists():
                self.state = None
                self._write(default_doc(now))
                created = True
        return created


def drop_orphans(doc: Doc) -> list[Doc]:
    """Remove queued entries whose hook was deleted or disabled; returns them."""
    keep, dropped = [], []
    for entry in doc["pending"]:
        hook = doc["hooks"].get(entry["hookId"])
        (keep if hook is not None and hook.get("enabled") else dropped).append(entry)
    doc["pending"] = keep
    return dropped


def read_prompt(ws: Workspace, prompt_file: str) -> str:
    """The prompt's text with any YAML frontmatter removed."""
    text = (ws.context / prompt_file).read_text(encoding="utf-8")
    if text.startswith("---"):
        lines = text.splitlines(keepends=True)
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                text = "".join(lines[i + 1:])
                break
    return text.strip()
