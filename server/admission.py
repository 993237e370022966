"""Who may connect: the client's address, connection caps, and new sessions per address.

The server counts open websocket connections in all and per client address, and refuses
an upgrade past either cap with an HTTP status and a one-sentence body (which the
terminal client shows). It also limits how many new sessions one address may start per
minute. Behind a reverse proxy every connection comes from the proxy, so the client's
address is taken from ``X-Forwarded-For``, but only when the peer is one of the proxies
the operator named (``ServerConfig.trusted_proxies``): anyone else could write any
address there.

Everything here is bookkeeping on the event loop: no I/O.
"""

from __future__ import annotations

import http
import ipaddress
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from server.config import ServerConfig
from server.rate_limit import TokenBucket

#: Refusal reasons, as counted in ``/metrics`` (``foursquare_refused_total{reason=...}``).
CONNECTIONS = "connections"
CONNECTIONS_PER_ADDRESS = "connections_per_address"
NEW_SESSIONS_PER_ADDRESS = "new_sessions_per_address"

#: The prefix an IPv6 client address is counted by: a host or a household is usually
#: given a whole /64, so counting single IPv6 addresses would cap nothing.
IPV6_PREFIX = 64

#: Allowances of new sessions kept, at least, before the full ones are dropped.
TIDY_AT = 1024

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Refusal:
    """An upgrade the server refuses: the HTTP status and the sentence it answers with."""

    reason: str
    status: http.HTTPStatus
    sentence: str


FULL = Refusal(
    CONNECTIONS,
    http.HTTPStatus.SERVICE_UNAVAILABLE,
    "The server has all the connections it can take; try again in a minute.",
)
TOO_MANY_FROM_ADDRESS = Refusal(
    CONNECTIONS_PER_ADDRESS,
    http.HTTPStatus.TOO_MANY_REQUESTS,
    "Too many connections from your address; close some and try again.",
)


def address_group(address: str) -> str:
    """What the per-address caps count ``address`` as: itself, or its /64 for IPv6.

    >>> address_group("203.0.113.7"), address_group("2001:db8:1:2:3:4:5:6")
    ('203.0.113.7', '2001:db8:1:2::/64')
    >>> address_group("::ffff:203.0.113.7"), address_group("not an address")
    ('203.0.113.7', 'not an address')
    """
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return str(parsed)


