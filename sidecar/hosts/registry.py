"""Every agent host sidecar knows, by name: what code outside `sidecar/hosts/` asks instead of
naming a host. Adding a host is one module (a `base.Host`: `hosts/<host>.py`, or `host.py` in a
folder `hosts/<host>/` beside the host's other files) and one line in HOSTS.

An event's name means what its host says (`Host.events`), else what it means for every host
(GENERIC_EVENTS): sidecar's own kinds, and the names hosts and tools commonly send. So a host
that is not known here (`sidecar emit --source mine`) is understood all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from sidecar.hosts import borrowed, droid, gemini, hermes, kilo, qwen
from sidecar.hosts.base import Host, Option
from sidecar.hosts.claude_code import host as claude_code
from sidecar.hosts.cline import host as cline
from sidecar.hosts.codex import host as codex
from sidecar.hosts.copilot import host as copilot
from sidecar.hosts.opencode import host as opencode
from sidecar.hosts.pi import host as pi
from sidecar.vocabulary import EventKind, normalise

HOSTS: tuple[Host, ...] = (claude_code.HOST, codex.HOST, gemini.HOST, opencode.HOST, hermes.HOST,
                           pi.HOST, copilot.HOST, cline.HOST, qwen.HOST, droid.HOST,
                           kilo.HOST, *borrowed.BORROWERS)
UNKNOWN = "unknown"  # the host of an event that names none and looks like none

GENERIC_EVENTS: Mapping[EventKind, tuple[str, ...]] = MappingProxyType({
    EventKind.SESSION_START: ("SessionStart", "on_session_start", "session:start"),
    EventKind.SESSION_END: ("SessionEnd", "on_session_finalize", "session:end",
                            "conversation-done"),
    EventKind.SESSION_RESET: ("on_session_reset", "session:reset"),
    EventKind.TURN_START: ("UserPromptSubmit", "BeforeAgent"),
    EventKind.TURN_END: ("Stop", "SubagentStop", "agent:end", "agent-turn-complete", "AfterAgent"),
    EventKind.TURN_FAILED: ("StopFailure",),
    EventKind.TOOL_USE: ("PostToolUse", "post_tool_use", "AfterTool"),
    EventKind.NEEDS_INPUT: (),  # each host's own ask (a Notification) is mapped by the host
})

_BY_NAME = {host.name: host for host in HOSTS}
_GENERIC = {normalise(alias): kind for kind, aliases in GENERIC_EVENTS.items()
            for alias in (kind.value, *aliases)}
_PER_HOST = {host.name: {normalise(name): kind for name, kind in host.events.items()} for host in HOSTS}


def hosts() -> tuple[Host, ...]:
    return HOSTS


def names() -> list[str]:
    return [host.name for host in HOSTS]


def get(name: str) -> Host:
    """The host called `name`; KeyError if sidecar knows none of that name."""
    return _BY_NAME[name]


def find(name: str) -> Host | None:
    return _BY_NAME.get(name)


def integrable() -> list[Host]:
    """The hosts `sidecar integrate <name>` writes the settings of."""
    return [host for host in HOSTS if host.scopes]


def event_kind(host: str, name: str) -> EventKind | None:
    """What event `name` means coming from `host`; None for one sidecar only traces."""
    key = normalise(name)
    own = _PER_HOST.get(host, {}).get(key)
    return own if own is not None else _GENERIC.get(key)


def infer_host(payload: Mapping[str, Any]) -> str:
    """The host, when the payload does not name one: only one that is unmistakable."""
    return next((host.name for host in HOSTS if host.recognises(payload)), UNKNOWN)


def real_host(named: str, payload: Mapping[str, Any], process: str | None) -> str:
    """The host an event through `named`'s hook really came from: another host that runs
    `named`'s hooks (Cursor's CLI runs Claude Code's) where its payload, or `process` (the
    name of the program that ran the hook), says so; else `named`."""
    return next((host.name for host in borrowed.BORROWERS
                 if host.borrows == named and host.ran(payload, process)), named)


def borrowers_of(named: str) -> list[str]:
    """The hosts that run `named`'s hooks (Cursor's CLI and Devin's run Claude Code's)."""
    return [host.name for host in borrowed.BORROWERS if host.borrows == named]


def id_misfit(host: str, session_id: str) -> str | None:
    """Why `session_id` cannot be `host`'s; None if it can (or the host is unknown)."""
    known = find(host)
    return known.id_misfit(session_id) if known is not None else None


def default_resume() -> Mapping[str, tuple[str, ...]]:
    """Each host's resume command as shipped, where it has one."""
    return MappingProxyType({host.name: host.resume for host in HOSTS if host.resume})


def options() -> dict[str, Option]:
    """Every host's resume options, by their config.toml key."""
    return {option.key: option for host in HOSTS for option in host.options}


def default_options() -> dict[str, str]:
    """Each resume option's default, by its placeholder's name."""
    return {option.name: option.default for option in options().values()}


def key_variables() -> set[str]:
    """Every variable some host reads its credentials or endpoint from."""
    return {name for host in HOSTS for name in host.key_variables}
