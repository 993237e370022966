"""The message handlers under generated traffic: a bounded run of the state machine in
``tests/server/handler_fuzz.py`` against one real server (``make fuzz`` runs it for long)."""

from __future__ import annotations

from pathlib import Path

from tests.server.handler_fuzz import fuzz_server, run_handler_fuzz

#: Examples and steps per example in ``make test``: about 20 s on two shared cores.
EXAMPLES = 12
STEPS = 30


def test_the_handlers_answer_every_message_and_never_disturb_an_honest_race(
    tmp_path: Path,
) -> None:
    with fuzz_server(tmp_path / "fuzz.db") as fuzz:
        run_handler_fuzz(fuzz, examples=EXAMPLES, steps=STEPS, shrink=False)
        assert fuzz.tally["examples"] >= EXAMPLES
        # Nothing was skipped wholesale: requests were sent and answered.
        assert fuzz.tally["steps"] > EXAMPLES
        assert any(kind.startswith("answered ") for kind in fuzz.tally)
