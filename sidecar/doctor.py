"""`sidecar doctor`: what is missing, and the command that fixes it."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import codex, gemini, integrate, service, status
from . import config as config_mod
from .layout import Workspace, find_workspace
from .timeutil import now

MIN_WATCHES = 8192
MIN_INSTANCES = 64


@dataclass
class Finding:
    ok: bool
    what: str
    fix: str = ""


def _settings_have_emit(path: Path) -> bool:
    try:
        data = integrate.load_json(path)
    except integrate.IntegrateError:
        return False
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(integrate.is_ours(h)
               for groups in hooks.values() if isinstance(groups, list)
               for group in groups if isinstance(group, dict)
               for h in group.get("hooks", []) if isinstance(group.get("hooks"), list))


def check(cwd: Path, home: Path, platform: str = sys.platform,
          proc: Path = Path("/proc/sys/fs/inotify")) -> list[Finding]:
    ws = find_workspace(cwd)
    return [
        _service(platform, home),
        _on_path(),
        *_workspace(cwd, ws),
        *_hosts(ws, home),
        *_inotify(proc),
    ]


def _service(platform: str, home: Path) -> Finding:
    installed, state = service.state(platform, home=home)
    if not installed:
        return Finding(False, "the service is not installed", "sidecar service install")
    if state not in ("active", "loaded"):
        return Finding(False, f"the service is installed but {state}",
                       "sidecar service install (it starts it), then sidecar status")
    return Finding(True, f"the service is installed and {state}")


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


def _workspace(cwd: Path, ws: Workspace | None) -> list[Finding]:
    if ws is None:
        return [Finding(False, f"{cwd} is not in a workspace", f"sidecar init {cwd}")]
    if ws.root not in config_mod.load_registry():
        return [Finding(False, f"workspace {ws.root} is not registered", f"sidecar init {ws.root}")]
    findings = [Finding(True, f"workspace {ws.root} is registered")]
    if not status.workspace_report(ws, now())["served"]:
        findings.append(Finding(False, f"no live instance serves {ws.root}",
                                "sidecar service install, or sidecar run"))
    return findings


def _hosts(ws: Workspace | None, home: Path) -> list[Finding]:
    findings = []
    claude_project = ws.root / ".claude" / "settings.json" if ws else None
    claude_user = home / ".claude" / "settings.json"
    if (claude_project and _settings_have_emit(claude_project)) or _settings_have_emit(claude_user):
        findings.append(Finding(True, "Claude Code hooks go through sidecar"))
    else:
        findings.append(Finding(False, "Claude Code is not integrated",
                                "sidecar integrate claude-code (or --user for every project)"))
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    if _settings_have_emit(codex_home / "hooks.json"):
        findings.append(Finding(True, "Codex hooks go through sidecar"))
        findings.append(_codex_trust(codex_home, ws.root if ws else home))
    else:
        findings.append(Finding(False, "Codex is not integrated", "sidecar integrate codex"))
    if _settings_have_emit(gemini.user_settings(home)) or (
            ws is not None and _settings_have_emit(gemini.project_settings(ws.root))):
        findings.append(Finding(True, "Gemini CLI hooks go through sidecar"))
        if ws is not None and not gemini.trusted(ws.root, home):
            findings.append(Finding(
                False, f"Gemini CLI does not trust {ws.root}, so it runs no hooks there",
                f"trust the folder when Gemini asks, or add \"{ws.root}\": \"TRUST_FOLDER\" to "
                f"{home / '.gemini' / 'trustedFolders.json'}"))
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
        lines.append(f"{'ok     ' if f.ok else 'PROBLEM'} {f.what}")
        if f.fix:
            lines.append(f"        fix: {f.fix}")
    return "\n".join(lines) + "\n"
