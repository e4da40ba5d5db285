"""`sidecar logs`: what the daemon did and what each follow-up printed, as one stream.

The lines come from logread (the daemon's log file, the workspace's follow-up logs), oldest
first, each with its local time and its source. `--follow` then prints each new line as it
is written, woken by the folders' own change events (watchdog: inotify on Linux, FSEvents on
macOS); only where the folders cannot be watched does it look every POLL_SECONDS instead, and
says so. Ctrl-C ends it (exit 0).
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import typer

from sidecar import layout
from sidecar.base import words
from sidecar.base.errors import SidecarError
from sidecar.base.exitcodes import NOT_WORKSPACE, OK
from sidecar.cli.common import fail, workspace_at
from sidecar.cli.logread import Line, Reader, Scope, follow_up_folders
from sidecar.layout import PLAIN_NAME, Workspace, find_workspace

POLL_SECONDS = 0.5  # only where the folders cannot be watched
SETTLE_SECONDS = 0.05  # a burst of writes is read as one
FOLLOW_BACKLOG = 10  # lines shown before following, as `journalctl -f` and `tail -f` do
SOURCE_WIDTH = 20


def logs(
    hook: str | None = typer.Argument(None, metavar="HOOK",
                                      help="Show only this hook's firings (and the daemon's "
                                      "lines that name it)."),
    follow: bool = typer.Option(False, "--follow", "-f",
                                help="Keep printing new lines as they are written, until Ctrl-C."),
    session: str | None = typer.Option(None, "--session", metavar="ID",
                                       help="Show only this session's lines: its host session id "
                                       "or the harness id sidecar gave it."),
    lines: int | None = typer.Option(None, "--lines", "-n", metavar="COUNT", min=0,
                                     help="Start with only the last COUNT lines (with --follow: "
                                     f"{FOLLOW_BACKLOG} unless given)."),
    root: Path | None = typer.Option(None, "--root", metavar="DIR",
                                     help="The workspace (default: the one holding the current "
                                     "folder; outside any, the daemon's own lines only)."),
) -> None:
    """Show what the daemon did and what each follow-up printed, newest last.

    Each line starts with its local time and its source: `daemon`, or the hook and the start of
    the session it fired for. The daemon's lines come from its log file (in the user's state
    folder, rotated at 2 MiB); a follow-up's from its log in the workspace's runtime folder.

    Example: sidecar logs -f post-task
    """
    ws = _workspace(root)
    if ws is None and (hook or session):
        fail(f"{Path.cwd()} is not a workspace (no .context/); give one with --root DIR", NOT_WORKSPACE)
    scope = Scope(ws, hook, _session_ids(ws, session) if ws and session else ())
    reader = Reader(scope)
    backlog = reader.read(following=follow)
    count = lines if lines is not None else (FOLLOW_BACKLOG if follow else None)
    printer = Printer(ws)
    printer.show(backlog if count is None else backlog[len(backlog) - count:] if count else [])
    if not backlog:
        typer.echo(_nothing_yet(scope), err=True)
    if follow:
        _follow(reader, printer)
    raise typer.Exit(OK)


def _workspace(root: Path | None) -> Workspace | None:
    return workspace_at(root) if root is not None else find_workspace(Path.cwd())


def _session_ids(ws: Workspace, given: str) -> tuple[str, ...]:
    """The host session id and harness id of the session `given` names (either of them)."""
    from sidecar.hosts import registry
    from sidecar.sessions import lookup
    from sidecar.sessions.store import SessionStore

    store = SessionStore(ws)
    try:
        record = store.load_session(given) if PLAIN_NAME.fullmatch(given) else None
        if record is None:
            found = lookup.find_record(store, given, {*registry.names(), registry.UNKNOWN})
            record = found[1] if found else None
    except (OSError, ValueError, SidecarError) as exc:
        fail(f"cannot read session {given}: {exc}")
    if record is None:
        fail(f"no session {given!r} in {ws.root}")
    return tuple(dict.fromkeys(i for i in (record.host_session_id, record.id, given) if i))


def _nothing_yet(scope: Scope) -> str:
    what = " ".join(filter(None, [f"for hook {scope.hook}" if scope.hook else "",
                                  f"for session {scope.session_ids[0]}" if scope.session_ids
                                  else ""]))
    where = f"{scope.ws.root}" if scope.ws else "the daemon"
    return (f"no log lines {what + ' ' if what else ''}in {where} yet: nothing in the daemon's "
            f"log ({words.path(layout.daemon_log())})"
            + (", and no follow-up has fired here" if scope.ws else ""))


class Printer:
    """`20:05:36  daemon              fired post-task for ...`: coloured on a terminal only."""

    def __init__(self, ws: Workspace | None) -> None:
        self.ws = ws
        self.style = words.style_for(sys.stdout)

    def show(self, lines: list[Line]) -> None:
        now = time.time()
        out = []
        for line in lines:
            when = self.style(words.local_time(line.ts, now), "dim")
            source = words.clip(line.source, SOURCE_WIDTH).ljust(SOURCE_WIDTH)
            colour = "blue" if line.source == "daemon" else "cyan"
            out.append(f"{when}  {self.style(source, colour)}  {self._text(line)}\n")
        if out:
            sys.stdout.write("".join(out))
            sys.stdout.flush()

    def _text(self, line: Line) -> str:
        if line.level in ("WARNING", "ERROR", "CRITICAL"):
            colour = "yellow" if line.level == "WARNING" else "red"
            return self.style(f"{line.level.lower()}:", colour, "bold") + " " + line.text
        return line.text


def _follow(reader: Reader, printer: Printer) -> None:
    woken = threading.Event()
    stopping = threading.Event()
    # Ctrl-C ends the loop where it stands: a KeyboardInterrupt raised anywhere (inside the
    # folder watch's own locking, say) could leave the watch unable to stop.
    def interrupted(*_: object) -> None:
        stopping.set()
        woken.set()

    previous = signal.signal(signal.SIGINT, interrupted)
    watcher = _Watcher(woken)
    try:
        watcher.watch(reader.scope.ws)
        if watcher.failed:
            typer.echo(f"sidecar logs: cannot watch the logs' folders ({watcher.failed}); "
                       f"looking every {POLL_SECONDS:g} s instead", err=True)
        while not stopping.is_set():
            if woken.wait(None if not watcher.failed else POLL_SECONDS) and not stopping.is_set():
                time.sleep(SETTLE_SECONDS)
            woken.clear()
            if stopping.is_set():
                break
            watcher.watch(reader.scope.ws)  # a hook that fired for the first time
            printer.show(reader.read(following=True))
    except BrokenPipeError:  # `sidecar logs -f | head`: the reader went away
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        signal.signal(signal.SIGINT, previous)
        watcher.stop()


class _Watcher:
    """watchdog's observer on each folder new lines come through (not recursive: only
    folders that are plain folders, never a link)."""

    def __init__(self, woken: threading.Event) -> None:
        self.woken = woken
        self.watched: set[Path] = set()
        self.failed = ""
        self.observer: Any = None

    def watch(self, ws: Workspace | None) -> None:
        if self.failed:
            return
        folders = [layout.state_home(), *(follow_up_folders(ws) if ws else [])]
        try:
            folders[0].mkdir(mode=0o700, parents=True, exist_ok=True)  # a daemon yet to start
            if self.observer is None:
                from watchdog.events import FileSystemEventHandler
                from watchdog.observers import Observer

                woken = self.woken

                class Wake(FileSystemEventHandler):
                    def on_any_event(self, event: object) -> None:
                        woken.set()

                self.handler = Wake()
                self.observer = Observer()
                self.observer.start()
            for folder in folders:
                if folder not in self.watched and _plain_folder(folder):
                    self.observer.schedule(self.handler, str(folder), recursive=False)
                    self.watched.add(folder)
        except (OSError, ImportError, RuntimeError) as exc:
            self.failed = str(exc) or type(exc).__name__

    def stop(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(5)


def _plain_folder(folder: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)  # a folder, not a link to one
    except OSError:
        return False
