"""Claude Code: its hooks in its JSON settings, its resume, and what its transcript says.

`sidecar integrate claude-code` writes the hooks into the project's
`.claude/settings.local.json` by default (Claude Code reads it, and projects do not commit it,
so this machine's absolute path to `sidecar` stays here); `--shared` into the committed
`.claude/settings.json`, calling `sidecar` from PATH; `--user` into `~/.claude/settings.json`.

Claude Code 2.1.328 writes each assistant message with the API's `usage` (input, output, cache
creation, cache read); a message is written once per content block, with the same `message.id`,
so each id is counted once; each names its `model` and its entry its `timestamp`, so the
figures are also summed by model and day (`EndFacts.spend`). A refused turn is an assistant
entry with `isApiErrorMessage: true`, `error: "rate_limit"` and the API's text; its
StopFailure hook is not waited for, so a `claude -p` that exits at once can end before it is
delivered: the transcript tells it then.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sidecar.hosts import transcripts
from sidecar.hosts.base import (
    UUID,
    EndFacts,
    Extra,
    Failure,
    Host,
    Option,
    Scope,
    Setting,
    Spend,
    Tokens,
    Use,
    count,
    moment,
    spend_by_day,
)
from sidecar.hosts.claude_code import autocontinue
from sidecar.vocabulary import EventKind

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "StopFailure", "SessionEnd",
          "Notification"]
# Its Notification's `notification_type`s that wait for the user (2.1.328's own names; the
# rest are notices: auth_success, elicitation_complete, agent_completed...).
ASKS = frozenset(("permission_prompt", "idle_prompt", "elicitation_dialog",
                  "elicitation_url_dialog", "worker_permission_prompt", "agent_needs_input",
                  "quota_auto_resume_stale"))
# Its own usage-limit auto-resume (2.1.332, claude.ai logins): it arms when a refused turn
# names its reset (within 24 h) in an open interactive session, and fires 30-90 s after it.
# These notices tell what became of it; only `_stale` ("press enter to continue") asks.
OWN_RESUME = MappingProxyType({"quota_auto_resume_fired": "fired",
                               "quota_auto_resume_disabled": "disabled",
                               "quota_auto_resume_stale": "stale"})

# Seconds between two runs of the status line when nothing else makes Claude Code run it: so
# that `working 2 min` counts through a turn. 2.1.328 takes a number of seconds, 1 or more.
REFRESH_INTERVAL = 2

PERMISSION_MODE = Option("permissionMode", "permission_mode",
                         ("acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"),
                         "acceptEdits")  # Claude Code 2.1.328's choices


def settings_files(root: Path | None, home: Path) -> list[Path]:
    """Every settings file of Claude Code's that sidecar may write, in the order it reads them:
    the project's own (local, then committed), then the user's."""
    project = [root / ".claude" / "settings.local.json", root / ".claude" / "settings.json"] \
        if root is not None else []
    return [*project, home / ".claude" / "settings.json"]


def ranked_below(place: Path, home: Path) -> list[Path]:
    """The settings files Claude Code ranks below `place`: what they set, `place` overrides."""
    user = home / ".claude" / "settings.json"
    files = settings_files(None if place == user else place.parent.parent, home)
    return [file for file in files[files.index(place) + 1:] if file != place] if place in files else []


def last_failure(entries: list[dict[str, Any]]) -> Failure | None:
    """The last assistant entry, if it is the API's refusal (`isApiErrorMessage`)."""
    for entry in reversed(entries):
        if entry.get("type") != "assistant":
            continue
        if entry.get("isApiErrorMessage") is not True:
            return None
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        text = " ".join(c.get("text", "") for c in content if isinstance(c, dict)) \
            if isinstance(content, list) else ""
        return Failure(str(entry.get("error") or "unknown"), text)
    return None


USAGE_NAMES = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def figures(entries: Iterable[dict[str, Any]]) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """The session's token figures, and the same by model and local day (each assistant
    message's `message.model` and the entry's `timestamp`); None if no message has usage."""
    seen: set[str] = set()
    uses: list[Use] = []
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        key = str(message.get("id") or entry.get("uuid"))
        if not isinstance(usage, dict) or key in seen:
            continue
        seen.add(key)
        model = message.get("model")
        uses.append(Use(model if isinstance(model, str) and model else None,
                        moment(entry.get("timestamp")), Tokens(*(count(usage.get(n)) for n in USAGE_NAMES))))
    if not seen:
        return None
    total = Tokens()
    for use in uses:
        total = total.plus(use.tokens)
    return total, spend_by_day(uses)


