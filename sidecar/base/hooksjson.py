"""hooks.json as raw JSON, for its one typed reader (followups/model.py) and for `status`'s
view (views/status.py): the document's outer shape, `delayMinutes` migrated to
`delaySeconds`, and whether a document is plainly valid, in the shapes sidecar writes.

`plainly_valid` is a cheap proof, never a verdict: what it accepts the model accepts too
(tests/unit/test_hooks_raw.py holds it to that); whatever it does not, the model judges. A
copy in hooks.last-good.json proves nothing: a user can copy a broken file over it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    Fail = Callable[[str, str], NoReturn]

VERSION = 1
MAX_DELAY = 86400
DEFAULT_DELAY = 10
HISTORY_LIMIT = 200
# The events a hook that is no notify hook listens for as it stands (model.HOOK_EVENTS less
# those only a notify hook takes; test_hooks_raw.py checks them against the model).
PLAIN_EVENTS = frozenset(("session-start", "session-end", "session-reset", "turn-start",
                          "turn-end", "turn-failed", "tool-use", "needs-input"))
FLAGS = ("enabled", "skipCron", "skipSubagents", "alsoInterrupted", "againAfterUserTurn", "alsoFollowUps")
HOOK_ID_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
HOOK_ID_REST = HOOK_ID_FIRST | {"."}


def without_bom(data: bytes) -> bytes:
    return data.removeprefix(b"\xef\xbb\xbf")


def outer(data: Any, fail: Fail) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """The document's hooks by id, its queue and the keys sidecar does not know; `fail`
    (path, why) for a document of any other shape."""
    if not isinstance(data, dict):
        fail("$", "must be an object with `hooks` and `pending`")
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        fail("$.version", f"must be a whole number, not {version!r}")
    if version > VERSION:
        fail("$.version", f"{version} is from a newer sidecar (this one reads up to {VERSION})")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        fail("$.hooks", "must be an object of hooks by id")
    pending = data.get("pending", [])
    if not isinstance(pending, list):
        fail("$.pending", "must be a list")
    return hooks, pending, {k: v for k, v in data.items() if k not in ("version", "hooks", "pending")}


def migrate_delay_minutes(raw: Any, path: str, fail: Fail) -> Any:
    """Files from before versions kept `delayMinutes`: nothing configured may be lost."""
    if not isinstance(raw, dict) or "delayMinutes" not in raw:
        return raw
    raw = dict(raw)
    minutes = raw.pop("delayMinutes")
    if "delaySeconds" not in raw:
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
            fail(f"{path}.delayMinutes", f"must be a number, not {minutes!r}")
        raw["delaySeconds"] = int(round(minutes * 60))
    return raw


# -- a cheap proof of validity --------------------------------------------------------------


class _NotPlain(Exception):
    pass


def _not_plain(path: str, why: str) -> NoReturn:
    raise _NotPlain(path)


def plain_doc(data: Any) -> tuple[dict[str, Any], list[Any]] | None:
    """The hooks (migrated) and the queue of a document that is plainly valid; None for any
    other (the model says what it makes of it)."""
    try:
        hooks, pending, _ = outer(data, _not_plain)
        hooks = {key: migrate_delay_minutes(raw, "", _not_plain) for key, raw in hooks.items()}
    except _NotPlain:
        return None
    if all(plain_hook(key, raw) for key, raw in hooks.items()) and all(map(plain_entry, pending)):
        return hooks, pending
    return None


def _whole(value: object, low: int, high: int | None = None) -> bool:
    return type(value) is int and value >= low and (high is None or value <= high)


def plain_hook(key: str, raw: object) -> bool:
    """A hook the model certainly reads, and reads as its raw form says: no notify action (its
    target is the model's to check), every field absent or of the type sidecar writes."""
    if not isinstance(raw, dict) or raw.get("id") != key or not _hook_id(key):
        return False
    get = raw.get
    name, action, prompt, reasons = get("name"), get("action", "resume"), get("promptFile"), get("reasons")
    event = get("event", "session-end")  # (a list or an object is no event: unhashable too)
    return (type(name) is str and name != "" and type(event) is str and event in PLAIN_EVENTS
            and (action == "resume" or (type(action) is list and action != []
                                        and all(type(a) is str for a in action) and action[0] != ""))
            and _whole(get("delaySeconds", DEFAULT_DELAY), 0, MAX_DELAY) and _whole(get("maxContextK", 0), 0)
            and all(type(get(flag, True)) is bool for flag in FLAGS)
            and (prompt is None or _prompt_file(prompt))
            and (reasons is None or (type(reasons) is list
                                     and all(type(r) is str and r != "" for r in reasons)))
            and type(get("history", [])) is list)


def _hook_id(key: str) -> bool:
    """layout.HOOK_NAME: one plain name of at most 64 characters."""
    return 0 < len(key) <= 64 and key[0] in HOOK_ID_FIRST and HOOK_ID_REST.issuperset(key)


def _prompt_file(value: object) -> bool:
    """model.PROMPT_FILE: a .md file directly under hooks/."""
    return (type(value) is str and value.startswith("hooks/") and value.endswith(".md")
            and len(value) > len("hooks/.md") and ".." not in value
            and "/" not in value[len("hooks/"):] and "\\" not in value)


def plain_entry(entry: object) -> bool:
    """A queue entry the model certainly reads."""
    if not isinstance(entry, dict):
        return False
    get = entry.get
    key, claimed, run = get("id"), get("claimedBy"), get("run")
    return (type(get("hookId")) is str and type(get("host")) is str and type(get("sessionId")) is str
            and (key is None or (type(key) is str and key != ""))
            and (claimed is None or type(claimed) is str)
            and (run is None or (isinstance(run, dict) and type(run.get("pid")) is int
                                 and isinstance(run.get("log"), str))))
