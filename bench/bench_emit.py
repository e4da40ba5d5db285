"""emit: wall time of `sidecar emit < payload` against `python -c pass`, `python -S -c pass`
and dotcontext, all in the same run.

`sidecar emit` is timed through the launcher as installed (sidecar/install/launcher.py has
rewritten it to start Python without site, as `sidecar integrate` does) and through pip's own
copy of it (started with site, as before that rewrite), with bytecode cached as pip leaves it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from common import HOST_FIXTURES, SIDECAR, bytecode_cached, report, sandbox, time_command

DOTCONTEXT_VERSION = "1.1.1"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sidecar-bench"
RUNS = 60


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


def pip_launcher(folder: Path) -> str:
    """The launcher as pip wrote it, before sidecar's rewrite: `#!<python>` (with site), and
    no folder written in."""
    text = Path(SIDECAR).read_bytes().split(b"\n", 1)[1]
    if b"\nFOLDERS: " in text:  # (a launcher from before the rewrite has none)
        text = text.replace(text[text.index(b"\nFOLDERS: ") + 1:].split(b"\n", 1)[0],
                            b"FOLDERS: tuple[str, ...] = ()")
    path = folder / "sidecar"
    path.write_bytes(b"#!" + sys.executable.encode() + b"\n" + text)
    path.chmod(0o755)
    return str(path)


def main() -> None:
    recorded = HOST_FIXTURES / "claude_code" / "fixtures" / "claude-code-2.1.328"
    payload = (recorded / "PostToolUse.json").read_bytes()
    with bytecode_cached(), sandbox() as (root, env):
        (root / ".context" / "docs").mkdir()
        (root / ".context" / "docs" / "README.md").write_text("# docs\n")
        with_site = pip_launcher(root.parent)
        emit = [SIDECAR, "emit", "--source", "claude-code"]
        for command in (emit, [with_site, *emit[1:]]):  # the bytecode cached before timing
            subprocess.run(command, input=payload, cwd=root, env=env, capture_output=True)
        floor = time_command([sys.executable, "-c", "pass"], runs=RUNS, env=env)
        bare = time_command([sys.executable, "-S", "-c", "pass"], runs=RUNS, env=env)
        fast = time_command(emit, payload, runs=RUNS, cwd=root, env=env)
        slow = time_command([with_site, *emit[1:]], payload, runs=RUNS, cwd=root, env=env)
        # As Claude Code 2.1.332 runs it: CLAUDE_PID names the host (here this process, the
        # hook's parent), which emit checks is one of its ancestors.
        claimed = time_command(emit, payload, runs=RUNS, cwd=root,
                               env={**env, "CLAUDE_PID": str(os.getpid())})
        floors = f"floor -c pass {floor * 1000:.1f} / -S {bare * 1000:.1f} ms"
        report("emit: sidecar emit < PostToolUse", f"{fast * 1000:.1f} ms", floors,
               f"{fast / floor:.2f}x floor, {fast / bare:.2f}x -S (target <= 1.2x -S)")
        report("emit: with CLAUDE_PID (2.1.332)", f"{claimed * 1000:.1f} ms", floors,
               f"{claimed / floor:.2f}x floor, {claimed / bare:.2f}x -S (target <= 1.2x -S)")
        report("emit: through pip's launcher (site)", f"{slow * 1000:.1f} ms", floors,
               f"{slow / floor:.2f}x floor, {slow / bare:.2f}x -S")
        binary = dotcontext_binary()
        if binary is None:
            report("emit: dotcontext hook dispatch", "skipped", "npm not available")
            return
        peer = time_command([str(binary), "hook", "dispatch", "--source", "claude-code"],
                            payload, runs=10, cwd=root, env=env)
        report("emit: dotcontext 1.1.1 hook dispatch", f"{peer * 1000:.1f} ms",
               f"floor python -c pass {floor * 1000:.1f} ms",
               f"{peer / floor:.1f}x floor; sidecar is {peer / fast:.0f}x faster")


if __name__ == "__main__":
    main()
