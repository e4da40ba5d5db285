"""`sidecar hooks ...`: edit hooks.json safely while daemons run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, TypeVar

import typer

from sidecar.base import words
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import BUSY, FAILURE, NOT_WORKSPACE, USAGE
from sidecar.base.ids import harness_id
from sidecar.base.outcome import Outcome
from sidecar.base.timeutil import now
from sidecar.cli import hook_options as opts
from sidecar.cli import hooks_global, hooks_text, hooks_trust, notify
from sidecar.cli.common import fail
from sidecar.cli.jsonout import print_json
from sidecar.cli.sessions import named, named_session
from sidecar.coordination.base import Conflict
from sidecar.followups import manual, trust
from sidecar.followups.globalhooks import GlobalStore
from sidecar.followups.model import Hook, HooksDoc, HooksError, new_hook, slug
from sidecar.followups.notify import notices, targets
from sidecar.followups.run import logtail
from sidecar.followups.store import HookStore
from sidecar.layout import find_workspace
from sidecar.locks import LockTimeout

T = TypeVar("T")

hooks_app = typer.Typer(no_args_is_help=True, help="List and edit follow-up hooks.",
                        epilog="Example: sidecar hooks list")

RootOption = typer.Option(None, "--root", metavar="DIR",
                          help="The workspace (default: the one holding the current folder).")
GlobalOpt = hooks_global.GlobalOpt
Store = HookStore | GlobalStore


def _fail(message: str, code: int = FAILURE) -> NoReturn:
    fail(message, code, "sidecar hooks")


def store_for(root: Path | None, global_: bool = False) -> Store:
    if global_:
        return hooks_global.store(root)
    return _workspace_store(root)


def _workspace_store(root: Path | None) -> HookStore:
    ws = find_workspace(root or Path.cwd())
    if ws is None:
        _fail(f"{root or Path.cwd()} is not a workspace (no .context/); run `sidecar init`", NOT_WORKSPACE)
    for folder in (ws.runtime, ws.locks):  # a clone's `.context/` comes without them
        if not folder.is_dir():
            _fail(f"{folder} is missing: this workspace was not set up on this machine; run "
                  f"`sidecar init {ws.root}`", NOT_WORKSPACE)
    return HookStore(ws)


def _writable(store: Store) -> None:
    """Refuse to edit on top of a broken hand edit: the user's text must not be lost."""
    try:
        store.read_file()
    except FileNotFoundError:
        pass
    except HooksError as exc:
        where = store.ws.hooks_file if isinstance(store, HookStore) else store.path
        _fail(f"{where} is broken ({exc}); fix it by hand first")


def apply_edit(store: Store, edit: Callable[[HooksDoc], T]) -> T:
    _writable(store)
    try:
        return store.change(now(), edit)
    except HooksError as exc:
        _fail(str(exc))
    except LockTimeout as exc:
        _fail(f"{exc}: another sidecar command or a daemon holds it; try again", BUSY)
    except Conflict as exc:  # Redis mode: others kept changing it while this tried, thrice
        _fail(f"{exc}: others changed it meanwhile; try again", BUSY)


@hooks_app.command("list", epilog="Example: sidecar hooks list --json")
def list_hooks(root: Path | None = RootOption,
               as_json: bool = typer.Option(False, "--json", help="One JSON document."),
               global_: bool = GlobalOpt) -> None:
    """Every hook and the queue (--global: your global hooks)."""
    store = store_for(root, global_)
    view = store.snapshot(now())
    if as_json:
        print_json({
            "hooks": {k: replace(h, action=targets.masked(h.action)).to_json()  # no secret
                      for k, h in view.hooks.items()},
            "pending": [e.to_json() for e in view.pending], "error": view.error})
        return
    if view.error:
        typer.echo(f"hooks.json is broken: {view.error} (showing the last good hooks)")
    untrusted = {h.id for h in hooks_trust.untrusted(store, view.hooks.values())}
    typer.echo(hooks_text.render_list(view.hooks.values(), untrusted, view.pending, now(),
                                      words.style_for(), global_), nl=False, color=True)


