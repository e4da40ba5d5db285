"""Qwen Code: its Claude-Code-shaped hooks in its settings.json, its resume, its chat file.

`sidecar integrate qwen` writes the hooks into the user's `~/.qwen/settings.json` by default
(Qwen Code has no per-user file inside a project), calling `sidecar` by absolute path; with
`--project`, into the project's `.qwen/settings.json`, which teams commit, calling `sidecar`
from PATH. Qwen Code reads hook timeouts in seconds, and adds `"$version"` to the user's file
on its first run; the merge leaves that key, like every other, as it is.

Qwen Code 0.24.4 fires no SessionEnd in a one-shot run (`qwen "prompt"`), only in its
interactive UI (`/quit`): a one-shot session ends when its process does (the process watch;
hooks run through `bash -c`, whose parent is the real CLI, not the launcher). After tool
results it fires UserPromptSubmit again with an empty prompt, inside the same turn: a turn
start while a turn is open changes nothing a follow-up depends on.

Its chat file (`transcript_path`) writes each assistant message once, with `usageMetadata`,
the `model` and a `timestamp`.
A refused call is a `ui_telemetry` line `qwen-code.api_error` (`status_code` 429,
`error_type` RateLimitError, the provider's text); one-shot runs retry those for a long time
and fire no hook for the final failure, so the chat file tells it. The interactive UI fires
StopFailure with `error: "rate_limit"` for it.
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
    Failure,
    Finding,
    Host,
    Option,
    Scope,
    Spend,
    Tokens,
    Use,
    count,
    moment,
    spend_by_day,
)
from sidecar.vocabulary import EventKind

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "StopFailure",
          "SessionEnd", "Notification"]
HANDLER = {"name": "sidecar", "timeout": 5}  # seconds; emit returns in tens of milliseconds
APPROVAL_MODE = Option("qwenApprovalMode", "qwen_approval_mode",
                       ("plan", "default", "auto-edit", "auto", "yolo"), "auto-edit")  # 0.24.4's
API_ERROR = "qwen-code.api_error"
API_RESPONSE = "qwen-code.api_response"
USAGE_FIELDS = {"prompt": "promptTokenCount", "candidates": "candidatesTokenCount",
                "thoughts": "thoughtsTokenCount", "cached": "cachedContentTokenCount"}


def user_settings(home: Path) -> Path:
    return home / ".qwen" / "settings.json"


def project_settings(root: Path) -> Path:
    return root / ".qwen" / "settings.json"


def settings_files(root: Path | None, home: Path) -> list[Path]:
    return [*([project_settings(root)] if root is not None else []), user_settings(home)]


def _telemetry(entry: dict[str, Any]) -> dict[str, Any] | None:
    """A `ui_telemetry` line's event of the main conversation (a subagent's, such as the
    memory extraction after every turn, says nothing of how the user's turn ended)."""
    if entry.get("type") != "system" or entry.get("subtype") != "ui_telemetry":
        return None
    payload = entry.get("systemPayload")
    event = payload.get("uiEvent") if isinstance(payload, dict) else None
    if not isinstance(event, dict) or event.get("subagent_name"):
        return None
    return event


def error_kind(event: dict[str, Any]) -> str:
    """The canonical kind of a refused call, as Qwen Code names it in StopFailure
    (classifyApiError): a 429, or a text that says "rate limit", is `rate_limit`."""
    message = event.get("error_message")
    if event.get("status_code") == 429 or event.get("error_type") == "RateLimitError" or (
            isinstance(message, str) and "rate limit" in message.lower()):
        return "rate_limit"
    return str(event.get("error_type") or "unknown")


def last_failure(entries: list[dict[str, Any]]) -> Failure | None:
    """The last turn's failure: an API error after which no answer came."""
    for entry in reversed(entries):
        if entry.get("type") in ("user", "assistant"):
            return None  # an answer, or a turn that began and was not refused (yet)
        event = _telemetry(entry)
        if event is None:
            continue
        if event.get("event.name") == API_RESPONSE:
            return None
        if event.get("event.name") == API_ERROR:
            message = event.get("error_message")
            return Failure(error_kind(event), message if isinstance(message, str) else "")
    return None


