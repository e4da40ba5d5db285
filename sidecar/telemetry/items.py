"""What passes from the daemon's threads to the exporter: the item queued for each session
change or firing, what drives the spans made of it, and the counts of what became of them
(`status` reports them). Standard library only: the feed holds them without the extra."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sidecar.vocabulary import Fired, SessionChange

Item = tuple[str, SessionChange, str | None] | Fired
TEXT_CHARS = 500  # what a span keeps of the host's words (a reason, a message)


class Exporting(Protocol):
    """What the feed's thread drives (export.py's Exporter)."""

    def handle(self, item: Item) -> None: ...

    def close(self, timeout: float) -> None: ...


@dataclass
class Counts:
    """What became of the spans. Each figure is written by one thread only (the ingestion's,
    the feed's or the batch processor's), so none needs a lock."""

    queue_dropped: int = 0  # changes the full queue turned away (the ingestion thread)
    handed: int = 0  # spans handed to the batch processor (the feed's thread)
    held_back: int = 0  # spans dropped there while the processor's queue was full
    exported: int = 0  # spans the collector took (the processor's thread)
    failed: int = 0  # spans in batches the collector did not take
    last_error: str | None = None
    last_error_at: float | None = None

    @property
    def dropped(self) -> int:
        return self.queue_dropped + self.held_back + self.failed

    @property
    def in_flight(self) -> int:
        return self.handed - self.exported - self.failed