@hooks_app.command("add", context_settings={"allow_extra_args": True},
                   epilog='Example: sidecar hooks add notify-done --delay 0 -- notify-send "done"')
def add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A name; the id is made from it."),
    event: str | None = opts.EventOpt,
    delay: str | None = opts.DelayOpt,
    prompt_file: str | None = opts.PromptOpt,
    no_prompt: bool = opts.NoPromptOpt,
    skip_cron: bool | None = opts.CronOpt,
    skip_subagents: bool | None = opts.SubagentOpt,
    max_context_k: int | None = opts.ContextOpt,
    reasons: str | None = opts.ReasonsOpt,
    also_interrupted: bool | None = opts.InterruptedOpt,
    again: bool | None = opts.AgainOpt,
    notify_target: str | None = notify.NotifyOpt, also_follow_ups: bool | None = notify.AlsoFollowUpsOpt,
    disabled: bool = typer.Option(False, "--disabled", help="Add it switched off."),
    replace: bool = typer.Option(False, "--replace", help="Overwrite a hook of the same name."),
    root: Path | None = RootOption, global_: bool = GlobalOpt,
) -> None:
    """Add a hook. The action is `resume` unless a command follows `--`: hooks add NAME -- ARGV...

    A resume hook prompts with hooks/post-task.md unless --prompt-file says otherwise; a command
    hook has no prompt unless --prompt-file gives one. With --global, a notify hook of yours
    that every workspace has.
    """
    store = store_for(root, global_)
    fields = opts.options(event, delay, prompt_file, no_prompt, skip_cron, skip_subagents,
                      max_context_k, ctx.args) | opts.turn_options(reasons, also_interrupted, again)
    fields |= notify.fields(notify_target, also_follow_ups, ctx.args, fields)
    fields["enabled"] = not disabled
    if ctx.args and "promptFile" not in fields:
        fields["promptFile"] = None  # a command gets {prompt} only when asked for
    hook_id = slug(name)

    def edit(doc: HooksDoc) -> Hook:
        if hook_id in doc.hooks and not replace:
            _fail(f"a hook {hook_id!r} exists already; choose another name, or add --replace")
        hook = new_hook(hook_id, name, now(), **fields)
        _prompt_exists(store, hook.prompt_file)
        notices.keep_recent(doc.hooks.get(hook_id), hook)
        doc.hooks[hook_id] = hook
        if replace:
            doc.drop_orphans()
        return hook

    added = apply_edit(store, edit)
    typer.echo(hooks_global.added(added) if global_ else f"added {added.id}")
    hooks_trust.trust_written(store, added, None)  # the user wrote it here: it is theirs


def _prompt_exists(store: Store, prompt_file: str | None) -> None:
    """A prompt file that does not exist would fail only when the hook fires: refuse now (a
    global hook has none: it is a notice)."""
    if prompt_file is not None and isinstance(store, HookStore) \
            and not (store.ws.context / prompt_file).is_file():
        _fail(f"prompt file {store.ws.context / prompt_file} does not exist; write it first")


@hooks_app.command("update", context_settings={"allow_extra_args": True},
                   epilog="Example: sidecar hooks update post-task --delay 5m")
