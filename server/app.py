"""The server: one process holding both tiers and the in-process bus between them.

:class:`RaceServer` puts the server together and runs its life: it opens the journal,
brings back what it holds, starts the race tier (:mod:`server.race_tier`: races,
tournaments, the lobby) and the socket tier (:mod:`server.socket_tier`: connections),
joins them with an :class:`~server.bus.InProcessBus`, listens, and stops them in order.
Nothing here answers a client or decides a race.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import ssl
import sys
from collections.abc import Callable
from typing import Any

from websockets.asyncio.server import Server, serve

from protocol import CloseCode
from server.bus import InProcessBus
from server.cluster import ClusterNode, new_node_id
from server.config import ServerConfig
from server.connection import RaceConnection, check_websockets
from server.http_routes import WebFiles
from server.journal import Recovered
from server.logs import log_event
from server.metrics import Metrics
from server.metrics_listener import PATH as METRICS_PATH
from server.metrics_listener import serve_metrics
from server.postgres import PostgresStore
from server.race_ids import CheckedRaceIds
from server.race_tier import Ownership, RaceTier
from server.redis_bus import RedisBus
from server.socket_tier import SocketTier
from server.store import Store, open_store, shown


class RaceServer:
    """The race server: start it, then serve until :meth:`stop`.

    ``url``, ``port`` and ``metrics_url`` are known once :meth:`start` returns (port 0
    picks a free one).
    """

    def __init__(self, config: ServerConfig):
        self.config = config
        self.metrics = Metrics()
        self.bus: InProcessBus | RedisBus = InProcessBus()
        """The bus between the tiers: in-process, or a cluster's over Redis."""
        self.node: ClusterNode | None = None
        """This server's part in its cluster (``--cluster``), once started."""
        self.port = config.port
        self.metrics_port = config.metrics_port
        """The metrics port once started, or ``None`` when metrics are on the game port."""
        self._metrics_server: asyncio.Server | None = None
        self.stopping = False
        self.failure_sentence: str | None = None
        """Why the server stopped on its own (its journal failed while it ran), as a
        sentence to show; ``None`` while it has not."""
        self._journal: Store | None = None
        self._race_tier: RaceTier | None = None
        self._race_ids: CheckedRaceIds | None = None
        """A lone server's race ids, checked against its store ahead of use."""
        self._socket_tier: SocketTier | None = None
        self._server: Server | None = None
        self._stopped = asyncio.Event()
        self._stopping_task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The websocket URL clients connect to (``wss://`` with a certificate)."""
        scheme = "wss" if self.config.tls else "ws"
        return f"{scheme}://{_authority(self.config.host, self.port)}"

    @property
    def web_url(self) -> str:
        """The web client's first page, on the game port (``https://`` with a certificate)."""
        scheme = "https" if self.config.tls else "http"
        return f"{scheme}://{_authority(self.config.host, self.port)}/"

    @property
    def metrics_url(self) -> str:
        """Where ``GET /metrics`` answers: on the metrics port if there is one."""
        if self.metrics_port is None:
            scheme = "https" if self.config.tls else "http"
            return f"{scheme}://{_authority(self.config.host, self.port)}{METRICS_PATH}"
        return f"http://{_authority(self.config.metrics_host, self.metrics_port)}{METRICS_PATH}"

    @property
    def journal(self) -> Store:
        """The open store (after :meth:`start`)."""
        if self._journal is None:
            raise RuntimeError("the server has not started")
        return self._journal

    @property
    def race_tier(self) -> RaceTier:
        """The races, tournaments and lobby (after :meth:`start`; in a cluster, while this
        node leads)."""
        tier = self.node.tier if self.node is not None else self._race_tier
        if tier is None:
            raise RuntimeError("no race tier runs here now")
        return tier

    @property
    def socket_tier(self) -> SocketTier:
        """The connections (after :meth:`start`)."""
        if self._socket_tier is None:
            raise RuntimeError("the server has not started")
        return self._socket_tier

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the journal, recover unfinished races, and listen.

        Raises :class:`~server.journal_file.JournalRefused` (nothing started, the journal
        left as it was found) if the journal may not be opened or cannot be read,
        ``ValueError`` (nothing started) for an unusable certificate or an untested
        ``websockets`` release, and ``OSError`` if the server cannot listen (the journal is
        then closed cleanly).
        """
        check_websockets()  # on a release the frame splitting was not tested on: no start
        tls = tls_context(self.config)  # a certificate that cannot be used stops us first
        if self.config.cluster is not None:
            await self._start_node(tls)
            return
        try:
            recovered = await self._open_journal()
            race_ids = self._race_ids = CheckedRaceIds(self.journal, self.config.race_ids)
            await race_ids.fill()
            races = self._race_tier = RaceTier(
                self.config, self.journal, self.bus, self.metrics, self._journal_failed,
                Ownership(new_race_id=race_ids.take),
            )
            sockets = self._socket_tier = SocketTier(
                self.config, self.metrics, self.bus, self.journal
            )
            sockets.http.web = await asyncio.to_thread(WebFiles.load, self.config.web_root)
            self.bus.serve(races.handle)
            self.bus.listen(sockets.on_events)
            sockets.start(recovered.players)
            await races.recover(recovered)
            await self._listen(sockets, tls)
        except BaseException:
            await self._undo_start()
            raise
        races.start()
        self._log_start(races=len(races.hosts))

    async def _start_node(self, tls: ssl.SSLContext | None) -> None:
        """Start as a node of a cluster: the store (shared), the bus over Redis, the
        socket tier, and the campaign to lead (:mod:`server.cluster`)."""
        config = self.config
        assert config.cluster is not None
        node_id = config.node_id or new_node_id()
        try:
            store = self._journal = await open_store(config)
            assert isinstance(store, PostgresStore)  # a cluster's store (ServerConfig checks)
            bus = self.bus = RedisBus(
                config.cluster, config.cluster_prefix, node_id,
                failover_wait=config.failover_wait,
            )
            await bus.start()
            sockets = self._socket_tier = SocketTier(
                config, self.metrics, bus, self.journal, store, node_id
            )
            bus.listen(sockets.on_events)
            bus.on_resync(sockets.attach_again)
            bus.on_attached_elsewhere(sockets.attached_elsewhere)
            sockets.start(())  # sessions are read from the store as they resume
            await self._listen(sockets, tls)
        except BaseException:
            await self._undo_start()
            raise
        self.node = ClusterNode(config, store, bus, self.metrics, node_id)
        self.node.start()
        self._log_start(node=node_id, cluster=config.cluster)

    async def _listen(self, sockets: SocketTier, tls: ssl.SSLContext | None) -> None:
        """Listen for connections (and for metrics, on their own port if asked)."""
        self._server = await serve(
            sockets.handle,
            self.config.host,
            self.config.port,
            process_request=sockets.process_request,
            compression=None,
            max_size=sockets.limits.max_client_frame,
            open_timeout=self.config.handshake_timeout,
            ping_interval=None,  # pings only for connections gone quiet: see _Liveness
            close_timeout=self.config.close_timeout,
            create_connection=RaceConnection,
            ssl=tls,
            backlog=self.config.listen_backlog,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if self.config.metrics_port is not None:
            self._metrics_server = await serve_metrics(
                self.metrics,
                self.config.metrics_host,
                self.config.metrics_port,
                timeout=self.config.handshake_timeout,
                request_bytes=self.config.metrics_request_bytes,
            )
            self.metrics_port = self._metrics_server.sockets[0].getsockname()[1]

    async def _undo_start(self) -> None:
        """A start that failed half-way: close what it opened."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._socket_tier is not None:
            self._socket_tier.begin_stopping()
        if self._race_tier is not None:
            self._race_tier.stop()
        if isinstance(self.bus, RedisBus):
            await self.bus.aclose()
        if self._journal is not None:
            await self._journal.aclose()

    def _log_start(self, **fields: Any) -> None:
        log_event(
            "server_start",
            url=self.url,
            metrics=self.metrics_url,
            db=shown(self.config.db) if self.config.journal else None,
            sync=self.config.sync.value,
            **fields,
        )

    async def _open_journal(self) -> Recovered:
        """Open the store (checked), and read back what it holds."""
        self._journal = await open_store(self.config)
        return await self._journal.recover()

    async def stop(self) -> None:
        """Shut down gracefully: stop accepting, flush every race and the journal, then
        close every connection with 1001 (going away) so clients know to resume later."""
        if self.stopping:
            await self._stopped.wait()
            return
        self.stopping = True
        sockets, races = self._socket_tier, self._race_tier
        log_event(
            "server_stopping",
            connections=len(sockets.connections) if sockets else 0,
            races=len(races.hosts) if races else 0,
            node=self.node.node_id if self.node else None,
        )
        if self._server is not None:
            self._server.close(close_connections=False)
        if sockets is not None:
            sockets.begin_stopping()
        if races is not None:
            await races.drain()
        if self._race_ids is not None:
            await self._race_ids.stop()
        if self.node is not None:
            await self.node.stop()  # its races drained, its lease released
        if self._journal is not None:
            if not self.failed and sockets is not None:
                # Connected sessions were seen until now: their idle time starts here.
                seen = sockets.seen_now()
                if seen:
                    self._journal.submit(*seen)
            await self._journal.aclose()
        if sockets is not None:
            await sockets.close_all(CloseCode.GOING_AWAY, "the server is shutting down")
        if self._server is not None:
            await self._server.wait_closed()
        if races is not None:
            races.stop()
        if isinstance(self.bus, RedisBus):
            await self.bus.aclose()
        if self._metrics_server is not None:
            self._metrics_server.close()  # last: metrics are worth reading while it stops
            await self._metrics_server.wait_closed()
        log_event("server_stop")
        self._stopped.set()

    @property
    def failed(self) -> bool:
        """Whether the server stopped because its journal failed."""
        return self.failure_sentence is not None

    def _journal_failed(self, error: Exception) -> None:
        """The journal-failure policy's last step (see :mod:`server.outbox`): stop."""
        if self.stopping:
            return
        log_event(
            "server_failing", logging.ERROR, reason="the journal cannot write", error=repr(error)
        )
        self.failure_sentence = (
            f"the journal {shown(self.config.db)} failed while the server ran ({error}), so the "
            "server stopped without answering the moves it could not write: fix the cause (a "
            "full disk, a file removed or damaged, a database down or taken over by another "
            "server) and start it again, which brings back every acknowledged move"
        )
        self._stopping_task = asyncio.create_task(self.stop())

    async def serve_until_signalled(self, ready: Callable[[], None] | None = None) -> str | None:
        """Run until SIGTERM or SIGINT, then :meth:`stop`. Returns why the server had to
        stop on its own instead (:attr:`failure_sentence`), or ``None``.

        ``ready`` is called once the signals are handled: a SIGTERM sent as soon as the
        server says it listens then stops it cleanly, not by the signal's default action.
        """
        loop = asyncio.get_running_loop()
        signalled = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, signalled.set)
        if ready is not None:
            ready()
        waits = [asyncio.create_task(signalled.wait()), asyncio.create_task(self._stopped.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        await self.stop()
        return self.failure_sentence


def tls_context(config: ServerConfig) -> ssl.SSLContext | None:
    """The server's TLS context from ``tls_cert`` and ``tls_key`` (``None`` without them).

    Raises ``ValueError`` with a sentence when the files cannot be used.
    """
    if config.tls_cert is None or config.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # TLS 1.2 at least
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(
            f"cannot use the certificate {config.tls_cert} with the key {config.tls_key}: "
            f"{getattr(error, 'strerror', None) or error}"
        ) from None
    return context


def _authority(host: str, port: int) -> str:
    """``host:port`` for a URL (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"



#: The cyclic garbage collector's thresholds in a server process (CPython's are 700, 10, 10).
#: A young collection costs in proportion to the objects it finds (about a millisecond per
#: thousand here), so young collections stay at CPython's size: a raised first threshold
#: made each one a 5-15 ms pause, felt by every move waiting behind it. What a young
#: collection keeps is mostly the live state of moves in flight, which reference counting
#: frees soon after; so the middle generation is collected only every thousand young
#: collections (tens of seconds apart: see :class:`YoungCollections`), and the full collection,
#: which scans every connection and race, rarely. Rare long pauses touch far fewer moves
#: than frequent medium ones.
GC_THRESHOLDS = (700, 1000, 100)

#: Seconds between the young collections the event loop runs itself.
YOUNG_COLLECTION_INTERVAL = 0.025

#: New connections and racers seated, counted together, after which the event loop
#: collects the middle generation itself.
ARRIVALS_PER_MIDDLE_COLLECTION = 500

#: Seconds a thread may hold the GIL while another waits for it (CPython's is 0.005).
GIL_SWITCH_INTERVAL = 0.0005


def _tune_collector() -> None:
    """Collect what starting left behind, set it aside for good (modules, recovered races:
    never garbage, never scanned again), and collect the older generations less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    # The journal's writer thread gives up the GIL around each SQLite statement and then
    # waits for the event loop's thread to hand it back: at CPython's 5 ms switch
    # interval a commit of three statements could take 15 ms under load.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)


class YoungCollections:
    """Collect the young generation every :data:`YOUNG_COLLECTION_INTERVAL`, between the
    event loop's callbacks, until :meth:`stop`; and the middle one after every
    :data:`ARRIVALS_PER_MIDDLE_COLLECTION` new connections and racers seated.

    The collector's own trigger counts allocations less deallocations of any object,
    old ones included. Here the state of each move in flight outlives a young collection
    and dies a moment later in an older generation, so the count stays low while the
    young generation grows: measured at 1,000 racers, one young collection in ten found
    9,000-16,000 objects (not 700) and paused the loop for over 2 ms. Collected on a
    clock as well, the young generation never holds more than a few hundred objects.

    A new connection leaves about ninety objects that live as long as it does, and a
    racer seated about twenty (its game, and a share of its race's). After a wave of
    thousands, the middle generation's next collection scanned them all at once: at
    5,000 racers 279-298 ms for the connections, then 53-81 ms for the seats, against
    14-27 ms for the collections after them. Collected every few hundred arrivals, a
    wave is promoted in short pauses.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, metrics: Metrics) -> None:
        self._loop = loop
        self._metrics = metrics
        self._arrivals_seen = self._arrivals()
        self._timer = loop.call_later(YOUNG_COLLECTION_INTERVAL, self._collect)

    def _arrivals(self) -> int:
        return self._metrics.connections_total + self._metrics.seats_total

    def _collect(self) -> None:
        arrivals = self._arrivals()
        if arrivals - self._arrivals_seen >= ARRIVALS_PER_MIDDLE_COLLECTION:
            self._arrivals_seen = arrivals
            gc.collect(1)
        else:
            gc.collect(0)
        self._timer = self._loop.call_later(YOUNG_COLLECTION_INTERVAL, self._collect)

    def stop(self) -> None:
        """Collect no more."""
        self._timer.cancel()


async def run_server(
    config: ServerConfig, started: Callable[[RaceServer], None] | None = None
) -> str | None:
    """Start a server, report it through ``started``, serve until SIGTERM/SIGINT, stop.

    Returns ``None`` after a clean stop, or the sentence saying why the server stopped on
    its own (its journal failed). Raises
    :class:`~server.journal_file.JournalRefused` if the journal may not be opened.
    """
    server = RaceServer(config)
    await server.start()
    _tune_collector()
    young = YoungCollections(asyncio.get_running_loop(), server.metrics)
    try:
        return await server.serve_until_signalled(
            None if started is None else lambda: started(server)
        )
    finally:
        young.stop()
