"""How a screen asks the app to send something to the server."""

from __future__ import annotations

from textual.message import Message

from protocol import ClientMessage
from protocol.players import PlayerClientMessage
from protocol.tournament import TournamentClientMessage


class ServerRequest(Message):
    """Send ``request`` to the server; the app owns the connection and does it."""

    def __init__(
        self, request: ClientMessage | TournamentClientMessage | PlayerClientMessage
    ) -> None:
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
