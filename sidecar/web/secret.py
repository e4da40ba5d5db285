"""The web view's token: random, kept in the user's config folder as `web-token` (0600), and
the CSRF token derived from it for one process.

The file is made with O_CREAT|O_EXCL|O_NOFOLLOW, so a link or file planted in its place is
never written through, and read with O_NOFOLLOW from a regular file of this user that no one
else may read: anything else is refused, never used.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from sidecar import layout
from sidecar.base.errors import SidecarError

FILE_NAME = "web-token"
TOKEN_FORM = re.compile(r"[A-Za-z0-9_-]{32,128}")
MAX_BYTES = 4096


class TokenError(SidecarError):
    """The token file cannot be made or is not one to trust; the message says why."""


@dataclass(frozen=True)
class Token:
    value: str
    created: bool  # made by this start: the only time it is shown unasked


def token_path() -> Path:
    return layout.config_home() / FILE_NAME


def ensure_token(path: Path | None = None) -> Token:
    """The token, made on first use."""
    path = path or token_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return Token(read_token(path), created=False)
    except OSError as exc:
        raise TokenError(f"cannot make {path}: {exc.strerror}") from None
    value = secrets.token_urlsafe(32)
    try:
        os.write(fd, value.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return Token(value, created=True)


def read_token(path: Path | None = None) -> str:
    path = path or token_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TokenError(f"cannot read {path} ({exc.strerror}); if it is not yours, remove it "
                         "and start again for a new token") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise TokenError(f"{path} is not a file of yours that only you can read; remove it "
                             "and start again for a new token")
        data = os.read(fd, MAX_BYTES)
    finally:
        os.close(fd)
    value = data.decode("ascii", "replace").strip()
    if not TOKEN_FORM.fullmatch(value):
        raise TokenError(f"{path} holds no token; remove it and start again for a new one")
    return value


def csrf_for(token: str, process_key: bytes) -> str:
    """The CSRF token the page sends back with each POST: an HMAC of the auth token under a key
    this process drew, so it changes with every start and never reveals the token."""
    return hmac.new(process_key, token.encode(), hashlib.sha256).hexdigest()


def same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
