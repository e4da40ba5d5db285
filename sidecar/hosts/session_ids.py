"""The shape of each host's session ids: a resume of an id the host could never have issued
(a hand test, a bad event) would spend a real run only to fail, so it is skipped instead."""

from __future__ import annotations

import re

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

SHAPES: dict[str, tuple[re.Pattern[str], str]] = {
    "claude-code": (_UUID, "a UUID"),
    "codex": (_UUID, "a UUID"),
    "gemini": (_UUID, "a UUID"),
    # opencode's ids: "ses_", 12 hex digits of time, 14 of base62 (seen up to 1.18).
    "opencode": (re.compile(r"ses_[0-9A-Za-z]{20,40}"), "ses_ and 26 letters or digits"),
}


def misfit(host: str, session_id: str) -> str | None:
    """Why `session_id` cannot be one of `host`'s; None if it can (or the host is unknown)."""
    shape = SHAPES.get(host)
    if shape is None or shape[0].fullmatch(session_id):
        return None
    return (f"session id {session_id[:60]!r} cannot be {host}'s (its ids are {shape[1]}); "
            "not resumed")
