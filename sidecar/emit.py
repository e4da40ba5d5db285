"""`sidecar emit`: the hot path of every agent hook.

It drops one event into a workspace's inbox (write a dotfile, rename it to `*.json`) and gets
out. It imports nothing beyond the interpreter's built-in modules (`posix`, `sys`, `time`) and
sidecar's `posixos`: the launcher starts it without `site`, and even `os` costs a seventh of
that start. A host's payload is written through as it came, inside a small envelope that
carries the fields sidecar adds. The daemon does the parsing and validating, and sets aside
whatever is malformed.

Whatever happens, it prints `{"continue": true}` and exits 0, so a host is never blocked.
"""

import posix
import sys
import time

from sidecar.base import paths, posixos, proc
from sidecar.base.rawjson import json_string, top_level_string

# System calls through `os` where something loaded it already (its functions are posix's own,
# and a test may stand in for one there), else through `posix`, without paying for `os`.
os = sys.modules.get("os", posix)

CONTINUE = b'{"continue": true}\n'
USAGE = """usage: sidecar emit [EVENT] [--session-id ID] [--source NAME] [--root DIR] [--event NAME]

Drop one event into the nearest workspace's inbox. With no EVENT, read a host's hook
JSON from standard input (or take it from a JSON argument, as a notify program passes it);
--event names the event, over any name the payload has (for a host whose payloads
name none).
Always prints {"continue": true} and exits 0, so a host is never blocked.

Example: sidecar emit session-end --session-id 6f1c2d3e
"""
ENVELOPE = "sidecarEnvelope"  # the key that marks a file `emit` wrapped (see `envelope`)
INBOX_PARTS = (".context", "runtime", "inbox")


def envelope(payload: bytes, meta: list[tuple[str, str]]) -> bytes:
    """The event file: the payload unchanged, inside an envelope with sidecar's own fields.

    Nothing is spliced into the payload, so no key of the payload's, at any depth, is ever
    mistaken for one of sidecar's; the daemon unpacks the envelope (`events.parse`).
    """
    fields = ",".join(f'"{key}":{value}' for key, value in [("version", "1"), *meta])
    return b'{"' + ENVELOPE.encode() + b'":{' + fields.encode() + b'},"payload":' + payload + b"}"


