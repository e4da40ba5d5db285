"""The environment file (`environment` in sidecar's config folder): a bad line is reported and
the rest kept, and what is not a regular file is refused, never waited for."""

from __future__ import annotations

import os
import sys

from test_hooks_daemon import command_hook, hook_status

from helpers import end_session, run_cli, use_hooks, wait_until
from sidecar import envfile


def test_a_line_that_is_not_utf8_is_reported_and_every_other_line_kept(tmp_path):
    path = tmp_path / "environment"
    path.write_bytes(b"ANTHROPIC_API_KEY=sk-1\nBAD=caf\xe9\nnot a line\nOPENAI_API_KEY=o\n")
    read = envfile.read_env_file(path)
    assert read.variables == {"ANTHROPIC_API_KEY": "sk-1", "OPENAI_API_KEY": "o"}
    assert read.problems == (f"{path}: line 2 is not UTF-8 text; skipped",
                             f"{path}: line 3 is not KEY=value; skipped")


def test_a_fifo_or_a_folder_as_the_environment_file_is_refused(tmp_path):
    path = tmp_path / "environment"
    os.mkfifo(path)
    read = envfile.read_env_file(path)  # no writer: a blocking read would wait forever
    assert read.variables == {}
    assert read.problems == (f"{path} is not a regular file; no variable was read from it",)
    os.unlink(path)
    path.mkdir()
    assert envfile.read_env_file(path).problems == (
        f"{path} is not a regular file; no variable was read from it",)


def test_the_daemon_keeps_the_good_lines_says_which_is_bad_and_doctor_names_it(
        workspace, config_home, start_daemon, tmp_path):
    (config_home / "environment").write_bytes(b"ANTHROPIC_API_KEY=sk-kept\nBAD=caf\xe9\n")
    seen = tmp_path / "seen.txt"
    show = [sys.executable, "-c", "import os,sys; open(sys.argv[1],'w').write("
            "os.environ.get('ANTHROPIC_API_KEY','MISSING'))", str(seen)]
    use_hooks(workspace, {"show": command_hook("show", show, delay=0)})
    daemon = start_daemon(workspace.root)
    end_session(workspace.root, "s-env")
    wait_until(lambda: hook_status(workspace, "show") == "ok", 20)
    assert seen.read_text() == "sk-kept"  # the good line reached the follow-up
    said = f"{config_home / 'environment'}: line 2 is not UTF-8 text; skipped"
    assert said in daemon.output()
    doctor = run_cli("doctor", cwd=workspace.root)
    assert f"PROBLEM {said}" in doctor.stdout.decode() and doctor.returncode == 1


def test_a_fifo_as_the_environment_file_stops_neither_run_nor_doctor(
        workspace, config_home, start_daemon):
    os.mkfifo(config_home / "environment")
    daemon = start_daemon(workspace.root)  # serves (waits for its lead) instead of hanging
    said = f"{config_home / 'environment'} is not a regular file; no variable was read from it"
    wait_until(lambda: said in daemon.output())
    doctor = run_cli("doctor", cwd=workspace.root, timeout=30)
    assert f"PROBLEM {said}" in doctor.stdout.decode()
    assert b"Traceback" not in doctor.stderr


def test_an_environment_file_too_large_to_be_one_is_refused_whole(tmp_path):
    path = tmp_path / "environment"
    path.write_bytes(b"A=b\n" * (envfile.MAX_ENV_BYTES // 4 + 1))
    read = envfile.read_env_file(path)
    assert read.variables == {}
    assert read.problems == (f"{path} is larger than 1024 KiB; no variable was read from it",)


def test_a_fifo_as_config_toml_is_refused_not_waited_for(tmp_path, config_home, workspace):
    (config_home / "config.toml").unlink()
    os.mkfifo(config_home / "config.toml")
    said = f"{config_home / 'config.toml'} is not a regular file; it is never read"
    result = run_cli("run", "--root", str(workspace.root), timeout=30)
    assert result.returncode == 2 and said in result.stderr.decode()
    doctor = run_cli("doctor", cwd=workspace.root, timeout=30)
    assert b"Traceback" not in doctor.stderr
