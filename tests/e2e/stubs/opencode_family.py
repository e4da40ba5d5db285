"""What opencode and its fork Kilo Code share in a test: a project's provider at the loopback
chat stub, and a `run` in the project (both take their project from PWD, not the working
directory)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any


def stub_provider(stub_url: str, **settings: Any) -> str:
    """The project config (`opencode.json`, `kilo.json`) with a provider at the stub, its one
    model used for everything, and nothing shared or updated; `settings` added."""
    return json.dumps({
        "provider": {"stub": {"npm": "@ai-sdk/openai-compatible", "name": "Loopback stub",
                              "options": {"baseURL": stub_url, "apiKey": "x"},
                              "models": {"stub-model": {"name": "Stub model"}}}},
        "model": "stub/stub-model", "small_model": "stub/stub-model", "autoupdate": False,
        "share": "disabled", **settings})


def run_in_project(program: Path, root: Path, env: dict[str, str], *words: str) -> subprocess.CompletedProcess:
    """`<program> run ...` in `root`, its standard input closed."""
    return subprocess.run([str(program), "run", *words], cwd=root,
                          env={**os.environ, **env, "PWD": str(root)}, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=180)
