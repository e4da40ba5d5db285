"""End to end with the real Codex CLI 0.171.0, offline against a loopback Responses stub.

`sidecar integrate codex` writes the hooks and the trust Codex itself reports for them, so
Codex runs every one, SessionEnd included: the session is completed by its own end and
`post-task` resumes it once through `codex exec resume`. Codex's own edits of config.toml
(`codex mcp add`), a re-integration from another install location and `--uninstall` leave
every setting and comment of the user's as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import tomlkit

from helpers import SIDECAR, npm_host, read_json, run_cli
from sidecar.config import DEFAULT_RESUME
from stubs.lifecycle import (
    assert_resumed_after_limit,
    assert_whole_lifecycle,
    enable_limit_resume,
    prepare_post_task,
    set_resume,
    settled_record,
    trace_lines,
    wait_for_the_limit_resume,
)
from stubs.responses_stub import LimitedResponsesStub, ResponsesStub

CODEX_VERSION = "0.171.0"
USER_CONFIG = """# my Codex settings: every line of this must survive sidecar
model = "gpt-5.5"  # the model I use
model_provider = "stub"

[model_providers.stub]
name = "stub"
base_url = "{url}"
env_key = "STUB_KEY"   # any value works for the stub
wire_api = "responses"

[features]
plugins = false

