"""The client app for a tournament: ``play --tournament`` and ``watch --tournament``.

It is the network app with the tournament screen as its home. ``tournament`` messages go
into a :class:`~client.tournament_state.TournamentTracker`; the races the tournament
lists are spectated for live progress. An entrant's own races are ordinary races: their
messages go to the network app, which shows the race screen and then the results, and
``n`` on the results comes back to the standings.

A tournament seats its entrants itself, so the ``race`` snapshot that deals us in does not
name us: a snapshot whose racers include our entrant id is our race.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.screen import Screen

from client.connection import Connection
from client.network_app import NetworkApp, Plan
from client.race_state import FINISHED_STATUSES, RaceTracker
from client.screens.failure import FailureScreen
from client.screens.race import Clock
from client.screens.requests import BackToLobby
from client.screens.results import ResultsScreen
from client.screens.tournament import (
    TournamentRaceScreen,
    TournamentResultsScreen,
    TournamentScreen,
)
from client.screens.watch import WatchScreen
from client.tournament_state import TournamentTracker
from client.wording import describe_error
from protocol import (
    Error,
    ErrorCode,
    RaceFinished,
    RaceSnapshot,
    RaceState,
    ServerMessage,
    Spectate,
    Welcome,
)
from protocol.tournament import (
    JoinTournament,
    TournamentState,
    TournamentStatus,
    WatchTournament,
)

#: Refusals of these requests, before any state has come, leave nothing to show.
_FATAL_REPLIES = ("join_tournament", "watch_tournament")
_ENTERABLE = (TournamentStatus.OPEN, TournamentStatus.RUNNING)


class TournamentApp(NetworkApp):
    """An entrant's (``playing``) or a spectator's view of one tournament."""

    def __init__(
        self, connection: Connection, code: str, *, playing: bool, clock: Clock = time.monotonic
    ) -> None:
        self.tournament = TournamentTracker(code.upper())
        self.playing = playing
        self._enter_when_open = False
        """Our first ``join_tournament`` came before registration opened: try again then."""
        super().__init__(connection, Plan(watch=not playing), clock)

    async def _ensure(self, kind: type[Screen[None]], build: Callable[[], Screen[None]]) -> None:
        """The network app's screens, but results that lead back to the standings."""
        if kind is ResultsScreen:
            tracker = self.tracker
            kind, build = TournamentResultsScreen, lambda: TournamentResultsScreen(tracker)
        await super()._ensure(kind, build)

    def _first_screen_for_plan(self) -> Screen[None]:
        return self._standings_screen()

    def _standings_screen(self) -> TournamentScreen:
        return TournamentScreen(self.tournament, playing=self.playing, clock=self.clock)

    @property
    def _may_watch(self) -> bool:
        """Whether we may watch other races: not while we race, for a round's races are all
        dealt the same seed (the tournament's state or our own race may say so first)."""
        if not self.playing:
            return True
        mirror = self.tracker.mirror
        own_game_over = (
            self.tracker.race is None
            or self.tracker.finished is not None
            or mirror is None
            or mirror.status in FINISHED_STATUSES
        )
        return own_game_over and not self.tournament.racing_now()

    async def receive(self, message: ServerMessage) -> None:
        """Route one message: the tournament, a race we watch, or our own race."""
        code, race = self.tournament.code, getattr(message, "race", None)
        if race is not None and race in self.left_races:
            return  # a race of ours we have left for the standings
        if isinstance(message, Welcome):
            first = not message.resumed and self.playing
            request = JoinTournament(tournament=code) if first else WatchTournament(tournament=code)
            await self.connection.send(request)
            self._show_link()
        elif isinstance(message, Error):
            await self._refused(message)
        elif isinstance(message, TournamentState):
            await self._tournament_changed(message)
        elif self.tournament.follows(message):
            self.tournament.apply_race(message)
            self._show_watched(race)
        elif isinstance(message, RaceSnapshot) and message.race != self.tracker.race:
            await self._dealt(message)
        elif race is not None and race == self.tracker.race:
            await super().receive(message)
            if isinstance(message, RaceFinished):
                self.tournament.own_race_finished(message)

    async def _refused(self, error: Error) -> None:
        code = self.tournament.code
        if error.code is ErrorCode.ALREADY_ENTERED:
            await self.connection.send(WatchTournament(tournament=code))
        elif error.in_reply_to in _FATAL_REPLIES and self.tournament.state is None:
            if error.code is not ErrorCode.TOURNAMENT_STATE:
                await self.show_main(FailureScreen(describe_error(error)))
                return
            # Not open yet, or over: show it; enter as soon as registration opens.
            self._enter_when_open = True
            await self.connection.send(WatchTournament(tournament=code))
            self.say(describe_error(error))
        elif error.in_reply_to == "spectate":
            # The race ended before we asked, or (after a restart) is gone: the standings
            # have its result, and it is in progress no more.
            self.tournament.forget_unlisted()
            self._show_watched()
        else:
            await super().receive(error)

    async def _tournament_changed(self, state: TournamentState) -> None:
        new_races = self.tournament.apply_state(state, self.clock())
        if self._enter_when_open and state.status in _ENTERABLE:
            self._enter_when_open = False
            await self.connection.send(JoinTournament(tournament=self.tournament.code))
            self.say("Registration has opened: entering you now.")
        if not self._may_watch:
            for race_id in new_races:
                del self.tournament.races[race_id]
            new_races = []
        for race_id in new_races:
            await self.connection.send(Spectate(race=race_id))
        self._show_watched()

    async def _dealt(self, snapshot: RaceSnapshot) -> None:
        """A race we are not following: ours if its racers include us, else not for us."""
        you = self.tournament.you
        if you is None or all(racer.racer != you for racer in snapshot.racers):
            return
        if snapshot.state not in (RaceState.COUNTDOWN, RaceState.RUNNING):
            # Being seated (the countdown follows at once), or a late word from a race
            # already over: the two races' messages travel independently.
            return
        if isinstance(self.main_screen, TournamentRaceScreen):
            await self.close_overlays()
            await self.pop_screen()  # the player's own race comes before watching another
        if self.tracker.race is not None:
            self.left_races.add(self.tracker.race)
        self.tracker = RaceTracker()
        self.tracker.apply(snapshot)
        self.tracker.seat(you)
        await super().receive(snapshot)

    def _show_watched(self, race: str | None = None) -> None:
        """Redraw the race being watched, or the standings (only ``race``'s progress when
        a message about that race alone changed it)."""
        screen = self.main_screen
        if isinstance(screen, TournamentScreen) and race is not None:
            screen.refresh_race(race)
        elif isinstance(screen, TournamentScreen | WatchScreen):
            screen.refresh_from_tracker()

    async def on_back_to_lobby(self, event: BackToLobby) -> None:
        """After the results of one of our races: back to the standings."""
        event.prevent_default()  # not the network app's way back to its lobby
        if self.tracker.race is not None:
            self.left_races.add(self.tracker.race)
        self.tracker = RaceTracker()
        await self.show_main(self._standings_screen())
        self._show_link()
