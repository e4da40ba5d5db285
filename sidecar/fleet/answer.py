"""What another machine asks of this one's sessions: cancel a follow-up, or fire it now (else
retry the failed one), as `top`'s `c` and `f` do here.

A thread reads the machine's request stream (XREAD BLOCK). A request names a workspace and a
session; it is carried out only in a workspace this daemon serves, on the session's row as
read from this machine's own files (nothing the request says of the session is believed), by
`views.actions.act_on`: the queue is changed, and the daemon fires under its own trust rules,
so nothing that is not trusted here ever runs. The answer goes to the request's reply key.
Requests written while the daemon was not running are not carried out: their asker has
stopped waiting. Only the daemon that holds the machine's name answers (publish.py); the
stream is read as bytes, so a request that is not UTF-8 is a bad request, deleted and logged,
and any other error is logged and tried again: the thread never ends before the daemon does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import orjson

from sidecar.base.errors import SidecarError
from sidecar.coordination.url import masked, scrub
from sidecar.fleet import keys
from sidecar.fleet.settings import FleetSettings
from sidecar.followups import store as hook_store
from sidecar.layout import PLAIN_NAME, Workspace
from sidecar.live.actions import ACTIONS, act_on
from sidecar.sessions.store import SessionStore
from sidecar.views import sessions

log = logging.getLogger("sidecar")

BLOCK_MS = 1000  # within the client's command timeout (2 s)


def carry_out(request: dict[str, str], served: list[Path], now: float) -> str:
    """The request done on this machine's files; what was done, in words. SidecarError says
    why it cannot be."""
    what, root, hid = request.get("what"), Path(request.get("workspace", "")), request.get("session", "")
    if what not in ACTIONS:
        raise SidecarError(f"not an action: {what!r}")
    if root not in served:
        raise SidecarError(f"{root} is not a workspace this machine serves")
    if not PLAIN_NAME.fullmatch(hid):
        raise SidecarError(f"not a session's id: {hid!r}")
    ws = Workspace(root)
    record = SessionStore(ws).load_session(hid)
    if record is None:
        raise SidecarError(f"{root} has no session {hid}")
    row = sessions.row(ws, record, sessions.follow_ups_by_session(hook_store.read_view(ws), ws))
    return act_on(ws, row, what, now)


def decoded(request: dict[bytes, bytes]) -> dict[str, str] | None:
    """The request's fields as text; None where one is not UTF-8."""
    try:
        return {k.decode(): v.decode() for k, v in request.items()}
    except UnicodeDecodeError:
        return None


class Answerer:
    """The thread that answers the machine's requests, while `holding` (its name is this
    daemon's)."""

    def __init__(self, settings: FleetSettings, roots: Callable[[], list[Path]],
                 holding: threading.Event) -> None:
        self.settings = settings
        self.roots = roots
        self.holding = holding
        self.client = keys.connect(settings.url, decoded=False)
        self.stop_event = threading.Event()
        self.broken: str | None = None  # the last error that was not Redis's, said once
        self.thread = threading.Thread(target=self._run, name="fleet-answers", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float) -> None:
        self.stop_event.set()
        self.thread.join(timeout)
        self.client.close()

    def _run(self) -> None:
        stream = keys.actions(self.settings.machine)
        last: bytes | None = None
        read: list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]
        while not self.stop_event.is_set():
            if not self.holding.is_set():  # another daemon holds the name: it answers
                last = None
                self.stop_event.wait(0.2)
                continue
            try:
                if last is None:  # what came before the daemon started is not done
                    newest = cast(list[tuple[bytes, Any]], self.client.xrevrange(stream, count=1))
                    last = newest[0][0] if newest else b"0-0"
                read = cast(Any, self.client.xread({stream: last}, count=16, block=BLOCK_MS))
                for _, entries in read or []:
                    for entry_id, request in entries:
                        last = entry_id
                        self._answer(stream, entry_id, request)
            except keys.FAILURES as exc:
                log.debug("fleet: cannot read %s's requests: %s", self.settings.machine,
                          scrub(str(exc), self.settings.url))
                last = None
                self.stop_event.wait(1.0)
            except Exception as exc:  # noqa: BLE001  # answering outlives any one request
                why = f"{type(exc).__name__}: {exc}"
                if why != self.broken:
                    log.error("fleet: answering requests failed (tried again): %s", why,
                              exc_info=exc)
                self.broken = why
                self.stop_event.wait(1.0)

    def _answer(self, stream: str, entry_id: bytes, raw: dict[bytes, bytes]) -> None:
        request = decoded(raw)
        if request is None:
            text, ok, request = "a request that is not UTF-8 is not read", False, {}
            log.warning("fleet: a request to %s that is not UTF-8 was deleted unread: %r",
                        self.settings.machine, raw)
        else:
            try:
                text, ok = carry_out(request, list(self.roots()), time.time()), True
            except (SidecarError, OSError, ValueError) as exc:
                text, ok = str(exc), False
            log.info("fleet: %r asked to %r %r in %r: %s", request.get("from", "a machine"),
                     request.get("what"), request.get("session"), request.get("workspace"), text)
        token = request.get("token", "")
        try:
            with self.client.pipeline(transaction=False) as pipe:
                if token:
                    pipe.rpush(keys.reply(token), orjson.dumps({"ok": ok, "text": text}))
                    pipe.expire(keys.reply(token), keys.REPLY_TTL)
                pipe.xdel(stream, entry_id)
                pipe.execute()
        except keys.FAILURES as exc:
            log.warning("fleet: cannot answer a request through %s: %s", masked(self.settings.url),
                        scrub(str(exc), self.settings.url))
