"""`sidecar status` as people read it: the report (views/status.py builds it) as lines that fit 100
columns, with local and relative times, short paths, end reasons in words, and colour on a
terminal only (words.py says all of these the same way in every command)."""

from __future__ import annotations

import time

from sidecar.base import words
from sidecar.base.escapes import escaped, escaped_values
from sidecar.base.outcome import Outcome
from sidecar.base.timeutil import parse_ts
from sidecar.base.words import Style
from sidecar.views.budget import budget_lines

TYPE_CHECKING = False  # nor typing: see words.py
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from sidecar.views.report import CoordinationRow, FleetRow, HookRow, QueueRow, Report, WorkspaceReport

LABEL = 11  # "workspace  ": the width of the labels on the left


def when(value: object, now: float) -> str:
    """A recorded moment as `14:03:22 (3 min ago)`; `-` when it is not one."""
    ts = parse_ts(value)
    return "-" if ts is None else f"{words.local_time(ts, now)} ({words.ago(ts, now)})"


def tokens_text(t: dict[str, int]) -> str:
    return (f"input {t.get('input', 0):,}, output {t.get('output', 0):,}, cache read "
            f"{t.get('cacheRead', 0):,}, cache write {t.get('cacheWrite', 0):,}")


def outcome_style(status: str | None) -> tuple[str, ...]:
    """How a firing's outcome is painted: a failure red, a skip dim, success green."""
    ended = Outcome.parse(status)
    return ("red",) if ended.failed else ("dim",) if ended.skipped else ("green",) if ended.ok else ()


def retried(firing: dict[str, Any]) -> str:
    """What says a firing (or a queued entry) is a failed one run again by hand."""
    return " (retry)" if firing.get("retry") else ""


def _width(values: list[str]) -> int:
    return max(map(len, values), default=0)


# -- one session ----------------------------------------------------------------------------


def render_session(report: dict[str, Any], root: str | Path | None = None, now: float | None = None,
                   stale_after: float | None = None, style: Style | None = None) -> str:
    """`status --session`; `root`: the workspace, to which its log paths are shown relative."""
    from sidecar.views import activity  # (not on `status`'s path)

    now = time.time() if now is None else now
    paint = style or words.style_for()
    # What the host said (its end reason, its messages) escaped before any of it is painted.
    report, root = escaped_values(report), None if root is None else escaped(str(root))
    ended = report["completedAt"]
    why = words.end_reason(report["completionReason"], stale_after=stale_after)
    lines = [paint(f"session    {report['host']} {report['sessionId']}", "bold")
             + f" ({report['harnessSessionId']})",
             f"status     {report['status']}" + (f" {when(ended, now)}: {why}" if ended else "")]
    if report.get("state") not in (None, activity.State.ENDED):  # (the state `sessions` shows)
        lines.append(f"state      {activity.WORDS[report['state']]}"
                     + (f" ({report['stateWhy']})" if report.get("stateWhy") else ""))
    if report["tokens"]:
        lines.append(f"tokens     {tokens_text(report['tokens'])}")
    lines += _cost_lines(report, now)
    if report["limit"]:
        limit = report["limit"]
        lines.append(paint(f"limit      {limit['error']} since {when(limit['since'], now)}, "
                           f"{limit['failures']} failed turn(s): {limit['message']}", "yellow"))
    moments = [words.local_time(ts, now) if (ts := parse_ts(t["at"])) is not None else "-"
               for t in report["timeline"]]
    wide = _width(moments)
    for moment, t in zip(moments, report["timeline"], strict=True):
        lines.append(words.clip(f"  {moment:<{wide}}  {t['event'] or '-':<20} "
                                  f"{t['message'] or ''}", words.WIDTH).rstrip())
    hook_width = _width([f["hookId"] for f in report["followUps"]])
    for f in report["followUps"]:
        extra = f" ({f['why']})" if f.get("why") else f": {f['lastLine']}" if f.get("lastLine") else ""
        at = parse_ts(f.get("at") or f.get("dueAt"))
        moment = words.due(at, now) if "dueAt" in f else words.ago(at, now)
        lines.append(f"follow-up  {f['hookId']:<{hook_width}}  "
                     + paint(f"{f['state']}{retried(f)}{extra}", *outcome_style(f["state"]))
                     + f"  {moment}")
        if f.get("log"):
            lines.append(f"{'':<{LABEL}}log {words.path(f['log'], root)}")
    if not report["followUps"]:
        lines.append("follow-up  none queued")
    return "\n".join(lines) + "\n"


