"""The hooks and the queue in `status`'s report (views/status.py): read from hooks.json where
it is plainly valid (base/hooksjson.py), else as the daemon's store reads it, with the last
good copy and the file's error where it is broken; each enabled hook's trust; a failed
firing's last line.
"""

from __future__ import annotations

from sidecar.base import hooksjson, runs
from sidecar.base.files import as_text, parse, read
from sidecar.base.outcome import Outcome
from sidecar.base.proc import is_alive
from sidecar.base.startup import full_start
from sidecar.base.timeutil import parse_ts
from sidecar.views.trusted import Trusted, Unsure

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any

    from sidecar.views.report import HookRow, HooksSection, QueueRow


def workspace_of(root: str) -> Any:
    """The typed workspace, for a rare branch that reads through the typed modules."""
    from pathlib import Path

    from sidecar.layout import Workspace

    return Workspace(Path(root))


def hooks_section(root: str, base: int, runtime: int, now: float) -> HooksSection:
    """Hooks and queue as hooks.json says, or as last known good when it is broken. A file
    plainly valid (base/hooksjson.py) is read here; any other, the daemon's store reads."""
    try:
        data = read(runtime, "hooks.json")
        plain = None if data is None else hooksjson.plain_doc(parse(hooksjson.without_bom(data)))
    except (OSError, ValueError):
        data, plain = b"", None
    if data is None:
        return {"hooks": [], "queue": [], "error": None}
    if plain is None:
        hooks, pending, error = _as_the_daemon_reads_it(root)
    else:
        (hooks, pending), error = plain, None
    from sidecar.base.paths import config_home

    trusted = Trusted(root, base, runtime, config_home())
    rows = [hook_row(root, raw, _is_trusted(root, raw, trusted)) for raw in hooks.values()]
    queue = [queue_row(entry, now, runtime) for entry in pending]
    queue.sort(key=lambda q: q["dueInSeconds"])
    return {"hooks": rows, "queue": queue, "error": error}


def _as_the_daemon_reads_it(root: str) -> tuple[dict[str, Any], list[Any], str | None]:
    """hooks.json read by its store: as the file says, or its last good copy and the file's
    error where it is broken; as JSON, in the shapes the model writes."""
    full_start()  # (the typed modules read with orjson)
    from sidecar.followups.store import read_view

    view = read_view(workspace_of(root))
    return ({key: hook.to_json() for key, hook in view.hooks.items()},
            [entry.to_json() for entry in view.pending], view.error)


def _is_trusted(root: str, raw: dict[str, Any], trusted: Trusted) -> bool:
    """Whether an enabled hook is trusted as it stands (a disabled one runs nothing); where
    the digest does not plainly match, followups/trust.py weighs it as the daemon does."""
    if not raw.get("enabled", True):
        return True
    try:
        if trusted.check(raw):
            return True
    except (Unsure, OSError, ValueError):
        pass
    full_start()
    from sidecar.followups import trust
    from sidecar.followups.model import Hook

    hook = Hook.from_json(raw, f"$.hooks.{raw.get('id')}")
    return not trust.untrusted(workspace_of(root), [hook])


def hook_row(root: str, raw: dict[str, Any], trusted: bool) -> HookRow:
    """One valid hook as followups/model.Hook reads it and status shows it."""
    action = raw.get("action", "resume")
    if isinstance(action, dict):  # a notice: its target's secrets masked
        full_start()
        from sidecar.followups.notify.targets import shown

        action = {"notify": shown(action["notify"])}
    history = (raw.get("history") or [])[-hooksjson.HISTORY_LIMIT:]
    last = history[-1] if history else None
    last = last if isinstance(last, dict) else None
    status = as_text(raw.get("lastStatus"))
    return {
        "id": raw["id"], "name": raw["name"], "enabled": raw.get("enabled", True),
        "event": raw.get("event", "session-end"),
        "delaySeconds": raw.get("delaySeconds", hooksjson.DEFAULT_DELAY), "action": action,
        "lastStatus": status, "lastFiredAt": as_text(raw.get("lastFiredAt")),
        "lastLog": None if last is None else as_text(last.get("log")),
        "lastLine": failure_line(root, raw, last, status), "trusted": trusted,
    }


def failure_line(root: str, raw: dict[str, Any], last: dict[str, Any] | None,
                 status: str | None) -> str | None:
    """What the latest firing's log last said, if that firing failed: kept in its history
    entry when it finished (`lastLine`), else read from its log (entries from before)."""
    if last is None or not Outcome.parse(status).failed or as_text(last.get("status")) != status:
        return None
    if "lastLine" in last:
        return as_text(last["lastLine"])
    full_start()
    from sidecar.followups.run import logtail

    return logtail.last_line(workspace_of(root), raw["id"], as_text(last.get("log")))


def queue_row(entry: dict[str, Any], now: float, runtime: int) -> QueueRow:
    """One valid queue entry as followups/model.QueueEntry reads it and status shows it; a
    run whose action has ended says how (`ended`), recorded or not."""
    due_at = entry.get("dueAt")
    due = parse_ts(due_at if isinstance(due_at, (str, float, int)) and not isinstance(due_at, bool) else None)
    run = entry.get("run")
    retries = entry.get("retries", 0)
    return {
        "hookId": entry["hookId"], "host": entry["host"], "sessionId": entry["sessionId"],
        "dueInSeconds": 0.0 if due is None else round(due - now, 3),
        "retries": retries if type(retries) is int else 0,
        "claimedBy": entry.get("claimedBy") or None,
        "running": None if run is None else {
            "pid": run["pid"], "startedAt": as_text(run.get("startedAt")) or "", "log": run["log"],
            "alive": is_alive(run["pid"], run.get("start") if type(run.get("start")) is int
                              else None),
            "ended": runs.ended(runtime, entry["hookId"], run["log"])},
    }
