"""Claude Code's `statusLine`: `sidecar integrate claude-code --statusline` makes it
`sidecar status --line`, in the same settings file as the hooks.

A user who has a status line keeps it: only its `command` changes, to sidecar's with theirs
after `--then` (`sidecar status --line --source claude-code --then '<theirs>'`), which runs
theirs with the same input and prints its lines first, then sidecar's. Every other key of theirs
(`padding`...) stays as it is. A file with none of its own takes, in the same way, the status
line Claude Code would show without it: that of a file it ranks lower (the project's committed
settings, the user's), which is never written; and only into a file read wherever that one is
(the project's local settings: the committed ones go to every collaborator, who must not get the
user's own line). Taking sidecar out puts their command back, or removes the `statusLine`
sidecar added, so the file is given back byte for byte; a file whose status line could not be
given back so (a command written with escapes JSON does not need) is left alone, and the error
says how to combine the two by hand. What sidecar wrote is remembered (files/owned.py), before
it is written: a `sidecar status --line` the user wrote by hand is never taken out.

A status line sidecar added goes whole, with any key the user set in it since: Claude Code
refuses a `statusLine` without its `command` (and skips the whole file, permission rules
and all), and none of those keys means anything without one. Its `refreshInterval` (seconds;
Claude Code runs the line only when its own state changes otherwise, so `working` would not
count during a turn) is set where the line has none of the user's, and taken out again with
sidecar's command if it is still the value sidecar wrote.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
from pathlib import Path
from typing import Any

from sidecar.base.errors import SidecarError
from sidecar.hosts.base import IntegrateError
from sidecar.hosts.files import jsonedit, owned, settings

KEY = "statusLine"
REFRESH = "refreshInterval"
THEN = "--then"
COST = "--cost"  # the session's cost on the line too: added by hand, kept by a new integrate


def command(sidecar: str, source: str, theirs: str | None, cost: bool = False) -> str:
    """sidecar's status line command, running `theirs` first if the user has one."""
    ours = f"{shlex.quote(sidecar)} status --line --source {source}" + (f" {COST}" if cost else "")
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


def composed(line: Any, sidecar: str, source: str, path: Path, cost: bool = False) -> dict[str, Any]:
    """sidecar's status line, made from the user's `line` (found in `path`; None: none): theirs
    runs first, by the command they wrote, and their other keys stay as they were. `cost`:
    it shows the session's cost too."""
    if line is None:
        return {"type": "command", "command": command(sidecar, source, None, cost)}
    if not isinstance(line, dict) or line.get("type") != "command" \
            or not isinstance(line.get("command"), str):
        raise IntegrateError(f"{path}: its {KEY} is not a command sidecar can run first; to "
                             f"combine them, make it a command that prints its own line, then "
                             f"runs `{command(sidecar, source, None)}` with the same input")
    mine, theirs = parse(line["command"])
    return {**copy.deepcopy(line),
            "command": command(sidecar, source, theirs if mine else line["command"], cost)}


def shown_below(below: list[Path]) -> tuple[Any, Path | None]:
    """The status line Claude Code shows from the files it ranks below the one written (the
    first of them that has one, but sidecar's alone, which the new one shows already), and
    that file; (None, None) if none has."""
    for file in below:
        line = settings.load_json(file).get(KEY)
        if line is not None and parse(line.get("command") if isinstance(line, dict)
                                      else None) != (True, None):
            return line, file
    return None, None


def hand_added(line: Any, wrote: Any) -> dict[str, Any]:
    """The keys of sidecar's status line `line` that the user set by hand since sidecar wrote
    the others (`wrote`: those and their values, but the command); none if that is unknown."""
    if not isinstance(line, dict) or not isinstance(wrote, dict):
        return {}
    return {key: value for key, value in line.items()
            if key != "command" and (key not in wrote or wrote[key] != value)}


def without_ours(data: dict[str, Any], record: Any) -> dict[str, Any]:
    """The settings as they were before sidecar's status line (`record`: what sidecar
    remembers writing): the user's command back, without the `refreshInterval` sidecar set;
    or (its `added`: the file had none) no status line at all, whatever is in it now."""
    out = copy.deepcopy(data)
    line = out.get(KEY)
    mine, theirs = parse(line.get("command") if isinstance(line, dict) else None)
    if not mine or not isinstance(line, dict) or not isinstance(record, dict):
        return out
    if record.get("added") or theirs is None:
        del out[KEY]  # whole: a statusLine without its command makes the file unloadable
        return out
    line["command"] = theirs
    if REFRESH in record and line.get(REFRESH) == record[REFRESH]:
        del line[REFRESH]
    return out


def _with_interval(line: dict[str, Any], record: Any, interval: int) -> tuple[dict[str, Any], int | None]:
    """The user's `line` (sidecar's command in it) with sidecar's `refreshInterval` set to
    `interval` (0: none) where the user has none of their own; and the one sidecar set (None:
    none). One sidecar set before (`record`) is not the user's."""
    out = dict(line)
    if isinstance(record, dict) and REFRESH in record and out.get(REFRESH) == record[REFRESH]:
        del out[REFRESH]
    if REFRESH in out or not interval:
        return out, None
    return {**out, REFRESH: interval}, interval


