"""The few small files `sidecar status --line` reads, read cheaply: standard library C parts
only (`_json` without the `re` that `json` imports, `_sha1` without `uuid`), and from
`.context` down without following any symlink.

It mirrors what the rest of sidecar keeps in richer modules (a record's id, `rules.
harness_id`; its state, `sessions/activity.py`; a duration in words, `base/words.span`);
tests hold each copy to its original.
"""

import _json
import os
import stat  # already loaded by os

CONTEXT = ".context"
MAX_FILE = 16 * 1024 * 1024
# rules.harness_id's namespace (a uuid5's), as bytes: a record's id without importing uuid.
NAMESPACE = bytes.fromhex("6f1c2a4e8d1b4c539a573e0f5b1d7c21")


class Unreadable(Exception):
    """A file the line needs cannot be read; the text says which, in a word or two."""


class _Decoding:
    """What `_json.make_scanner` reads its settings from (json.JSONDecoder has the same)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict[str, str] = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        raise ValueError(f"{name} is not JSON")


_SCAN = _json.make_scanner(_Decoding())  # type: ignore[arg-type]  # it reads only these
_SPACE = " \t\n\r"


def loads(text: str) -> object:
    """JSON text as Python values; ValueError if it is not JSON."""
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        value, end = _SCAN(text, start)
    except (StopIteration, SystemError):  # the C scanner, called bare, says "not here" so
        raise ValueError("not JSON") from None
    finally:
        _Decoding.memo.clear()
    if text[end:].strip(_SPACE):
        raise ValueError("extra data after the JSON value")
    return value


def harness_id(host: str, session_id: str) -> str:
    """rules.harness_id, the same uuid5, computed here without importing uuid."""
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]
    except ImportError:  # an interpreter built without it
        from hashlib import sha1
    digest = bytearray(sha1(NAMESPACE + f"{host}\0{session_id}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def read_json(root: str, *names: str) -> object:
    """root/.context/<names...> as JSON, no symlink followed from `.context` down; None if it
    does not exist, Unreadable if it cannot be read, is not JSON, or is no regular file of
    one link (a FIFO would block the bar's every refresh; a hard link is some other file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fds = []
    try:
        fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        for name in (CONTEXT, *names[:-1]):
            fds.append(os.open(name, flags | os.O_DIRECTORY, dir_fd=fds[-1]))
        fds.append(os.open(names[-1], flags, dir_fd=fds[-1]))
        st = os.fstat(fds[-1])
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OSError(f"{names[-1]} is not a regular file of one link")
        data = os.read(fds[-1], MAX_FILE + 1)
    except FileNotFoundError:
        return None
    except OSError:
        raise Unreadable(f"{names[-1]} unreadable") from None
    finally:
        for fd in fds:
            os.close(fd)
    try:
        if len(data) > MAX_FILE:
            raise ValueError("too large")
        return loads(data.decode("utf-8"))
    except ValueError:
        raise Unreadable(f"{names[-1]} unreadable") from None


def parse_ts(value: object) -> float | None:
    """timeutil.parse_ts: epoch seconds from a number or RFC 3339 text. sidecar's own form
    (2026-11-29T07:25:57.336Z) is read by hand: the datetime module costs a status line more
    than the reading."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) >= 20 and text[-1] == "Z" and text[4] == "-" and text[10] == "T" \
            and text[19] in ".Z" and text[:19].replace("-", "").replace(":", "")[:8].isdigit():
        try:
            whole = _days(int(text[:4]), int(text[5:7]), int(text[8:10])) * 86400 \
                + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
            return whole + (float("0" + text[19:-1]) if text[19] == "." else 0.0)
        except ValueError:
            pass
    return _parse_other(text)


def _days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's)."""
    if not (1 <= month <= 12 and 1 <= day <= 31):
        raise ValueError("not a date")
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _parse_other(text: str) -> float | None:
    from datetime import UTC, datetime  # any other RFC 3339 form: rare, so imported only then

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def span(seconds: float) -> str:
    """base/words.span's words (12 s, 3 min, 2 h 5 min, 4 days), kept here for speed."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        hours, minutes = divmod(int(seconds // 60), 60)
        return f"{hours} h" + (f" {minutes} min" if minutes and hours < 10 else "")
    days = int(seconds // 86400)
    return f"{days} day{'s' if days != 1 else ''}"


def obj(value: object) -> dict:  # type: ignore[type-arg]
    return value if isinstance(value, dict) else {}


# -- one session's state, as sessions/activity.py infers it from the record -----------------

def state(record: dict) -> tuple[str, float | None, str]:  # type: ignore[type-arg]
    """(working / waiting / idle / limited / ended, since when, a detail): activity.of's
    states from the raw record."""
    meta = obj(obj(record.get("metadata")).get("sidecar"))
    if record.get("status") == "completed":
        return "ended", parse_ts(record.get("completedAt")), ""
    limit, asked = obj(meta.get("limit")), obj(meta.get("needsInput"))
    if isinstance(limit.get("since"), str):
        return "limited", parse_ts(limit["since"]), ""
    if isinstance(asked.get("since"), str):
        return "waiting", parse_ts(asked["since"]), ""
    updated = record.get("updatedAt")
    if meta.get("turnOpen") is True:
        tool = meta.get("lastTool")
        return "working", parse_ts(meta.get("turnStartedAt") or updated), \
            tool if isinstance(tool, str) else ""
    return "idle", parse_ts(meta.get("userTurnEndedAt") or updated), ""


WORDS = {"working": "working", "waiting": "waiting for you", "idle": "idle",
         "limited": "usage limit", "ended": "ended"}


def describe(record: dict, now: float) -> str:  # type: ignore[type-arg]
    name, since, detail = state(record)
    text = WORDS[name]
    if since is not None:
        text += f" {span(now - since)} ago" if name == "ended" else f" {span(now - since)}"
    return f"{text} ({detail[:20]})" if detail else text


def next_follow_up(hooks: object, host: str, session_id: str, now: float) -> str:
    """The session's soonest follow-up: `post-task in 8 s`, `post-task running`; '' if none."""
    best: tuple[float, str] | None = None
    for entry in obj(hooks).get("pending") or ():
        if not isinstance(entry, dict) or entry.get("sessionId") != session_id \
                or entry.get("host") != host:
            continue
        name = str(entry.get("hookId") or "follow-up")[:24]
        if entry.get("run") is not None or entry.get("claimedBy"):
            return f"{name} running"
        due = parse_ts(entry.get("dueAt"))
        due = now if due is None else due
        if best is None or due < best[0]:
            best = (due, name)
    if best is None:
        return ""
    return f"{best[1]} due now" if best[0] <= now + 0.5 else f"{best[1]} in {span(best[0] - now)}"
