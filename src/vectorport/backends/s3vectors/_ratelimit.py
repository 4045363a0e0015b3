"""A process-wide token bucket per index: S3 Vectors accepts up to 2,500 vectors inserted
plus deleted per second per index, and answers 429 beyond it."""

from __future__ import annotations

import threading
import time

__all__ = ["WriteRateLimiter", "limiter_for"]


class WriteRateLimiter:
    """Blocks :meth:`acquire` until ``n`` vectors fit under ``rate`` per second."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.burst = max(burst or rate, 1.0)
        self._tokens = self.burst
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self, n: int) -> float:
        """Take ``n`` tokens, sleeping as needed; returns the seconds waited."""
        waited = 0.0
        need = min(float(n), self.burst)
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
                self._stamp = now
                if self._tokens >= need:
                    self._tokens -= need
                    return waited
                pause = (need - self._tokens) / self.rate
            time.sleep(pause)
            waited += pause


_LIMITERS: dict[tuple[str, str, str, float], WriteRateLimiter] = {}
_LOCK = threading.Lock()


def limiter_for(endpoint: str, bucket: str, index: str, rate: float) -> WriteRateLimiter:
    """The limiter shared by every store in this process writing to one index."""
    with _LOCK:
        key = (endpoint, bucket, index, rate)
        lim = _LIMITERS.get(key)
        if lim is None:
            # A full PutVectors batch (500) must always fit the bucket.
            lim = _LIMITERS[key] = WriteRateLimiter(rate, max(rate, 500.0))
        return lim
