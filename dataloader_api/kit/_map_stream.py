"""The batches of one map-style epoch on any ``TaskRunner``: jobs started while
the window has room, errors delivered for their batch, a timeout named by the
batch waited for. The window itself is a ``BatchWindow``: the kit's
``PythonWindow`` (a reorder buffer under a Python condition), or a backend's
own (cffi's C ring)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, Protocol

from ..contract import BatchJob, MapWork, StreamSpec
from ._epoch_state import EpochState, TaskRunner, Waiter, closed_under_the_epoch, run_job

__all__ = ["BatchWindow", "MapStream", "PythonWindow"]

Outcome = tuple[bool, Any]  # (True, batch) or (False, exception)


class BatchWindow(Protocol):
    """Where one map-style stream keeps its started batches. The consumer calls
    every method but ``store``, which the workers call (``run_job``)."""

    @property
    def closed(self) -> bool: ...

    def has_room(self) -> bool:
        """Whether one more job may start (the contract's bounded window)."""
        ...

    def start(self) -> None:
        """A job was started."""
        ...

    def store(self, position: int, outcome: Outcome) -> None:
        """A worker finished batch ``position``; nothing is kept once closed."""
        ...

    def idle(self) -> bool:
        """No batch is started and not yet taken."""
        ...

    def take(self, timeout: float | None) -> tuple[int, Outcome] | None:
        """The next batch to deliver (plan order, or completion order), waiting
        ``timeout`` seconds at most (None: no limit); None on timeout. Raises
        ``PoolClosedError`` if the pool closed meanwhile."""
        ...

    def waiting_for(self) -> int:
        """The position a timed-out ``take`` waited for."""
        ...

    def close(self) -> None: ...


class PythonWindow(EpochState):
    """The kit's window: outcomes by position under a condition, a reorder
    buffer for ordered delivery."""

    def __init__(self, pool: TaskRunner, stream: StreamSpec) -> None:
        super().__init__()
        self._size, self._in_order = stream.window, stream.in_order
        self._pool = pool
        self._results: dict[int, Outcome] = {}
        self._completed: deque[int] = deque()
        self._started = self._taken = self._next_position = 0

    def clear(self) -> None:
        self._results.clear()
        self._completed.clear()

    def has_room(self) -> bool:
        return self._started - self._taken < self._size

    def start(self) -> None:
        self._started += 1

    def store(self, position: int, outcome: Outcome) -> None:
        with self.cond:
            if not self.closed:
                self._results[position] = outcome
                self._completed.append(position)
                self.cond.notify_all()

    def idle(self) -> bool:
        return self._started == self._taken

    def take(self, timeout: float | None) -> tuple[int, Outcome] | None:
        with self.cond:
            if not Waiter(self._pool, timeout).wait_for(self.cond, self._ready):
                return None
            if self._in_order:
                position = self._next_position
                self._next_position += 1
                self._completed.remove(position)
            else:
                position = self._completed.popleft()
            self._taken += 1
            return position, self._results.pop(position)

    def _ready(self) -> bool:
        if self._in_order:
            return self._next_position in self._results
        return bool(self._completed)

    def waiting_for(self) -> int:
        return self._next_position if self._in_order else self._taken


class MapStream:
    """The batches of one map-style epoch, run as tasks of ``pool`` in ``window``
    (by default the kit's ``PythonWindow``)."""

    def __init__(
        self,
        pool: TaskRunner,
        work: MapWork,
        stream: StreamSpec,
        window: BatchWindow | None = None,
    ) -> None:
        self._pool = pool
        self._jobs: Iterator[BatchJob] | None = iter(work.jobs)
        self._fetch, self._collate = work.fetch, work.collate
        self._timeout, self._on_timeout = stream.timeout, stream.on_timeout
        self._window = window if window is not None else PythonWindow(pool, stream)
        self._closed = False  # by close(), not by the pool
        pool.track(self._window)

    def __iter__(self) -> MapStream:
        return self

    def _top_up(self) -> None:
        # Runs on the consumer's thread only: the jobs iterator is the user's sampler.
        window = self._window
        while self._jobs is not None and window.has_room():
            job = next(self._jobs, None)
            if job is None:
                self._jobs = None
                return
            window.start()
            self._pool.submit(run_job, window, job, self._fetch, self._collate)

    def __next__(self) -> Any:
        window = self._window
        if window.closed:
            if not self._closed and self._pool.closed:
                closed_under_the_epoch()
            raise StopIteration
        self._top_up()
        if self._jobs is None and window.idle():
            self.close()
            raise StopIteration
        taken = window.take(self._timeout)
        if taken is None:
            position = window.waiting_for()
            self.close()
            raise self._on_timeout(position)
        ok, value = taken[1]
        del taken  # it holds the error too: see the del below
        self._top_up()
        if ok:
            return value
        try:
            raise value
        finally:
            del value  # else error -> traceback -> this frame -> error: a cycle

    def close(self) -> None:
        self._closed = True
        self._jobs = None
        self._window.close()
