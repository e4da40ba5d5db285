"""`sidecar sessions`: every session of the registered workspaces, newest activity first.

It reads every record of every workspace it lists (views/sessions.py): a workspace or a record that
cannot be read is said on stderr and the rest are listed.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

from sidecar import config as config_mod
from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.base.exitcodes import FAILURE, OK
from sidecar.base.timeutil import human_age, parse_duration
from sidecar.base.version import __version__
from sidecar.base.words import Style
from sidecar.cli.jsonout import print_json
from sidecar.followups.store import HooksView
from sidecar.hosts import registry
from sidecar.layout import Workspace, find_workspace
from sidecar.sessions import lookup
from sidecar.sessions.store import SessionStore
from sidecar.views import cost, rowjson, spend
from sidecar.views.activity import WORDS, State
from sidecar.views.sessions import FollowUp, SessionRow, read_rows

SESSIONS_VERSION = 1
DEFAULT_LIMIT = 50

STATE_STYLE = {State.WORKING: ("green",), State.WAITING: ("yellow", "bold"),
               State.LIMITED: ("red",), State.ENDED: ("dim",), State.IDLE: ()}
HEADINGS = ("HOST", "WORKSPACE", "SESSION", "STATE", "STARTED", "ENDED", "TOKENS", "COST", "FOLLOW-UP")
FLEXIBLE = ("STATE", "FOLLOW-UP")  # they give way first when a row would not fit
WORKSPACE_WIDTH = 20
SHORT_ID = 8
GAP = "  "
EMPTY = ("-", cost.NEVER_PRICED)  # a cell that says nothing: a column of them is left out


def stale_after() -> float | None:
    """config.toml's staleAfter, for saying why a swept session ended; None if unreadable."""
    try:
        return config_mod.load_config().stale_after
    except config_mod.ConfigError:
        return None


def last_activity(row: SessionRow) -> float:
    return row.updated_at or row.ended_at or row.started_at or 0.0


# -- which workspaces -----------------------------------------------------------------------


def workspaces(roots: list[Path] | None, errors: list[str]) -> list[Workspace]:
    """The workspaces named (each folder, or the workspace holding it), else the registered
    ones; what cannot be used goes to `errors` (a registered folder that is no workspace any
    more is only noted on stderr, as `status --all` does)."""
    if roots:
        found: list[Workspace] = []
        for root in roots:
            ws = find_workspace(root)
            if ws is None:
                errors.append(f"{root}: not a workspace (no .context/)")
            elif ws.root not in [w.root for w in found]:
                found.append(ws)
        return found
    from sidecar.cli.common import registered_workspaces  # (it says what it skips)

    return registered_workspaces()


def gather(found: list[Workspace], errors: list[str]) -> list[SessionRow]:
    """Every session of the workspaces, newest activity first."""
    rows: list[SessionRow] = []
    for ws in found:
        read, failed = read_rows(ws)
        rows += read
        errors += failed
    rows.sort(key=last_activity, reverse=True)
    return rows


def named_session(ws: Workspace, view: HooksView, text: str) -> str:
    """The host session id `text` names (whole, the start of one, or a harness id), among the
    records and the sessions the hooks' history and queue name; lookup's errors otherwise."""
    return named(ws, view, text).session_id


def named(ws: Workspace, view: HooksView, text: str) -> lookup.Named:
    """The session `text` names, as `named_session` finds it: its host, id and record."""
    known = [(f.host, f.session_id) for h in view.hooks.values() for f in h.history
             if f.host and f.session_id] + [(e.host, e.session_id) for e in view.pending]
    hosts = {host for host, _ in known} | set(registry.names())
    return lookup.resolve(SessionStore(ws), text, hosts, known)


# -- words for one row ----------------------------------------------------------------------


def compact(count: int) -> str:
    """12345 as 12.3k, 4000 as 4k, 2500000 as 2.5M."""
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if count >= size:
            return f"{count / size:.1f}".removesuffix(".0") + unit
    return str(count)


def tokens_shown(tokens: dict[str, int] | None) -> str:
    """Input and output tokens, `12.3k/4k`: a table of eight columns has no room for words."""
    return f"{compact(tokens.get('input', 0))}/{compact(tokens.get('output', 0))}" if tokens else "-"


