"""The par as the results screen words it: proven, a proven range, or a lower bound."""

from __future__ import annotations

from client.screens.results import par_text, score_text
from protocol import RacePar


def test_a_proven_par_is_one_number() -> None:
    par = RacePar(race="r", score=24, proven=True, cards_used=16, at_most=24)
    assert par_text(par) == "par 24 (proven)"
    assert score_text(21, par) == "21 / par 24"


def test_an_unproven_par_with_an_upper_bound_is_a_range() -> None:
    par = RacePar(race="r", score=22, proven=False, cards_used=18, at_most=23)
    assert par_text(par) == "par 22\N{EN DASH}23"
    assert score_text(20, par) == "20 / par 22\N{EN DASH}23"


def test_an_unproven_par_without_an_upper_bound_is_a_lower_bound() -> None:
    # A server that sends no upper bound (the field is optional).
    par = RacePar(race="r", score=22, proven=False, cards_used=18)
    assert par_text(par) == "par ≥ 22"
    assert score_text(20, par) == "20 / par ≥ 22"


def test_no_line_found_says_what_is_known() -> None:
    assert par_text(RacePar(race="r", score=None, proven=True)) == "no win possible"
    unknown = RacePar(race="r", score=None, proven=False, at_most=23)
    assert par_text(unknown) == "par unknown: no winning line found (at most 23)"
