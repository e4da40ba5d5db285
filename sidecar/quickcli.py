"""The read-only commands answered before the command line framework (typer) is loaded:
`status` (its report read by quickstatus.py at the cost of a hook), `status --session ID` and
`sessions` (read by their own modules, without typer).

The launcher (bin/sidecar) and `python -m sidecar` call `main`. It answers what it can say as
the full command says it, and returns None for the rest, which the full command line then
answers: help, an option it does not know, any error to say, and whatever quickstatus
declines. Their options are the full commands' (cli/main.py, cli/sessions.py).
"""

from __future__ import annotations

import os
import sys
import time

from sidecar.base import paths
from sidecar.base.exitcodes import of_status
from sidecar.base.files import Declined

TYPE_CHECKING = False  # typing costs `status` 2 ms (see base/words.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FLAGS = {"status": ("--all", "--json"), "sessions": ("--active", "--json")}
VALUES = {"status": ("--root", "--session"), "sessions": ("--root", "--since", "--limit")}


def main(argv: list[str], full_start: Callable[[], None]) -> int | None:
    """Answer `argv` (the command's words, `status ...` or `sessions ...`); its exit code, or
    None where the full command line answers. `full_start` gives the installed packages (the
    launcher may have started Python without them): what reads records with orjson calls it."""
    if not argv or argv[0] not in FLAGS:
        return None
    given = options(argv[0], argv[1:])
    if given is None:
        return None
    if argv[0] == "sessions":
        full_start()
        from sidecar.cli.sessions import answer

        return answer(given)
    if "--session" in given:  # (even an empty one, as typer takes it: the full command says)
        full_start()
        from sidecar.cli.status import answer_session

        return answer_session(given)
    return status(given)


def options(command: str, args: list[str]) -> dict[str, Any] | None:
    """The options given, as typer takes them (`--x value`, `--x=value`, a value's last
    mention wins, `--root` of `sessions` repeats); None for anything else (help included)."""
    given: dict[str, Any] = {}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if word in FLAGS[command]:
            given[word] = True
        elif name in VALUES[command] and (eq or rest):
            value = value if eq else rest.pop(0)
            if name == "--root" and command == "sessions":
                given.setdefault(name, []).append(value)
            else:
                given[name] = value
        else:
            return None
    return given


# -- status ---------------------------------------------------------------------------------


def status(given: dict[str, Any]) -> int | None:
    """`sidecar status [--root DIR | --all] [--json]`, where quickstatus can build it."""
    from sidecar import quickstatus

    roots = registered() if given.get("--all") else here(given.get("--root"))
    if roots is None:
        return None
    try:
        report = quickstatus.build(roots, time.time(), config_file(),
                                   os.environ.get("SIDECAR_COORDINATION_URL"))
    except Declined:
        return None
    if given.get("--json"):
        try:
            from sidecar.base.escapes import json_escaped  # as cli/jsonout.py prints it

            sys.stdout.buffer.write(json_escaped(dumps(report)).encode() + b"\n")
        except (Declined, UnicodeEncodeError):  # (orjson refuses a lone surrogate: a name's)
            return None
    else:
        from sidecar.cli.status_text import render_text

        sys.stdout.write(render_text(report))  # type: ignore[arg-type]  # status.Report's shape
    sys.stdout.flush()
    return of_status(report)


def here(root: str | None) -> list[str] | None:
    """layout.find_workspace: the nearest workspace at or above `root` (or here), its links
    resolved; None where there is none (the full command says so)."""
    found = paths.find_workspace(os.path.realpath(root if root is not None else os.getcwd()))
    return None if found is None else [found]


def config_file() -> str:
    return os.path.join(paths.config_home(), "config.toml")


def registered() -> list[str] | None:
    """config.load_registry's roots, each a workspace still; None where the full command has
    something to say (a registry it cannot read, a folder that is no workspace any more)."""
    from sidecar.base.files import parse

    try:
        found = paths.read_registry()
        roots = [] if found is None else paths.registry_roots(parse(found))
    except (Declined, OSError, ValueError):
        return None
    if not all(_plain_path(root) for root in roots):
        return None
    if not all(os.path.isdir(os.path.join(root, ".context")) for root in roots):
        return None
    return roots


def _plain_path(path: str) -> bool:
    """An absolute path as pathlib would give it back unchanged (status shows that form)."""
    return path.startswith("/") and (path == "/" or (
        not path.endswith("/") and "//" not in path and "/./" not in path
        and not path.endswith("/.")))


def dumps(value: object, indent: str = "") -> str:
    """JSON as jsonfile.dumps writes it (orjson, indented by 2) for what a report holds:
    `json` itself costs this command more than its report (it loads `re`), and orjson more."""
    from _json import encode_basestring  # the C quoting json.dumps(ensure_ascii=False) uses

    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{encode_basestring(key)}: {dumps(item, inner)}"
                 for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + dumps(item, inner) for item in value) + "\n" + indent + "]"
    if isinstance(value, str):
        return str(encode_basestring(value))
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and value and abs(value) < 1e-4:
        raise Declined("a float orjson writes otherwise (1e-5, not 1e-05)")
    if isinstance(value, int | float):
        return repr(value)
    raise Declined(f"{type(value).__name__} in a report")
