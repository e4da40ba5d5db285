"""The ids of a session's trace, derived from the session alone.

A session's trace id and its root span's id are hashes of its harness id, and every other span's
id a hash of the harness id and what makes that span one of a kind (a turn's start, a firing's
hook and start). So any instance, a daemon restarted, and a conversation resumed a week later all
put their spans into the same trace, under the same root, and a span sent twice (a batch replayed
after a crash) keeps its id.
"""

from __future__ import annotations

from hashlib import sha256


def _digest(*parts: str) -> bytes:
    return sha256("\0".join(("sidecar", *parts)).encode()).digest()


def trace_id(harness_id: str) -> int:
    """The session's trace: 128 bits, never zero (an invalid id)."""
    return int.from_bytes(_digest("trace", harness_id)[:16], "big") or 1


def span_id(harness_id: str, *what: str) -> int:
    """A span of the session's trace (`what` empty: its root): 64 bits, never zero."""
    return int.from_bytes(_digest("span", harness_id, *what)[:8], "big") or 1
