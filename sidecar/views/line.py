"""`sidecar status --line`: one short line for a status bar, at the cost of `emit`.

A status bar runs it on every refresh, so, like `emit`, it is dispatched before anything heavy
is imported and loads only the standard library's C parts (`_json` without the `re` that
`json` pulls in, `_sha1`) and the base/ and views/ modules it reads through: it reads the few
small files it needs and nothing else.

- With a session's JSON on standard input (Claude Code's `statusLine` command passes one:
  `session_id`, `cwd`, `workspace.project_dir`...), it shows that session's state and its
  next follow-up: `working 2 min · post-task in 8 s`.
- Without one (tmux's `status-right`), it counts the sessions of every registered workspace:
  `3 working · 1 waiting · 2 queued`.

It never fails its caller's UI: whatever it cannot read, it says so in a few words, and it
always exits 0. Files under `.context/` are opened without following any symlink.
"""

import os
import select
import stat  # already loaded by os
import sys
import time

from sidecar.base import paths
from sidecar.base.escapes import escaped
from sidecar.base.files import loads, obj
from sidecar.base.timeutil import parse_ts
from sidecar.base.words import is_due, span
from sidecar.views import activity
from sidecar.views.activity import WORDS, Activity, State

MAX_FILE = 16 * 1024 * 1024  # far above any state file the line reads; bounds a hostile one
STDIN_WAIT = 0.5  # seconds to wait for a payload on a pipe that has not said anything yet
NOT_TRACKED = "sidecar: not tracked"
USAGE = "usage: sidecar status --line [--source NAME] [--root DIR]... [--then COMMAND] [--cost]\n"


class Unreadable(Exception):
    """A file the line needs cannot be read; the text says which, in a word or two."""


# -- the files it reads, and what it says of them ------------------------------------------------

