"""`python -I -m sidecar.followups.notify.send`: send one notice, with retries; and `deliver` for
`sidecar hooks test`.

The daemon starts this as a notify hook's action (through `sidecar.runner`, detached, like
any follow-up), handing it the job as JSON on standard input: the target and the notice's
facts (notices.py, followups/fire.py). So the network is never waited on by the daemon: a target that
hangs holds this process only, for at most TRIES tries of TIMEOUT seconds each, with a
back-off between them. Each try is a line of the firing's log; the exit status (0: delivered)
is the firing's outcome in the hook's history.

apprise (the extra `agent-sidecar[notify]`) is imported here only, and only for its targets.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from sidecar.base.escapes import escaped
from sidecar.base.words import end_reason, local_time, short_id
from sidecar.followups.notify import targets
from sidecar.followups.resets import parse_reset
from sidecar.views import cost
from sidecar.vocabulary import LIMIT_ERRORS

TIMEOUT = 5.0  # seconds per try; SIDECAR_NOTIFY_TIMEOUT changes it
TRIES = 3
BACKOFF = 1.0  # seconds before the second try, doubled before each later one
# Of the last assistant message, where the job has it: what a session record keeps of it
# (sessions/rules.py), so a job from elsewhere is held to the same.
FIRST_LINES = 5
MAX_LAST = 600
USER_AGENT = "sidecar-notify"


class NotSent(Exception):
    """One try that did not deliver; `retry` says whether another try may."""

    def __init__(self, why: str, retry: bool = True) -> None:
        super().__init__(why)
        self.retry = retry


@dataclass(frozen=True)
class Text:
    """The notice in words: a title, a body, an ntfy priority (1..5) and tags."""

    title: str
    body: str
    priority: int
    tags: tuple[str, ...]


def _follow_up_title(event: str, notice: dict[str, Any], reason: str, host: str,
                     lines: list[str]) -> tuple[str, int, str]:
    """The title, priority and tag of a notice about a follow-up (else a generic one)."""
    if event == "follow-up-failed":
        lines.insert(0, reason)
        return f"follow-up {notice.get('hook', '?')} failed", 4, "warning"
    if event == "resume-started":
        return f"{host} resumed after its usage limit", 3, "arrow_forward"
    if event == "over-budget":  # the reason says which budget: "over budget ($5.12 of $5.00 today)"
        lines.insert(0, "a budget in config.toml holds resume follow-ups back; commands and notices run")
        return f"follow-up {notice.get('hook', '?')} held back: {reason}", 4, "moneybag"
    return f"sidecar: {event}", 3, "bell"


def words(job: dict[str, Any], now: float) -> Text:
    """What the notice says, from the facts the daemon gave (see followups/fire.py's `_notice`)."""
    notice = job.get("notice") or {}
    event, reason = str(notice.get("event", "")), str(notice.get("reason", ""))
    host, where = str(job.get("host", "")), os.path.basename(str(job.get("workspace", "")))
    session = short_id(str(job.get("sessionId", "")))
    message = str(notice.get("message", "")).strip()
    summary = f"{where} · {host} session {session}"
    lines = [summary]
    if event == "session-end" and notice.get("midTurn"):  # killed or crashed: it did not finish
        title, priority, tag = f"{host} stopped: {_end(job, reason)}", 4, "warning"
    elif event == "session-end":
        title, priority, tag = f"{host} finished: {_end(job, reason)}", 3, "white_check_mark"
    elif event == "turn-end":
        title, priority, tag = f"{host} finished its turn", 3, "white_check_mark"
    elif event == "needs-input":
        title, priority, tag = f"{host} is waiting for you", 4, "raising_hand"
        lines.insert(0, message or reason.replace("_", " ") or "it asks for input")
    elif event == "turn-failed" and reason not in LIMIT_ERRORS:  # a hook's --reasons chose it
        title, priority, tag = f"{host}'s turn failed: {reason.replace('_', ' ')}", 4, "warning"
        lines.insert(0, message or "the host gave no message")
    elif event == "turn-failed":
        title, priority, tag = f"{host} hit a usage limit", 4, "hourglass"
        reset = parse_reset(message, now) if message else None
        lines.insert(0, f"resets at {local_time(reset, now)}" if reset else "reset time unknown")
        if message:
            lines.append(message)
    else:
        title, priority, tag = _follow_up_title(event, notice, reason, host, lines)
    if event in ("session-end", "turn-end"):
        title += spent(notice)
    tokens = job.get("tokens")
    if isinstance(tokens, dict) and tokens:
        lines.append("tokens " + ", ".join(f"{k} {v}" for k, v in tokens.items()))
    at = lines.index(summary) + 1
    lines[at:at] = last_message(job).splitlines()  # what the agent said, after who it is
    # What the host and the agent said is shown as text, its control characters escaped (a
    # title is one line: a header); the body's line breaks are its own.
    return Text(escaped(title), escaped("\n".join(lines), keep="\n"), priority,
                (tag, "sidecar", host or "host"))


def spent(notice: dict[str, Any]) -> str:
    """` · $0.42` after a finished turn's or session's title where its cost is known (`+?`
    where some model had no price); "" where it is not: no amount reads as free."""
    found = notice.get("cost")
    if not isinstance(found, dict) or (amount := cost.number(found.get("usd"))) is None:
        return ""
    return f" · {cost.usd(amount)}" + ("+?" if found.get("unpriced") else "")


def webhook_body(job: dict[str, Any], text: Text) -> dict[str, Any]:
    """The JSON a webhook receives (docs/guide/notifications.md shows it)."""
    notice = job.get("notice") or {}
    reason = str(notice.get("reason", ""))
    body: dict[str, Any] = {
        "event": notice.get("event"), "host": job.get("host"), "workspace": job.get("workspace"),
        "sessionId": job.get("sessionId"), "harnessSessionId": job.get("harnessSessionId"),
        "hookId": job.get("hookId"), "at": notice.get("at"), "reason": reason,
        "reasonInWords": _end(job, reason) if notice.get("event") == "session-end" else reason,
        "midTurn": bool(notice.get("midTurn")),
        "title": text.title, "message": text.body, "tokens": job.get("tokens"),
        "cost": notice.get("cost"),
    }
    if notice.get("message"):
        body["detail"] = notice["message"]
    if notice.get("hook"):  # the follow-up the notice is about (it failed, resumed, was held)
        body["followUpHook"] = notice["hook"]
        if notice.get("event") == "follow-up-failed":
            body["failedHook"] = notice["hook"]
    if last_message(job):
        body["lastMessage"] = last_message(job)
    return body


def _end(job: dict[str, Any], reason: str) -> str:
    """A session's end in words (`, mid-turn` where its turn never ended); a stale end names
    the staleAfter the job carries."""
    mid_turn = bool((job.get("notice") or {}).get("midTurn"))
    stale_after = job.get("staleAfter")
    if isinstance(stale_after, bool) or not isinstance(stale_after, (int, float)) or stale_after <= 0:
        return end_reason(reason, mid_turn=mid_turn)  # a job from elsewhere may not carry it
    return end_reason(reason, stale_after=float(stale_after), mid_turn=mid_turn)


def last_message(job: dict[str, Any]) -> str:
    """The first lines of the assistant's last message, where the job has it ("": not)."""
    lines = str(job.get("lastMessage") or "").strip().splitlines()[:FIRST_LINES]
    return "\n".join(lines)[:MAX_LAST]


# -- one try ----------------------------------------------------------------------------------

def _header(value: str) -> str:
    """A header value HTTP can carry: printable ASCII as it is, else RFC 2047 (which ntfy
    reads); a line break or any other control character escaped first, never sent (urllib
    refuses it, and it would end the header)."""
    value = escaped(value)
    return value if value.isascii() else "=?UTF-8?B?" + base64.b64encode(value.encode()).decode() + "?="


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A notice goes to its target or fails: urllib would follow a redirect to any host or
    scheme (https to http too), and turn the POST into a GET that counts as delivered."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> None:
        raise NotSent(f"HTTP {code} redirects to {_host(newurl)}, which is not followed", False)


_OPENER = urllib.request.build_opener(_NoRedirects)


def _post(url: str, data: bytes, headers: dict[str, str], timeout: float,
          secret: dict[str, str] | None = None) -> str:
    """POST `data`; the `secret` headers (Authorization) are never carried to another URL."""
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"User-Agent": USER_AGENT, **headers})
    for name, value in (secret or {}).items():
        request.add_unredirected_header(name, value)
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            return f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        # 429 and 5xx may pass; any other refusal will not change by asking again.
        raise NotSent(f"HTTP {exc.code} {exc.reason}", exc.code == 429 or exc.code >= 500) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise NotSent(f"cannot reach {_host(url)}: {why}") from None


