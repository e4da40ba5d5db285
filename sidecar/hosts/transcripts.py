"""What the daemon reads from a host's own transcript: a turn that failed on a usage limit
(where the host sends no hook for it) and the session's token counts.

Transcripts belong to the hosts; they are read, never written, only if they are regular
files, and only their last MAX_TAIL bytes for a failure. An event names the path, so it is
untrusted: every read stops at a hard cap whatever the file's size says (/proc/self/pagemap
says 0 and never ends), and the token figures are streamed a line at a time, never kept. A
transcript that is missing, unreadable or too large gives nothing: the figures are left out,
never the event.

- Codex 0.169.0 sends no hook when the API refuses a turn on a usage limit; its rollout file
  (`transcript_path`) ends that turn with an `event_msg` `task_complete` whose `error` has
  `codex_error_info: "usage_limit_exceeded"` and the text it prints ("... try again at
  6:16 AM."). Its token figures are `token_count` events (`info.total_token_usage`).
- Gemini CLI 0.61.0 writes each model message with its `tokens`; opencode 1.18.33 keeps a
  session's totals in its SQLite database (`~/.local/share/opencode/opencode.db`).
- Claude Code 2.1.328 writes each assistant message with the API's `usage` (input, output,
  cache creation, cache read); a message is written once per content block, with the same
  `message.id`, so each id is counted once. A refused turn is an assistant entry with
  `isApiErrorMessage: true`, `error: "rate_limit"` and the API's text; its StopFailure hook
  is not waited for, so a `claude -p` that exits at once can end before it is delivered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

MAX_TAIL = 256 * 1024  # bytes read from a transcript's end to find how its last turn ended
MAX_TRANSCRIPT = 64 * 1024 * 1024  # larger transcripts are not read for token figures
MAX_LINE = 8 * 1024 * 1024  # a longer line is skipped: it is never one that holds figures
CHUNK = 1 << 20
CODEX_LIMIT_ERRORS = {"usage_limit_exceeded": "usage_limit"}


@dataclass(frozen=True)
class Failure:
    kind: str  # the canonical error kind (see vocabulary.LIMIT_ERRORS)
    message: str


@dataclass(frozen=True)
class Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def to_json(self) -> dict[str, int]:
        return {"input": self.input, "output": self.output, "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write}


class Unreadable(Exception):
    """The transcript gives nothing: missing, not a regular file, unreadable or too large."""


def _open(path: str) -> int:
    """A descriptor of the regular file at `path` (a FIFO is never opened for a read that
    could wait); Unreadable otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(str(exc)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _tail(path: str) -> bytes:
    """The file's last MAX_TAIL bytes, or its first ones if its size is untrue: a file such
    as /proc/self/pagemap says 0 and never ends, so the read stops at MAX_TAIL whatever
    `st_size` says."""
    fd = _open(path)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_TAIL:
            os.lseek(fd, size - MAX_TAIL, os.SEEK_SET)
        chunks: list[bytes] = []
        left = MAX_TAIL
        while left and (chunk := os.read(fd, min(left, CHUNK))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise Unreadable(str(exc)) from None
    finally:
        os.close(fd)


def _blocks(fd: int) -> Iterator[bytes]:
    """The file's whole lines, a block of them per CHUNK read, never more than MAX_TRANSCRIPT
    bytes in all (Unreadable past that, whatever `st_size` said). A line over MAX_LINE is
    skipped, so at most about MAX_LINE + CHUNK bytes are held at once."""
    read = 0
    rest = b""
    overlong = False  # inside a line too long to keep: skipped up to its end
    while chunk := os.read(fd, CHUNK):
        read += len(chunk)
        if read > MAX_TRANSCRIPT:
            raise Unreadable(f"more than {MAX_TRANSCRIPT} bytes")
        start = 0
        if overlong:
            start = chunk.find(b"\n") + 1
            if not start:
                continue  # the skipped line goes on
            overlong = False
        buffer = rest + chunk[start:] if rest else chunk[start:]
        cut = buffer.rfind(b"\n")
        if cut >= 0:
            yield buffer[:cut]
        rest = buffer[cut + 1:]
        if len(rest) > MAX_LINE:
            rest, overlong = b"", True
    if rest and not overlong:
        yield rest


def _entries(path: str, needle: bytes) -> Iterator[dict[str, Any]]:
    """The transcript's JSON objects on lines that hold `needle`, one at a time: none is kept
    here, and a line without the needle is not even parsed."""
    fd = _open(path)
    try:
        if os.fstat(fd).st_size > MAX_TRANSCRIPT:
            raise Unreadable(f"more than {MAX_TRANSCRIPT} bytes")
        for block in _blocks(fd):
            if needle not in block:
                continue  # most blocks: not split, not parsed
            for line in block.split(b"\n"):
                if needle in line and isinstance(entry := _parse(line), dict):
                    yield entry
    except OSError as exc:
        raise Unreadable(str(exc)) from None
    finally:
        os.close(fd)


def _parse(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except ValueError:
        return None  # a line cut by the tail's start, or torn by a crash


def _lines(data: bytes) -> list[Any]:
    return [entry for line in data.splitlines() if (entry := _parse(line)) is not None]


def last_turn_failure(host: str, path: str | None) -> Failure | None:
    """How the transcript's last turn failed, if it did: Codex says so only there, and
    Claude Code's StopFailure hook can be cut off when the process exits at once."""
    if host not in ("codex", "claude-code") or not path:
        return None
    try:
        data = _tail(path)
    except Unreadable:
        return None
    entries = [e for e in _lines(data) if isinstance(e, dict)]
    return _codex_failure(entries) if host == "codex" else _claude_failure(entries)


def _claude_failure(entries: list[dict[str, Any]]) -> Failure | None:
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


def _codex_failure(entries: list[dict[str, Any]]) -> Failure | None:
    """The last `task_complete`, if it ended with an error."""
    for entry in reversed(entries):
        payload = entry.get("payload") if isinstance(entry, dict) else None
        if not isinstance(payload, dict) or payload.get("type") != "task_complete":
            continue
        error = payload.get("error")
        if not isinstance(error, dict):
            return None  # the last turn completed
        kind = CODEX_LIMIT_ERRORS.get(str(error.get("codex_error_info")))
        message = error.get("message")
        return Failure(kind or str(error.get("codex_error_info") or "unknown"),
                       message if isinstance(message, str) else "")
    return None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def token_totals(host: str, path: str | None, session_id: str = "") -> Tokens | None:
    """The session's token figures from its transcript (opencode: its database); None
    where they cannot be read."""
    if host == "opencode":
        return _opencode_tokens(opencode_db(), session_id)
    if not path or host not in READERS:
        return None
    reader, needle = READERS[host]
    try:
        return reader(_entries(path, needle))
    except Unreadable:
        return None


def _claude_tokens(entries: Iterable[dict[str, Any]]) -> Tokens | None:
    seen: set[str] = set()
    totals = [0, 0, 0, 0]
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        key = str(message.get("id") or entry.get("uuid"))
        if not isinstance(usage, dict) or key in seen:
            continue
        seen.add(key)
        for i, name in enumerate(("input_tokens", "output_tokens", "cache_read_input_tokens",
                                  "cache_creation_input_tokens")):
            totals[i] += _count(usage.get(name))
    return Tokens(*totals) if seen else None


def _codex_tokens(entries: Iterable[dict[str, Any]]) -> Tokens | None:
    last = None
    for entry in entries:
        payload = entry.get("payload")
        if isinstance(payload, dict) and payload.get("type") == "token_count":
            info = payload.get("info")
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                last = info["total_token_usage"]  # running totals: the last one is the session's
    if last is None:
        return None
    cached = _count(last.get("cached_input_tokens"))
    return Tokens(input=max(0, _count(last.get("input_tokens")) - cached),
                  output=_count(last.get("output_tokens")), cache_read=cached)


def _gemini_tokens(entries: Iterable[dict[str, Any]]) -> Tokens | None:
    """Gemini CLI writes each message as a line, and rewrites the list in `$set` lines: each
    message id counts once. `input` includes the cached part; thoughts are output."""
    messages: dict[str, dict[str, Any]] = {}
    for entry in entries:
        found = entry.get("$set", {}).get("messages") if isinstance(entry.get("$set"), dict) \
            else [entry]
        for message in found if isinstance(found, list) else []:
            if isinstance(message, dict) and message.get("type") == "gemini" \
                    and isinstance(message.get("tokens"), dict):
                messages[str(message.get("id"))] = message["tokens"]
    if not messages:
        return None
    t = {k: sum(_count(m.get(k)) for m in messages.values())
         for k in ("input", "output", "cached", "thoughts")}
    return Tokens(input=max(0, t["input"] - t["cached"]), output=t["output"] + t["thoughts"],
                  cache_read=t["cached"])


# Each host's reader, and the bytes a line must hold to carry figures for it.
READERS: dict[str, tuple[Callable[[Iterable[dict[str, Any]]], Tokens | None], bytes]] = {
    "claude-code": (_claude_tokens, b'"usage"'), "codex": (_codex_tokens, b'"token_count"'),
    "gemini": (_gemini_tokens, b'"tokens"')}


def opencode_db() -> str:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                          "share")
    return os.path.join(data, "opencode", "opencode.db")


def _opencode_tokens(db: str, session_id: str) -> Tokens | None:
    """opencode 1.18.33 keeps each session's totals in its SQLite database, read only."""
    import sqlite3
    from contextlib import closing

    if not session_id or not os.path.isfile(db):
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
    tin, tout, reasoning, cache_read, cache_write = (_count(v) for v in row)
    return Tokens(input=tin, output=tout + reasoning, cache_read=cache_read,
                  cache_write=cache_write)
