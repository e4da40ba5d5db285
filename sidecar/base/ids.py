"""The ids sidecar derives: a host session's harness session id, and each trace line's.

Both are uuid5s in one namespace, computed from the SHA-1 directly (the same text as
`str(uuid.uuid5(uuid.UUID(NAMESPACE), name))`; a batch stamps every trace line with one, and
building UUID objects for them cost more than the hashing). Neither uuid nor hashlib is
imported: the status line derives a record's id on every refresh of a status bar, and those
imports cost it more than the rest of its work.
"""

from __future__ import annotations

try:
    from _sha1 import sha1  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # an interpreter built without it
    from hashlib import sha1

NAMESPACE = "6f1c2a4e-8d1b-4c53-9a57-3e0f5b1d7c21"
_NAMESPACE_BYTES = bytes.fromhex(NAMESPACE.replace("-", ""))


def harness_id(host: str, session_id: str) -> str:
    """A host session's harness session id when no binding names one: stable for life."""
    return uuid5(f"{host}\0{session_id}")


def uuid5(name: str) -> str:
    """str(uuid.uuid5(uuid.UUID(NAMESPACE), name)), without the UUID objects."""
    digest = bytearray(sha1(_NAMESPACE_BYTES + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
