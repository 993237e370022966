"""Human players' names are distinct among those connected; bots, spectators and resumes
are not held to it."""

from __future__ import annotations

import asyncio

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
        if not server.sessions.name_in_use("ann"):
            break
        await asyncio.sleep(0.01)
    newcomer = await WireClient.connect(live_server.url, "ann")
    assert newcomer.racer_id != ann.racer_id
    await newcomer.close()
