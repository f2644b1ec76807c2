"""``iterator._workers``: what torch's iterator exposes as its worker processes.

Code written for torch (its own tests among it) reads ``_workers`` to wait for
an epoch's workers to end once the iterator is dropped (``join``,
``is_alive``, ``exitcode``, ``pid``). Here a handle stands for a worker thread
of the epoch's pool: alive until that pool has closed and its threads ended
(a non-persistent epoch: after the iterator is closed or dropped; a persistent
loader: after the loader is). An epoch that ran to its end hands its pool to
the next loader: its handles are no longer alive then, as the epoch's work is
over. ``pid`` is this process's (threads have no pid of their own).
"""

from __future__ import annotations

import os

from ..contract import WorkerPool
from .pool import join_pools

__all__ = ["WorkerHandle", "worker_handles"]


class WorkerHandle:
    """Worker ``worker_id`` of an epoch; ``pools`` is the (live) list of the pools
    its epoch waits for."""

    def __init__(self, worker_id: int, pools: list[WorkerPool]) -> None:
        self.worker_id = worker_id
        self.pid = os.getpid()
        self._pools = pools

    def join(self, timeout: float | None = None) -> None:
        """Wait until the pool's threads have ended, ``timeout`` seconds at most."""
        join_pools(list(self._pools), timeout)

    def is_alive(self) -> bool:
        return bool(join_pools(list(self._pools), 0))

    @property
    def exitcode(self) -> int | None:
        """0 once the thread has ended (a thread has no other exit code), else None."""
        return None if self.is_alive() else 0

    def terminate(self) -> None:
        """A thread cannot be killed: close the pool (it ends after the current
        dataset calls), as torch's terminate() ends the worker process."""
        for pool in list(self._pools):
            pool.close()

    def __repr__(self) -> str:
        state = "alive" if self.is_alive() else "ended"
        return f"<WorkerHandle worker_id={self.worker_id} pid={self.pid} {state}>"


def worker_handles(num_workers: int, pools: list[WorkerPool]) -> list[WorkerHandle]:
    return [WorkerHandle(worker_id, pools) for worker_id in range(num_workers)]
