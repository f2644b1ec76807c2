"""How many requests one host gets at once: at most ``max_connections``, fewer
while the host stalls.

A server that accepts connections slower than they come (Python's
``http.server``: a listen backlog of 5, one connection per request) drops
the SYNs past its backlog; the client's kernel sends them again after 1 s,
then 3 s, then 7 s, all at once each time, so a burst of 64 requests took
9 s for 200 items where 32 blocking threads took 1.1 s. So requests start
as TCP's congestion window does: a few at first, one more per reply until
the limit (the window doubles each round trip), halved when a reply stalls
(its headers come after both ``STALL`` seconds and ``STALL_FACTOR`` times the
fastest reply seen: a dropped SYN, not a slow server), and then grown by one
per round trip. A connect slower than ``STALL_FACTOR`` times the fastest one
(and ``CONNECT_STALL`` seconds) is a dropped SYN too: it counts as a stall at
once, and the client connects again instead of waiting for the kernel's
retransmission a second later.
"""

from __future__ import annotations

import asyncio
import collections
import time

__all__ = ["CONNECT_STALL", "STALL", "STALL_FACTOR", "START", "HostLimit"]

#: requests a host gets at first (TCP's initial window is 10 segments)
START = 8
#: a reply slower than this many seconds, and than STALL_FACTOR times the fastest
STALL = 0.75
STALL_FACTOR = 8.0
#: a connect is never given up sooner than this (seconds); the kernel resends a SYN after 1 s
CONNECT_STALL = 0.2


class HostLimit:
    """An adaptive semaphore for one host's requests (one event loop's)."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = float(min(START, ceiling))
        self.threshold = float(ceiling)  # slow start below it, one per round above
        self.in_flight = 0
        self.fastest = float("inf")
        self.fastest_connect = float("inf")
        self.stalls = 0
        self._last_cut = 0.0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> float:
        """Wait for a turn, after every request that asked before (first come,
        first served: a later batch's request never takes a turn an earlier one
        waits for); the time it started (give it back to ``release``)."""
        if not self._waiters and self.in_flight < int(self.limit):
            self.in_flight += 1
            return time.monotonic()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # ``_wake`` counted the turn as taken when it handed it over
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # handed a turn, then cancelled: the next waiter has it
                self._wake()
            raise
        return time.monotonic()

    def release(self, started: float, replied: float | None) -> None:
        """A request that started at ``started`` ended; its headers came at
        ``replied`` (None: it failed before any reply)."""
        self.in_flight -= 1
        if replied is not None:
            self._measure(started, replied - started)
        self._wake()

    def connect_deadline(self) -> float | None:
        """How long a new connection may take before it counts as a dropped SYN
        (None until one connection has been made: nothing to compare with)."""
        if self.fastest_connect == float("inf"):
            return None
        return max(CONNECT_STALL, STALL_FACTOR * self.fastest_connect)

    def connected(self, seconds: float) -> None:
        self.fastest_connect = min(self.fastest_connect, seconds)

    def stalled(self, started: float) -> None:
        """A request that started at ``started`` stalled: halve the limit, once per
        burst (not again for the requests sent before the last cut)."""
        if started >= self._last_cut:
            self.stalls += 1
            self.threshold = self.limit = max(1.0, self.limit / 2)
            self._last_cut = time.monotonic()

    def _measure(self, started: float, seconds: float) -> None:
        stalled = seconds > STALL and seconds > STALL_FACTOR * self.fastest
        self.fastest = min(self.fastest, seconds)
        if stalled:
            self.stalled(started)
        elif self.limit < self.threshold:
            self.limit = min(self.limit + 1, self.ceiling)
        else:
            self.limit = min(self.limit + 1 / self.limit, self.ceiling)

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is passed over
                waiter.set_result(None)
                self.in_flight += 1