[tui]
notifications = true
"""


def codex_env(tmp_path: Path, codex: Path, stub_url: str, monkeypatch) -> dict[str, str]:
    """Codex's home and config.toml, set in this process's environment too (codex_hooks asks
    the real Codex, in this environment)."""
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(USER_CONFIG.format(url=stub_url))
    # Codex on PATH, as users have it: integrate and doctor ask it for its hooks' trust.
    env = {"HOME": str(home), "CODEX_HOME": str(codex_home), "STUB_KEY": "x",
           "PATH": f"{codex.parent}{os.pathsep}{os.environ['PATH']}"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def codex_exec(codex: Path, root: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, str]:
    """`codex exec "remember banana"` in `root`; its run and the session id it printed."""
    run = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "remember banana"],
                         cwd=root, env={**os.environ, **env}, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=180)
    ids = [line.split("session id:")[1].strip() for line in run.stderr.splitlines()
           if "session id:" in line]
    return run, ids[0] if ids else ""


def relocated_install(prefix: Path) -> Path:
    """The same sidecar as seen from another install location: a venv-shaped folder whose
    python links to this one, so `sidecar` there writes hooks with its own absolute path."""
    venv = Path(sys.executable).parent.parent
    (prefix / "bin").mkdir(parents=True)
    shutil.copy(venv / "pyvenv.cfg", prefix / "pyvenv.cfg")
    (prefix / "lib").symlink_to(venv / "lib")
    (prefix / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    launcher = Path(SIDECAR).read_text().split("\n", 1)[1]
    (prefix / "bin" / "sidecar").write_text(f"#!{prefix / 'bin' / 'python'}\n{launcher}")
    (prefix / "bin" / "sidecar").chmod(0o755)
    return prefix / "bin"


def codex_hooks(codex: Path, cwd: Path) -> list[dict]:
    """sidecar's hooks as Codex lists them (in this process's environment)."""
    from sidecar.hosts.codex import hooks

    answers = hooks.ask(str(codex), cwd)
    assert answers is not None, "codex app-server did not answer hooks/list"
    return [h for h in answers if "sidecar" in (h.get("command") or "")]


def test_an_integrated_codex_session_is_completed_by_its_end_and_resumed_once(
        workspace, start_daemon, config_home, tmp_path, monkeypatch):
    codex = npm_host("codex", CODEX_VERSION, "codex")
    prepare_post_task(workspace)
    set_resume(config_home, "codex", [str(codex), *DEFAULT_RESUME["codex"][1:]])  # as shipped
    with ResponsesStub() as stub:
        env = codex_env(tmp_path, codex, stub.url, monkeypatch)
        assert run_cli("integrate", "codex", env=env).returncode == 0
        hooks = codex_hooks(codex, workspace.root)
        assert {h["eventName"] for h in hooks} == {"sessionStart", "userPromptSubmit",
                                                   "postToolUse", "stop", "sessionEnd",
                                                   "permissionRequest"}
        assert {h["trustStatus"] for h in hooks} == {"trusted"}, hooks
        # Where Codex cannot be asked, sidecar computes the hashes: still this Codex's own.
        from sidecar.hosts.codex.hooks import our_handlers

        hooks_json = Path(env["CODEX_HOME"]) / "hooks.json"
        assert our_handlers(hooks_json, read_json(hooks_json)) == \
            {h["key"]: h["currentHash"] for h in hooks}
        doctor = run_cli("doctor", cwd=workspace.root, env=env).stdout.decode()
        assert "Codex trusts every sidecar hook" in doctor, doctor

        start_daemon(workspace.root, env=env)
        first, session_id = codex_exec(codex, workspace.root, env)
        assert first.returncode == 0 and session_id, first.stderr[-3000:]
        record = settled_record(workspace, "codex", session_id)
        requests = list(stub.requests)
    done = assert_whole_lifecycle(workspace, record, requests, "remember banana")
    log = Path(read_json(workspace.hooks_file)["hooks"]["post-task"]["history"][0]["log"]).read_text()
    assert """'sandbox_mode="workspace-write"'""" in log  # the sandbox it ran with, shown
    assert done["metadata"]["sidecar"]["transcriptPath"].startswith(env["CODEX_HOME"])
    assert '"hostEvent":"SessionEnd"' in record.with_name("trace.jsonl").read_text()  # Codex's own end


def test_codex_settings_survive_its_own_edits_a_reintegration_and_an_uninstall(
        tmp_path, config_home, monkeypatch):
    codex = npm_host("codex", CODEX_VERSION, "codex")
    env = codex_env(tmp_path, codex, "http://127.0.0.1:9/v1", monkeypatch)
    config = Path(env["CODEX_HOME"]) / "config.toml"
    original = config.read_text()
    assert run_cli("integrate", "codex", env=env).returncode == 0
    added = subprocess.run([str(codex), "mcp", "add", "demo", "--", "echo", "hi"],
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    with_mcp = tomllib.loads(config.read_text())
    assert with_mcp["mcp_servers"]["demo"]["command"] == "echo"

    # An upgrade moved the executable: the hooks now call sidecar from another place.
    moved = relocated_install(tmp_path / "elsewhere")
    again = subprocess.run([str(moved / "sidecar"), "integrate", "codex"],
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    hooks = read_json(Path(env["CODEX_HOME"]) / "hooks.json")["hooks"]
    assert all(str(moved) in group["hooks"][0]["command"]
               for groups in hooks.values() for group in groups)
    now = tomllib.loads(config.read_text())
    assert now["mcp_servers"] == with_mcp["mcp_servers"] and now["tui"] == {"notifications": True}
    assert "# my Codex settings" in config.read_text()
    trusted = codex_hooks(codex, tmp_path)
    assert trusted and {h["trustStatus"] for h in trusted} == {"trusted"}

    # A trust entry gone wrong (an edit, another tool): doctor asks Codex and says so.
    saved = config.read_text()
    doc = tomlkit.parse(saved)
    [end_key] = [k for k in doc["hooks"]["state"] if ":session_end:" in k]
    doc["hooks"]["state"][end_key]["trusted_hash"] = "sha256:" + "0" * 64
    config.write_text(tomlkit.dumps(doc))
    doctor = run_cli("doctor", cwd=tmp_path, env=env).stdout.decode()
    assert "Codex does not trust sidecar's hooks (session_end)" in doctor, doctor
    assert "fix: sidecar integrate codex" in doctor
    config.write_text(saved)

    assert run_cli("integrate", "codex", "--uninstall", env=env).returncode == 0
    after = config.read_text()
    # Exactly the user's file plus what Codex itself added: no trust entry, no feature flag
    # sidecar set, and every comment and table of the user's.
    assert "trusted_hash" not in after and "hooks.state" not in after
    assert after.startswith(original.rstrip("\n"))
    assert tomllib.loads(after) == {**tomllib.loads(original), "mcp_servers": with_mcp["mcp_servers"]}
    assert not (Path(env["CODEX_HOME"]) / "hooks.json").exists()  # sidecar created it


def test_a_codex_turn_refused_by_the_usage_limit_is_resumed_once_it_resets(
        workspace, start_daemon, config_home, tmp_path, monkeypatch):
    """Codex sends no hook for a refused turn; its rollout says so, and the reset time it
    prints ("try again at 6:16 AM", a few seconds ahead): the end queues no post-task, and
    resume-after-limit resumes the same conversation once."""
    codex = npm_host("codex", CODEX_VERSION, "codex")
    enable_limit_resume(workspace, config_home, "codex", [str(codex), *DEFAULT_RESUME["codex"][1:]])
    with LimitedResponsesStub(refusals=1, resets_in=2) as stub:
        env = codex_env(tmp_path, codex, stub.url, monkeypatch)
        assert run_cli("integrate", "codex", env=env).returncode == 0
        start_daemon(workspace.root, env=env)
        first, session_id = codex_exec(codex, workspace.root, env)
        assert "try again at" in first.stderr and session_id, first.stderr[-2000:]

        wait_for_the_limit_resume(workspace, 150)
        turns = [r for r in stub.requests if r["body"]]

    assert len(turns) == 2  # the refused turn, then the resumed one, the same conversation
    record = assert_resumed_after_limit(workspace, "codex", session_id, turns[1:])
    assert record["metadata"]["sidecar"]["tokens"]["input"] > 0  # the resumed turn's figures
    trace = trace_lines(workspace.session_dir(record["id"]) / "session.json")
    assert any(t["event"] == "turn.failed" and "(from the transcript)" in t["message"]
               for t in trace)
