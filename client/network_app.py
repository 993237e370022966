"""The client app for network play and watching: it owns the connection and the race state.

Screens never talk to the server themselves: they post a
:class:`~client.screens.requests.ServerRequest` and the app sends it. Messages from the
server go into the :class:`~client.race_state.RaceTracker`, and the app shows the screen
that fits where the race stands: lobby, waiting room, race, results; or the watch screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.app import ScreenStackError
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Static

from client.app import FoursquareApp
from client.connection import Connection, ConnectionFailed, LinkState
from client.race_state import RaceTracker
from client.replay import Replay, ReplayError
from client.saved_session import SavedSession, SessionStore
from client.screens.daily import DailyBoardScreen, DailyResultScreen
from client.screens.failure import FailureScreen
from client.screens.lobby import LobbyScreen
from client.screens.name import NameChosen, NameScreen
from client.screens.network_race import NetworkRaceScreen
from client.screens.profile import ProfileScreen
from client.screens.race import Clock
from client.screens.replay import ReplayScreen
from client.screens.requests import (
    BackToLobby,
    OpenProfile,
    Request,
    ServerRequest,
    ShowDailyBoard,
)
from client.screens.results import ResultsScreen
from client.screens.waiting import WaitingScreen
from client.screens.watch import WatchScreen
from client.wording import describe_error
from engine import Position
from protocol import (
    ClientMessage,
    CreateRace,
    Error,
    ErrorCode,
    JoinRace,
    LeaveRace,
    ListRaces,
    MovePlaced,
    Ok,
    Place,
    QuickRace,
    RaceFinished,
    RaceList,
    RaceOptions,
    RaceSnapshot,
    RaceState,
    ServerMessage,
    Spectate,
    Welcome,
)
from protocol.daily import Daily, DailyClientMessage, DailyRace
from protocol.players import (
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    PlayerClientMessage,
    Profile,
)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do once connected: ``request`` is sent after the first welcome.

    ``watch`` makes the app a spectator's; ``profile`` shows that profile alone (the
    request asks for it); with no request the player gets the lobby.
    """

    request: ClientMessage | DailyClientMessage | PlayerClientMessage | None = None
    watch: bool = False
    profile: str | None = None

    @classmethod
    def quick(cls) -> Plan:
        """Join (or open) a public race at once."""
        return cls(QuickRace())

    @classmethod
    def daily(cls) -> Plan:
        """Race today's daily deal at once."""
        return cls(DailyRace())

    @classmethod
    def create(cls, options: RaceOptions | None = None) -> Plan:
        """Open a race: by default a private one that starts when everyone is ready."""
        return cls(CreateRace(options=options or RaceOptions(public=False, auto_start=False)))

    @classmethod
    def join(cls, code: str) -> Plan:
        """Join the race with this code."""
        return cls(JoinRace(race=code))

    @classmethod
    def player(cls, name: str) -> Plan:
        """Show the profile of the claimed player named ``name``, and nothing else."""
        return cls(GetProfile(name=name), profile=name)

    @classmethod
    def spectate(cls, code: str) -> Plan:
        """Watch the race with this code."""
        return cls(Spectate(race=code), watch=True)


@dataclass
class _Link:
    sentence: str = ""
    history: list[LinkState] = field(default_factory=list)