def read_json(root: str, *names: str) -> object:
    """root/.context/<names...> as JSON, no symlink followed from `.context` down; None if it
    does not exist, Unreadable if it cannot be read, is not JSON, or is no regular file of
    one link (a FIFO would block the bar's every refresh; a hard link is some other file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fds = []
    try:
        fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        for name in (paths.CONTEXT, *names[:-1]):
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


def describe(now_doing: Activity, now: float) -> str:
    """A state as the line says it: `working 2 min (Bash)`, `waiting for you 1 min`,
    `ended 3 min ago` (a working session's last tool alone: the bar has no room for more)."""
    text, since = WORDS[now_doing.state], now_doing.since
    if since is not None:
        text += f" {span(now - since)} ago" if now_doing.state == State.ENDED else f" {span(now - since)}"
    detail = now_doing.detail if now_doing.state == State.WORKING else ""
    return f"{text} ({detail[:20]})" if detail else text


def firing(root: str, entry: dict) -> str | None:  # type: ignore[type-arg]
    """How far a queued follow-up has gone: `running` (claimed by an instance, or its run
    begun), its outcome once its action has ended (not yet recorded: base/runs.py), or None
    while it waits."""
    run = entry.get("run")
    if isinstance(run, dict):
        from sidecar.base import runs  # (only while a follow-up runs)

        return runs.ended_in(root, entry.get("hookId"), run.get("log")) or "running"
    return "running" if entry.get("claimedBy") else None


def next_follow_up(root: str, hooks: object, host: str, session_id: str, now: float) -> str:
    """The session's soonest follow-up: `post-task in 8 s`, `post-task running`; '' if none."""
    best: tuple[float, str] | None = None
    for entry in obj(hooks).get("pending") or ():
        if not isinstance(entry, dict) or entry.get("sessionId") != session_id or entry.get("host") != host:
            continue
        name = str(entry.get("hookId") or "follow-up")[:24]
        state = firing(root, entry)
        if state is not None:
            return f"{name} {'running' if state == 'running' else 'ended'}"
        due = parse_ts(entry.get("dueAt"))
        due = now if due is None else due
        if best is None or due < best[0]:
            best = (due, name)
    if best is None:
        return ""
    return f"{best[1]} due now" if is_due(best[0], now) else f"{best[1]} in {span(best[0] - now)}"


# -- the session a status line's payload names -------------------------------------------------

def _where(payload: dict) -> str | None:  # type: ignore[type-arg]
    folders = obj(payload.get("workspace"))
    for value in (folders.get("project_dir"), folders.get("current_dir"), payload.get("cwd")):
        if isinstance(value, str) and value:
            found = paths.find_workspace(value)
            if found is not None:
                return found
    return None


def _bound(bindings: object, host: str | None, session_id: str) -> tuple[str, str] | None:
    """(host, harness id) of a binding naming the session: of `host`, or of any host."""
    by_host = obj(obj(bindings).get("bindings"))
    for name in [host] if host is not None else sorted(k for k in by_host if isinstance(k, str)):
        binding = obj(obj(by_host.get(name)).get(session_id))
        hid = binding.get("harnessSessionId")
        if isinstance(hid, str) and hid:
            return name, hid
    return None


def session_line(payload: dict, host: str | None, roots: list[str], now: float,  # type: ignore[type-arg]
                 cost: bool = False) -> str:
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return NOT_TRACKED
    root = roots[0] if roots else _where(payload)
    if root is None:
        return ""  # no sidecar workspace here: nothing to say
    try:
        bound = _bound(read_json(root, "runtime", "hooks", "host-sessions.json"), host, session_id)
    except Unreadable:
        bound = None  # an ended session's record is found without its binding all the same
    if bound is None and host is None:
        return NOT_TRACKED
    if bound is None:  # no binding names it (ended, or not yet bound): its id is derived
        from sidecar.base.ids import harness_id  # (only then: importing it costs the line)

        bound = str(host), harness_id(str(host), session_id)
    host, hid = bound
    if not hid.replace("-", "").isalnum():
        return NOT_TRACKED
    record = read_json(root, "runtime", "sessions", hid, "session.json")
    if not isinstance(record, dict):
        return NOT_TRACKED
    parts = [describe(activity.of(record), now)]
    if cost:  # asked for (--cost): what it has cost so far, where the record knows it
        from sidecar.views import cost as costs  # (only then)

        spent = costs.of_record(record)
        if spent is not None and costs.number(spent.get("usd")) is not None:
            parts.append(costs.shown(spent))
    try:
        follow_up = next_follow_up(root, read_json(root, "runtime", "hooks.json"), host, session_id, now)
    except Unreadable as exc:
        follow_up = str(exc)
    return " · ".join(parts + [follow_up] if follow_up else parts)


# -- every registered workspace, counted -------------------------------------------------------

def registered() -> list[str]:
    """The registry's workspace roots; Unreadable if broken, a FIFO or anything else that is
    no regular file included (a read of it would never end)."""
    try:
        found = paths.read_registry()
        return [] if found is None else paths.registry_roots(loads(found.decode("utf-8")))
    except (OSError, ValueError):
        raise Unreadable("registry unreadable") from None


def count_workspace(root: str, counts: dict[str, int]) -> None:
    """Add one workspace's live sessions (those bound) and follow-ups to `counts`."""
    by_host = obj(obj(read_json(root, "runtime", "hooks", "host-sessions.json")).get("bindings"))
    for per_host in by_host.values():
        for binding in obj(per_host).values():
            hid = obj(binding).get("harnessSessionId")
            if not isinstance(hid, str) or not hid.replace("-", "").isalnum():
                continue
            try:
                record = read_json(root, "runtime", "sessions", hid, "session.json")
            except Unreadable:
                counts["unreadable"] += 1
                continue
            if isinstance(record, dict):
                counts[activity.of(record).state] += 1
    try:
        pending = obj(read_json(root, "runtime", "hooks.json")).get("pending") or ()
    except Unreadable:
        counts["unreadable"] += 1
        return
    for entry in pending:
        state = firing(root, entry) if isinstance(entry, dict) else "ended"
        if state in ("running", None):  # one whose action has ended runs no more, nor waits
            counts["queued" if state is None else "running"] += 1


SHOWN = (("working", "working"), ("waiting", "waiting"), ("limited", "limited"),
         ("queued", "queued"), ("running", "follow-ups running"), ("unreadable", "unreadable"))


def counts_line(roots: list[str]) -> str:
    counts = dict.fromkeys(("working", "waiting", "idle", "limited", "ended", "queued",
                            "running", "unreadable"), 0)
    try:
        roots = roots or registered()
    except Unreadable as exc:
        return f"sidecar: {exc}"
    for root in roots:
        try:
            count_workspace(root, counts)
        except Unreadable:
            counts["unreadable"] += 1  # one bad workspace never hides the others
    parts = [f"{counts[key]} {label}" for key, label in SHOWN if counts[key]]
    return " · ".join(parts) if parts else ("no active sessions" if not counts["idle"]
                                            else f"{counts['idle']} idle")


# -- the command -------------------------------------------------------------------------------

def read_stdin(stream: object) -> bytes:
    """What standard input holds, if anything comes; b"" at a terminal or with nothing there
    (a status bar's stdin may be an open pipe that never says a word)."""
    fileno = getattr(stream, "fileno", None)
    chunks: list[bytes] = []
    try:
        fd = fileno() if fileno is not None else -1
        if fd < 0 or os.isatty(fd) or not select.select([fd], [], [], STDIN_WAIT)[0]:
            return b""
        size = 0
        while size <= MAX_FILE and (chunk := os.read(fd, 65536)):
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError):
        pass
    return b"".join(chunks)


