"""Backends that each break one promise of the contract, on purpose.

They wrap the kit's reference pool (``dataloader_api.kit.ThreadPool``, what the
threads backend runs) and change one thing, so the conformance suite
can prove that it catches that one thing (conformance/check_broken_backends.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from dataloader_api.contract import (
    BatchJob,
    BatchStream,
    IndexBatches,
    IterWork,
    MapWork,
    PoolClosedError,
    PoolSpec,
    StreamSpec,
)
from dataloader_api.kit import ThreadPool, _exit
from dataloader_api.kit import _thread_pool as thread_pool


class _Wrapped:
    """Delegates to the kit's reference pool; subclasses override one step."""

    def __init__(self, spec: PoolSpec) -> None:
        self.inner = ThreadPool(spec)

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        return self.inner.map_batches(work, stream)

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> BatchStream:
        return self.inner.stream_batches(work, stream)

    def close(self) -> None:
        self.inner.close()

    def join(self, timeout: float | None = None) -> bool:
        return self.inner.join(timeout)


class _Stream:
    """A BatchStream made from a generator over an inner stream."""

    def __init__(self, inner: BatchStream, reorder: Callable[[Iterator[Any]], Iterator[Any]]):
        self.inner = inner
        self.items = reorder(inner)

    def __iter__(self) -> _Stream:
        return self

    def __next__(self) -> Any:
        return next(self.items)

    def close(self) -> None:
        self.inner.close()


def _swap_pairs(batches: Iterator[Any]) -> Iterator[Any]:
    for first in batches:
        second = next(batches, None)
        if second is not None:
            yield second
        yield first


def _first_twice(batches: Iterator[Any]) -> Iterator[Any]:
    for position, batch in enumerate(batches):
        yield batch
        if position == 0:
            yield batch


class _OrderPool(_Wrapped):
    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        return _Stream(super().map_batches(work, stream), _swap_pairs)


class _DuplicatePool(_Wrapped):
    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        return _Stream(super().map_batches(work, stream), _first_twice)


class _WindowPool(_Wrapped):
    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        return super().map_batches(work, replace(stream, window=stream.window * 4))


class _ErrorsPool(_Wrapped):
    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        fetch = work.fetch

        def lossy_fetch(indices: Any) -> Any:
            try:
                return fetch(indices)
            except Exception:
                raise RuntimeError("a worker failed") from None

        return super().map_batches(replace(work, fetch=lossy_fetch), stream)


class _TimeoutPool(_Wrapped):
    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        return super().map_batches(work, replace(stream, timeout=None))


class _ShutdownPool(_Wrapped):
    """close() neither stops the epoch nor the threads."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        inner = super().map_batches(work, stream)
        inner.close = lambda: None  # type: ignore[method-assign]
        return _Keepalive(inner)

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> BatchStream:
        # The common API stops a map-style batch between its items once the epoch
        # closes, whatever the backend does; an iterable stream is the backend's.
        inner = super().stream_batches(work, stream)
        inner.close = lambda: None  # type: ignore[method-assign]
        return _Keepalive(inner)

    def close(self) -> None:
        pass


class _Keepalive:
    """Keeps loading in the background until the plan is exhausted."""

    def __init__(self, stream: BatchStream) -> None:
        self.stream = stream
        self.drainer = threading.Thread(target=self._drain_later, daemon=True)
        self.stop = threading.Event()

    def _drain_later(self) -> None:
        # Errors are the batches': nobody consumes them any more.
        with contextlib.suppress(Exception):
            for _ in self.stream:
                pass

    def __iter__(self) -> _Keepalive:
        return self

    def __next__(self) -> Any:
        return next(self.stream)

    def close(self) -> None:
        if not self.drainer.is_alive():
            self.drainer.start()


class _AttachPool(_Wrapped):
    """Runs every fetch on a brand-new thread: a thread state per batch."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        fetch = work.fetch

        def fetch_on_new_thread(indices: Any) -> Any:
            box: list[Any] = []

            def run() -> None:
                try:
                    box.append((True, fetch(indices)))
                except BaseException as error:  # re-raised on the pool's thread
                    box.append((False, error))

            thread = threading.Thread(target=run)
            thread.start()
            thread.join()
            ok, value = box[0]
            if not ok:
                raise value
            return value

        return super().map_batches(replace(work, fetch=fetch_on_new_thread), stream)