def follow_up_shown(follow_ups: tuple[FollowUp, ...], now: float) -> str:
    """The newest follow-up: running, when a queued one is due, or how the last one ended."""
    if not follow_ups:
        return "-"
    newest = follow_ups[0]
    if newest.state == "running":
        return f"{newest.hook_id} running"
    if newest.state in ("queued", "postponed"):
        postponed = "postponed, " if newest.state == "postponed" else ""
        due = "due now" if words.is_due(newest.at, now) else f"due {words.ago(newest.at, now, human_age)}"
        return f"{newest.hook_id} {postponed}{due}"
    # How it ended, not when: the table has no room for both (`hooks history` has the time).
    return f"{newest.hook_id} {newest.state.split(':', 1)[0] or '-'}"


def state_shown(row: SessionRow, stale: float | None) -> str:
    """The state in words; an ended session's says why it ended."""
    if row.activity.state != State.ENDED:
        return WORDS[row.activity.state]
    why = words.end_reason_brief(row.reason, mid_turn=row.mid_turn, stale_after=stale)
    return f"ended: {why}"


def ended_shown(row: SessionRow, now: float) -> str:
    return words.ago(row.ended_at, now, human_age) if row.activity.state == State.ENDED else "-"


def workspace_names(rows: list[SessionRow]) -> dict[Path, str]:
    """Each workspace by its folder's name, or relative to ~ where two share a name."""
    return root_names([row.root for row in rows])


def root_names(listed: list[Path]) -> dict[Path, str]:
    roots = list(dict.fromkeys(listed))
    names = [root.name or str(root) for root in roots]
    return {root: name if names.count(name) == 1 else words.path(root)
            for root, name in zip(roots, names, strict=True)}


def cells(row: SessionRow, workspace: str, now: float, stale: float | None) -> list[str]:
    """The row's cells, escaped (an end reason is the host's text) before they are painted."""
    return [escaped(cell) for cell in (
        row.host, workspace, words.short_id(row.session_id, SHORT_ID),
        state_shown(row, stale), words.ago(row.started_at, now, human_age),
        ended_shown(row, now), tokens_shown(row.tokens), cost.shown(row.cost),
        follow_up_shown(row.follow_ups, now))]


def machine_shown(machine: str, unreachable: set[str] | None) -> str:
    """The MACHINE cell: its name, and that it is not heard from (its rows are as it left them)."""
    return escaped(machine) + (" (unreachable)" if unreachable and machine in unreachable else "")


# -- the table ------------------------------------------------------------------------------


def table_width() -> int:
    """The room a table has: a wider terminal's (or `COLUMNS`), never less than words.WIDTH,
    so a wide terminal shows an end reason whole and a pipe gets the same lines every time."""
    return max(words.WIDTH, shutil.get_terminal_size((words.WIDTH, 24)).columns)


def widths(table: list[list[str]], headings: list[str], width: int) -> list[int]:
    """Each column as wide as its widest cell, the whole within `width`: the wider of the
    flexible columns (STATE, FOLLOW-UP) gives way first, then the workspace's."""
    sizes = [max(len(cell) for cell in column) for column in zip(*table, strict=True)]
    where = headings.index("WORKSPACE") if "WORKSPACE" in headings else None
    if where is not None:
        sizes[where] = min(sizes[where], WORKSPACE_WIDTH)
    room = width - len(GAP) * (len(sizes) - 1)
    flexible = [i for i, name in enumerate(headings) if name in FLEXIBLE]
    while sum(sizes) > room and flexible:
        wider = max(flexible, key=lambda i: sizes[i])
        if sizes[wider] > len(headings[wider]) + 8:
            sizes[wider] -= 1
        elif where is not None and sizes[where] > len("WORKSPACE"):
            sizes[where] -= 1
        else:
            break
    return sizes


def _keep_end(text: str, width: int) -> str:
    """A workspace cut at its start, where a path's least telling part is: `…/one/app`."""
    return (text if len(text) <= width else "…" + text[len(text) - width + 1:]).ljust(width)


def _columns(table: list[list[str]], workspaces: int) -> list[int]:
    """The columns worth their room: the workspace only when there are several, the others
    when some row has something to say (no session ended, none has token figures, none was
    ever priced)."""
    always = {"MACHINE", "HOST", "SESSION", "STATE", "STARTED"}
    return [i for i, name in enumerate(table[0])
            if (name == "WORKSPACE" and workspaces > 1) or name in always
            or (name != "WORKSPACE" and any(line[i] not in EMPTY for line in table[1:]))]


