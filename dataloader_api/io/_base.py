"""What the HTTP and object-store datasets share: async items on the loader's
event loop (one client, with its connection pool, per loop), a sync
``__getitem__`` for use outside a loader, and plain-data pickling."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import weakref
from collections.abc import Coroutine
from typing import Any

from .._datasets import Dataset
from ..contract import process_id
from ._http_client import Counters, HttpClient
from ._locations import Locations, item_index
from ._native import NativeReads
from ._progressive import ProgressiveBytes
from ._proxy_env import read_proxy_settings
from ._retry import RetryPolicy

__all__ = ["AsyncReadDataset", "check_options", "run_sync", "start_sync"]


def check_options(
    owner: str,
    timeout: Any,
    max_retries: Any,
    retry: Any,
    max_bytes: Any,
    max_connections: Any,
) -> RetryPolicy:
    """The checked options of a network dataset, and its retry policy."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{owner}: timeout must be a number of seconds > 0, got {timeout!r}")
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
    ):
        raise ValueError(f"{owner}: max_bytes must be an int >= 0 or None, got {max_bytes!r}")
    if (
        isinstance(max_connections, bool)
        or not isinstance(max_connections, int)
        or max_connections < 1
    ):
        raise ValueError(f"{owner}: max_connections must be an int >= 1, got {max_connections!r}")
    if retry is None:
        return RetryPolicy() if max_retries is None else RetryPolicy(max_retries=max_retries)
    if not isinstance(retry, RetryPolicy):
        raise TypeError(f"{owner}: retry must be a RetryPolicy or None, got {retry!r}")
    if max_retries is not None:
        raise TypeError(f"{owner}: pass max_retries= or retry=, not both")
    return retry


class AsyncReadDataset(NativeReads, Dataset[bytes]):
    """A map-style dataset whose item ``i`` is the bytes read from location ``i``."""

    def __init__(
        self,
        *,
        timeout: float,
        max_retries: int | None,
        retry: RetryPolicy | None,
        max_bytes: int | None,
        max_connections: int,
    ) -> None:
        """Checks the options every network dataset takes; the subclass then sets
        ``locations`` (none until it does)."""
        owner = type(self).__name__
        policy = check_options(owner, timeout, max_retries, retry, max_bytes, max_connections)
        self.locations = Locations([], owner=owner)
        self.timeout = float(timeout)
        self.retry = policy
        self.max_bytes = max_bytes
        self.max_connections = max_connections
        #: requests, retries, connections opened and bytes read so far
        self.counters = Counters()
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, HttpClient]] = {}

    def __len__(self) -> int:
        return len(self.locations)

    def client(self) -> HttpClient:
        """The client of the running event loop (made on its first use there)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:
            for key, (old, _) in list(self._clients.items()):
                if old.is_closed():
                    del self._clients[key]
            client = HttpClient(
                timeout=self.timeout,
                retry=self.retry,
                max_bytes=self.max_bytes,
                max_connections=self.max_connections,
                counters=self.counters,
            )
            entry = self._clients[id(loop)] = (loop, client)
            if "_finalizer" not in self.__dict__:
                self._finalizer = weakref.finalize(self, _close_clients, self._clients)
        return entry[1]

    async def aclose(self) -> None:
        """Close the idle connections of the running loop (the loader awaits this
        before it stops its event loop)."""
        entry = self._clients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            entry[1].close()

    async def __agetitem__(self, index: Any) -> bytes:
        position = item_index(index, len(self.locations), type(self).__name__)
        return await self.read(index, self.locations.of(position))

    async def read(  # pragma: no cover - abstract
        self, index: Any, location: str, sink: ProgressiveBytes | None = None
    ) -> bytes:
        raise NotImplementedError

    def start_streaming(self, index: int, sink: ProgressiveBytes) -> None:
        """Read item ``index`` into ``sink`` as it arrives, on this process's private
        event loop (without waiting: readers wait on the sink). A failure for good
        goes to the sink's readers."""
        position = item_index(index, len(self.locations), type(self).__name__)
        reading = self.read(index, self.locations.of(position), sink)

        def ended(future: concurrent.futures.Future[Any]) -> None:
            error = None if future.cancelled() else future.exception()
            if future.cancelled() or error is not None or not sink.done:
                sink.fail(error or RuntimeError(f"item {index!r}: the read was cancelled"))

        start_sync(reading).add_done_callback(ended)

    def network_spec(self) -> dict[str, Any]:
        """The options every network reader takes, as plain data."""
        # The rust backend's client reads the proxies from the environment too: what
        # the reference would refuse (or warn of) is refused before it starts.
        read_proxy_settings()
        return {
            "timeout": self.timeout,
            "retry": self.retry.to_dict(),
            "max_bytes": self.max_bytes,
            "max_connections": self.max_connections,
        }

    def __getitem__(self, index: Any) -> bytes:
        """One item outside a loader (or in torch's DataLoader): read on a private loop."""
        item: bytes = run_sync(self.__agetitem__(index))
        return item

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_clients"] = {}
        state.pop("_finalizer", None)
        state.pop("_readers", None)
        state["counters"] = Counters()
        return state


def _close_clients(clients: dict[int, tuple[asyncio.AbstractEventLoop, HttpClient]]) -> None:
    """A dataset is gone: its idle connections close, each on its own loop."""
    for loop, client in clients.values():
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(client.close)


_sync_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_sync_lock = threading.Lock()


def run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coroutine`` on this process's private event loop thread and wait for it."""
    return start_sync(coroutine).result()


def start_sync(coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
    """Start ``coroutine`` on this process's private event loop thread."""
    global _sync_loop
    with _sync_lock:
        if _sync_loop is None or _sync_loop[0] != process_id():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="dataloader-io-sync", daemon=True
            ).start()
            _sync_loop = (process_id(), loop)
        loop = _sync_loop[1]
    return asyncio.run_coroutine_threadsafe(coroutine, loop)
