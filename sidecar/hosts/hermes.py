"""A hermes-agent plugin: session boundaries go into the workspace's inbox.

hermes-agent finds it through the entry point `sidecar` in the group `hermes_agent.plugins`
and loads it once enabled (`hermes plugins enable sidecar`). Callbacks run on the agent's own
thread and `hermes -z` exits without clean-up, so each one is a synchronous file drop and
nothing more. hermes's `on_session_end` fires after every turn: it is sent as a turn-end.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import orjson

from sidecar.base.paths import find_workspace
from sidecar.base.proc import process_space, start_time
from sidecar.emit import NotInitialised, drop
from sidecar.hosts.base import Host
from sidecar.vocabulary import EventKind

log = logging.getLogger("sidecar.hermes")

FORWARDED = ("on_session_start", "on_session_end", "on_session_finalize", "on_session_reset")
KEPT = ("platform", "reason", "model", "task_id", "turn_id", "completed", "interrupted")


def event_for(hook: str, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The event to drop for one callback, or None when there is no session to name."""
    session_id = kwargs.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return None  # e.g. /quit before any turn finalizes session_id=None
    event: dict[str, Any] = {"event": hook, "session_id": session_id, "host": "hermes",
                             "ts": time.time(), "cwd": os.getcwd(),
                             # the agent's own process: sidecar ends its sessions if it dies
                             "hostPid": os.getpid(), "hostStart": start_time(os.getpid()),
                             "hostSpace": process_space()}
    for key in KEPT:
        value = kwargs.get(key)
        if isinstance(value, (str, int, float, bool)):
            event[key] = value
    hook_id = os.environ.get("SIDECAR_HOOK_ID")
    if hook_id:
        event["sidecarHookId"] = hook_id
    return event


def forward(hook: str, **kwargs: Any) -> None:
    try:
        event = event_for(hook, kwargs)
        if event is None:
            return
        workspace = find_workspace(os.environ.get("SIDECAR_WORKSPACE") or os.getcwd())
        if workspace is None:
            raise NotInitialised(os.getcwd())
        drop(workspace, orjson.dumps(event))  # NotInitialised where it was never initialised
    except NotInitialised:
        log.debug("sidecar: no workspace initialised here at or above %s", os.getcwd())
    except Exception:  # a plugin must never break the agent
        log.exception("sidecar: could not record %s", hook)


def _callback(hook: str) -> Callable[..., None]:
    def callback(**kwargs: Any) -> None:
        forward(hook, **kwargs)

    callback.__name__ = hook
    return callback


def register(ctx: Any) -> None:
    """hermes-agent's plugin entry: register one callback per session boundary."""
    for hook in FORWARDED:
        ctx.register_hook(hook, _callback(hook))


class Hermes(Host):
    """hermes-agent loads the plugin itself (`hermes plugins enable sidecar`): sidecar writes
    none of its settings, and has no resume for it."""

    name = "hermes"
    title = "hermes-agent"
    events = MappingProxyType({
        "on_session_start": EventKind.SESSION_START,
        "on_session_end": EventKind.TURN_END,  # it fires after every turn, not once per session
        "on_session_finalize": EventKind.SESSION_END,
        "on_session_reset": EventKind.SESSION_RESET})


HOST = Hermes()
