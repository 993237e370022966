"""A token bucket per connection: a sustained rate with room for a burst."""

from __future__ import annotations


class TokenBucket:
    """Allows ``rate`` messages a second on average and ``burst`` at once.

    >>> bucket = TokenBucket(rate=1.0, burst=2, now=0.0)
    >>> [bucket.allow(0.0), bucket.allow(0.0), bucket.allow(0.0), bucket.allow(1.0)]
    [True, True, False, True]
    """

    def __init__(self, rate: float, burst: int, now: float):
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last = now

    def allow(self, now: float) -> bool:
        """Take a token if there is one: whether the message may be handled."""
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True
