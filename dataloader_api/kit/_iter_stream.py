"""The batches of one iterable-dataset epoch on any ``TaskRunner``: one stream per
worker, each drained by one task into a bounded buffer, delivered round-robin
(PyTorch's order) or in completion order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ..contract import IterWork, StreamSpec
from ._epoch_state import EpochState, TaskRunner, Waiter, closed_under_the_epoch

__all__ = ["IterableStream"]


class _StreamState(EpochState):
    """One iterable epoch: a bounded buffer per stream, stream ids in completion order."""

    def __init__(self, num_streams: int) -> None:
        super().__init__()
        self.buffers: list[deque[tuple[bool, Any]]] = [deque() for _ in range(num_streams)]
        self.exhausted = [False] * num_streams
        self.completed: deque[int] = deque()

    def clear(self) -> None:
        for buffer in self.buffers:
            buffer.clear()
        self.completed.clear()


def _drain(
    state: _StreamState, stream_id: int, open_stream: Callable[[int], Iterator[Any]], cap: int
) -> None:
    """Advance one stream on this thread until it ends or the epoch is closed."""
    buffer = state.buffers[stream_id]
    items: Iterator[Any] | None = None
    while True:
        with state.cond:
            while not state.closed and len(buffer) >= cap:
                state.cond.wait()
            if state.closed:
                return
        try:
            if items is None:
                items = open_stream(stream_id)
            result: tuple[bool, Any] = (True, next(items))
        except StopIteration:
            result = (False, None)
        except BaseException as error:
            result = (False, error)
        with state.cond:
            if state.closed:
                return
            ended = not result[0]
            if result[1] is not None or not ended:
                buffer.append(result)
                state.completed.append(stream_id)
            if ended:
                state.exhausted[stream_id] = True
            state.cond.notify_all()
        del result  # see run_job: no error -> traceback -> frame cycle
        if ended:
            return


class IterableStream:
    """The batches of one iterable-dataset epoch: one stream per worker."""

    def __init__(self, pool: TaskRunner, work: IterWork, stream: StreamSpec) -> None:
        num_streams = work.num_streams
        self._state = _StreamState(num_streams)
        self._pool, self._closed = pool, False  # closed: by close(), not by the pool
        pool.track(self._state)
        self._in_order = stream.in_order
        self._on_timeout = stream.on_timeout
        self._waiter = Waiter(pool, stream.timeout)
        self._active = list(range(num_streams))
        self._turn = 0
        self._delivered = 0
        cap = max(1, stream.window // num_streams)
        for stream_id in range(num_streams):
            pool.submit(_drain, self._state, stream_id, work.open_stream, cap)

    def __iter__(self) -> IterableStream:
        return self

    def __next__(self) -> Any:
        state = self._state
        with state.cond:
            ok, value = self._take_in_order() if self._in_order else self._take_any()
            self._delivered += 1
            state.cond.notify_all()  # a drain task may wait for room in its buffer
        if ok:
            return value
        try:
            raise value
        finally:
            del value  # else error -> traceback -> this frame -> error: a cycle

    def _end_if_done(self) -> None:
        if self._state.closed and not self._closed and self._pool.closed:
            closed_under_the_epoch(self._state.cond)
        if self._state.closed or not self._active:
            self._state.closed = True
            raise StopIteration

    def _wait(self, ready: Callable[[], bool]) -> None:
        state = self._state
        if not self._waiter.wait_for(state.cond, ready):
            state.close_locked()
            raise self._on_timeout(self._delivered)

    def _take_in_order(self) -> tuple[bool, Any]:
        """Round-robin over the streams still running, skipping exhausted ones."""
        state = self._state
        while True:
            self._end_if_done()
            self._turn %= len(self._active)
            stream_id = self._active[self._turn]
            buffer = state.buffers[stream_id]

            def ready(buffer: deque[tuple[bool, Any]] = buffer, stream_id: int = stream_id) -> bool:
                return bool(buffer) or state.exhausted[stream_id]

            self._wait(ready)
            if buffer:
                state.completed.remove(stream_id)
                self._turn += 1
                return buffer.popleft()
            del self._active[self._turn]  # the turn now points at the next stream

    def _take_any(self) -> tuple[bool, Any]:
        """Whatever batch finished first."""
        state = self._state
        self._end_if_done()

        def ready() -> bool:
            return bool(state.completed) or all(state.exhausted[s] for s in self._active)

        self._wait(ready)
        if not state.completed:
            self._active.clear()
            self._end_if_done()
        return state.buffers[state.completed.popleft()].popleft()

    def close(self) -> None:
        self._closed = True
        self._state.close()
