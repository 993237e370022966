"""Coverage-guided fuzzing of both decoders with atheris (run by ``make fuzz``).

``python -m tests.fuzz_decoder [libFuzzer flags] CORPUS_DIR``: libFuzzer mutates frames,
starting from one frame of every message type (written into ``CORPUS_DIR`` when it is
empty), and keeps those that reach new code of ``protocol/`` and ``engine/``. The
property is the one ``tests/protocol/test_fuzz.py`` checks with hypothesis: whatever the
bytes, a decoder returns a message or raises :class:`~protocol.ProtocolError` with a
sentence, and a message it returns encodes back to the same message. Anything else (an
exception, a crash) stops the run and leaves the input in ``crash-*``.

atheris comes with the ``fuzz`` extra, which ``make test`` does not install: it is
imported only when the fuzzer runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def seed_corpus(directory: Path, frames: list[bytes]) -> None:
    """Start an empty corpus with ``frames`` (one file each)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not any(directory.iterdir()):
        for number, frame in enumerate(frames):
            (directory / f"example-{number:03}").write_bytes(frame)


def checker(
    decoders: list[Callable[[bytes], Any]], encode: Callable[[Any], bytes], error: type[Exception]
) -> Callable[[bytes], None]:
    """The property for one input: refused with a sentence, or a faithful round trip."""

    def check(data: bytes) -> None:
        for decode in decoders:
            try:
                message = decode(data)
            except error as refusal:
                if not str(refusal):
                    raise AssertionError(f"a refusal without a sentence: {refusal!r}") from None
                continue
            again = decode(encode(message))
            if again != message:
                raise AssertionError(f"{message!r} came back as {again!r}")

    return check


def main(argv: list[str]) -> None:
    """Fuzz until libFuzzer's flags say stop (``-max_total_time=SECONDS``, ``-runs=N``)."""
    import atheris

    with atheris.instrument_imports():
        from protocol import ProtocolError, decode_client, decode_server, encode
        from protocol.examples import EXAMPLES

    corpus = [arg for arg in argv[1:] if not arg.startswith("-")]
    for directory in corpus[:1]:
        seed_corpus(Path(directory), [encode(message) for message in EXAMPLES.values()])
    atheris.Setup(argv, checker([decode_client, decode_server], encode, ProtocolError))
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
