"""The runtime states a hostile (or unlucky) user can make, for `status`'s one builder: what
the full command said of each when the report was pinned, and what the daemon says of its
hooks (test_status_golden.py). Where the two disagreed, the daemon's reading is the right one.
"""

from __future__ import annotations

import os

from status_cases import Case, bind, fifo_at, folder_is, hooks_doc, set_hooks, with_hook, write

from sidecar.jsonfile import dumps
from sidecar.layout import Workspace


def hooks_bytes(data: bytes, taken_up: bool) -> Case:
    return lambda ws: set_hooks(ws, data, taken_up)


def hook(fields: dict, taken_up: bool = True) -> Case:
    return lambda ws: with_hook(ws, fields, taken_up)


def top(taken_up: bool = True, **fields: object) -> Case:
    def make(ws: Workspace) -> None:
        set_hooks(ws, {**hooks_doc(ws), **fields}, taken_up)
    return make


def last_good_differs(ws: Workspace) -> None:
    doc = hooks_doc(ws)
    write(ws.runtime / "hooks.last-good.json", b'{"hooks": {}, "pending": []}')
    set_hooks(ws, doc, taken_up=False)


def last_good_broken_too(ws: Workspace) -> None:
    set_hooks(ws, b"{ broken", taken_up=True)


def last_good_missing(ws: Workspace) -> None:
    (ws.runtime / "hooks.last-good.json").unlink(missing_ok=True)


def broken_with_a_good_copy(ws: Workspace) -> None:
    doc = hooks_doc(ws)
    write(ws.runtime / "hooks.last-good.json", dumps(doc))
    write(ws.hooks_file, b"{ broken")


def hooks_is(kind: str) -> Case:
    def make(ws: Workspace) -> None:
        ws.hooks_file.unlink()
        if kind == "dir":
            ws.hooks_file.mkdir()
        elif kind == "fifo":
            os.mkfifo(ws.hooks_file)
        elif kind == "link":
            ws.hooks_file.symlink_to(ws.runtime / "hooks.last-good.json")
        elif kind == "dangling":
            ws.hooks_file.symlink_to(ws.runtime / "nowhere.json")
    return make


def unreadable(name: str) -> Case:
    def make(ws: Workspace) -> None:
        path = ws.runtime / name
        if not path.exists():
            write(path, b"{}")
        path.chmod(0)
    return make


def file_is_folder(name: str) -> Case:
    def make(ws: Workspace) -> None:
        path = ws.runtime / name
        if path.exists():
            path.unlink()
        path.mkdir(parents=True)
    return make


def instance(data: bytes) -> Case:
    return lambda ws: write(ws.instances / "one.json", data)


def session_record(data: bytes) -> Case:
    def make(ws: Workspace) -> None:
        write(ws.sessions / "abc" / "session.json", data)
        bind(ws, {"claude-code": {"s": {"harnessSessionId": "abc", "updatedAt": "2026-11-30T10:00:00Z"}}})
    return make


def trust_file(data: bytes, mode: int = 0o600) -> Case:
    def make(ws: Workspace) -> None:
        path = ws.root.parent / "config" / "trust.json"
        write(path, data)
        path.chmod(mode)
    return make


def id_file(data: bytes) -> Case:
    def make(ws: Workspace) -> None:
        from sidecar.base import trustcheck

        write(ws.runtime / trustcheck.ID_FILE, data)
    return make


POST = {"id": "post-task", "name": "post task"}

