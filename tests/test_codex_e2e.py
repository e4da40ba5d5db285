"""End to end with the real Codex CLI: hooks written by `sidecar integrate codex` are trusted
by Codex (untrusted ones are skipped silently) and reach a running daemon."""

from __future__ import annotations

import os
import subprocess

import orjson
import pytest
from hosts.responses_stub import ResponsesStub

from conftest import npm_host, read_json, run_cli, wait_until
from sidecar.lifecycle import harness_id

pytestmark = pytest.mark.e2e

CODEX_VERSION = "0.169.0"


def test_integrated_codex_hooks_are_trusted_and_tracked(workspace, start_daemon, tmp_path):
    codex = npm_host("codex", CODEX_VERSION, "codex")
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    with ResponsesStub() as stub:
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "stub"\n\n[model_providers.stub]\nname = "stub"\n'
            f'base_url = "{stub.url}"\nenv_key = "STUB_KEY"\nwire_api = "responses"\n\n'
            "[features]\nplugins = false\n")
        env = {"HOME": str(home), "CODEX_HOME": str(codex_home), "STUB_KEY": "x"}
        assert run_cli("integrate", "codex", env=env).returncode == 0
        start_daemon(workspace.root)
        result = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "say hi"],
                                cwd=workspace.root, env={**os.environ, **env}, capture_output=True,
                                text=True, stdin=subprocess.DEVNULL, timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
        assert stub.requests, "Codex never reached the stub"
    session_id = next(line.split("session id:")[1].strip() for line in result.stderr.splitlines()
                      if "session id:" in line)
    record_path = workspace.session_dir(harness_id("codex", session_id)) / "session.json"
    wait_until(lambda: record_path.exists() and not list(workspace.inbox.glob("*.json")), 20)
    trace = [orjson.loads(line)["event"] for line in
             record_path.with_name("trace.jsonl").read_bytes().splitlines()]
    assert trace[:2] == ["session.created", "session.start"]
    assert "turn.start" in trace and "turn.end" in trace
    record = read_json(record_path)
    assert record["metadata"]["sidecar"]["transcriptPath"].startswith(str(codex_home))