def _host(url: str) -> str:
    """host[:port] of a URL: what an error names (never a user or password)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")


def _authorization(target: str) -> dict[str, str]:
    """The Authorization header for the user part of a target, if it has one: an ntfy access
    token (`tk_...`, given as the user with no password, or as the password with no user) as
    a Bearer token, as ntfy's docs send it; any other user and password as Basic auth (urllib
    would take them for part of the host name)."""
    parts = urlsplit(target)
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    token = password if not user else user if not password else ""
    if token.startswith("tk_"):
        return {"Authorization": f"Bearer {token}"}
    if not user and not password:
        return {}
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _ntfy(target: str, job: dict[str, Any], text: Text, timeout: float) -> str:
    headers = {"Title": _header(text.title), "Priority": str(text.priority),
               "Tags": _header(",".join(text.tags)), "Content-Type": "text/plain; charset=utf-8"}
    return _post(targets.ntfy_url(target), text.body.encode(), headers, timeout, _authorization(target))


def _webhook(target: str, job: dict[str, Any], text: Text, timeout: float) -> str:
    data = json.dumps(webhook_body(job, text)).encode()
    return _post(targets.without_user(target), data, {"Content-Type": "application/json"},
                 timeout, _authorization(target))


def _desktop(target: str, job: dict[str, Any], text: Text, timeout: float) -> str:
    if shutil.which("notify-send"):
        argv = ["notify-send", "--app-name=sidecar", text.title, text.body]
    elif shutil.which("osascript"):
        script = f"display notification {json.dumps(text.body)} with title {json.dumps(text.title)}"
        argv = ["osascript", "-e", script]
    else:
        raise NotSent("no desktop notifier: neither notify-send nor osascript is on PATH", False)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise NotSent(f"{argv[0]} did not answer within {timeout:g}s") from None
    if done.returncode != 0:
        raise NotSent(f"{argv[0]} exited {done.returncode}: "
                      f"{done.stderr.decode(errors='replace').strip()[:200]}")
    return f"shown by {argv[0]}"


def _apprise(target: str, job: dict[str, Any], text: Text, timeout: float) -> str:
    try:
        import apprise  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise NotSent(f"apprise is not installed: pip install '{targets.EXTRA}'", False) from None
    sender = apprise.Apprise()
    if not sender.add(target):
        raise NotSent("apprise does not know this URL", False)
    if not sender.notify(title=text.title, body=text.body):
        raise NotSent("apprise could not deliver it (its log says why)")
    return "delivered by apprise"


SENDERS: dict[str, Callable[[str, dict[str, Any], Text, float], str]] = {
    "ntfy": _ntfy, "webhook": _webhook, "desktop": _desktop, "apprise": _apprise}


def deliver(job: dict[str, Any], tries: int = TRIES, timeout: float | None = None,
            say: Callable[[str], None] = print, sleep: Callable[[float], None] = time.sleep
            ) -> bool:
    """Send the job's notice, trying up to `tries` times; says each try; whether delivered."""
    target = str(job.get("target", ""))
    timeout = timeout if timeout is not None else _timeout()
    send = SENDERS[targets.kind(target)]
    shown = targets.shown(target)
    wait = BACKOFF
    for attempt in range(1, tries + 1):
        began = time.monotonic()
        try:
            answer = _try(send, target, job, timeout)
        except NotSent as exc:
            took = time.monotonic() - began
            say(f"try {attempt}/{tries} to {shown}: not sent ({exc}) after {took:.2f}s")
            if not exc.retry or attempt == tries:
                say(f"notice not delivered: {exc}")
                return False
            sleep(wait)
            wait *= 2
            continue
        say(f"try {attempt}/{tries} to {shown}: {answer} after {time.monotonic() - began:.2f}s")
        return True
    return False


def _try(send: Callable[[str, dict[str, Any], Text, float], str], target: str,
         job: dict[str, Any], timeout: float) -> str:
    """One try: the notice built and sent. Whatever stops it is NotSent, a request that
    cannot be built included (a value no header can carry, a job not as it should be): a
    failed try, said and tried again, never a traceback that loses the notice."""
    try:
        return send(target, job, words(job, time.time()), timeout)
    except NotSent:
        raise
    except Exception as exc:
        raise NotSent(f"cannot build the notice: {type(exc).__name__}: {escaped(str(exc))}") from exc


def _timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("SIDECAR_NOTIFY_TIMEOUT", TIMEOUT)))
    except ValueError:
        return TIMEOUT


def main() -> int:
    try:
        job = json.loads(sys.stdin.buffer.read())
    except ValueError as exc:
        print(f"notice not delivered: its job is not JSON ({exc})")
        return 1
    ok = deliver(job, say=lambda line: print(line, flush=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
