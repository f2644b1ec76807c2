"""The reference client's per-host limit: TCP's window rules, fed by reply and
connect times (no clock needed: the times are given); issue 46: a latency tail
is not a drop, a drop caps the limit, and a host's limit is kept for the process."""

from __future__ import annotations

import asyncio

from dataloader_api.io._host_limit import (
    CONNECT_STALL,
    DROPS,
    PROBE,
    STALL,
    START,
    WINDOW,
    HostLimit,
    learned,
)


def test_starts_small_and_doubles_each_round_up_to_the_ceiling():
    limit = HostLimit(64)
    assert limit.limit == START
    for _ in range(8):
        limit._measure(0.0, 0.02)
    assert limit.limit == 16  # one more per reply: a round of 8 replies doubles it
    for _ in range(100):
        limit._measure(0.0, 0.02)
    assert limit.limit == 64
    assert HostLimit(3).limit == 3


def test_a_latency_tail_never_halves_it_a_burst_of_far_replies_does_once():
    limit = HostLimit(64)
    for _ in range(24):
        limit._measure(0.0, 0.02)
    assert limit.limit == 32
    limit.in_flight = 64  # the host has all the limit allows
    for _ in range(20):  # one reply in ten a second late: a tail, not drops
        limit._measure(0.0, STALL + 0.3)
        for _ in range(9):
            limit._measure(0.0, 0.02)
    assert limit.limit == 64 and limit.stalls == 0
    for _ in range(WINDOW):
        limit._measure(0.0, 0.02)
    for _ in range(DROPS - 1):
        limit._measure(0.0, STALL + 0.3)
    assert limit.limit == 64
    limit._measure(1.0, STALL + 0.3)  # DROPS of the last WINDOW: a full accept queue
    assert (limit.limit, limit.cap, limit.stalls) == (32, 63, 1)
    for _ in range(DROPS):
        limit._measure(0.0, STALL + 0.3)  # sent before the cut: the same burst
    assert limit.limit == 32 and limit.stalls == 1


def test_slow_replies_while_the_host_has_less_than_the_limit_are_a_tail():
    limit = HostLimit(64)  # an epoch drains: only its slowest requests are left
    for _ in range(64):
        limit._measure(0.0, 0.02)
    for _ in range(WINDOW):
        limit._measure(1.0, STALL + 0.3)
    assert limit.limit == 64 and limit.stalls == 0


def test_after_a_drop_it_stays_below_the_limit_it_came_at_until_probe_replies():
    limit = HostLimit(64)
    limit._measure(0.0, 0.02)
    limit._measure(0.0, 0.02)
    limit.stalled(started=1e18)
    assert (limit.limit, limit.cap) == (5, 9)
    limit.stalled(started=0.0)  # another request of that burst: one past what it takes
    limit.stalled(started=0.0, first=False)  # and its next attempt: the same request
    assert (limit.limit, limit.cap) == (5, 8)
    for _ in range(200):
        limit._measure(1e18, 0.02)
    assert limit.limit == 8
    for _ in range(PROBE - 200 + 10):  # then one more, a round later
        limit._measure(1e18, 0.02)
    assert limit.limit == 9


def test_it_grows_only_while_connects_stay_near_the_fastest():
    limit = HostLimit(64)
    limit.connected(0.0001)
    limit.connected(0.05)  # the server falls behind: no growth
    limit._measure(0.0, 0.02)
    assert limit.limit == START
    limit.connected(0.0002)
    limit._measure(0.0, 0.02)
    assert limit.limit == START + 1


def test_a_new_limit_for_a_host_starts_where_the_last_one_left_off():
    host = ("http", "learned.test", 80)
    first = HostLimit(64, host)
    for _ in range(4):
        first._measure(0.0, 0.02)
    first.stalled(started=1e18)
    assert learned(host) == 6
    assert HostLimit(64, host).limit == 6 and HostLimit(64, host).cap == 11
    assert HostLimit(4, host).limit == 4  # within its own ceiling
    assert HostLimit(64).limit == START and learned(("http", "other.test", 80)) is None


def test_a_slow_server_is_not_a_stall():
    limit = HostLimit(64)
    for _ in range(100):
        limit._measure(0.0, 2.0)  # every reply takes 2 s: that is the server
    assert limit.limit == 64 and limit.stalls == 0


def test_a_connect_far_slower_than_the_fastest_is_a_stall():
    limit = HostLimit(64)
    assert limit.connect_deadline() is None  # nothing to compare with yet
    limit.connected(0.0001)
    assert limit.connect_deadline() == CONNECT_STALL  # never sooner than that
    limit.connected(0.05)
    limit.fastest_connect = 0.05
    assert limit.connect_deadline() == 0.4
    limit.stalled(started=1e18)
    assert limit.limit == START / 2 and limit.stalls == 1


def test_turns_past_the_limit_wait_for_a_release():
    async def main() -> None:
        limit = HostLimit(2)
        release = asyncio.Event()
        running: list[int] = []

        async def request(i: int) -> None:
            started = await limit.acquire()
            running.append(i)
            await release.wait()
            limit.release(started, None)

        tasks = [asyncio.ensure_future(request(i)) for i in range(3)]
        for _ in range(5):
            await asyncio.sleep(0)
        assert running == [0, 1] and limit.in_flight == 2  # the third waits its turn
        release.set()
        await asyncio.gather(*tasks)
        assert running == [0, 1, 2] and limit.in_flight == 0

    asyncio.run(main())


def test_a_turn_goes_to_the_request_that_waited_first_not_to_a_newcomer():
    # A later batch's request asking just as a turn frees must not take it from an
    # earlier batch's request that waits for it (the first batch would then wait
    # for the later one's replies).
    async def main() -> None:
        limit = HostLimit(1)
        order: list[str] = []
        first = await limit.acquire()

        async def waiter() -> None:
            limit.release(await limit.acquire(), None)
            order.append("waiter")

        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)  # it asked, and waits: the one turn is taken
        limit.release(first, None)
        limit.release(await limit.acquire(), None)  # asks before the waiter ran again
        order.append("newcomer")
        await task
        assert order == ["waiter", "newcomer"] and limit.in_flight == 0

    asyncio.run(main())


def test_a_cancelled_waiter_hands_its_turn_on():
    async def main() -> None:
        limit = HostLimit(1)
        first = await limit.acquire()
        cancelled = asyncio.ensure_future(limit.acquire())
        after = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        limit.release(first, None)  # the turn is handed to `cancelled`, which never runs
        cancelled.cancel()
        limit.release(await after, None)
        assert limit.in_flight == 0 and not limit._waiters

    asyncio.run(main())
