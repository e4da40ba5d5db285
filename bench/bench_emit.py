"""emit: wall time of `sidecar emit < payload` against `python -c pass` and dotcontext."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from common import HOST_FIXTURES, SIDECAR, report, sandbox, time_command

DOTCONTEXT_VERSION = "1.1.1"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sidecar-bench"


def dotcontext_binary() -> Path | None:
    """dotcontext from npm, installed once into a cache folder; None without npm."""
    if shutil.which("npm") is None:
        return None
    prefix = CACHE / f"dotcontext-{DOTCONTEXT_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "dotcontext"
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
                        f"@dotcontext/cli@{DOTCONTEXT_VERSION}"],
                       capture_output=True, timeout=600)
    return binary if binary.exists() else None


def main() -> None:
    recorded = HOST_FIXTURES / "claude_code" / "fixtures" / "claude-code-2.1.328"
    payload = (recorded / "PostToolUse.json").read_bytes()
    with sandbox() as (root, env):
        (root / ".context" / "docs").mkdir()
        (root / ".context" / "docs" / "README.md").write_text("# docs\n")
        floor = time_command([sys.executable, "-c", "pass"], runs=40)
        emit = time_command([SIDECAR, "emit", "--source", "claude-code"], payload, runs=40,
                            cwd=root, env=env)
        report("emit: sidecar emit < PostToolUse", f"{emit * 1000:.1f} ms",
               f"floor python -c pass {floor * 1000:.1f} ms",
               f"{emit / floor:.2f}x floor (target <= 2x)")
        binary = dotcontext_binary()
        if binary is None:
            report("emit: dotcontext hook dispatch", "skipped", "npm not available")
            return
        peer = time_command([str(binary), "hook", "dispatch", "--source", "claude-code"],
                            payload, runs=10, cwd=root, env=env)
        report("emit: dotcontext 1.1.1 hook dispatch", f"{peer * 1000:.1f} ms",
               f"floor python -c pass {floor * 1000:.1f} ms",
               f"{peer / floor:.1f}x floor; sidecar is {peer / emit:.0f}x faster")


if __name__ == "__main__":
    main()
