"""How many requests one host gets at once: at most ``max_connections``, fewer
while the host drops connections, and what was learned kept for the process.

A server that accepts connections slower than they come (Python's
``http.server``: a listen backlog of 5, one connection per request) drops
the SYNs past its backlog; the client's kernel sends them again after 1 s,
then 3 s, then 7 s, all at once each time, so a burst of 64 requests took
9 s for 200 items where 32 blocking threads took 1.1 s. So requests start
as TCP's congestion window does: a few at first, one more per reply until
the limit (the window doubles each round trip), halved on a drop, then one
more per round trip, never past the limit a drop was seen at (``cap``: one
fewer, and one fewer again for each other request dropped in the same burst:
those are how far past what the host takes it was) until ``PROBE`` replies came
without one (issue 46: probing past it again each round trip made a
small-backlog server drop 22-32 SYNs an epoch).

What is a drop, and what is only a slow server (issue 46: a 1.2 % latency
tail of 1 s halved the limit again and again, mean 8 in flight of 64):

- a connect slower than ``STALL_FACTOR`` times the fastest one (and
  ``CONNECT_STALL`` seconds) is a SYN nobody answered: a drop at once, and
  the client connects again instead of waiting for the kernel's
  retransmission a second later;
- a reply far beyond the typical one (slower than ``STALL`` seconds and
  ``STALL_FACTOR`` times the median of the last ``WINDOW`` replies) is a drop
  only when ``DROPS`` of the last ``WINDOW`` replies were, each while the host
  had all the requests the limit allows (an epoch's last, slow replies are a
  tail seen alone, not drops): a request stuck in
  a full accept queue comes in bursts, a latency tail (1-2 % of replies)
  almost never puts 8 in 64 (p < 1e-4 at 2 %). A slow reply never halves
  the limit alone; a server slow every time is its median.

The limit grows only while connects stay near the fastest (``NEAR`` times it,
or ``CONNECT_SLACK`` seconds more): connects that slow down are a server that
falls behind before it drops; and not on the replies to requests sent before
the last drop (as TCP in recovery: they were sent past what the host takes).
A host's limit, threshold and cap are kept for the process (``learned``): a
new dataset or epoch starts where the last one left off, not at ``START`` again.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Hashable

__all__ = [
    "CONNECT_STALL",
    "DROPS",
    "STALL",
    "STALL_FACTOR",
    "START",
    "WINDOW",
    "HostLimit",
    "learned",
]

#: requests a host gets at first (TCP's initial window is 10 segments)
START = 8
#: a reply slower than this many seconds, and than STALL_FACTOR times the median
STALL = 0.75
STALL_FACTOR = 8.0
#: replies the typical one is the median of; this many of them far beyond it: drops
WINDOW = 64
DROPS = 8
#: a connect is never given up sooner than this (seconds); the kernel resends a SYN after 1 s
CONNECT_STALL = 0.2
#: a connect within NEAR times the fastest, or CONNECT_SLACK seconds more, is near it
NEAR = 4.0
CONNECT_SLACK = 0.002
#: replies without a drop before the limit may pass the cap a drop set, one at a time
PROBE = 256

# host -> (limit, threshold, cap) learned in this process; a tuple is swapped whole.
_LEARNED: dict[Hashable, tuple[float, float, float]] = {}


def learned(host: Hashable) -> float | None:
    """The limit this process has learned for ``host`` (None: none yet)."""
    state = _LEARNED.get(host)
    return None if state is None else state[0]


class HostLimit:
    """An adaptive semaphore for one host's requests (one event loop's)."""

    def __init__(self, ceiling: int, host: Hashable = None) -> None:
        self.ceiling, self.host = ceiling, host
        fresh = (float(START), float("inf"), float("inf"))
        limit, threshold, cap = _LEARNED.get(host, fresh) if host is not None else fresh
        self.limit = float(min(limit, ceiling))
        self.threshold = threshold  # slow start below it, one per round above
        self.cap = cap
        self.in_flight = 0
        self.fastest_connect = float("inf")
        self.connect_near = True
        self.stalls = 0
        self._replies: collections.deque[float] = collections.deque(maxlen=WINDOW)
        self._far: collections.deque[bool] = collections.deque(maxlen=WINDOW)
        self._since_cut = 0
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
        best = self.fastest_connect
        self.connect_near = seconds <= max(NEAR * best, best + CONNECT_SLACK)
        self.fastest_connect = min(best, seconds)

    def stalled(self, started: float, first: bool = True) -> None:
        """A request that started at ``started`` met a drop (``first``: its first).
        Halve the limit, once per burst (not again for the requests sent before
        the last cut), and never grow past the limit it was dropped at again
        (until ``PROBE``); each other request dropped in the burst is one more
        than the host takes: one less for the cap."""
        if started >= self._last_cut:
            self.stalls += 1
            self.cap = max(1.0, int(self.limit) - 1.0)
            self.threshold = self.limit = max(1.0, self.limit / 2)
            self._last_cut = time.monotonic()
            self._far.clear()
            self._since_cut = 0
        elif first:
            self.cap = max(1.0, self.cap - 1)
            self.limit = min(self.limit, self.cap)
            self.threshold = min(self.threshold, self.limit)
        else:
            return
        self._learn()

    def _measure(self, started: float, seconds: float) -> None:
        replies = self._replies
        typical = sorted(replies)[len(replies) // 2] if len(replies) >= 8 else None
        self._replies.append(seconds)
        far = typical is not None and seconds > STALL and seconds > STALL_FACTOR * typical
        # Only while the host is given all it may take: a drop comes from pushing it,
        # and the slow replies left when an epoch drains are its tail, not drops.
        pushed = bool(self._waiters) or self.in_flight + 1 >= int(self.limit)
        self._far.append(far and pushed)
        if far:
            if sum(self._far) >= DROPS:
                self.stalled(started)
            return  # a tail: neither a drop nor a reason to grow
        self._since_cut += 1
        if self._since_cut >= PROBE and self.cap < self.ceiling:
            self.cap, self._since_cut = self.cap + 1, 0  # the server may take more now
        if not self.connect_near or started < self._last_cut:
            return  # a connect slowed down, or sent before the last drop: no growth
        before = int(self.limit)
        grown = self.limit + (1 if self.limit < self.threshold else 1 / self.limit)
        self.limit = max(self.limit, min(grown, self.ceiling, self.cap))
        if int(self.limit) != before:
            self._learn()

    def _learn(self) -> None:
        if self.host is not None:
            _LEARNED[self.host] = (self.limit, self.threshold, self.cap)

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is passed over
                waiter.set_result(None)
                self.in_flight += 1
