"""The agent's environment under the service: the executable by absolute path, the unit's PATH
and environment file, and doctor naming what the service lacks.
In process; those that start real processes are in tests/daemon/test_agentenv_daemon.py.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import invoke
from sidecar import envfile
from sidecar.config import DEFAULT_RESUME, load_config
from sidecar.doctor import checks
from sidecar.hosts import registry
from sidecar.install import environment as service_env
from sidecar.install import service
from support.fakes import fake_host


def test_the_environment_file_reads_like_systemds(tmp_path):
    path = tmp_path / "environment"
    path.write_text("# keys for the agents\nANTHROPIC_API_KEY=sk-1\nexport OPENAI_API_KEY='sk 2'\n"
                    'GEMINI_API_KEY="g"\n; a comment\nnot a line\n')
    read = envfile.read_env_file(path)
    assert read.variables == {"ANTHROPIC_API_KEY": "sk-1",
                              "OPENAI_API_KEY": "sk 2", "GEMINI_API_KEY": "g"}
    assert read.problems == (f"{path}: line 6 is not KEY=value; skipped",)
    assert envfile.read_env_file(tmp_path / "missing") == envfile.EnvFile()


def test_integrate_records_the_hosts_executable_and_keeps_the_users_config(
        workspace, config_home, tmp_path):
    claude = fake_host(tmp_path / "nvm" / "bin", "claude")
    (config_home / "config.toml").write_text("# my settings\nstaleAfter = \"2h\"  # short\n")
    env = {"PATH": f"{claude.parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    result = invoke("integrate", "claude-code", cwd=workspace.root, env=env)
    assert result.returncode == 0 and f"resume runs {claude}" in result.stdout.decode()
    text = (config_home / "config.toml").read_text()
    assert text.startswith("# my settings\nstaleAfter = \"2h\"  # short\n")  # the user's, kept
    assert load_config(config_home / "config.toml").resume["claude-code"] == (
        str(claude), *DEFAULT_RESUME["claude-code"][1:])
    # Uninstalled: exactly what it wrote goes, the user's lines stay.
    assert invoke("uninstall", env=env).returncode == 0
    assert (config_home / "config.toml").read_text() == "# my settings\nstaleAfter = \"2h\"  # short\n"


def test_a_resume_command_the_user_wrote_is_left_alone(workspace, config_home, tmp_path):
    claude = fake_host(tmp_path / "bin", "claude")
    mine = '[resume]\n"claude-code" = ["/opt/my-claude", "--resume", "{session_id}"]\n'
    (config_home / "config.toml").write_text(mine)
    env = {"PATH": f"{claude.parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    assert invoke("integrate", "claude-code", cwd=workspace.root, env=env).returncode == 0
    assert (config_home / "config.toml").read_text() == mine


def test_the_unit_carries_the_installing_shells_path_and_the_environment_file(config_home):
    unit = service.render_unit(Path("/opt/sidecar/bin/sidecar"), "/home/me/.local/bin:/usr/bin")
    assert 'Environment="PATH=/home/me/.local/bin:/usr/bin"' in unit
    assert f"EnvironmentFile=-{config_home / 'environment'}" in unit
    assert service_env.unit_environment(unit)["PATH"] == "/home/me/.local/bin:/usr/bin"
    plist = service.render_plist(Path("/opt/sidecar/bin/sidecar"), Path("/Users/me"),
                                 "/Users/me/bin:/usr/bin")
    assert "<key>PATH</key>\n        <string>/Users/me/bin:/usr/bin</string>" in plist


def test_doctor_names_the_variable_codexs_provider_needs(workspace, config_home, tmp_path,
                                                         monkeypatch):
    codex = registry.get("codex")
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model_provider = "stub"\n[model_providers.stub]\nenv_key = "STUB_KEY"\n')
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    assert service_env.needed(codex, os.environ, tmp_path / "home") == ("STUB_KEY",)
    assert service_env.needed(codex, {"HOME": str(tmp_path)}, tmp_path) == ()  # ~/.codex: none
    assert service_env.needed(registry.get("gemini"), os.environ, tmp_path / "home") == ()
    found = service_env.problems("codex", "/bin/sh", "/bin/sh", {"PATH": "/usr/bin"}, {},
                              service_env.needed(codex, os.environ, tmp_path / "home"))
    said = "codex: STUB_KEY is missing from the service's environment"
    assert any(said in f for f in found)
    # And through doctor's own check, with no unit installed (this shell's environment).
    (config_home / "config.toml").write_text('[resume]\ncodex = ["/bin/sh", "{session_id}"]\n')
    findings = checks._agent_environment([codex], tmp_path / "home", "linux")
    assert [f.what for f in findings if not f.ok] == [
        f"{said}; add `STUB_KEY=...` to {config_home / 'environment'}"]
    (config_home / "environment").write_text("STUB_KEY=x\n")
    findings = checks._agent_environment([codex], tmp_path / "home", "linux")
    assert all(f.ok for f in findings) and findings


def test_a_config_toml_that_cannot_be_read_stops_no_integration(workspace, config_home, tmp_path):
    claude = fake_host(tmp_path / "bin", "claude")
    (config_home / "config.toml").write_text("this is = = not toml\n")
    env = {"PATH": f"{claude.parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    result = invoke("integrate", "claude-code", cwd=workspace.root, env=env)
    assert result.returncode == 0 and b"sidecar's hooks are in" in result.stdout
    assert b"the resume command for claude-code was not recorded" in result.stderr
    assert (config_home / "config.toml").read_text() == "this is = = not toml\n"  # untouched
