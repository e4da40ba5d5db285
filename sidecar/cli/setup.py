"""`sidecar service`, `sidecar integrate` and `sidecar doctor`: installing and explaining."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from sidecar.base.exitcodes import FAILURE, NO_SERVICE_MANAGER, OK, UNSERVED
from sidecar.cli.common import fail
from sidecar.doctor import checks as doctor_mod
from sidecar.install import service as service_mod

service_app = typer.Typer(no_args_is_help=True,
                          help="Install sidecar as a user service (systemd on Linux, launchd on macOS).\n\n"
                          "Example: sidecar service install")


def _show(plan: service_mod.Plan, printing: bool) -> None:
    if printing:
        if plan.content is not None:
            typer.echo(f"# {plan.path}")
            typer.echo(plan.content, nl=False)
        else:
            typer.echo(f"# remove {plan.path}")
        for argv in plan.commands:
            typer.echo("# then: " + " ".join(argv))
        return
    for note in plan.notes:
        typer.echo(f"note: {note}", err=True)


@service_app.command("install")
def service_install(
    print_only: bool = typer.Option(False, "--print", help="Show the file and commands; change nothing."),
    no_start: bool = typer.Option(False, "--no-start", help="Install and enable, but do not start it now."),
) -> None:
    """Write the unit (or LaunchAgent), enable it and start it. Safe to run again.

    Example: sidecar service install --print
    """
    try:
        plan = service_mod.install(start=not no_start, dry_run=print_only)
    except service_mod.NoServiceManager as exc:
        fail(str(exc), NO_SERVICE_MANAGER)
    _show(plan, print_only)
    if not print_only:
        typer.echo(f"installed {plan.path}" + ("" if no_start else " and started it"))


@service_app.command("uninstall")
def service_uninstall(
    print_only: bool = typer.Option(False, "--print", help="Show what would be done; change nothing."),
) -> None:
    """Stop the service and remove its file.

    Example: sidecar service uninstall
    """
    plan = service_mod.uninstall(dry_run=print_only)
    _show(plan, print_only)
    if not print_only and plan.path.exists() is False and "not installed" not in " ".join(plan.notes):
        typer.echo(f"removed {plan.path}")


@service_app.command("status")
def service_status() -> None:
    """Whether the service is installed, and what the service manager says of it.

    Example: sidecar service status
    """
    installed, state = service_mod.state()
    typer.echo(state)
    raise typer.Exit(OK if installed and state in ("active", "loaded") else UNSERVED)


def doctor() -> None:
    """Say what is missing and how to fix it; exit 1 if anything is.

    Example: sidecar doctor
    """
    findings = doctor_mod.check(Path.cwd(), Path.home(), sys.platform)
    typer.echo(doctor_mod.render(findings), nl=False, color=True)
    raise typer.Exit(OK if all(f.ok for f in findings) else FAILURE)