def _turn_tokens(t: dict[str, Any]) -> str:
    return (f"in {t.get('input', 0):,} · out {t.get('output', 0):,} · cache read "
            f"{t.get('cacheRead', 0):,} · write {t.get('cacheWrite', 0):,}")


def _cost_lines(report: dict[str, Any], now: float) -> list[str]:
    """The session's cost and where it came from, then its last turns' own (newest last)."""
    from sidecar.views import cost  # (not on `status`'s path)

    if report.get("cost") is None and not report.get("turns"):
        return []
    lines = [f"cost       {cost.told(report.get('cost'))}"]
    for turn in report.get("turns") or ():
        at = parse_ts(turn.get("at"))
        moment = "-" if at is None else words.local_time(at, now)
        spent = turn.get("cost") or {}
        amount = cost.number(spent.get("usd"))
        said = cost.UNKNOWN if amount is None else cost.usd(amount)
        model = spent.get("model")
        tokens = turn.get("tokens")
        lines.append(f"  turn     {moment}  {said}" + (f" ({model})" if model else "")
                     + (f"  {_turn_tokens(tokens)}" if isinstance(tokens, dict) else ""))
    return lines


# -- the workspaces -------------------------------------------------------------------------


def _hook_lines(h: HookRow, widths: tuple[int, int, int], root: str, now: float, paint: Style) -> list[str]:
    name, event, delay = widths
    last = h["lastStatus"] or "-"
    fired = parse_ts(h["lastFiredAt"])
    head = (f"  {h['id']:<{name}}  {'on ' if h['enabled'] else 'off'}  {h['event']:<{event}}  "
            f"delay {words.duration(h['delaySeconds']):<{delay}}  ")
    said = last + (f": {h['lastLine']}" if h["lastLine"] else "")
    when_fired = "" if fired is None else f" ({words.ago(fired, now)})"
    if len(head) + len("last ") + len(said) + len(when_fired) <= words.WIDTH:
        lines = [head + "last " + paint(said, *outcome_style(last)) + when_fired]
    else:  # on a line of its own, cut to fit: `hooks history` has it whole
        said = words.clip(said, words.WIDTH - len("    last ") - len(when_fired))
        lines = [head.rstrip(), "    last " + paint(said, *outcome_style(last)) + when_fired]
    if h["lastLog"]:
        lines.append(f"    log {words.path(h['lastLog'], root)}")
    if not h["trusted"]:
        from sidecar.base.startup import full_start

        full_start()
        from sidecar.followups import trust  # (a rare branch: imported where it is met)
        from sidecar.followups.notify.targets import Notify

        # What it would do on a line of its own, whole (it is what the user is asked to
        # trust), so the lines around it fit words.WIDTH however long it is.
        action = h["action"]
        does = "resumes the session with its prompt" if isinstance(action, str) else \
            trust.shown(Notify(action["notify"]) if isinstance(action, dict) else action)
        lines += ["    " + paint("NOT TRUSTED", "yellow", "bold") + " on this machine, so not run:",
                  f"      {does}",
                  f"    to run it: sidecar hooks trust {h['id']}"]
    return lines


