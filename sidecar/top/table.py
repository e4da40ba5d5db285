"""The rows as `top` lists them: filtered, sorted, grouped by workspace or not, with the header's
counts and next follow-up; pure, so it is tested and measured without a terminal.

It is kept up to date by change, not rebuilt: a row the feed replaced leaves its place and is
put back where its sort key says (bisect), and the counts move by what it changed. At 10,000
sessions and a hundred changed records a second this is what keeps `top` cheap; a full sort
happens only when the filter, the sort or the grouping changes. Only the visible lines are
ever made into text (`line`), and only when they are drawn.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sidecar.base import words
from sidecar.base.escapes import escaped
from sidecar.top import view
from sidecar.views import cost
from sidecar.views.activity import WORDS, State
from sidecar.views.sessions import FollowUp, RowKey, SessionRow

SortKey = tuple[Any, ...]
GroupKey = tuple[str, str]  # (machine, workspace root)
STATES_COUNTED = (State.WORKING, State.WAITING, State.LIMITED)
FOLDED, OPEN = "▸", "▾"


def _tail(row: SessionRow) -> tuple[str, str, str]:
    """What makes every sort key unique, so that a row is found again by its key alone."""
    return row.machine, str(row.root), row.harness_id


def _usd(row: SessionRow) -> float | None:
    return cost.number(row.cost.get("usd")) if row.cost else None


def _by_cost(row: SessionRow) -> SortKey:
    spent = _usd(row)  # the dearest first; unknown and never priced last, never as $0
    return spent is None, -(spent or 0.0), *view.sort_key(row), *_tail(row)


# The sorts `s` cycles through, in order: (its name, the key it sorts by)
SORTS: tuple[tuple[str, Callable[[SessionRow], SortKey]], ...] = (
    ("needs you", lambda r: (*view.sort_key(r), *_tail(r))),
    ("last activity", lambda r: (-(r.updated_at or 0.0), *_tail(r))),
    ("cost", _by_cost),
    ("host", lambda r: (r.host, *view.sort_key(r), *_tail(r))),
    ("started", lambda r: (-(r.started_at or 0.0), *_tail(r))),
)


class Group:
    """One workspace's shown rows, in order, and their sort keys (for bisect)."""

    def __init__(self, machine: str, root: Path) -> None:
        self.machine = machine
        self.root = root
        self.keys: list[SortKey] = []
        self.rows: list[SessionRow] = []
        self.folded = False

    @property
    def key(self) -> RowKey:
        """A row key with no session: the cursor names a group line as it names a row."""
        return self.machine, self.root, ""

    def line(self, width: int) -> str:
        """`▾ project · 10 sessions · 2 working · 1 waiting for you · ~/src/project` (`▸` while
        folded): its name first, as the rows' WORKSPACE says it, its path last."""
        states = [row.activity.state for row in self.rows]
        said = [f"{states.count(s)} {WORDS[s]}" for s in STATES_COUNTED if s in states]
        where = words.path(self.root) + (f" on {self.machine}" if self.machine else "")
        sessions = f"{len(self.rows)} session" + ("" if len(self.rows) == 1 else "s")
        text = " · ".join([f"{FOLDED if self.folded else OPEN} {self.root.name}", sessions,
                           *said, where])
        return words.clip(escaped(text), width).ljust(width)


Item = SessionRow | Group


