"""The loopback server's event loop: its sleeps end on readiness as epoll's do."""

from __future__ import annotations

import select
import selectors
import socket

import pytest

from dataloader_api.io import loopback


@pytest.mark.skipif(not hasattr(selectors, "EpollSelector"), reason="epoll is Linux's")
@pytest.mark.parametrize("select_works", [True, False], ids=["select", "past-FD_SETSIZE"])
def test_a_sleep_ends_when_a_registered_socket_is_ready(monkeypatch, select_works):
    if not select_works:  # a descriptor past select()'s limit: epoll sleeps by itself

        def too_high(*args: object) -> None:
            raise ValueError("filedescriptor out of range in select()")

        monkeypatch.setattr(select, "select", too_high)
    selector = loopback._MicrosecondEpoll()
    left, right = socket.socketpair()
    try:
        selector.register(left, selectors.EVENT_READ, "left")
        assert selector.select(0.0002) == []  # nothing ready: the sleep just ends
        right.send(b"x")
        ready = selector.select(30)  # ready: returns at once, not after 30 s
        assert [(key.data, events) for key, events in ready] == [("left", selectors.EVENT_READ)]
    finally:
        selector.close()
        left.close()
        right.close()


def test_the_server_answers_with_latency_on_its_own_loop():
    from dataloader_api.io import HttpDataset

    with loopback.LoopbackServer({"/a": b"abc"}, latency=0.001) as server:
        assert HttpDataset([server.url + "/a"] * 3)[2] == b"abc"
        assert server.requests["/a"] == 1


class _SeenBefore(set):
    """The ports used before: the first ``times`` the kernel offers are taken."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times, self.offered = times, []

    def __contains__(self, port: object) -> bool:
        self.offered.append(port)
        return len(self.offered) <= self.times


def test_a_server_never_listens_on_a_port_an_earlier_one_had(monkeypatch):
    # Clients keep what they learn of a host by its port (io/_host_limit.py): a
    # reused port carried one test's per-host limit into the next.
    seen = _SeenBefore(times=3)
    monkeypatch.setattr(loopback, "_PORTS_USED", seen)
    with loopback.LoopbackServer({"/a": b"x"}) as server:
        port = int(server.url.rsplit(":", 1)[1])
        assert seen.offered[-1] == port and len(seen.offered) == 4
        assert len(set(seen.offered)) == 4  # the ports refused stayed bound meanwhile
        assert set.__contains__(seen, port)
    for refused in seen.offered[:3]:  # and were let go
        socket.create_server(("127.0.0.1", refused)).close()
