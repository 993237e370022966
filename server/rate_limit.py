"""A token bucket: a sustained rate with room for a burst.

A session's bucket lives with the session (:class:`~server.sessions.Session`), so that a
client cannot refill it by connecting again; a connection that has not said hello yet has
one of its own.
"""

from __future__ import annotations


class TokenBucket:
    """Allows ``rate`` messages a second on average and ``burst`` at once.

    >>> bucket = TokenBucket(rate=1.0, burst=2, now=0.0)
    >>> [bucket.allow(0.0), bucket.allow(0.0), bucket.allow(0.0), bucket.allow(1.0)]
    [True, True, False, True]
    >>> bucket.strikes, bucket.allow(5.0), bucket.strikes
    (1, True, 0)
    """

    __slots__ = ("_last", "_tokens", "burst", "rate", "strikes")

    def __init__(self, rate: float, burst: int, now: float):
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last = now
        self.strikes = 0
        """Messages refused since the bucket was last full. A client quiet long enough to
        earn its whole burst back is forgiven; one that keeps pushing is closed when this
        reaches ``ServerConfig.rate_strikes``."""

    def full(self, now: float) -> bool:
        """Whether the whole burst is back by ``now`` (nothing taken)."""
        return self._tokens + max(0.0, now - self._last) * self.rate >= self.burst

    def allow(self, now: float) -> bool:
        """Take a token if there is one: whether the message may be handled."""
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)
        if self._tokens >= self.burst:
            self.strikes = 0
        if self._tokens < 1.0:
            self.strikes += 1
            return False
        self._tokens -= 1.0
        return True
