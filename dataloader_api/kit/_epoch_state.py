"""What the Python streams share: the task runner they need from a pool, the state
of one epoch under one condition, and the consumer's wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from ..contract import BatchJob, PoolClosedError
from ._exit import wait_out_interpreter_exit

__all__ = [
    "Closable",
    "JobResults",
    "PoolClosedError",
    "TaskRunner",
    "closed_under_the_epoch",
    "run_job",
]


class JobResults(Protocol):
    """Where ``run_job`` stores a map-style job's outcome for the consumer."""

    closed: bool

    def store(self, position: int, outcome: tuple[bool, Any]) -> None:
        """Keep ``(True, batch)`` or ``(False, exception)`` for batch ``position``."""
        ...


def run_job(
    results: JobResults,
    job: BatchJob,
    fetch: Callable[[Any], Any],
    collate: Callable[[Any], Any],
) -> None:
    """One map-style job on a worker thread: ``collate(fetch(argument))`` or its
    exception, stored for the consumer; nothing once the epoch is closed."""
    if results.closed:
        return
    # ``job.fetch_argument``, read here: the property is a Python call per batch.
    argument = job.indices if job.started is None else job.started
    try:
        outcome: tuple[bool, Any] = (True, collate(fetch(argument)))
    except BaseException as error:
        outcome = (False, error)
    results.store(job.position, outcome)
    # The traceback keeps this frame: a local holding the error would make a
    # cycle that only the garbage collector frees, keeping the epoch alive.
    del outcome


class Closable(Protocol):
    """An epoch a pool closes with itself (a stream's window or state)."""

    def close(self) -> None: ...


class TaskRunner(Protocol):
    """What ``MapStream`` and ``IterableStream`` need from a pool: any pool whose
    threads run Python callables (Python threads, C threads through cffi, ...)."""

    @property
    def closed(self) -> bool: ...

    def track(self, epoch: Closable) -> None:
        """Close ``epoch`` when the pool closes; raise ``PoolClosedError`` if it is closed."""
        ...

    def submit(self, function: Callable[..., None], *args: Any) -> None:
        """Run ``function(*args)`` on one of the pool's threads, once."""
        ...


def closed_under_the_epoch(held: threading.Condition | None = None) -> NoReturn:
    """The pool closed while an epoch ran on it (not the stream's own close): a
    thread other than the main one parks once interpreter exit began (the exit
    hook closed it), else ``PoolClosedError``, never an epoch cut short quietly."""
    wait_out_interpreter_exit(held)
    raise PoolClosedError("the worker pool was closed while this epoch was running")


class Waiter:
    """The consumer's wait for a condition, honouring the timeout and a closed pool."""

    def __init__(self, pool: TaskRunner, timeout: float | None) -> None:
        self._pool = pool
        self._timeout = timeout

    def wait_for(self, cond: threading.Condition, ready: Callable[[], bool]) -> bool:
        """Wait (holding ``cond``) until ``ready()``; False on timeout."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while not ready():
            if self._pool.closed:
                closed_under_the_epoch(cond)
            if deadline is None:
                # Bounded slices so a pool closed elsewhere is noticed.
                cond.wait(0.5)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            cond.wait(min(remaining, 0.5))
        return True


class EpochState:
    """What the consumer and the tasks of one epoch share, under ``cond``."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.closed = False

    def close(self) -> None:
        with self.cond:
            self.close_locked()

    def close_locked(self) -> None:
        self.closed = True
        self.clear()
        self.cond.notify_all()

    def clear(self) -> None:
        raise NotImplementedError
