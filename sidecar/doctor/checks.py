"""`sidecar doctor`: what is missing, and the command that fixes it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sidecar import config as config_mod
from sidecar.cli import status
from sidecar.doctor import hooks as hookcheck
from sidecar.doctor.findings import Finding, note
from sidecar.followups import environment as runenv
from sidecar.hosts import codex, gemini, opencode, settings
from sidecar.install import environment as agentenv
from sidecar.install import service
from sidecar.layout import Workspace, find_workspace
from sidecar.timeutil import now

MIN_WATCHES = 8192
MIN_INSTANCES = 64


def _settings_have_emit(path: Path) -> bool:
    try:
        data = settings.load_json(path)
    except settings.IntegrateError:
        return False
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(settings.is_ours(h)
               for groups in hooks.values() if isinstance(groups, list)
               for group in groups if isinstance(group, dict)
               for h in group.get("hooks", []) if isinstance(group.get("hooks"), list))


def check(cwd: Path, home: Path, platform: str = sys.platform,
          proc: Path = Path("/proc/sys/fs/inotify")) -> list[Finding]:
    ws = find_workspace(cwd)
    try:
        roots: list[Path] | None = config_mod.load_registry()
        unreadable = []
    except config_mod.RegistryError as exc:  # nothing is served from it, nor can be added
        roots, unreadable = None, [Finding(False, str(exc), "make it valid JSON again (or "
                                           "copy the last good copy over it)")]
    registered = [root for root in roots or [] if Workspace(root).context.is_dir()]
    unserved = [root for root in registered
                if not status.workspace_report(Workspace(root), now())["served"]]
    fix = _serve_fix(platform)
    running = _running(ws, registered)
    return [
        *unreadable,
        _service(platform, home, registered, unserved, fix),
        _on_path(),
        *_workspace(cwd, ws, roots, unserved, fix),
        *_hosts(ws, home, platform, running),
        *_env_file(running),
        *_inotify(proc),
    ]


def _running(ws: Workspace | None, registered: list[Path]) -> runenv.Reported | None:
    """What the running daemon reports of the environment follow-ups get: the one serving
    this workspace, else the first that serves a registered one."""
    roots = ([ws.root] if ws is not None and ws.root in registered else []) + registered
    for root in roots:
        found = runenv.reported(Workspace(root))
        if found is not None:
            return found
    return None


def _env_file(running: runenv.Reported | None) -> list[Finding]:
    """Lines of the environment file that follow-ups do not get (as read here, and as the
    running daemon read it)."""
    problems = dict.fromkeys([*agentenv.read_env_file().problems,
                              *(running.problems if running else ())])
    reread = "" if running is None else \
        f"; then make the running sidecar read it again: kill -HUP {running.pid}"
    return [Finding(False, problem, f"correct it in {agentenv.env_file()}{reread}")
            for problem in problems]


def _serve_fix(platform: str) -> str:
    """The way to serve workspaces that can work on this machine."""
    try:
        service.check_manager(platform)
    except service.NoServiceManager as exc:
        return exc.ways
    return "sidecar service install"


def _service(platform: str, home: Path, registered: list[Path], unserved: list[Path],
             fix: str) -> Finding:
    installed, state = service.state(platform, home=home)
    if installed and state in ("active", "loaded"):
        return Finding(True, f"the service is installed and {state}")
    if registered and not unserved:
        # Whoever started it (a hand-started `sidecar run`, another supervisor), all is served.
        return Finding(True, "every registered workspace is served by a running `sidecar run`"
                             + ("" if installed else " (the service is not installed)"))
    if installed:
        return Finding(False, f"the service is installed but {state}", fix)
    return Finding(False, "the service is not installed", fix)


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


def _workspace(cwd: Path, ws: Workspace | None, roots: list[Path] | None, unserved: list[Path],
               fix: str) -> list[Finding]:
    if ws is None:
        return [Finding(False, f"{cwd} is not in a workspace", f"sidecar init {cwd}")]
    if roots is None:
        return hookcheck.check(ws)  # whether it is registered cannot be told: said above
    if ws.root not in roots:
        return [Finding(False, f"workspace {ws.root} is not registered", f"sidecar init {ws.root}")]
    findings = [Finding(True, f"workspace {ws.root} is registered")]
    if ws.root in unserved:
        findings.append(Finding(False, f"no live instance serves {ws.root}", fix))
    return findings + hookcheck.check(ws)


def _integration(name: str, binary: str, integrated: bool, fix: str) -> Finding:
    """A host that is integrated is fine; one that is installed but not integrated is worth
    a note (the user may not use it: a one-host project is all green); one that is not
    installed here has nothing to integrate."""
    if integrated:
        return Finding(True, f"{name} hooks go through sidecar")
    if shutil.which(binary) is None:
        return Finding(True, f"{name} is not installed here (`{binary}` is not on PATH): "
                             "nothing to integrate")
    return note(f"{name} is installed but not integrated (to use it: {fix})")


def _hosts(ws: Workspace | None, home: Path, platform: str,
           running: runenv.Reported | None) -> list[Finding]:
    root = ws.root if ws else None
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    claude = any(_settings_have_emit(p) for p in settings.claude_settings(root, home))
    codex_on = _settings_have_emit(codex_home / "hooks.json")
    gemini_on = _settings_have_emit(gemini.user_settings(home)) or (
        root is not None and _settings_have_emit(gemini.project_settings(root)))
    opencode_on = opencode.is_ours(opencode.user_plugin(home)) or (
        root is not None and opencode.is_ours(opencode.project_plugin(root)))
    findings = [
        _integration("Claude Code", "claude", claude,
                     "sidecar integrate claude-code (or --user for every project)"),
        _integration("Codex", "codex", codex_on, "sidecar integrate codex"),
        _integration("Gemini CLI", "gemini", gemini_on, "sidecar integrate gemini"),
        _integration("opencode", "opencode", opencode_on, "sidecar integrate opencode"),
    ]
    if not (claude or codex_on or gemini_on or opencode_on):
        findings.append(Finding(False, "no agent host is integrated, so no session reaches sidecar",
                                "sidecar integrate claude-code (or codex, gemini, opencode)"))
    if codex_on:
        findings.append(_codex_trust(codex_home, root or home))
    on = [h for h, yes in (("claude-code", claude), ("codex", codex_on), ("gemini", gemini_on),
                           ("opencode", opencode_on)) if yes]
    findings.extend(_agent_environment(on, home, platform, codex_home, running))
    if gemini_on and root is not None and not gemini.trusted(root, home):
        findings.append(Finding(
            False, f"Gemini CLI does not trust {root}, so it runs no hooks there",
            f"trust the folder when Gemini asks, or add \"{root}\": \"TRUST_FOLDER\" to "
            f"{home / '.gemini' / 'trustedFolders.json'}"))
    return findings


SYSTEMD_USER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"  # a unit without PATH


def service_environment(home: Path, platform: str) -> dict[str, str]:
    """What a follow-up run by the daemon would have, with the environment file over it: the
    installed unit's Environment= (a service does not start from a shell), or, with no unit
    installed, this shell's (a daemon started by hand starts from one)."""
    unit = service.systemd_unit_path(home) if platform.startswith("linux") else None
    if unit is not None and unit.exists():
        env = {"HOME": str(home), **agentenv.unit_environment(unit.read_text())}
        env.setdefault("PATH", SYSTEMD_USER_PATH)
    else:
        env = dict(os.environ)
    env.update(agentenv.read_env_file().variables)
    return env


