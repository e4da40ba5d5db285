"""The session list: one line per row (and per workspace when grouped), with a cursor.

It draws only its visible lines (Textual's line API), from `table.Table`, so a redraw costs the
same at ten sessions or ten thousand. The cursor names a session, not a line: when rows move
(a change, a re-sort) it stays on the same session.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sidecar.top import view
from sidecar.top.table import Group, Table
from sidecar.views.sessions import RowKey

Clock = Callable[[], float]
GROUP_STYLE = Style(bold=True, color="bright_white", bgcolor="grey23")


class SessionList(ScrollView, can_focus=True):
    """Every shown row, one line each, with a cursor."""

    BINDINGS = [Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
                Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
                Binding("home", "move(-1000000000)", show=False),
                Binding("end", "move(1000000000)", show=False)]

    def __init__(self, table: Table, clock: Clock, on_select: Callable[[], None]) -> None:
        super().__init__()
        self.table = table
        self.clock = clock
        self.on_select = on_select  # the detail beside follows the cursor
        self.hidden: frozenset[str] = view.LOCAL  # columns left out
        self.cursor = 0
        self.selected: RowKey | None = None
        self._window: tuple[int, ...] = ()  # what the visible lines showed, by row identity

    def rows_changed(self) -> None:
        """The table changed: keep the cursor on the same session (or group line)."""
        if self.selected is not None:
            at = self.table.index_of(self.selected)
            if at is not None:
                self.cursor = at
        self._select()
        items = self.table.items
        self.virtual_size = Size(self.size.width, len(items))
        top, height = self.scroll_offset.y, self.size.height
        # By identity: a changed row is a new object, and the table holds each row it shows
        # until it takes up its replacement, so no id is reused between two calls. A group's
        # line changes with its rows: grouped, it is always drawn again.
        window = (self.cursor, top, len(items), *map(id, items[top:top + height]))
        if window != self._window or self.table.grouped:  # else rows changed out of sight
            self._window = window
            self.refresh()

    def _select(self) -> None:
        items = self.table.items
        self.cursor = max(0, min(self.cursor, len(items) - 1))
        chosen = items[self.cursor].key if items else None
        if chosen != self.selected:
            self.selected = chosen
            self.on_select()

    def select(self, key: RowKey) -> None:
        self.selected = key
        self.rows_changed()
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False)

    def action_move(self, by: int) -> None:
        self.cursor += by
        self._select()
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False)
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        """A click selects the line clicked (the detail beside follows)."""
        self.cursor = self.scroll_offset.y + event.y
        self._select()
        self.refresh()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 1))

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        items = self.table.items
        if index >= len(items):
            return Strip.blank(width)
        text = self.table.line(index, width, self.clock(), self.hidden)
        # The selected line is reversed, its colours kept: the state's colour means the same there.
        selected = Style(reverse=True, bold=True) if index == self.cursor else Style()
        item = items[index]
        if isinstance(item, Group):
            return Strip([Segment(text, GROUP_STYLE + selected)], width)
        segments, at = [], 0
        for title, style in sorted(view.painted(item),
                                   key=lambda span: view.place(span[0], width, self.hidden)):
            start, end = view.place(title, width, self.hidden)
            if start == end:
                continue  # the column is left out at this width
            segments += [Segment(text[at:start], selected),
                         Segment(text[start:end], selected + Style.parse(style))]
            at = end
        return Strip([*segments, Segment(text[at:], selected)], width)
