"""``broken-caller``: the consumer makes every other batch itself, as worker 0, but
with a look-alike of worker 0's ``WorkerInfo`` (equal fields, another object), not
the worker's own: the common fetch then calls no worker's copy, and the items draw
from fresh generators, as when a caller-runs batch is given a made-up identity."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from dataloader_api._common.worker_info import WorkerInfo, acting_as, get_worker_info
from dataloader_api.contract import BatchJob, BatchStream, MapWork, PoolSpec, StreamSpec

from . import _backend, _Stream, _Wrapped


class _CallerPool(_Wrapped):
    def __init__(self, spec: PoolSpec) -> None:
        init = spec.thread_init
        self.first: list[WorkerInfo] = []

        def init_and_remember(worker_id: int) -> None:
            init(worker_id)
            info = get_worker_info()
            if worker_id == 0 and info is not None:
                self.first.append(info)

        super().__init__(dataclasses.replace(spec, thread_init=init_and_remember))

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        arguments: dict[int, Any] = {}

        def recorded(jobs: Any) -> Iterator[BatchJob]:
            for job in jobs:
                arguments[job.position] = job.fetch_argument
                yield job

        inner = self.inner.map_batches(dataclasses.replace(work, jobs=recorded(work.jobs)), stream)
        lookalike = dataclasses.replace(self.first[0])

        def remade(batches: Iterator[Any]) -> Iterator[Any]:
            for position, batch in enumerate(batches):
                argument = arguments.pop(position)
                if position % 2:
                    with acting_as(lookalike):
                        batch = work.collate(work.fetch(argument))
                yield batch

        return _Stream(inner, remade)


BrokenCaller = _backend("broken-caller", _CallerPool)
