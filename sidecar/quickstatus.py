"""`sidecar status`'s report at the cost of a hook: what cli/status.py builds, read with the
standard library's C parts only (`_json` through quickread: no orjson, dataclasses or typer),
for the launcher's fast path (quickcli.py).

It mirrors `status.build` for what a workspace on one machine usually holds, and declines
(`Declined`) whatever it might say differently, which the full command then answers as before:
a coordination service (Redis); a runtime not as sidecar made it; a file it cannot read, or
one orjson could read differently (an integer past 64 bits, a lone surrogate); a hooks.json
the daemon has not taken up (it differs from hooks.last-good.json, the copy kept of every
valid one); an enabled hook not plainly trusted as it stands (quicktrust.py), or a notify
hook (its target is shown masked); a failed firing (the last line of its log).
test_quickstatus.py holds the two to one report.
"""

from __future__ import annotations

import os
import stat

from sidecar.base import storage
from sidecar.base.files import Declined, below, obj, open_root, parse, read, read_json, read_path, walk
from sidecar.base.proc import is_alive
from sidecar.base.timeutil import parse_ts
from sidecar.base.version import __version__
from sidecar.quicktrust import Trusted

TYPE_CHECKING = False  # typing costs this command 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any

# layout.Workspace.check_runtime's folders, below the workspace.
CHECKED = (".context", ".context/runtime", ".context/runtime/inbox",
           ".context/runtime/inbox/rejected", ".context/runtime/hooks",
           ".context/runtime/sessions", ".context/runtime/locks", ".context/runtime/instances",
           ".context/runtime/logs")
TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "sessions")  # tokens.totals's
BROKEN_KEYS = ("sidecarBrokenSince", "sidecarFiredWhileBroken")  # followups/store.py's
HISTORY_LIMIT = 200  # followups/model.py's
DEFAULT_DELAY = 10  # followups/model.py's, for a hook that is not a notify hook
FILE_BACKEND: dict[str, Any] = {
    "backend": "file", "url": None, "reachable": True, "error": None, "since": None,
    "clockOffsetSeconds": None, "persistence": None, "warnings": []}
PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-.")


# -- the parts of a workspace's report ------------------------------------------------------


def check_runtime(root: str) -> None:
    """layout's check_runtime: a runtime folder that is a link, or no folder, is declined."""
    for folder in CHECKED:
        try:
            mode = os.lstat(f"{root}/{folder}").st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(mode):
            raise Declined(f"{folder} is a link or no folder")


def arrivals(inbox: int | None, now: float) -> dict[str, Any]:
    """inbox.scan's count and oldest arrival: every entry but producers' temporary files."""
    mtimes = []
    if inbox is not None:
        with os.scandir(inbox) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name.endswith(".tmp") or name == "rejected":
                    continue
                try:
                    mtimes.append(entry.stat(follow_symlinks=False).st_mtime)
                except FileNotFoundError:
                    continue
    oldest = min(mtimes, default=None)
    return {"backlog": len(mtimes),
            "oldestAgeSeconds": None if oldest is None else round(max(0.0, now - oldest), 3)}


def count_rejected(inbox: int | None) -> int:
    folder = None if inbox is None else below(inbox, "rejected")
    if folder is None:
        return 0
    try:
        with os.scandir(folder) as entries:
            return sum(1 for e in entries if not e.name.endswith(".error.json")
                       and not e.name.startswith(".") and not e.name.endswith(".tmp"))
    finally:
        os.close(folder)


def is_plain(name: str) -> bool:
    """layout.PLAIN_NAME: one plain file name of at most 128 characters."""
    return 0 < len(name) <= 128 and name[0] != "." and PLAIN.issuperset(name)


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def host_of(sessions: int | None, hid: str | None) -> tuple[int, int | None] | None:
    """status._host_of: the host process an active session's record names."""
    if not hid or not is_plain(hid) or sessions is None:
        return None
    folder = below(sessions, hid)
    if folder is None:
        return None
    try:
        record = read_json(folder, "session.json")
    finally:
        os.close(folder)
    if not isinstance(record, dict):
        return None
    meta = obj(obj(record.get("metadata")).get("sidecar"))
    pid = _whole(meta.get("hostPid"))
    return None if pid is None else (pid, _whole(meta.get("hostStart")))