def render(rows: list[SessionRow], total: int, now: float, stale: float | None, paint: Style,
           width: int = words.WIDTH, unreachable: set[str] | None = None) -> str:
    """The table; with `unreachable` (the fleet's machines not heard from), a MACHINE column
    first, and an unreachable machine's sessions marked so, their state dimmed."""
    if not rows:
        return "no sessions\n"
    names = workspace_names(rows)
    fleet = unreachable is not None
    table = [(["MACHINE"] if fleet else []) + list(HEADINGS),
             *[([machine_shown(row.machine, unreachable)] if fleet else [])
               + cells(row, names[row.root], now, stale) for row in rows]]
    kept = _columns(table, len(names))
    headings = [table[0][i] for i in kept]
    table = [[line[i] for i in kept] for line in table]
    sizes = widths(table, headings, width)
    state_at = headings.index("STATE")
    lines = []
    for index, line in enumerate(table):
        shown = [words.clip(cell, size).ljust(size) for cell, size in zip(line, sizes, strict=True)]
        if "WORKSPACE" in headings:
            at = headings.index("WORKSPACE")
            shown[at] = _keep_end(line[at], sizes[at])
        if index == 0:
            lines.append(paint(GAP.join(shown).rstrip(), "bold"))
            continue
        row = rows[index - 1]
        live = not unreachable or row.machine not in unreachable
        shown[state_at] = paint(shown[state_at], *STATE_STYLE[row.activity.state] if live else ("dim",))
        lines.append(GAP.join(shown).rstrip())
    if total > len(rows):
        lines.append(f"... and {total - len(rows)} more (--limit, or --json for all)")
    return "\n".join(lines) + "\n"


# -- the command (its options: sessions_command.py) ------------------------------------------


def answer(given: dict[str, Any]) -> int | None:
    """`sidecar sessions` without the command line framework (the launcher's dispatch, `given` its
    options): its exit code, or None where the full command has something to say first (a bad
    --since or --limit, a registry it cannot read, a registered folder that is no workspace)."""
    try:
        window = None if "--since" not in given else parse_duration(given["--since"])
        limit = None if "--limit" not in given else int(given["--limit"])
    except ValueError:
        return None
    if limit is not None and limit < 1:
        return None
    errors: list[str] = []
    roots = [Path(root) for root in given.get("--root", [])]
    if roots:
        found = workspaces(roots, errors)
    else:
        try:
            registered = [Workspace(root) for root in config_mod.load_registry()]
        except config_mod.RegistryError:
            return None
        if not all(ws.context.is_dir() for ws in registered):
            return None
        found = registered
    return listed(found, errors, bool(given.get("--active")), window, limit, bool(given.get("--json")))


def listed(found: list[Workspace], errors: list[str], active: bool, window: float | None,
           limit: int | None, json_out: bool) -> int:
    """Print the sessions of `found` (what could not be read on stderr); the exit code."""
    rows = gather(found, errors)
    now = time.time()
    # What the days cost is every session's of those days, whatever the listing hides.
    days = None if window is None else spend.spend(rows, [ws.root for ws in found],
                                                   cost.days_back(window, now))
    rows = [r for r in rows if (not active or r.activity.state != State.ENDED)
            and (window is None or last_activity(r) >= now - window)]
    stale = stale_after()
    for error in errors:
        sys.stderr.write(f"sidecar: {escaped(error)}\n")
    sys.stderr.flush()
    if json_out:
        shown = rows if limit is None else rows[:limit]
        print_json({
            "version": SESSIONS_VERSION, "sidecar": __version__,
            "sessions": [rowjson.to_json(r, stale) for r in shown], "total": len(rows),
            "spend": None if days is None else days.to_json(), "errors": errors})
    else:
        shown = rows[:limit or DEFAULT_LIMIT]
        sys.stdout.write(render(shown, len(rows), now, stale, words.style_for(), table_width()))
        if days is not None:
            names = root_names([*(r.root for r in rows), *days.by_workspace])
            sys.stdout.write("\n" + "\n".join(escaped(line) for line in
                                               spend.foot(days, names, cost.today(now))) + "\n")
    sys.stdout.flush()
    return FAILURE if errors else OK
