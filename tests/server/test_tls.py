"""wss:// served directly: a certificate made at test time, and the real client connection."""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import urllib.request
from pathlib import Path

import pytest
import trustme

from cli.main import main
from client.bot_runner import run_bots
from client.connection import Connection, ConnectionFailed
from protocol import CreateRace, QuickRace, RaceOptions
from server.app import RaceServer
from server.config import ServerConfig
from tests.conftest import fast_config, start_live_server
from tests.server.wire_client import TIMEOUT


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A certificate authority of the test's own, and a certificate it issued for
    127.0.0.1: (the CA's certificate, the server's chain, the server's key)."""
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    ca_file, chain, key = folder / "ca.pem", folder / "chain.pem", folder / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    chain.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    return ca_file, chain, key


def tls_config(tmp_path: Path, authority: tuple[Path, Path, Path]) -> ServerConfig:
    _, chain, key = authority
    return dataclasses.replace(
        fast_config(tmp_path / "db"), tls_cert=str(chain), tls_key=str(key)
    )


async def test_a_race_is_played_over_wss_with_the_client_connection(
    tmp_path: Path, authority: tuple[Path, Path, Path]
) -> None:
    ca_file = str(authority[0])
    config = dataclasses.replace(tls_config(tmp_path, authority), quick_min_racers=2)
    async with start_live_server(config) as live:
        assert live.url.startswith("wss://127.0.0.1:")
        results = await asyncio.wait_for(
            run_bots(live.url, 2, QuickRace(), "greedy", ca_file=ca_file), 60
        )
        assert all(result.standing is not None for result in results), results
        # /healthz answers over https on the same port.
        context = ssl.create_default_context(cafile=ca_file)

        def healthz() -> bytes:
            with urllib.request.urlopen(
                live.http_url + "/healthz", timeout=TIMEOUT, context=context
            ) as response:
                body: bytes = response.read()
                return body

        assert await asyncio.to_thread(healthz) == b"ok\n"


async def test_an_untrusted_certificate_is_refused_with_a_sentence(
    tmp_path: Path, authority: tuple[Path, Path, Path]
) -> None:
    async with start_live_server(tls_config(tmp_path, authority)) as live:
        with pytest.raises(ConnectionFailed, match=r"certificate is not trusted.*--ca-file"):
            async for _ in Connection(live.url, "ann").messages():
                pass
        # Trusted, the same address works.
        connection = Connection(live.url, "ann", ca_file=str(authority[0]))
        async for welcome in connection.messages():
            assert welcome.TYPE == "welcome"
            await connection.send(CreateRace(options=RaceOptions(), id=1))
            await connection.close()


def test_serve_refuses_a_key_that_is_not_the_certificates(
    tmp_path: Path, authority: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, chain, _ = authority
    other_key = tmp_path / "other.pem"
    trustme.CA().issue_cert("127.0.0.1").private_key_pem.write_to_path(str(other_key))
    status = main(["serve", "--port", "0", "--db", str(tmp_path / "x.db"),
                   "--tls-cert", str(chain), "--tls-key", str(other_key)])
    assert status == 2
    assert "cannot use the certificate" in capsys.readouterr().err


def test_the_url_says_wss_with_a_certificate(authority: tuple[Path, Path, Path]) -> None:
    _, chain, key = authority
    server = RaceServer(ServerConfig(port=1234, tls_cert=str(chain), tls_key=str(key)))
    assert server.url == "wss://127.0.0.1:1234"
    assert RaceServer(ServerConfig(port=1234)).url == "ws://127.0.0.1:1234"
