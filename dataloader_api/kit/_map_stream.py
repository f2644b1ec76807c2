"""The batches of one map-style epoch on any ``TaskRunner``: a window of started
jobs, a reorder buffer for ordered delivery, errors delivered for their batch."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from ..contract import BatchJob, MapWork, StreamSpec
from ._epoch_state import EpochState, TaskRunner, Waiter, run_job

__all__ = ["MapStream"]


class _MapState(EpochState):
    """One map-style epoch: results by position, positions in completion order."""

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[int, tuple[bool, Any]] = {}
        self.completed: deque[int] = deque()

    def clear(self) -> None:
        self.results.clear()
        self.completed.clear()

    def store(self, position: int, outcome: tuple[bool, Any]) -> None:
        with self.cond:
            if not self.closed:
                self.results[position] = outcome
                self.completed.append(position)
                self.cond.notify_all()


class MapStream:
    """The batches of one map-style epoch, run as tasks of ``pool``."""

    def __init__(self, pool: TaskRunner, work: MapWork, stream: StreamSpec) -> None:
        self._pool = pool
        self._jobs: Iterator[BatchJob] | None = iter(work.jobs)
        self._fetch = work.fetch
        self._collate = work.collate
        self._window = stream.window
        self._in_order = stream.in_order
        self._on_timeout = stream.on_timeout
        self._waiter = Waiter(pool, stream.timeout)
        self._state = _MapState()
        pool.track(self._state)
        self._started = 0
        self._consumed = 0
        self._next_position = 0

    def __iter__(self) -> MapStream:
        return self

    def _top_up(self) -> None:
        # Runs on the consumer's thread only: the jobs iterator is the user's sampler.
        while self._jobs is not None and self._started - self._consumed < self._window:
            job = next(self._jobs, None)
            if job is None:
                self._jobs = None
                return
            self._started += 1
            self._pool.submit(run_job, self._state, job, self._fetch, self._collate)

    def __next__(self) -> Any:
        state = self._state
        if state.closed:
            raise StopIteration
        self._top_up()
        if self._started == self._consumed:
            self.close()
            raise StopIteration
        with state.cond:
            if not self._waiter.wait_for(state.cond, self._ready):
                position = self._next_position if self._in_order else self._consumed
                self._jobs = None
                state.close_locked()
                raise self._on_timeout(position)
            if self._in_order:
                position = self._next_position
                self._next_position += 1
                state.completed.remove(position)
            else:
                position = state.completed.popleft()
            ok, value = state.results.pop(position)
            self._consumed += 1
        self._top_up()
        if ok:
            return value
        try:
            raise value
        finally:
            del value  # else error -> traceback -> this frame -> error: a cycle

    def _ready(self) -> bool:
        if self._in_order:
            return self._next_position in self._state.results
        return bool(self._state.completed)

    def close(self) -> None:
        self._jobs = None
        self._state.close()
