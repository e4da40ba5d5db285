"""`sidecar integrate pi`: a small extension that drops Pi's session events.

Pi (`@mariozechner/pi-coding-agent`) has no hook commands, only TypeScript extensions that run
inside it (loaded by jiti, no build step); the extension (`extension.ts`, shipped with the
package beside this module and assembled with the shared inbox writer) writes events straight
into the inbox. It is installed into the project's `.pi/extensions/` (it holds no
machine-specific path, so a project may commit it) or, with `--user`, into the user's
`~/.pi/agent/extensions/` (`$PI_CODING_AGENT_DIR/extensions/`). It sends Pi's own event names:
`session_start`, `agent_start` (a prompt begins), `tool_execution_end`, `agent_end` (a prompt
ended well, with the text of its last assistant message) and `session_shutdown`; a prompt that
ended in an error or was stopped is sent as `agent_end:error` or `agent_end:aborted`, which are
only traced.

Pi 0.73.1 writes each session to a JSON-lines file (the transcript): assistant messages name
their `model` and carry `usage` (input without the cached part, output, cacheRead, cacheWrite,
and `cost.total`, Pi's own price of them in US dollars), and a turn the API
refused ends with an assistant message of `stopReason: "error"` whose `errorMessage` is the
provider's text (`429 Rate limit reached ...`). Pi retries such a turn itself (three times by
default), so only the session file says how the last try ended.
"""

from __future__ import annotations

import os
import re
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
    Reader,
    Scope,
    Spend,
    Tokens,
    Use,
    count,
    moment,
    note,
    spend_by_day,
)
from sidecar.hosts.files import plugin_file
from sidecar.vocabulary import EventKind

FILE_NAME = "sidecar.ts"
MARK = "// sidecar: Pi's session events into the workspace's inbox."
AGENT_DIR = "PI_CODING_AGENT_DIR"

# The error kind of a refused turn, from the provider's text (first match wins): Pi keeps no
# status code, only the message, which starts with the HTTP status for an OpenAI-style API.
ERROR_KINDS = (
    (re.compile(r"usage.?limit", re.I), "usage_limit"),
    (re.compile(r"insufficient.?quota|quota.?exceeded|exceeded.{0,40}quota", re.I),
     "quota_exceeded"),
    (re.compile(r"resource.?exhausted", re.I), "resource_exhausted"),
    (re.compile(r"^\s*429\b|rate.?limit|too many requests", re.I), "rate_limit"),
)
USAGE_NAMES = ("input", "output", "cacheRead", "cacheWrite")  # an assistant message's `usage`
ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")  # a models.json apiKey that names a variable


def agent_dir(home: Path, env: Mapping[str, str] = os.environ) -> Path:
    """Pi's own folder: its settings, models.json, extensions and sessions."""
    given = env.get(AGENT_DIR)
    return Path(os.path.expanduser(given)) if given else home / ".pi" / "agent"


def project_extension(root: Path) -> Path:
    return root / ".pi" / "extensions" / FILE_NAME


def user_extension(home: Path) -> Path:
    return agent_dir(home) / "extensions" / FILE_NAME


def extension_source() -> bytes:
    return plugin_file.source(Path(__file__).parent / "extension.ts")


# -- what its session file says ------------------------------------------------------------


def _assistant(entry: dict[str, Any]) -> dict[str, Any] | None:
    message = entry.get("message") if entry.get("type") == "message" else None
    return message if isinstance(message, dict) and message.get("role") == "assistant" else None


def error_kind(text: str) -> str:
    return next((kind for pattern, kind in ERROR_KINDS if pattern.search(text)), "api_error")


def last_failure(entries: list[dict[str, Any]]) -> Failure | None:
    """The last assistant message, if the API refused it (`stopReason: "error"`)."""
    for entry in reversed(entries):
        message = _assistant(entry)
        if message is None:
            continue
        if message.get("stopReason") != "error":
            return None
        text = message.get("errorMessage")
        text = text if isinstance(text, str) else ""
        return Failure(error_kind(text), text)
    return None


def figures(entries: Iterable[dict[str, Any]]) -> tuple[Tokens, tuple[Spend, ...]] | None:
    """Every assistant message's `usage` (each is written once, on its own line), summed, and
    the same by the model it names and its entry's local day, with Pi's own price of it
    (`usage.cost.total`, US dollars, from the model's prices in Pi's catalogue or
    models.json); None if no message has usage."""
    uses: list[Use] = []
    for entry in entries:
        message = _assistant(entry)
        usage = message.get("usage") if message is not None else None
        if message is None or not isinstance(usage, dict):
            continue
        model, cost = message.get("model"), usage.get("cost")
        uses.append(Use(model if isinstance(model, str) and model else None,
                        moment(entry.get("timestamp")),
                        Tokens(*(count(usage.get(name)) for name in USAGE_NAMES)),
                        _dollars(cost.get("total")) if isinstance(cost, dict) else None))
    return (reduce(Tokens.plus, (use.tokens for use in uses)), spend_by_day(uses)) if uses else None


