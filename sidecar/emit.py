"""`sidecar emit`: the hot path of every agent hook.

It drops one event into a workspace's inbox (write a dotfile, rename it to `*.json`) and gets
out. It imports nothing beyond what the interpreter has loaded at start-up (`os`, `sys`,
`time`): even a JSON library costs more than the whole budget of a hook, so a host's payload
is written through as it came, with the few fields sidecar adds spliced in as text. The daemon
does the parsing and validating, and sets aside whatever is malformed.

Whatever happens, it prints `{"continue": true}` and exits 0, so a host is never blocked.
"""

import os
import sys
import time

CONTINUE = b'{"continue": true}\n'
USAGE = """usage: sidecar emit [EVENT] [--session-id ID] [--source NAME] [--root DIR]

Drop one event into the nearest workspace's inbox. With no EVENT, read a host's hook
JSON from standard input (or take it from a JSON argument, as Codex's notify passes it).
Always prints {"continue": true} and exits 0, so a host is never blocked.
"""
CONTEXT_DIR = ".context"
INBOX_PARTS = (".context", "runtime", "inbox")


def json_string(text: str) -> str:
    """Quote `text` as a JSON string (the subset of escaping JSON requires)."""
    out = []
    for ch in text:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def find_workspace(start: str) -> str | None:
    """The nearest folder at or above `start` that holds `.context/`."""
    path = os.path.abspath(start)
    while True:
        if os.path.isdir(os.path.join(path, CONTEXT_DIR)):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def payload_cwd(raw: bytes) -> str | None:
    """The value of the payload's `"cwd"` string, found without a JSON parser.

    Hosts put `cwd` at the top of their payloads; a wrong guess costs nothing worse than the
    current-folder fallback, since the daemon reads the real field.
    """
    at = raw.find(b'"cwd"')
    if at < 0:
        return None
    rest = raw[at + 5 :].lstrip()
    if not rest.startswith(b":"):
        return None
    rest = rest[1:].lstrip()
    if not rest.startswith(b'"'):
        return None
    end = 1
    while True:
        end = rest.find(b'"', end)
        if end < 0:
            return None
        backslashes = 0
        while rest[end - 1 - backslashes] == 0x5C:
            backslashes += 1
        if backslashes % 2 == 0:
            break
        end += 1
    body = rest[1:end]
    try:
        if b"\\" not in body:
            return body.decode("utf-8")
        import json  # rare: an escaped path is worth the import

        value = json.loads(b'"' + body + b'"')
        return value if isinstance(value, str) else None
    except ValueError:
        return None


def splice_fields(raw: bytes, fields: list[tuple[str, str]]) -> bytes:
    """Add `"key": value` pairs at the front of a JSON object, skipping keys it already has.

    A payload's own field wins over an added one, and no key is ever written twice. A payload
    that is not an object is left as it is, for the daemon to reject with a reason.
    """
    body = raw.lstrip()
    if not body.startswith(b"{"):
        return raw
    added = [
        f'"{key}":{value}'.encode()
        for key, value in fields
        if f'"{key}"'.encode() not in body
    ]
    if not added:
        return raw
    inner = body[1:]
    separator = b"" if inner.lstrip().startswith(b"}") else b","
    return b"{" + b",".join(added) + separator + inner


def parse_args(args: list[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """Split `args` into options, positionals and complaints (never raises)."""
    options: dict[str, str] = {}
    positionals: list[str] = []
    complaints: list[str] = []
    known = {"--session-id": "session_id", "--source": "source", "--root": "root"}
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


def build_event(options: dict[str, str], positionals: list[str]) -> tuple[bytes | None, str]:
    """The bytes of the event file, or None and the reason there is nothing to send."""
    fields: list[tuple[str, str]] = []
    if "source" in options:
        fields.append(("host", json_string(options["source"])))
    hook_id = os.environ.get("SIDECAR_HOOK_ID")
    if hook_id:
        # Runs started by a follow-up hook carry its id, so their own session-end cannot
        # enqueue that hook again, whatever session id the host gives the resumed run.
        fields.append(("sidecarHookId", json_string(hook_id)))
    fields.append(("ts", repr(time.time())))

    if positionals and not positionals[0].lstrip().startswith("{"):
        session_id = options.get("session_id")
        if not session_id:
            return None, "an EVENT needs --session-id; nothing emitted"
        fields[:0] = [
            ("event", json_string(positionals[0])),
            ("session_id", json_string(session_id)),
            ("cwd", json_string(os.getcwd())),
        ]
        return splice_fields(b"{}", fields), ""

    if positionals:  # a JSON payload passed as an argument (Codex's notify does this)
        raw = positionals[-1].encode("utf-8", "surrogateescape")
    else:
        stdin = sys.stdin
        if stdin is None or stdin.isatty():
            return None, "no EVENT given and no hook JSON on standard input; nothing emitted"
        raw = stdin.buffer.read()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        return None, "empty payload; nothing emitted"
    if "session_id" in options:
        fields.insert(0, ("session_id", json_string(options["session_id"])))
    return splice_fields(raw, fields), ""


def drop(workspace: str, data: bytes) -> str:
    """Write `data` into the workspace's inbox by write-then-rename; returns the file name."""
    inbox = os.path.join(workspace, *INBOX_PARTS)
    if not os.path.isdir(inbox):
        os.makedirs(inbox, mode=0o700, exist_ok=True)
    # Names sort in arrival order; pid and random bytes keep concurrent producers apart.
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}"
    temp = os.path.join(inbox, "." + name + ".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    final = os.path.join(inbox, name + ".json")
    os.rename(temp, final)
    return final


def main(argv: list[str] | None = None) -> int:
    """Entry point; `argv` excludes the program name and may start with `emit`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "emit":
        args = args[1:]
    options, positionals, complaints = parse_args(args)
    try:
        if "help" in options:
            sys.stderr.write(USAGE)
        else:
            for complaint in complaints:
                sys.stderr.write(f"sidecar emit: {complaint}\n")
            data, why = build_event(options, positionals)
            if data is None:
                sys.stderr.write(f"sidecar emit: {why}\n")
            else:
                start = options.get("root") or payload_cwd(data) or os.getcwd()
                workspace = find_workspace(start)
                if workspace is None and "root" not in options and start != os.getcwd():
                    workspace = find_workspace(os.getcwd())
                if workspace is None:
                    sys.stderr.write(
                        f"sidecar emit: no workspace (.context/) at or above {start}; "
                        "run `sidecar init` there; nothing emitted\n"
                    )
                else:
                    drop(workspace, data)
    except Exception as exc:  # a hook must never fail its host
        sys.stderr.write(f"sidecar emit: {exc}\n")
    sys.stdout.buffer.write(CONTINUE)
    sys.stdout.flush()
    return 0
