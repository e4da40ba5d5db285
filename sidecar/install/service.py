"""`sidecar service`: the systemd user unit on Linux, the LaunchAgent on macOS.

The templates live in `systemd/` and `launchd/`; they are rendered with absolute paths (the
installed `sidecar`, the log folder), so the service never depends on a login shell's PATH.
Every external command goes through `run`, which is where tests fake them.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from sidecar import envfile
from sidecar.base.errors import SidecarError

LABEL = "org.agent-sidecar.sidecar"
UNIT = "sidecar.service"
# Said after the ways to serve: a `sidecar run` started by hand (or by any supervisor) has its
# starter's environment, and the environment file is where the keys follow-ups need belong.
ENV_FILE_NOTE = (". Either way, put the variables your agents need (ANTHROPIC_API_KEY=...) in "
                 "{}: `sidecar run` reads it at start and on SIGHUP, whoever starts it, and "
                 "`sidecar doctor` checks what the running one has")


class ServiceError(SidecarError):
    """A service manager command failed; the message says which and why."""


class NoServiceManager(ServiceError):
    """No user service manager can be reached here; the message says what works instead
    (`ways`, alone, is that part)."""

    def __init__(self, message: str, ways: str) -> None:
        super().__init__(message)
        self.ways = ways


def check_manager(platform: str = sys.platform) -> None:
    """Raise NoServiceManager, saying what works here, when no user manager answers.

    Containers, WSL, root shells and machines without lingering have no systemd user manager:
    every `systemctl --user` fails with `Failed to connect to bus`. This asks first, so an
    install that cannot work writes nothing.
    """
    if not platform.startswith("linux"):
        return
    try:
        result = run(["systemctl", "--user", "show-environment"], check=False)
    except ServiceError:
        result = None
    if result is not None and result.returncode == 0:
        return
    said = (result.stderr or result.stdout).strip() if result is not None else "no systemctl"
    user = getpass.getuser()
    command = f"{sidecar_path()} run"  # the exact command for the user's own supervisor
    ways = [f"run `{command}` under your own supervisor (a terminal multiplexer, supervisord, "
            f"runit, or your container's init), e.g.: nohup {command} >/dev/null 2>&1 & "
            "(it logs to its own daemon.log: `sidecar logs -f`)"]
    if _linger(user) == "no" and os.getuid() != 0:
        ways.insert(0, f"let systemd keep a user manager for you: loginctl enable-linger {user} "
                       "(then log in again) and re-run `sidecar service install`")
    works = "; or ".join(ways)
    raise NoServiceManager(f"no systemd user manager is reachable here ({said}); nothing was "
                           f"installed. What works on this machine: {works}"
                           + ENV_FILE_NOTE.format(envfile.env_file()), works)


def _linger(user: str) -> str:
    try:
        result = run(["loginctl", "show-user", user, "--property=Linger", "--value"], check=False)
    except ServiceError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def template(name: str) -> str:
    """A template from the source tree, or from the installed data files."""
    source = Path(__file__).resolve().parents[2]
    for base in (source, Path(sys.prefix) / "share" / "sidecar"):
        for folder in ("systemd", "launchd"):
            path = base / folder / name
            if path.exists():
                return path.read_text()
    raise ServiceError(f"template {name} not found")


def sidecar_path() -> Path:
    """The absolute path of the `sidecar` command this process belongs to."""
    beside = Path(sys.executable).parent / "sidecar"
    if beside.exists():
        return beside.absolute()
    found = shutil.which("sidecar")
    if found:
        return Path(found).absolute()
    raise ServiceError("cannot find the `sidecar` command; install the package first")


def render_unit(command: Path, path: str | None = None) -> str:
    """The unit, with the installing shell's PATH (`path`, default this process's) and the
    environment file in sidecar's config folder."""
    path = os.environ.get("PATH", "") if path is None else path
    return (template("sidecar.service").replace("@SIDECAR@", str(command))
            .replace("@PATH@", path.replace("\\", "\\\\").replace('"', '\\"'))
            .replace("@ENVFILE@", str(envfile.env_file())))


def render_plist(command: Path, home: Path, path: str | None = None) -> str:
    logs = home / "Library" / "Logs" / "sidecar"
    path = os.environ.get("PATH", "") if path is None else path
    return (template("sidecar.plist").replace("@SIDECAR@", str(command))
            .replace("@LOGS@", str(logs)).replace("@LABEL@", LABEL)
            .replace("@PATH@", escape(path)))