def _agent_environment(hosts: list[str], home: Path, platform: str, codex_home: Path,
                       running: runenv.Reported | None = None) -> list[Finding]:
    """For each integrated host: does its resume command resolve in the environment
    follow-ups get, with the variables it needs? That is what the running daemon reports,
    whoever started it; with none running, the service's (or this shell's) as it would be."""
    try:
        resume = config_mod.load_config().resume
    except config_mod.ConfigError as exc:
        return [Finding(False, f"config.toml cannot be read: {exc}", "fix the named key")]
    if running is not None and running.error is not None:
        return [Finding(False, f"the running sidecar (pid {running.pid}) cannot run "
                               f"follow-ups: {running.error}")]
    env = service_environment(home, platform) if running is None else running.env
    where = agentenv.SERVICE if running is None else \
        f"the running sidecar's environment (pid {running.pid})"
    reload = "" if running is None else \
        f"make it read the file again: kill -HUP {running.pid}"
    findings: list[Finding] = []
    for host in hosts:
        argv = resume.get(host)
        if argv is None or not os.path.isabs(argv[0]) and shutil.which(argv[0]) is None:
            continue  # not installed here: the integration finding says so
        needed = agentenv.codex_needed(codex_home) if host == "codex" else ()
        problems = agentenv.problems(host, argv, env, os.environ, needed, where, reload)
        findings.extend(Finding(False, p) for p in problems)
        if not problems:
            findings.append(Finding(True, f"{host}: the resume command resolves in {where} "
                                          f"({argv[0]})"))
    return findings


def _codex_trust(codex_home: Path, cwd: Path) -> Finding:
    """Codex skips an untrusted hook silently: ask Codex itself which of ours it trusts."""
    untrusted = codex.untrusted(codex_home, cwd)
    if untrusted is None:
        return Finding(True, "Codex's trust of sidecar's hooks not checked (`codex` is not on "
                             "PATH to ask)")
    if untrusted:
        return Finding(False, "Codex does not trust sidecar's hooks "
                              f"({', '.join(k.rsplit(':', 3)[1] for k in untrusted)}): "
                              "it skips them silently", "sidecar integrate codex")
    return Finding(True, "Codex trusts every sidecar hook")


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


def render(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        lines.append(f"{'note   ' if f.note else 'ok     ' if f.ok else 'PROBLEM'} {f.what}")
        if f.fix:
            lines.append(f"        fix: {f.fix}")
    return "\n".join(lines) + "\n"