def _queue_line(q: QueueRow, widths: tuple[int, int, int], now: float) -> str:
    hook, host, session = widths
    due = "due now" if q["dueInSeconds"] <= 0 else words.due(now + q["dueInSeconds"], now)
    run = q["running"]
    state = ("" if not q["claimedBy"] else "  firing" if run is None else
             f"  ended ({run['ended']}), to be recorded by the instance that leads"
             if run["ended"] else
             f"  running pid {run['pid']} since {words.ago(parse_ts(run['startedAt']), now)} "
             f"(held by {q['claimedBy']})")
    return (f"  {q['hookId']:<{hook}}  {q['host']:<{host}}  {q['sessionId']:<{session}}  {due}"
            f"  retries {q['retries']}" + state)


def _instance_lines(w: WorkspaceReport, now: float, paint: Style) -> list[str]:
    lines = []
    for inst in w["instances"]:
        state = inst["role"] if inst["live"] else paint("dead", "yellow")
        age = inst["heartbeatAgeSeconds"]
        lines.append(
            f"  instance {inst['id']}  pid {inst['pid']}  v{inst['build'] or inst['version']}  "
            f"{state}  started {when(inst['startedAt'], now)}  heartbeat "
            + ("-" if age is None else words.ago(now - age, now))
            + (paint(f"  last error: {inst['lastError']}", "red")
               if inst["lastError"] and inst["live"] else ""))
    if w["instances"] and not any(i["live"] for i in w["instances"]):
        lines.append(paint("  (no instance is alive)", "yellow"))
    return lines


def _binding_lines(w: WorkspaceReport, shown: int, now: float, paint: Style) -> list[str]:
    rows = w["bindings"][:shown]
    host, session = _width([b["host"] for b in rows]), _width([b["sessionId"] for b in rows])
    lines = [f"bindings   {len(w['bindings'])}"]
    for b in rows:
        age = b["ageSeconds"]
        alive = "" if b["hostPid"] is None else f"  host pid {b['hostPid']} " + (
            "alive" if b["hostAlive"] else paint("GONE", "yellow", "bold"))
        lines.append(f"  {b['host']:<{host}}  {b['sessionId']:<{session}}  "
                     + ("-" if age is None else words.ago(now - age, now)) + alive)
    if len(w["bindings"]) > shown:
        lines.append(f"  ... and {len(w['bindings']) - shown} more (--json)")
    return lines


def _follow_up_lines(w: WorkspaceReport, shown: int, now: float, paint: Style) -> list[str]:
    root = w["root"]
    hooks = w["hooks"]
    widths = (_width([h["id"] for h in hooks]), _width([h["event"] for h in hooks]),
              _width([words.duration(h["delaySeconds"]) for h in hooks]))
    lines = [paint("hooks", "bold") + f"      {len(hooks)}"
             + ("" if not w["error"] else "  " + paint(f"BROKEN: {w['error']}", "red", "bold"))]
    lines += [line for h in hooks for line in _hook_lines(h, widths, root, now, paint)]
    queue = w["queue"][:shown]
    lines.append(paint("queue", "bold") + f"      {len(w['queue'])}")
    q_widths = (_width([q["hookId"] for q in queue]), _width([q["host"] for q in queue]),
                _width([q["sessionId"] for q in queue]))
    lines += [_queue_line(q, q_widths, now) for q in queue]
    if len(w["queue"]) > shown:
        lines.append(f"  ... and {len(w['queue']) - shown} more (--json)")
    return lines


def _spent(spent: dict[str, Any]) -> str:
    """A workspace's spend: `$2.50 today (1 session), $12.50 in all`."""
    from sidecar.views.cost import usd  # (only where a workspace has spent something)

    day = spent.get("today")
    sessions = day.get("sessions") if day else None
    today = "nothing today" if not day else f"{usd(day['usd'])} today" + (
        "" if sessions is None else f" ({sessions} session{'' if sessions == 1 else 's'})")
    return f"{today}, {usd(spent['usd'])} in all"


