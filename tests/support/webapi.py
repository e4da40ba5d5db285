"""The web view's API as its page calls it, for tests against a real `sidecar web`: the list,
one session by id, an action with the page's CSRF token, and a command hook to act on."""

from __future__ import annotations

import re

import httpx

from helpers import run_cli


def bearer(web) -> dict[str, str]:
    return {"Authorization": f"Bearer {web.token}"}


def listed(web, **params) -> dict:
    answer = httpx.get(web.base + "api/sessions", params=params, headers=bearer(web))
    assert answer.status_code == 200, answer.text
    return answer.json()


def row_of(web, session: str) -> dict | None:
    return next((r for r in listed(web, q=session)["sessions"] if r["sessionId"] == session), None)


def act(web, key: str, what: str) -> httpx.Response:
    page = httpx.get(web.base, headers=bearer(web))
    csrf = re.search(r'name="csrf-token" content="([0-9a-f]+)"', page.text).group(1)
    return httpx.post(web.base + "api/act", json={"key": key, "what": what},
                      headers={**bearer(web), "X-CSRF-Token": csrf, "Origin": web.base.rstrip("/"),
                               "Sec-Fetch-Site": "same-origin"})


def add_hook(ws, out, delay: str = "1h") -> None:
    """A command hook, and the seeded post-task off, so the row shows this one alone."""
    assert run_cli("hooks", "disable", "post-task", "--root", str(ws.root)).returncode == 0
    added = run_cli("hooks", "add", "note", "--delay", delay, "--root", str(ws.root), "--",
                    "sh", "-c", f'echo "$SIDECAR_SESSION_ID" >> {out}')
    assert added.returncode == 0, added.stderr
