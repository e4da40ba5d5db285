"""`sidecar integrate opencode`: a small plugin that drops opencode's session events.

opencode has no hook commands, only plugins that run inside it; the plugin (`plugin.js`,
shipped with the package beside this module) writes events straight into the inbox. It is
installed into the project's `.opencode/plugins/` (it holds no machine-specific path, so a
project may commit it) or, with `--user`, into the user's opencode plugin folder. The plugin
names its events by sidecar's own kinds (`session-start`, `turn-end`, ...).

opencode 1.18.33 keeps each session's token totals in its SQLite database
(`~/.local/share/opencode/opencode.db`), read only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import MappingProxyType

from sidecar.hosts import transcripts
from sidecar.hosts.base import EndFacts, Host, Scope, Tokens, count
from sidecar.hosts.files import plugin_file
from sidecar.vocabulary import EventKind

FILE_NAME = "sidecar.js"
MARK = "// sidecar: opencode's session events into the workspace's inbox."


def plugin_source() -> bytes:
    return plugin_file.source(Path(__file__).parent / "plugin.js")


def project_plugin(root: Path) -> Path:
    return root / ".opencode" / "plugins" / FILE_NAME


def user_plugin(home: Path) -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "opencode" / "plugins" / FILE_NAME


def database() -> str:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "opencode", "opencode.db")


def tokens(db: str, session_id: str) -> Tokens | None:
    """The session's totals in opencode's SQLite database, opened read only, and only if it
    is a regular file that the reader of transcripts (a root daemon's: the workspace's
    owner) may read. SQLite opens it again by its path, which is the daemon's own home's,
    never an event's."""
    import sqlite3
    from contextlib import closing

    if not session_id:
        return None
    try:
        os.close(transcripts.open_regular(db))
    except transcripts.Unreadable:
        return None
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)) as con:
            row = con.execute("SELECT tokens_input, tokens_output, tokens_reasoning, "
                              "tokens_cache_read, tokens_cache_write FROM session WHERE id = ?",
                              (session_id,)).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    tin, tout, reasoning, cache_read, cache_write = (count(v) for v in row)
    return Tokens(input=tin, output=tout + reasoning, cache_read=cache_read, cache_write=cache_write)


class Opencode(Host):
    name = "opencode"
    title = "opencode"
    executable = "opencode"
    # Its plugin names its events by sidecar's own kinds.
    events = MappingProxyType({kind.value: kind for kind in (
        EventKind.SESSION_START, EventKind.SESSION_END, EventKind.TURN_START, EventKind.TURN_END,
        EventKind.TURN_FAILED, EventKind.TOOL_USE, EventKind.NEEDS_INPUT)})
    # opencode re-quotes an argument holding a space: the prompt goes on standard input.
    resume = ("opencode", "run", "--session", "{session_id}", "<{prompt}")
    key_variables = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENCODE_CONFIG")
    scopes = (Scope(None),
              Scope("--user", "The user's opencode plugin folder (every project).",
                    in_project=False))
    integrate_help = "A plugin that drops opencode's session events into the inbox."
    calls_sidecar = False  # the plugin writes into the inbox itself
    # Its ids: "ses_", 12 hex digits of time, 14 of base62 (seen up to 1.18).
    id_shape = (re.compile(r"ses_[0-9A-Za-z]{20,40}"), "ses_ and 26 letters or digits")

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return project_plugin(root) if scope.in_project and root is not None else user_plugin(home)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        return plugin_file.install(place, plugin_source(), MARK, uninstall)

    def integrated(self, root: Path | None, home: Path) -> bool:
        return plugin_file.is_ours(user_plugin(home), MARK) or (
            root is not None and plugin_file.is_ours(project_plugin(root), MARK))

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        return EndFacts(tokens=tokens(database(), session_id))


HOST = Opencode()