def update(
    ctx: typer.Context,
    hook_id: str = typer.Argument(..., metavar="HOOK", help="The hook to change."),
    name: str | None = typer.Option(None, "--name", metavar="NAME", help="Its new name."),
    event: str | None = opts.EventOpt,
    delay: str | None = opts.DelayOpt,
    prompt_file: str | None = opts.PromptOpt,
    no_prompt: bool = opts.NoPromptOpt,
    skip_cron: bool | None = opts.CronOpt,
    skip_subagents: bool | None = opts.SubagentOpt,
    max_context_k: int | None = opts.ContextOpt,
    reasons: str | None = opts.ReasonsOpt,
    also_interrupted: bool | None = opts.InterruptedOpt,
    again: bool | None = opts.AgainOpt,
    notify_target: str | None = notify.NotifyOpt, also_follow_ups: bool | None = notify.AlsoFollowUpsOpt,
    resume: bool = opts.ResumeOpt,
    root: Path | None = RootOption, global_: bool = GlobalOpt,
) -> None:
    """Change a hook's settings; a command after `--` replaces its action."""
    store = store_for(root, global_)
    fields = opts.options(event, delay, prompt_file, no_prompt, skip_cron, skip_subagents,
                      max_context_k, ctx.args) | opts.turn_options(reasons, also_interrupted, again)
    fields |= notify.fields(notify_target, also_follow_ups, ctx.args, fields)
    if name is not None:
        fields["name"] = name
    if resume:
        fields["action"] = "resume"
    if not fields:
        _fail("nothing to change")

    def edit(doc: HooksDoc) -> tuple[Hook, Hook]:
        hook = _existing(store, doc, hook_id, "update")
        changed = Hook.from_json({**hook.to_json(), **fields}, f"hook {hook_id}")
        if "promptFile" in fields:
            _prompt_exists(store, changed.prompt_file)
        doc.hooks[hook_id] = changed
        return hook, changed

    before, after = apply_edit(store, edit)
    typer.echo(f"updated {hook_id}")
    hooks_trust.trust_written(store, after, before)


def _existing(store: Store, doc: HooksDoc, hook_id: str, what: str) -> Hook:
    if isinstance(store, HookStore):
        hooks_global.refuse_copy(hook_id, what)
    return _existing_in(doc.hooks, hook_id)


def _existing_in(hooks: dict[str, Hook], hook_id: str) -> Hook:
    hook = hooks.get(hook_id)
    if hook is None:
        _fail(f"no hook {hook_id!r} (have: {', '.join(hooks) or 'none'})")
    return hook


def _switch(hook_id: str, enabled: bool, root: Path | None, global_: bool) -> None:
    store = store_for(root, global_)

    def edit(doc: HooksDoc) -> tuple[Hook, Hook, int]:
        hook = _existing(store, doc, hook_id, "enable" if enabled else "disable")
        before = replace(hook)  # as it was: its settings decide whether the change is trusted
        hook.enabled = enabled
        return before, hook, len(doc.drop_orphans())

    before, after, dropped = apply_edit(store, edit)
    typer.echo(f"{'enabled' if enabled else 'disabled'} {hook_id}"
               + (f"; dropped {dropped} queued firing(s)" if dropped else ""))
    # Off and on again: still the user's. Switching off says nothing of trust: it runs nothing.
    hooks_trust.trust_written(store, after, before, quiet=not enabled)


@hooks_app.command(epilog="Example: sidecar hooks enable post-task")
def enable(hook_id: str, root: Path | None = RootOption, global_: bool = GlobalOpt) -> None:
    """Switch a hook on."""
    _switch(hook_id, True, root, global_)


@hooks_app.command(epilog="Example: sidecar hooks disable post-task")
def disable(hook_id: str, root: Path | None = RootOption, global_: bool = GlobalOpt) -> None:
    """Switch a hook off; its queued firings are dropped."""
    _switch(hook_id, False, root, global_)


@hooks_app.command(epilog="Example: sidecar hooks remove post-task")
def remove(hook_id: str, root: Path | None = RootOption, global_: bool = GlobalOpt) -> None:
    """Delete a hook and its queued firings (--global: from every workspace)."""
    store = store_for(root, global_)

    def edit(doc: HooksDoc) -> int:
        _existing(store, doc, hook_id, "remove")
        del doc.hooks[hook_id]
        return len(doc.drop_orphans())

    dropped = apply_edit(store, edit)
    if global_:  # a copy a workspace keeps or brings back is trusted no more
        trust.forget_global(hook_id)
    typer.echo(f"removed {hook_id}" + (f"; dropped {dropped} queued firing(s)" if dropped else ""))


