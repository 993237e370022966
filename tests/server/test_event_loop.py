"""``foursquare serve --loop``: asyncio's loop by default, uvloop when asked and installed,
and a clear refusal when it is asked for but missing; and the collections the server's
event loop runs itself."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli.main import main
from server.app import ARRIVALS_PER_MIDDLE_COLLECTION, YoungCollections
from server.metrics import Metrics
from tests.conftest import run_server_process
from tests.server.wire_client import WireClient

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_uvloop_asked_for_but_missing_is_refused_with_a_sentence(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A None entry in sys.modules makes ``import uvloop`` raise ImportError, as when absent.
    monkeypatch.setitem(sys.modules, "uvloop", None)
    argv = ["serve", "--port", "0", "--db", str(tmp_path / "x.db")]
    if how == "flag":
        argv += ["--loop", "uvloop"]
    else:
        monkeypatch.setenv("FOURSQUARE_LOOP", "uvloop")
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "uvloop" in error and "not installed" in error
    assert "foursquare-race[fast]" in error
    assert not (tmp_path / "x.db").exists()


def test_an_unknown_loop_in_the_environment_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FOURSQUARE_LOOP", "tokio")
    assert main(["serve", "--port", "0", "--db", str(tmp_path / "x.db")]) == 2
    assert "unknown event loop 'tokio'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "loop",
    [
        "asyncio",
        pytest.param(
            "uvloop", marks=pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed")
        ),
    ],
)
async def test_the_server_runs_and_answers_on_the_chosen_loop(
    loop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FOURSQUARE_LOOP", raising=False)
    with run_server_process(tmp_path / "foursquare.db", "--loop", loop) as server:
        # The line names the loop the server found itself running on, not the flag.
        assert f"(event loop: {loop})" in server.banner, server.banner
        client = await WireClient.connect(server.url, "ann")
        assert client.welcome.name == "ann"
        await client.connection.close()
        assert server.terminate() == 0


@contextlib.contextmanager
def collections_recorded() -> Iterator[list[int]]:
    """The generations the collector collects meanwhile, in order; its own trigger is
    turned off meanwhile, so only the event loop's collections show."""
    collected: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.set_threshold(10**6, 10**6, 10**6)
    gc.callbacks.append(record)
    try:
        yield collected
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*thresholds)


async def until(condition: Callable[[], bool]) -> None:
    """Wait (at most ten seconds) for ``condition`` to hold."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


@pytest.mark.parametrize("arrival", ["connections_total", "seats_total"])
async def test_the_loop_collects_the_middle_generation_after_each_wave_of_arrivals(
    arrival: str,
) -> None:
    metrics = Metrics()
    with collections_recorded() as collected:
        young = YoungCollections(asyncio.get_running_loop(), metrics)
        try:
            await until(lambda: len(collected) >= 3)
            setattr(metrics, arrival, ARRIVALS_PER_MIDDLE_COLLECTION - 1)
            seen = len(collected)
            await until(lambda: len(collected) >= seen + 3)
            assert set(collected) == {0}, "only young collections before the wave is full"
            setattr(metrics, arrival, ARRIVALS_PER_MIDDLE_COLLECTION)
            await until(lambda: 1 in collected)
            after = collected.index(1)
            await until(lambda: len(collected) >= after + 4)
            assert collected.count(1) == 1
            assert set(collected[after + 1 :]) == {0}
        finally:
            young.stop()