MATRIX: dict[str, Case] = {
    # hooks.json as a whole, with or without a last-good copy of the same bytes
    "hooks-empty": hooks_bytes(b"", False),
    "hooks-empty-copied": hooks_bytes(b"", True),
    "hooks-not-json": hooks_bytes(b"{ broken", False),
    "hooks-not-json-copied": last_good_broken_too,
    "hooks-broken-good-copy": broken_with_a_good_copy,
    "hooks-a-list": hooks_bytes(b"[]", True),
    "hooks-a-string": hooks_bytes(b'"hooks"', True),
    "hooks-null": hooks_bytes(b"null", True),
    "hooks-bom": lambda ws: set_hooks(ws, b"\xef\xbb\xbf" + dumps(hooks_doc(ws)), True),
    "hooks-not-utf8": hooks_bytes(b'{"hooks": {"\xff": 1}}', True),
    "hooks-trailing": hooks_bytes(b'{"hooks": {}, "pending": []} x', True),
    "hooks-version-newer": top(version=2),
    "hooks-version-string": top(version="1"),
    "hooks-version-negative": top(version=-1),
    "hooks-version-huge": hooks_bytes(b'{"version": 18446744073709551616, "hooks": {}}', True),
    "hooks-hooks-a-list": top(hooks=[]),
    "hooks-pending-an-object": top(pending={}),
    "hooks-pending-entry-odd": top(pending=[{"hookId": 1}]),
    "hooks-pending-run-odd": top(pending=[{"hookId": "post-task", "host": "h", "sessionId": "s",
                                           "run": {"pid": "x"}}]),
    "hooks-pending-claimed-odd": top(pending=[{"hookId": "post-task", "host": "h",
                                               "sessionId": "s", "claimedBy": 3}]),
    "hooks-pending-orphan": top(pending=[{"hookId": "gone", "host": "h", "sessionId": "s"}]),
    "hooks-extra-top-key": top(note="kept"),
    "hooks-broken-since-key": top(sidecarBrokenSince="2026-11-30T10:00:00Z"),
    "hooks-lone-surrogate": hooks_bytes(b'{"hooks": {}, "pending": [], "x": "\\udc00"}', True),
    "hooks-past-a-double": hooks_bytes(b'{"hooks": {}, "pending": [], "x": 1e999}', True),
    # one hook, invalid in each way, its copy the same bytes
    "hook-not-an-object": hook({"id": "odd"} and {"id": 3}),
    "hook-id-not-its-key": lambda ws: set_hooks(ws, {**hooks_doc(ws), "hooks": {
        **hooks_doc(ws)["hooks"], "x": {"id": "y", "name": "y", "enabled": False}}}, True),
    "hook-id-not-plain": lambda ws: set_hooks(ws, {**hooks_doc(ws), "hooks": {
        **hooks_doc(ws)["hooks"], "A B": {"id": "A B", "name": "y", "enabled": False}}}, True),
    "hook-name-empty": hook({"id": "e", "name": "", "enabled": False}),
    "hook-enabled-zero": hook({"id": "evil", "name": "e", "enabled": 0}),
    "hook-enabled-string": hook({"id": "evil", "name": "e", "enabled": "false"}),
    "hook-event-unknown": hook({"id": "x", "name": "x", "event": "never", "enabled": False}),
    "hook-delay-negative": hook({"id": "x", "name": "x", "delaySeconds": -1, "enabled": False}),
    "hook-delay-huge": hook({"id": "x", "name": "x", "delaySeconds": 10**30, "enabled": False}),
    "hook-delay-minutes-string": hook({"id": "x", "name": "x", "delayMinutes": "5", "enabled": False}),
    "hook-delay-minutes-ok": hook({"id": "x", "name": "x", "delayMinutes": 2, "enabled": False}),
    "hook-action-empty-list": hook({"id": "x", "name": "x", "action": [], "enabled": False}),
    "hook-action-number": hook({"id": "x", "name": "x", "action": 5, "enabled": False}),
    "hook-action-notify-odd": hook({"id": "x", "name": "x", "action": {"notify": 5},
                                    "event": "needs-input", "enabled": False}),
    "hook-prompt-outside": hook({"id": "x", "name": "x", "promptFile": "../etc/passwd.md",
                                 "enabled": False}),
    "hook-history-an-object": hook({"id": "x", "name": "x", "history": {}, "enabled": False}),
    "hook-reasons-odd": hook({"id": "x", "name": "x", "reasons": "exit", "enabled": False}),
    "hook-max-context-negative": hook({"id": "x", "name": "x", "maxContextK": -1, "enabled": False}),
    "hook-skip-cron-null": hook({"id": "x", "name": "x", "skipCron": None, "enabled": False}),
    "hook-invalid-not-copied": hook({"id": "evil", "name": "e", "enabled": 0}, taken_up=False),
    "hook-valid-not-copied": hook({"id": "x", "name": "x", "enabled": False}, taken_up=False),
    "hook-history-huge": hook({"id": "x", "name": "x", "enabled": False, "lastStatus": "ok",
                               "history": [{"status": "ok", "log": str(i)} for i in range(250)]}),
    "hook-failed-no-log": hook({**POST, "lastStatus": "error: exit 2", "enabled": False,
                                "history": [{"status": "error: exit 2", "log": "gone.log"}]}),
    # the copy and the file
    "last-good-differs": last_good_differs,
    "last-good-missing": last_good_missing,
    "last-good-a-folder": file_is_folder("hooks.last-good.json"),
    # hooks.json not a regular file
    "hooks-a-folder": hooks_is("dir"),
    "hooks-a-fifo": hooks_is("fifo"),
    "hooks-a-link": hooks_is("link"),
    "hooks-a-dangling-link": hooks_is("dangling"),
    "hooks-unreadable": unreadable("hooks.json"),
    # the runtime's folders
    "sessions-a-file": folder_is("sessions", "file"),
    "sessions-a-link": folder_is("sessions", "link"),
    "inbox-missing": folder_is("inbox", "missing"),
    "inbox-a-link": folder_is("inbox", "link"),
    "logs-a-file": folder_is("logs", "file"),
    "hooks-folder-missing": folder_is("hooks", "missing"),
    # other state files
    "usage-a-folder": file_is_folder("usage.json"),
    "usage-a-fifo": fifo_at("usage.json"),
    "usage-unreadable": unreadable("usage.json"),
    "usage-huge-int": lambda ws: write(ws.runtime / "usage.json", b'{"input": 18446744073709551616}'),
    "bindings-a-folder": file_is_folder("hooks/host-sessions.json"),
    "bindings-unreadable": unreadable("hooks/host-sessions.json"),
    "bindings-a-list": lambda ws: write(ws.bindings_file, b"[]"),
    "instance-not-json": instance(b"{"),
    "instance-huge-pid": instance(b'{"pid": 18446744073709551616}'),
    "instance-surrogate-name": instance(b'{"hostname": "\\ud800"}'),
    "instance-a-fifo": fifo_at("instances/one.json"),
    "session-record-not-json": session_record(b"{"),
    "session-record-a-fifo": lambda ws: (session_record(b"{}")(ws),
                                         fifo_at("sessions/abc/session.json")(ws)),
    "trust-file-not-json": trust_file(b"{"),
    "trust-file-others-may-write": trust_file(b"{}", 0o666),
    "id-file-odd": id_file(b"\x00\xff"),
}
