"""The client commands as a person runs them: `foursquare bot`, and names refused early."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from cli.client_commands import play_app
from cli.main import build_parser, main
from client.network_app import NetworkApp
from tests.conftest import ServerProcess


def test_two_bots_race_each_other_and_report_how_it_went(
    server_process: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["bot", "--server", server_process.url, "--quick", "-n", "2",
                   "--strategy", "greedy", "--pace", "0"])
    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    assert sorted(line.split(" ")[0] for line in lines) == ["bot-1", "bot-2"]
    assert all(" in race " in line and ": place " in line for line in lines)


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        (["--strategy", "clever"], "argument --strategy: invalid choice: 'clever'"),
        (["--pace", "-1"], "argument --pace: a pace is zero or more seconds, not -1"),
        (["--pace", "soon"], "argument --pace: 'soon' is not a number of seconds"),
    ],
)
def test_a_bad_strategy_or_pace_is_refused_before_connecting(
    option: list[str], problem: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["bot", "--server", "ws://127.0.0.1:1", "--quick", *option])
    assert refused.value.code == 2
    assert problem in capsys.readouterr().err


def test_bot_help_lists_the_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bot", "--help"])
    assert "{expectimax,greedy,random}" in capsys.readouterr().out


def test_the_command_tells_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"foursquare {version('foursquare-race')}\n"


def test_bots_with_no_server_say_so_and_fail(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["bot", "--server", "ws://127.0.0.1:1", "--quick", "--pace", "0"])
    assert status == 1
    assert "Cannot reach the server at ws://127.0.0.1:1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (
            ["play", "--name", "x" * 33],
            "the name must be 1 to 32 characters once normalised (NFKC), not 33",
        ),
        (["watch", "CODE", "--name", "  "], "the name needs at least one visible character"),
        (
            ["play", "--name", "ann\tlee"],
            "the name holds U+0009 (a control character), which is not printable",
        ),
        (
            ["watch", "CODE", "--name", "\u3164"],
            "the name holds U+3164 HANGUL FILLER, which shows as blank space",
        ),
        (
            ["play", "--name", "Ann [bot]"],
            "the name looks like it holds '[bot]', which the clients write after names",
        ),
    ],
)
def test_a_name_the_server_would_refuse_is_refused_before_connecting(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--server", "ws://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == f"error: {problem}\n"


def test_spaces_and_tabs_around_a_name_are_trimmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app = play_app(build_parser().parse_args(["play", "--name", " \tann  "]))
    assert isinstance(app, NetworkApp) and app.connection.name == "ann"
