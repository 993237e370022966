"""One card further without placing it: the expected value of the next card at its best target.

Both look-ahead strategies end in this chance node: ``greedy`` checks its few best
placements with it, and ``expectimax`` scores its last ply with it. The racer knows how
many of each rank the stock still holds (it has seen every drawn card), so the next
card's rank has a known distribution; nothing here reads the stock itself.
"""

from __future__ import annotations

from engine.board import Board
from engine.heuristic import ValueTable


def next_card_value(board: Board, table: ValueTable, counts: list[int], cards_left: int) -> float:
    """The expected value, over the next card's rank, of that card at its best target.

    ``counts[rank]`` is how many cards of each rank the stock still holds and
    ``cards_left`` how many cards it holds (the next one included); ``board`` must be in
    play (neither won nor lost) with a card still to come.

    No placement is made: a card's effect on a target is the set of piles it turns over
    there (:meth:`Board.flips`), and each target's value is looked up once per such set,
    whatever the number of rank classes sharing it.
    """
    value = table.value
    occupied, down, full, height = board.occupied, board.down, board.full, board.height
    capacity = board.capacity
    cards_after = cards_left - 1
    classes = rank_classes(board, counts)
    best = [float("-inf")] * len(classes)
    for cell, flipped in board.flip_table([rank for rank, _ in classes]):
        bit = 1 << cell
        grown, down_after = occupied | bit, down & ~bit
        full_after = full | bit if height[cell] + 1 >= capacity else full
        # At most four outcomes a target (its row triggered or not, its column too).
        seen: dict[int, float] = {}
        for index, turned in enumerate(flipped):
            result = seen.get(turned)
            if result is None:
                result = seen[turned] = value(grown, down_after ^ turned, full_after, cards_after)
            if result > best[index]:
                best[index] = result
    expected = sum(weight * top for (_, weight), top in zip(classes, best, strict=True))
    return expected / sum(counts)


def rank_classes(board: Board, counts: list[int]) -> list[tuple[int, int]]:
    """The still-possible ranks grouped by their order against the face-up tops.

    Returns ``(representative rank, cards in the class)`` pairs. One card further, every
    rank of a class gives the same values (the trigger test compares with face-up ranks
    only), so any representative would do.
    """
    face_up, at_most = board.occupied & ~board.down, board.at_most
    classes: dict[int, tuple[int, int]] = {}
    below = 0  # distinct face-up ranks below ``rank``
    for rank in range(1, len(counts)):
        is_up = bool(face_up & at_most[rank] & ~at_most[rank - 1])
        count = counts[rank]
        if count:
            key = 2 * below + is_up
            representative, total = classes.get(key, (rank, 0))
            if count > counts[representative]:
                representative = rank
            classes[key] = (representative, total + count)
        below += is_up
    return list(classes.values())
