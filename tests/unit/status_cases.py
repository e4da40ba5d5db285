"""Workspaces for `status`'s golden reports (test_status_golden.py): the cases its reports
were pinned over before the report had one builder, a fixed-seed run of random state files,
and the runtime states a hostile user can make (`MATRIX`).

Each case is a function that shapes an initialised workspace (and may return a cleanup)."""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson

from sidecar import jsonfile
from sidecar.base.proc import start_time
from sidecar.base.timeutil import iso
from sidecar.layout import Workspace

NOW = 1_796_000_000.25
GONE = 2**31 - 1  # no such process
Case = Callable[[Workspace], object]


def write(path: Path, data: object) -> None:
    """`data` as JSON (any integer: more than orjson writes), or the bytes given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())


def record(ws: Workspace, hid: str, **sidecar: object) -> None:
    write(ws.sessions / hid / "session.json",
          {"id": hid, "status": "active", "metadata": {"host": "claude-code", "sidecar": sidecar}})


def bind(ws: Workspace, bindings: object) -> None:
    write(ws.bindings_file, {"bindings": bindings})


def hooks_doc(ws: Workspace) -> dict:
    return orjson.loads(ws.hooks_file.read_bytes())


def set_hooks(ws: Workspace, doc: object, taken_up: bool = True) -> None:
    """hooks.json as given; `taken_up`: its last good copy the same bytes (as the daemon keeps
    a valid one, or as a user copies a file over it)."""
    try:
        data = doc if isinstance(doc, bytes) else jsonfile.dumps(doc)
    except TypeError:  # an integer orjson does not write
        data = json.dumps(doc).encode()
    write(ws.hooks_file, data)
    if taken_up:
        write(ws.runtime / "hooks.last-good.json", data)


def with_hook(ws: Workspace, hook: dict, taken_up: bool = True, **top: object) -> None:
    doc = hooks_doc(ws)
    doc["hooks"][hook["id"] if isinstance(hook.get("id"), str) else "odd"] = hook
    set_hooks(ws, {**doc, **top}, taken_up)


# -- the explicit cases ---------------------------------------------------------------------


def new_workspace(ws: Workspace) -> None:
    pass


def sessions_and_bindings(ws: Workspace) -> None:
    me = os.getpid()
    for i in range(30):
        write(ws.sessions / f"s{i:03d}" / "session.json", {"id": f"s{i:03d}", "status": "completed"})
    (ws.sessions / ".tmp-x").mkdir()
    record(ws, "alive", hostPid=me, hostStart=start_time(me))
    record(ws, "reused", hostPid=me, hostStart=12345)
    record(ws, "gone", hostPid=GONE)
    record(ws, "nopid", cwd="/w")
    write(ws.sessions / "list" / "session.json", [1, 2])
    bind(ws, {
        "claude-code": {
            "a": {"harnessSessionId": "alive", "updatedAt": iso(NOW - 5)},
            "b": {"harnessSessionId": "reused", "updatedAt": iso(NOW - 500.5)},
            "c": {"harnessSessionId": "gone", "updatedAt": "2026-11-30T10:00:00+02:00"},
            "d": {"harnessSessionId": "nopid", "updatedAt": 12},
            "e": {"harnessSessionId": "../../etc", "updatedAt": iso(NOW - 1)},
            "f": {"harnessSessionId": "missing"},
            "g": {"harnessSessionId": "list", "updatedAt": "not a time"},
            "h": "not an object",
        },
        "codex": "not an object either",
        "gemini": {"x": {"updatedAt": iso(NOW + 30)}},
    })


def inbox_and_rejected(ws: Workspace) -> None:
    for name in ("1.json", "2.json", "junk.txt", ".3.tmp", "4.tmp", "sub"):
        path = ws.inbox / name
        path.mkdir() if name == "sub" else path.write_text("{}")
        os.utime(path, (NOW - 100, NOW - 100 + len(name)))
    (ws.inbox / "link.json").symlink_to("/etc/passwd")
    for name in ("a.json", "a.json.error.json", "b", ".c.tmp"):
        (ws.rejected / name).write_text("{}")


def instances_live_dead_and_odd(ws: Workspace) -> Callable[[], None]:
    from sidecar import locks

    info = {"pid": os.getpid(), "hostname": "h", "version": "0.1.0", "build": "0.1.0+abc",
            "role": "leader", "startedAt": iso(NOW - 60), "heartbeatAt": iso(NOW - 1.5),
            "applied": 7, "rejected": True, "errors": 2, "lastError": "oops",
            "plugins": {"p": {"calls": 3, "errors": 1, "hangs": 0}, "q": 5}}
    write(ws.instances / "live1.json", info)
    write(ws.instances / "dead1.json", {**info, "role": "standby", "pid": "12"})
    write(ws.instances / "bare.json", {})
    write(ws.instances / "list.json", [])
    write(ws.instances / ".hidden.json", info)
    write(ws.instances / "notes.txt", info)
    held = locks.try_lock(ws.lock("instance-live1"))
    return lambda: locks.release(held)


def usage(value: object) -> Case:
    return lambda ws: write(ws.runtime / "usage.json", value)


def hooks_and_queue(ws: Workspace) -> None:
    me = os.getpid()
    doc = hooks_doc(ws)
    post = doc["hooks"]["post-task"]
    post["history"] = [{"at": iso(NOW - 99), "status": "error: old", "log": "x.log"},
                       {"at": iso(NOW - 9), "status": "ok", "log": "post-task-2.log"}]
    post["lastStatus"], post["lastFiredAt"] = "ok", iso(NOW - 9)
    doc["hooks"]["old-style"] = {"id": "old-style", "name": "old style", "delayMinutes": 1.5,
                                 "enabled": False}
    doc["hooks"]["bare"] = {"id": "bare", "name": "bare", "enabled": False}
    doc["hooks"]["off-command"] = {"id": "off-command", "name": "off", "enabled": False,
                                   "action": ["make", "lint"], "history": ["not an object"]}
    doc["pending"] = [
        {"hookId": "post-task", "host": "claude-code", "sessionId": "s1", "dueAt": iso(NOW + 30),
         "retries": 2, "claimedBy": None},
        {"hookId": "post-task", "host": "codex", "sessionId": "s2", "dueAt": NOW - 3,
         "claimedBy": "inst-1", "retries": True,
         "run": {"pid": me, "start": start_time(me), "log": "r.log", "startedAt": iso(NOW - 2)}},
        {"hookId": "bare", "host": "gemini", "sessionId": "s3", "dueAt": "whenever",
         "claimedBy": "", "run": {"pid": GONE, "log": "g.log"}},
    ]
    set_hooks(ws, doc)


def no_hooks_file(ws: Workspace) -> None:
    ws.hooks_file.unlink()


def hand_edit_not_taken_up(ws: Workspace) -> None:
    doc = hooks_doc(ws)
    doc["hooks"]["post-task"]["delaySeconds"] = 99
    set_hooks(ws, doc, taken_up=False)


def untrusted_command(ws: Workspace) -> None:
    with_hook(ws, {"id": "lint", "name": "lint", "action": ["make", "lint"]})


def trusted_command(ws: Workspace) -> None:
    from sidecar.followups import trust
    from sidecar.followups.model import Hook

    hook = Hook.from_json({"id": "lint", "name": "lint", "action": ["make", "lint"]}, "$")
    with_hook(ws, hook.to_json())
    trust.trust(ws, trust.content(ws, hook), NOW)


def pulled_prompt(ws: Workspace) -> None:
    (ws.prompts / "post-task.md").write_text("Also push to production.\n")


def prompt_is_a_link(ws: Workspace) -> None:
    (ws.prompts / "post-task.md").unlink()
    os.symlink("/etc/hostname", ws.prompts / "post-task.md")


def notify_hook(ws: Workspace) -> None:
    with_hook(ws, {"id": "n", "name": "n", "action": {"notify": "desktop"}, "event": "needs-input"})


def failed_firing(ws: Workspace) -> None:
    doc = hooks_doc(ws)
    doc["hooks"] = {"post-task": {**doc["hooks"]["post-task"], "lastStatus": "error: exit 1",
                                  "history": [{"status": "error: exit 1", "log": "p.log"}]}}
    set_hooks(ws, doc)
    log = ws.runtime / "logs" / "post-task" / "p.log"
    write(log, b"$ [claude]\nworking\nNot logged in \xc2\xb7 Please run /login\n")


def bindings_bytes(data: bytes) -> Case:
    return lambda ws: write(ws.bindings_file, data)


def folder_is(folder: str, kind: str, elsewhere: str | None = None) -> Case:
    """The runtime's `folder` a file, a link to a folder elsewhere, or missing."""
    def make(ws: Workspace) -> None:
        path = ws.runtime / folder
        shutil.rmtree(path, ignore_errors=True)
        if kind == "file":
            path.write_text("")
        elif kind == "link":
            target = ws.root.parent / (elsewhere or f"elsewhere-{folder}")
            target.mkdir(exist_ok=True)
            path.symlink_to(target)
    return make