class _IterablePool(_Wrapped):
    """Opens every stream as worker 0: each worker yields worker 0's shard."""

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> BatchStream:
        open_stream = work.open_stream
        return super().stream_batches(replace(work, open_stream=lambda _: open_stream(0)), stream)


class _RotatedPool(_Wrapped):
    """Starts the round-robin at the second stream instead of the first."""

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> BatchStream:
        open_stream, count = work.open_stream, work.num_streams
        rotated = replace(work, open_stream=lambda i: open_stream((i + 1) % count))
        return super().stream_batches(rotated, stream)


class _SerialPool(_Wrapped):
    """One thread, whatever ``num_threads`` says: batches are fetched one at a time."""

    def __init__(self, spec: PoolSpec) -> None:
        self.inner = ThreadPool(dataclasses.replace(spec, num_threads=1))


class _InitPool(_Wrapped):
    """Swallows a ``thread_init`` error: the thread runs jobs uninitialised."""

    def __init__(self, spec: PoolSpec) -> None:
        def forgiving_init(worker_id: int) -> None:
            with contextlib.suppress(Exception):
                spec.thread_init(worker_id)

        self.inner = ThreadPool(dataclasses.replace(spec, thread_init=forgiving_init))


class _StallPool(_Wrapped):
    """close() waits for the threads busy in user code: break stalls behind a slow item."""

    def close(self) -> None:
        self.inner.close()
        self.inner.join()


class _ExitPool(_Wrapped):
    """Left out of the exit hook: interpreter exit neither closes it nor lets its
    running jobs return, so a job inside native code is ended by finalization."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        _exit._live_pools.discard(self.inner)

    def close(self) -> None:
        self.inner.close()
        _exit._closed_pools.remove(self.inner)


class _StackPool(_Wrapped):
    """Starts its threads with a 512 KiB stack, whatever ``PoolSpec.stack_size``
    says: less than Python's threads get."""

    def __init__(self, spec: PoolSpec) -> None:
        original = thread_pool.start_threads
        thread_pool.start_threads = lambda threads, _: original(threads, 512 * 1024)
        try:
            super().__init__(spec)
        finally:
            thread_pool.start_threads = original


class _ThreadEndPool(_Wrapped):
    """Runs every fetch on a new C thread whose Python state ctypes makes with
    PyGILState_Ensure and ends with PyGILState_Release: the release clears the
    state at counter 0, so a freed value that takes the GIL again deletes the
    state under the clear (CPython before gh-119585's fix: 3.11, 3.12 < 3.12.5)."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        fetch = work.fetch

        def fetch_on_a_c_thread(indices: Any) -> Any:
            import ctypes

            libc = ctypes.CDLL(None)
            box: list[Any] = []

            def body(_: Any) -> None:
                try:
                    box.append((True, fetch(indices)))
                except BaseException as error:  # re-raised on the pool's thread
                    box.append((False, error))

            start = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(body)
            thread = ctypes.c_ulong()
            if libc.pthread_create(ctypes.byref(thread), None, start, None) != 0:
                raise RuntimeError("pthread_create failed")
            libc.pthread_join(thread, None)
            ok, value = box[0]
            if not ok:
                raise value
            return value

        return super().map_batches(replace(work, fetch=fetch_on_a_c_thread), stream)


class _ImagesPool(_Wrapped):
    """Runs MapWork.images itself, but leaves each job's first item untransformed."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        images = work.images
        if images is None:
            return super().map_batches(work, stream)

        def fetch(indices: Any) -> Any:
            items = images.fetch(indices)
            return [
                item if position == 0 else images.apply(index, item)
                for position, (index, item) in enumerate(zip(indices, items, strict=True))
            ]

        return super().map_batches(replace(work, fetch=fetch), stream)


