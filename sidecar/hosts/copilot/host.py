"""GitHub Copilot CLI: its hooks, its resume (and `copilotPermission`), its session events.

`sidecar integrate copilot` writes the hooks into the user's `~/.copilot/settings.json` by
default (`$COPILOT_HOME` moves that folder): Copilot runs user-level hooks in every folder,
trusted or not. `--project` writes `.github/hooks/sidecar.json`, a file teams commit, calling
`sidecar` from PATH; Copilot loads a repository's hooks only in a folder it trusts
(`trustedFolders` in `~/.copilot/config.json`, a file Copilot manages: sidecar only reads it).

Copilot CLI 1.0.102's hook payloads name no event, so each hook passes its event's name
(`sidecar emit --source copilot --event <name>`). Hooks run synchronously, through bash, from
the native binary the `copilot` node loader spawns: that binary is the process to watch, and
`emit`'s parent. Its session events go to `session-state/<id>/events.jsonl`: each model
call's `session.usage_record` (its model and tokens), and a refused turn's `session.error` (`errorType:
"rate_limit"`, `statusCode: 429`), written only as its sessionEnd hook starts (too late for
an end read at once). So a refused turn is told by its `errorOccurred` hook, which comes for
every failed attempt, retries included: the turn counts as failed once, and an agentStop
after it (a retry got through) closes the limit again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from functools import reduce
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

# notification is an ask where its notification_type is one (ASKS); permissionRequest is traced
# only: it comes before Copilot's own rules decide, so also for a tool allowed without asking.
EVENTS = ["sessionStart", "userPromptSubmitted", "postToolUse", "agentStop", "sessionEnd",
          "errorOccurred", "notification", "permissionRequest"]
# Copilot waits for each hook (and kills it at timeoutSec): emit returns in tens of
# milliseconds, so a few seconds is ample and still bounds a stuck machine.
TIMEOUT_SEC = 5
ASKS = frozenset(("permission_prompt", "elicitation_dialog"))
REPO_FILE = Path(".github") / "hooks" / "sidecar.json"
LIMIT_ERRORS = {"rate_limit": "rate_limit", "quota_exceeded": "quota_exceeded"}
USAGE_NAMES = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
# What a headless resume may do without asking (`-p` can ask no one, so anything not allowed
# is denied): edit files by default, like Claude Code's acceptEdits; shell too, or everything.
PERMISSION = Option("copilotPermission", "copilot_permission",
                    ("--allow-tool=write", "--allow-all-tools", "--allow-all"),
                    "--allow-tool=write")


def copilot_home(home: Path) -> Path:
    return Path(os.environ.get("COPILOT_HOME") or home / ".copilot")


def user_settings(home: Path) -> Path:
    return copilot_home(home) / "settings.json"


def transcript(session_id: str) -> Path:
    """Where Copilot keeps a session's events, for an end that named no transcript."""
    return copilot_home(Path.home()) / "session-state" / session_id / "events.jsonl"


# -- what its events.jsonl says ------------------------------------------------------------


def last_failure(entries: list[dict[str, Any]]) -> Failure | None:
    """The last turn's `session.error`, unless an answer or a new prompt came after it.
    (Its errorOccurred hook says so first: this is for an end that came without it.)"""
    for entry in reversed(entries):
        kind = entry.get("type")
        if kind in ("assistant.message", "user.message"):
            return None
        data = entry.get("data")
        if kind == "session.error" and isinstance(data, dict):
            error = str(data.get("errorType") or "unknown")
            message = data.get("message")
            return Failure(LIMIT_ERRORS.get(error, error), message if isinstance(message, str) else "")
    return None


def stated_failure(payload: dict[str, Any]) -> Failure:
    """What an errorOccurred payload says: a failed model call's kind (see
    `model_call_failure`), else its `errorContext` and text."""
    error = payload.get("error")
    if payload.get("errorContext") == "model_call":
        return model_call_failure(error)
    text = error.get("message") if isinstance(error, dict) else None
    return Failure(str(payload.get("errorContext") or "error"), text if isinstance(text, str) else "")


def model_call_failure(error: Any) -> Failure:
    """A failed model call as errorOccurred gives it: the provider's error body as text
    (OpenAI's `{"message", "type", "code"}`), with no status code."""
    text = error.get("message") if isinstance(error, dict) else None
    text = text if isinstance(text, str) else ""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    message = str(body.get("message") or text) if isinstance(body, dict) else text
    codes = {str(body.get(k)) for k in ("code", "type")} if isinstance(body, dict) else set()
    said = text.lower()
    if "insufficient_quota" in codes:
        return Failure("quota_exceeded", message)
    if "rate_limit_exceeded" in codes or "rate limit" in said or said.startswith("429"):
        return Failure("rate_limit", message)
    return Failure("model_call", message)