def fifo_at(name: str) -> Case:
    def make(ws: Workspace) -> None:
        path = ws.runtime / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        os.mkfifo(path)
    return make


def never_initialised(ws: Workspace) -> None:
    shutil.rmtree(ws.runtime)


CASES: dict[str, Case] = {
    "new-workspace": new_workspace,
    "sessions-and-bindings": sessions_and_bindings,
    "inbox-and-rejected": inbox_and_rejected,
    "instances-live-dead-and-odd": instances_live_dead_and_odd,
    "usage-plain": usage({"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 5, "sessions": 1}),
    "usage-odd-values": usage({"input": True, "output": 2.5, "extra": 1}),
    "usage-a-list": usage([1]),
    "usage-not-json": usage(b"not json"),
    "hooks-and-queue": hooks_and_queue,
    "no-hooks-file": no_hooks_file,
    "hand-edit-not-taken-up": hand_edit_not_taken_up,
    "untrusted-command": untrusted_command,
    "trusted-command": trusted_command,
    "pulled-prompt": pulled_prompt,
    "prompt-is-a-link": prompt_is_a_link,
    "notify-hook": notify_hook,
    "failed-firing": failed_firing,
    "bindings-past-64-bits": bindings_bytes(
        b'{"bindings": {"h": {"s": {"updatedAt": "2026-11-30T00:00:00Z", "n": 18446744073709551616}}}}'),
    "bindings-lone-surrogate": bindings_bytes(b'{"bindings": {"h": {"s": {"updatedAt": "\\ud800"}}}}'),
    "bindings-past-a-double": bindings_bytes(b'{"bindings": {"h": {"s": {"n": 1e999}}}}'),
    "bindings-not-json": bindings_bytes(b'{"bindings": [}'),
    "bindings-not-utf8": bindings_bytes(b"\xff\xfe"),
    "bindings-trailing": bindings_bytes(b'{"bindings": {}} trailing'),
    "runtime-folder-link": folder_is("instances", "link", "elsewhere"),
    "runtime-folder-file": folder_is("instances", "file"),
    "bindings-fifo": fifo_at("hooks/host-sessions.json"),
    "never-initialised": never_initialised,
}


# -- a fixed-seed run of random state files -------------------------------------------------

SAMPLES = ["2026-11-30T10:00:00Z", "2026-02-30T00:00:00Z", "0001-01-01T00:00:00.000Z",
           "alive", "gone"]


def json_value(rng: random.Random, depth: int = 0) -> object:
    """A JSON value of any kind a state file may hold (integers past 64 bits too)."""
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, 1, -1, 7, 2**63, -(2**63) - 1, 2**70, rng.randrange(-999, 999)])
    if kind == 2:
        return rng.choice([0.0, 1.5, -2.25, 1e-5, 1e300, rng.random()])
    if kind == 3:
        return "".join(rng.choice("ab é\x00\n\U0001f600") for _ in range(rng.randrange(6)))
    if kind in (4, 5):
        return rng.choice(SAMPLES)
    if kind == 6:
        return [json_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(["a", "", "é", "pid", "calls"]): json_value(rng, depth + 1)
            for _ in range(rng.randrange(3))}


