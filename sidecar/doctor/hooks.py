"""What `doctor` says of a workspace's follow-ups: a hooks.json that cannot be read, hooks
not trusted here as they stand, and hooks whose follow-ups keep failing, each with its fix."""

from __future__ import annotations

from sidecar.base import words
from sidecar.base.errors import SidecarError
from sidecar.base.outcome import Outcome
from sidecar.followups import store, trust
from sidecar.followups.model import FiringRecord, Hook
from sidecar.followups.run import logtail
from sidecar.hosts.base import Finding, note
from sidecar.layout import Workspace

FAILING = 2  # failed firings in a row that make a problem (one is a note: it may pass)


def check(ws: Workspace) -> list[Finding]:
    try:
        view = store.read_view(ws)
        untrusted = trust.untrusted(ws, view.hooks.values())
    except (OSError, SidecarError) as exc:
        return [Finding(False, f"cannot read {ws.hooks_file}: {exc}", "")]
    findings = []
    if view.error is not None:
        findings.append(Finding(
            False, f"{ws.hooks_file} is broken, so follow-ups run as its last good version "
                   f"said and no change to it counts: {view.error}",
            f"correct the file, or move it aside and run `sidecar init {ws.root}` for the default hooks"))
    findings += [Finding(False, f"hook {h.id} ({trust.described(h)}) is not trusted on this "
                                "machine as it stands (its settings, action or prompt arrived "
                                "or changed outside sidecar), so it does not run",
                         f"see exactly what it runs and trust it: sidecar hooks trust {h.id}")
                 for h in untrusted]
    return findings + [f for h in view.hooks.values() for f in _failing(ws, h)]


def _failing(ws: Workspace, hook: Hook) -> list[Finding]:
    """The hook's latest firings, if they failed: how many in a row, and what the last said.
    A skip (a session that needed nothing) neither fails nor succeeds."""
    ended = [f for f in hook.history if not Outcome.parse(f.status).skipped]
    failed: list[FiringRecord] = []
    for firing in reversed(ended):
        if not Outcome.parse(firing.status).failed:
            break
        failed.append(firing)
    if not failed:
        return []
    last = failed[0]
    line = last.line if last.kept else logtail.last_line(ws, hook.id, last.log)
    said = f"{last.status}: {line}" if line else str(last.status)
    log = ws.firing_log(hook.id, last.log or "")
    fix = (f"read {words.path(log)}" if log else f"see `sidecar hooks history {hook.id}`") + \
        ", fix what it says (a host that is not logged in: log in as the user follow-ups " \
        "run as), and the next firing shows it worked"
    if len(failed) < FAILING:
        return [note(f"hook {hook.id}'s last follow-up failed: {said}", fix)]
    return [Finding(False, f"hook {hook.id}'s last {len(failed)} follow-ups failed: {said}", fix)]
