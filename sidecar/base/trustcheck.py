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
# A workspace's copy of one of the user's global hooks (followups/globalhooks.py) is named
# for it; it is trusted as the global hook is, by its definition alone, in the trust file's
# `global` section, never by anything the workspace holds.
GLOBAL_PREFIX = "global."
GLOBAL_PLACE = "(global hooks)"  # no workspace's place: a real path begins with /


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


def global_id(hook_id: str) -> str | None:
    """The global hook a workspace's hook is a copy of (None: it is the workspace's own)."""
    return hook_id[len(GLOBAL_PREFIX):] if hook_id.startswith(GLOBAL_PREFIX) else None


def global_digest(definition: dict[str, Any], global_hook_id: str) -> str:
    """The digest a global hook is trusted by: its definition under its own id (a copy's
    definition, its id taken back), in no workspace, with no prompt."""
    return digest(GLOBAL_PLACE, GLOBAL_PLACE, {**definition, "id": global_hook_id}, None)


def global_section(doc: Any) -> dict[str, list[dict[str, Any]]]:
    """The approvals of the user's global hooks in a parsed trust file, by global hook id."""
    if not isinstance(doc, dict) or doc.get("version") != TRUST_VERSION:
        return {}
    found = doc.get("global")
    hooks = found.get("hooks") if isinstance(found, dict) else None
    if not isinstance(hooks, dict):
        return {}
    return {k: [e for e in v if isinstance(e, dict)] for k, v in hooks.items() if isinstance(v, list)}


def with_global(given: dict[str, list[dict[str, Any]]], doc: Any) -> dict[str, list[dict[str, Any]]]:
    """A workspace's approvals, where its copies of global hooks count only as the global hooks
    were trusted (an approval a workspace's section holds for such a name counts for nothing)."""
    own = {k: v for k, v in given.items() if global_id(k) is None}
    return own | {GLOBAL_PREFIX + k: v for k, v in global_section(doc).items()}


def wanted_digest(hook_id: str, place: str, identity: str, definition: dict[str, Any],
                  prompt: bytes | None) -> str | None:
    """The digest that would prove a hook trusted: a copy of a global hook by the global
    digest (None for a copy with a prompt: no global hook has one), any other by its
    workspace's."""
    original = global_id(hook_id)
    if original is None:
        return digest(place, identity, definition, prompt)
    return None if prompt is not None else global_digest(definition, original)
