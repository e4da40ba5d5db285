"""Shell completion, typer's own: the script it prints, and the answers that script gets."""

from __future__ import annotations

import shlex
import subprocess

from helpers import SIDECAR, invoke


def test_show_completion_prints_a_bash_script():
    """Run from bash, it prints bash's script. typer finds the shell among the command's
    parents (a name after the flag does not choose it), so the test starts it from a real
    bash: the test's own parents may hold none. `; exit` keeps bash from exec-ing it."""
    result = subprocess.run(
        ["bash", "-c", f"{shlex.quote(SIDECAR)} --show-completion; exit $?"],
        capture_output=True, timeout=30)
    assert result.returncode == 0
    script = result.stdout.decode()
    assert "_sidecar_completion()" in script and "complete " in script
    assert "_SIDECAR_COMPLETE=complete_bash" in script


def test_the_script_completes_commands_and_subcommands():
    env = {"_SIDECAR_COMPLETE": "complete_bash", "COMP_WORDS": "sidecar hooks en",
           "COMP_CWORD": "2"}
    assert invoke(env=env).stdout.decode().split() == ["enable"]
    env = {**env, "COMP_WORDS": "sidecar lo", "COMP_CWORD": "1"}
    assert invoke(env=env).stdout.decode().split() == ["logs"]
