"""sidecar: a filesystem-native daemon that owns the session lifecycle of AI coding agents.

The package's entry is here too: `launch`, the `sidecar` command's one dispatch, which the
launcher script (bin/sidecar) and `python -m sidecar` call. A script is compiled at every
start, a hook's included; this module is compiled once, and every command imports it anyway.
"""

import sys

# The options of the commands answered without typer, as typer's commands take them
# (cli/main.py, cli/sessions_command.py): flags, and options that take a value.
FLAGS = {"status": ("--all", "--json"), "sessions": ("--active", "--json")}
VALUES = {"status": ("--root", "--session"), "sessions": ("--root", "--since", "--limit")}


def launch(argv: list[str]) -> None:
    """Run the `sidecar` command `argv` names, and exit.

    `emit` runs on every agent hook and `status --line` on every refresh of a status bar, so
    they start before anything heavy is imported; `status` reads its report with the standard
    library (views/status.py); `status --session` and `sessions` answer without typer; `run`
    (the daemon) loads none of the command line. Every other command, and whatever these have
    to say but their answer (help, an option they do not take, an error), goes through the
    typer application, with the installed packages `site` finds (the launcher may have
    started Python without it: install/launcher.py).
    """
    command = argv[1] if len(argv) > 1 else ""
    words = argv[2:]
    if command == "emit":
        from sidecar.emit import main

        _hot_exit(main())
    if command == "status" and "--line" in words and "--help" not in argv:
        from sidecar.views.line import main as line  # a status bar runs it on every refresh

        _hot_exit(line())
    given = options(command, words) if command in FLAGS else None
    if given is not None:
        answered = _answer(command, given)
        if answered is not None:
            _hot_exit(answered)
    from sidecar.base.startup import full_start

    full_start()
    if command == "run":
        from sidecar.cli.run import main
    else:
        from sidecar.cli.main import main
    sys.exit(main())


def _answer(command: str, given: dict[str, object]) -> int | None:
    """`status`, `status --session` or `sessions` without typer: the exit code, or None where
    typer's command answers (it has something to say)."""
    from sidecar.base.startup import full_start

    if command == "sessions":
        full_start()  # (its records are read with orjson)
        from sidecar.cli.sessions import answer

        return answer(given)
    if "--session" in given:  # (even an empty one, as typer takes it: typer's command says)
        full_start()
        from sidecar.cli.status import answer_session

        return answer_session(given)
    from sidecar.cli.status import answer as status

    return status(given)


def options(command: str, args: list[str]) -> dict[str, object] | None:
    """The options given, as typer takes them (`--x value`, `--x=value`, a value's last
    mention wins, `--root` of `sessions` repeats); None for anything else (help included)."""
    given: dict[str, object] = {}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if word in FLAGS[command]:
            given[word] = True
        elif name in VALUES[command] and (eq or rest):
            value = value if eq else rest.pop(0)
            if name == "--root" and command == "sessions":
                roots = given.setdefault(name, [])
                assert isinstance(roots, list)
                roots.append(value)
            else:
                given[name] = value
        else:
            return None
    return given


def _hot_exit(code: int) -> None:
    """End a hot command at once: what it wrote flushed, and with nothing registered to run
    at exit, the interpreter's teardown (a fifth of a start without site) serves no one."""
    import atexit
    import posix

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)  # the usual exit says what went wrong
    if getattr(atexit, "_ncallbacks", lambda: 1)() == 0:
        posix._exit(code)
    sys.exit(code)
