"""A coordination URL as it may be shown: its password (and a user's name) never are."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def masked(url: str) -> str:
    """`redis://:secret@host:6379/0` -> `redis://:***@host:6379/0`; a URL that cannot be
    parsed is shown by its scheme alone."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url.split("://", 1)[0] + "://…"
    if parts.password is None and parts.username is None:
        return url
    where = f"[{host}]" if ":" in host else host
    if port is not None:
        where += f":{port}"
    user = "***" if parts.username else ""
    return urlunsplit((parts.scheme, f"{user}:***@{where}", parts.path, parts.query, ""))


def scrub(text: str, url: str) -> str:
    """`text` (an error's words) with the URL's password and user replaced, wherever they
    appear in it."""
    try:
        parts = urlsplit(url)
        secrets = [s for s in (parts.password, parts.username) if s]
    except ValueError:
        return text
    for secret in secrets:
        text = text.replace(secret, "***")
    return text.replace(url, masked(url))
