"""Look-ahead over the rank of the next cards, counting the cards already seen."""

from __future__ import annotations

from client.bots.strategies import GreedyStrategy


class ExpectimaxStrategy(GreedyStrategy):
    """Placeholder until the look-ahead lands: plays like greedy."""

    name = "expectimax"

    def __init__(self, budget: float = 0.1) -> None:
        super().__init__()
        self.budget = budget
