"""Cards and the provably fair deal (deal v1).

The 40-card deck has ranks Ace (1) to Ten (10) in four suits. A card's id is
``suit_index * 10 + (rank - 1)`` with suits in the order C, D, H, S, so that the
wire formats can send one small integer per card.

>>> Card.parse("TH")
Card(rank=10, suit='H')
>>> Card.parse("TH").id
29
>>> str(Card.from_id(0))
'AC'
>>> [str(c) for c in deal("")[:3]]
['8D', '8H', 'TD']
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

SUITS = "CDHS"
RANK_LETTERS = "A23456789T"
DECK_SIZE = 40

_DEAL_DOMAIN = b"foursquare/deal/v1/"
_COMMIT_DOMAIN = b"foursquare/commit/v1/"


@dataclass(frozen=True, slots=True)
class Card:
    """One card: ``rank`` 1 (Ace) to 10 (Ten) and ``suit`` one of "C", "D", "H", "S"."""

    rank: int
    suit: str

    _by_id: ClassVar[tuple[Card, ...]]

    def __post_init__(self) -> None:
        if not (isinstance(self.rank, int) and 1 <= self.rank <= 10):
            raise ValueError(f"a card's rank is 1 to 10, not {self.rank!r}")
        if self.suit not in SUITS or len(self.suit) != 1:
            raise ValueError(f"a card's suit is one of C, D, H, S, not {self.suit!r}")

    @property
    def id(self) -> int:
        """The compact id 0..39: ``suit_index * 10 + rank - 1`` (AC = 0, TS = 39)."""
        return SUITS.index(self.suit) * 10 + self.rank - 1

    def __str__(self) -> str:
        return RANK_LETTERS[self.rank - 1] + self.suit

    @classmethod
    def from_id(cls, card_id: int) -> Card:
        """The card with compact id ``card_id`` (0..39)."""
        if not (isinstance(card_id, int) and 0 <= card_id < DECK_SIZE):
            raise ValueError(f"a card id is 0 to 39, not {card_id!r}")
        return cls._by_id[card_id]

    @classmethod
    def parse(cls, text: str) -> Card:
        """Read the two-letter text form, rank then suit: ``"TH"``, ``"AC"``, ``"7s"``."""
        if len(text) != 2:
            raise ValueError(f"a card is two letters, rank then suit (like TH), not {text!r}")
        rank_letter, suit = text[0].upper(), text[1].upper()
        if rank_letter not in RANK_LETTERS:
            raise ValueError(f"unknown rank {text[0]!r} in {text!r}: use one of A23456789T")
        if suit not in SUITS:
            raise ValueError(f"unknown suit {text[1]!r} in {text!r}: use one of C, D, H, S")
        return cls._by_id[SUITS.index(suit) * 10 + RANK_LETTERS.index(rank_letter)]


Card._by_id = tuple(Card(rank, suit) for suit in SUITS for rank in range(1, 11))

#: Every card, in id order.
DECK: tuple[Card, ...] = Card._by_id


def _random_words(seed_bytes: bytes) -> Iterator[int]:
    """The deal's random stream: SHA-256 blocks read as 4-byte big-endian words."""
    block_index = 0
    while True:
        block = hashlib.sha256(
            _DEAL_DOMAIN + seed_bytes + b"/" + block_index.to_bytes(8, "big")
        ).digest()
        for offset in range(0, 32, 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        block_index += 1


def deal_ids(seed: str) -> list[int]:
    """The stock for ``seed`` as card ids, top of the stock (first card drawn) first."""
    words = _random_words(seed.encode("utf-8"))

    def below(n: int) -> int:
        # Rejection sampling keeps every residue equally likely.
        limit = (2**32 // n) * n
        while True:
            word = next(words)
            if word < limit:
                return word % n

    ids = list(range(DECK_SIZE))
    for i in range(DECK_SIZE - 1, 0, -1):
        j = below(i + 1)
        ids[i], ids[j] = ids[j], ids[i]
    return ids


def deal(seed: str) -> list[Card]:
    """The stock dealt from ``seed`` by deal v1, top of the stock first."""
    return [DECK[card_id] for card_id in deal_ids(seed)]


def commitment(seed: str) -> str:
    """The public commitment to ``seed``: hex SHA-256 of a domain tag and the seed.

    Published before a race starts; anyone can check the revealed seed against it.
    """
    return hashlib.sha256(_COMMIT_DOMAIN + seed.encode("utf-8")).hexdigest()
