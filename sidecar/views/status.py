"""`sidecar status`'s report, built once: read from the workspace's files with the standard
library's C parts (base/files.py: no orjson, dataclasses, pathlib or typing), at the cost of a
hook. It reads only small files and folder listings (never the session records but the
active ones), so it stays fast however many completed sessions a workspace keeps.

Each part is read on its own, and a part that cannot be read is said in the workspace's
`errors`, never a traceback. A rare branch imports the module that knows it where it is met:
a coordination service's row (coordination/report.py), a hooks.json that is not plainly valid
(followups/store.py reads it as the daemon does), a trust that is not plain (followups/
trust.py), a notice's target (masked by followups/notify/targets.py), a failed firing's last
line that its history entry does not keep (followups/run/logtail.py), and the exact words of an
error.
"""

from __future__ import annotations

import os
import stat

from sidecar.base import storage
from sidecar.base.errors import SidecarError
from sidecar.base.files import as_text, below, obj, open_root, read_json, walk
from sidecar.base.proc import is_alive
from sidecar.base.startup import full_start
from sidecar.base.timeutil import parse_ts
from sidecar.base.version import __version__
from sidecar.views import cost
from sidecar.views.budget import budget_rows
from sidecar.views.hooks import hooks_section, workspace_of
from sidecar.views.report import REPORT_VERSION

TYPE_CHECKING = False  # typing costs this command 2 ms (see base/words.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from sidecar.views.report import BindingRow, HooksSection, InstanceRow, Report, WorkspaceReport

    T = TypeVar("T")

# layout.Workspace.check_runtime's folders, below the workspace.
CHECKED = (".context", ".context/runtime", ".context/runtime/inbox",
           ".context/runtime/inbox/rejected", ".context/runtime/hooks",
           ".context/runtime/sessions", ".context/runtime/locks", ".context/runtime/instances",
           ".context/runtime/logs")
TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "sessions")  # tokens.totals's
PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-.")


def build(roots: list[str], now: float) -> Report:
    """The report of the workspaces at `roots` (real, absolute paths)."""
    from sidecar.coordination.report import coordination_row  # (stdlib where it is the files)
    from sidecar.fleet.report import fleet_row  # (stdlib where there is no fleet)

    report: Report = {"version": REPORT_VERSION, "sidecar": __version__,
                      "coordination": coordination_row(roots, now),
                      "workspaces": [workspace_report(root, now) for root in roots]}
    fleet = fleet_row(roots)
    if fleet is not None:  # (only with a fleet: the report of every other user is as it was)
        report["fleet"] = fleet
    return report


def _read(errors: list[str], what: str, read: Callable[[], T], default: T,
          exact: Callable[[], object] | None = None) -> T:
    """One part of the report; a part that cannot be read is said, never a traceback.
    `exact`: the typed reader of the part, asked for the words of its error (they name the
    file as the daemon's own messages do)."""
    try:
        return read()
    except (OSError, SidecarError, ValueError) as exc:  # (Redis unreachable: a SidecarError)
        why: BaseException = exc
        if exact is not None and not isinstance(exc, SidecarError):  # (already the typed words)
            try:
                exact()
            except Exception as typed:  # noqa: BLE001  # its error, whatever it is, is said
                why = typed
        errors.append(f"cannot read {what}: {why}")
        return default


def workspace_report(root: str, now: float) -> WorkspaceReport:
    """One workspace's part of the report."""
    runtime_path = f"{root}/.context/runtime"
    tampered = check_runtime(root)
    if tampered is not None:  # nothing is read through a link, even to count it
        return _set_aside_report(root, f"cannot read the runtime: {tampered}")
    errors: list[str] = []
    base = open_root(root)
    try:
        runtime = walk(base, ".context", "runtime")
    except FileNotFoundError:
        runtime = None
    opened = {name: None if runtime is None else below(runtime, name)
              for name in ("inbox", "hooks", "sessions")}
    try:
        inbox = _read(errors, f"the inbox {runtime_path}/inbox", lambda: arrivals(opened["inbox"], now), None)
        sessions = opened["sessions"]
        no_bindings: list[BindingRow] = []
        bound = _read(errors, "the bindings", lambda: bindings(root, opened["hooks"], sessions, now),
                      no_bindings, lambda: _typed(root).load_bindings())
        total = _read(errors, f"the sessions {runtime_path}/sessions", lambda: count_sessions(sessions), 0)
        no_instances: list[InstanceRow] = []
        found = _read(errors, f"the instances {runtime_path}/instances",
                      lambda: no_instances if runtime is None else instances(root, runtime, now),
                      no_instances)
        empty: HooksSection = {"hooks": [], "queue": [], "error": None}
        hooks = empty if runtime is None else _read(
            errors, f"the hooks {runtime_path}/hooks.json",
            lambda: hooks_section(root, base, runtime, now), empty)
        trouble = storage.said(runtime_path)
        figures = usage(runtime, now)
        report: WorkspaceReport = {
            "root": root,
            "served": any(i["live"] for i in found),
            "storage": trouble,
            "instances": found,
            "inbox": inbox or {"backlog": 0, "oldestAgeSeconds": None},
            "rejected": _read(errors, f"the rejected files {runtime_path}/inbox/rejected",
                              lambda: count_rejected(opened["inbox"]), 0),
            "sessions": {"total": total, "active": len(bound),
                         "completed": max(0, total - len(bound))},
            "tokens": figures[0], "cost": figures[1],
            "bindings": bound,
            "hooks": hooks["hooks"], "queue": hooks["queue"], "error": hooks["error"],
            "plugins": plugin_counters(found),
            "errors": errors if trouble is None else [trouble, *errors],
        }
        held = [] if runtime is None else budget_rows(runtime, now)
        if held:  # (a key of its own: absent where there is nothing to say)
            report.update({"budget": held})
    finally:
        for fd in (*opened.values(), runtime, base):
            if fd is not None:
                os.close(fd)
    return report


