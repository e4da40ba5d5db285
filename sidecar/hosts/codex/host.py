"""Codex: its events, its resume (and `codexSandbox`), its rollout file, its provider's key.

Its hooks and their trust are written by `hooks.py` (integration code, imported only when
asked to integrate or check, so the daemon never loads tomlkit).

Codex 0.169.0 sends no hook when the API refuses a turn on a usage limit; its rollout file
(`transcript_path`) ends that turn with an `event_msg` `task_complete` whose `error` has
`codex_error_info: "usage_limit_exceeded"` and the text it prints ("... try again at
6:16 AM."). Its token figures are `token_count` events (`info.total_token_usage`), and
each turn's model is in its `turn_context` line.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sidecar.hosts import transcripts
from sidecar.hosts.base import (
    UUID,
    EndFacts,
    Failure,
    Finding,
    Host,
    Option,
    Reader,
    Scope,
    Spend,
    Tokens,
    Use,
    count,
    moment,
    spend_by_day,
)
from sidecar.vocabulary import EventKind

LIMIT_ERRORS = {"usage_limit_exceeded": "usage_limit"}
SANDBOX = Option("codexSandbox", "codex_sandbox",
                 ("read-only", "workspace-write", "danger-full-access"), "workspace-write")


def codex_home(home: Path, env: Mapping[str, str] = os.environ) -> Path:
    return Path(env.get("CODEX_HOME") or home / ".codex")


# -- what its rollout file and config.toml say -------------------------------------------


def last_failure(entries: list[dict[str, Any]]) -> Failure | None:
    """The last `task_complete`, if it ended with an error."""
    for entry in reversed(entries):
        payload = entry.get("payload") if isinstance(entry, dict) else None
        if not isinstance(payload, dict) or payload.get("type") != "task_complete":
            continue
        error = payload.get("error")
        if not isinstance(error, dict):
            return None  # the last turn completed
        kind = LIMIT_ERRORS.get(str(error.get("codex_error_info")))
        message = error.get("message")
        return Failure(kind or str(error.get("codex_error_info") or "unknown"),
                       message if isinstance(message, str) else "")
    return None


def _tokens(usage: dict[str, Any]) -> Tokens:
    """Codex's usage object as sidecar's figures: its `input_tokens` include the cached ones."""
    cached = count(usage.get("cached_input_tokens"))
    return Tokens(input=max(0, count(usage.get("input_tokens")) - cached),
                  output=count(usage.get("output_tokens")), cache_read=cached)


def _growth(new: Tokens, old: Tokens) -> Tokens:
    return Tokens(max(0, new.input - old.input), max(0, new.output - old.output),
                  max(0, new.cache_read - old.cache_read), max(0, new.cache_write - old.cache_write))


def figures(entries: Iterable[dict[str, Any]]) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """The session's token figures (the last `total_token_usage`: running totals), and the
    same by model and local day: what each total grew by since the one before, charged to
    the model of the turn it came in (the last `turn_context`) on that line's day. Growth,
    not `last_token_usage`, so that a count Codex repeats is not charged twice."""
    model: str | None = None
    last: Tokens | None = None
    uses: list[Use] = []
    for entry in entries:
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            continue
        if entry.get("type") == "turn_context":
            named = payload.get("model")
            model = named if isinstance(named, str) and named else model
            continue
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
            total = _tokens(info["total_token_usage"])
            uses.append(Use(model, moment(entry.get("timestamp")), _growth(total, last or Tokens())))
            last = total
    return None if last is None else (last, spend_by_day(uses))


def env_key(config_toml: bytes) -> tuple[str, ...]:
    """`env_key` of the model provider a Codex config.toml's bytes choose, if it names one."""
    try:
        data = tomllib.loads(config_toml.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ()
    provider = data.get("model_provider")
    providers = data.get("model_providers")
    if not isinstance(provider, str) or not isinstance(providers, dict):
        return ()
    entry = providers.get(provider)
    key = entry.get("env_key") if isinstance(entry, dict) else None
    return (key,) if isinstance(key, str) and key else ()


def asked_tool(payload: Mapping[str, Any]) -> str:
    """What a PermissionRequest asks to run, in a line: the tool, and its command if it has one."""
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, list):
        command = " ".join(str(word) for word in command)
    name = tool if isinstance(tool, str) and tool else "a tool"
    return f"{name}: {command}"[:500] if isinstance(command, str) and command else name


class Codex(Host):
    name = "codex"
    title = "Codex"
    executable = "codex"
    events = MappingProxyType({
        "SessionStart": EventKind.SESSION_START, "UserPromptSubmit": EventKind.TURN_START,
        "PostToolUse": EventKind.TOOL_USE, "Stop": EventKind.TURN_END,
        "SubagentStop": EventKind.TURN_END, "SessionEnd": EventKind.SESSION_END,
        "agent-turn-complete": EventKind.TURN_END,  # its `notify` program's
        "PermissionRequest": EventKind.NEEDS_INPUT})  # an approval it asks the user for
    # It may write in the workspace (sandbox workspace-write, or config.toml's codexSandbox).
    resume = ("codex", "exec", "resume", "--skip-git-repo-check", "-c",
              'sandbox_mode="{codex_sandbox}"', "--", "{session_id}", "{prompt}")
    options = (SANDBOX,)
    key_variables = ("OPENAI_API_KEY", "CODEX_HOME")
    scopes = (Scope(None, in_project=False),)
    integrate_help = "Hooks in $CODEX_HOME/hooks.json, trusted in $CODEX_HOME/config.toml " \
                     "(hashes from Codex)."
    records_itself = True  # the trust keys and features.hooks too
    id_shape = (UUID, "a UUID")

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return codex_home(home)

    def written(self, place: Path) -> list[Path]:
        return [place / "hooks.json", place / "config.toml"]

    def shown(self, place: Path) -> Path:
        return place / "hooks.json"

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.codex import hooks

        return hooks.integrate(place, sidecar, uninstall)

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.files import settings

        return settings.has_ours(self.place(self.scopes[0], root, home) / "hooks.json")

    def findings(self, root: Path | None, home: Path) -> list[Finding]:
        from sidecar.hosts.codex import hooks

        return [hooks.trust_finding(root or home)]

    def needed_variables(self, env: Mapping[str, str], home: Path, read: Reader) -> tuple[str, ...]:
        """The variable its model provider reads its key from (`env_key`), if it names one."""
        data = read(codex_home(home, env) / "config.toml")
        return env_key(data) if data is not None else ()

    def recognises(self, payload: Mapping[str, Any]) -> bool:
        return "thread-id" in payload and payload.get("type") == "agent-turn-complete"

    def payload_fields(self, payload: Mapping[str, Any]) -> dict[str, str]:
        answer = payload.get("last-assistant-message")  # its `notify` program's turn end
        if payload.get("type") == "agent-turn-complete" and isinstance(answer, str) and answer:
            return {"last_assistant_message": answer}
        if payload.get("hook_event_name") != "PermissionRequest":
            return {}
        return {"notification_type": "permission_request", "message": asked_tool(payload)}

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        found = transcripts.read_figures(transcript_path, (b'"token_count"', b'"turn_context"'), figures)
        return EndFacts(last_failure(transcripts.tail_entries(transcript_path)),
                        *(found or (None, ())))


HOST = Codex()
