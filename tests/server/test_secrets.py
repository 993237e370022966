"""Secrets stay out of error messages and log lines, even when sent with a small mistake.

A resume token or a host token pasted with a trailing ``=``, a space, quotes or a line
break is refused, but it is still (nearly) the secret: the refusal, and the ``error_sent``
line the server logs for it, must not quote it. These tests run the real server as a
child process, so what is checked is the very log it writes, and look for any 8
characters of the token anywhere in what came back or was logged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect

from protocol import Error, Hello, decode_server, encode
from protocol.tournament import HostAction
from tests.conftest import ServerProcess
from tests.server.wire_client import TIMEOUT, WireClient
from tests.tournament.players import Host

#: A fragment this long is worth guessing from; none may be quoted.
FRAGMENT = 8


def mistakes(token: str) -> Iterator[tuple[str, str]]:
    """The ways a token gets pasted wrong, each with what to call it."""
    other = "A" if token[-1] != "A" else "B"
    yield "a trailing =", token + "="
    yield "a trailing space", token + " "
    yield "a leading space", " " + token
    yield "a trailing newline", token + "\n"
    yield "double quotes", f'"{token}"'
    yield "single quotes", f"'{token}'"
    yield "a line break in the middle", token[: len(token) // 2] + "\n" + token[len(token) // 2 :]
    yield "one character changed", token[:-1] + other
    yield "too long", token * (130 // len(token) + 1)
    yield "cut short, with a space", token[: len(token) * 2 // 3] + " "


def fragments(secret: str) -> set[str]:
    """Every run of :data:`FRAGMENT` characters of ``secret``."""
    return {secret[i : i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)}


def leaked(text: str, secret: str) -> set[str]:
    """The fragments of ``secret`` that ``text`` holds. Tokens are URL-safe characters,
    which JSON does not escape, so this reads log lines as they are."""
    return {f for f in fragments(secret) if f in text}


async def refusal_of(url: str, frame: bytes) -> Error:
    """Send ``frame`` on a new connection as its first message; the error it earns."""
    async with connect(url, compression=None) as connection:
        await connection.send(frame)
        answer = decode_server(await asyncio.wait_for(connection.recv(), TIMEOUT))
        assert isinstance(answer, Error), answer
        return answer


def server_log(server: ServerProcess) -> list[str]:
    """Every line the server logged, once it has stopped (so all are written)."""
    assert server.terminate() == 0
    return server.db_path.with_suffix(".log").read_text().splitlines()


def assert_not_leaked(lines: list[str], secret: str, refused: int) -> None:
    sent = [line for line in lines if '"error_sent"' in line]
    assert len(sent) >= refused, "the refusals were not logged: the check would be empty"
    for line in lines:
        assert not leaked(line, secret), line


async def test_a_mistyped_resume_token_is_quoted_neither_to_the_client_nor_in_the_log(
    server_process: ServerProcess,
) -> None:
    ann = await WireClient.connect(server_process.url, "Ann")
    token = ann.welcome.resume
    refused = 0
    for mistake, sent in mistakes(token):
        frame = encode(Hello(name="Ann", bot=False, resume=sent, id=1))
        error = await refusal_of(server_process.url, frame)
        refused += 1
        assert error.code.value in {"bad_message", "invalid_token"}, (mistake, error)
        assert not leaked(error.message, token), (mistake, error.message)
        assert "hello.resume" in error.message or error.code.value == "invalid_token"
    await ann.close()
    assert_not_leaked(server_log(server_process), token, refused)


async def test_a_mistyped_host_token_is_quoted_neither_to_the_client_nor_in_the_log(
    server_process: ServerProcess,
) -> None:
    host = await Host.start(server_process.url, "Hal")
    await host.create(name="Club night")
    refused = 0
    for mistake, sent in mistakes(host.token):
        await host.control(HostAction.OPEN, token=sent)
        error = await host.error()
        refused += 1
        assert error.code.value in {"bad_message", "not_host"}, (mistake, error)
        assert not leaked(error.message, host.token), (mistake, error.message)
    await host.close()
    assert_not_leaked(server_log(server_process), host.token, refused)


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ("q8V7hK2mZyX0pL4tR9wE1A=", "it holds U+003D EQUALS SIGN"),
        ("q8V7hK2mZyX0pL4tR9wE1A\n", "it holds U+000A"),
        ("q8V7hK2mZyX", "it has 11 characters"),
    ],
)
def test_the_refusal_says_what_is_wrong_with_a_token(sent: str, said: str) -> None:
    from protocol import ProtocolError, decode_client

    with pytest.raises(ProtocolError) as refused:
        decode_client(encode(Hello(name="Ann", bot=False, resume=sent)))
    assert refused.value.message.startswith(f"hello.resume is not a token: {said}")
    assert "q8V7hK2m" not in refused.value.message

