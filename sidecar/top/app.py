"""The `top` screen, in Textual: the header's counts, the session list with the selected
session's detail beside it (in a wide terminal), the filter, the footer; one session full screen.

Changes come from the feed's watch thread as a call onto the app's loop, and are taken up at
most once a frame (FRAME): at a hundred changed records a second the table is updated a few
times a second, not a hundred. The detail beside reads its files (`gather`) only when the
selected session, its record or its trace changed, never on the clock; the clock ticks once a
second to redraw the times and countdowns, which reads no file.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static

from sidecar.base.errors import SidecarError
from sidecar.base.escapes import escaped
from sidecar.live.feed import Feed
from sidecar.live.source import RowSource
from sidecar.live.timeline import Gathered
from sidecar.top import detail, view
from sidecar.top.listing import SessionList
from sidecar.top.table import SORTS, Table
from sidecar.views.sessions import RowKey, SessionRow

Clock = Callable[[], float]
FRAME = 0.08  # seconds: changes are taken up at most this often (a redraw within 100 ms)
BESIDE_FROM = 140  # columns: from this width the detail shows beside the list


def detail_content(lines: list[detail.Line]) -> Content:
    return Content("\n").join(Content.styled(text, style) if style else Content(text)
                              for text, style in lines)


class DetailFiles:
    """What the detail read of one session's files (its trace, its logs): read again only when
    it is another session, its record changed (a new row) or its trace grew, never on the
    clock nor for a change of another session."""

    def __init__(self) -> None:
        self.read_for: SessionRow | None = None
        self.gathered: Gathered | None = None
        self.grew = False

    def of(self, feed: RowSource, row: SessionRow) -> Gathered | None:
        if row is not self.read_for or self.grew:
            self.read_for, self.grew = row, False
            self.gathered = feed.gather(row)
        return self.gathered

    def taken(self, traces: set[RowKey]) -> None:
        """The feed took changes up: note whether this session's trace grew."""
        if self.read_for is not None and self.read_for.key in traces:
            self.grew = True