def bindings(hooks_dir: int | None, sessions: int | None, now: float) -> list[dict[str, Any]]:
    """status.workspace_report's bindings, as sessions/model.Bindings reads the file."""
    doc = None if hooks_dir is None else read_json(hooks_dir, "host-sessions.json")
    if doc is not None and not isinstance(doc, dict):
        raise Declined("the bindings are not an object")
    rows = []
    for host, per_host in obj(obj(doc).get("bindings")).items():
        for session_id, binding in (per_host.items() if isinstance(per_host, dict) else ()):
            if not isinstance(binding, dict):
                continue
            harness = _text(binding.get("harnessSessionId")) or None
            updated_at = _text(binding.get("updatedAt"))
            updated = parse_ts(updated_at)
            proc = host_of(sessions, harness)
            rows.append({
                "host": host, "sessionId": session_id, "harnessSessionId": harness,
                "updatedAt": updated_at,
                "ageSeconds": None if updated is None else round(now - updated, 3),
                "hostPid": None if proc is None else proc[0],
                "hostAlive": None if proc is None else is_alive(*proc)})
    rows.sort(key=lambda b: b["ageSeconds"] if b["ageSeconds"] is not None else 1e18)
    return rows


def instances(runtime: int, now: float) -> list[dict[str, Any]]:
    """status.instance_rows: each instance's file, and whether its life lock is held."""
    folder = below(runtime, "instances")
    if folder is None:
        return []
    rows = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
        for name in names:
            data = read_json(folder, name)
            if isinstance(data, dict):
                rows.append(instance_row(name[: -len(".json")], data, runtime, now))
    finally:
        os.close(folder)
    return rows


def instance_row(instance_id: str, data: dict[str, Any], runtime: int, now: float) -> dict[str, Any]:
    """InstanceInfo.from_json's reading, as status shows it."""
    def count(key: str) -> int:
        return _whole(data.get(key)) or 0

    pid, plugins = data.get("pid"), data.get("plugins")
    beat = parse_ts(_text(data.get("heartbeatAt")))
    return {
        "id": instance_id, "pid": pid if isinstance(pid, int) else None,
        "hostname": _text(data.get("hostname")), "version": _text(data.get("version")),
        "build": _text(data.get("build")), "role": _text(data.get("role")),
        "startedAt": _text(data.get("startedAt")), "heartbeatAt": _text(data.get("heartbeatAt")),
        "heartbeatAgeSeconds": None if beat is None else round(now - beat, 3),
        "live": is_plain(instance_id) and life_lock_held(runtime, instance_id),
        "applied": count("applied"), "rejected": count("rejected"), "errors": count("errors"),
        "lastError": _text(data.get("lastError")) or "",
        "plugins": {k: v for k, v in plugins.items() if isinstance(v, dict)}
        if isinstance(plugins, dict) else {},
    }


