"""`sidecar doctor`: what is missing, and the command that fixes it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sidecar import config as config_mod
from sidecar import envfile, layout
from sidecar.base import storage, words
from sidecar.base.errors import SidecarError
from sidecar.base.escapes import escaped
from sidecar.base.timeutil import now
from sidecar.base.words import Style
from sidecar.coordination import current as coordination
from sidecar.coordination.base import Unreachable
from sidecar.doctor import budget as budget_checks
from sidecar.doctor import hooks as hook_checks
from sidecar.doctor import mounts
from sidecar.doctor import running as daemon_report
from sidecar.doctor import telemetry as telemetry_checks
from sidecar.followups.run import environment as followup_env
from sidecar.hosts import registry
from sidecar.hosts.base import Finding, Host, note
from sidecar.install import environment as service_env
from sidecar.install import launcher, service
from sidecar.layout import Workspace, find_workspace
from sidecar.views.status import workspace_report

if TYPE_CHECKING:
    from sidecar.coordination.redis import clock as redis_clock

MIN_WATCHES = 8192
MIN_INSTANCES = 64


def check(cwd: Path, home: Path, platform: str = sys.platform, proc: Path = Path("/proc/sys/fs/inotify"),
          mountinfo: Path = mounts.MOUNTINFO) -> list[Finding]:
    ws = find_workspace(cwd)
    try:
        roots: list[Path] | None = config_mod.load_registry()
        unreadable = []
    except config_mod.RegistryError as exc:  # nothing is served from it, nor can be added
        roots, unreadable = None, [Finding(False, str(exc), "make it valid JSON again (or "
                                           "copy the last good copy over it)")]
    registered = [root for root in roots or [] if Workspace(root).context.is_dir()]
    unserved = [root for root in registered if not workspace_report(str(root), now())["served"]]
    fix = _serve_fix(platform)
    running = daemon_report.running(ws, registered)
    on = [host for host in registry.integrable() if host.integrated(ws.root if ws else None, home)]
    return [
        *unreadable,
        *_coordination(),
        _service(platform, home, registered, unserved, fix),
        *_unserved_elsewhere(ws, registered, unserved),
        _on_path(),
        *(_launcher() if on else []),  # it costs hooks, and none runs before one is integrated
        *_workspace(cwd, ws, roots, unserved, fix),
        *_storage(ws, mountinfo),
        *daemon_report.findings(running),
        *_hosts(ws, home, platform, running, on),
        *_env_file(running),
        *telemetry_checks.findings(registered),
        *_inotify(proc),
        *_shared_filesystems([*([ws.root] if ws else []), *registered], mountinfo),
        *budget_checks.check(ws),
    ]


def _env_file(running: followup_env.Reported | None) -> list[Finding]:
    """Lines of the environment file that follow-ups do not get (as read here, and as the
    running daemon read it)."""
    problems = dict.fromkeys([*envfile.read_env_file().problems, *(running.problems if running else ())])
    reread = "" if running is None else "; the running sidecar reads it again once it changes"
    return [Finding(False, problem, f"correct it in {envfile.env_file()}{reread}") for problem in problems]


def _serve_fix(platform: str) -> str:
    """The way to serve workspaces that can work on this machine."""
    try:
        service.check_manager(platform)
    except service.NoServiceManager as exc:
        return exc.ways
    return "sidecar service install"


def _service(platform: str, home: Path, registered: list[Path], unserved: list[Path], fix: str) -> Finding:
    installed, state = service.state(platform, home=home)
    if installed and state in ("active", "loaded"):
        return Finding(True, f"the service is installed and {state}")
    served = len(registered) - len(unserved)
    if served:
        # A daemon serves (a hand-started `sidecar run`, another supervisor): the service is
        # how one would start at login, not what serves now.
        how = f"installed but {state}" if installed else "not installed"
        what = ("every registered workspace is served by a running `sidecar run`" if not unserved
                else f"a running `sidecar run` serves {served} of {len(registered)} registered workspaces")
        # Where no user manager runs, the hand-started daemon is the way: nothing to fix.
        return note(f"{what}; the service is {how}, so nothing starts one at login",
                    fix if fix == "sidecar service install" else "")
    if installed:
        return Finding(False, f"the service is installed but {state}", fix)
    return Finding(False, "the service is not installed", fix)


def _unserved_elsewhere(ws: Workspace | None, registered: list[Path], unserved: list[Path]) -> list[Finding]:
    """Registered workspaces no instance serves while a daemon serves others, but the current
    one (its own line says it); where none is served, the service's line says so."""
    if len(unserved) == len(registered):
        return []
    others = [root for root in unserved if ws is None or root != ws.root]
    return [Finding(False, f"no live instance serves {root}", "sidecar reload (a running daemon "
                    "reads the registry again), or remove it: sidecar unregister " + str(root))
            for root in others]


