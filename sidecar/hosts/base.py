"""What one agent host is, to sidecar: the `Host` every host module makes one of.

Everything sidecar knows of a host lives behind this class: its names, the names its events
have, how a follow-up resumes it (and the config.toml options of that command), the variables
its credentials come from, where `sidecar integrate` writes its hooks, what `doctor` checks of
it, what its transcript says at a session's end, and the shape of its session ids. Code
outside `sidecar/hosts/` asks the registry (`registry.py`) and never names a host.

A host module subclasses `Host`, overriding what differs from the defaults (a host with no
hook settings, no resume, no transcript), and `registry.HOSTS` lists one instance of each.
The daemon loads every host module, so a host imports its integration code (the settings merge,
tomlkit) inside the methods that write or check settings, never at the top."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from sidecar.base.errors import SidecarError
from sidecar.vocabulary import EventKind

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

# Reads a small settings file of the user's (None: missing or unreadable); the caller decides
# how: as this user, or as a workspace's owner where a root daemon acts for another user.
Reader = Callable[[Path], bytes | None]


class IntegrateError(SidecarError):
    """The host's configuration cannot be changed safely; nothing was written."""


@dataclass
class Finding:
    """What `doctor` reports: fine, a problem (with the command that fixes it), or a note
    (worth knowing, never a failure: a host installed here that the user does not use)."""

    ok: bool
    what: str
    fix: str = ""
    note: bool = False  # shown as a note; counts as ok


def note(what: str, fix: str = "") -> Finding:
    return Finding(True, what, fix, note=True)


@dataclass(frozen=True)
class Option:
    """A config.toml setting of one host's resume command, filled in as `{name}`."""

    key: str  # as config.toml spells it: permissionMode
    name: str  # the placeholder's name: permission_mode
    choices: tuple[str, ...]
    default: str


@dataclass(frozen=True)
class Scope:
    """One place `sidecar integrate <host>` can write, chosen by a flag (None: the default)."""

    flag: str | None
    help: str = ""
    in_project: bool = True  # in the workspace (--root, --init choose it), not the user's own
    on_path: bool = False  # a file teams commit: its hooks call `sidecar` from PATH
    note: str = ""  # said when sidecar's hooks go there


@dataclass(frozen=True)
class Setting:
    """A whole number an extra takes, by an option of its own (`--refresh-interval SECONDS`)."""

    flag: str
    metavar: str
    help: str
    default: int
    least: int = 0  # the least value accepted


@dataclass(frozen=True)
class Extra:
    """Something `sidecar integrate <host>` also sets when its flag is given (Host.extras);
    taking the hooks out takes it out too."""

    flag: str
    help: str
    setting: Setting | None = None  # a number it takes, if any


@dataclass(frozen=True)
class Failure:
    """A turn the host's API refused, as its transcript tells it."""

    kind: str  # the canonical error kind (see vocabulary.LIMIT_ERRORS)
    message: str


def count(value: Any) -> int:
    """A token figure as a host wrote it: a positive whole number, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @classmethod
    def summed(cls, usages: Iterable[Any], names: tuple[str, str, str, str]) -> Tokens | None:
        """The figures `names` (input, output, cache read, cache write) summed over each usage
        that is an object; None if none is."""
        totals, seen = [0, 0, 0, 0], False
        for usage in usages:
            if isinstance(usage, dict):
                seen = True
                for i, name in enumerate(names):
                    totals[i] += count(usage.get(name))
        return cls(*totals) if seen else None

    def to_json(self) -> dict[str, int]:
        return {"input": self.input, "output": self.output, "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write}

    def plus(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.output + other.output,
                      self.cache_read + other.cache_read, self.cache_write + other.cache_write)

    @property
    def none(self) -> bool:
        """Whether every figure is 0."""
        return not (self.input or self.output or self.cache_read or self.cache_write)

    @classmethod
    def from_json(cls, value: Any) -> Tokens | None:
        """The figures `to_json` wrote (None: not an object)."""
        return cls.summed([value], ("input", "output", "cacheRead", "cacheWrite"))


@dataclass(frozen=True)
class Spend:
    """What one model used on one day, by the host's own records: its tokens, and what the
    host says they cost in US dollars (None: it does not say, and a price table is asked)."""

    model: str | None  # as the host names it (None: it does not say)
    day: str | None  # the local date of its turns, YYYY-MM-DD (None: the host does not date them)
    tokens: Tokens
    cost: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "day": self.day, "tokens": self.tokens.to_json()}
        if self.cost is not None:
            out["cost"] = self.cost
        return out

    @classmethod
    def from_json(cls, value: Any) -> Spend | None:
        """What `to_json` wrote; None where it is malformed."""
        if not isinstance(value, dict) or (figures := Tokens.from_json(value.get("tokens"))) is None:
            return None
        model, day, cost = value.get("model"), value.get("day"), value.get("cost")
        return cls(model if isinstance(model, str) and model else None,
                   day if isinstance(day, str) and DAY.fullmatch(day) else None, figures,
                   float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool)
                   and 0 <= cost < float("inf") else None)


DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def local_day(at: float | None) -> str | None:
    """The local date (YYYY-MM-DD) of the moment `at` (epoch seconds); None where not known."""
    if at is None:
        return None
    try:
        return time.strftime("%Y-%m-%d", time.localtime(at))
    except (OverflowError, OSError, ValueError):
        return None


def moment(value: Any) -> float | None:
    """Epoch seconds of a host's RFC 3339 timestamp (`2026-12-01T06:12:49.926Z`); None if it
    is none."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