def parse_args(args: list[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """Split `args` into options, positionals and complaints (never raises)."""
    options: dict[str, str] = {}
    positionals: list[str] = []
    complaints: list[str] = []
    known = {"--session-id": "session_id", "--source": "source", "--root": "root", "--event": "event"}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in known:
            if not eq:
                if i + 1 >= len(args):
                    complaints.append(f"{name} needs a value")
                    break
                i += 1
                value = args[i]
            options[known[name]] = value
        elif arg in ("-h", "--help"):
            options["help"] = "1"
        elif arg.startswith("--") and not arg.startswith("--{"):
            complaints.append(f"unknown option {arg}")
        else:
            positionals.append(arg)
        i += 1
    return options, positionals, complaints


def host_meta() -> list[tuple[str, str]]:
    """The hook's host, so its death can end the session: its pid, its start, its space; the
    name of the program that ran the hook, so the daemon can tell which host that is; and each
    `*_PID` variable of the hook's environment that names one of its ancestors (a host's own
    word for its process: the daemon knows which host sets which)."""
    pid, start, name = proc.host_process()
    meta = [("hostPid", str(pid))]
    if start is not None:
        meta.append(("hostStart", str(start)))
    if name is not None:
        meta.append(("hostName", json_string(name)))
    # (A pid has at most 10 digits: a longer value is no pid, and is never made a number.)
    claims = {variable: int(value) for variable, value in posixos.variables_ending("_PID")
              if len(value) <= 10 and value.isascii() and value.isdigit() and 1 < int(value) < 1 << 31}
    ancestors = proc.ancestors_among(set(claims.values())) if claims else {}
    named = [f"{json_string(variable)}:[{claimed},{ancestors[claimed]}]"
             for variable, claimed in claims.items() if claimed in ancestors]
    if named:
        meta.append(("pidClaims", "{" + ",".join(named) + "}"))
    space = proc.process_space()
    if space is not None:
        meta.append(("hostSpace", json_string(space)))
    return meta


def build_event(options: dict[str, str], positionals: list[str]) -> tuple[bytes | None, str, str]:
    """The event file's bytes and the folder to route it by; or None and why not."""
    meta: list[tuple[str, str]] = [("ts", repr(time.time()))]
    if "source" in options:
        meta.append(("host", json_string(options["source"])))
    hook_id = posixos.getenv("SIDECAR_HOOK_ID")
    if hook_id:
        # Runs started by a follow-up hook carry its id, so their own session-end cannot
        # enqueue that hook again, whatever session id the host gives the resumed run.
        meta.append(("hookId", json_string(hook_id)))
    if options.get("session_id"):
        meta.append(("sessionId", json_string(options["session_id"])))
    if options.get("event"):
        # A host whose payloads name no event (one hook command per event) says it here.
        meta.append(("event", json_string(options["event"])))

    if positionals and not positionals[0].lstrip().startswith("{"):
        if not options.get("session_id"):
            return None, "an EVENT needs --session-id; nothing emitted", ""
        cwd = os.getcwd()
        payload = (f'{{"event":{json_string(positionals[0])},'
                   f'"session_id":{json_string(options["session_id"])},"cwd":{json_string(cwd)}}}')
        return envelope(payload.encode("utf-8", "surrogateescape"), meta), "", cwd

    if positionals:  # a JSON payload passed as an argument (Codex's notify does this)
        raw = positionals[-1].encode("utf-8", "surrogateescape")
    else:
        stdin = sys.stdin
        if stdin is None or stdin.isatty():
            return None, "no EVENT given and no hook JSON on standard input; nothing emitted", ""
        raw = stdin.buffer.read()
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    if not raw.strip():
        return None, "empty payload; nothing emitted", ""
    meta += host_meta()
    return envelope(raw, meta), "", top_level_string(raw, "cwd") or ""


def registered(workspace: str, folder: int) -> bool:
    """Whether this machine's user ran `sidecar init` for `workspace` (it is in their registry).

    A `.context/` that came with a clone, and was never initialised here, gets nothing: a
    user-level hook (Codex's, Gemini's) runs in every folder. The registry is small JSON that
    sidecar writes itself, so the quoted path is looked for as bytes: no JSON parser. `folder`
    is the workspace's, open: its real path is the kernel's name for it. A registry that
    cannot be read (a FIFO in its place included) registers nothing."""
    try:
        data = paths.read_registry()
    except OSError:
        return False
    if data is None:
        return False
    quoted = json_string(posixos.realpath(folder, workspace)).encode("utf-8", "surrogateescape")
    return quoted in data


class Refused(OSError):
    """The workspace's runtime is a symlink or not a folder: always worth a line on stderr."""


class NotInitialised(Refused):
    """Never initialised on this machine: quiet, since user-level hooks run everywhere."""


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_inbox(workspace: str, fd: int) -> int:
    """The inbox folder, reached from the workspace (`fd`, which it closes) without following a
    link (openat with O_NOFOLLOW at each step: a shipped or swapped symlink is refused, never
    written through). The same walk as `safedir.open_dir`, kept here because emit imports
    nothing of sidecar's but `posixos`. A missing runtime or inbox is made, 0700."""
    try:
        for i, name in enumerate(INBOX_PARTS):
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if i == 0:
                    raise
                os.mkdir(name, 0o700, dir_fd=fd)
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except NotADirectoryError:
                shown = posixos.join(workspace, *INBOX_PARTS[:i + 1])
                raise Refused(f"{shown} is a symlink or not a folder; sidecar never writes "
                              "through one; nothing emitted") from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def drop(workspace: str, data: bytes) -> str:
    """Write `data` into the workspace's inbox by write-then-rename; returns the file name.
    Refused (nothing written) where the workspace was never initialised on this machine."""
    folder = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not registered(workspace, folder):
            raise NotInitialised(f"{workspace} was not initialised on this machine (run "
                                 "`sidecar init` there); nothing emitted")
    except BaseException:
        os.close(folder)
        raise
    inbox = open_inbox(workspace, folder)
    # Names sort in arrival order; pid and random bytes keep concurrent producers apart.
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}"
    temp = "." + name + ".tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o600, dir_fd=inbox)
        try:
            try:
                view = memoryview(data)
                while view:  # a short write (a nearly full disk) goes on, or fails whole
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.rename(temp, name + ".json", src_dir_fd=inbox, dst_dir_fd=inbox)
        except BaseException:
            os.unlink(temp, dir_fd=inbox)  # never leave a temporary file behind (a full disk)
            raise
    finally:
        os.close(inbox)
    return posixos.join(workspace, *INBOX_PARTS, name + ".json")


def main(argv: list[str] | None = None) -> int:
    """Entry point; `argv` excludes the program name and may start with `emit`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "emit":
        args = args[1:]
    options, positionals, complaints = parse_args(args)
    if "help" in options:
        sys.stdout.write(USAGE)  # help only: no event, and nothing for a host to parse
        return 0
    try:
        for complaint in complaints:
            sys.stderr.write(f"sidecar emit: {complaint} (see sidecar emit --help)\n")
        if not complaints:  # never read a terminal, or a payload meant for other options
            _emit(options, positionals)
    except Exception as exc:  # a hook must never fail its host
        sys.stderr.write(f"sidecar emit: {exc}\n")
    sys.stdout.buffer.write(CONTINUE)
    sys.stdout.flush()
    return 0


def _emit(options: dict[str, str], positionals: list[str]) -> None:
    data, why, cwd = build_event(options, positionals)
    if data is None:
        sys.stderr.write(f"sidecar emit: {why}\n")
        return
    start = options.get("root") or cwd or os.getcwd()
    workspace = paths.find_workspace(start)
    if workspace is None and "root" not in options and start != os.getcwd():
        workspace = paths.find_workspace(os.getcwd())
    if workspace is not None:
        try:
            drop(workspace, data)
        except Refused as exc:
            if sys.stderr.isatty() or not isinstance(exc, NotInitialised):
                sys.stderr.write(f"sidecar emit: {exc}\n")
    elif sys.stderr.isatty():  # a person trying it by hand; a host's hook stays quiet
        sys.stderr.write(f"sidecar emit: no workspace (.context/) at or above {start}; "
                         "run `sidecar init` there; nothing emitted\n")