def life_lock_held(runtime: int, instance_id: str) -> bool:
    """locks.is_held on the instance's life lock: whether a shared lock is refused."""
    import fcntl  # only where an instance registered

    folder = below(runtime, "locks")
    if folder is None:
        return False
    try:
        fd = os.open(f"instance-{instance_id}.lock",
                     os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise Declined(f"a life lock: {exc}") from None
    finally:
        os.close(folder)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (closing lets the lock taken go)
    return False


def tokens(runtime: int) -> dict[str, int] | None:
    """tokens.totals."""
    data = read_json(runtime, "usage.json")
    if not isinstance(data, dict):
        return None
    return {k: v for k in TOKEN_FIELDS
            if isinstance(v := data.get(k, 0), int) and not isinstance(v, bool)}


# -- hooks and queue ------------------------------------------------------------------------


def hooks_section(runtime: int, now: float, trusted: Trusted) -> dict[str, Any]:
    """status.hooks_section, for a hooks.json the daemon has taken up: one the same as the
    last good copy it keeps of every valid one it read or wrote (store.py), so valid."""
    data = read(runtime, "hooks.json")
    if data is None:
        return {"hooks": [], "queue": [], "error": None}
    if read(runtime, "hooks.last-good.json") != data:
        raise Declined("hooks.json is not the last good copy")
    doc = parse(data)
    if not isinstance(doc, dict) or any(key in doc for key in BROKEN_KEYS):
        raise Declined("hooks.json is not as sidecar keeps it")
    hooks = obj(doc.get("hooks"))
    if any(not isinstance(raw, dict) or raw.get("id") != key or type(raw.get("enabled", True))
           is not bool for key, raw in hooks.items()):  # a shipped runtime ships both files
        raise Declined("a hook the full command may read otherwise")
    rows = [hook_row(raw, trusted) for raw in hooks.values()]
    queue = [queue_row(entry, now) for entry in doc.get("pending") or ()]
    queue.sort(key=lambda q: q["dueInSeconds"])
    return {"hooks": rows, "queue": queue, "error": None}


def hook_row(raw: dict[str, Any], trusted: Trusted) -> dict[str, Any]:
    """One valid hook as followups/model.Hook reads it and status shows it."""
    action = raw.get("action", "resume")
    if action != "resume" and not isinstance(action, list):
        raise Declined("a notify hook: its target is shown masked (targets.py)")
    if raw.get("enabled", True):
        trusted.check(raw)  # else Declined: the full command says it is not trusted
    delay = raw.get("delaySeconds")
    if delay is None:  # model._migrate_delay_minutes, then the default
        minutes = raw.get("delayMinutes")
        delay = DEFAULT_DELAY if minutes is None else int(round(minutes * 60))
    history = raw.get("history") or []
    last = history[-HISTORY_LIMIT:][-1] if history else None
    status = _text(raw.get("lastStatus"))
    last_status = _text(last.get("status")) if isinstance(last, dict) else None
    if last is not None and (last_status or "").startswith("error") and last_status == status:
        raise Declined("a failed firing: the last line of its log")  # logtail.failure_line
    return {
        "id": raw["id"], "name": raw["name"], "enabled": raw.get("enabled", True),
        "event": raw.get("event", "session-end"), "delaySeconds": delay, "action": action,
        "lastStatus": status, "lastFiredAt": _text(raw.get("lastFiredAt")),
        "lastLog": _text(last.get("log")) if isinstance(last, dict) else None,
        "lastLine": None, "trusted": True,  # enabled: checked above; disabled: runs nothing
    }


def queue_row(entry: dict[str, Any], now: float) -> dict[str, Any]:
    """One valid queue entry as followups/model.QueueEntry reads it and status shows it."""
    due_at = entry.get("dueAt")
    due = parse_ts(due_at if isinstance(due_at, (str, float, int))
                   and not isinstance(due_at, bool) else None)
    run = entry.get("run")
    retries = entry.get("retries", 0)
    return {
        "hookId": entry["hookId"], "host": entry["host"], "sessionId": entry["sessionId"],
        "dueInSeconds": 0.0 if due is None else round(due - now, 3),
        "retries": retries if type(retries) is int else 0,
        "claimedBy": entry.get("claimedBy") or None,
        "running": None if run is None else {
            "pid": run["pid"], "startedAt": _text(run.get("startedAt")) or "", "log": run["log"],
            "alive": is_alive(run["pid"], run.get("start") if type(run.get("start")) is int
                              else None)},
    }


# -- the report -----------------------------------------------------------------------------


def coordination(config_file: str, url_variable: str | None) -> dict[str, Any]:
    """The file backend's row; Declined where a coordination service may be configured (the
    variable set, or config.toml naming one: config.py reads it with tomllib)."""
    if url_variable:
        raise Declined("SIDECAR_COORDINATION_URL names a coordination service")
    if url_variable is None and b"coordination" in (read_path(config_file) or b""):
        raise Declined("config.toml may name a coordination service")
    return {**FILE_BACKEND, "warnings": []}  # (a list of its own)


def workspace_report(root: str, now: float, config_folder: str) -> dict[str, Any]:
    """status.workspace_report of the workspace at `root` (a real, absolute path)."""
    check_runtime(root)
    base = open_root(root)
    try:
        runtime = walk(base, ".context", "runtime")
    except FileNotFoundError:
        os.close(base)
        raise Declined("no runtime: never initialised here") from None
    opened = {name: below(runtime, name) for name in ("inbox", "hooks", "sessions")}
    try:
        sessions = opened["sessions"]
        bound = bindings(opened["hooks"], sessions, now)
        total = 0 if sessions is None else sum(
            1 for name in os.listdir(sessions) if not name.startswith("."))
        found = instances(runtime, now)
        trouble = storage.said(f"{root}/.context/runtime")
        report = {
            "root": root,
            "served": any(i["live"] for i in found),
            "storage": trouble,
            "instances": found,
            "inbox": arrivals(opened["inbox"], now),
            "rejected": count_rejected(opened["inbox"]),
            "sessions": {"total": total, "active": len(bound),
                         "completed": max(0, total - len(bound))},
            "tokens": tokens(runtime),
            "bindings": bound,
            **hooks_section(runtime, now, Trusted(root, base, runtime, config_folder)),
            "plugins": plugin_counters(found),
            "errors": [] if trouble is None else [trouble],
        }
    finally:
        for fd in (*opened.values(), runtime, base):
            if fd is not None:
                os.close(fd)
    return report


def plugin_counters(found: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """status._plugin_counters: plugin calls, errors and hangs over the live instances."""
    total: dict[str, dict[str, int]] = {}
    for inst in found:
        if inst["live"]:
            for name, counts in inst["plugins"].items():
                mine = total.setdefault(name, {"calls": 0, "errors": 0, "hangs": 0})
                for key in mine:
                    mine[key] += int(counts.get(key, 0))
    return total


def build(roots: list[str], now: float, config_file: str, url_variable: str | None
          ) -> dict[str, Any]:
    """status.build; Declined where the full command may say anything else."""
    try:
        return {"version": 1, "sidecar": __version__,
                "coordination": coordination(config_file, url_variable),
                "workspaces": [workspace_report(root, now, os.path.dirname(config_file))
                               for root in roots]}
    except Declined:
        raise
    except Exception as exc:  # whatever went wrong, the full command says it as it does
        raise Declined(repr(exc)) from None
