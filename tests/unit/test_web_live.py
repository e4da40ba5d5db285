"""The web view's live path over a real Feed (inotify on a real workspace): a burst of record
writes reaches each browser as changes at most one every 100 ms, naming the session that
changed; a browser that falls behind is told to read everything again, and every stream ends
when the view stops."""

from __future__ import annotations

import asyncio
import time

import inotify_simple

from sidecar.base.ids import harness_id
from sidecar.live.feed import Feed
from sidecar.sessions.store import SessionStore
from sidecar.web import live
from sidecar.web.live import Hub
from sidecar.web.rows import key_text
from support import top_demo

inotify_simple.INotify().close()  # (libc found through ldconfig at collection, not in a test)
SESSION = "c90e12ab-idle"


def rewrite(store: SessionStore, hid: str, times: int) -> None:
    for _ in range(times):
        record = store.load_session(hid)
        assert record is not None
        store.save_session(record, [])
        time.sleep(0.01)


def test_a_burst_of_writes_is_sent_coalesced_with_the_key_that_changed(tmp_path):
    ws = top_demo.build(tmp_path / "demo", time.time())
    hid = harness_id(top_demo.HOST, SESSION)
    store = SessionStore(ws, durable=False)

    async def main() -> list[tuple[float, dict]]:
        hub = Hub(Feed([ws.root]))
        await asyncio.to_thread(hub.start, asyncio.get_running_loop())
        hub.ready()
        fast, slow = hub.subscribe(), hub.subscribe()
        writing = asyncio.create_task(asyncio.to_thread(rewrite, store, hid, 30))
        got: list[tuple[float, dict]] = []
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                change = await asyncio.wait_for(fast.get(), deadline - time.monotonic())
            except TimeoutError:
                break
            got.append((time.monotonic(), change))
        await writing
        behind = slow.qsize()
        hub.stop()
        assert await fast.get() is None  # the stream ends
        assert behind >= len(got)  # the slow one's queue held every change (none lost)
        return got

    got = asyncio.run(main())
    assert got, "no change was sent"
    assert all(b - a >= live.COALESCE * 0.9 for (a, _), (b, _) in zip(got, got[1:], strict=False))
    assert len(got) < 30 / 2  # 30 writes over ~0.4 s: coalesced, not one each
    assert any(key_text(("", ws.root, hid)) in change.get("keys", []) for _, change in got)


def test_a_browser_that_falls_behind_reads_all_again(tmp_path, monkeypatch):
    ws = top_demo.build(tmp_path / "demo", time.time())
    hid = harness_id(top_demo.HOST, SESSION)
    store = SessionStore(ws, durable=False)
    monkeypatch.setattr(live, "BACKLOG", 2)

    async def main() -> list[dict]:
        hub = Hub(Feed([ws.root]))
        await asyncio.to_thread(hub.start, asyncio.get_running_loop())
        hub.ready()
        lagging = hub.subscribe()
        for _ in range(4):
            await asyncio.to_thread(rewrite, store, hid, 1)
            await asyncio.sleep(0.25)
        queued = [lagging.get_nowait() for _ in range(lagging.qsize())]
        hub.stop()
        return queued

    queued = asyncio.run(main())
    assert len(queued) <= 3 and queued[0].get("all") is True
