"""Whether a hook is trusted as it stands: the digest and the look-up that the daemon's firing
(followups/trust.py) and `status` (views/trusted.py) both make, with the standard
library alone (hashlib and json's C encoder: no orjson, pathlib or typing).

The digest is SHA-256 over one canonical JSON text: the workspace's real path, its id (the
random `workspace-id` file `init` writes, which git ignores and `init` moves aside where a
clone shipped one), the hook's definition (DEFINITION's keys, as hooks.json
spells them) and the SHA-256 of its prompt file's bytes (null without one).

The C parts are used directly: `json` imports `re` and `hashlib` loads OpenSSL, 9 ms together
on `status`'s common path, where `_json`'s encoder (json.dumps's own) and the built-in SHA-256
give the same bytes at a twentieth of that.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from hashlib import sha256
    from typing import Any
else:
    try:
        from _sha256 import sha256  # the interpreter's own: no OpenSSL to load
    except ImportError:
        try:  # Python 3.12 and later name it _sha2
            from _sha2 import sha256
        except ImportError:  # a build without its own SHA-2 (FIPS): OpenSSL's, the same digest
            from hashlib import sha256

TRUST_VERSION = 2  # 1 trusted a command's argv by the workspace's path alone: none of it counts
# What a hook does, as hooks.json spells it: every key but its name, record and history.
DEFINITION = ("id", "event", "delaySeconds", "promptFile", "action", "enabled", "skipCron",
              "skipSubagents", "maxContextK", "reasons", "alsoInterrupted",
              "againAfterUserTurn", "alsoFollowUps")
ID_FILE = "workspace-id"


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


# json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False), as json builds
# it, but for the check for cycles (None): JSON read from a file has none
_ENCODE = _json.make_encoder(None, _refuse, _json.encode_basestring, None, ":", ",", True, False, True)


def canonical(value: Any) -> bytes:
    """One text for one value: keys sorted, no spaces, UTF-8 as it is."""
    return "".join(_ENCODE(value, 0)).encode()


def sha(data: bytes) -> str:
    return sha256(data).hexdigest()


def definition_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The definition keys of a hook's JSON (as model.Hook.to_json writes it)."""
    return {key: doc[key] for key in DEFINITION if key in doc}


def digest(place: str, identity: str, definition: dict[str, Any], prompt: bytes | None) -> str:
    return sha(canonical([place, identity, definition, None if prompt is None else sha(prompt)]))


def identity_of(data: bytes | None) -> str | None:
    """The workspace's id from its `workspace-id` file's bytes; None for none or a bad one."""
    text = (data or b"").decode("ascii", "replace").strip()
    return text if 32 <= len(text) <= 128 and all(c in "0123456789abcdef" for c in text) else None


def section(doc: Any, place: str, identity: str | None) -> dict[str, list[dict[str, Any]]]:
    """One workspace's approvals in a parsed trust file, by hook id: none unless made for
    this identity, in this version."""
    if identity is None or not isinstance(doc, dict) or doc.get("version") != TRUST_VERSION:
        return {}
    workspaces = doc.get("workspaces")
    found = workspaces.get(place) if isinstance(workspaces, dict) else None
    if not isinstance(found, dict) or found.get("id") != identity or not isinstance(found.get("hooks"), dict):
        return {}
    return {k: [e for e in v if isinstance(e, dict)] for k, v in found["hooks"].items()
            if isinstance(v, list)}


def approved(given: dict[str, list[dict[str, Any]]], hook_id: str, want: str) -> bool:
    return any(e.get("digest") == want for e in given.get(hook_id, ()))
