"""`sidecar hooks trust` and `sidecar hooks edit`: what this machine's user approves to run.

A hook fires only as its owner trusted it, by content (followups/trust.py). `hooks trust`
shows the whole of what a hook would do (settings, command or target, the prompt's exact
text) and records the user's yes; `hooks edit` opens a hook's prompt in the user's editor
and trusts what they save, so editing one's own prompt stays one command.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import typer

from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import FAILURE
from sidecar.base.timeutil import now
from sidecar.base.trustcheck import global_id
from sidecar.cli import hooks_text
from sidecar.cli.common import fail
from sidecar.followups import prompts, trust
from sidecar.followups.globalhooks import GlobalStore
from sidecar.followups.model import Hook
from sidecar.followups.store import HookStore
from sidecar.owner import owner_uid

RootOption = typer.Option(None, "--root", metavar="DIR",
                          help="The workspace (default: the one holding the current folder).")


def _fail(message: str, code: int = FAILURE) -> NoReturn:
    fail(message, code, "sidecar hooks")


def owner_note(store: HookStore) -> None:
    """Where the workspace is someone else's, say that only its owner's trust counts (a root
    daemon acts as the owner, with the owner's trust)."""
    owner = owner_uid(store.ws)
    if owner != os.geteuid():
        typer.echo(f"note: {store.ws.root} belongs to uid {owner}; its hooks run only once "
                   "that user trusts them (`sidecar hooks trust` run as them)", err=True)


def _content(store: HookStore, hook: Hook) -> trust.Content:
    try:
        return trust.content(store.ws, hook)
    except (OSError, SidecarError) as exc:
        _fail(f"{hook.id}'s prompt {hook.prompt_file} cannot be read: {exc}")


def trust_written(store: HookStore | GlobalStore, hook: Hook, before: Hook | None,
                  quiet: bool = False) -> None:
    """Trust a hook the user just wrote through sidecar, where every part of it they did not
    write was approved before; else say what still needs `hooks trust` (trust.trust_written),
    unless `quiet`. A global hook has no prompt: what they did not write is the rest of one
    they changed."""
    if isinstance(store, GlobalStore):
        if before is None or trust.is_trusted_global(before):
            trust.trust_global(hook, now())
        elif not quiet:
            typer.echo(f"note: {hook.id} is not trusted on this machine, so it does not run: its "
                       "settings were not approved before; see what it does, and trust it, with "
                       f"`sidecar hooks trust --global {hook.id}`", err=True)
        return
    try:
        found = trust.content(store.ws, hook)
    except (OSError, SidecarError) as exc:
        if not quiet:
            typer.echo(f"note: {hook.id} is not trusted: its prompt {hook.prompt_file}: {exc}", err=True)
        return
    why = trust.trust_written(store.ws, found, before, now())
    if quiet:
        return
    if why is not None:
        typer.echo(f"note: {hook.id} is not trusted on this machine, so it does not run: {why}; "
                   f"see what it runs, and trust it, with `sidecar hooks trust {hook.id}`", err=True)
    else:
        owner_note(store)


def _editor() -> list[str]:
    """The user's editor, as git and crontab find it."""
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def register(hooks_app: typer.Typer, store_of: Any) -> None:
    """Add `hooks trust` and `hooks edit` to the hooks command group."""

    @hooks_app.command("trust", epilog="Example: sidecar hooks trust post-task")
    def trust_hooks(
        hook_ids: list[str] = typer.Argument(None, metavar="HOOKS",
                                             help="The hooks to trust; every enabled one not "
                                                  "trusted as it stands if none is named."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask; trust what is shown."),
        root: Path | None = RootOption,
        global_: bool = typer.Option(False, "--global", help="Your global hooks instead of a "
                                     "workspace's (a workspace's copy global.NAME is trusted so)."),
    ) -> None:
        """Show exactly what a hook does (its settings, its command or target, its prompt's
        text), then trust that, on this machine, for this workspace.

        A hook that arrived with a clone, a pull or a hand edit, or whose prompt changed
        since, runs only once trusted; any later change needs trusting again."""
        approve(store_of(root, global_), hook_ids or [], yes)

    @hooks_app.command("edit", epilog="Example: sidecar hooks edit post-task")
    def edit_prompt(
        hook_id: str = typer.Argument(..., metavar="HOOK", help="The hook whose prompt to edit."),
        root: Path | None = RootOption,
    ) -> None:
        """Edit a hook's prompt in $VISUAL or $EDITOR, and trust what you save.

        The text is edited in a private copy and put in place whole once the editor exits
        with success; the hook's settings are trusted with it only where they were before."""
        edit(store_of(root, False), hook_id)


def untrusted(store: HookStore | GlobalStore, hooks: Iterable[Hook]) -> list[Hook]:
    """The enabled hooks not trusted as they stand, a workspace's or the global ones."""
    if isinstance(store, HookStore):
        return trust.untrusted(store.ws, hooks)
    return [h for h in hooks if h.enabled and not trust.is_trusted_global(h)]


def approve(store: HookStore | GlobalStore, hook_ids: list[str], yes: bool) -> None:
    """Show each hook, then trust it where the user says yes (or gave --yes). A workspace's
    copy of a global hook is trusted as that global hook, as the global file has it."""
    hooks = store.snapshot(now()).hooks
    if isinstance(store, HookStore):
        named = [str(global_id(h)) for h in hook_ids if global_id(h) is not None]
        waiting = not hook_ids and any(global_id(h.id) is not None
                                       for h in untrusted(store, hooks.values()))
        if named or waiting:
            approve(GlobalStore(), named, yes)
            own = [h for h in hook_ids if global_id(h) is None]
            if hook_ids and not own:
                return
            hook_ids = own
    for hook_id in hook_ids:
        if hook_id not in hooks:
            _fail(f"no hook {hook_id!r} (have: {', '.join(hooks) or 'none'})")
    chosen = [hooks[h] for h in hook_ids] if hook_ids else [
        h for h in untrusted(store, hooks.values()) if global_id(h.id) is None]
    if not chosen:
        typer.echo("every enabled hook is trusted on this machine as it stands")
    for hook in chosen:
        _approve_one(store, hook, yes)


def _approve_one(store: HookStore | GlobalStore, hook: Hook, yes: bool) -> None:
    found = _content(store, hook) if isinstance(store, HookStore) else trust.Content(hook, None)
    ws = store.ws if isinstance(store, HookStore) else None
    typer.echo(hooks_text.approval(ws, found), nl=False)
    if trust.is_trusted(store.ws, found) if isinstance(store, HookStore) else trust.is_trusted_global(hook):
        typer.echo("already trusted on this machine")
        return
    if not yes:
        if not sys.stdin.isatty():
            _fail("not trusted: add --yes to trust it without a question", 1)
        if not typer.confirm(f"Trust {hook.id} as shown on this machine?", default=False):
            _fail("not trusted", 1)
    if isinstance(store, HookStore):
        trust.trust(store.ws, found, now())
        owner_note(store)
    else:
        trust.trust_global(hook, now())
    typer.echo(f"trusted {hook.id} (in {trust.trust_file()})")


def edit(store: HookStore, hook_id: str) -> None:
    """Edit a hook's prompt in a private copy, put it in place, trust what was saved."""
    hook = store.snapshot(now()).hooks.get(hook_id)
    if hook is None:
        _fail(f"no hook {hook_id!r}")
    if hook.prompt_file is None:
        _fail(f"{hook_id} has no prompt file; give it one with `sidecar hooks update "
              f"{hook_id} --prompt-file hooks/NAME.md`")
    try:
        before = prompts.read_bytes(store.ws, hook.prompt_file)
    except FileNotFoundError:
        before = b""
    except (OSError, SidecarError) as exc:
        _fail(f"{store.ws.context / hook.prompt_file} cannot be edited: {exc}")
    saved = _edited(before, Path(hook.prompt_file).name)
    if saved == before:  # only opened: what was there is not thereby the user's
        if trust.is_trusted(store.ws, trust.Content(hook, saved)):
            typer.echo(f"{hook_id}'s prompt is unchanged and trusted")
        else:
            typer.echo(f"{hook_id}'s prompt is unchanged, and not trusted on this machine")
            approve(store, [hook_id], yes=False)
        return
    try:
        prompts.write(store.ws, hook.prompt_file, saved)
    except (OSError, SidecarError) as exc:
        _fail(f"{store.ws.context / hook.prompt_file} cannot be written: {exc}")
    # The prompt is the user's own now; the settings count only if approved before.
    if trust.settings_known(store.ws, hook):
        trust.trust(store.ws, trust.Content(hook, saved), now())
        typer.echo(f"saved {hook.prompt_file}; {hook_id} is trusted as saved")
    else:
        typer.echo(f"saved {hook.prompt_file}; {hook_id} is not trusted yet: its settings were not approved "
                   f"on this machine before; see them and trust them with `sidecar hooks trust {hook_id}`")


def _edited(text: bytes, name: str) -> bytes:
    """The text after the user's editor has had it, in a private temporary copy."""
    with tempfile.TemporaryDirectory(prefix="sidecar-edit-") as folder:
        path = Path(folder) / name
        path.write_bytes(text)
        try:
            status = subprocess.call([*_editor(), str(path)])
        except OSError as exc:
            _fail(f"cannot start the editor {shlex.join(_editor())}: {exc}; set $VISUAL or $EDITOR")
        if status != 0:
            _fail(f"the editor exited with status {status}; nothing was saved")
        return path.read_bytes()
