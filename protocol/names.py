"""Player names: what a name may be, the form the server uses, and when two look the same.

A name is shown to every racer and spectator beside progress bars and standings, so it
must show as something, look like no one else's, and not pass for a label the clients
add. One rule, applied to ``hello.name`` by the :class:`PlayerName` spec:

1. The name is put in NFKC form (fullwidth letters become ``Ann``, ligatures and
   mathematical letters their plain letters), and variation selectors and the
   combining grapheme joiner, which only choose how a character is drawn, are dropped.
   That is the name the server uses (``welcome.name``).
2. It is 1 to :data:`MAX_NAME_LENGTH` characters long, every one printable (no control
   or format character: no zero-width space or joiner, no direction override), with no
   space at either end.
3. No character that shows as blank space: the Hangul fillers and the blank Braille
   pattern (:data:`BLANK`), however they are combined.
4. It does not start with a combining mark, and has at most :data:`MAX_COMBINING_RUN`
   combining marks in a row (enough for Vietnamese or Thai; a pile of 30 above one
   letter spills over the rows around it).
5. It does not contain a label the clients add after names (:data:`RESERVED_LABELS`:
   ``[bot]`` after a bot's, ``(you)`` after your own), in any case or look-alike letters.

Two names *look the same* (:func:`lookalike_keys`) when they are equal ignoring case and
look-alike letters, as UTS #39's skeleton sees them: ``Ann`` with a Cyrillic A and ``Ann``,
``BiII`` (capital i) and ``Bill``. The look-alikes come from Unicode's confusables data
(``lookalikes.txt`` beside this module: the entries that map a character to ASCII letters
and digits, the look-alikes that can pass one name for another here).

>>> normalise_name("\\uff21\\uff4e\\uff4e")  # fullwidth
'Ann'
>>> lookalike_keys("\\u0410nn") & lookalike_keys("ann") != set()
True
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from protocol.errors import ErrorCode, ProtocolError
from protocol.schema import Spec, bad, character

MAX_NAME_LENGTH = 32
"""Characters in a name, once normalised."""
MAX_SENT_LENGTH = 4 * MAX_NAME_LENGTH
"""Characters in ``hello.name`` as sent: room for a name in decomposed form (NFD) and
for the variation selectors that normalising drops."""
MAX_COMBINING_RUN = 2
"""Combining marks in a row."""
RESERVED_LABELS = ("[bot]", "(you)")
"""What the terminal client writes after a name (a bot's, your own): no name holds one."""
BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5\U00016fe4")
"""Letters and symbols that show as blank space: HANGUL CHOSEONG FILLER, HANGUL
JUNGSEONG FILLER, HANGUL FILLER, HALFWIDTH HANGUL FILLER, BRAILLE PATTERN BLANK, the two
KHMER VOWEL INHERENT signs and KHITAN SMALL SCRIPT FILLER. (Spaces, zero-width and other
format characters are refused as not printable or as spaces at an end.)"""
_DRAWING_HINTS = re.compile("[\u034f\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
"""Variation selectors (standard, Mongolian, ideographic) and the combining grapheme
joiner: default-ignorable marks that only choose a glyph. Dropped, so that ``Ann`` with
one is the same name as ``Ann``, and an emoji picked with its selector is welcome."""
_LOOKALIKES_FILE = Path(__file__).with_name("lookalikes.txt")


class BadName(ValueError):
    """A name that is refused; the message says why (it quotes no part of the name)."""


def normalise_name(sent: str) -> str:
    """The name the server uses for ``sent``; raises :class:`BadName` saying why none.

    >>> normalise_name("Zoe\\u0308")
    'Zoë'
    >>> normalise_name("\\u3164")
    Traceback (most recent call last):
    ...
    protocol.names.BadName: holds U+3164 HANGUL FILLER, which shows as blank space
    """
    name = _DRAWING_HINTS.sub("", unicodedata.normalize("NFKC", sent))
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise BadName(
            f"must be 1 to {MAX_NAME_LENGTH} characters once normalised (NFKC), not {len(name)}"
        )
    for char in (*sent, *name):  # what was sent, and what it became (U+3164 is U+1160)
        if char in BLANK:
            raise BadName(f"holds {character(char)}, which shows as blank space")
    for char in name:
        if not char.isprintable():
            raise BadName(f"holds {character(char)}, which is not printable")
    if name.strip() != name:
        raise BadName("starts or ends with a space")
    _check_combining_marks(name)
    keys = lookalike_keys(name)
    for label in RESERVED_LABELS:
        if any(_skeleton(label) in key for key in keys):
            raise BadName(f"looks like it holds {label!r}, which the clients write after names")
    return name


def _check_combining_marks(name: str) -> None:
    if unicodedata.category(name[0]).startswith("M"):
        raise BadName(f"starts with a combining mark ({character(name[0])})")
    run = 0
    for char in name:
        run = run + 1 if unicodedata.category(char).startswith("M") else 0
        if run > MAX_COMBINING_RUN:
            raise BadName(f"has more than {MAX_COMBINING_RUN} combining marks in a row")


def lookalike_keys(name: str) -> frozenset[str]:
    """Keys under which ``name`` looks the same as another name with a key in common.

    Two: the skeleton of the case-folded name (``Ann``, and ``aNN`` with a Cyrillic a,
    share it) and the case-folded skeleton (``Ivan`` and ``lvan`` share it: capital I
    looks like small l, which case-folding first would hide).

    >>> sorted(lookalike_keys("BiII") & lookalike_keys("Bill"))
    ['bill']
    >>> lookalike_keys("Ann") & lookalike_keys("Anna")
    frozenset()
    """
    return frozenset({_skeleton(name.casefold()), _skeleton(_skeleton(name).casefold())})


def _skeleton(text: str) -> str:
    """UTS #39's skeleton, with the look-alikes this module knows: NFD, each character
    to its prototype, NFD again."""
    table = _lookalikes()
    mapped = "".join(table.get(char, char) for char in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


@cache
def _lookalikes() -> dict[str, str]:
    with _LOOKALIKES_FILE.open(encoding="utf-8") as lines:
        return dict(_entries(lines))


def _entries(lines: Iterable[str]) -> Iterable[tuple[str, str]]:
    """(source, prototype) for each entry of a confusables.txt."""
    for line in lines:
        data = line.split("#", 1)[0].strip().lstrip("\ufeff")
        if data:
            source, prototype = (field.strip() for field in data.split(";")[:2])
            yield _text(source), _text(prototype)


def _text(code_points: str) -> str:
    return "".join(chr(int(code, 16)) for code in code_points.split())


def ascii_lookalikes(confusables: Iterable[str]) -> Iterable[str]:
    """The lines of Unicode's ``confusables.txt`` that ``lookalikes.txt`` keeps: a source
    that is one character and its own NFKC and NFD form (names are normalised first), a
    prototype of ASCII letters and digits."""
    for line in confusables:
        for source, prototype in _entries([line]):
            if (
                len(source) == 1
                and unicodedata.normalize("NFKC", source) == source
                and unicodedata.normalize("NFD", source) == source
                and all(char.isascii() and char.isalnum() for char in prototype)
            ):
                yield line


class PlayerName(Spec):
    """``hello.name``: decoded to the name the server uses (see the module's rule)."""

    passthrough = True
    wire = (
        f"str 1..{MAX_SENT_LENGTH} chars; in NFKC 1..{MAX_NAME_LENGTH}, printable, "
        "see [Names](#names)"
    )

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not str or not 1 <= len(value) <= MAX_SENT_LENGTH:
            raise bad(where, f"a string of 1 to {MAX_SENT_LENGTH} characters", value)
        try:
            return normalise_name(value)
        except BadName as refusal:
            raise ProtocolError(ErrorCode.BAD_MESSAGE, f"{where} {refusal}") from None


if __name__ == "__main__":
    # python -m protocol.names confusables.txt > protocol/lookalikes.txt: the same
    # header, the entries of the newer confusables.txt.
    with _LOOKALIKES_FILE.open(encoding="utf-8") as current:
        sys.stdout.writelines(line for line in current if line.startswith("#"))
    with open(sys.argv[1], encoding="utf-8") as confusables:
        sys.stdout.writelines(ascii_lookalikes(confusables))
