"""Real hosts killed mid-turn send no end; their sessions end anyway, as host exits.

Each stub holds its answer, so the turn is still running: the session must stay active (also
across a restart of the daemon) while the process lives, and be completed and unbound within
2 s of its death.
"""

from __future__ import annotations

import os
import signal

from test_claude_code_e2e import claude_binary, claude_env
from test_gemini_e2e import GEMINI_VERSION, MODEL, gemini_env
from test_opencode_e2e import OPENCODE_VERSION, opencode_setup
from test_pi_e2e import PI_VERSION, pi_env
from test_qwen_e2e import QWEN_VERSION, assert_is_the_real_cli, qwen_env

from helpers import npm_host, run_cli
from stubs.anthropic_stub import AnthropicStub
from stubs.chat_stub import ChatStub
from stubs.gemini_stub import GeminiStub
from stubs.host_exit import assert_ends_as_host_exit, running_host


def test_claude_code_killed_with_sigkill(workspace, start_daemon, tmp_path):
    claude = claude_binary()
    assert run_cli("integrate", "claude-code", cwd=workspace.root).returncode == 0
    (tmp_path / "home").mkdir()
    with AnthropicStub() as stub:
        stub.hold()
        env = claude_env(tmp_path / "home", stub.url)
        daemon = start_daemon(workspace.root)
        with running_host([claude, "-p", "a long task"], workspace.root, env) as run:
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "claude-code",
                                     lambda pid: os.killpg(run.pid, signal.SIGKILL))


def test_gemini_cli_child_killed_with_sigkill(workspace, start_daemon, tmp_path):
    gemini = npm_host("gemini-cli", GEMINI_VERSION, "gemini")
    with GeminiStub() as stub:
        stub.hold()
        env = gemini_env(tmp_path, workspace.root, stub.url)
        assert run_cli("integrate", "gemini", env=env).returncode == 0
        daemon = start_daemon(workspace.root)
        with running_host([gemini, "-p", "a long task", "-m", MODEL], workspace.root, env):
            # The hooks' host is the CLI child the launcher re-spawned: kill only that one.
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "gemini",
                                     lambda pid: os.kill(pid, signal.SIGKILL))


def test_opencode_killed_with_sigterm(workspace, start_daemon, tmp_path):
    opencode = npm_host("opencode", OPENCODE_VERSION, "opencode")
    assert run_cli("integrate", "opencode", cwd=workspace.root).returncode == 0
    with ChatStub() as stub:
        stub.hold()
        env = opencode_setup(tmp_path, workspace.root, stub.url)
        daemon = start_daemon(workspace.root)
        with running_host([opencode, "run", "a", "long", "task"], workspace.root,
                          {**env, "PWD": str(workspace.root)}) as run:
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "opencode",
                                     lambda pid: os.kill(pid, signal.SIGTERM))
            assert run.wait(10) == -signal.SIGTERM  # it died of the signal, sending no end


def test_qwen_code_killed_with_sigkill(workspace, start_daemon, tmp_path):
    qwen = npm_host("qwen", QWEN_VERSION, "qwen")
    with ChatStub() as stub:
        stub.hold()
        env = qwen_env(tmp_path, stub.url)
        assert run_cli("integrate", "qwen", env=env).returncode == 0
        daemon = start_daemon(workspace.root)

        def kill(pid):
            # The hooks' host is the innermost CLI, below the launcher and a middle node.
            assert_is_the_real_cli(pid)
            os.kill(pid, signal.SIGKILL)

        with running_host([qwen, "a long task"], workspace.root, env):
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "qwen", kill)


def test_pi_killed_with_sigkill(workspace, start_daemon, tmp_path):
    pi = npm_host("pi", PI_VERSION, "pi")
    assert run_cli("integrate", "pi", cwd=workspace.root).returncode == 0
    with ChatStub() as stub:
        stub.hold()  # the answer never comes: the turn is still running when pi is killed
        env = pi_env(tmp_path, stub.url)
        daemon = start_daemon(workspace.root, env=env)
        with running_host([pi, "--provider", "stub", "--model", "stub-model", "-p", "a long task"],
                          workspace.root, env) as run:
            # pi is one node process, the one its extension names: kill exactly that one.
            assert_ends_as_host_exit(workspace, start_daemon, daemon, "pi",
                                     lambda pid: os.kill(pid, signal.SIGKILL))
            assert run.wait(10) == -signal.SIGKILL
