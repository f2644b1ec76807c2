"""Async datasets: coroutine items awaited on an event loop the loader owns.

A map-style dataset is async when it defines ``async def __agetitem__(self, i)``
or an ``async def __getitem__``. The loader then runs one event loop on a
daemon thread of its own (uvloop's when installed and ``event_loop="auto"``).
When a batch enters the window (the backend asks the epoch plan for its next
job) the coroutines of all its items are started on that loop. The worker
thread that fetches the batch only waits for them, so up to ``window *
batch_size`` items are in flight at once on a few threads, and at most
``max_concurrency`` when it is set.

Errors follow the sync rules: the batch raises the exception of its first
failing item (in index order), as the same object. Closing the epoch (or
the loader) cancels the coroutines still running and waits, up to
``CANCEL_WAIT_SECONDS``, until their cancellation has completed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from ..contract import process_id

__all__ = ["AsyncEpoch", "AsyncRunner"]

# How long closing an epoch waits for its cancelled coroutines to finish.
CANCEL_WAIT_SECONDS = 2.0


def _new_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind in ("auto", "uvloop"):
        try:
            uvloop = importlib.import_module("uvloop")  # optional: no stubs needed
        except ImportError:
            if kind == "uvloop":
                raise ValueError(
                    "event_loop='uvloop' needs uvloop, which is not installed; "
                    "pip install uvloop, or use event_loop='auto' or 'asyncio'"
                ) from None
        else:
            return uvloop.new_event_loop()  # type: ignore[no-any-return]
    return asyncio.new_event_loop()


class AsyncRunner:
    """One event loop on its own daemon thread, for the async items of one loader."""

    def __init__(self, kind: str, max_concurrency: int | None) -> None:
        self._loop = _new_loop(kind)
        self.loop_type = f"{type(self._loop).__module__}.{type(self._loop).__qualname__}"
        self._limit = asyncio.Semaphore(max_concurrency) if max_concurrency is not None else None
        self.closed = False
        # A forked child inherits the loop but not its thread: nothing there runs it.
        self.pid = process_id()
        ready = threading.Event()
        # The thread must not hold the runner: it closes when its users drop it.
        self._thread = threading.Thread(
            target=_run_loop, args=(self._loop, ready), name="dataloader-event-loop", daemon=True
        )
        self._thread.start()
        ready.wait()
        # Async clean-ups (``aclose`` of the datasets run here), awaited before the loop stops.
        self._closers: list[Callable[[], Coroutine[Any, Any, Any]]] = []
        self._finalizer = weakref.finalize(
            self, _stop_loop, self._loop, self._thread, self.pid, self._closers
        )
        #: items running right now, and the most seen at once (for tests and stats)
        self.in_flight = 0
        self.peak_in_flight = 0

    def add_closer(self, aclose: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Await ``aclose()`` on this loop before it stops (once per closer)."""
        if all(aclose != known for known in self._closers):
            self._closers.append(aclose)

    def submit(
        self, getitem: Callable[[Any], Coroutine[Any, Any, Any]], indices: Any, batched: bool
    ) -> Started:
        """Start the items of one batch (or the one item) now."""
        if self.closed:
            raise RuntimeError("this loader's event loop is closed")
        if self.pid != process_id():
            raise RuntimeError(
                f"this event loop runs on a thread of process {self.pid}, and a forked "
                "child has none: start a new epoch in the child"
            )
        started = Started(indices)
        coroutine = self._batch(getitem, indices) if batched else self._item(getitem, indices)
        started.future = asyncio.run_coroutine_threadsafe(started.track(coroutine), self._loop)
        return started

    async def _item(self, getitem: Callable[[Any], Coroutine[Any, Any, Any]], index: Any) -> Any:
        if self._limit is None:
            return await self._counted(getitem(index))
        async with self._limit:
            return await self._counted(getitem(index))

    async def _counted(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await coroutine
        finally:
            self.in_flight -= 1

    async def _batch(
        self, getitem: Callable[[Any], Coroutine[Any, Any, Any]], indices: list[Any]
    ) -> list[Any]:
        tasks = [asyncio.ensure_future(self._item(getitem, index)) for index in indices]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = _first_failed(tasks)
            if failed is not None:
                # The batch raises its first failure in index order, as the rust
                # backend does: the items before this one may still fail too.
                earlier = [t for t in tasks[: tasks.index(failed)] if not t.done()]
                if earlier:
                    await asyncio.wait(earlier)
                    failed = _first_failed(tasks)
        except asyncio.CancelledError:
            await _cancel_and_wait(tasks)
            raise
        if failed is not None:
            await _cancel_and_wait(tasks)
            error = failed.exception()
            assert error is not None
            try:
                raise error
            finally:
                del error, failed  # no frame -> traceback -> error cycle
        return [task.result() for task in tasks]

    def cancel(self, batches: Iterable[Started]) -> None:
        """Cancel these batches and wait (bounded) until their cancellation completed."""
        pending = [b for b in batches if not b.future.done()]
        if not pending or self._loop.is_closed() or self.pid != process_id():
            return
        tasks = [b.task for b in pending if b.task is not None]
        for batch in pending:
            if batch.task is None:
                batch.future.cancel()  # not started yet: it never starts
        # Started ones are cancelled once, on the loop: a second cancel would cut
        # short their own wait for their items' cancellation.
        try:
            done = asyncio.run_coroutine_threadsafe(_cancel_and_wait(tasks), self._loop)
        except RuntimeError:
            return  # the loop stopped meanwhile
        if threading.current_thread() is not self._thread:
            # A coroutine that ignores cancellation is left running.
            with contextlib.suppress(concurrent.futures.TimeoutError):
                done.result(CANCEL_WAIT_SECONDS)

    def close_idle(self) -> None:
        """Run the datasets' ``aclose`` (their idle connections close), keeping the
        loop: an epoch ended, or was left by a ``break`` (issue 46)."""
        if self._loop.is_closed() or self.pid != process_id() or not self._closers:
            return
        try:
            done = asyncio.run_coroutine_threadsafe(_run_closers(self._closers), self._loop)
        except RuntimeError:
            return  # the loop stopped meanwhile
        if threading.current_thread() is not self._thread:
            with contextlib.suppress(concurrent.futures.TimeoutError):
                done.result(CANCEL_WAIT_SECONDS)

    def close(self) -> None:
        """Cancel what still runs, wait for it (bounded), stop the loop and its thread."""
        if self.closed:
            return
        self.closed = True
        self._finalizer()


def _run_loop(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    try:
        loop.run_forever()
    finally:
        loop.close()


def _stop_loop(
    loop: asyncio.AbstractEventLoop,
    thread: threading.Thread,
    pid: int,
    closers: list[Callable[[], Coroutine[Any, Any, Any]]],
) -> None:
    if loop.is_closed() or pid != process_id():
        return  # in a forked child the loop's thread, which would stop it, is not there
    on_loop = threading.current_thread() is thread
    try:
        done = asyncio.run_coroutine_threadsafe(_cancel_all(closers), loop)
        if not on_loop:
            done.result(CANCEL_WAIT_SECONDS)
    except (RuntimeError, concurrent.futures.TimeoutError):
        pass  # the loop already stopped, or a coroutine ignores cancellation
    try:
        loop.call_soon_threadsafe(loop.stop)
    except RuntimeError:
        return  # closed meanwhile
    if not on_loop:
        thread.join(CANCEL_WAIT_SECONDS)


class Started:
    """One batch (or item) started on the loop: its result, its task once it runs,
    and its ``indices`` (``BatchJob.started``: what a worker's fetch receives)."""

    __slots__ = ("future", "indices", "task")

    def __init__(self, indices: Any = None) -> None:
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.task: asyncio.Task[Any] | None = None
        self.indices = indices

    async def track(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        self.task = asyncio.current_task()
        return await coroutine

    def result(self) -> Any:
        """On a worker thread: wait for the batch."""
        return self.future.result()


def _first_failed(tasks: list[asyncio.Task[Any]]) -> asyncio.Task[Any] | None:
    """The first task, in index order, that ended with an exception."""
    return next(
        (t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None),
        None,
    )


async def _cancel_and_wait(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished; cancelled again meanwhile,
    go on waiting, then raise that cancellation."""
    for task in tasks:
        task.cancel()
    cancelled_again = False
    while True:
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
            break
        except asyncio.CancelledError:
            cancelled_again = True
            if all(task.done() for task in tasks):
                break
    if cancelled_again:
        raise asyncio.CancelledError


async def _cancel_all(closers: list[Callable[[], Coroutine[Any, Any, Any]]]) -> None:
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    await _cancel_and_wait(tasks)
    await _run_closers(closers)


async def _run_closers(closers: list[Callable[[], Coroutine[Any, Any, Any]]]) -> None:
    for aclose in list(closers):
        with contextlib.suppress(Exception):  # a failing clean-up must not block the others
            await aclose()


class AsyncEpoch:
    """The async side of one epoch: starts each batch as the backend takes its job."""

    def __init__(
        self,
        runner: AsyncRunner,
        getitem: Callable[[Any], Coroutine[Any, Any, Any]],
        batched: bool,
    ) -> None:
        self._runner = runner
        self._getitem = getitem
        self._batched = batched
        self._running: set[Started] = set()
        self._lock = threading.Lock()

    def start(self, indices: Any) -> Started:
        started = self._runner.submit(self._getitem, indices, self._batched)
        with self._lock:
            self._running.add(started)
        started.future.add_done_callback(lambda _: self._forget(started))
        return started

    def _forget(self, started: Started) -> None:
        with self._lock:
            self._running.discard(started)

    @staticmethod
    def fetch(started: Started) -> Any:
        """On a worker thread: wait for a batch ``start`` began as its job was taken."""
        return started.result()

    def close(self) -> None:
        with self._lock:
            running = list(self._running)
        self._runner.cancel(running)
        self._runner.close_idle()
