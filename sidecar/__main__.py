"""`python -m sidecar`: the same dispatch as the `sidecar` launcher (bin/sidecar)."""
import sys

command = sys.argv[1] if len(sys.argv) > 1 else ""
if command == "emit":
    from sidecar.emit import main
elif command == "status" and "--line" in sys.argv[2:] and "--help" not in sys.argv:
    from sidecar.statusline import main  # a status bar runs it on every refresh, as emit
elif command == "run":
    from sidecar.cli.run import main
else:
    if command in ("status", "sessions"):  # read-only: answered without typer where it can be
        from sidecar.quickcli import main as answer

        answered = answer(sys.argv[1:], lambda: None)
        if answered is not None:
            sys.exit(answered)
    from sidecar.cli.main import main
sys.exit(main())