class Use(NamedTuple):
    """One use of a model as a host's record tells it: which model (None: not named), when
    (epoch seconds; None: not dated), its tokens, and the host's own cost of it in USD."""

    model: str | None
    at: float | None
    tokens: Tokens
    cost: float | None = None


def spend_by_day(uses: Iterable[Use]) -> tuple[Spend, ...]:
    """The uses summed by model and local day, for `EndFacts.spend`, the bucket used last
    last (a turn's model is the one it used last). A use of no tokens and no cost is left
    out (Claude Code's `<synthetic>` error entries). A bucket's cost is the host's only if
    every use in it has one: else the table prices all its tokens."""
    buckets: dict[tuple[str | None, str | None], Spend] = {}
    for use in uses:
        if use.tokens.none and not use.cost:
            continue
        key = (use.model, local_day(use.at))
        had = buckets.pop(key, None)  # (put back at the end: the order is of last use)
        if had is None:
            buckets[key] = Spend(key[0], key[1], use.tokens, use.cost)
        else:
            cost = had.cost + use.cost if had.cost is not None and use.cost is not None else None
            buckets[key] = Spend(key[0], key[1], had.tokens.plus(use.tokens), cost)
    return tuple(buckets.values())


@dataclass(frozen=True)
class EndFacts:
    """What a session's end learns from its host's own records: how its last turn failed
    (None: it did not, or the host says so in its events), its token figures (None:
    unknown), and the same figures by model and day with the host's own cost where it gives
    one (`spend`; empty: the host's records name no model)."""

    failure: Failure | None = None
    tokens: Tokens | None = None
    spend: tuple[Spend, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.failure is not None:
            out["failure"] = {"kind": self.failure.kind, "message": self.failure.message}
        if self.tokens is not None:
            out["tokens"] = self.tokens.to_json()
        if self.spend:
            out["spend"] = [part.to_json() for part in self.spend]
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> EndFacts:
        """The facts `to_json` wrote; what is missing or malformed is left out."""
        failure, figures = value.get("failure"), value.get("tokens")
        kind = failure.get("kind") if isinstance(failure, dict) else None
        message = failure.get("message") if isinstance(failure, dict) else None
        parts = value.get("spend")
        spend = [Spend.from_json(part) for part in parts] if isinstance(parts, list) else []
        return cls(
            Failure(kind, message if isinstance(message, str) else "")
            if isinstance(kind, str) and kind else None,
            Tokens.from_json(figures), tuple(part for part in spend if part is not None))


@dataclass(frozen=True)
class RecordedEnd:
    """A session's end as its host recorded it: why (the host's own word: `completed`...),
    the file its conversation is in, if it has one, when, and what the same reads (as the
    workspace's owner) learned of its last turn and tokens, so that nothing is read again
    with the daemon's own rights."""

    reason: str
    transcript: str | None = None
    at: float | None = None  # when it ended, by the host's record (None: it does not say)
    facts: EndFacts = EndFacts()


class Host:
    """One agent host. The defaults describe a host sidecar knows only by its events."""

    name: str = ""  # the registry key, `emit --source`, and the host a record names
    title: str = ""  # as people know it
    executable: str | None = None  # the command its resume runs (None: it has no resume)
    # Its own event names (any case, `-`/`_`/`:`/space alike) and what each means; a name
    # not here means what it means for every host (registry.GENERIC_EVENTS).
    events: Mapping[str, EventKind] = MappingProxyType({})
    resume: tuple[str, ...] = ()  # the default resume argv; placeholders as in actions.py
    options: tuple[Option, ...] = ()  # the config.toml settings its resume's placeholders read
    key_variables: tuple[str, ...] = ()  # where it reads credentials or its endpoint from
    scopes: tuple[Scope, ...] = ()  # `sidecar integrate <name>`'s places, the default first
    integrate_help: str = ""  # the help of `sidecar integrate <name>`
    integrate_hint: str = ""  # said after `sidecar integrate <name>` in doctor's fix
    records_itself: bool = False  # its integrate() remembers what it owns (files/owned.py) itself
    calls_sidecar: bool = True  # its hooks run the `sidecar` command (a plugin may not)
    id_shape: tuple[re.Pattern[str], str] | None = None  # its session ids, described
    extras: tuple[Extra, ...] = ()  # more `sidecar integrate <name>` sets, flag by flag
    pid_variable: str | None = None  # where its hooks' environment names its own process

    def place(self, scope: Scope, root: Path | None, home: Path) -> Path:
        """Where `scope` writes, for the project `root` (None: not in a project) and `home`."""
        raise NotImplementedError(f"{self.name} has no settings of its own")

    def written(self, place: Path) -> list[Path]:
        """The files an integration at `place` writes (created ones are removed when empty)."""
        return [place]

    def shown(self, place: Path) -> Path:
        """The file an integration at `place` is shown as."""
        return place

    def integrate(self, place: Path, sidecar: str, *, uninstall: bool) -> bool:
        """Write sidecar's hooks at `place`, calling `sidecar` (a path, or the bare name to
        find it on PATH), or take them out; True if anything changed. IntegrateError (and
        nothing written) where the host's file cannot be changed safely."""
        raise NotImplementedError(f"{self.name} is not integrated by sidecar integrate")

    def integrated(self, root: Path | None, home: Path) -> bool:
        """Whether sidecar's hooks are in any of the host's settings seen from `root`."""
        return False

    def integrate_extra(self, flag: str, place: Path, sidecar: str, value: int | None) -> str:
        """Set the extra of `flag` at `place` (where the hooks went), calling `sidecar`, with
        the number its setting was given (its default if none; None: it has no setting); what
        it did, in a sentence. IntegrateError (and nothing written) where it cannot."""
        raise NotImplementedError(f"{self.name} has no {flag}")

    def findings(self, root: Path | None, home: Path) -> list[Finding]:
        """`doctor`'s checks of an integrated host, beyond what it checks of every host."""
        return []

    def needed_variables(self, env: Mapping[str, str], home: Path, read: Reader) -> tuple[str, ...]:
        """Variables the host's own settings say it needs (beyond `key_variables`), for a
        user with environment `env` and home `home`, their files read by `read`."""
        return ()

    def recognises(self, payload: Mapping[str, Any]) -> bool:
        """Whether a payload that names no host is unmistakably this host's."""
        return False

    def end_facts(self, transcript_path: str | None, session_id: str) -> EndFacts:
        """What the host's transcript (or database) says at a session's end. It may raise:
        a file an event names is untrusted, and the caller logs and goes on."""
        return EndFacts()

    def id_misfit(self, session_id: str) -> str | None:
        """Why `session_id` cannot be one of this host's; None if it can (or no shape is
        known). A resume of an id the host could never have issued would spend a real run
        only to fail, so it is skipped instead."""
        if self.id_shape is None or self.id_shape[0].fullmatch(session_id):
            return None
        return (f"session id {session_id[:60]!r} cannot be {self.name}'s (its ids are "
                f"{self.id_shape[1]}); not resumed")

    # -- hosts whose payloads, ends and resumes differ from the common shape ---------------

    def payload_fields(self, payload: Mapping[str, Any]) -> dict[str, str]:
        """The generic fields (`inbox/events.py`'s names: `event`, `session_id`, `cwd`,
        `error`, `error_message`...) that this host's payload keeps under names or shapes of
        its own, read out of it; they win over the payload's own top-level values. {}: the
        payload is read as it stands."""
        return {}

    # Whether `recorded_end` can say anything: the daemon asks only the hosts that can.
    ends_recorded: bool = False

    def recorded_end(self, session_id: str, home: Path, read: Reader) -> RecordedEnd | None:
        """Whether the host's own records (a file it writes under the user's `home`, read by
        `read` as that user) say the session has ended; None while they say it goes on, or
        say nothing. For hosts that often send no end of their own; only `ends_recorded`
        hosts are asked."""
        return None

    def resume_refusal(self) -> str | None:
        """Why a `resume` follow-up of this host is skipped when config.toml's `[resume]`
        names no command for it: the host cannot resume a session unattended. None: not
        known, so a missing command is an error the user can fix."""
        return None

    # Whether its turn-failed event is one failed attempt, not the turn's end (Copilot CLI's errorOccurred
    # comes for each retry, its agentStop once one got through): a turn is refused once, and a turn end
    # after it closes the limit. By default a turn end right after a failure says nothing of the limit.
    failures_are_attempts: bool = False

    # What its needs-input events ask, by their `notification_type` (lower case), where only
    # some are asks: a notice (a login that worked, a shell that finished) is traced only and
    # leaves the session's state as it was. None: every needs-input event of its is an ask.
    asks: frozenset[str] | None = None
    # Its own resume after a usage limit (sessions/ownresume.py): notification_type -> fired,
    # disabled or stale; and the user's switch turning it off (None: it has none).
    own_resume: Mapping[str, str] = MappingProxyType({})
    own_resume_off: Callable[[Path, Reader], str | None] | None = None

    def is_ask(self, kind: str) -> bool:
        """Whether a needs-input event of this host's, asking `kind` (`Event.input_kind`),
        waits for the user."""
        return self.asks is None or kind.lower() in self.asks

    def stated_failure(self, payload: Mapping[str, Any]) -> Failure | None:
        """A failed turn's error kind and text as this host's turn-failed payload states them,
        where not as the plain `error` and message strings every host's are read for (None:
        read those)."""
        return None
