"""`sidecar integrate opencode`: a small plugin that drops opencode's session events.

opencode has no hook commands, only plugins that run inside it; the plugin (`plugin.js`,
shipped with the package beside this module) writes events straight into the inbox. It is
installed into the project's `.opencode/plugins/` (it holds no machine-specific path, so a
project may commit it) or, with `--user`, into the user's opencode plugin folder. The plugin
names its events by sidecar's own kinds (`session-start`, `turn-end`, ...).

opencode 1.18.33 keeps each session's token totals in its SQLite database
(`~/.local/share/opencode/opencode.db`, read only), and each assistant message's tokens, model
and its own price of them (`cost`, US dollars) in the same database's `message` table.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import MappingProxyType

import orjson

from sidecar.hosts import transcripts
from sidecar.hosts.base import EndFacts, Host, Scope, Tokens, Use, count, spend_by_day
from sidecar.hosts.files import plugin_file
from sidecar.vocabulary import EventKind

FILE_NAME = "sidecar.js"
# The plugin names its host in two places, filled in when the file is made: its mark (the
# first line) and the host its events are written as. opencode's forks (Kilo Code) load the
# same plugin, so one source serves them all.
HOST_NAME = b"@HOST@"


def mark(host: str = "opencode") -> str:
    return f"// sidecar: {host}'s session events into the workspace's inbox."


def plugin_source(host: str = "opencode") -> bytes:
    return plugin_file.source(Path(__file__).parent / "plugin.js").replace(HOST_NAME, host.encode())


def project_plugin(root: Path, folder: str = "opencode") -> Path:
    return root / f".{folder}" / "plugins" / FILE_NAME


def user_plugin(home: Path, folder: str = "opencode") -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / folder / "plugins" / FILE_NAME


def database(folder: str = "opencode") -> str:
    """Where the host keeps its sessions: `<data>/<folder>/<folder>.db` (opencode's and Kilo
    Code's release builds alike)."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, folder, f"{folder}.db")


def figures(db: str, session_id: str) -> EndFacts:
    """The session's totals in opencode's SQLite database, and its assistant messages'
    figures by the model each names (`modelID`) and the local day it began, at opencode's own
    price of each (`cost`, US dollars, from its model catalogue or opencode.json). The
    database is opened read only, and only if it is a regular file that the reader of
    transcripts (a root daemon's: the workspace's owner) may read. SQLite opens it again by
    its path, which is the daemon's own home's, never an event's."""
    import sqlite3
    from contextlib import closing

    if not session_id:
        return EndFacts()
    try:
        os.close(transcripts.open_regular(db))
    except transcripts.Unreadable:
        return EndFacts()
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)) as con:
            row = con.execute("SELECT tokens_input, tokens_output, tokens_reasoning, "
                              "tokens_cache_read, tokens_cache_write FROM session WHERE id = ?",
                              (session_id,)).fetchone()
            if row is None:
                return EndFacts()
            try:
                messages = con.execute("SELECT time_created, data FROM message WHERE "
                                       "session_id = ? ORDER BY time_created, id", (session_id,))
                uses = [use for created, data in messages if (use := _use(created, data)) is not None]
            except sqlite3.Error:
                uses = []  # a database of another shape: the totals alone
    except sqlite3.Error:
        return EndFacts()
    tin, tout, reasoning, cache_read, cache_write = (count(v) for v in row)
    return EndFacts(tokens=Tokens(input=tin, output=tout + reasoning, cache_read=cache_read,
                                  cache_write=cache_write), spend=spend_by_day(uses))


def _use(created: object, data: object) -> Use | None:
    """An assistant message's figures, from its row: when it began (milliseconds) and its
    `data` (reasoning counts as output, as in the session's totals)."""
    try:
        message = orjson.loads(data) if isinstance(data, str | bytes) else None
    except orjson.JSONDecodeError:
        return None
    tokens = message.get("tokens") if isinstance(message, dict) else None
    if not isinstance(message, dict) or message.get("role") != "assistant" or not isinstance(tokens, dict):
        return None
    cache, model = tokens.get("cache"), message.get("modelID")
    cache = cache if isinstance(cache, dict) else {}
    return Use(model if isinstance(model, str) and model else None,
               created / 1000 if isinstance(created, int) else None,
               Tokens(count(tokens.get("input")),
                      count(tokens.get("output")) + count(tokens.get("reasoning")),
                      count(cache.get("read")), count(cache.get("write"))),
               _dollars(message.get("cost")))


def _dollars(value: object) -> float | None:
    """opencode's own price as it wrote it: a finite number of US dollars, not below 0 (else none)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        and 0 <= value < float("inf") else None


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
    key_variables: tuple[str, ...] = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENCODE_CONFIG")
    scopes = (Scope(None),
              Scope("--user", "The user's opencode plugin folder (every project).",
                    in_project=False))
    integrate_help = "A plugin that drops opencode's session events into the inbox."
    calls_sidecar = False  # the plugin writes into the inbox itself
    # Its ids: "ses_", 12 hex digits of time, 14 of base62 (seen up to 1.18).
    id_shape = (re.compile(r"ses_[0-9A-Za-z]{20,40}"), "ses_ and 26 letters or digits")

    # Its folders: `.<folder>/` in a project, `<folder>/` in the user's config and data
    # folders, and its database `<folder>.db` there (a fork keeps the layout under its name).
    folder = "opencode"

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        return project_plugin(root, self.folder) if scope.in_project and root is not None \
            else user_plugin(home, self.folder)

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        return plugin_file.install(place, plugin_source(self.name), mark(self.name), uninstall)

    def integrated(self, root: Path | None, home: Path) -> bool:
        ours = mark(self.name)
        return plugin_file.is_ours(user_plugin(home, self.folder), ours) or (
            root is not None and plugin_file.is_ours(project_plugin(root, self.folder), ours))

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        return figures(database(self.folder), session_id)


HOST = Opencode()
