"""`sidecar notify setup TARGET`: the notices people expect, in one command.

It writes a set of notify hooks, all to TARGET: an agent finished its turn, it waits for you,
its host exited (killed or crashed, mid-turn or not), it hit a usage limit, a follow-up
failed. They are global hooks by default (every workspace has them, followups/globalhooks.py),
or one workspace's with --root. Run again, it changes nothing that is as it would write it,
and writes over what is not (another target: the set now sends there), so it is safe to
repeat; --prefix names a second set (another target beside the first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import typer

from sidecar.base.timeutil import now
from sidecar.base.trustcheck import definition_of
from sidecar.cli import hooks_trust, notify
from sidecar.cli.hooks import Store, apply_edit, store_for
from sidecar.followups.globalhooks import copy_id
from sidecar.followups.model import Hook, HooksDoc, new_hook, slug
from sidecar.followups.notify import notices, targets

notify_app = typer.Typer(no_args_is_help=True,
                         help="Set up notices: when an agent finishes, waits for you, dies or "
                              "fails.\n\nExample: sidecar notify setup ntfys://ntfy.sh/my-agents-7f3a")


@dataclass(frozen=True)
class Notice:
    name: str
    event: str
    reasons: tuple[str, ...] | None = None
    says: str = ""


# The set, in the order it is said. `exited`: the host's process died without its own end
# (a kill, a crash), which a notify hook tells mid-turn too; an end the user made (they quit,
# Ctrl-C) is not told: they know.
THE_SET = (
    Notice("finished", "turn-end", says="an agent finished its turn"),
    Notice("waiting", "needs-input", says="it waits for you: a permission, a question"),
    Notice("exited", "session-end", ("host-exited",), "its host exited: killed or crashed, mid-turn too"),
    Notice("limit", "turn-failed", says="it hit a usage limit"),
    Notice("follow-up-failed", "follow-up-failed", says="a follow-up failed"),
)


def wanted(notice: Notice, prefix: str, target: str, created: float) -> Hook:
    name = f"{prefix}-{notice.name}" if prefix else notice.name
    fields: dict[str, object] = {"event": notice.event, "action": {"notify": target},
                                 "promptFile": None, "delaySeconds": 0}
    if notice.reasons is not None:
        fields["reasons"] = list(notice.reasons)
    return new_hook(slug(name), name, created, **fields)


def _set_up(hooks: list[Hook]) -> Callable[[HooksDoc], list[str]]:
    """The edit that writes the set: each hook not as it would write it (a hook written over
    keeps the transitions it told: a notice is not sent again for them); the ids written."""
    def edit(doc: HooksDoc) -> list[str]:
        written = []
        for hook in hooks:
            before = doc.hooks.get(hook.id)
            if before is None or not _same(before, hook):
                notices.keep_recent(before, hook)
                doc.hooks[hook.id] = hook
                written.append(hook.id)
        doc.drop_orphans()
        return written
    return edit


def _same(before: Hook, hook: Hook) -> bool:
    return (definition_of(before.to_json()), before.name) == (definition_of(hook.to_json()), hook.name)


@notify_app.command("setup", epilog="Example: sidecar notify setup desktop")
def setup(
    target: str = typer.Argument(..., metavar="TARGET",
                                 help="Where notices go: ntfy://host/topic, ntfys://host/topic, an "
                                      "http(s):// webhook URL, desktop, or an apprise URL."),
    prefix: str = typer.Option("", "--prefix", metavar="NAME",
                               help="Name the hooks NAME-finished, NAME-waiting...: a second set, "
                                    "to another target."),
    root: Path | None = typer.Option(None, "--root", metavar="DIR",
                                     help="Only this workspace's (default: global hooks, which "
                                          "every workspace has)."),
) -> None:
    """Add the notices people expect, all to TARGET: an agent finished its turn, waits for
    you, its host exited (killed or crashed), hit a usage limit, or a follow-up failed.

    Global hooks by default: every workspace your daemon serves has them. Safe to run again:
    what is set up as it would write it stays; another TARGET replaces the old one."""
    notify.check_target(target)
    global_ = root is None
    store: Store = store_for(root, global_)
    made = now()
    hooks = [wanted(n, slug(prefix) if prefix else "", target, made) for n in THE_SET]
    written = apply_edit(store, _set_up(hooks))
    for hook, notice in zip(hooks, THE_SET, strict=True):
        hooks_trust.trust_written(store, hook, None)  # the set, as the user asked for it
        shown = copy_id(hook.id) if global_ else hook.id
        typer.echo(f"{'written' if hook.id in written else 'unchanged':<9}  {shown:<24}  {notice.says}")
    where = "every workspace your daemon serves (global hooks)" if global_ else str(root)
    typer.echo(f"notices go to {targets.shown(target)}, from {where}; send a sample with "
               f"`sidecar hooks test {'--global ' if global_ else ''}{hooks[0].id}`")