class ClaudeCode(Host):
    name = "claude-code"
    title = "Claude Code"
    executable = "claude"
    events = MappingProxyType({
        "SessionStart": EventKind.SESSION_START, "UserPromptSubmit": EventKind.TURN_START,
        "PostToolUse": EventKind.TOOL_USE, "Stop": EventKind.TURN_END,
        "SubagentStop": EventKind.TURN_END, "StopFailure": EventKind.TURN_FAILED,
        "SessionEnd": EventKind.SESSION_END, "Notification": EventKind.NEEDS_INPUT})
    asks = ASKS
    own_resume = OWN_RESUME
    own_resume_off = staticmethod(autocontinue.switched_off)  # its /config's switch, read
    # A non-interactive resume can be granted nothing at a prompt: it may edit files
    # (acceptEdits, or config.toml's permissionMode), and its log shows the argv it ran.
    resume = ("claude", "--permission-mode", "{permission_mode}", "--resume", "{session_id}",
              "-p", "{prompt}")
    options = (PERMISSION_MODE,)
    key_variables = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                     "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")
    scopes = (
        Scope(None),
        Scope("--user", "The user's ~/.claude/settings.json (every project).", in_project=False),
        Scope("--shared", "The project's committed settings.json, calling `sidecar` from PATH.",
              on_path=True, note="the committed settings call `sidecar` from PATH, so the hooks "
              "work on every machine where sidecar is installed and on PATH"),
    )
    integrate_help = """Hooks for SessionStart, UserPromptSubmit, PostToolUse, Stop, StopFailure,
    SessionEnd and Notification.

    By default in the project's .claude/settings.local.json: Claude Code reads it, and projects
    do not commit it, so the absolute path of this machine's `sidecar` stays on this machine.

    Example: sidecar integrate claude-code --statusline
    """
    integrate_hint = " (or --user for every project)"
    extras = (Extra("--statusline", "Also make Claude Code's status line `sidecar status "
                    "--line` (this session's state and next follow-up), in the same file; a "
                    "status line you already have is kept and shown first.",
                    Setting("--refresh-interval", "SECONDS", "With --statusline: how often "
                            "Claude Code runs the status line again, so that it counts during "
                            "a turn (its statusLine.refreshInterval; 0: only when Claude Code's "
                            f"own state changes; default {REFRESH_INTERVAL}). One you set "
                            "yourself is kept.",
                            REFRESH_INTERVAL)),)
    id_shape = (UUID, "a UUID")
    pid_variable = "CLAUDE_PID"  # 2.1.332 sets it: a hook command's wrapper is seen through

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        if not scope.in_project or root is None:
            return home / ".claude" / "settings.json"
        local, shared, _user = settings_files(root, home)
        return shared if scope.on_path else local

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.files import settings  # integration code: see base.py

        changed = settings.write_hooks(place, sidecar, self.name, EVENTS, uninstall)
        if uninstall:  # sidecar's status line goes with its hooks (the user's own comes back)
            from sidecar.hosts.claude_code import statusline

            changed = statusline.remove(place, self.name) or changed
        return changed

    def integrate_extra(self, flag: str, place: Path, sidecar: str, value: int | None) -> str:
        from sidecar.hosts.claude_code import statusline

        below = ranked_below(place, Path.home())
        # The files below are read wherever the local file is (this user, this machine, this
        # project), so what they set may be copied into it; the committed file goes to every
        # collaborator, who has not the user's own settings.
        local = place.name == "settings.local.json"
        return statusline.install(place, sidecar, self.name, below if local else [],
                                  [] if local else below, REFRESH_INTERVAL if value is None else value)

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.files import settings

        return any(settings.has_ours(path) for path in settings_files(root, home))

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        found = transcripts.read_figures(transcript_path, b'"usage"', figures)
        return EndFacts(last_failure(transcripts.tail_entries(transcript_path)),
                        *(found or (None, ())))


HOST = ClaudeCode()
