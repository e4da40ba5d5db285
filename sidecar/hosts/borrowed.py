"""Hosts that run another host's hooks: Cursor's CLI and Devin's, both running Claude Code's.

Cursor's CLI runs the hooks in `.claude/settings*.json` (with its third-party hooks on), and
Devin's CLI loads `.claude/` hooks: sidecar's Claude Code hook (`sidecar emit --source
claude-code`) then fires from them. Such a session is theirs, not Claude Code's: a follow-up
that ran `claude --resume` on it would start an unrelated Claude Code session, or fail on an id
Claude Code never issued. So an event through the Claude Code hook is recorded as theirs when
its payload or its process says so (`registry.real_host`), and neither is ever resumed: sidecar
knows no unattended resume of either, and says so instead of running another host's program.

Cursor is told by its payload's own fields (`cursor_version`, `conversation_id`,
`generation_id`, `workspace_roots`), and both by the name of the program that ran the hook
(`emit`'s `hostName`: the nearest ancestor of the hook that is not a shell). Neither runs
offline (both need their vendor's servers), so the names are the ones their packages ship. A
session once known to be theirs stays theirs (sessions/batch.py): an event of it whose hook
cannot tell who ran it (the host gone before its SessionEnd hook ran) goes to the same record.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from sidecar.hosts.base import Host
from sidecar.hosts.claude_code.host import HOST as CLAUDE_CODE
from sidecar.vocabulary import EventKind

# Fields of Cursor's hook payloads that Claude Code's never carry.
CURSOR_FIELDS = ("cursor_version", "conversation_id", "generation_id", "workspace_roots")


class Borrower(Host):
    """A host known only through Claude Code's hooks, which it runs: its events are named as
    Claude Code names them, and it is never resumed."""

    borrows = CLAUDE_CODE.name  # the host whose hooks it runs
    process_names: frozenset[str] = frozenset()  # its program's names, as the kernel shows them
    events = CLAUDE_CODE.events
    asks = CLAUDE_CODE.asks

    def ran(self, payload: Mapping[str, Any], process: str | None) -> bool:
        """Whether an event through `borrows`'s hook, with `payload`, from the program named
        `process`, is this host's."""
        return self.recognises(payload) or process in self.process_names

    def resume_refusal(self) -> str | None:
        return (f"{self.title} ran Claude Code's hooks; sidecar cannot resume a {self.title} "
                f"session (and never resumes it with `claude`); not resumed")


class Cursor(Borrower):
    name = "cursor"
    title = "Cursor CLI"
    process_names = frozenset(("cursor-agent",))
    # Claude Code's names, and Cursor's own for what they have no Claude Code name for
    # (its `sessionStart`, `stop`... are Claude Code's in another case: the same names here).
    events = MappingProxyType({**CLAUDE_CODE.events, "beforeSubmitPrompt": EventKind.TURN_START})

    def recognises(self, payload: Mapping[str, Any]) -> bool:
        return any(field in payload for field in CURSOR_FIELDS)

    def payload_fields(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """Its own payloads name the session `conversation_id`, and no `cwd` but the
        workspace's roots."""
        fields: dict[str, str] = {}
        conversation, roots = payload.get("conversation_id"), payload.get("workspace_roots")
        if "session_id" not in payload and isinstance(conversation, str):
            fields["session_id"] = conversation
        if "cwd" not in payload and isinstance(roots, list) and roots and isinstance(roots[0], str):
            fields["cwd"] = roots[0]
        return fields


class Devin(Borrower):
    name = "devin"
    title = "Devin CLI"
    process_names = frozenset(("devin",))


CURSOR = Cursor()
DEVIN = Devin()
BORROWERS: tuple[Borrower, ...] = (CURSOR, DEVIN)
