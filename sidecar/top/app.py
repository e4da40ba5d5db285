"""The `top` screen, in Textual: the session list, one session opened, the filter, the footer.

The list draws only its visible lines (Textual's line API), from `view.Table`, so a redraw
costs the same at ten sessions or ten thousand. Changes come from the feed's watch thread
as a call onto the app's loop; the clock ticks once a second to redraw the times and
countdowns, which reads no file.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static

from sidecar.base.errors import SidecarError
from sidecar.base.escapes import escaped
from sidecar.top import detail, view
from sidecar.views.feed import Feed
from sidecar.views.sessions import RowKey
from sidecar.views.source import RowSource
from sidecar.views.timeline import Gathered

Clock = Callable[[], float]


class SessionList(ScrollView, can_focus=True):
    """Every shown row, one line each, with a cursor."""

    BINDINGS = [Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
                Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
                Binding("home", "move(-1000000000)", show=False),
                Binding("end", "move(1000000000)", show=False)]

    def __init__(self, table: view.Table, clock: Clock) -> None:
        super().__init__()
        self.table = table
        self.clock = clock
        self.cursor = 0
        self.selected: RowKey | None = None

    def rows_changed(self) -> None:
        """The table was filtered or sorted again: keep the cursor on the same session."""
        shown = self.table.shown
        if self.selected is not None:
            at = next((i for i, r in enumerate(shown) if r.key == self.selected), None)
            self.cursor = at if at is not None else min(self.cursor, max(0, len(shown) - 1))
        self._select()
        self.virtual_size = Size(self.size.width, len(shown))
        self.refresh()

    def _select(self) -> None:
        shown = self.table.shown
        self.cursor = max(0, min(self.cursor, len(shown) - 1))
        row = shown[self.cursor] if shown else None
        self.selected = None if row is None else row.key

    def action_move(self, by: int) -> None:
        self.cursor += by
        self._select()
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False)
        self.refresh()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 1))

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.table.shown):
            return Strip.blank(width)
        text = self.table.line(index, width, self.clock())
        # The selected row is reversed, its colours kept: the state's colour means the same there.
        base = Style(reverse=True, bold=True) if index == self.cursor else Style()
        segments, at = [], 0
        for title, style in sorted(view.painted(self.table.shown[index]),
                                   key=lambda span: view.place(span[0], width)):
            start, end = view.place(title, width)
            segments += [Segment(text[at:start], base), Segment(text[start:end], base + Style.parse(style))]
            at = end
        return Strip([*segments, Segment(text[at:], base)], width)


class DetailScreen(Screen[None]):
    """One session: the files are read when it opens and when they change, not each second."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back"), Binding("enter", "app.pop_screen",
                show=False), Binding("c", "app.cancel", "cancel follow-up"),
                Binding("f", "app.fire_now", "fire now or retry"),
                Binding("q", "app.quit_top", "quit")]

    def __init__(self, key: RowKey) -> None:
        super().__init__()
        self.key = key
        self.gathered: Gathered | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="detail", markup=False)  # what hosts and logs said: text only
        yield Static(id="detail-keys")


