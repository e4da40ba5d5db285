"""A follow-up's outcome: how a firing ended (ok, an error, skipped), or what was noted of a
hook instead of a firing (postponed, cancelled by the user).

The code hands outcomes around as `Outcome` values; hooks.json's history, a hook's
`lastStatus`, notices and plugins keep them as the text people read ("ok", "error: exit
status 1", "skipped: ..."). This module is the one place that writes that text (`str`) and
reads it back (`Outcome.parse`). It stands on the ground floor, without enum or dataclasses
(they cost `status` milliseconds to import), so the views read an outcome by the same rule.
"""

from __future__ import annotations


class Kind:
    """The kinds of outcome, as the stored text begins."""

    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"
    POSTPONED = "postponed"  # not an end: a hook's last status while its entry waits again
    CANCELLED = "cancelled"  # by the user, before it fired (manual.py)
    OTHER = "other"  # text that says none of these (a hand edit): kept as it is


CANCELLED_TEXT = "cancelled by the user"
_WORDED = (Kind.ERROR, Kind.SKIPPED, Kind.POSTPONED)  # "<kind>: <detail>"


class Outcome:
    """One outcome: its kind and the words after it. Equal by both; immutable."""

    __slots__ = ("kind", "detail")
    kind: str
    detail: str

    def __init__(self, kind: str, detail: str = "") -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "detail", detail)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"an outcome is not changed ({name})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outcome) and (self.kind, self.detail) == (other.kind, other.detail)

    def __hash__(self) -> int:
        return hash((self.kind, self.detail))

    def __repr__(self) -> str:
        return f"Outcome({self.kind!r}, {self.detail!r})"

    @classmethod
    def parse(cls, text: str | None) -> Outcome:
        """The outcome a stored text says. A text is of the kind its first word names, as
        readers have always taken it ("error..." is an error); no text is one of OTHER."""
        text = text or ""
        if text == Kind.OK:
            return OK
        if text == CANCELLED_TEXT:
            return CANCELLED
        for kind in _WORDED:
            if text.startswith(kind):
                return cls(kind, text[len(kind):].removeprefix(": "))
        return cls(Kind.OTHER, text)

    @property
    def ok(self) -> bool:
        return self.kind == Kind.OK

    @property
    def failed(self) -> bool:
        return self.kind == Kind.ERROR

    @property
    def skipped(self) -> bool:
        return self.kind == Kind.SKIPPED

    def __str__(self) -> str:
        if self.kind == Kind.OK:
            return "ok"
        if self.kind == Kind.CANCELLED:
            return CANCELLED_TEXT
        if self.kind == Kind.OTHER:
            return self.detail
        return f"{self.kind}: {self.detail}"


def error(detail: object) -> Outcome:
    return Outcome(Kind.ERROR, str(detail))


def skipped(detail: object) -> Outcome:
    return Outcome(Kind.SKIPPED, str(detail))


def postponed(detail: object) -> Outcome:
    return Outcome(Kind.POSTPONED, str(detail))


OK = Outcome(Kind.OK)
CANCELLED = Outcome(Kind.CANCELLED)
INTERRUPTED = error("interrupted")  # a claim whose action never said how it ended