def random_case(seed: int) -> Case:
    def make(ws: Workspace) -> None:
        rng = random.Random(seed)
        me = os.getpid()
        record(ws, "alive", hostPid=me, hostStart=start_time(me))
        record(ws, "gone", hostPid=GONE)
        bindings: dict[str, object] = {}
        for _ in range(rng.randrange(4)):
            per_host: dict[str, object] = {}
            for _ in range(rng.randrange(4)):
                if rng.random() < 0.7:
                    per_host[rng.choice(["s", "t", "u"])] = {
                        key: rng.choice(["alive", "gone", json_value(rng)]) if key == "harnessSessionId"
                        else json_value(rng)
                        for key in ("harnessSessionId", "updatedAt", "hostSessionId") if rng.random() < 0.7}
                else:
                    per_host[rng.choice(["v", "w"])] = json_value(rng)
            bindings[rng.choice(["claude-code", "codex", "x"])] = per_host if rng.random() < 0.8 \
                else json_value(rng)
        bind(ws, bindings)
        write(ws.instances / "one.json", {
            key: json_value(rng) for key in ("pid", "role", "heartbeatAt", "applied", "plugins",
                                             "lastError", "build") if rng.random() < 0.5})
        write(ws.runtime / "usage.json", json_value(rng))
    return make


RANDOM: dict[str, Case] = {f"random-{seed:02d}": random_case(seed) for seed in range(30)}