def run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a service manager command (the one place external commands are started)."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ServiceError(f"{argv[0]} not found: is this the right platform?") from None
    if check and result.returncode != 0:
        raise ServiceError(f"`{' '.join(argv)}` failed ({result.returncode}): "
                           f"{(result.stderr or result.stdout).strip()}")
    return result


@dataclass
class Plan:
    """What install/uninstall does: a file to write or remove, commands, warnings."""

    path: Path
    content: str | None
    commands: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def systemd_unit_path(home: Path) -> Path:
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return config / "systemd" / "user" / UNIT


def plist_path(home: Path) -> Path:
    return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def install(platform: str = sys.platform, *, home: Path | None = None, start: bool = True,
            dry_run: bool = False) -> Plan:
    home = home or Path.home()
    command = sidecar_path()
    if not dry_run:
        check_manager(platform)
    if platform.startswith("linux"):
        plan = Plan(systemd_unit_path(home), render_unit(command))
        plan.commands = [["systemctl", "--user", "daemon-reload"],
                         ["systemctl", "--user", "enable", *(["--now"] if start else []), UNIT]]
        if start and plan.path.exists() and plan.path.read_text() != plan.content:
            # A changed unit takes effect only after a restart of the running service.
            plan.commands.append(["systemctl", "--user", "try-restart", UNIT])
    elif platform == "darwin":
        plan = Plan(plist_path(home), render_plist(command, home))
        domain = f"gui/{os.getuid()}"
        if start:
            plan.commands = [["launchctl", "bootout", f"{domain}/{LABEL}"],
                             ["launchctl", "bootstrap", domain, str(plan.path)]]
    else:
        raise ServiceError(f"no service manager support for {platform}")
    if dry_run:
        return plan
    plan.path.parent.mkdir(parents=True, exist_ok=True)
    if platform == "darwin":
        (home / "Library" / "Logs" / "sidecar").mkdir(parents=True, exist_ok=True)
    content = plan.content or ""
    if not plan.path.exists() or plan.path.read_text() != content:
        plan.path.write_text(content)
    for argv in plan.commands:
        # bootout of a job that is not loaded fails; that is the normal first install.
        run(argv, check=argv[1] != "bootout")
    if platform.startswith("linux"):
        plan.notes.extend(linger_warning())
    return plan


def linger_warning() -> list[str]:
    user = getpass.getuser()
    if _linger(user) == "no":
        return [f"lingering is off for {user}: the service stops when you log out. "
                f"To keep it running, run: loginctl enable-linger {user}"]
    return []


def uninstall(platform: str = sys.platform, *, home: Path | None = None, dry_run: bool = False) -> Plan:
    home = home or Path.home()
    if platform.startswith("linux"):
        plan = Plan(systemd_unit_path(home), None,
                    [["systemctl", "--user", "disable", "--now", UNIT],
                     ["systemctl", "--user", "daemon-reload"]])
    elif platform == "darwin":
        plan = Plan(plist_path(home), None, [["launchctl", "bootout", f"gui/{os.getuid()}/{LABEL}"]])
    else:
        raise ServiceError(f"no service manager support for {platform}")
    if dry_run:
        return plan
    if not plan.path.exists():
        plan.notes.append(f"not installed ({plan.path} does not exist)")
        return plan
    first, *rest = plan.commands
    try:
        stopped = run(first, check=False)  # stopping a service that is not running is fine
    except ServiceError:
        stopped = None
    plan.path.unlink()
    if stopped is None or stopped.returncode != 0 and "bus" in (stopped.stderr or ""):
        # No manager to tell: it cannot be running the service either; the file was all.
        plan.notes.append("no service manager answered; removed the file only")
        return plan
    for argv in rest:
        run(argv, check=False)
    return plan


def state(platform: str = sys.platform, *, home: Path | None = None) -> tuple[bool, str]:
    """(installed, what the service manager says about it)."""
    home = home or Path.home()
    if platform.startswith("linux"):
        path = systemd_unit_path(home)
        if not path.exists():
            return False, "not installed"
        try:
            result = run(["systemctl", "--user", "is-active", UNIT], check=False)
        except ServiceError as exc:
            return True, str(exc)
        if "bus" in (result.stderr or ""):
            return True, "installed, but no systemd user manager is reachable to run it"
        return True, result.stdout.strip() or "unknown"
    if platform == "darwin":
        path = plist_path(home)
        if not path.exists():
            return False, "not installed"
        try:
            result = run(["launchctl", "print", f"gui/{os.getuid()}/{LABEL}"], check=False)
        except ServiceError as exc:
            return True, str(exc)
        return True, "loaded" if result.returncode == 0 else "not loaded"
    return False, f"no service manager support for {platform}"
