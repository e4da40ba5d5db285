"""`sidecar status`: one report, built once, rendered as a table or as JSON.

It reads only small files and folder listings (never the session records themselves), so it
stays fast however many completed sessions a workspace keeps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import __version__, inbox, jsonfile, locks
from .hooks import HooksError, due_at, parse as parse_hooks
from .layout import Workspace
from .sessions import SessionStore, StoreError
from .timeutil import human_age, parse_ts

REPORT_VERSION = 1
EXIT_OK, EXIT_UNSERVED, EXIT_NOT_WORKSPACE = 0, 3, 4
Report = dict[str, Any]


def instances(ws: Workspace, now: float) -> list[dict[str, Any]]:
    """Every instance that registered with the workspace, and whether it is alive."""
    found = []
    try:
        entries = sorted(os.scandir(ws.instances), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        try:
            doc = jsonfile.read_json(Path(entry.path))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        instance_id = entry.name[: -len(".json")]
        beat = parse_ts(doc.get("heartbeatAt"))
        found.append(
            {
                "id": instance_id,
                "pid": doc.get("pid"),
                "hostname": doc.get("hostname"),
                "version": doc.get("version"),
                "role": doc.get("role"),
                "startedAt": doc.get("startedAt"),
                "heartbeatAt": doc.get("heartbeatAt"),
                "heartbeatAgeSeconds": None if beat is None else round(now - beat, 3),
                "live": locks.is_held(ws.lock(f"instance-{instance_id}")),
                "applied": doc.get("applied", 0),
                "rejected": doc.get("rejected", 0),
                "errors": doc.get("errors", 0),
                "lastError": doc.get("lastError") or "",
                "plugins": doc.get("plugins") or {},
            }
        )
    return found


def hooks_section(ws: Workspace, now: float) -> dict[str, Any]:
    """Hooks and queue as the file says, or as last known good when it is broken (read-only)."""
    error = None
    try:
        doc = parse_hooks(ws.hooks_file.read_bytes())
    except FileNotFoundError:
        doc = {"hooks": {}, "pending": []}
    except HooksError as exc:
        error = f"{ws.hooks_file}: {exc}"
        try:
            doc = parse_hooks((ws.runtime / "hooks.last-good.json").read_bytes())
        except (OSError, HooksError):
            doc = {"hooks": {}, "pending": []}
    hooks = [
        {
            "id": h["id"],
            "name": h["name"],
            "enabled": h["enabled"],
            "event": h["event"],
            "delaySeconds": h["delaySeconds"],
            "action": h["action"],
            "lastStatus": h.get("lastStatus"),
            "lastFiredAt": h.get("lastFiredAt"),
            "lastLog": (h.get("history") or [{}])[-1].get("log"),
        }
        for h in doc["hooks"].values()
    ]
    queue = []
    for entry in doc["pending"]:
        due = due_at(entry)
        queue.append({
            "hookId": entry["hookId"],
            "host": entry["host"],
            "sessionId": entry["sessionId"],
            "dueInSeconds": 0.0 if due == float("-inf") else round(due - now, 3),
            "retries": entry.get("retries", 0),
            "claimedBy": entry.get("claimedBy"),
        })
    queue.sort(key=lambda q: q["dueInSeconds"])
    return {"hooks": hooks, "queue": queue, "error": error}


def workspace_report(ws: Workspace, now: float) -> Report:
    arrivals = inbox.scan(ws)
    oldest = min((a.mtime for a in arrivals), default=None)
    store = SessionStore(ws)
    errors: list[str] = []
    try:
        bindings_doc = store.load_bindings()
    except StoreError as exc:
        errors.append(str(exc))
        bindings_doc = {"bindings": {}}
    bindings = []
    for host, per_host in bindings_doc["bindings"].items():
        if not isinstance(per_host, dict):
            continue
        for session_id, binding in per_host.items():
            if not isinstance(binding, dict):
                continue
            updated = parse_ts(binding.get("updatedAt"))
            bindings.append(
                {
                    "host": host,
                    "sessionId": session_id,
                    "harnessSessionId": binding.get("harnessSessionId"),
                    "updatedAt": binding.get("updatedAt"),
                    "ageSeconds": None if updated is None else round(now - updated, 3),
                }
            )
    bindings.sort(key=lambda b: b["ageSeconds"] if b["ageSeconds"] is not None else 1e18)
    total = store.count_sessions()
    found = instances(ws, now)
    return {
        "root": str(ws.root),
        "served": any(i["live"] for i in found),
        "instances": found,
        "inbox": {
            "backlog": len(arrivals),
            "oldestAgeSeconds": None if oldest is None else round(max(0.0, now - oldest), 3),
        },
        "rejected": inbox.count_rejected(ws),
        "sessions": {
            "total": total,
            "active": len(bindings),
            "completed": max(0, total - len(bindings)),
        },
        "bindings": bindings,
        **hooks_section(ws, now),
        "plugins": _plugin_counters(found),
        "errors": errors,
    }


def _plugin_counters(found: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Plugin calls, errors and hangs, summed over the live instances."""
    total: dict[str, dict[str, int]] = {}
    for inst in found:
        if not inst["live"]:
            continue
        for name, counts in (inst.get("plugins") or {}).items():
            mine = total.setdefault(name, {"calls": 0, "errors": 0, "hangs": 0})
            for key in mine:
                mine[key] += int(counts.get(key, 0))
    return total


