"""status --line: wall time of `sidecar status --line` (Claude Code's statusLine payload, and
tmux's form with no input) against `python -c pass` and `python -S -c pass`, measured in the
same run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from common import HOST_FIXTURES, SIDECAR, daemon, report, sandbox, time_command

RECORDED = HOST_FIXTURES / "claude_code" / "fixtures"
SESSION = "31968bc9-5f28-4c28-ad6e-44fc394c0956"  # the recorded payload's own


def tracked(root: Path, env: dict[str, str]) -> bytes:
    """A live session of a real daemon's (a turn open), and the statusLine payload naming it."""
    prompt = json.loads((RECORDED / "claude-code-2.1.328" / "UserPromptSubmit.json").read_text())
    prompt |= {"session_id": SESSION, "cwd": str(root)}
    with daemon(root, env):
        subprocess.run([SIDECAR, "emit", "--source", "claude-code"], input=json.dumps(prompt).encode(),
                       cwd=root, env=env, check=True, capture_output=True)
        deadline = time.monotonic() + 30
        while list((root / ".context/runtime/inbox").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
    text = (RECORDED / "statusline" / "claude-code-2.1.328.json").read_text()
    return text.replace("/home/dev/proj", str(root)).encode()


def main() -> None:
    with sandbox() as (root, env):
        payload = tracked(root, env)
        # As installed (pip compiles the package): its bytecode cached, here in the sandbox.
        env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(root.parent / "pycache")
        line = subprocess.run([SIDECAR, "status", "--line", "--source", "claude-code"], input=payload,
                              env=env, capture_output=True).stdout.decode().strip()
        floor = time_command([sys.executable, "-c", "pass"], runs=40, env=env)
        bare = time_command([sys.executable, "-S", "-c", "pass"], runs=40, env=env)
        session = time_command([SIDECAR, "status", "--line", "--source", "claude-code"], payload,
                               runs=40, cwd=root, env=env)
        counts = time_command([SIDECAR, "status", "--line"], b"", runs=40, cwd=root, env=env)
        floors = f"floor -c pass {floor * 1000:.1f} / -S {bare * 1000:.1f} ms"
        report(f"status --line: statusLine ({line[:18]})", f"{session * 1000:.1f} ms", floors,
               f"{session / floor:.2f}x floor, {session / bare:.2f}x -S (target <= 1.5x)")
        report("status --line: tmux, no input", f"{counts * 1000:.1f} ms", floors,
               f"{counts / floor:.2f}x floor, {counts / bare:.2f}x -S (target <= 1.5x)")


if __name__ == "__main__":
    main()
