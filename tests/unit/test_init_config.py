"""`sidecar init`, the user's registry and config.toml.

In process; those that start real processes are in tests/daemon/test_init_config_daemon.py.
"""

from __future__ import annotations

import pytest

from helpers import invoke, read_json
from sidecar.config import Config, ConfigError, load_config
from sidecar.followups.run.actions import Firing, build_argv
from sidecar.layout import Workspace


def test_init_creates_a_private_layout_and_registers_and_again_changes_nothing(tmp_path,
                                                                               config_home):
    root = tmp_path / "repo"
    root.mkdir()
    result = invoke("init", str(root))
    assert result.returncode == 0, result.stderr
    runtime = root / ".context" / "runtime"
    for sub in ("", "inbox", "inbox/rejected", "sessions", "hooks"):
        assert oct((runtime / sub).stat().st_mode & 0o777) == "0o700"
    assert (runtime / ".gitignore").read_text() == "*\n"
    assert read_json(config_home / "workspaces.json") == {"workspaces": [str(root)]}
    (root / ".context/runtime/.gitignore").write_text("*\n# mine\n")
    again = invoke("init", str(root))
    assert again.returncode == 0 and b"already" in again.stdout
    assert read_json(config_home / "workspaces.json") == {"workspaces": [str(root)]}
    assert (root / ".context/runtime/.gitignore").read_text() == "*\n# mine\n"


def test_init_refuses_a_missing_folder(tmp_path, config_home):
    result = invoke("init", str(tmp_path / "absent"))
    assert result.returncode == 1 and b"not a folder" in result.stderr


def test_defaults_hold_without_a_config_file(tmp_path):
    config = load_config(tmp_path / "absent.toml")
    assert config.stale_after == 86400 and config.retention == 30 * 86400
    assert config.action_timeout == 900 and config.concurrency == 2
    assert config.resume["claude-code"][0] == "claude"


def test_config_values_are_read(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('staleAfter = "2h"\nretention = "7d"\nconcurrency = 4\n'
                    '[resume]\ngemini = ["gemini", "--resume", "{session_id}", "{prompt}"]\n')
    config = load_config(path)
    assert config.stale_after == 7200 and config.retention == 7 * 86400 and config.concurrency == 4
    assert config.resume["gemini"][0] == "gemini" and "claude-code" in config.resume


@pytest.mark.parametrize("text,message", [
    ("staleAfter = \"soon\"", "staleAfter"),
    ("staleAfter = -5", "negative"),
    ("concurrency = 0", "concurrency"),
    ("resume = 3", "resume"),
    ("[resume]\nx = []", "resume.x"),
    ("colour = 1", "unknown setting"),
    ("staleAfter = ", "config.toml"),
])
def test_bad_config_names_the_problem(tmp_path, text, message):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_resumes_run_with_the_permissions_their_prompt_needs_and_config_can_change_them(tmp_path):
    def resume(host: str, config: Config, **given: object) -> list[str]:
        firing = Firing("post-task", host, "s1", "h1", "tidy up", None, tmp_path, **given)
        return build_argv("resume", firing, config.resume, Workspace(tmp_path)).argv

    config = load_config(tmp_path / "absent.toml")
    assert resume("claude-code", config)[:5] == [
        "claude", "--permission-mode", "acceptEdits", "--resume", "s1"]
    assert 'sandbox_mode="read-only"' in resume("codex", config,
                                                options={"codex_sandbox": "read-only"})
    (tmp_path / "c.toml").write_text('permissionMode = "plan"\ncodexSandbox = "read-only"\n')
    changed = load_config(tmp_path / "c.toml")
    assert (changed.option("permissionMode"), changed.option("codexSandbox")) == ("plan", "read-only")
    assert resume("claude-code", changed, options=changed.options)[:3] == [
        "claude", "--permission-mode", "plan"]
    (tmp_path / "bad.toml").write_text('permissionMode = "yolo"\n')
    with pytest.raises(ConfigError, match="permissionMode must be one of"):
        load_config(tmp_path / "bad.toml")
