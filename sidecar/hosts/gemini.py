"""`sidecar integrate gemini`: Gemini CLI's hooks, in its settings.json.

By default the user's `~/.gemini/settings.json` (Gemini has no per-user file inside a
project), calling `sidecar` by absolute path; with `--project`, the project's
`.gemini/settings.json`, which teams commit, calling `sidecar` from PATH so that the command
resolves on every machine. Gemini runs hooks only in folders it trusts.

Gemini CLI 0.61.0 writes each model message with its `tokens`, `model` and `timestamp` in its
transcript.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sidecar.hosts import transcripts
from sidecar.hosts.base import (
    UUID,
    EndFacts,
    Finding,
    Host,
    Scope,
    Spend,
    Tokens,
    Use,
    count,
    moment,
    spend_by_day,
)
from sidecar.vocabulary import EventKind

EVENTS = ["SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "AfterTool", "Notification"]
NO_RESPONSE = "[no response text]"  # AfterAgent's prompt_response for a cancelled turn
HANDLER = {"name": "sidecar", "timeout": 5000}  # ms; emit returns in tens of milliseconds


def user_settings(home: Path) -> Path:
    return home / ".gemini" / "settings.json"


def project_settings(root: Path) -> Path:
    return root / ".gemini" / "settings.json"


def trusted(root: Path, home: Path) -> bool:
    """Whether Gemini trusts the folder, so that it runs hooks there at all."""
    from sidecar.hosts.files.settings import load_json_or_empty  # integration code: see base.py

    security = load_json_or_empty(user_settings(home), comments=True).get("security")
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    rules = load_json_or_empty(home / ".gemini" / "trustedFolders.json")
    target = Path(os.path.realpath(root))
    for folder, level in rules.items():
        base = Path(os.path.realpath(folder))
        if level == "TRUST_PARENT":
            base = base.parent
        if level in ("TRUST_FOLDER", "TRUST_PARENT") and (target == base or base in target.parents):
            return True
    return False


def figures(entries: Iterable[dict[str, Any]]) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """Gemini CLI writes each message as a line, and rewrites the list in `$set` lines: each
    message id counts once, as last written. Summed, and the same by the `model` each message
    names and its local day (Gemini CLI gives no price of its own)."""
    messages: dict[str, tuple[dict[str, Any], Any, Any]] = {}  # by id: tokens, model, timestamp
    for entry in entries:
        found = entry.get("$set", {}).get("messages") if isinstance(entry.get("$set"), dict) else [entry]
        for message in found if isinstance(found, list) else []:
            if isinstance(message, dict) and message.get("type") == "gemini" \
                    and isinstance(message.get("tokens"), dict):
                messages[str(message.get("id"))] = (message["tokens"], message.get("model"),
                                                    message.get("timestamp"))
    if not messages:
        return None
    uses = [Use(model if isinstance(model, str) and model else None, moment(at), _tokens([usage]))
            for usage, model, at in messages.values()]
    return _tokens([usage for usage, _, _ in messages.values()]), spend_by_day(uses)


def _tokens(usages: list[dict[str, Any]]) -> Tokens:
    """`input` includes the cached part; thoughts are output."""
    t = {k: sum(count(u.get(k)) for u in usages) for k in ("input", "output", "cached", "thoughts")}
    return Tokens(input=max(0, t["input"] - t["cached"]), output=t["output"] + t["thoughts"],
                  cache_read=t["cached"])


class Gemini(Host):
    name = "gemini"
    title = "Gemini CLI"
    executable = "gemini"
    events = MappingProxyType({
        "SessionStart": EventKind.SESSION_START, "SessionEnd": EventKind.SESSION_END,
        "BeforeAgent": EventKind.TURN_START, "AfterAgent": EventKind.TURN_END,
        "AfterTool": EventKind.TOOL_USE, "Notification": EventKind.NEEDS_INPUT})
    # 0.61.0's only NotificationType: a tool waits for the user's confirmation (interactive).
    asks = frozenset(("toolpermission",))
    resume = ("gemini", "--resume", "{session_id}", "-p", "{prompt}")
    key_variables = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT")
    scopes = (
        Scope(None, in_project=False),
        Scope("--project", "The project's committed .gemini/settings.json, calling `sidecar` "
              "from PATH.", on_path=True, note="the project's hooks call `sidecar` from PATH, "
              "so they work on every machine where sidecar is installed"),
    )
    integrate_help = "Hooks for SessionStart, SessionEnd, BeforeAgent, AfterAgent, AfterTool " \
                     "and Notification."
    id_shape = (UUID, "a UUID")

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return project_settings(root) if scope.in_project and root is not None else user_settings(home)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.files.settings import write_hooks  # integration code: see base.py

        # Gemini strips comments as it reads
        return write_hooks(place, sidecar, self.name, EVENTS, uninstall, True, HANDLER)

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.files.settings import has_ours

        return has_ours(user_settings(home), comments=True) or (
            root is not None and has_ours(project_settings(root), comments=True))

    def findings(self, root: Path | None, home: Path) -> list[Finding]:
        if root is None or trusted(root, home):
            return []
        return [Finding(False, f"Gemini CLI does not trust {root}, so it runs no hooks there",
                        f"trust the folder when Gemini asks, or add \"{root}\": \"TRUST_FOLDER\" "
                        f"to {home / '.gemini' / 'trustedFolders.json'}")]

    def payload_fields(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """AfterAgent (a turn's end) carries the model's answer as `prompt_response` (a
        cancelled turn's is a placeholder, not an answer)."""
        answer = payload.get("prompt_response")
        if payload.get("hook_event_name") != "AfterAgent" or not isinstance(answer, str) \
                or not answer or answer == NO_RESPONSE:
            return {}
        return {"last_assistant_message": answer}

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        tokens, spend = transcripts.read_figures(transcript_path, b'"tokens"', figures) or (None, ())
        return EndFacts(tokens=tokens, spend=spend)


HOST = Gemini()