class _SwallowingReader:
    """``open_reader`` for files that reads them but returns ``b""`` for a file it
    cannot read, instead of the failure record the dataset would raise."""

    def __init__(self, spec: dict[str, Any], concurrency: int | None) -> None:
        if spec["kind"] != "files":
            raise ValueError(f"broken-reader reads files only, not {spec['kind']!r}")

    def start(self, locations: list[str], cancel: object) -> Any:
        out = []
        for path in locations:
            try:
                with open(path, "rb") as file:
                    out.append(file.read())
            except OSError:
                out.append(b"")
        return types.SimpleNamespace(wait=lambda: out)

    def new_cancel(self) -> Any:
        return types.SimpleNamespace(cancel=lambda: None)

    def counters(self) -> tuple[int, int, int]:
        return (0, 0, 0)


class _PlanPool(_Wrapped):
    """Cuts a plan given as data chunk by chunk: where two chunks meet inside a
    batch, it delivers two short batches instead."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        if type(work.jobs) is IndexBatches:
            work = replace(work, jobs=_per_chunk(work.jobs))
        return self.inner.map_batches(work, stream)


class _ClosedPool(_Wrapped):
    """Raises a bare RuntimeError for a stream started on a closed pool, not the
    contract's type; a stream read after its pool closed ends early, quietly."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        try:
            return _Stream(self.inner.map_batches(work, stream), _quiet_end)
        except RuntimeError as error:
            raise RuntimeError(str(error)) from None

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> BatchStream:
        try:
            return _Stream(self.inner.stream_batches(work, stream), _quiet_end)
        except RuntimeError as error:
            raise RuntimeError(str(error)) from None


def _quiet_end(batches: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from batches
    except PoolClosedError:
        return


def _per_chunk(plan: IndexBatches) -> Iterator[BatchJob]:
    position, size = 0, plan.batch_size
    while (chunk := plan.next_chunk()) is not None:
        indices = [int(i) for i in chunk]
        for start in range(0, len(indices), size):
            if len(indices) - start == size or not plan.drop_last:
                yield BatchJob(position, indices[start : start + size])
                position += 1


def _backend(name: str, pool: type[_Wrapped], **extra: Any) -> type:
    def create_pool(self: object, spec: PoolSpec) -> _Wrapped:
        return pool(spec)

    return type(
        name,
        (),
        {"name": name, "supports_items_in_parallel": False, "create_pool": create_pool, **extra},
    )


BrokenOrder = _backend("broken-order", _OrderPool)
BrokenDuplicate = _backend("broken-duplicate", _DuplicatePool)
BrokenWindow = _backend("broken-window", _WindowPool)
BrokenErrors = _backend("broken-errors", _ErrorsPool)
BrokenTimeout = _backend("broken-timeout", _TimeoutPool)
BrokenShutdown = _backend("broken-shutdown", _ShutdownPool)
BrokenAttach = _backend("broken-attach", _AttachPool)
BrokenIterable = _backend("broken-iterable", _IterablePool)
BrokenRotation = _backend("broken-rotation", _RotatedPool)
BrokenSerial = _backend("broken-serial", _SerialPool)
BrokenInit = _backend("broken-init", _InitPool)
BrokenStall = _backend("broken-stall", _StallPool)
BrokenExit = _backend("broken-exit", _ExitPool)
BrokenImages = _backend("broken-images", _ImagesPool)
BrokenStack = _backend("broken-stack", _StackPool)
BrokenThreadEnd = _backend("broken-thread-end", _ThreadEndPool)
BrokenPlan = _backend("broken-plan", _PlanPool)
BrokenClosed = _backend("broken-closed", _ClosedPool)
BrokenReader = _backend(
    "broken-reader", _Wrapped, open_reader=lambda self, spec, n: _SwallowingReader(spec, n)
)