class Admission:
    """Connection caps and the client address, for one server.

    >>> from dataclasses import replace
    >>> config = replace(ServerConfig(), max_connections=3, max_connections_per_address=2)
    >>> admission = Admission(config)
    >>> [admission.admit("10.0.0.1"), admission.admit("10.0.0.1")]
    [None, None]
    >>> admission.admit("10.0.0.1").reason, admission.admit("10.0.0.2")
    ('connections_per_address', None)
    >>> admission.admit("10.0.0.3").reason
    'connections'
    >>> admission.release("10.0.0.1"); admission.admit("10.0.0.3") is None
    True
    """

    def __init__(self, config: ServerConfig, refused: Counter[str] | None = None) -> None:
        self._config = config
        self._trusted: tuple[Network, ...] = tuple(
            ipaddress.ip_network(proxy, strict=False) for proxy in config.trusted_proxies
        )
        self.open = 0
        """Connections admitted and not yet closed."""
        self._open_by_group: Counter[str] = Counter()
        self._new_sessions: dict[str, TokenBucket] = {}
        """Per address group, the allowance of new sessions (dropped once full again)."""
        self._tidy_at = TIDY_AT
        """How many allowances may be kept before the full ones are dropped."""
        self.refused: Counter[str] = Counter() if refused is None else refused
        """Refusals so far, by reason (the metrics' counter, when given)."""

    # -------------------------------------------------------------- address

    def client_address(self, peer: str | None, forwarded_for: Iterable[str]) -> str | None:
        """The client's address: ``peer`` (the TCP peer's address), or, when ``peer`` is
        a trusted proxy, the right-most address in ``X-Forwarded-For`` (every such
        header, in order) that is not itself a trusted proxy.

        A proxy appends the address it took the request from, so everything right of the
        last untrusted hop was written by a proxy we trust, and everything left of it by
        whoever the client is (and may be forged). A malformed hop stops the walk at the
        last address known good.

        >>> from dataclasses import replace
        >>> admission = Admission(replace(ServerConfig(), trusted_proxies=("10.0.0.0/8",)))
        >>> admission.client_address("10.0.0.5", ["1.1.1.1, 203.0.113.9, 10.0.0.4"])
        '203.0.113.9'
        >>> admission.client_address("198.51.100.1", ["203.0.113.9"])  # not a proxy of ours
        '198.51.100.1'
        >>> admission.client_address("10.0.0.5", [])  # no header: the proxy itself
        '10.0.0.5'
        """
        if peer is None or not self._trusted or not self._is_trusted(peer):
            return peer
        hops = [hop.strip() for header in forwarded_for for hop in header.split(",")]
        client = peer
        for hop in reversed(hops):
            if not _is_address(hop):
                break
            client = hop
            if not self._is_trusted(hop):
                break
        return client

    def _is_trusted(self, address: str) -> bool:
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(parsed in network for network in self._trusted)

    # ---------------------------------------------------------- connections

    def admit(self, address: str | None) -> Refusal | None:
        """Count a new connection from ``address``, or say why it is refused (and count
        the refusal). An admitted connection must be :meth:`release`\\ d once closed."""
        config = self._config
        if config.max_connections and self.open >= config.max_connections:
            return self._refuse(FULL)
        group = address_group(address) if address is not None else None
        per_address = config.max_connections_per_address
        if group is not None and per_address and self._open_by_group[group] >= per_address:
            return self._refuse(TOO_MANY_FROM_ADDRESS)
        self.open += 1
        if group is not None:
            self._open_by_group[group] += 1
        return None

    def release(self, address: str | None) -> None:
        """A connection :meth:`admit` counted has closed."""
        self.open -= 1
        if address is None:
            return
        group = address_group(address)
        self._open_by_group[group] -= 1
        if self._open_by_group[group] <= 0:
            del self._open_by_group[group]

    def _refuse(self, refusal: Refusal) -> Refusal:
        self.refused[refusal.reason] += 1
        return refusal

    # --------------------------------------------------------- new sessions

    def allow_new_session(self, address: str | None, now: float) -> bool:
        """Whether ``address`` may start one more session now (counted if so, and the
        refusal counted if not)."""
        per_minute = self._config.new_sessions_per_minute
        if not per_minute or address is None:
            return True
        group = address_group(address)
        bucket = self._new_sessions.get(group)
        if bucket is None and len(self._new_sessions) >= self._tidy_at:
            self.forget_rested(now)
            # Amortized: the next tidying waits until the map has doubled again.
            self._tidy_at = max(TIDY_AT, 2 * len(self._new_sessions))
        if bucket is None:
            bucket = self._new_sessions[group] = TokenBucket(per_minute / 60.0, per_minute, now)
        if bucket.allow(now):
            return True
        self.refused[NEW_SESSIONS_PER_ADDRESS] += 1
        return False

    def forget_rested(self, now: float) -> None:
        """Drop the allowances that are full again (an address that started sessions a
        while ago is like one never seen), so that addresses seen once do not pile up.

        >>> from dataclasses import replace
        >>> admission = Admission(replace(ServerConfig(), new_sessions_per_minute=2))
        >>> admission.allow_new_session("10.0.0.1", now=0.0)
        True
        >>> admission.forget_rested(now=1.0); len(admission._new_sessions)
        1
        >>> admission.forget_rested(now=60.0); len(admission._new_sessions)
        0
        """
        rested = [group for group, bucket in self._new_sessions.items() if bucket.full(now)]
        for group in rested:
            del self._new_sessions[group]


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