def figures(entries: Iterable[dict[str, Any]]) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """The sum of every model call's `session.usage_record` (a resume adds its own), and the
    same by the `model` each names and its entry's local day. Its `cost` is no price: it is
    the model's premium-request multiplier (0 for a model of the user's own key), so the
    table prices Copilot's tokens."""
    uses: list[Use] = []
    for entry in entries:
        data = entry.get("data")
        usage = data.get("usage") if isinstance(data, dict) else None
        if entry.get("type") != "session.usage_record" or not isinstance(usage, dict):
            continue
        model = usage.get("model")
        uses.append(Use(model if isinstance(model, str) and model else None,
                        moment(entry.get("timestamp")),
                        Tokens(*(count(usage.get(name)) for name in USAGE_NAMES))))
    return (reduce(Tokens.plus, (use.tokens for use in uses)), spend_by_day(uses)) if uses else None


# -- which folders it trusts ---------------------------------------------------------------


def trusted_folders(home: Path) -> list[str]:
    """`trustedFolders` of Copilot's own config.json (JSON with `//` comments)."""
    from sidecar.hosts.files.settings import load_json_or_empty  # integration code: see base.py

    folders = load_json_or_empty(copilot_home(home) / "config.json", comments=True).get("trustedFolders")
    return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []


def trusted(root: Path, home: Path) -> bool:
    """Whether Copilot loads the repository's hooks in `root`: a trusted folder or one under
    it, or every folder with COPILOT_ALLOW_ALL=true (exactly `true`)."""
    if os.environ.get("COPILOT_ALLOW_ALL") == "true":
        return True
    target = Path(os.path.realpath(root))
    for folder in trusted_folders(home):
        base = Path(os.path.realpath(folder))
        if target == base or base in target.parents:
            return True
    return False


class Copilot(Host):
    name = "copilot"
    title = "GitHub Copilot CLI"
    executable = "copilot"
    events = MappingProxyType({
        "sessionStart": EventKind.SESSION_START, "userPromptSubmitted": EventKind.TURN_START,
        "postToolUse": EventKind.TOOL_USE, "agentStop": EventKind.TURN_END,
        "errorOccurred": EventKind.TURN_FAILED, "sessionEnd": EventKind.SESSION_END,
        "notification": EventKind.NEEDS_INPUT})
    asks = ASKS  # its other notifications (a shell completed, an agent finished) are notices
    # errorOccurred comes for every failed attempt, and agentStop only for an answered turn
    # (after a retry that got through; a refused turn ends with sessionEnd `error`).
    failures_are_attempts = True
    # `--prompt=` keeps a prompt that begins with `-` (a Markdown list) a value: Copilot
    # refuses `-p "- item"` and takes no `--`.
    resume = ("copilot", "--resume={session_id}", "{copilot_permission}", "--prompt={prompt}")
    options = (PERMISSION,)
    key_variables = ("COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL",
                     "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_HOME")
    scopes = (
        Scope(None, in_project=False),
        Scope("--project", "The project's committed .github/hooks/sidecar.json, calling "
              "`sidecar` from PATH (Copilot loads it only in a folder it trusts).", on_path=True,
              note="the project's hooks call `sidecar` from PATH, so they work on every machine "
              "where sidecar is installed; Copilot loads them only in a folder it trusts"),
    )
    integrate_help = "Hooks for sessionStart, userPromptSubmitted, postToolUse, agentStop, " \
                     "sessionEnd, errorOccurred, notification and permissionRequest."
    id_shape = (UUID, "a UUID")

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return root / REPO_FILE if scope.in_project and root is not None else user_settings(home)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        from sidecar.hosts.copilot import hooks  # integration code: see base.py

        return hooks.write(place, sidecar, self.name, EVENTS, TIMEOUT_SEC, uninstall,
                                   repo=place.parts[-len(REPO_FILE.parts):] == REPO_FILE.parts)

    def integrated(self, root: Path | None, home: Path) -> bool:
        from sidecar.hosts.copilot import hooks

        return hooks.has_ours(user_settings(home)) or (root is not None and hooks.has_ours(root / REPO_FILE))

    def findings(self, root: Path | None, home: Path) -> list[Finding]:
        from sidecar.hosts.copilot import hooks

        if root is None or not hooks.has_ours(root / REPO_FILE) or trusted(root, home):
            return []
        config = copilot_home(home) / "config.json"
        return [Finding(False, f"GitHub Copilot CLI does not trust {root}, so it skips the "
                               f"hooks in {root / REPO_FILE}",
                        f"trust the folder when Copilot asks (or add \"{root}\" to "
                        f"`trustedFolders` in {config}), or use `sidecar integrate copilot` "
                        "(the user's hooks run in every folder)")]

    def stated_failure(self, payload: Mapping[str, Any]) -> Failure | None:
        return stated_failure(dict(payload)) if "error" in payload else None

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        path = transcript_path or (str(transcript(session_id)) if UUID.fullmatch(session_id) else None)
        tokens, spend = transcripts.read_figures(path, b'"session.usage_record"', figures) or (None, ())
        return EndFacts(last_failure(transcripts.tail_entries(path)), tokens, spend)


HOST = Copilot()
