"""Plugins: Python packages registered under the entry-point group `sidecar.plugins`.

A plugin (a module or any object) may define on_session_start, on_session_end (or
on_session_finalize, hermes's name), on_session_reset, on_turn_end, on_tool_use and
on_hook_fired. Each is called with keyword arguments and should accept **kwargs.

Calls run in order on one worker thread, never on the thread that applies events. A call that
raises is logged and counted; one that runs past its time limit is logged and counted as hung,
and that plugin is passed over until the call returns. Processing goes on either way.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from sidecar.vocabulary import EventKind, Fired, SessionChange

log = logging.getLogger("sidecar")

GROUP = "sidecar.plugins"
CALL_TIMEOUT = 5.0

HOOK_FIRED = "hook-fired"
CALLBACKS: dict[str, tuple[str, ...]] = {
    EventKind.SESSION_START: ("on_session_start",),
    EventKind.SESSION_END: ("on_session_end", "on_session_finalize"),
    EventKind.SESSION_RESET: ("on_session_reset",),
    EventKind.TURN_START: ("on_turn_start",),
    EventKind.TURN_END: ("on_turn_end",),
    EventKind.TURN_FAILED: ("on_turn_failed",),
    EventKind.TOOL_USE: ("on_tool_use",),
    EventKind.NEEDS_INPUT: ("on_needs_input",),
    HOOK_FIRED: ("on_hook_fired",),
}


@dataclass
class Plugin:
    name: str
    target: Any
    calls: int = 0
    errors: int = 0
    hangs: int = 0
    busy: threading.Event = field(default_factory=threading.Event)

    def callback(self, kind: str) -> Callable[..., Any] | None:
        for attr in CALLBACKS[kind]:
            function: Callable[..., Any] | None = getattr(self.target, attr, None)
            if callable(function):
                return function
        return None

    def counters(self) -> dict[str, int]:
        return {"calls": self.calls, "errors": self.errors, "hangs": self.hangs}


def load(group: str = GROUP) -> list[Plugin]:
    """Every installed plugin; one that fails to load is logged and left out."""
    plugins = []
    for ep in entry_points(group=group):
        try:
            plugins.append(Plugin(ep.name, ep.load()))
        except Exception:
            log.exception("plugin %s failed to load", ep.name)
    return plugins


def change_kwargs(workspace: str, change: SessionChange) -> dict[str, Any]:
    """A session change as the keyword arguments a plugin callback receives."""
    return {
        "workspace": workspace,
        "host": change.host,
        "session_id": change.session_id,
        "harness_session_id": change.harness_session_id,
        "reason": change.reason,
        "event": dict(change.payload) if change.payload is not None else None,
        "cwd": change.cwd,
    }


class PluginRunner:
    """Calls plugins in order on a worker thread, with a time limit per call."""

    def __init__(self, plugins: list[Plugin], timeout: float = CALL_TIMEOUT) -> None:
        self.plugins = plugins
        self.timeout = timeout
        self.calls: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self.worker = threading.Thread(target=self._work, name="plugins", daemon=True)
        if plugins:
            self.worker.start()

    def session_changes(self, workspace: str, changes: list[SessionChange]) -> None:
        if not self.plugins:
            return
        for change in changes:
            if change.kind is not None:
                self.calls.put((change.kind, change_kwargs(workspace, change)))

    def hook_fired(self, fired: Fired) -> None:
        if self.plugins:
            self.calls.put((HOOK_FIRED, dataclasses.asdict(fired)))

    def stop(self, timeout: float = 5.0) -> None:
        if self.worker.is_alive():
            self.calls.put(None)
            self.worker.join(timeout)

    def counters(self) -> dict[str, dict[str, int]]:
        return {p.name: p.counters() for p in self.plugins}

    def _work(self) -> None:
        while True:
            item = self.calls.get()
            if item is None:
                return
            kind, kwargs = item
            for plugin in self.plugins:
                function = plugin.callback(kind)
                if function is not None:
                    self._call(plugin, function, kwargs)

    def _call(self, plugin: Plugin, function: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        if plugin.busy.is_set():
            log.warning("plugin %s: still in a hung call; %s passed over", plugin.name, function.__name__)
            plugin.hangs += 1
            return
        plugin.calls += 1
        plugin.busy.set()

        def call() -> None:
            try:
                function(**kwargs)
            except Exception:
                plugin.errors += 1
                log.exception("plugin %s: %s raised", plugin.name, function.__name__)
            finally:
                plugin.busy.clear()

        thread = threading.Thread(target=call, name=f"plugin:{plugin.name}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            plugin.hangs += 1
            log.error("plugin %s: %s has not returned after %gs; going on without it",
                      plugin.name, function.__name__, self.timeout)