class NetworkApp(FoursquareApp):
    """``foursquare play`` and ``foursquare watch``."""

    def __init__(
        self,
        connection: Connection,
        plan: Plan,
        clock: Clock = time.monotonic,
        *,
        sessions: SessionStore | None = None,
    ) -> None:
        self.connection = connection
        self.plan = plan
        self.clock = clock
        self.sessions = sessions
        """Where the session is saved while racing, so that ``play`` can come back to the
        race after the client quits; ``None`` keeps nothing."""
        self._saved: SavedSession | None = None
        self._resuming_saved = connection.saved_token is not None
        self.tracker = RaceTracker()
        self.link = _Link()
        self.left_races: set[str] = set()
        """Races this client has left: what still comes about them is not shown."""
        self.saw_race_on = False
        """Whether the race watched was seen before its end. One that was not (the server
        answered with its result alone, or its first snapshot said finished) is replayed
        when its result comes; one followed live stays on its last boards (``r`` replays
        it), even when its end came while the connection was down."""
        self._asked_daily = False
        """A ``daily_race`` is sent and not yet answered: the race that answers it is a
        daily room."""
        connection.on_state = self._link_changed
        super().__init__(self._first_screen_for_plan)

    def _first_screen_for_plan(self) -> Screen[None]:
        if self.plan.watch:
            return WatchScreen(self.tracker)
        if self.plan.profile is not None:
            return ProfileScreen(self.plan.profile, alone=True)
        return LobbyScreen(self.connection.name)

    async def first_screen_shown(self) -> None:
        """Start talking to the server once there is a screen to say so on."""
        self.run_worker(self._pump(), name="server", exclusive=True)

    async def on_unmount(self) -> None:
        """Say goodbye to the server when the app closes."""
        await self.connection.close()

    async def _pump(self) -> None:
        try:
            async for message in self.connection.messages():
                if not self.is_running:
                    break  # the app is shutting down: its screens are going
                try:
                    await self.receive(message)
                except (NoMatches, ScreenStackError):
                    if self.is_running:
                        raise
                    break
        except ConnectionFailed as failure:
            if not self.is_running:
                return
            if failure.code is ErrorCode.NAME_TAKEN:
                await self.show_main(NameScreen(str(failure), self.connection.name))
            else:
                await self.show_main(FailureScreen(str(failure)))

    async def on_name_chosen(self, event: NameChosen) -> None:
        """Connect again under the name the player chose after a refusal."""
        self.connection.name = event.chosen
        await self.show_main(self._first_screen_for_plan())
        self.run_worker(self._pump(), name="server", exclusive=True)

    # --------------------------------------------------------- link state

    def _link_changed(self, state: LinkState, sentence: str) -> None:
        self.link.sentence = sentence
        self.link.history.append(state)
        self._show_link()

    def _show_link(self) -> None:
        for widget in self.main_screen.query("#link"):
            if isinstance(widget, Static):
                widget.update(self.link.sentence)

    def say(self, sentence: str) -> None:
        """Put a sentence on the current screen's message line."""
        say = getattr(self.main_screen, "say", None)
        if callable(say):
            say(sentence)

    # ------------------------------------------------------------ sending

    async def on_server_request(self, event: ServerRequest) -> None:
        """A screen wants something sent."""
        sent = await self._send(event.request)
        if not sent and isinstance(event.request, ListRaces | GetLeaderboard):
            return  # asked again as soon as the link is up
        if not sent:
            if isinstance(event.request, Place) and self.tracker.mirror is not None:
                self.tracker.mirror.pending = None
                await self._show_race()
            self.say("Not sent: the connection is down; it is being restored.")

    async def on_open_profile(self, event: OpenProfile) -> None:
        """Open a player's profile over the lobby and ask for it."""
        player = event.player
        if player is None:
            welcome = self.connection.welcome
            player = welcome.player if welcome is not None else None
        if player is None:
            self.say("You play as a guest: claim your name (foursquare key claim NAME) to "
                     "have a rating and a profile.")
            return
        await self.push_screen(ProfileScreen(event.shown))
        if not await self.connection.send(GetProfile(player=player)):
            self._profile_screen_says("Not sent: the connection is down; it is being restored.")

    def _profile_screen(self) -> ProfileScreen | None:
        """The profile shown on top, if one is."""
        return self.screen if isinstance(self.screen, ProfileScreen) else None

    def _profile_screen_says(self, sentence: str) -> None:
        screen = self._profile_screen()
        if screen is not None:
            screen.say(sentence)

    async def on_back_to_lobby(self, event: BackToLobby) -> None:
        """Leave the race (finished, or not started yet) for the lobby."""
        race = self.tracker.race
        if race is not None:
            await self.connection.send(LeaveRace(race=race))
        await self._return_to_lobby()

    async def on_show_daily_board(self, event: ShowDailyBoard) -> None:
        """Leave a finished daily room (if in one) for the daily deal's boards."""
        race = self.tracker.race
        if race is not None:
            await self.connection.send(LeaveRace(race=race))
            self._forget_race()
        await self.show_main(DailyBoardScreen())
        self._show_link()

    async def _send(self, request: Request) -> bool:
        """Send ``request``, noting a ``daily_race`` (its answer is a daily room)."""
        if isinstance(request, DailyRace):
            self._asked_daily = True
        return await self.connection.send(request)

    def _forget_race(self) -> None:
        """Forget the race (its late messages are ignored)."""
        if self.tracker.race is not None:
            self.left_races.add(self.tracker.race)
        self.tracker = RaceTracker()
        self._keep_session()

    async def _return_to_lobby(self) -> None:
        """Forget the race (its late messages are ignored) and show the lobby."""
        self._forget_race()
        if not isinstance(self.main_screen, LobbyScreen):
            await self.show_main(LobbyScreen(self.connection.name))
            self._show_link()

    # ---------------------------------------------------------- receiving

    async def receive(self, message: ServerMessage) -> None:
        """Take one message from the server and show what it changed."""
        answer: object = message  # players' messages are not in ServerMessage's union
        if isinstance(answer, Leaderboard):
            if isinstance(self.main_screen, LobbyScreen):
                self.main_screen.show_board(answer)
            return
        if isinstance(answer, Profile):
            screen = self._profile_screen()
            if screen is not None:
                screen.show(answer)
            return
        if isinstance(message, Error) and message.in_reply_to == GetProfile.TYPE:
            self._profile_screen_says(describe_error(message))
            return
        if isinstance(message, Welcome):
            if not message.resumed and self._resuming_saved and self.sessions is not None:
                self.sessions.forget(self.connection.url)  # the server no longer knew it
            self._resuming_saved = False
            if not message.resumed:
                await self._send(self.plan.request or ListRaces())
            elif isinstance(self.main_screen, LobbyScreen):
                await self.connection.send(ListRaces())
            else:
                rejoin = self.tracker.seat_lost_on_drop()
                if rejoin is not None and not self.plan.watch:
                    await self._send(rejoin)
            if isinstance(self.main_screen, LobbyScreen):
                self.main_screen.ask_board()  # the lobby's asks so far found the link down
            self._show_link()
            return
        if isinstance(message, Daily):
            if isinstance(self.main_screen, DailyBoardScreen):
                self.main_screen.show_daily(message)
            return
        if isinstance(message, Error):
            if message.in_reply_to == "daily_race":
                self._asked_daily = False
            if message.in_reply_to == "get_daily" and isinstance(
                self.main_screen, DailyBoardScreen
            ):
                self.main_screen.no_board(describe_error(message))
                return
            if message.code is ErrorCode.ALREADY_JOINED and message.in_reply_to == "join_race":
                return  # a rejoin after a resume found the seat still ours
            if message.in_reply_to == "place" and self.tracker.mirror is not None:
                self.tracker.mirror.pending = None
                await self._show_race()
            if self.plan.watch and message.in_reply_to == "spectate":
                await self.show_main(FailureScreen(describe_error(message)))
            self.say(describe_error(message))
            return
        if isinstance(message, RaceList):
            if isinstance(self.main_screen, LobbyScreen):
                self.main_screen.show_races(list(message.races))
            return
        if isinstance(message, Ok):
            # (A room left for the daily boards stays left for them.)
            if message.in_reply_to == "leave_race" and not self.plan.watch and not isinstance(
                self.main_screen, DailyBoardScreen
            ):
                await self._return_to_lobby()
            return
        if getattr(message, "race", None) in self.left_races:
            return
        if isinstance(message, RaceSnapshot) and message.state is not RaceState.FINISHED:
            self.saw_race_on = True
        replay = self.plan.watch and isinstance(message, RaceFinished) and not self.saw_race_on
        self.tracker.apply(message)
        if isinstance(message, RaceSnapshot) and self._asked_daily:
            self.tracker.daily, self._asked_daily = True, False
        if replay and isinstance(message, RaceFinished):
            await self._replay(message)
        if isinstance(self.main_screen, ReplayScreen | FailureScreen):
            return  # the race is over: what still comes is for the screen under the replay
        self._keep_session()
        tracker, snapshot, sealed = self.tracker, self.tracker.snapshot, self.tracker.sealed
        if self.plan.watch:
            await self._ensure(WatchScreen, lambda: WatchScreen(tracker))
        elif sealed is not None:
            await self._ensure(DailyResultScreen, lambda: DailyResultScreen(sealed))
        elif tracker.finished is not None:
            await self._ensure(ResultsScreen, lambda: ResultsScreen(tracker))
        elif snapshot is not None and snapshot.state in (RaceState.LOBBY, RaceState.COUNTDOWN):
            await self._ensure(WaitingScreen, lambda: WaitingScreen(tracker, self.clock))
        elif snapshot is not None:
            await self._ensure(NetworkRaceScreen, lambda: NetworkRaceScreen(tracker, self.clock))
        flips = tracker.last_flips if isinstance(message, MovePlaced) else []
        await self._show_race(flips)

    async def _replay(self, finished: RaceFinished) -> None:
        """Replay a race that was over before we came to watch it."""
        try:
            replay = Replay(finished.to_result())
        except (ReplayError, ValueError) as error:
            await self.show_main(FailureScreen(f"This race cannot be replayed: {error}"))
            return
        await self.show_main(ReplayScreen(replay, clock=self.clock))
        self._show_link()

    def _keep_session(self) -> None:
        """Save the session while we race in an unfinished race; forget it otherwise."""
        welcome, race = self.connection.welcome, self.tracker.race
        if self.sessions is None or welcome is None or self.plan.watch:
            return
        racing = (
            race is not None and self.tracker.you is not None and not self.tracker.finished
            and self.tracker.sealed is None
        )
        saved = (
            SavedSession(self.connection.url, welcome.session, welcome.resume, welcome.name, race)
            if racing and race is not None
            else None
        )
        if saved == self._saved:
            return
        if saved is None:
            self.sessions.forget(self.connection.url)
        else:
            self.sessions.save(saved)
        self._saved = saved

    async def _ensure(self, kind: type[Screen[None]], build: Callable[[], Screen[None]]) -> None:
        """Switch to a new screen from ``build`` unless one of ``kind`` is showing."""
        if not isinstance(self.main_screen, kind):
            await self.show_main(build())
            self._show_link()

    async def _show_race(self, flips: list[Position] | None = None) -> None:
        """Redraw the current screen from the tracker."""
        screen = self.main_screen
        if isinstance(screen, NetworkRaceScreen):
            screen.refresh_from_tracker(flips or ())
        elif isinstance(screen, WatchScreen | WaitingScreen | ResultsScreen):
            screen.refresh_from_tracker()