def _on_path() -> Finding:
    on_path = shutil.which("sidecar")
    if on_path is not None:
        return Finding(True, f"`sidecar` on PATH: {on_path}")
    try:
        where = service.sidecar_path().parent
    except service.ServiceError:
        where = Path(sys.executable).parent
    return Finding(False, "`sidecar` is not on the PATH that hooks see",
                   f"add {where} to PATH, or re-run `sidecar integrate` (it writes absolute paths)")


def _launcher() -> list[Finding]:
    """A note where the `sidecar` launcher still starts Python with `site` (install/launcher.py):
    every hook pays for it."""
    try:
        path = service.sidecar_path()
    except service.ServiceError:
        return []  # said by _on_path
    why = launcher.why_slow(path)
    if why is None:
        return []
    return [note(f"`sidecar` starts Python with site, which costs every hook about a third of "
                 f"its start ({why})",
                 f"{Path(sys.executable)} -m sidecar.install.launcher {path}")]


def _workspace(cwd: Path, ws: Workspace | None, roots: list[Path] | None, unserved: list[Path],
               fix: str) -> list[Finding]:
    if ws is None:
        return [Finding(False, f"{cwd} is not in a workspace", f"sidecar init {cwd}")]
    if roots is None:
        return hook_checks.check(ws)  # whether it is registered cannot be told: said above
    if ws.root not in roots:
        return [Finding(False, f"workspace {ws.root} is not registered", f"sidecar init {ws.root}")]
    findings = [Finding(True, f"workspace {ws.root} is registered")]
    if ws.root in unserved:
        findings.append(Finding(False, f"no live instance serves {ws.root}", fix))
    return findings + hook_checks.check(ws)


def _storage(ws: Workspace | None, mountinfo: Path) -> list[Finding]:
    """A runtime on a read-only mount or a full disk: sidecar's writes there may fail, whether or
    not a daemon lives (one does not fix it: the mount or the disk does)."""
    why = None if ws is None else storage.trouble(ws.runtime)
    if ws is None or why is None:
        return []
    mount = mounts.mount_of(ws.runtime, mountinfo)
    point = mount.mount_point if mount is not None else str(ws.runtime)
    where = f" (mounted at {point})" if mount is not None else ""
    fix = f"mount -o remount,rw {point}" if why == storage.READ_ONLY else f"free some space on {point}"
    return [Finding(False, f"{ws.runtime} {why}{where}: {storage.STOPS}", fix)]


def _integration(host: Host, integrated: bool) -> Finding:
    """A host that is integrated is fine; one that is installed but not integrated is worth
    a note (the user may not use it: a one-host project is all green); one that is not
    installed here has nothing to integrate."""
    if integrated:
        return Finding(True, f"{host.title} hooks go through sidecar")
    binary = host.executable or host.name
    if shutil.which(binary) is None:
        return Finding(True, f"{host.title} is not installed here (`{binary}` is not on PATH): "
                             "nothing to integrate")
    return note(f"{host.title} is installed but not integrated (to use it: "
                f"sidecar integrate {host.name}{host.integrate_hint})")