def _dollars(value: object) -> float | None:
    """Pi's own price as it wrote it: a finite number of US dollars, not below 0 (else none)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        and 0 <= value < float("inf") else None


# -- what its settings say -----------------------------------------------------------------


def provider_retries_set(root: Path | None, home: Path) -> bool:
    """Whether Pi's settings (the user's, or the project's over them) bound the provider SDK's
    own retries, which otherwise sleep for as long as a 429's `retry-after` says."""
    from sidecar.hosts.files.settings import load_json_or_empty  # integration code: see base.py

    places = [agent_dir(home) / "settings.json"]
    if root is not None:
        places.append(root / ".pi" / "settings.json")
    for path in places:
        retry = load_json_or_empty(path).get("retry")
        provider = retry.get("provider") if isinstance(retry, dict) else None
        if isinstance(provider, dict) and isinstance(provider.get("maxRetries"), int):
            return True
    return False


def key_names(models_json: bytes) -> tuple[str, ...]:
    """The variables models.json's providers read their `apiKey` from (a value that is a
    variable's name; Pi reads the variable, and takes the text itself only if it is unset)."""
    import json

    try:
        data = json.loads(models_json)
    except ValueError:
        return ()
    providers = data.get("providers") if isinstance(data, dict) else None
    names = {p.get("apiKey") for p in (providers or {}).values() if isinstance(p, dict)} \
        if isinstance(providers, dict) else set()
    return tuple(sorted(n for n in names if isinstance(n, str) and ENV_NAME.fullmatch(n)))


class Pi(Host):
    name = "pi"
    title = "Pi"
    executable = "pi"
    events = MappingProxyType({
        "session_start": EventKind.SESSION_START, "agent_start": EventKind.TURN_START,
        "tool_execution_end": EventKind.TOOL_USE, "agent_end": EventKind.TURN_END,
        "session_shutdown": EventKind.SESSION_END})
    # The prompt goes on standard input: pi reads an argument that begins with `-` as an
    # option and one that begins with `@` as a file to attach, and takes no `--`.
    resume = ("pi", "--session", "{session_id}", "-p", "<{prompt}")
    key_variables = ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY",
                     "GEMINI_API_KEY", "OPENROUTER_API_KEY", AGENT_DIR,
                     "PI_CODING_AGENT_SESSION_DIR")
    scopes = (Scope(None),
              Scope("--user", "The user's Pi extension folder, ~/.pi/agent/extensions/ "
                    "(every project).", in_project=False))
    integrate_help = "An extension that drops Pi's session events into the inbox."
    integrate_hint = " (or --user for every project)"
    calls_sidecar = False  # the extension writes into the inbox itself
    id_shape = (UUID, "a UUID")  # UUIDv7: ids of one minute share a long prefix, never cut one

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return project_extension(root) if scope.in_project and root is not None else user_extension(home)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        return plugin_file.install(place, extension_source(), MARK, uninstall)

    def integrated(self, root: Path | None, home: Path) -> bool:
        return plugin_file.is_ours(user_extension(home), MARK) or (
            root is not None and plugin_file.is_ours(project_extension(root), MARK))

    def findings(self, root: Path | None, home: Path) -> list[Finding]:
        if provider_retries_set(root, home):
            return []
        return [note("Pi's provider retries obey a 429's retry-after (an hour, say), so a "
                     "refused turn can hang a run silently that long",
                     f'set {{"retry": {{"provider": {{"maxRetries": 0}}}}}} in '
                     f"{agent_dir(home) / 'settings.json'} (Pi still retries such a turn "
                     "itself, briefly)")]

    def needed_variables(self, env: Mapping[str, str], home: Path, read: Reader) -> tuple[str, ...]:
        """The variables its models.json's providers read their keys from."""
        data = read(agent_dir(home, env) / "models.json")
        return key_names(data) if data is not None else ()

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        tokens, spend = transcripts.read_figures(transcript_path, b'"usage"', figures) or (None, ())
        return EndFacts(last_failure(transcripts.tail_entries(transcript_path)), tokens, spend)


HOST = Pi()
