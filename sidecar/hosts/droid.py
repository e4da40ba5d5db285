"""Factory Droid: its Claude-Code-shaped hooks in its settings.json, its resume, its token figures.

`sidecar integrate droid` writes the hooks into the user's `~/.factory/settings.json` by
default (where Droid keeps its custom models too), calling `sidecar` by absolute path; with
`--project`, into the project's `.factory/settings.json`, which teams commit, calling `sidecar`
from PATH. Droid 0.215.0 runs the hooks of both files (both fire, so integrate one of them); it
does not run hooks from `.factory/settings.local.json`, so there is no per-user file inside a
project to keep this machine's path in.

`droid exec` fires SessionStart, Stop and SessionEnd (`reason`, `session_duration_ms`,
`message_count`), but no UserPromptSubmit; the hooks' process is the `droid` binary itself (a
native program, no launcher), through `sh -c`. Its Notification types (`permission_prompt`,
`idle_prompt`, `elicitation_dialog`) all wait for the user.

Its transcript (`transcript_path`, `<session id>.jsonl`) holds no token figures; the session's
settings file beside it (`<session id>.settings.json`) does: `tokenUsage`, the whole session's
(a resumed run adds to it), with the `model` it used. The cost it states is in Factory credits,
not dollars, so the price table prices the tokens.

`droid exec -s <id>` first asks Factory's servers for the session: it continues the local one
only when they answer that they do not have it (404). Offline, that request fails, and droid
exits 1 saying only in its own log (`~/.factory/logs/droid-log-single.log`) "MetaError: Failed
to fetch session".
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from sidecar.hosts import transcripts
from sidecar.hosts.base import UUID, EndFacts, Host, Option, Scope, Spend, Tokens, local_day, moment
from sidecar.vocabulary import EventKind

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd", "Notification"]
# Every Notification type 0.215.0 sends waits for the user: a tool's permission, a question
# (AskUser), and a turn the user stopped.
ASKS = frozenset(("permission_prompt", "idle_prompt", "elicitation_dialog"))
# Unattended, `droid exec` is read-only by default: a resume may edit files (`--auto low`), or
# what config.toml's droidAutonomy allows.
AUTONOMY = Option("droidAutonomy", "droid_autonomy", ("low", "medium", "high"), "low")
MAX_SESSION_SETTINGS = 1024 * 1024  # bytes: 0.215.0 writes about one kilobyte
USAGE_NAMES = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")


def user_settings(home: Path) -> Path:
    return home / ".factory" / "settings.json"


def project_settings(root: Path) -> Path:
    return root / ".factory" / "settings.json"


def settings_files(root: Path | None, home: Path) -> list[Path]:
    return [*([project_settings(root)] if root is not None else []), user_settings(home)]


def session_settings(transcript_path: str | None, session_id: str) -> Path | None:
    """The session's settings file beside its transcript; None where the transcript is not
    the session's own `<id>.jsonl` (a path an event names is untrusted: only that name's
    sibling is ever read)."""
    if not transcript_path or not UUID.fullmatch(session_id):
        return None
    transcript = Path(transcript_path)
    if transcript.name != f"{session_id}.jsonl":
        return None
    return transcript.with_name(f"{session_id}.settings.json")


def figures(settings: Any, day: str | None) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """The session's `tokenUsage`, and the same as one spend of its `model` on `day`."""
    usage = settings.get("tokenUsage") if isinstance(settings, dict) else None
    tokens = Tokens.summed([usage], USAGE_NAMES)
    if tokens is None:
        return None
    model = settings.get("model")
    return tokens, (Spend(model if isinstance(model, str) and model else None, day, tokens),)


def last_day(entries: list[dict[str, Any]]) -> str | None:
    """The local day of the transcript's last dated entry."""
    for entry in reversed(entries):
        if (at := moment(entry.get("timestamp"))) is not None:
            return local_day(at)
    return None


class Droid(Host):
    name = "droid"
    title = "Factory Droid"
    executable = "droid"
    events = MappingProxyType({
        "SessionStart": EventKind.SESSION_START, "UserPromptSubmit": EventKind.TURN_START,
        "PostToolUse": EventKind.TOOL_USE, "Stop": EventKind.TURN_END,
        "SubagentStop": EventKind.TURN_END, "SessionEnd": EventKind.SESSION_END,
        "Notification": EventKind.NEEDS_INPUT})
    asks = ASKS
    # The prompt goes after `--`, which 0.215.0 honours: one beginning with `-` stays a prompt.
    resume = ("droid", "exec", "--auto", "{droid_autonomy}", "-s", "{session_id}", "--", "{prompt}")
    options = (AUTONOMY,)
    key_variables = ("FACTORY_API_KEY",)
    scopes = (
        Scope(None, in_project=False),
        Scope("--project", "The project's committed .factory/settings.json, calling `sidecar` "
              "from PATH.", on_path=True, note="the project's hooks call `sidecar` from PATH, "
              "so they work on every machine where sidecar is installed"),
    )
    integrate_help = "Hooks for SessionStart, UserPromptSubmit, PostToolUse, Stop, SessionEnd " \
                     "and Notification, in ~/.factory/settings.json (or --project)."
    id_shape = (UUID, "a UUID")

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return project_settings(root) if scope.in_project and root is not None else user_settings(home)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.files.settings import write_hooks  # integration code: see base.py

        return write_hooks(place, sidecar, self.name, EVENTS, uninstall, comments=True)  # JSONC

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.files.settings import has_ours

        return any(has_ours(path, comments=True) for path in settings_files(root, home))

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        path = session_settings(transcript_path, session_id)
        data = None if path is None else transcripts.read_small(path, MAX_SESSION_SETTINGS)
        try:
            settings = orjson.loads(data) if data else None
        except ValueError:
            return EndFacts()
        tokens, spend = figures(settings, last_day(transcripts.tail_entries(transcript_path))) or (None, ())
        return EndFacts(None, tokens, spend)


HOST = Droid()
