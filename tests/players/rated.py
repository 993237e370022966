"""A rated race between two claimed players, for the tests of the screens and pages that
show players' records."""

from __future__ import annotations

from protocol import QuickRace, RaceFinished, RaceSnapshot, RaceState, Resign
from protocol.players import ClaimName, PlayerKey, RatingChanged
from tests.server.wire_client import WireClient


async def claim(url: str, name: str, bot: bool = False) -> tuple[WireClient, PlayerKey]:
    client = await WireClient.connect(url, name, bot=bot)
    await client.send(ClaimName(id=client.next_id()))
    return client, await client.expect(PlayerKey)


async def rated_race(url: str) -> tuple[str, PlayerKey, PlayerKey, RatingChanged]:
    """Ann (a person) and Bob (a bot), both claimed, race a quick race and both resign:
    the race id, their keys and Ann's rating change."""
    (ann, ann_key), (bob, bob_key) = await claim(url, "Ann"), await claim(url, "Bob", bot=True)
    for client in (ann, bob):
        await client.send(QuickRace(id=client.next_id()))
        snapshot = await client.expect(RaceSnapshot)
    await ann.expect(RaceSnapshot, state=RaceState.RUNNING)
    for client in (bob, ann):
        await client.send(Resign(race=snapshot.race, id=client.next_id()))
    await ann.expect(RaceFinished)
    rating = await ann.expect(RatingChanged, race=snapshot.race)
    await bob.expect(RatingChanged, race=snapshot.race)
    for client in (ann, bob):
        await client.close()
    return snapshot.race, ann_key, bob_key, rating
