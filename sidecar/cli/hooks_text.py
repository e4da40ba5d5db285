"""`hooks list` and `hooks history` as people read them: tables sized to their content within
100 columns, delays as typed, local and relative times, log paths relative to the workspace,
colour on a terminal only. A command is always shown whole, on its own line: it is what the
user trusts, so it is never cut; `hooks trust` shows the whole of what a hook does."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from sidecar.base import words
from sidecar.base.escapes import escaped, escaped_values
from sidecar.base.timeutil import parse_ts
from sidecar.base.trustcheck import global_id
from sidecar.base.words import Style
from sidecar.followups import prompts, trust
from sidecar.followups.model import Hook, QueueEntry
from sidecar.layout import Workspace
from sidecar.views.status_text import outcome_style, retried

GAP = "  "


def table(rows: list[list[str]], last_room: bool = True) -> list[list[str]]:
    """The cells, escaped (an outcome, a host's session id), padded to their column's widest;
    the last column is cut to what is left of words.WIDTH (when `last_room`), never
    narrower than its heading."""
    rows = [[escaped(cell) for cell in row] for row in rows]
    sizes = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    if last_room:
        room = words.WIDTH - sum(sizes[:-1]) - len(GAP) * (len(sizes) - 1)
        sizes[-1] = max(len(rows[0][-1]), min(sizes[-1], room))
    return [[words.clip(cell, size).ljust(size) for cell, size in zip(row, sizes, strict=True)]
            for row in rows]


def _last(hook: Hook, now: float) -> str:
    if not hook.last_status:
        return "-"
    fired = parse_ts(hook.last_fired_at)
    return hook.last_status + ("" if fired is None else f" ({words.ago(fired, now)})")


def _kind(hook: Hook) -> str:
    return "resume" if isinstance(hook.action, str) else "command" \
        if isinstance(hook.action, list) else "notify"


def trust_command(hook_id: str, global_: bool = False) -> str:
    """How to see and trust a hook: a workspace's copy of a global hook is trusted as it is."""
    original = global_id(hook_id)
    if global_ or original is not None:
        return f"sidecar hooks trust --global {original or hook_id}"
    return f"sidecar hooks trust {hook_id}"


def render_list(hooks: Iterable[Hook], untrusted: set[str], pending: list[QueueEntry],
                now: float, paint: Style, global_: bool = False) -> str:
    listed = list(hooks)
    rows = [["HOOK", "ON", "EVENT", "DELAY", "ACTION", "LAST"]] + [
        [h.id, "on" if h.enabled else "off", h.event.value, words.duration(h.delay_seconds),
         _kind(h), _last(h, now)] for h in listed]
    padded = table(rows)
    lines = [paint(GAP.join(padded[0]).rstrip(), "bold")]
    for hook, cells in zip(listed, padded[1:], strict=True):
        cells[-1] = paint(cells[-1].rstrip(), *outcome_style(hook.last_status))
        lines.append(GAP.join(cells).rstrip())
        if not isinstance(hook.action, str):  # what it runs, whole: what the user trusts
            lines.append(f"    {trust.described(hook)}")
        if hook.id in untrusted:
            lines.append("    " + paint("NOT TRUSTED", "yellow", "bold") + " on this machine as it stands, "
                         f"so not run (see it and trust it: {trust_command(hook.id, global_)})")
        elif global_id(hook.id) is not None:
            lines.append(f"    your global hook {global_id(hook.id)}'s copy (sidecar hooks list --global)")
    if not listed:
        how = "sidecar hooks add NAME --global --notify TARGET" if global_ else "sidecar hooks add NAME"
        lines = [f"no hooks (add one: {how})"]
    if pending:
        lines.append(paint("queue", "bold"))
        queued = table([[e.hook_id, e.host, e.session_id, words.due(e.due, now),
                         f"retries {e.retries}" + (" running" if e.run else "")]
                        for e in pending], last_room=False)
        lines += ["  " + GAP.join(cells).rstrip() for cells in queued]
    return "\n".join(lines) + "\n"


def render_history(ws: Workspace, firings: list[dict[str, Any]], now: float, paint: Style) -> str:
    if not firings:
        return "no firings yet\n"
    firings = escaped_values(firings)  # its log's path too, before anything is painted
    rows = [["WHEN", "HOOK", "HOST", "SESSION", "OUTCOME"]]
    for f in firings:
        at = parse_ts(f["at"])
        rows.append(["-" if at is None else words.local_time(at, now), f["hookId"],
                     f["host"] or "-", words.short_id(f["sessionId"] or "-", 8),
                     (f["status"] or "-") + retried(f)
                     + (f": {f['lastLine']}" if f["lastLine"] else "")])
    padded = table(rows, last_room=False)  # an outcome is shown whole: it says what went wrong
    lines = [paint(GAP.join(padded[0]).rstrip(), "bold")]
    for f, cells in zip(firings, padded[1:], strict=True):
        cells[-1] = paint(cells[-1].rstrip(), *outcome_style(f["status"]))
        lines.append(GAP.join(cells).rstrip())
        if f["log"]:
            lines.append(f"  log {words.path(f['log'], ws.root)}")
    return "\n".join(lines) + "\n"


SETTINGS = ("event", "delaySeconds", "enabled", "reasons", "alsoInterrupted",
            "againAfterUserTurn", "alsoFollowUps", "skipCron", "skipSubagents", "maxContextK")


def approval(ws: Workspace | None, found: trust.Content) -> str:
    """All that trusting a hook approves, as `hooks trust` shows it before asking: its
    settings as hooks.json has them, what it runs (a notice's target whole), and the exact
    text the agent is told, every control character escaped."""
    hook, definition = found.hook, found.definition()
    settings = " ".join(f"{k}={escaped(orjson.dumps(definition[k]).decode())}"
                        for k in SETTINGS if k in definition)
    if isinstance(hook.action, str):
        does = "resumes the session with its host's resume command, with the edit rights " \
               "your config.toml gives it"
    elif isinstance(hook.action, list):  # a script it names is the workspace's: not covered
        does = (f"runs {trust.shown(hook.action, whole=True)}\n            (the command as "
                "written: a script it names can change without a new question)")
    else:
        does = f"sends a notice: {trust.shown(hook.action, whole=True)}"
    where = f"in {ws.root}" if ws is not None else "a global hook: in every workspace"
    lines = [f"{hook.id}, {where}:", f"  settings  {settings}", f"  does      {does}"]
    if found.prompt is not None and ws is not None:
        text = prompts.text_of(found.prompt)
        lines.append(f"  prompt    {ws.context / str(hook.prompt_file)}, the agent is told:")
        lines += [f"    | {escaped(line)}" for line in text.splitlines() or [""]]
    return "\n".join(lines) + "\n"
