"""How a screen asks the app to send something to the server."""

from __future__ import annotations

from textual.message import Message

from protocol import ClientMessage
from protocol.daily import DailyClientMessage
from protocol.tournament import TournamentClientMessage

Request = ClientMessage | TournamentClientMessage | DailyClientMessage
"""Whatever a screen may ask the app to send."""


class ServerRequest(Message):
    """Send ``request`` to the server; the app owns the connection and does it."""

    def __init__(self, request: Request) -> None:
        super().__init__()
        self.request = request


class BackToLobby(Message):
    """The player is done with this race and wants the lobby again."""


class ShowDailyBoard(Message):
    """The player wants the daily deal's boards (leaving a finished daily room)."""