class DetailScreen(Screen[None]):
    """One session, full screen: the files are read when it opens and when they change."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back"), Binding("enter", "app.pop_screen",
                show=False), Binding("c", "app.cancel", "cancel follow-up"),
                Binding("f", "app.fire_now", "fire now or retry"),
                Binding("q", "app.quit_top", "quit")]

    def __init__(self, key: RowKey) -> None:
        super().__init__()
        self.key = key
        self.files = DetailFiles()

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="detail", markup=False)  # what hosts and logs said: text only
        yield Static(id="detail-keys")


class TopApp(App[int]):
    """`sidecar top`."""

    TITLE = "sidecar top"
    CSS = """
    #summary { height: 1; background: $boost; }
    #head { height: 1; background: $boost; text-style: bold; }
    #main { height: 1fr; }
    SessionList { width: 3fr; height: 1fr; }
    #beside { width: 2fr; height: 1fr; display: none; border-left: solid $primary; padding: 0 1; }
    #beside.shown { display: block; }
    #filter { dock: bottom; display: none; }
    #filter.open { display: block; }
    #foot, #detail-keys { height: auto; max-height: 3; background: $boost; }
    """
    BINDINGS = [Binding("q", "quit_top", "quit"), Binding("slash", "filter", "filter"),
                Binding("a", "active", "active only"), Binding("enter", "open", "open"),
                Binding("s", "sort", "sort"), Binding("g", "group", "group"),
                Binding("space", "fold", "fold"), Binding("d", "beside", "detail"),
                Binding("c", "cancel", "cancel follow-up"), Binding("f", "fire_now", "fire now or retry")]

    def __init__(self, feed: RowSource, *, clock: Clock = time.time, follow: bool = True,
                 notes: list[str] | None = None) -> None:
        super().__init__()
        self.feed = feed
        self.clock = clock
        self.follow = follow
        self.notes = notes or []
        self.table = Table()
        self.list = SessionList(self.table, clock, self.show_beside)
        self.beside_wanted = True  # `d` hides it
        self.beside_files = DetailFiles()
        self._pending: Timer | None = None
        self._last_apply = 0.0
        self.redrawn: Callable[[], None] = lambda: None  # told after each change shows (bench)
        self._said: dict[str, object] = {}  # what each line last showed: unchanged, not redrawn

    def compose(self) -> ComposeResult:
        yield Static(id="summary", markup=False)
        yield Static(id="head", markup=False)
        with Horizontal(id="main"):
            yield self.list
            with VerticalScroll(id="beside"):
                yield Static(id="beside-text", markup=False)
        yield Input(placeholder="filter: machine, host, workspace, id or state", id="filter")
        yield Static(id="foot")

    def on_mount(self) -> None:
        if self.follow:
            loop = asyncio.get_running_loop()
            context = contextvars.copy_context()  # the app's own (its timers need it)

            def changed() -> None:  # on the watch thread: only hand it to the app's loop
                loop.call_soon_threadsafe(self.changes_arrived, context=context)

            self.feed.follow(changed)
        self.feed.load()
        self.show_rows(force=True)
        self.set_interval(1.0, self.tick)
        self.list.focus()

    def on_unmount(self) -> None:
        self.feed.stop()

    def on_resize(self) -> None:
        self.lay_out()

    # -- what changes ------------------------------------------------------------------------

    def changes_arrived(self) -> None:
        """Take the changes up now, or at the next frame if the last was taken up within one."""
        if self._pending is not None:
            return
        wait = self._last_apply + FRAME - time.monotonic()
        if wait <= 0:
            self.take_changes()
        else:
            self._pending = self.set_timer(wait, self.take_changes)

    def take_changes(self) -> None:
        """Read what the watches said changed, and show it."""
        self._pending = None
        self._last_apply = time.monotonic()
        if self.feed.apply():
            self.beside_files.taken(self.feed.traces)
            screen = self.screen
            if isinstance(screen, DetailScreen):
                screen.files.taken(self.feed.traces)
                self.show_detail(screen)
            self.show_rows()
            self.show_beside()  # its row may be new, or its trace grew, the cursor unmoved
            self.call_after_refresh(self.redrawn)

    def show_rows(self, force: bool = False) -> None:
        if self.table.update(self.feed.rows, self.feed.version) or force:
            if self.hidden() != self.list.hidden:
                self.lay_out()
            self.list.rows_changed()  # the detail beside follows if the selection moved
        self.show_summary()
        self.show_footer()

    def beside_shown(self) -> bool:
        return self.beside_wanted and self.size.width >= BESIDE_FROM

    def hidden(self) -> frozenset[str]:
        """The columns the list leaves out: MACHINE while all is this machine's, and WHY and
        TOKENS while the detail beside says them."""
        return self.table.fleet() | (view.BESIDE if self.beside_shown() else frozenset())

    def lay_out(self) -> None:
        """The detail beside or not, and the list's columns for its width."""
        self.query_one("#beside").set_class(self.beside_shown(), "shown")
        self.list.hidden = self.hidden()
        self.call_after_refresh(self.show_head)
        self.show_head()
        self.show_beside()
        self.show_footer()

    def say(self, where: str, made_of: object, content: Callable[[], Content | str],
            layout: bool = True) -> None:
        """Show `content()` in the widget `where`, unless what it is `made_of` is what it
        showed: at a hundred changes a second, a redraw of what did not change is most of
        the cost."""
        if self._said.get(where) == made_of:
            return
        self._said[where] = made_of
        self.query_one(where, Static).update(content(), layout=layout)

    def show_head(self) -> None:
        made_of = (self.list.size.width, self.list.hidden)
        self.say("#head", made_of, lambda: view.header(*made_of), layout=False)
        self.list.refresh()

    def show_summary(self) -> None:
        """The counts, and the follow-up due first."""
        now = self.clock()
        parts: list[str | tuple[str, str]] = [self.table.counts.summary()]
        if self.table.next is not None:
            parts += ["   ", (view.next_due(*self.table.next, now), "bold")]
        self.say("#summary", parts, lambda: Content.assemble(*parts), layout=False)

    def show_beside(self) -> None:
        """The selected session beside the list: its files read again only when it is another
        session, its row changed or its trace grew."""
        if not self.beside_shown():
            return
        key = self.list.selected
        row = self.feed.rows.get(key) if key is not None else None
        if row is None:
            text = ("(no session selected)" if key is None or key[2] else
                    "a workspace: space folds or opens it")
            self.say("#beside-text", text, lambda: Content(text))
            return
        lines = detail.styled(row, self.beside_files.of(self.feed, row), self.clock())
        self.say("#beside-text", lines, lambda: detail_content(lines))

    def show_footer(self) -> None:
        """The settings in force, the keys that fit, and the first problem: error texts, paths
        and the filter are shown as text (a `[` in them is no markup)."""
        parts: list[str | tuple[str, str]] = [f"sorted by {self.table.sort_name}"]
        if self.table.grouped:
            parts += [" · ", ("by workspace", "bold")]
        if self.table.active_only:
            parts += [" · ", ("active only", "bold")]
        if self.table.filter:
            parts += [" · filter ", (escaped(self.table.filter), "bold")]
        used = sum(len(part if isinstance(part, str) else part[0]) for part in parts)
        parts += ["   ", (view.key_help(self.size.width - used - 3), "dim")]
        problems = list(self.feed.errors.values())  # what cannot be read, or will not run
        said = [(text, "error:", view.ERROR_STYLE) for text in problems] + \
            [(text, "note:", "bold") for text in self.notes]
        if said:
            text, label, style = said[0]
            more = f" (and {len(said) - 1} more)" if len(said) > 1 else ""
            parts += ["\n", (label, style), (f" {escaped(text)}{more}",
                                              "red" if label == "error:" else "")]
        self.say("#foot", parts, lambda: Content.assemble(*parts))

    def tick(self) -> None:
        """The times and countdowns move on: redraw, read nothing."""
        self.list.refresh()
        self.show_summary()
        self.show_beside()
        screen = self.screen
        if isinstance(screen, DetailScreen):
            self.show_detail(screen)

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

    def action_sort(self) -> None:
        self.table.sort = (self.table.sort + 1) % len(SORTS)
        self.show_rows()

    def action_group(self) -> None:
        self.table.grouped = not self.table.grouped
        self.show_rows()

    def action_fold(self) -> None:
        if self.list.selected is not None:
            stays = self.table.fold(self.list.selected)
            if stays is not None:
                self.list.select(stays)

    def action_beside(self) -> None:
        self.beside_wanted = not self.beside_wanted
        self.lay_out()

    def action_open(self) -> None:
        key = self.list.selected
        if key is not None and key[2] == "":  # a workspace's line: enter folds it too
            self.action_fold()
            return
        if key is None or key not in self.feed.rows:
            return
        screen = DetailScreen(key)
        self.push_screen(screen)
        self.call_after_refresh(self.show_detail, screen)

    def show_detail(self, screen: DetailScreen) -> None:
        row = self.feed.rows.get(screen.key)
        if row is None or not screen.is_mounted:
            return
        try:
            body, keys = screen.query_one("#detail", Static), screen.query_one("#detail-keys", Static)
        except NoMatches:  # a tick between the screen's mount and its widgets', or as it closes
            return
        body.update(detail_content(detail.styled(row, screen.files.of(self.feed, row), self.clock())))
        keys.update("[dim]esc back · c cancel follow-up · f fire now or retry · q quit[/dim]")

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
        chosen = row  # (a worker's thread: a fleet's machine may take seconds to answer)
        self.run_worker(lambda: self._act_on(chosen, what), thread=True, group="act")

    def _act_on(self, row: SessionRow, what: str) -> None:
        try:
            said = self.feed.act(row, what, self.clock())
        except (OSError, SidecarError) as exc:
            self.call_from_thread(self.notify, str(exc), severity="error", markup=False)
            return
        self.call_from_thread(self.notify, said, markup=False)


def run(roots: list[Path], notes: list[str]) -> int:
    return run_source(Feed(roots), notes)


def run_source(source: RowSource, notes: list[str]) -> int:
    return TopApp(source, notes=notes).run() or 0
