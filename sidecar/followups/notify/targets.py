"""Where a notify hook sends its notice: a target, checked for its form only.

A target is one string kept in hooks.json as `"action": {"notify": TARGET}`:

- `ntfy://host[:port]/topic` (plain http) or `ntfys://host[:port]/topic` (https): ntfy's
  publish API;
- an `http://` or `https://` URL: a JSON POST webhook;
- `desktop`: the desktop's own notifications (`notify-send`, `osascript`);
- any other `scheme://...`: an apprise URL (`slack://`, `tgram://`, `mailto://`...), sent
  with the optional extra `agent-sidecar[notify]`.

Nothing here touches the network or imports apprise: the daemon and the hook path read
hooks.json through this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

NTFY = ("ntfy", "ntfys")
WEBHOOK = ("http", "https")
DESKTOP = "desktop"
TOPIC = re.compile(r"[A-Za-z0-9_-]{1,64}")
SCHEME = re.compile(r"([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
EXTRA = "agent-sidecar[notify]"
MAX_TARGET = 2048
# host[:port] as a URL can have it: a name or an address in [ ], and a port of digits only.
HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]*\]|[^\[\]@:/?#]*)(:[0-9]*)?")

# The events a notify hook may listen for: session events worth a notice, and what the
# follow-up runner itself produces (vocabulary.FollowUpEvent), which only a notice listens for.
ONLY_NOTIFY = ("follow-up-failed", "resume-started", "over-budget")
NOTIFY_EVENTS = ("session-end", "turn-end", "needs-input", "turn-failed", *ONLY_NOTIFY)


@dataclass(frozen=True, slots=True)
class Notify:
    """A hook's action that sends a notice to its target (see the module's docstring). The
    field is named as hooks.json names it, so that any JSON of it has the same shape."""

    notify: str

    @property
    def target(self) -> str:
        return self.notify

    @property
    def kind(self) -> str:
        return kind(self.notify)

    def to_json(self) -> dict[str, Any]:
        return {"notify": self.notify}


class TargetError(ValueError):
    """A target that is not one of the forms above; the message says what is wrong."""


def kind(target: str) -> str:
    """ntfy, webhook, desktop or apprise (an unchecked target may still be none of them)."""
    if target == DESKTOP:
        return "desktop"
    scheme = target.split("://", 1)[0].lower()
    if scheme in NTFY:
        return "ntfy"
    return "webhook" if scheme in WEBHOOK else "apprise"


def check(target: Any) -> Notify:
    """The target as a Notify action; TargetError if its form is wrong."""
    if type(target) is not str:
        raise TargetError("must be a target string")
    if not target or len(target) > MAX_TARGET:
        raise TargetError(f"must be a target of 1..{MAX_TARGET} characters")
    if any(not ch.isprintable() or ch.isspace() for ch in target):
        raise TargetError("must not hold spaces or control characters")
    if target == DESKTOP:
        return Notify(target)
    if SCHEME.match(target) is None:
        raise TargetError("is not a target: give ntfy://host/topic, ntfys://host/topic, an "
                          f"http(s):// URL, `desktop`, or an apprise URL (with {EXTRA})")
    named = shown(target)  # what a message names: never the target itself (it holds secrets)
    try:
        parts = urlsplit(target)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        # urllib's own words quote the port or the host, which may be part of a password.
        raise TargetError(f"{named} is not a URL: {_unreadable(str(exc))}") from None
    scheme = parts.scheme.lower()
    if scheme in NTFY + WEBHOOK and not parts.hostname:
        raise TargetError(f"{named} names no host")
    if scheme in NTFY and not TOPIC.fullmatch(parts.path.lstrip("/")):
        raise TargetError(f"{named}: an ntfy target is {scheme}://host[:port]/topic, with a "
                          "topic of letters, digits, - and _")
    return Notify(target)


def _unreadable(why: str) -> str:
    """What urllib found wrong with a URL, in words that quote nothing of it."""
    if "Port" in why:
        return ("what follows the host's last : is not a port from 0 to 65535 (a password "
                "holding / ? # or @ must be percent-encoded: %2F %3F %23 %40)")
    return "its host cannot be read (an IPv6 address goes in [ ], a password's [ ] percent-encoded)"


def event_misfit(event: str, notify: bool) -> str | None:
    """Why a hook cannot listen for `event`: a notify hook listens for what is worth a notice;
    only a notify hook listens for what follow-ups do (a resume or a command run for a failed
    follow-up could fail and start itself again)."""
    if notify and event not in NOTIFY_EVENTS:
        return f"a notify hook listens for one of {', '.join(NOTIFY_EVENTS)}, not {event!r}"
    if not notify and event in ONLY_NOTIFY:
        return f"only a notify hook (--notify) listens for {event}"
    return None


def ntfy_url(target: str) -> str:
    """The publish URL of an ntfy target (its user and password go in a header instead)."""
    parts = urlsplit(target)
    scheme = "https" if parts.scheme.lower() == "ntfys" else "http"
    port = f":{parts.port}" if parts.port else ""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}{port}{parts.path}"


def masked(action: str | list[str] | Notify) -> str | list[str] | Notify:
    """A hook's action as lists and JSON show it: a notice's target with its secrets hidden
    (`shown`); a resume or a command as it is. Trust is kept over the real target."""
    return Notify(shown(action.notify)) if isinstance(action, Notify) else action


def without_user(url: str) -> str:
    """The URL without its user and password (they go in a header instead)."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def shown(target: str) -> str:
    """The target with its secrets hidden, for lists, logs, history and messages: any user
    and password, the query and fragment, a webhook's path but for its first segment when
    more follow (Slack's and Discord's tokens are there, webhook.site's is the only one), an
    ntfy topic (on a public server the topic is the password), and all but the scheme of an
    apprise URL (its host is often a token itself: Pushover's app token, PagerDuty's key).
    A target whose host cannot be read shows only its scheme: where its user part ends (a
    password holding an unencoded /) cannot be told. What is left names the target:
    `https://***@host/***`, `https://hooks.slack.com/services/***`, `ntfys://ntfy.sh/***`,
    `slack://***`."""
    scheme, sep, rest = target.partition("://")
    if not sep:
        return target if target == DESKTOP else "***"  # no URL: nothing of it names a target
    if kind(target) == "apprise":
        return f"{scheme}://***"
    # A user part ends at the last @ before the path (a password may hold ? or #, unencoded).
    head = rest.split("/", 1)[0]
    at = head.rfind("@")
    user, rest = ("***@", rest[at + 1:]) if at >= 0 else ("", rest)
    host = _before(rest, "/?#")
    if not HOST_PORT.fullmatch(host):
        return f"{scheme}://***"
    path = _before(rest[len(host):], "?#")
    after = rest[len(host) + len(path):]
    segments = path.split("/")
    if "@" in path or (kind(target) == "ntfy" and path not in ("", "/")):
        path = "/***"
    elif len(segments) > 2:
        path = f"/{segments[1]}/***"
    elif path not in ("", "/"):
        path = "/***"
    return f"{scheme}://{user}{host}{path}" + ("?***" if after.startswith("?") else "") + \
        ("#***" if "#" in after else "")


def _before(text: str, stops: str) -> str:
    """`text` up to the first of the `stops` characters."""
    return text[:next((i for i, ch in enumerate(text) if ch in stops), len(text))]