@hooks_app.command("kill-running", epilog="Example: sidecar hooks kill-running")
def kill_running(root: Path | None = RootOption) -> None:
    """End every follow-up action that is running now (SIGTERM to its process group); the
    leader records each as ended by the signal."""
    import signal

    from sidecar.followups.run.actions import signal_group
    from sidecar.procwatch import Proc

    store = _workspace_store(root)
    # Only processes this user's sidecar started (a run record with a valid MAC): a pid
    # planted in hooks.json is never signalled.
    ended = [e for e in store.snapshot(now()).pending if e.run is not None
             and trust.is_ours(store.ws, e.id, e.run)
             and signal_group(Proc(e.run.pid, e.run.start), signal.SIGTERM)]
    for entry in ended:
        typer.echo(f"sent SIGTERM to {entry.hook_id} for {entry.host} {entry.session_id} "
                   f"(pid {entry.run.pid if entry.run else '?'})")
    if not ended:
        typer.echo("no follow-up action is running")


@hooks_app.command("history")
def history(
    hook_id: str | None = typer.Argument(None, help="Only this hook's firings."),
    session: str | None = typer.Option(None, "--session", metavar="ID",
                                       help="Only firings for this host session id (or the start "
                                       "of one, or its harness id)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document."),
    root: Path | None = RootOption, global_: bool = GlobalOpt,
) -> None:
    """Past firings, oldest first: when, which hook, for which session, how it ended, its log
    (--global: a global hook's, in every registered workspace).

    Example: sidecar hooks history post-task --session 3f2a
    """
    if global_:
        hooks_global.store(root)  # (refuses --root)
        hooks_global.history(hook_id, session, as_json)
        return
    store = _workspace_store(root)
    view = store.snapshot(now())
    if hook_id is not None and hook_id not in view.hooks:
        _fail(f"no hook {hook_id!r} (have: {', '.join(view.hooks) or 'none'})")
    if session is not None:
        try:
            session = named_session(store.ws, view, session)
        except (OSError, ValueError, SidecarError) as exc:
            _fail(str(exc))
    rows = sorted(
        ({"hookId": h.id, **f.to_json(), "retry": f.retry, "lastLine": f.line if f.kept
          else logtail.last_line(store.ws, h.id, f.log) if Outcome.parse(f.status).failed
          else None}
         for h in view.hooks.values() if hook_id in (None, h.id) for f in h.history
         if session in (None, f.session_id)),
        key=lambda row: str(row["at"]))
    if as_json:
        print_json({"firings": rows})
        return
    typer.echo(hooks_text.render_history(store.ws, rows, now(), words.style_for()), nl=False, color=True)


@hooks_app.command("retry", epilog="Example: sidecar hooks retry post-task --session 3f2a")
def retry(
    hook_id: str = typer.Argument(..., metavar="HOOK", help="The hook whose failed firing to run again."),
    session: str | None = typer.Option(None, "--session", metavar="ID",
                                       help="The host session it failed for (needed): its id, the "
                                       "start of one, or its harness id."),
    root: Path | None = RootOption,
) -> None:
    """Run a hook's failed firing for a session again: queued now, and fired by the daemon as
    any follow-up (trust and every precondition); its history says retry.

    Only where the hook's last firing for that session failed. The retry counts as that
    firing: the session never queues the hook again (once per session)."""
    if session is None:  # (an option typer required would break its help's columns)
        _fail("name the session it failed for: --session ID", USAGE)
    store = _workspace_store(root)  # (a global hook's copies are retried in their workspace)
    view = store.snapshot(now())
    _existing_in(view.hooks, hook_id)
    try:
        found = named(store.ws, view, session)
    except (OSError, ValueError, SidecarError) as exc:
        _fail(str(exc))
    harness = found.record.id if found.record is not None else harness_id(found.host, found.session_id)
    _writable(store)
    try:
        entry = manual.retry(store.ws, hook_id, found.host, found.session_id, harness, now())
    except manual.NotChangeable as exc:
        _fail(str(exc))
    except (LockTimeout, Conflict) as exc:
        _fail(f"{exc}: another sidecar command or a daemon holds it; try again", BUSY)
    typer.echo(f"queued {hook_id} again for {entry.host} session {entry.session_id}, due now: the "
               f"daemon fires it (sidecar hooks history {hook_id} --session "
               f"{words.short_id(entry.session_id)})")


notify.register(hooks_app, store_for)  # `hooks test`
hooks_trust.register(hooks_app, store_for)  # `hooks trust`, `hooks edit`
