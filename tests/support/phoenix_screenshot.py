"""Regenerate docs/assets/phoenix-sessions.png and docs/assets/phoenix-trace.png: sessions as
a real sidecar daemon exports them, in Arize Phoenix's own UI.

A Phoenix of its own (tests/support/phoenix.py, installed by tests/install-phoenix.sh) and a
daemon exporting to it (`[otel] endpoint`) serve a throwaway workspace; a few sessions are
driven through the real `sidecar emit` (Claude Code and Codex turns with their recorded
transcripts, so the turns carry tokens and cost; tool uses; a turn the API refused); then
headless Chromium (Debian's `chromium`, `apt-get install chromium`; no browser is downloaded)
takes Phoenix's Sessions list (a session is `gen_ai.conversation.id`) and one session's trace.

Run: .venv/bin/python tests/support/phoenix_screenshot.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

from helpers import SIDECAR, TRANSCRIPTS, terminate, wait_until  # noqa: E402
from sidecar.base.ids import harness_id  # noqa: E402
from sidecar.telemetry.ids import trace_id  # noqa: E402
from support.phoenix import PhoenixServer  # noqa: E402

ASSETS = TESTS.parent / "docs" / "assets"
WINDOW = "1500,820"
# Phoenix's id for its first project ("default"): a GraphQL global id, base64 of "Project:1".
PROJECT = "UHJvamVjdDox"
PAUSE = 0.4  # seconds between a session's events, so its spans have a visible length


def emit(root: Path, env: dict[str, str], event: str, session: str, host: str, **extra: str) -> None:
    doc = {"event": event, "session_id": session, "host": host, **extra}
    subprocess.run([SIDECAR, "emit"], input=orjson.dumps(doc), cwd=root, env=env, check=True)
    time.sleep(PAUSE)


def drive(root: Path, env: dict[str, str], folder: Path) -> list[str]:
    """The demo sessions, each to its end; their harness ids."""
    claude = folder / "claude.jsonl"
    codex = folder / "codex.jsonl"
    shutil.copyfile(TRANSCRIPTS / "claude-code-2.1.328.jsonl", claude)
    shutil.copyfile(TRANSCRIPTS / "codex-0.169.0.jsonl", codex)
    sessions = [("claude-code", "5f0c2a1e-fix-flaky-test", str(claude), ["Read", "Bash", "Edit", "Bash"]),
                ("codex", "0199b1f4-add-retry", str(codex), ["shell", "apply_patch"])]
    for host, session, transcript, tools in sessions:
        emit(root, env, "session-start", session, host, transcript_path=transcript)
        emit(root, env, "turn-start", session, host, prompt="fix the flaky test")
        for tool in tools:
            emit(root, env, "tool-use", session, host, tool_name=tool)
        emit(root, env, "turn-end", session, host, transcript_path=transcript)
        emit(root, env, "session-end", session, host, transcript_path=transcript)
    refused = "7d3e9b20-refused"
    emit(root, env, "session-start", refused, "claude-code")
    emit(root, env, "turn-start", refused, "claude-code")
    emit(root, env, "turn-failed", refused, "claude-code", reason="rate_limit",
         error="This request would exceed your account's rate limit.")
    emit(root, env, "session-end", refused, "claude-code")
    return [harness_id(h, s) for h, s, _, _ in sessions] + [harness_id("claude-code", refused)]


def shoot(url: str, target: Path, profile: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={profile}", f"--window-size={WINDOW}",
                    "--virtual-time-budget=15000", "--force-prefers-reduced-motion",  # no drawer mid-slide
                    f"--screenshot={target}", url],
                   check=True, capture_output=True, timeout=180)
    print(f"wrote {target}")


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        phoenix = PhoenixServer(folder / "phoenix").start()
        root = folder / "my-project"
        root.mkdir()
        config = folder / "config"
        config.mkdir()
        (config / "config.toml").write_text(f'[otel]\nendpoint = "{phoenix.url}"\n')
        env = {**os.environ, "SIDECAR_CONFIG_HOME": str(config), "XDG_STATE_HOME": str(folder / "state")}
        subprocess.run([SIDECAR, "init", str(root)], env=env, check=True, capture_output=True)
        daemon = subprocess.Popen([SIDECAR, "run", "--root", str(root)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(2)  # serving
            harness_ids = drive(root, env, folder)
            wanted = {format(trace_id(h), "032x") for h in harness_ids}
            wait_until(lambda: wanted <= {s["trace_id"] for s in phoenix.spans(parent_id="null")}, 60, 0.5)
            ASSETS.mkdir(parents=True, exist_ok=True)
            shoot(f"{phoenix.url}/projects/{PROJECT}/sessions", ASSETS / "phoenix-sessions.png", folder / "chrome")
            # The first session's trace: its root's attributes, its turn and follow-up below it.
            first = format(trace_id(harness_ids[0]), "032x")
            shoot(f"{phoenix.url}/projects/{PROJECT}/traces/{first}", ASSETS / "phoenix-trace.png",
                  folder / "chrome")
        finally:
            terminate(daemon)
            phoenix.stop()


if __name__ == "__main__":
    main()
