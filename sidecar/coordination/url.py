"""A coordination URL as it may be shown: its password (and a user's name) never are."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

SECRET_ARGUMENTS = ("password", "username")  # redis-py reads both from the query too


def masked(url: str) -> str:
    """`redis://:secret@host:6379/0` -> `redis://:***@host:6379/0` (and `?password=` too); a
    URL that cannot be parsed is shown by its scheme alone."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url.split("://", 1)[0] + "://…"
    query = parts.query
    arguments = parse_qsl(query, keep_blank_values=True)
    if any(name in SECRET_ARGUMENTS for name, _ in arguments):
        query = urlencode([(n, "***" if n in SECRET_ARGUMENTS else v) for n, v in arguments], safe="*/")
    netloc = parts.netloc
    if parts.password is not None or parts.username is not None:
        netloc = f"[{host}]" if ":" in host else host
        if port is not None:
            netloc += f":{port}"
        netloc = f"{'***' if parts.username else ''}:***@{netloc}"
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def scrub(text: str, url: str) -> str:
    """`text` (an error's words) with the URL's password and user replaced, wherever they
    appear in it."""
    try:
        parts = urlsplit(url)
        secrets = [s for s in (parts.password, parts.username) if s]
        secrets += [v for n, v in parse_qsl(parts.query) if n in SECRET_ARGUMENTS and v]
    except ValueError:
        return text
    for secret in secrets:
        text = text.replace(secret, "***")
    return text.replace(url, masked(url))
