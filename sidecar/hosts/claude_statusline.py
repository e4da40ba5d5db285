"""Claude Code's `statusLine`: `sidecar integrate claude-code --statusline` makes it
`sidecar status --line`, in the same settings file as the hooks.

A user who has a status line keeps it: only its `command` changes, to sidecar's with theirs
after `--then` (`sidecar status --line --source claude-code --then '<theirs>'`), which runs
theirs with the same input and prints its lines first, then sidecar's. Every other key of
theirs (`padding`...) stays as it is. Taking sidecar out puts their command back, or removes
the `statusLine` sidecar added, so the file is given back byte for byte; a file whose
status line could not be given back so (a command written with escapes JSON does not need)
is left alone, and the error says how to combine the two by hand.
"""

from __future__ import annotations

import copy
import os
import shlex
from pathlib import Path
from typing import Any

from sidecar.hosts import jsonedit, settings, userfile
from sidecar.hosts.base import IntegrateError

KEY = "statusLine"
THEN = "--then"


def command(sidecar: str, source: str, theirs: str | None) -> str:
    """sidecar's status line command, running `theirs` first if the user has one."""
    ours = f"{shlex.quote(sidecar)} status --line --source {source}"
    return f"{ours} {THEN} {shlex.quote(theirs)}" if theirs else ours


def parse(value: Any) -> tuple[bool, str | None]:
    """(whether a status line `command` is sidecar's, the user's command it runs first)."""
    if not isinstance(value, str):
        return False, None
    try:
        argv = shlex.split(value)
    except ValueError:
        return False, None
    if len(argv) < 3 or os.path.basename(argv[0]) != "sidecar" or argv[1:3] != ["status", "--line"]:
        return False, None
    theirs = argv[argv.index(THEN) + 1] if THEN in argv[:-1] else None
    return True, theirs


def with_ours(data: dict[str, Any], sidecar: str, source: str, path: Path) -> dict[str, Any]:
    """The settings with sidecar's status line (the user's own kept, run first)."""
    out = copy.deepcopy(data)
    line = out.get(KEY)
    if line is None:
        out[KEY] = {"type": "command", "command": command(sidecar, source, None)}
        return out
    if not isinstance(line, dict) or line.get("type") != "command" \
            or not isinstance(line.get("command"), str):
        raise IntegrateError(f"{path}: its {KEY} is not a command sidecar can run first; to "
                             f"combine them, make it a command that prints its own line, then "
                             f"runs `{command(sidecar, source, None)}` with the same input")
    mine, theirs = parse(line["command"])
    line["command"] = command(sidecar, source, theirs if mine else line["command"])
    return out


def without_ours(data: dict[str, Any]) -> dict[str, Any]:
    """The settings as they were before sidecar's status line: the user's command back."""
    out = copy.deepcopy(data)
    line = out.get(KEY)
    mine, theirs = parse(line.get("command") if isinstance(line, dict) else None)
    if not mine or not isinstance(line, dict):
        return out
    if theirs is None:
        del out[KEY]
    else:
        line["command"] = theirs
    return out


def install(path: Path, sidecar: str, source: str) -> bool:
    """Set sidecar's status line in `path`; True if the file changed. IntegrateError, and
    nothing written, where taking it out again could not give the file back as it is."""
    old = settings.read_text(path)
    data = settings.load_json(path)
    new_data = with_ours(data, sidecar, source, path)
    try:
        new = jsonedit.dumps_new(new_data) if old is None else jsonedit.rewrite(old, new_data)
        back = jsonedit.rewrite(new, without_ours(new_data)) if old is not None else None
    except jsonedit.JsonEditError as exc:
        raise IntegrateError(f"{path}: {exc}") from None
    if old is not None and back != old and without_ours(data) == data:
        theirs = data[KEY]["command"]
        raise IntegrateError(
            f"{path}: its {KEY} command is written in a way sidecar could not give back byte "
            f"for byte, so it is left as it is; to combine them, set its command to "
            f"{command(sidecar, source, theirs)!r}")
    if new == old:
        return False
    _write(path, new)
    return True


def remove(path: Path) -> bool:
    """Take sidecar's status line out of `path` (the user's own back); True if it changed."""
    if settings.read_text(path) is None:
        return False
    data = settings.load_json(path)
    return settings.save_json(path, without_ours(data))


def _write(path: Path, text: str) -> None:
    try:
        userfile.write_bytes(path, text.encode())
    except userfile.UserFileError as exc:
        raise IntegrateError(str(exc)) from None
