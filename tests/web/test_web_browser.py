"""The web view as its user sees it: a real `sidecar web` beside a real daemon, its page driven in
headless Chromium (Debian's, through Playwright: tests/support/browser.py). The list, an event
dropped by `sidecar emit` shown within a second without a reload, the detail, a phone's
layout, Cancel and Fire now on trusted and untrusted follow-ups (the daemon's trust rules
decide), a failed firing in red with its last lines and Retry, a browser without the token
refused, and a form another site's page posts to the API refused.

One browser serves the module; each test gets a daemon, a `sidecar web` and a page of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from helpers import emit, end_session, read_json, run_cli, wait_until
from support.browser import PHONE, chromium, signed_in

pytestmark = pytest.mark.slow

SHOWN = 1.0  # seconds from an event dropped to the page showing it


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as started:
        yield started


@pytest.fixture
def page_of(browser) -> Iterator[Any]:
    """page_of(web, size=None, mobile=False): a signed-in page; its context closed at the end."""
    opened: list[Any] = []

    def open_page(web, size: dict[str, int] | None = None, mobile: bool = False) -> Any:
        page = signed_in(browser, web.base, web.token, size, mobile)
        opened.append(page)
        page.set_default_timeout(10_000)
        page.wait_for_selector("#live.on")  # the change feed is followed
        return page

    yield open_page
    for page in opened:
        page.context.close()


def start(root: Path, session: str, host: str, *events: str) -> None:
    """A session begins (and goes on with `events`), through the real `sidecar emit`."""
    for event in ("session-start", *events):
        assert emit(root, None, event, "--session-id", session, "--source", host).returncode == 0


def ask(root: Path, session: str, message: str) -> None:
    """The host asks its user something (Claude Code's permission prompt)."""
    doc = {"event": "needs-input", "session_id": session, "host": "claude-code",
           "notification_type": "permission_prompt", "message": message}
    assert emit(root, orjson.dumps(doc)).returncode == 0


def row(page, text: str):
    return page.locator("#rows tr", has_text=text)


def add_hook(ws, out: Path, delay: str, then: str = "") -> None:
    """A command hook the user added (so trusted), the seeded post-task off."""
    assert run_cli("hooks", "disable", "post-task", "--root", str(ws.root)).returncode == 0
    added = run_cli("hooks", "add", "note", "--delay", delay, "--root", str(ws.root), "--",
                    "sh", "-c", f'echo "$SIDECAR_SESSION_ID" >> {out}{then}')
    assert added.returncode == 0, added.stderr


def untrust(ws, out: Path) -> None:
    """A hand edit of the hook's command (as a pull brings one): no longer trusted."""
    doc = read_json(ws.hooks_file)
    doc["hooks"]["note"]["action"] = ["sh", "-c", f'echo "edited $SIDECAR_SESSION_ID" >> {out}']
    ws.hooks_file.write_bytes(orjson.dumps(doc))


def pending_for(ws, count: int) -> None:
    wait_until(lambda: len(read_json(ws.hooks_file)["pending"]) == count, 10)


def open_detail(page, session: str) -> None:
    row(page, session).click()
    page.locator("#d-title", has_text=session).wait_for()


def test_the_list_shows_every_session_and_an_emitted_one_within_a_second(
        workspace, start_daemon, serve_web, page_of):
    start_daemon(workspace.root)
    start(workspace.root, "waits-for-me", "claude-code", "turn-start")
    ask(workspace.root, "waits-for-me", "Claude needs your permission to use Bash")
    start(workspace.root, "hard-at-work", "codex", "turn-start")
    web = serve_web(workspace.root)
    page = page_of(web)
    row(page, "waits-for-me").locator(".c-state", has_text="waiting for you").wait_for()
    assert "st-waiting" in row(page, "waits-for-me").locator(".c-state").get_attribute("class")
    assert "working" in row(page, "hard-at-work").inner_text()
    assert page.locator("#rows tr").first.inner_text().count("waits-for-me") == 1  # who needs you first
    assert "1 waiting" in page.inner_text("#counts") and "2 sessions" in page.inner_text("#counts")
    assert page.title() == "(1 waiting) sidecar"  # seen from another tab

    page.evaluate("window.notReloaded = true")
    start(workspace.root, "fresh-one", "claude-code")
    dropped = time.monotonic()
    row(page, "fresh-one").wait_for(timeout=5000)
    assert time.monotonic() - dropped < SHOWN
    assert page.evaluate("window.notReloaded") is True
    assert "3 sessions" in page.inner_text("#counts")

    page.fill("#q", "codex")  # the search box: the server's `q`, as top's filter
    page.locator("#rows tr").first.filter(has_text="hard-at-work").wait_for()
    page.wait_for_function("() => document.querySelectorAll('#rows tr').length === 1")
    assert "1 of 3 sessions" in page.inner_text("#counts")


def test_the_detail_opens_beside_the_list_and_full_width_on_a_phone(
        workspace, start_daemon, serve_web, page_of):
    start_daemon(workspace.root)
    start(workspace.root, "detailed", "claude-code", "turn-start")
    end_session(workspace.root, "detailed")
    web = serve_web(workspace.root)
    page = page_of(web)
    open_detail(page, "detailed")
    detail = page.inner_text("#detail")
    assert "ended" in detail and str(workspace.root) in detail
    assert "post-task due in" in detail  # the seeded follow-up, counting down
    page.locator("#d-timeline li", has_text="turn.start").wait_for()
    assert page.is_visible("#list-pane")  # beside the list on a desktop
    assert "selected" in row(page, "detailed").get_attribute("class")
    page.keyboard.press("Escape")
    page.locator("#detail").wait_for(state="hidden")
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "q"

    phone = page_of(web, PHONE, mobile=True)
    row(phone, "detailed").wait_for()
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scroll
    assert not phone.is_visible("#list thead")  # cards, not a table
    open_detail(phone, "detailed")
    assert not phone.is_visible("#list-pane")
    width = phone.locator("#detail").bounding_box()["width"]
    assert width > PHONE["width"] * 0.9
    phone.click("#close")
    row(phone, "detailed").wait_for()
    assert not phone.is_visible("#detail")


def test_fire_now_fires_a_trusted_hook_and_cancel_keeps_it_from_firing(
        workspace, start_daemon, serve_web, page_of, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out, delay="1h")
    start_daemon(workspace.root)
    end_session(workspace.root, "keep-out")
    end_session(workspace.root, "fire-me")
    pending_for(workspace, 2)
    page = page_of(serve_web(workspace.root))

    open_detail(page, "keep-out")
    page.click("#act-cancel")
    page.locator("#d-follow", has_text="cancelled by the user").wait_for(timeout=5000)
    assert page.inner_text("#d-said")  # the server's answer

    open_detail(page, "fire-me")
    assert page.is_visible("#act-fire") and not page.is_visible("#act-retry")
    page.click("#act-fire")
    page.locator("#d-follow", has_text="note ok").wait_for(timeout=5000)  # an hour early
    assert out.read_text() == "fire-me\n"
    assert not page.is_visible("#act-fire") and not page.is_visible("#act-cancel")
    assert read_json(workspace.hooks_file)["pending"] == []  # the cancelled one is gone for good
    assert "cancelled by the user" in row(page, "keep-out").inner_text()


def test_a_failed_firing_shows_red_with_its_last_lines_and_retry_runs_it_again(
        workspace, start_daemon, serve_web, page_of, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out, delay="1h", then="; echo 'the build server refused us'; exit 3")
    start_daemon(workspace.root)
    end_session(workspace.root, "fails-once")
    pending_for(workspace, 1)
    page = page_of(serve_web(workspace.root))
    open_detail(page, "fails-once")
    assert not page.is_visible("#act-retry")
    page.click("#act-fire")
    page.locator("#d-follow .error", has_text="note error").wait_for(timeout=5000)
    page.locator("#d-follow pre.log.error", has_text="the build server refused us").wait_for()
    assert "error" in row(page, "fails-once").locator(".c-follow span").get_attribute("class")  # red
    assert not page.is_visible("#act-fire") and not page.is_visible("#act-cancel")
    page.click("#act-retry")
    wait_until(lambda: out.exists() and out.read_text() == "fails-once\nfails-once\n", 5)


def test_an_untrusted_hook_fired_from_the_page_is_skipped_and_one_cancelled_never_runs(
        workspace, start_daemon, serve_web, page_of, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out, delay="1h")
    untrust(workspace, out)
    start_daemon(workspace.root)
    end_session(workspace.root, "edited-one")
    end_session(workspace.root, "dropped-one")
    pending_for(workspace, 2)
    page = page_of(serve_web(workspace.root))

    open_detail(page, "edited-one")
    page.click("#act-fire")
    skipped = page.locator("#d-follow .skipped", has_text="trust")
    skipped.wait_for(timeout=5000)  # the daemon's own word, shown as the follow-up's outcome
    open_detail(page, "dropped-one")
    page.click("#act-cancel")
    page.locator("#d-follow", has_text="cancelled by the user").wait_for(timeout=5000)
    assert not out.exists()
    assert read_json(workspace.hooks_file)["pending"] == []


def test_a_browser_without_the_token_is_refused(workspace, serve_web, browser):
    web = serve_web(workspace.root)
    context = browser.new_context()
    try:
        page = context.new_page()
        answer = page.goto(web.base)
        assert answer.status == 401
        assert "sidecar web" in page.inner_text("body")  # says where the address with the token is
        wrong = page.goto(f"{web.base}?token={'x' * 43}")
        assert wrong.status == 401
        assert page.context.cookies() == []
    finally:
        context.close()


# What another site's page can send unasked: a form posted to the API (its text/plain body
# made to read as the JSON the API takes), with the browser's cookies for the web view.
ATTACK = """<!doctype html><body>
<form method="POST" action=ADDRESS enctype="text/plain"><input name=NAME value='"}'></form>
<script>document.forms[0].submit();</script></body>"""


class OtherSite(BaseHTTPRequestHandler):
    """Another site on this machine: a page whose script POSTs to the web view's API."""

    page = b""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        pass


def test_a_post_from_another_sites_page_is_refused_and_changes_nothing(
        workspace, start_daemon, serve_web, page_of, tmp_path):
    out = tmp_path / "ran"
    add_hook(workspace, out, delay="1h")
    start_daemon(workspace.root)
    end_session(workspace.root, "targeted")
    pending_for(workspace, 1)
    web = serve_web(workspace.root)
    page = page_of(web)  # signed in: the browser holds the cookie
    row(page, "targeted").wait_for()
    key = row(page, "targeted").get_attribute("data-key")
    name = orjson.dumps({"key": key, "what": "fire"}).decode()[:-1] + ', "pad": "'
    OtherSite.page = ATTACK.replace("ADDRESS", orjson.dumps(f"{web.base}api/act").decode()) \
        .replace("NAME", "'" + name + "'").encode()
    other = ThreadingHTTPServer(("127.0.0.1", 0), OtherSite)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        attacker = page.context.new_page()  # the same browser, so the same cookie jar
        with attacker.expect_response(lambda r: r.url.endswith("/api/act")) as answered:
            attacker.goto(f"http://127.0.0.1:{other.server_address[1]}/")
        assert answered.value.status == 403
        assert answered.value.request.post_data.startswith('{"key":')  # the API's shape: refused all the same
    finally:
        other.shutdown()
        other.server_close()
    time.sleep(1)  # a fire would have been taken up by the daemon's wake-up by now
    assert not out.exists()
    assert [p["hookId"] for p in read_json(workspace.hooks_file)["pending"]] == ["note"]
    assert "note due in 59 min" in row(page, "targeted").inner_text()