def _hosts(ws: Workspace | None, home: Path, platform: str,
           running: followup_env.Reported | None, on: list[Host]) -> list[Finding]:
    """Each host sidecar can integrate: whether it is (`on`), what it checks of itself, and
    whether its resume can run where follow-ups run."""
    hosts = registry.integrable()
    findings = [_integration(host, host in on) for host in hosts]
    if not on:
        first, *rest = hosts
        findings.append(Finding(False, "no agent host is integrated, so no session reaches sidecar",
                                f"sidecar integrate {first.name} (or "
                                f"{', '.join(host.name for host in rest)})"))
    for host in on:
        findings.extend(host.findings(ws.root if ws else None, home))
    findings.extend(_agent_environment(on, home, platform, running))
    return findings


SYSTEMD_USER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"  # a unit without PATH


def service_environment(home: Path, platform: str) -> dict[str, str]:
    """What a follow-up run by the daemon would have, with the environment file over it: the
    installed unit's Environment= (a service does not start from a shell), or, with no unit
    installed, this shell's (a daemon started by hand starts from one)."""
    unit = service.systemd_unit_path(home) if platform.startswith("linux") else None
    if unit is not None and unit.exists():
        env = {"HOME": str(home), **service_env.unit_environment(unit.read_text())}
        env.setdefault("PATH", SYSTEMD_USER_PATH)
    else:
        env = dict(os.environ)
    env.update(envfile.read_env_file().variables)
    return env


def _agent_environment(hosts: list[Host], home: Path, platform: str,
                       running: followup_env.Reported | None = None) -> list[Finding]:
    """For each integrated host: does its resume command resolve in the environment
    follow-ups get, with the variables it needs? That is what the running daemon reports,
    whoever started it (the command it has and the executable it found, not the file's);
    with none running, the service's (or this shell's) as it would be."""
    try:
        resume = config_mod.load_config().resume
    except config_mod.ConfigError as exc:
        return [Finding(False, f"config.toml cannot be read: {exc}", "fix the named key")]
    if running is not None and running.error is not None:
        return [Finding(False, f"the running sidecar (pid {running.pid}) cannot run "
                               f"follow-ups: {running.error}")]
    env = service_environment(home, platform) if running is None else running.env
    where = service_env.SERVICE if running is None else \
        f"the running sidecar's environment (pid {running.pid})"
    reload = "" if running is None else \
        f"make it read the file again: sidecar reload (or kill -HUP {running.pid})"
    resolved = {host: (argv[0], service_env.resolve(argv[0], env.get("PATH", "")))
                for host, argv in resume.items()}
    if running is not None and running.resume is not None:
        resolved = running.resume  # what the daemon itself runs, and found
    findings: list[Finding] = []
    for host in hosts:
        if host.name not in resolved:
            continue
        command, path = resolved[host.name]
        if path is None and not os.path.isabs(command) and shutil.which(command) is None:
            continue  # not installed here: the integration finding says so
        needed = service_env.needed(host, os.environ, home)
        problems = service_env.problems(host.name, command, path, env, os.environ, needed, where, reload)
        findings.extend(Finding(False, p) for p in problems)
        if not problems:
            findings.append(Finding(True, f"{host.name}: the resume command resolves in {where} ({path})"))
    return findings


def _inotify(proc: Path) -> list[Finding]:
    findings = []
    for name, minimum in (("max_user_watches", MIN_WATCHES), ("max_user_instances", MIN_INSTANCES)):
        try:
            value = int((proc / name).read_text())
        except (OSError, ValueError):
            continue
        if value < minimum:
            findings.append(Finding(False, f"inotify {name} is {value}, low for watching inboxes",
                                    f"sudo sysctl fs.inotify.{name}={minimum * 8}"))
        else:
            findings.append(Finding(True, f"inotify {name} is {value}"))
    return findings