def _workspace_lines(w: WorkspaceReport, shown: int, now: float, paint: Style) -> list[str]:
    lines = [paint(f"workspace  {words.path(w['root'])}", "bold"),
             "served     " + ("yes" if w["served"] else
                              paint("NO: no live instance (run `sidecar run`)", "red", "bold")),
             *_instance_lines(w, now, paint)]
    box = w["inbox"]
    oldest = box["oldestAgeSeconds"]
    lines.append(f"inbox      {box['backlog']} waiting" + (
        f", oldest {words.span(oldest)}" if box["backlog"] and oldest is not None else ""))
    lines.append(f"rejected   {w['rejected']}" + (paint(
        "  (see .context/runtime/inbox/rejected/)", "yellow") if w["rejected"] else ""))
    s = w["sessions"]
    lines.append(f"sessions   {s['active']} active, {s['completed']} completed"
                 "  (list them: sidecar sessions)")
    if w["tokens"]:
        lines.append(f"tokens     {tokens_text(w['tokens'])} ({w['tokens'].get('sessions', 0)} "
                     "session(s) with figures)")
    if w["cost"]:
        lines.append(f"cost       {_spent(w['cost'])}")
    if w["bindings"]:
        lines += _binding_lines(w, shown, now, paint)
    lines += _follow_up_lines(w, shown, now, paint)
    lines += [paint(line, "yellow") for line in budget_lines(w.get("budget", []))]
    for name, counts in w["plugins"].items():
        lines.append(f"plugin     {name}: {counts['calls']} calls, {counts['errors']} errors, "
                     f"{counts['hangs']} hangs")
    lines += _telemetry_lines(w, paint)
    lines += [paint(f"error      {error}", "red") for error in w["errors"]]
    return lines


def _telemetry_lines(w: WorkspaceReport, paint: Style) -> list[str]:
    """Each live instance's OpenTelemetry export: where to, what was sent and dropped, why."""
    lines = []
    for inst in w["instances"]:
        export = inst.get("telemetry")
        if not inst["live"] or export is None:
            continue
        dropped = export.get("dropped", 0)
        line = f"otel       {export.get('endpoint')}: {export.get('exported', 0)} spans exported, "
        lines.append(line + (paint(f"{dropped} dropped", "yellow", "bold") if dropped else "0 dropped"))
        if export.get("error"):
            lines.append(paint(f"  last error: {export['error']}", "red"))
    return lines


def render_text(report: Report, bindings_shown: int = 20, now: float | None = None,
                style: Style | None = None) -> str:
    now = time.time() if now is None else now
    paint = style or words.style_for()
    report = escaped_values(report)  # a hook's outcome, a path, an error: before painting
    blocks = ["\n".join(_workspace_lines(w, bindings_shown, now, paint)) for w in report["workspaces"]]
    coordination = _coordination_line(report["coordination"], now, paint)
    if coordination:
        blocks.insert(0, coordination)
    fleet = report.get("fleet")
    if fleet:
        blocks.insert(0, _fleet_line(fleet, paint))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _fleet_line(row: FleetRow, paint: Style) -> str:
    """Whether this machine publishes its sessions to the fleet, and if not, why."""
    if row["publishing"]:
        return f"fleet         {row['url']} as {row['machine']} (publishing)"
    return paint(f"fleet: {row['url'] or '[fleet]'} as {row['machine'] or '?'}: not publishing: "
                 f"{row['error']}", "red", "bold")


def _coordination_line(row: CoordinationRow, now: float, paint: Style) -> str:
    """Nothing for the file backend (the default, on one machine); the Redis, whether it
    answers, and what it warns of (this machine's clock, Redis's persistence), otherwise."""
    if row["backend"] == "file":
        return ""
    if row["reachable"]:
        return "\n".join([f"coordination  {row['url']} (reachable)",
                          *[paint(f"  warning: {said}", "yellow") for said in row["warnings"]]])
    since = parse_ts(row["since"])
    when = "" if since is None else f" since {words.local_time(since, now)} ({words.ago(since, now)})"
    return paint(f"coordination: {row['url'] or 'redis'} unreachable{when}: {row['error']}", "red", "bold")
