"""The clock's heap of deadlines: due keys only, earliest first, and a heap that stays
within a constant factor of its keys however often their times change."""

from __future__ import annotations

from server.deadlines import Deadlines


def test_only_the_keys_that_are_due_are_looked_at() -> None:
    deadlines = Deadlines[str]()
    for n in range(1000):
        deadlines.set(f"waiting-{n}", 1e9 + n)
    deadlines.set("soon", 5.0)
    deadlines.set("sooner", 3.0)
    assert deadlines.due(4.0) == ["sooner"]
    assert deadlines.due(10.0) == ["soon"]
    assert deadlines.looked_at == 2 and len(deadlines) == 1000
    assert deadlines.next_time() == 1e9


def test_a_key_set_again_is_due_at_its_last_time_only() -> None:
    deadlines = Deadlines[str]()
    assert deadlines.set("a", 10.0) is True
    assert deadlines.set("a", 10.0) is False, "unchanged"
    assert deadlines.set("a", 20.0) is True, "still the earliest"
    assert deadlines.set("b", 15.0) is True
    assert deadlines.set("b", None) is False
    assert deadlines.due(15.0) == [], "a's old time and b's are no longer current"
    assert deadlines.due(20.0) == ["a"] and deadlines.due(1e9) == []
    assert deadlines.next_time() is None and len(deadlines) == 0


def test_the_heap_is_rebuilt_before_old_entries_pile_up() -> None:
    """Every event of a tournament moves its idle deadline: a hundred thousand moves of one key
    leave a bounded heap, which a pass past them all takes out whole."""
    deadlines = Deadlines[str]()
    for n in range(100_000):
        deadlines.set("busy", 1000.0 + n)
    deadlines.set("other", 5.0)
    deadlines.due(1e9)
    assert deadlines.looked_at <= 2 * 2 + 64 + 1
