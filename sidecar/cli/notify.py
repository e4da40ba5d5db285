"""Notify hooks on the command line: `hooks add/update --notify TARGET`, and `hooks test`.

A target is checked when the hook is written (its form; for an apprise URL, that apprise is
installed and knows it), so a mistake is said at once and not when the first notice fails.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any, NoReturn

import typer

from sidecar.base.exitcodes import FAILURE
from sidecar.base.timeutil import iso
from sidecar.cli.common import fail
from sidecar.followups import trust
from sidecar.followups.globalhooks import GlobalStore
from sidecar.followups.model import Hook
from sidecar.followups.notify import send, targets
from sidecar.followups.notify.targets import Notify, TargetError
from sidecar.followups.store import HookStore

NotifyOpt = typer.Option(
    None, "--notify", metavar="TARGET",
    help="Send a notice instead of resuming: ntfy://host/topic, ntfys://host/topic, an "
         "http(s):// webhook URL, desktop, or an apprise URL (with agent-sidecar[notify]). "
         "Its delay is 0 unless --delay says otherwise.")
AlsoFollowUpsOpt = typer.Option(
    None, "--also-follow-ups/--not-follow-ups",
    help="A notify hook: also tell what a follow-up's own run does (by default only the "
         "user's own sessions are told of).")


def _fail(message: str) -> NoReturn:
    fail(message, FAILURE, "sidecar hooks")


def check_target(target: str) -> Notify:
    """The target as an action, or a clear error: its form, and for an apprise URL, apprise."""
    try:
        action = targets.check(target)
    except TargetError as exc:
        _fail(f"--notify: {exc}")
    if action.kind != "apprise":
        return action
    if importlib.util.find_spec("apprise") is None:
        _fail(f"--notify {targets.shown(target)}: an apprise URL needs the optional extra; "
              f"install it with: pip install '{targets.EXTRA}'")
    import apprise  # type: ignore[import-not-found, unused-ignore]

    if not apprise.Apprise().add(target):
        _fail(f"--notify {targets.shown(target)}: apprise does not know this URL (see "
              "https://github.com/caronc/apprise/wiki for the forms it takes)")
    return action


def fields(notify: str | None, also_follow_ups: bool | None, command: list[str],
           given: dict[str, Any], switching: bool = True) -> dict[str, Any]:
    """The hook fields that --notify and --also-follow-ups set. A hook that becomes a notify
    hook gets no prompt and a delay of 0, unless the command line says otherwise."""
    out: dict[str, Any] = {}
    if notify is not None:
        if command:
            _fail("give either --notify TARGET or a command after --, not both")
        out["action"] = check_target(notify).to_json()
        if switching:
            out.setdefault("promptFile", given.get("promptFile"))
            out.setdefault("delaySeconds", given.get("delaySeconds", 0))
    if also_follow_ups is not None:
        out["alsoFollowUps"] = also_follow_ups
    return out


def sample(workspace: str, hook: Hook) -> dict[str, Any]:
    """A notice like the hook's own, with made-up facts, for `hooks test`."""
    assert isinstance(hook.action, Notify)
    event = hook.event.value
    reason = {"session-end": "exit", "turn-end": "", "needs-input": "permission_prompt",
              "turn-failed": "usage_limit", "follow-up-failed": "error: exit status 1",
              "resume-started": "started",
              "over-budget": "over budget ($5.12 of $5.00 today)"}.get(event, "")
    return {"target": hook.action.target, "host": "sample-host", "sessionId": "sample-session",
            "harnessSessionId": None, "hookId": hook.id, "workspace": workspace,
            "notice": {"event": event, "reason": reason, "at": iso(time.time()),
                       "message": "a sample notice from `sidecar hooks test`",
                       "hook": "sample-hook"}}


def register(hooks_app: typer.Typer, store_of: Any) -> None:
    """Add `hooks test` to the hooks command group."""

    @hooks_app.command("test")
    def test_hook(
        hook_id: str = typer.Argument(..., metavar="NAME", help="The notify hook to test."),
        root: Path | None = typer.Option(None, "--root", metavar="DIR",
                                         help="The workspace (default: the one holding the current folder)."),
        global_: bool = typer.Option(False, "--global", help="One of your global hooks."),
    ) -> None:
        """Send a sample notice through a notify hook's target now and say what happened.

        It exits 0 when the notice was delivered and 1 when it was not (the HTTP status or the
        error is said). One try, with the same timeout as a real notice.

        Example: sidecar hooks test phone
        """
        store: HookStore | GlobalStore = store_of(root, global_)
        hook = store.snapshot(time.time()).hooks.get(hook_id)
        if hook is None:
            _fail(f"no hook {hook_id!r}")
        if not isinstance(hook.action, Notify):
            _fail(f"{hook_id} is not a notify hook (it has no --notify target)")
        if trust.untrusted(store.ws, [hook]) if isinstance(store, HookStore) \
                else not trust.is_trusted_global(hook):
            _fail(f"{hook_id} sends to {targets.shown(hook.action.target)}, which is not trusted "
                  f"on this machine; see it and trust it with `sidecar hooks trust "
                  f"{'--global ' if global_ else ''}{hook_id}`")
        workspace = str(store.ws.root) if isinstance(store, HookStore) else "(every workspace)"
        delivered = send.deliver(sample(workspace, hook), tries=1, say=typer.echo)
        raise typer.Exit(0 if delivered else 1)
