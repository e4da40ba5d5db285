"""`sidecar web` at 1,000 workspaces and 10,000 sessions, in headless Chromium: the first page
(the list drawn, and the /api/sessions answer), and an event's way to the browser, each beside
a floor measured in the same run.

The records are bench_top's (copies of ones sidecar's own ingestion wrote); one more workspace
is served by a real daemon, and the events are dropped there by the real `sidecar emit`.
Floors: a static file's fetch from the same server (the answer), the same file opened as a
page (the first page), and the daemon's own write of the event's record (the event's way).
Chromium is Debian's, driven through Playwright (tests/install-browser.sh).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_top import make
from common import SIDECAR, daemon, report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from sidecar.base.ids import harness_id  # noqa: E402
from support.browser import Served, chromium, signed_in  # noqa: E402

WORKSPACES = 1000  # of 10 sessions each
SAMPLES = 20
LIVE = "bench-live"  # the sessions the events start: the page is filtered to them


def fetch_ms(url: str, token: str) -> float:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    start = time.perf_counter()
    with urllib.request.urlopen(request) as answer:
        answer.read()
    return (time.perf_counter() - start) * 1000


def median_ms(runs: int, once) -> float:
    once()  # warm: the first of a kind pays for imports and caches
    return statistics.median(once() for _ in range(runs))


def first_page(browser, web: Served) -> tuple[float, float]:
    """The list drawn (ms from the navigation's start), and a static file opened as a page."""
    page = signed_in(browser, web.base, web.token)
    page.wait_for_function("() => performance.getEntriesByName('sidecar:list-drawn').length > 0")

    def drawn() -> float:
        page.goto(web.base)
        page.wait_for_function("() => performance.getEntriesByName('sidecar:list-drawn').length > 0")
        return page.evaluate("performance.getEntriesByName('sidecar:list-drawn')[0].startTime")

    def static() -> float:
        page.goto(f"{web.base}static/app.css")
        return page.evaluate("performance.getEntriesByType('navigation')[0].responseEnd")

    figures = median_ms(5, drawn), median_ms(5, static)
    page.context.close()
    return figures


# In the page: the wall-clock moment a row naming `window.wanted` is drawn.
WATCH = """() => {
  window.shownAt = null;
  new MutationObserver(() => {
    if (window.wanted && window.shownAt === null
        && document.getElementById("rows").textContent.includes(window.wanted)) {
      window.shownAt = performance.timeOrigin + performance.now();
    }
  }).observe(document.getElementById("rows"), {childList: true, subtree: true});
}"""


def event_to_browser(browser, web: Served, live: Path,
                     env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Per event: ms from `sidecar emit` returning to the row drawn, and to the daemon's
    record of it written (the floor)."""
    page = signed_in(browser, web.base, web.token)
    page.fill("#q", LIVE)
    page.wait_for_function("() => document.getElementById('rows').children.length === 0")
    page.evaluate(WATCH)
    shown, written = [], []
    for n in range(SAMPLES):
        session = f"{LIVE}-{n:03d}"
        record = live / ".context/runtime/sessions" / harness_id("claude-code", session) / "session.json"
        page.evaluate(f"window.wanted = {session!r}; window.shownAt = null")
        subprocess.run([SIDECAR, "emit", "session-start", "--session-id", session, "--source",
                        "claude-code"], cwd=live, env=env, check=True, capture_output=True)
        sent = time.time()
        written_at = None
        deadline = sent + 10
        while time.time() < deadline:
            if written_at is None and record.exists():
                written_at = time.time()
            at = page.evaluate("window.shownAt")
            if at is not None and written_at is not None:
                shown.append(at - sent * 1000)
                written.append((written_at - sent) * 1000)
                break
            time.sleep(0.001)
        time.sleep(0.2)  # apart, as events come
    page.context.close()
    return shown, written


def web() -> None:
    base = Path(tempfile.mkdtemp(prefix="sidecar-bench-web-"))
    config = base / "config"
    config.mkdir()
    env = {**os.environ, "SIDECAR_CONFIG_HOME": str(config)}
    os.environ["SIDECAR_CONFIG_HOME"] = str(config)  # top_demo's trust, as the daemon reads it
    try:
        roots, records = make(base, WORKSPACES)
        live = base / "live"
        live.mkdir()
        subprocess.run([SIDECAR, "init", str(live)], env=env, check=True, capture_output=True)
        with daemon(live, env):
            served = Served([*roots, live], config)
            try:
                def fetched(path: str) -> float:
                    return median_ms(SAMPLES, lambda: fetch_ms(served.base + path, served.token))

                answer, floor = fetched("api/sessions?limit=200"), fetched("static/app.css")
                report(f"web: /api/sessions, {len(records)} sessions", f"{answer:.1f} ms (p50)",
                       f"a static file {floor:.1f} ms", f"{answer / floor:.1f}x; target <= 300 ms")
                with chromium() as browser:
                    drawn, static = first_page(browser, served)
                    report(f"web: first page drawn, {len(records)} sessions", f"{drawn:.0f} ms (p50)",
                           f"a static file as a page {static:.0f} ms",
                           f"{drawn / static:.1f}x; target <= 300 ms")
                    shown, written = event_to_browser(browser, served, live, env)
                if shown:
                    p50, floor_p50 = statistics.median(shown), statistics.median(written)
                    report(f"web: event -> browser ({len(shown)} of {SAMPLES})",
                           f"p50 {p50:.0f} ms, max {max(shown):.0f} ms",
                           f"daemon's record written p50 {floor_p50:.0f} ms",
                           f"{p50 / floor_p50:.1f}x; target <= 250 ms")
            finally:
                served.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    print(f"{'benchmark':<44} {'figure':<26} {'floor (same run)':<34} ratio / target")
    web()
