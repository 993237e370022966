"""The server's configuration: defaults, environment variables, flags."""

from __future__ import annotations

import pytest

from cli.main import build_parser
from server.config import ServerConfig
from server.journal import Sync


def test_defaults_suit_a_local_run() -> None:
    config = ServerConfig.from_environment({})
    assert (config.host, config.port, config.db) == ("127.0.0.1", 8765, "foursquare.db")


def test_environment_variables_set_what_flags_do_not() -> None:
    environ = {"FOURSQUARE_HOST": "0.0.0.0", "FOURSQUARE_PORT": "9000", "FOURSQUARE_DB": "x.db"}
    assert ServerConfig.from_environment(environ) == ServerConfig(
        host="0.0.0.0", port=9000, db="x.db"
    )
    flagged = ServerConfig.from_environment(environ, port=9001, db="y.db")
    assert (flagged.host, flagged.port, flagged.db) == ("0.0.0.0", 9001, "y.db")


@pytest.mark.parametrize("port", ["eighty", "70000"])
def test_a_bad_port_is_refused_with_a_sentence(port: str) -> None:
    with pytest.raises(ValueError, match=r"(?i)port"):
        ServerConfig.from_environment({"FOURSQUARE_PORT": port})


def test_serve_takes_host_port_and_db_flags() -> None:
    args = build_parser().parse_args(["serve", "--host", "::1", "--port", "0", "--db", "a.db"])
    assert (args.host, args.port, args.db) == ("::1", 0, "a.db")


def test_the_journal_sync_mode_comes_from_a_flag_or_the_environment() -> None:
    assert ServerConfig.from_environment({}).sync is Sync.NORMAL
    assert ServerConfig.from_environment({"FOURSQUARE_SYNC": "FULL"}).sync is Sync.FULL
    assert ServerConfig.from_environment({"FOURSQUARE_SYNC": "full"}, sync="normal").sync is (
        Sync.NORMAL
    )
    with pytest.raises(ValueError, match="normal or full"):
        ServerConfig.from_environment({"FOURSQUARE_SYNC": "sometimes"})
    args = build_parser().parse_args(["serve", "--sync", "full", "--no-journal"])
    assert (args.sync, args.no_journal) == ("full", True)


def test_limits_and_trusted_proxies_come_from_flags_or_the_environment() -> None:
    environ = {
        "FOURSQUARE_MAX_CONNECTIONS": "500",
        "FOURSQUARE_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16",
    }
    config = ServerConfig.from_environment(environ, max_connections_per_address=0)
    assert (config.max_connections, config.max_connections_per_address) == (500, 0)
    assert config.trusted_proxies == ("10.0.0.1/32", "192.168.0.0/16")
    args = build_parser().parse_args(
        ["serve", "--trusted-proxy", "::1", "--trusted-proxy", "10.1.0.0/16",
         "--new-sessions-per-minute", "5"]
    )
    config = ServerConfig.from_environment(
        {}, trusted_proxies=args.trusted_proxy, new_sessions_per_minute=args.new_sessions_per_minute
    )
    assert config.trusted_proxies == ("::1/128", "10.1.0.0/16")
    assert config.new_sessions_per_minute == 5


def test_the_metrics_port_comes_from_a_flag_or_the_environment() -> None:
    assert ServerConfig.from_environment({}).metrics_port is None  # /metrics on the game port
    environ = {"FOURSQUARE_METRICS_PORT": "9100", "FOURSQUARE_METRICS_HOST": "10.0.0.5"}
    config = ServerConfig.from_environment(environ)
    assert (config.metrics_host, config.metrics_port) == ("10.0.0.5", 9100)
    flagged = ServerConfig.from_environment(environ, metrics_host="::1", metrics_port=9101)
    assert (flagged.metrics_host, flagged.metrics_port) == ("::1", 9101)
    alone = ServerConfig.from_environment({}, metrics_port=9102)
    assert (alone.metrics_host, alone.metrics_port) == ("127.0.0.1", 9102)  # loopback
    args = build_parser().parse_args(["serve", "--metrics-host", "::", "--metrics-port", "0"])
    assert (args.metrics_host, args.metrics_port) == ("::", 0)


@pytest.mark.parametrize(
    ("environ", "problem"),
    [
        ({"FOURSQUARE_MAX_CONNECTIONS": "-1"}, "whole number"),
        ({"FOURSQUARE_TRUSTED_PROXIES": "proxy.example"}, "trusted proxy"),
        ({"FOURSQUARE_SESSION_EXPIRY": "soon"}, "seconds"),
        ({"FOURSQUARE_TLS_CERT": "cert.pem"}, "both"),
        ({"FOURSQUARE_METRICS_PORT": "nine"}, "FOURSQUARE_METRICS_PORT: a port must be a number"),
        ({"FOURSQUARE_METRICS_PORT": "-1"}, "metrics port must be from 0 to 65535"),
        ({"FOURSQUARE_METRICS_HOST": "0.0.0.0"}, "metrics host needs a metrics port"),
    ],
)
def test_a_bad_limit_is_refused_with_a_sentence(environ: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ServerConfig.from_environment(environ)
