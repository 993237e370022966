"""Human players' names are distinct among those connected; bots, spectators and resumes
are not held to it."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect

from protocol import Error, ErrorCode, Hello, Role, Welcome, decode_server, encode
from tests.conftest import LiveServer
from tests.server.wire_client import TIMEOUT, WireClient


async def test_a_second_human_with_a_connected_name_is_refused_and_may_try_another(
    live_server: LiveServer,
) -> None:
    ann = await WireClient.connect(live_server.url, "Ann")
    async with connect(live_server.url, compression=None) as second:
        await second.send(encode(Hello(name="ann", bot=False, id=1)))
        refusal = decode_server(await asyncio.wait_for(second.recv(), TIMEOUT))
        assert isinstance(refusal, Error) and refusal.code is ErrorCode.NAME_TAKEN
        assert refusal.reply_to == 1 and "'ann'" in refusal.message
        # The connection stays open: another name is welcome.
        await second.send(encode(Hello(name="ann2", bot=False, id=2)))
        welcome = decode_server(await asyncio.wait_for(second.recv(), TIMEOUT))
        assert isinstance(welcome, Welcome) and welcome.name == "ann2"
    await ann.close()


async def test_bots_spectators_and_resumes_keep_their_names(live_server: LiveServer) -> None:
    ann = await WireClient.connect(live_server.url, "ann")
    bot = await WireClient.connect(live_server.url, "ann", bot=True)
    watcher = await WireClient.connect(live_server.url, "ann", role=Role.SPECTATOR)
    # Resuming from a second window replaces the first connection, under the same name.
    again = await WireClient.connect(live_server.url, "ann", resume=ann.welcome.resume)
    assert again.welcome.resumed and again.racer_id == ann.racer_id
    for client in (bot, watcher, again):
        await client.close()


async def test_a_name_is_free_again_once_its_player_disconnects(live_server: LiveServer) -> None:
    server = live_server.server
    assert server is not None
    ann = await WireClient.connect(live_server.url, "ann")
    await ann.close()
    for _ in range(100):  # the server notices the close in its own time
        if not server.socket_tier.sessions.name_in_use("ann"):
            break
        await asyncio.sleep(0.01)
    newcomer = await WireClient.connect(live_server.url, "ann")
    assert newcomer.racer_id != ann.racer_id
    await newcomer.close()


async def hello_answer(url: str, name: str, *, bot: bool = False) -> Error | Welcome:
    """Say hello as ``name`` on a new connection; the server's answer."""
    async with connect(url, compression=None) as connection:
        await connection.send(encode(Hello(name=name, bot=bot, id=1)))
        answer = decode_server(await asyncio.wait_for(connection.recv(), TIMEOUT))
        assert isinstance(answer, Error | Welcome), answer
        return answer


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("\u3164", "holds U+3164 HANGUL FILLER, which shows as blank space"),
        ("\u2800", "holds U+2800 BRAILLE PATTERN BLANK, which shows as blank space"),
        ("Ann\u3164", "holds U+3164 HANGUL FILLER"),
        ("\u200b", "holds U+200B ZERO WIDTH SPACE, which is not printable"),
        ("a" + "\u0301" * 30, "has more than 2 combining marks in a row"),
        ("\u0301nn", "starts with a combining mark"),
        ("Ann [bot]", "looks like it holds '[bot]'"),
        ("Ann [B\u041eT]", "looks like it holds '[bot]'"),  # a Cyrillic O
        ("Ann (you)", "looks like it holds '(you)'"),
    ],
)
async def test_a_name_that_shows_blank_or_passes_for_a_label_is_refused(
    live_server: LiveServer, name: str, why: str
) -> None:
    for bot in (False, True):  # bots too: the label is the clients' to write
        refusal = await hello_answer(live_server.url, name, bot=bot)
        assert isinstance(refusal, Error) and refusal.code is ErrorCode.BAD_MESSAGE
        assert refusal.message.startswith(f"hello.name {why}"), refusal.message


async def test_the_server_uses_the_nfkc_form_of_a_name(live_server: LiveServer) -> None:
    bea = await WireClient.connect(live_server.url, "\uff22\uff45\uff41")  # fullwidth
    assert bea.welcome.name == "Bea"
    heart = await WireClient.connect(live_server.url, "Cy \u2764\ufe0f")  # with its selector
    assert heart.welcome.name == "Cy \u2764"
    await bea.close()
    await heart.close()


@pytest.mark.parametrize(
    "look_alike",
    [
        "\u0410nn",  # a Cyrillic capital A
        "\uff21\uff4e\uff4e",  # fullwidth
        "\u0430NN",  # a Cyrillic small a, the rest in capitals
        "Ann\ufe0f",  # a variation selector, which draws nothing
    ],
)
async def test_a_look_alike_of_a_connected_human_name_is_taken(
    live_server: LiveServer, look_alike: str
) -> None:
    ann = await WireClient.connect(live_server.url, "Ann")
    refusal = await hello_answer(live_server.url, look_alike)
    assert isinstance(refusal, Error) and refusal.code is ErrorCode.NAME_TAKEN
    assert "looks the same as a connected player's name" in refusal.message
    await ann.close()


async def test_capital_i_and_small_l_look_the_same(live_server: LiveServer) -> None:
    bill = await WireClient.connect(live_server.url, "Bill")
    refusal = await hello_answer(live_server.url, "BiII")
    assert isinstance(refusal, Error) and refusal.code is ErrorCode.NAME_TAKEN
    welcome = await hello_answer(live_server.url, "Billy")
    assert isinstance(welcome, Welcome) and welcome.name == "Billy"
    await bill.close()