def _set_aside_report(root: str, error: str) -> WorkspaceReport:
    return {"root": root, "served": False, "storage": None, "instances": [],
            "inbox": {"backlog": 0, "oldestAgeSeconds": None}, "rejected": 0,
            "sessions": {"total": 0, "active": 0, "completed": 0}, "tokens": None, "cost": None,
            "bindings": [], "hooks": [], "queue": [], "error": None, "plugins": {},
            "errors": [error]}


def _typed(root: str) -> Any:
    """The typed session store, for the words of a rare error."""
    full_start()
    from sidecar.sessions.store import SessionStore

    return SessionStore(workspace_of(root))


# -- the parts of a workspace's report ------------------------------------------------------


def check_runtime(root: str) -> str | None:
    """Why the runtime is not read (layout.check_runtime's words): a folder that is a link, or
    no folder; None where it is as sidecar made it."""
    for folder in CHECKED:
        try:
            mode = os.lstat(f"{root}/{folder}").st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(mode):
            full_start()
            from sidecar.layout import TamperedRuntime

            try:
                workspace_of(root).check_runtime()
            except TamperedRuntime as exc:
                return str(exc)
    return None


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


def count_sessions(sessions: int | None) -> int:
    """How many session folders exist: a bare listing, as status must stay fast at 100k."""
    return 0 if sessions is None else sum(1 for name in os.listdir(sessions) if not name.startswith("."))


def is_plain(name: str) -> bool:
    """layout.PLAIN_NAME: one plain file name of at most 128 characters."""
    return 0 < len(name) <= 128 and name[0] != "." and PLAIN.issuperset(name)


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def host_of(sessions: int | None, hid: str | None) -> tuple[int, int | None] | None:
    """The host process an active session's record names (its record is small and few are
    active); None where it names none or cannot be read."""
    if not hid or not is_plain(hid) or sessions is None:
        return None
    try:
        folder = below(sessions, hid)
        if folder is None:
            return None
        try:
            record = read_json(folder, "session.json")
        finally:
            os.close(folder)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    meta = obj(obj(record.get("metadata")).get("sidecar"))
    pid = _whole(meta.get("hostPid"))
    return None if pid is None else (pid, _whole(meta.get("hostStart")))


def bindings(root: str, hooks_dir: int | None, sessions: int | None, now: float) -> list[BindingRow]:
    """The active sessions, as sessions/model.Bindings reads host-sessions.json (through the
    session store where Redis holds the record)."""
    from sidecar.coordination.report import records_in_files

    if records_in_files(root):
        doc = None if hooks_dir is None else read_json(hooks_dir, "host-sessions.json")
        if doc is not None and not isinstance(doc, dict):
            raise ValueError("not a JSON object")
    else:
        doc = _typed(root).load_bindings().to_json()
    rows: list[BindingRow] = []
    for host, per_host in obj(obj(doc).get("bindings")).items():
        for session_id, binding in (per_host.items() if isinstance(per_host, dict) else ()):
            if not isinstance(binding, dict):
                continue
            harness = as_text(binding.get("harnessSessionId")) or None
            updated_at = as_text(binding.get("updatedAt"))
            updated = parse_ts(updated_at)
            proc = host_of(sessions, harness)
            rows.append({
                "host": host, "sessionId": session_id, "harnessSessionId": harness, "updatedAt": updated_at,
                "ageSeconds": None if updated is None else round(now - updated, 3),
                "hostPid": None if proc is None else proc[0],
                "hostAlive": None if proc is None else is_alive(*proc)})
    rows.sort(key=lambda b: b["ageSeconds"] if b["ageSeconds"] is not None else 1e18)
    return rows


def instances(root: str, runtime: int, now: float) -> list[InstanceRow]:
    """Every instance that registered with the workspace, and whether its life lock is held
    (an instance file that cannot be read is none); where a coordination service may be
    configured, as its backend sees them (coordination/report.py)."""
    from sidecar.coordination.report import instance_row, instance_rows, plainly_files

    if not plainly_files():
        return instance_rows(root, now)
    folder = below(runtime, "instances")
    if folder is None:
        return []
    rows = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
        for name in names:
            try:
                data = read_json(folder, name)
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                instance_id = name[: -len(".json")]
                live = is_plain(instance_id) and life_lock_held(runtime, instance_id)
                rows.append(instance_row(instance_id, data, now, live))
    finally:
        os.close(folder)
    return rows


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
    finally:
        os.close(folder)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (closing lets the lock taken go)
    return False


def usage(runtime: int | None, now: float) -> tuple[dict[str, int] | None, dict[str, Any] | None]:
    """tokens.totals, from usage.json: the workspace's token counts, and what it spent (in
    all, and `today` by the local day); each None before any, or unreadable."""
    try:
        data = None if runtime is None else read_json(runtime, "usage.json")
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        return None, None
    total = cost.number(data.get("usd"))
    return ({k: v for k in TOKEN_FIELDS if isinstance(v := data.get(k, 0), int) and not isinstance(v, bool)},
            None if total is None else {"usd": total, "today": cost.ledger_day(data, cost.today(now))})


def plugin_counters(found: list[InstanceRow]) -> dict[str, dict[str, int]]:
    """Plugin calls, errors and hangs, summed over the live instances."""
    total: dict[str, dict[str, int]] = {}
    for inst in found:
        if inst["live"]:
            for name, counts in inst["plugins"].items():
                mine = total.setdefault(name, {"calls": 0, "errors": 0, "hangs": 0})
                for key in mine:
                    mine[key] += int(counts.get(key, 0))
    return total
