"""The caps on unfinished tournaments count every node of a cluster, as one server counts
its own: the server's (``max_open_tournaments``) and each session's
(``tournaments_per_session``, a finished one counting while it lingers). Real node
processes on one PostgreSQL database and one Redis, and real websocket clients connected
to different nodes; a refusal is the one a single server gives, code and sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import ErrorCode
from protocol.tournament import HostAction, TournamentStatus
from tests.cluster.harness import running_cluster
from tests.server.wire_client import WireClient
from tests.tournament.players import Host
from tests.tournament.test_bounds import create_refused

#: The sentences a single server refuses with, past either cap (two tournaments in all,
#: one a session; a finished one counts for the default five minutes).
SERVER_FULL = "the server already runs 2 tournaments, as many as it may; try again when one is over"
SESSION_FULL = (
    "you already have 1 tournaments, as many as one session may: end one "
    "(a finished one still counts for 300 seconds)"
)


async def refused_with(host: Host, sentence: str) -> None:
    """``host`` asks for a tournament and is refused with ``server_busy`` and ``sentence``."""
    error = await create_refused(host)
    assert error.code is ErrorCode.SERVER_BUSY and error.in_reply_to == "create_tournament"
    assert error.message == sentence, error


async def ended(host: Host) -> None:
    """``host`` ends its tournament (never opened), and sees it finished."""
    await host.control(HostAction.END)
    await host.until(lambda s: s.tournament == host.code and s.status is TournamentStatus.FINISHED)


async def test_the_caps_on_tournaments_count_every_node(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FOURSQUARE_MAX_TOURNAMENTS", "2")
    monkeypatch.setenv("FOURSQUARE_TOURNAMENTS_PER_SESSION", "1")
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        await cluster.wait_for_leader()
        n1, n2 = cluster.nodes["n1"].url, cluster.nodes["n2"].url
        ann = await Host.start(n1, "ann")
        bob = await Host.start(n2, "bob")
        carl = await Host.start(n1, "carl")
        await ann.create(name="ann's")  # run by n1
        await bob.create(name="bob's")  # run by n2
        assert (cluster.owner(ann.code), cluster.owner(bob.code)) == ("n1", "n2")

        # Two unfinished in the cluster, one on n1: n1 has no room.
        await refused_with(carl, SERVER_FULL)
        await ended(bob)

        # On n2, ann's tournament (run by n1) counts for her: unfinished, then finished
        # and lingering.
        moved = Host(await WireClient.connect(n2, "ann", resume=ann.client.welcome.resume), "ann")
        moved.code, moved.token = ann.code, ann.token
        await refused_with(moved, SESSION_FULL)
        await moved.watch(moved.code)
        await ended(moved)
        await refused_with(moved, SESSION_FULL)

        # Nothing unfinished any more: carl may create one.
        await carl.create(name="carl's")
        for player in (moved, bob, carl):
            await player.close()