def figures(entries: Iterable[dict[str, Any]]) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """Each assistant message's `usageMetadata`, once per message, summed, and the same by
    the `model` each names and its entry's local day (Qwen Code gives no price of its own)."""
    seen: set[str] = set()
    totals = dict.fromkeys(USAGE_FIELDS, 0)
    uses: list[Use] = []
    for entry in entries:
        usage = entry.get("usageMetadata")
        key = str(entry.get("uuid"))
        if entry.get("type") != "assistant" or not isinstance(usage, dict) or key in seen:
            continue
        seen.add(key)
        found = {name: count(usage.get(field)) for name, field in USAGE_FIELDS.items()}
        for name, figure in found.items():
            totals[name] += figure
        model = entry.get("model")
        uses.append(Use(model if isinstance(model, str) and model else None,
                        moment(entry.get("timestamp")), _tokens(found)))
    return (_tokens(totals), spend_by_day(uses)) if seen else None


def _tokens(usage: dict[str, int]) -> Tokens:
    """`input` without the cached part, thoughts counted as output (as Gemini CLI, which Qwen
    Code descends from, counts)."""
    return Tokens(input=max(0, usage["prompt"] - usage["cached"]),
                  output=usage["candidates"] + usage["thoughts"], cache_read=usage["cached"])


def hooks_disabled(path: Path) -> bool:
    """Whether a settings file turns every hook off (`disableAllHooks`)."""
    from sidecar.hosts.files.settings import load_json_or_empty  # integration code: see base.py

    return load_json_or_empty(path, comments=True).get("disableAllHooks") is True


class Qwen(Host):
    name = "qwen"
    title = "Qwen Code"
    executable = "qwen"
    events = MappingProxyType({
        "SessionStart": EventKind.SESSION_START, "UserPromptSubmit": EventKind.TURN_START,
        "PostToolUse": EventKind.TOOL_USE, "Stop": EventKind.TURN_END,
        "StopFailure": EventKind.TURN_FAILED, "SessionEnd": EventKind.SESSION_END,
        "Notification": EventKind.NEEDS_INPUT})
    # 0.24.4's Notification types that wait for the user; auth_success (at every start) is a
    # notice.
    asks = frozenset(("permission_prompt", "idle_prompt", "elicitation_dialog"))
    # Headless, Qwen Code's default approval mode offers no tool that edits or runs anything:
    # a resume may edit files (auto-edit, or config.toml's qwenApprovalMode). The prompt goes
    # as `--prompt=…`: 0.24.4 drops a positional prompt after `--` and reads one that begins
    # with `-` (a Markdown list) as options, while the one-word form keeps any text exactly.
    resume = ("qwen", "--approval-mode", "{qwen_approval_mode}", "--resume", "{session_id}",
              "--prompt={prompt}")
    options = (APPROVAL_MODE,)
    key_variables = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY",
                     "GEMINI_API_KEY")
    scopes = (
        Scope(None, in_project=False),
        Scope("--project", "The project's committed .qwen/settings.json, calling `sidecar` "
              "from PATH.", on_path=True, note="the project's hooks call `sidecar` from PATH, "
              "so they work on every machine where sidecar is installed"),
    )
    integrate_help = "Hooks for SessionStart, UserPromptSubmit, PostToolUse, Stop, StopFailure, " \
                     "SessionEnd and Notification."
    id_shape = (UUID, "a UUID")

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return project_settings(root) if scope.in_project and root is not None else user_settings(home)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.files.settings import write_hooks  # integration code: see base.py

        # Qwen Code strips comments as it reads
        return write_hooks(place, sidecar, self.name, EVENTS, uninstall, True, HANDLER)

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.files.settings import has_ours

        return any(has_ours(path, comments=True) for path in settings_files(root, home))

    def findings(self, root: Path | None, home: Path) -> list[Finding]:
        return [Finding(False, f"{path} turns off every Qwen Code hook (disableAllHooks), so "
                        "sidecar hears nothing from it", f"remove \"disableAllHooks\" from {path}")
                for path in settings_files(root, home) if hooks_disabled(path)]

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        tokens, spend = transcripts.read_figures(transcript_path, b'"usageMetadata"', figures) or (None, ())
        return EndFacts(last_failure(transcripts.tail_entries(transcript_path)), tokens, spend)


HOST = Qwen()
