"""What changed, as a watch or a subscription thread notes it and a view's thread takes it up.

The noting thread only adds to a set (under a lock) and wakes the view once per batch: the first
note after a take calls `on_change`; later notes join that batch. The view's `apply` then takes
the whole set at once and reads what it names.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Changes(Generic[T]):
    def __init__(self) -> None:
        self.on_change: Callable[[], None] = lambda: None
        self._lock = threading.Lock()
        self._noted: set[T] = set()

    def note(self, item: T) -> None:
        with self._lock:
            first = not self._noted
            self._noted.add(item)
        if first:
            self.on_change()

    def pending(self) -> bool:
        with self._lock:
            return bool(self._noted)

    def take(self) -> set[T]:
        with self._lock:
            noted, self._noted = self._noted, set()
        return noted