def payload_of(data: bytes) -> dict | None:  # type: ignore[type-arg]
    """The session JSON a status line is given; None if it is not a JSON object."""
    try:
        payload = loads(data.decode("utf-8")) if data.strip() else None
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def options(argv: list[str]) -> dict[str, list[str]]:
    """`--source NAME`, `--then COMMAND` and each `--root DIR`, as `--x value` or `--x=value`
    (the `--line` flag itself is already known); ValueError names a word it does not know."""
    given: dict[str, list[str]] = {"--source": [], "--root": [], "--then": [], "--cost": []}
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        key, eq, value = word.partition("=")
        if key in given and (eq or rest):
            given[key].append(value if eq else rest.pop(0))
        elif word == "--cost":
            given[word].append(word)
        elif word != "--line":
            raise ValueError(word)
    given["--root"] = [os.path.abspath(root) for root in given["--root"]]
    return given


def ours(given: dict[str, list[str]], data: bytes) -> str:
    """sidecar's own line: the session's, given one, else the counts."""
    payload = payload_of(data)
    host = given["--source"][-1] if given["--source"] else None
    try:
        if payload is not None and "session_id" in payload:
            return session_line(payload, host, given["--root"], time.time(), bool(given["--cost"]))
        return counts_line(given["--root"])
    except Unreadable as exc:
        return f"sidecar: {exc}"
    except Exception:  # a status bar must never show a traceback or lose its line
        return "sidecar: ?"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[2:] if argv is None else argv
    try:
        given = options(args)
    except ValueError as exc:
        sys.stderr.write(f"sidecar status --line: unknown option {str(exc)[:60]!r}\n{USAGE}")
        given = {"--source": [], "--root": [], "--then": [], "--cost": []}
    data = read_stdin(sys.stdin)
    lines = []
    for command in given["--then"]:  # the user's own status line first, as it was
        from sidecar.views.theirs import run_theirs  # (only for a user who has their own)

        try:
            theirs = run_theirs(command, data)
        except OSError as exc:
            theirs = f"sidecar: the status line command did not run ({exc.strerror})"
        lines += [theirs] if theirs else []
    # sidecar's own line shows what a host or a file said (a tool's name) escaped: a status
    # bar is a terminal too. The user's own command's line is theirs, colours and all.
    text = escaped(ours(given, data))
    lines += [text] if text or not lines else []
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0