def render(findings: list[Finding], style: Style | None = None) -> str:
    """One line per finding (`ok`, `note` or `PROBLEM`, painted on a terminal), its fix below;
    what a finding quotes (a hook's outcome, a path, a file's error) escaped."""
    paint = style or words.style_for()
    lines = []
    for f in findings:
        mark = (paint("note   ", "yellow") if f.note else paint("ok     ", "green") if f.ok
                else paint("PROBLEM", "red", "bold"))
        lines.append(f"{mark} {escaped(f.what)}")
        if f.fix:
            lines.append(f"        {paint('fix:', 'bold')} {escaped(f.fix)}")
    return "\n".join(lines) + "\n"


def _coordination() -> list[Finding]:
    """Where Redis coordinates the instances: whether it answers, named by its URL (its
    password masked) and the error. Nothing to say of the file backend."""
    try:
        backend = coordination.get()
    except SidecarError as exc:
        return [Finding(False, str(exc), "install the extra, or correct [coordination] url")]
    try:
        reading = backend.look()  # a ping that also reads its clock and persistence
    except Unreachable as exc:
        return [Finding(False, str(exc), f"start that Redis, or correct [coordination] url in "
                        f"{layout.config_file()} (or SIDECAR_COORDINATION_URL); until it answers "
                        "no instance leads, and hooks' events wait in the inbox")]
    if reading is None:
        return []  # the kernel, which always answers
    return [Finding(True, f"coordination {backend.shown} answers"), *_redis_server(reading)]


def _redis_server(reading: redis_clock.Reading) -> list[Finding]:
    """This machine's clock against Redis's (which the daemon keeps to, so an offset is a note,
    not a failure), and whether Redis keeps what it acknowledged through a restart."""
    from sidecar.coordination.redis import clock as redis_clock

    skew, kept = reading.skew, reading.persistence
    if skew is None:
        clock = note("this machine's clock cannot be compared with Redis's (TIME is refused): "
                     "due times and ages follow this machine's clock",
                     "allow TIME to sidecar's Redis user (ACL SETUSER <user> +time)")
    elif abs(skew.skew) > redis_clock.TOLERATED:
        clock = note(f"this machine's clock is {redis_clock.described(skew.skew)} (measured to "
                     f"±{skew.rtt / 2 * 1000:.1f} ms); sidecar keeps to Redis's, other programs "
                     "here do not", "set this machine's clock right: timedatectl set-ntp true")
    else:
        clock = Finding(True, f"this machine's clock is within {abs(skew.skew) * 1000:.0f} ms of Redis's")
    warning = kept.warning()
    if warning is not None:
        return [clock, note(f"{warning} ({kept.shown()})", "in redis.conf: appendonly yes and "
                            "appendfsync everysec (or always; the guide's Shared workspaces page "
                            "says what each keeps), or at once: redis-cli CONFIG SET appendonly yes")]
    if kept.appendonly is None:
        return [clock, note("Redis does not say whether it persists (INFO refused)")]
    return [clock, Finding(True, f"Redis persists what it acknowledges ({kept.shown()})")]


def _shared_filesystems(roots: list[Path], mountinfo: Path) -> list[Finding]:
    """On the file backend, a workspace on a network or shared filesystem: its flock locks
    may be held by two machines at once, so sidecars on two machines could both lead. Worth
    a note, not a failure: one machine alone using it is served well."""
    try:
        if config_mod.load_config().coordination_url is not None:
            return []  # Redis coordinates the instances, whatever the filesystem
    except config_mod.ConfigError:
        return []  # the resume check says what is wrong with config.toml
    findings = []
    for root in dict.fromkeys(roots):
        mount = mounts.mount_of(root, mountinfo)
        if mount is not None and mount.locks_unshared:
            findings.append(note(
                f"workspace {root} is on {mount.fs_type} (mounted at {mount.mount_point}): file "
                "locks there may be held by two machines at once, so sidecars serving it from "
                "two machines could both lead",
                f'to serve it from several machines, coordinate them through Redis: '
                f'[coordination] url = "redis://host:6379/0" in {layout.config_file()} '
                f"(the guide's Shared workspaces page)"))
    return findings
