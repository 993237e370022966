"""How a screen asks the app to send something to the server."""

from __future__ import annotations

from textual.message import Message

from protocol import ClientMessage
from protocol.daily import DailyClientMessage
from protocol.players import PlayerClientMessage
from protocol.tournament import TournamentClientMessage

Request = ClientMessage | TournamentClientMessage | DailyClientMessage | PlayerClientMessage
"""Whatever a screen may ask the app to send."""


class ServerRequest(Message):
    """Send ``request`` to the server; the app owns the connection and does it."""

    def __init__(self, request: Request) -> None:
        super().__init__()
        self.request = request


class OpenProfile(Message):
    """Open a player's profile: the claimed player ``player`` (an id), or, when
    ``None``, the player this client plays as. ``shown`` names it meanwhile."""

    def __init__(self, player: str | None, shown: str) -> None:
        super().__init__()
        self.player = player
        self.shown = shown


class BackToLobby(Message):
    """The player is done with this race and wants the lobby again."""


class ShowDailyBoard(Message):
    """The player wants the daily deal's boards (leaving a finished daily room)."""
