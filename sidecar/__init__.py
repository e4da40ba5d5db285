"""sidecar: a filesystem-native daemon that owns the session lifecycle of AI coding agents.

The package's entry is here too: `launch`, the `sidecar` command's dispatch, which the
launcher script (bin/sidecar) calls. A script is compiled at every start, a hook's included;
this module is compiled once, and every command imports it anyway.
"""

import sys


def launch(argv: list[str]) -> None:
    """Run the `sidecar` command `argv` names, and exit.

    `emit` runs on every agent hook and `status --line` on every refresh of a status bar, so
    they are dispatched before anything heavy is imported; `status` and `sessions` read files
    and answer without typer where they can (quickcli.py); `run` (the daemon) before the rest
    of the command line, so the daemon loads none of it. Every other command goes through the
    typer application, with the installed packages `site` finds (the launcher may have started
    Python without it: install/launcher.py).
    """
    command = argv[1] if len(argv) > 1 else ""
    if command == "emit":
        from sidecar.emit import main

        _hot_exit(main())
    if command == "status" and "--line" in argv[2:] and "--help" not in argv:
        from sidecar.views.line import main  # a status bar runs it on every refresh, as emit

        _hot_exit(main())
    if command in ("status", "sessions"):  # read-only: answered without typer where it can be
        from sidecar.quickcli import main as answer

        answered = answer(argv[1:], _full_start)
        if answered is not None:
            _hot_exit(answered)
    _full_start()
    if command == "run":
        from sidecar.cli.run import main
    else:
        from sidecar.cli.main import main
    sys.exit(main())


def _full_start() -> None:
    """The packages a start with `site` finds (the installed ones, their .pth files)."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


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
