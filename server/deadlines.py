"""When each of many things is next due, and which are due now, without looking at the rest.

A clock that serves many tournaments must not look at every one of them on every pass: most
wait for nothing soon (an arena's next pairing, a window's close, the idle time that ends
an abandoned tournament, the linger of a finished one). :class:`Deadlines` keeps one time
per key in a heap, so a pass costs the keys that are due, not the keys that wait.

A key's time changes often (every event of a tournament moves its idle deadline): the heap
keeps the old entry, and an entry is current only while its time is still the key's. Old
entries are dropped when they reach the top, and the heap is rebuilt from the current times
once it holds more than twice as many entries as keys, so its size stays within a constant
factor of the number of keys.

>>> deadlines = Deadlines[str]()
>>> deadlines.set("a", 30.0), deadlines.set("b", 10.0), deadlines.set("a", 20.0)
(True, True, False)
>>> deadlines.due(15.0), deadlines.next_time()
(['b'], 20.0)
>>> deadlines.due(25.0), deadlines.next_time(), deadlines.looked_at
(['a'], None, 2)
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, TypeVar

Key = TypeVar("Key")

#: Entries in the heap beyond twice the number of keys before it is rebuilt (a small heap is
#: never worth rebuilding).
_SLACK = 64


class Deadlines(Generic[Key]):
    """One time per key; the keys whose time has come, earliest first."""

    def __init__(self) -> None:
        self._when: dict[Key, float] = {}
        self._heap: list[tuple[float, int, Key]] = []
        self._order = itertools.count()
        """Breaks ties between equal times (keys need not be comparable)."""
        self.looked_at = 0
        """Heap entries :meth:`due` has taken out so far, current or not: the clock's work."""

    def __len__(self) -> int:
        return len(self._when)

    def set(self, key: Key, when: float | None) -> bool:
        """``key`` is next due at ``when`` (``None``: it waits for nothing). Returns whether
        that is now the earliest time of all, so that a clock sleeping until a later one
        should wake up."""
        if self._when.get(key) == when:
            return False
        if when is None:
            del self._when[key]  # its entry stays in the heap, no longer current
            return False
        self._when[key] = when
        heapq.heappush(self._heap, (when, next(self._order), key))
        if len(self._heap) > 2 * len(self._when) + _SLACK:
            self._heap = [(at, next(self._order), k) for k, at in self._when.items()]
            heapq.heapify(self._heap)
        return self.next_time() == when

    def due(self, now: float) -> list[Key]:
        """The keys whose time is ``now`` or earlier, earliest first; each is then due at no
        time until :meth:`set` again."""
        keys = []
        while self._heap and self._heap[0][0] <= now:
            when, _, key = heapq.heappop(self._heap)
            self.looked_at += 1
            if self._when.get(key) == when:
                del self._when[key]
                keys.append(key)
        return keys

    def next_time(self) -> float | None:
        """The earliest time of any key, or ``None`` if none waits for anything."""
        while self._heap and self._when.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None