def build(workspaces: list[Workspace], now: float) -> Report:
    return {
        "version": REPORT_VERSION,
        "sidecar": __version__,
        "workspaces": [workspace_report(ws, now) for ws in workspaces],
    }


def exit_code(report: Report) -> int:
    return EXIT_OK if all(w["served"] for w in report["workspaces"]) else EXIT_UNSERVED


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else human_age(seconds)


def render_text(report: Report, bindings_shown: int = 20) -> str:
    lines: list[str] = []
    for w in report["workspaces"]:
        live = [i for i in w["instances"] if i["live"]]
        lines.append(f"workspace  {w['root']}")
        lines.append(f"served     {'yes' if w['served'] else 'NO: no live instance (run `sidecar run`)'}")
        for inst in w["instances"]:
            state = inst["role"] if inst["live"] else "dead"
            lines.append(
                f"  instance {inst['id']}  pid {inst['pid']}  v{inst['version']}  {state}  "
                f"started {inst['startedAt']}  heartbeat {_age(inst['heartbeatAgeSeconds'])} ago"
                + (f"  last error: {inst['lastError']}" if inst["lastError"] and inst["live"] else "")
            )
        if not live and w["instances"]:
            lines.append("  (no instance is alive)")
        box = w["inbox"]
        lines.append(
            f"inbox      {box['backlog']} waiting"
            + (f", oldest {_age(box['oldestAgeSeconds'])}" if box["backlog"] else "")
        )
        lines.append(f"rejected   {w['rejected']}" + ("  (see .context/runtime/inbox/rejected/)"
                                                       if w["rejected"] else ""))
        s = w["sessions"]
        lines.append(f"sessions   {s['active']} active, {s['completed']} completed")
        if w["bindings"]:
            lines.append(f"bindings   {len(w['bindings'])}")
            for b in w["bindings"][:bindings_shown]:
                lines.append(
                    f"  {b['host']:<12} {b['sessionId']:<40} {_age(b['ageSeconds'])} ago"
                )
            if len(w["bindings"]) > bindings_shown:
                lines.append(f"  ... and {len(w['bindings']) - bindings_shown} more (--json)")
        lines.append(f"hooks      {len(w['hooks'])}" + ("" if not w["error"] else
                                                          f"  BROKEN: {w['error']}"))
        for h in w["hooks"]:
            lines.append(
                f"  {h['id']:<20} {'on ' if h['enabled'] else 'off'} {h['event']:<13} "
                f"delay {h['delaySeconds']}s  last {h['lastStatus'] or '-'}"
                + (f" at {h['lastFiredAt']}" if h["lastFiredAt"] else "")
                + (f"  log {h['lastLog']}" if h["lastLog"] else "")
            )
        lines.append(f"queue      {len(w['queue'])}")
        for q in w["queue"][:bindings_shown]:
            due = "due now" if q["dueInSeconds"] <= 0 else f"due in {_age(q['dueInSeconds'])}"
            lines.append(f"  {q['hookId']:<20} {q['host']:<12} {q['sessionId']:<40} {due}"
                         f"  retries {q['retries']}" + ("  firing" if q["claimedBy"] else ""))
        for name, counts in w["plugins"].items():
            lines.append(f"plugin     {name}: {counts['calls']} calls, {counts['errors']} errors, "
                         f"{counts['hangs']} hangs")
        for error in w["errors"]:
            lines.append(f"error      {error}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