class TopApp(App[int]):
    """`sidecar top`."""

    TITLE = "sidecar top"
    CSS = """
    #head { height: 1; background: $boost; text-style: bold; }
    SessionList { height: 1fr; }
    #filter { dock: bottom; display: none; }
    #filter.open { display: block; }
    #foot, #detail-keys { height: auto; max-height: 3; background: $boost; }
    """
    BINDINGS = [Binding("q", "quit_top", "quit"), Binding("slash", "filter", "filter"),
                Binding("a", "active", "active only"), Binding("enter", "open", "open"),
                Binding("c", "cancel", "cancel follow-up"), Binding("f", "fire_now", "fire now or retry")]

    def __init__(self, feed: RowSource, *, clock: Clock = time.time, follow: bool = True,
                 notes: list[str] | None = None) -> None:
        super().__init__()
        self.feed = feed
        self.clock = clock
        self.follow = follow
        self.notes = notes or []
        self.table = view.Table()
        self.list = SessionList(self.table, clock)

    def compose(self) -> ComposeResult:
        yield Static(id="head", markup=False)
        yield self.list
        yield Input(placeholder="filter: host, workspace, id or state", id="filter")
        yield Static(id="foot")

    def on_mount(self) -> None:
        if self.follow:
            loop = asyncio.get_running_loop()

            def changed() -> None:  # on the watch thread: only hand it to the app's loop
                loop.call_soon_threadsafe(self.take_changes)

            self.feed.follow(changed)
        self.feed.load()
        self.show_rows(force=True)
        self.set_interval(1.0, self.tick)
        self.list.focus()

    def on_unmount(self) -> None:
        self.feed.stop()

    def on_resize(self) -> None:
        self.query_one("#head", Static).update(view.header(self.size.width))
        self.show_footer()

    # -- what changes ------------------------------------------------------------------------

    def take_changes(self) -> None:
        """Read what the watches said changed, and show it."""
        if self.feed.apply():
            self.show_rows()
            screen = self.screen
            if isinstance(screen, DetailScreen):
                self.show_detail(screen, read=True)

    def show_rows(self, force: bool = False) -> None:
        if self.table.update(self.feed.rows.values(), self.feed.version) or force:
            self.list.rows_changed()
        self.show_footer()

    def show_footer(self) -> None:
        """The counts, the keys that fit, and the first problem: error texts, paths and the
        filter are shown as text (a `[` in them is no markup)."""
        parts: list[str | tuple[str, str]] = [self.table.counts.footer()]
        if self.table.active_only:
            parts += ["  ", ("active only", "bold")]
        if self.table.filter:
            parts += ["  filter ", (escaped(self.table.filter), "bold")]
        used = sum(len(part if isinstance(part, str) else part[0]) for part in parts)
        parts += ["   ", (view.key_help(self.size.width - used - 3), "dim")]
        problems = list(self.feed.errors.values())  # what cannot be read, or will not run
        said = [(text, "error:", view.ERROR_STYLE) for text in problems] + \
            [(text, "note:", "bold") for text in self.notes]
        if said:
            text, label, style = said[0]
            more = f" (and {len(said) - 1} more)" if len(said) > 1 else ""
            parts += ["\n", (label, style), f" {escaped(text)}{more}"]
        self.query_one("#foot", Static).update(Content.assemble(*parts))

    def tick(self) -> None:
        """The times and countdowns move on: redraw, read nothing."""
        self.list.refresh()
        screen = self.screen
        if isinstance(screen, DetailScreen):
            self.show_detail(screen, read=False)

    # -- keys --------------------------------------------------------------------------------

    def action_quit_top(self) -> None:
        self.exit(0)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("open")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.table.filter = event.value.strip()
        self.show_rows()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("open")
        self.list.focus()

    def action_active(self) -> None:
        self.table.active_only = not self.table.active_only
        self.show_rows()

    def action_open(self) -> None:
        if self.list.selected is None or self.list.selected not in self.feed.rows:
            return
        screen = DetailScreen(self.list.selected)
        self.push_screen(screen)
        self.call_after_refresh(self.show_detail, screen, True)

    def show_detail(self, screen: DetailScreen, read: bool) -> None:
        row = self.feed.rows.get(screen.key)
        if row is None:
            return
        if read or screen.gathered is None:
            screen.gathered = self.feed.gather(row) or Gathered([], [])
        text = "\n".join(detail.render(row, screen.gathered, self.clock()))
        screen.query_one("#detail", Static).update(text)
        screen.query_one("#detail-keys", Static).update(
            "[dim]esc back · c cancel follow-up · f fire now or retry · q quit[/dim]")

    def _chosen(self) -> RowKey | None:
        screen = self.screen
        return screen.key if isinstance(screen, DetailScreen) else self.list.selected

    def action_cancel(self) -> None:
        self._act("cancel")

    def action_fire_now(self) -> None:
        self._act("fire")

    def _act(self, what: str) -> None:
        key = self._chosen()
        row = self.feed.rows.get(key) if key is not None else None
        if row is None:
            return
        try:
            said = self.feed.act(row, what, self.clock())
        except (OSError, SidecarError) as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.notify(said, markup=False)


def run(roots: list[Path], notes: list[str]) -> int:
    app = TopApp(Feed(roots), notes=notes)
    return app.run() or 0
