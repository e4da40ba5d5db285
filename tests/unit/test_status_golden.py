"""`status`'s reports pinned as golden files (golden/status/): over every case of
status_cases.py and every hostile state of status_matrix.py, the report's JSON and text are
the ones the full command gave when they were pinned (time, pids and paths normalised), with
no traceback; of the hostile states, what the daemon says of hooks.json too.

`SIDECAR_UPDATE_GOLDEN=1` writes the files anew (only to pin a change meant to be seen)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from status_cases import CASES, NOW, RANDOM, Case
from status_matrix import MATRIX

from sidecar import jsonfile
from sidecar.base.words import Style
from sidecar.layout import Workspace

GOLDEN = Path(__file__).parent / "golden" / "status"
UPDATE = os.environ.get("SIDECAR_UPDATE_GOLDEN") == "1"


@pytest.fixture(autouse=True)
def _utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("SIDECAR_COORDINATION_URL", raising=False)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def answer(ws: Workspace) -> dict[str, object]:
    """What `status --root WS` says: its JSON, its text and its exit code."""
    from sidecar.base.exitcodes import of_status
    from sidecar.coordination import current
    from sidecar.views.report import dumps
    from sidecar.views.status import build
    from sidecar.views.status_text import render_text

    current.reset()
    try:
        report = build([str(ws.root)], NOW)
    except Exception as exc:  # noqa: BLE001  # a traceback is pinned as one, to be fixed
        return {"traceback": type(exc).__name__}
    assert dumps(report) == jsonfile.dumps(report)  # the command's bytes are orjson's
    return {"exit": of_status(report), "json": dumps(report).decode(),
            "text": render_text(report, now=NOW, style=Style(False))}


def daemon_reading(ws: Workspace) -> dict[str, object]:
    """What a daemon starting on the workspace makes of hooks.json: broken or not, and the
    hooks it would fire (enabled ones)."""
    from sidecar.followups.store import HookStore

    try:
        state = HookStore(ws, durable=False).refresh(NOW)
    except Exception as exc:  # noqa: BLE001
        return {"raises": type(exc).__name__}
    return {"broken": state.error is not None,
            "enabled": sorted(h.id for h in state.doc.hooks.values() if h.enabled)}


def normalised(value: object, ws: Workspace) -> object:
    me = str(os.getpid())
    if isinstance(value, dict):
        return {k: normalised(v, ws) for k, v in value.items()}
    if isinstance(value, str):
        from sidecar.base.version import __version__

        text = value.replace(str(ws.root.parent), "<tmp>").replace(__version__, "<version>")
        return re.sub(rf"(?<![0-9]){me}(?![0-9])", "<pid>", text)
    return value


def check(name: str, case: Case, ws: Workspace, matrix: bool) -> None:
    cleanup = case(ws)
    try:
        got = normalised(answer(ws), ws)
    finally:
        if callable(cleanup):
            cleanup()
    if matrix:
        got = {**got, "daemon": daemon_reading(ws)}  # type: ignore[dict-item]
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    pinned = json.loads(path.read_text())
    assert got == pinned


@pytest.mark.parametrize("name", [*CASES, *RANDOM, *MATRIX])
def test_the_report_is_the_pinned_one(name, workspace):
    """Of a hostile state (MATRIX), what the daemon makes of hooks.json is pinned too."""
    check(name, {**CASES, **RANDOM, **MATRIX}[name], workspace, matrix=name in MATRIX)