class Table:
    """The rows as shown, and what the header says of all of them."""

    def __init__(self) -> None:
        self.filter = ""
        self.active_only = False
        self.sort = 0  # index in SORTS
        self.grouped = False
        self.folded: set[GroupKey] = set()
        self.items: Sequence[Item] = []  # the lines: rows, and group lines when grouped
        self.counts = view.Counts(0, 0, 0, 0, 0)
        self.next: tuple[FollowUp, SessionRow] | None = None  # the follow-up due first
        self.machines = 0  # rows of another machine: the MACHINE column shows while any
        self._rows: dict[RowKey, SessionRow] = {}  # as last taken from the feed
        self._groups: dict[GroupKey, Group] = {}
        self._offsets: dict[GroupKey, int] = {}  # where each group's line is in `items`
        self._keys: dict[RowKey, SortKey] = {}  # of every shown row
        self._tally = dict.fromkeys((*STATES_COUNTED, "queued"), 0)
        self._due: dict[RowKey, tuple[FollowUp, int]] = {}  # each row's next, and its serial
        self._due_heap: list[tuple[float, str, str, str, int]] = []  # stale ones left behind
        self._serial = 0
        self._by_id: dict[int, SessionRow] = {}
        self._made_for: tuple[object, ...] | None = None

    @property
    def sort_name(self) -> str:
        return SORTS[self.sort][0]

    def update(self, rows: Mapping[RowKey, SessionRow], version: int) -> bool:
        """Take up what changed in `rows` since the last call; whether anything shown did."""
        settings = (self.filter, self.active_only, self.sort, self.grouped)
        if self._made_for is not None and self._made_for[1:] == settings:
            if self._made_for[0] == version:
                return False
            # A changed row is a new object (rows are frozen): found by identity, in C but for
            # the walk that picks the new ones out; `_by_id` holds the rows it names, so no id
            # is reused while it is there.
            differ = self._by_id.keys() ^ map(id, rows.values())  # gone, or new
            gone = [self._by_id.pop(i) for i in differ if i in self._by_id]
            fresh = differ - {id(row) for row in gone}
            new = [row for row in rows.values() if id(row) in fresh] if fresh else []
            self._by_id.update(zip(map(id, new), new, strict=True))
            if len(gone) + len(new) <= max(64, len(rows) // 8):
                self._made_for = (version, *settings)
                self._change(gone, new)
                return True
        self._made_for = (version, *settings)
        self._by_id = dict(zip(map(id, rows.values()), rows.values(), strict=True))
        self._rebuild(rows)
        return True

    def _shows(self, row: SessionRow) -> bool:
        return ((not self.active_only or (row.activity.state in view.ACTIVE and row.reachable))
                and (not self.filter or view.matches(row, self.filter)))

    def _group_of(self, row: SessionRow) -> GroupKey:
        return (row.machine, str(row.root)) if self.grouped else ("", "")

    def _group(self, gkey: GroupKey, row: SessionRow) -> Group:
        group = self._groups.get(gkey)
        if group is None:
            group = self._groups[gkey] = Group(row.machine, row.root)
            group.folded = self.grouped and gkey in self.folded
        return group

    def _rebuild(self, rows: Mapping[RowKey, SessionRow]) -> None:
        self._rows, self._groups, self._keys, self._due, self._due_heap = {}, {}, {}, {}, []
        self._tally = dict.fromkeys(self._tally, 0)
        self.machines = 0
        by_key = SORTS[self.sort][1]
        chosen: dict[GroupKey, list[tuple[SortKey, SessionRow]]] = {}
        for key, row in rows.items():
            self._count(row, 1)
            if self._shows(row):
                sort_key = self._keys[key] = by_key(row)
                chosen.setdefault(self._group_of(row), []).append((sort_key, row))
        if not self.grouped:
            self._groups[("", "")] = Group("", Path())
        for gkey, members in chosen.items():
            members.sort(key=lambda member: member[0])
            group = self._group(gkey, members[0][1])
            group.keys = [member[0] for member in members]
            group.rows = [member[1] for member in members]
        self._lay_out()

    def _change(self, gone: list[SessionRow], new: list[SessionRow]) -> None:
        for row in gone:  # a changed row's old self, or a row no longer there
            self._take_out(row)
        for row in new:
            self._count(row, 1)
            if self._shows(row):
                sort_key = self._keys[row.key] = SORTS[self.sort][1](row)
                group = self._group(self._group_of(row), row)
                at = bisect.bisect_left(group.keys, sort_key)
                group.keys.insert(at, sort_key)
                group.rows.insert(at, row)
        self._lay_out()

    def _take_out(self, row: SessionRow) -> None:
        self._count(row, -1)
        sort_key = self._keys.pop(row.key, None)
        if sort_key is None:
            return
        gkey = self._group_of(row)
        group = self._groups[gkey]
        at = bisect.bisect_left(group.keys, sort_key)
        del group.keys[at], group.rows[at]
        if not group.rows and self.grouped:
            del self._groups[gkey]

    def _count(self, row: SessionRow, by: int) -> None:
        """Add (1) or take out (-1) what the row adds to the header's counts."""
        if by > 0:
            self._rows[row.key] = row
        else:
            self._rows.pop(row.key, None)
        state = row.activity.state
        live = by * row.reachable  # an unreachable machine's row: nothing of it is live
        if state in self._tally:
            self._tally[state] += live
        self._tally["queued"] += live * sum(1 for f in row.follow_ups if f.state in view.WAITING_FOLLOW_UP)
        self.machines += by * (row.machine != "")
        waiting = view.next_up(row) if by > 0 and row.reachable else None
        if waiting is not None:
            self._serial += 1
            self._due[row.key] = (waiting, self._serial)
            machine, root, hid = row.key
            heapq.heappush(self._due_heap, (waiting.at or float("-inf"), machine, str(root), hid,
                                            self._serial))
            if len(self._due_heap) > 2 * len(self._due) + 64:  # mostly stale: made again
                self._due_heap = [(f.at or float("-inf"), m, str(r), h, serial)
                                  for (m, r, h), (f, serial) in self._due.items()]
                heapq.heapify(self._due_heap)
        else:
            self._due.pop(row.key, None)

    def _lay_out(self) -> None:
        """The lines from the groups, and the header's figures."""
        shown = len(self._keys)
        self.counts = view.Counts(self._tally[State.WORKING], self._tally[State.WAITING],
                                  self._tally["queued"], shown, len(self._rows),
                                  self._tally[State.LIMITED])
        self.next = self._first_due()
        if not self.grouped:
            self.items = self._groups[("", "")].rows  # the same list: no copy per change
            return
        items: list[Item] = []
        self._offsets = {}
        for gkey in sorted(self._groups):
            group = self._groups[gkey]
            self._offsets[gkey] = len(items)
            items.append(group)
            if not group.folded:
                items.extend(group.rows)
        self.items = items

    def _first_due(self) -> tuple[FollowUp, SessionRow] | None:
        """The follow-up due first, from a heap whose entries a later change left stale are
        dropped as they come to the top (a walk through every row per change would not)."""
        heap = self._due_heap
        while heap:
            _, machine, root, hid, serial = heap[0]
            key = (machine, Path(root), hid)
            due = self._due.get(key)
            if due is not None and due[1] == serial:
                return due[0], self._rows[key]
            heapq.heappop(heap)
        return None

    # -- what the view asks ---------------------------------------------------------------

    def index_of(self, key: RowKey) -> int | None:
        """Where the row (or a group's line) named by `key` is in `items`, found by its sort
        key rather than by a walk through 10,000 lines."""
        if key[2] == "":
            return self._offsets.get((key[0], str(key[1]))) if self.grouped else None
        sort_key = self._keys.get(key)
        row = self._rows.get(key)
        if sort_key is None or row is None:
            return None
        gkey = self._group_of(row)
        group = self._groups[gkey]
        if group.folded:
            return None
        at = bisect.bisect_left(group.keys, sort_key)
        return self._offsets[gkey] + 1 + at if self.grouped else at

    def fold(self, key: RowKey) -> RowKey | None:
        """Fold the group of the row or group line `key` names, or open it if folded; the key
        the cursor stays on (the group's line)."""
        if not self.grouped:
            return None
        gkey = (key[0], str(key[1]))
        group = self._groups.get(gkey)
        if group is None:
            return None
        group.folded = not group.folded
        (self.folded.add if group.folded else self.folded.discard)(gkey)
        self._lay_out()
        return group.key

    def fleet(self) -> frozenset[str]:
        """The columns left out of the list: MACHINE while every row is this machine's."""
        return frozenset() if self.machines else view.LOCAL

    def line(self, index: int, width: int, now: float, hidden: frozenset[str]) -> str:
        """One line of `width` columns: a row, or a group's line."""
        item = self.items[index]
        if isinstance(item, Group):
            return item.line(width)
        return view.fit(view.cells(item, now), width, hidden)
