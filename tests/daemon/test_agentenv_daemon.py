"""The agent's environment under the service: the executable by absolute path, the unit's PATH
and environment file, and doctor naming what the service lacks.
Those that start real processes; the rest run in process in tests/unit/test_agentenv.py.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import run_cli
from sidecar.install import service
from support.fakes import fake_host


def test_doctor_names_the_executable_and_the_variable_the_service_lacks(
        workspace, config_home, tmp_path):
    home = tmp_path / "home"
    claude = fake_host(tmp_path / "nvm" / "bin", "claude")
    shell = {"PATH": f"{claude.parent}{os.pathsep}/usr/bin:/bin", "HOME": str(home),
             "ANTHROPIC_API_KEY": "sk-mine"}
    assert run_cli("integrate", "claude-code", cwd=workspace.root, env=shell).returncode == 0
    # The unit a `service install` from a shell without nvm's folder would have written.
    unit = service.systemd_unit_path(home)
    unit.parent.mkdir(parents=True)
    unit.write_text(service.render_unit(Path("/usr/bin/sidecar"), "/usr/bin:/bin"))
    said = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
    assert "ANTHROPIC_API_KEY is set in your shell but missing from the service's environment" \
        in said, said
    assert f"add `ANTHROPIC_API_KEY=...` to {config_home / 'environment'}" in said
    assert "claude-code: the resume command" not in said  # recorded by absolute path: found
    (config_home / "environment").write_text("ANTHROPIC_API_KEY=sk-mine\n")
    said = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
    assert "ANTHROPIC_API_KEY" not in said and "resolves in the service's environment" in said
    # A resume by bare name that the service's PATH cannot find is named too.
    (config_home / "config.toml").write_text(
        '[resume]\n"claude-code" = ["claude", "--resume", "{session_id}", "-p", "{prompt}"]\n')
    said = run_cli("doctor", cwd=workspace.root, env=shell).stdout.decode()
    assert "claude-code: the resume command's 'claude' is not on the service's PATH " \
           "(/usr/bin:/bin)" in said
