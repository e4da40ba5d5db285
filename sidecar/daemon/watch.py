"""Folder watches for every workspace the daemon serves, from one thread.

On Linux one inotify instance holds every watch (two per workspace: its inbox and its runtime
folder), read by one thread: a workspace costs two watch descriptors and no thread or file
descriptor of its own. watchdog would run an emitter thread with an inotify instance of its own
per watched folder, which at a thousand workspaces meant thousands of threads and ran into the
kernel's limit of 128 inotify instances per user. Elsewhere (macOS) watchdog's observer is used.

A callback gets the name of the entry that changed. It gets None when names may have been
missed (the kernel's queue overflowed: every callback is called) or when the folder itself went
away (its watch is gone; `lost` says so until the folder is watched again).
"""

from __future__ import annotations

import errno
import logging
import os
import select
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from sidecar.base.errors import SidecarError

log = logging.getLogger("sidecar")

OnChange = Callable[[str | None], None]


class WatchError(SidecarError, OSError):
    """A folder cannot be watched (gone, not a folder, or the kernel's watch limit reached)."""


class FolderWatch:
    """The interface: `add(path, on_change) -> handle`, `remove(handle)`, `start`, `stop`."""

    def add(self, path: Path, on_change: OnChange) -> object:
        raise NotImplementedError

    def remove(self, handle: object) -> None:
        raise NotImplementedError

    def lost(self, handle: object) -> bool:
        """True once the watched folder went away (deleted, moved, replaced)."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class _Watched:
    """One `add`: its watch descriptor and callback (compared by identity: the kernel may give
    a later watch the same descriptor)."""

    def __init__(self, wd: int, on_change: OnChange) -> None:
        self.wd = wd
        self.on_change = on_change


class InotifyWatch(FolderWatch):
    """Every folder on one inotify instance, read by one thread."""

    def __init__(self) -> None:
        from inotify_simple import INotify, flags  # type: ignore[import-untyped]

        self.flags = flags
        self.inotify = INotify()
        self.lock = threading.Lock()
        self.by_wd: dict[int, list[_Watched]] = {}
        self.gone: set[_Watched] = set()
        self.wake_r, self.wake_w = os.pipe()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="watch", daemon=True)

    def add(self, path: Path, on_change: OnChange) -> object:
        f = self.flags
        mask = (f.CREATE | f.CLOSE_WRITE | f.MOVED_TO | f.DELETE_SELF | f.MOVE_SELF
                | f.DONT_FOLLOW | f.ONLYDIR)  # a symlinked folder is never watched through
        with self.lock:
            try:
                wd: int = self.inotify.add_watch(os.fsencode(path), mask)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:  # the kernel's limit on watches for this user
                    raise WatchError(exc.errno, "the inotify watch limit is reached (raise "
                                     "fs.inotify.max_user_watches)", str(path)) from None
                raise WatchError(exc.errno, f"cannot watch: {exc.strerror}", str(path)) from None
            watched = _Watched(wd, on_change)
            self.by_wd.setdefault(wd, []).append(watched)
        return watched

    def remove(self, handle: object) -> None:
        assert isinstance(handle, _Watched)
        with self.lock:
            self.gone.discard(handle)
            watched = self.by_wd.get(handle.wd, [])
            if handle not in watched:
                return
            watched.remove(handle)
            if not watched:
                del self.by_wd[handle.wd]
                self._forget(handle.wd)

    def _forget(self, wd: int) -> None:
        with suppress(OSError):  # the kernel dropped it already
            self.inotify.rm_watch(wd)

    def lost(self, handle: object) -> bool:
        with self.lock:
            return handle in self.gone

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        os.write(self.wake_w, b"x")
        if self.thread.is_alive():
            self.thread.join(5)
        self.inotify.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.inotify.fileno(), select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        while not self.stopped.is_set():
            poller.poll()
            if self.stopped.is_set():
                return
            for event in self.inotify.read(timeout=0):
                self._dispatch(event.wd, event.mask, event.name)

    def _dispatch(self, wd: int, mask: int, name: str) -> None:
        f = self.flags
        changed: str | None = name
        with self.lock:
            if mask & f.Q_OVERFLOW:  # names were lost: every workspace looks again
                called = [w for ws in self.by_wd.values() for w in ws]
                changed = None
            elif mask & (f.IGNORED | f.DELETE_SELF | f.MOVE_SELF):
                called = self.by_wd.pop(wd, [])  # the folder is gone: its server rewatches
                self.gone.update(called)
                self._forget(wd)
                changed = None
            else:
                called = list(self.by_wd.get(wd, ()))
        for watched in called:
            try:
                watched.on_change(changed)
            except Exception:
                log.exception("folder watch: a callback failed")


class WatchdogWatch(FolderWatch):
    """watchdog's observer, where there is no inotify."""

    def __init__(self) -> None:
        from watchdog.observers import Observer

        self.observer: Any = Observer()

    def add(self, path: Path, on_change: OnChange) -> object:
        from watchdog.events import FileMovedEvent, FileSystemEvent, FileSystemEventHandler

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                changed = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
                on_change(os.path.basename(os.fsdecode(changed)))

        try:
            return self.observer.schedule(Handler(), str(path), recursive=False)
        except OSError as exc:
            raise WatchError(exc.errno, f"cannot watch: {exc.strerror}", str(path)) from None

    def remove(self, handle: object) -> None:
        with suppress(KeyError):
            self.observer.unschedule(handle)

    def lost(self, handle: object) -> bool:
        return False  # watchdog says nothing of it: the reconcile timer covers the gap

    def start(self) -> None:
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(5)


def folder_watch() -> FolderWatch:
    return InotifyWatch() if sys.platform.startswith("linux") else WatchdogWatch()
