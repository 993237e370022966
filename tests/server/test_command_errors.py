"""Every command given a path or an argument it cannot use says so in one sentence and
exits with 2: never a traceback, never a hang, never a file moved that is not a journal."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.server.test_damaged_journal import Refusal, foursquare


def _below_a_file(directory: Path) -> Path:
    (directory / "file").touch()
    return directory / "file" / "journal.db"


def _a_pipe(directory: Path) -> Path:
    os.mkfifo(directory / "pipe.db")
    return directory / "pipe.db"


#: Places a journal cannot be, each made in a test's directory: how, and what is said.
UNUSABLE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a directory": (lambda directory: directory, "is not a file"),
    "a path below a file": (_below_a_file, "journal.db"),
    "a missing directory": (lambda directory: directory / "missing" / "journal.db", "journal"),
    "a pipe": (_a_pipe, "is not a file"),
}

JOURNAL_COMMANDS: dict[str, Callable[[Path], tuple[str, ...]]] = {
    "serve": lambda db: ("serve", "--port", "0", "--db", str(db)),
    "serve --new-journal": lambda db: ("serve", "--port", "0", "--db", str(db), "--new-journal"),
    "result": lambda db: ("result", "R000", "--db", str(db)),
    "tournament export": lambda db: ("tournament", "export", "CODE", "--db", str(db)),
}


def one_sentence(refusal: Refusal) -> str:
    """Exit code 2 and one line on stderr, which is returned."""
    assert refusal.code == 2, refusal
    return refusal.sentence


@pytest.mark.parametrize("place", list(UNUSABLE))
@pytest.mark.parametrize("command", list(JOURNAL_COMMANDS))
def test_a_journal_where_none_can_be_is_refused_in_one_sentence(
    tmp_path: Path, place: str, command: str
) -> None:
    make, said = UNUSABLE[place]
    db = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    sentence = one_sentence(foursquare(*JOURNAL_COMMANDS[command](db)))
    assert sentence.startswith(f"error: the journal {db} ") and said in sentence, sentence
    assert "new-journal" not in sentence  # nothing to move aside: not a damaged journal
    assert sorted(tmp_path.rglob("*")) == before  # nothing created, nothing moved


@pytest.mark.parametrize("command", ["verify", "tournament verify"])
@pytest.mark.parametrize(
    "content",
    ["missing", "a directory", "not JSON", "not UTF-8", "nested too deep", "not a record"],
)
def test_a_record_that_cannot_be_read_is_refused_in_one_sentence(
    tmp_path: Path, command: str, content: str
) -> None:
    path = tmp_path / "record.json"
    if content == "a directory":
        path.mkdir()
    elif content == "not JSON":
        path.write_text("{not json")
    elif content == "not UTF-8":
        path.write_bytes(b"\xff\xfe")
    elif content == "nested too deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif content == "not a record":
        path.write_text(json.dumps({"type": "finished", "standings": "none"}))
    sentence = one_sentence(foursquare(*command.split(), str(path)))
    assert sentence.startswith("error: cannot read a "), sentence
    assert str(path) in sentence, sentence


@pytest.mark.parametrize(
    "arguments",
    [("deal", "\udcff"), ("replay", "\udcff"), ("par", "\udcff"), ("solo", "--seed", "\udcff"),
     ("replay", "seed", "--grid-size", "9"), ("replay", "seed", "nowhere")],
)
def test_a_bad_argument_to_deal_or_replay_is_refused_in_one_sentence(
    arguments: tuple[str, ...],
) -> None:
    """A seed that is not text (bytes that are not UTF-8 reach Python as lone surrogates)
    or a move or rule out of range: exit 2 and the error as the last line (argparse puts
    its usage line before its own errors)."""
    refusal = foursquare(*(os.fsencode(a).decode("utf-8", "surrogateescape") for a in arguments))
    assert refusal.code == 2, refusal
    assert "Traceback" not in refusal.stderr, refusal.stderr
    assert refusal.stderr.strip().splitlines()[-1].count("error: ") == 1, refusal.stderr

