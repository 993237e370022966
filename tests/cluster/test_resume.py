"""Resumes on a node that has never seen the session: it reads the session from the store.

After a failover, the clients of the dead node resume on another all at once, and a
client whose connection was closed before its hello was answered (the node slow to read
them all) says hello again while the first read may still be under way.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from websockets.asyncio.client import connect

from protocol import Hello, Welcome, decode_server, encode
from tests.cluster.harness import running_cluster
from tests.server.wire_client import TIMEOUT, WireClient

#: Connections resuming one session at once.
AT_ONCE = 20


async def test_one_session_resumed_many_times_at_once_is_welcomed_every_time(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        await cluster.wait_for_leader()
        made = await WireClient.connect(cluster.nodes["n1"].url, "ann", bot=True)
        token = made.welcome.resume
        await made.close()
        # n2 knows nothing of the session: each hello reads it from the store, and the
        # reads overlap (each waits for the one before on the store's connection).
        connections = await asyncio.gather(
            *(connect(cluster.nodes["n2"].url, compression=None) for _ in range(AT_ONCE))
        )
        try:
            hello = encode(Hello(name="ann", bot=True, resume=token, id=1))
            await asyncio.gather(*(connection.send(hello) for connection in connections))
            answers = [decode_server(await asyncio.wait_for(connection.recv(), TIMEOUT))
                       for connection in connections]
            # Each is welcomed (the later ones replace the earlier ones' connections).
            assert all(isinstance(answer, Welcome) and answer.resumed for answer in answers), [
                answer for answer in answers if not isinstance(answer, Welcome)
            ]
        finally:
            await asyncio.gather(*(connection.close() for connection in connections))