def install(path: Path, sidecar: str, source: str, below: list[Path], hidden: list[Path],
            interval: int) -> str:
    """Set sidecar's status line in `path`, running first the user's: the file's own, or, if
    it has none, the one of the files `below` it that Claude Code would show otherwise (never
    written); of the files `hidden` below it, none is copied in (said, if one has a line).
    Its `refreshInterval` is `interval` seconds (0: none), unless the user set one. Says what
    it did. IntegrateError, and nothing written, where taking it out again could not give the
    file back as it is. A `sidecar status --line` the user wrote by hand stays as it is (and
    stays on uninstall: only what sidecar wrote is remembered as its)."""
    old = settings.read_text(path)
    data = settings.load_json(path)
    line = data.get(KEY)
    mine, _ = parse(line.get("command") if isinstance(line, dict) else None)
    # A `--cost` the user added to sidecar's command stays (docs/guide/status-line.md).
    cost = mine and isinstance(line, dict) and COST in shlex.split(line["command"])
    record = owned.read(source, str(path)).get(KEY)
    if mine and not isinstance(record, dict):
        return f"the status line already runs `sidecar status --line` in {path} (yours, left " \
               "as it is)"
    added = line is None or (mine and bool(record and record.get("added")))
    base, base_path = shown_below(below) if added else (line, path)
    ours, set_interval = _with_interval(composed(base, sidecar, source, base_path or path, cost),
                                        None if added else record, interval)
    wrote = {key: value for key, value in ours.items() if key != "command"}
    if added:  # what the user set by hand in sidecar's line since it wrote it stays while it does
        ours = {**ours, **hand_added(line, record.get("wrote") if record else None)}
    remembered = {"added": True, "wrote": wrote} if added else \
        {"added": False, **({REFRESH: set_interval} if set_interval else {})}
    new_data = {**data, KEY: ours}
    try:
        new = jsonedit.dumps_new(new_data) if old is None else jsonedit.rewrite(old, new_data)
        back = jsonedit.rewrite(new, without_ours(new_data, remembered)) if old is not None else None
    except jsonedit.JsonEditError as exc:
        raise IntegrateError(f"{path}: {exc}") from None
    if old is not None and back != old and without_ours(data, remembered) == data:
        raise IntegrateError(f"{path}: {_not_kept(line, ours)}")
    # Remembered first: a line of sidecar's that is not remembered would stay on uninstall,
    # and be taken for the user's own. Forgotten again if it cannot be written.
    _remember(path, source, remembered)
    if new != old:
        try:
            settings.write_text(path, new)
        except IntegrateError:
            _remember(path, source, record if isinstance(record, dict) else None, undo=True)
            raise
    theirs = parse(ours["command"])[1]
    return f"the status line runs `sidecar status --line` in {path}" + (
        f", and first {theirs} of {base_path}, the status line Claude Code showed (that file "
        f"is not changed)" if base_path not in (None, path) and theirs else "") + (
        _refreshed(ours.get(REFRESH), interval)) + (
        "" if new != old else " (already so; nothing changed)") + _hides(added, base, hidden)


def _refreshed(shown: Any, interval: int) -> str:
    """How often Claude Code runs the line again: `shown`, which is the user's own where it
    is not the `interval` asked for."""
    if shown is None:
        return ""
    return f", every {shown} s" + ("" if shown == interval else f" (your own {REFRESH}, kept)")


def _hides(added: bool, base: Any, hidden: list[Path]) -> str:
    """What the user no longer sees: a line of a file below that is not copied in."""
    file = shown_below(hidden)[1] if added and base is None else None
    return "" if file is None else (
        f"; it hides in this project the status line of {file}, which is not copied into a "
        f"file others read too: to see both, integrate it without --shared as well")


def _not_kept(line: Any, ours: dict[str, Any]) -> str:
    """Why a status line is not written, and what to write by hand."""
    if line is not None:
        return (f"its {KEY} command is written in a way sidecar could not give back byte for "
                f"byte, so it is left as it is; to combine them, set its command to {ours['command']!r}")
    return (f"sidecar could not add its {KEY} so that taking it out again gives the file back "
            f"byte for byte, so it is left as it is; to have it, add {json.dumps({KEY: ours})[1:-1]}")


def remove(path: Path, source: str) -> bool:
    """Take the status line sidecar wrote out of `path` (the user's own back); True if it
    changed. One sidecar did not write (the user's own `sidecar status --line`) stays."""
    record = owned.read(source, str(path)).get(KEY)
    if not isinstance(record, dict) or settings.read_text(path) is None:
        return False
    changed = settings.save_json(path, without_ours(settings.load_json(path), record))
    owned.change(source, str(path), lambda ours_here: ours_here.pop(KEY, None))
    return changed


def _remember(path: Path, source: str, record: dict[str, Any] | None, undo: bool = False) -> None:
    """Remember `record` as sidecar's status line in `path` (None: none). IntegrateError if it
    cannot be; an `undo` that cannot is let be: a record of a line that is not there (or not
    sidecar's) makes an uninstall change nothing."""
    def edit(ours_here: dict[str, Any]) -> None:
        if record is None:
            ours_here.pop(KEY, None)
        else:
            ours_here[KEY] = record
    try:
        owned.change(source, str(path), edit)
    except (OSError, SidecarError) as exc:
        if not undo:
            raise IntegrateError(f"{path}: sidecar could not remember its status line in its "
                                 f"integrations file ({exc}), so nothing was written") from None
