"""``broken-started``: hands ``fetch`` each job's indices, dropping what the loader
started for it (``BatchJob.started``), as a backend written before that field would."""

from __future__ import annotations

from dataclasses import replace

from dataloader_api.contract import BatchJob, BatchStream, MapWork, StreamSpec

from . import _backend, _Wrapped


class _StartedPool(_Wrapped):
    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        jobs = (BatchJob(job.position, job.indices) for job in work.jobs)
        return self.inner.map_batches(replace(work, jobs=jobs), stream)


BrokenStarted = _backend("broken-started", _StartedPool)
