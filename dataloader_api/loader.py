"""``DataLoader``: PyTorch's arguments and semantics, with worker threads."""

from __future__ import annotations

import copy
import importlib.util
import multiprocessing.context
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from itertools import islice
from time import perf_counter
from typing import Any

from . import collate as collate_module
from .aio import EVENT_LOOPS, AsyncEpoch, AsyncRunner, async_getitem
from .contract import (
    Backend,
    BatchJob,
    BatchStream,
    IterWork,
    MapWork,
    PoolSpec,
    StreamSpec,
    WorkerPool,
    process_id,
)
from .distributed import rank_and_world_size
from .errors import DataLoaderTimeoutError
from .plan import EpochPlan, iterable_batches, make_fetch
from .registry import resolve_backend
from .resume import STATE_VERSION, TrackedBatch, check_compatible, is_stateful
from .samplers import (
    BatchSampler,
    DistributedSampler,
    EpochSeeds,
    RandomSampler,
    SequentialSampler,
    derive_seed,
    load_sampler_state,
    sampler_state,
)
from .stats import EpochStats, StatsRecorder, print_summary
from .worker_info import WorkerInfo, acting_as, set_worker_info

__all__ = ["DataLoader", "LoaderIterator"]

_START_METHODS = ("fork", "spawn", "forkserver")
# Tags that keep the sampler's and the workers' seed streams independent.
_SAMPLER_SEED_TAG = 0
_WORKER_SEED_TAG = 1


def is_iterable_dataset(dataset: Any) -> bool:
    """PyTorch's ``IterableDataset`` (or ours), or anything iterable without ``__getitem__``."""
    for cls in type(dataset).__mro__:
        if cls.__name__ == "IterableDataset" and cls.__module__.split(".")[0] in (
            "torch",
            "dataloader_api",
        ):
            return True
    return not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__")


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be a bool, but got {name}={value!r}")
    return value


def _check_positive_int(name: str, value: Any, allowed: str = "a positive int") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} option should be {allowed}, but got {name}={value!r}")


def _check_callable(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} should be callable or None, but got {type(value).__name__}")


class _Pool:
    """A backend pool and the worker infos its threads were given."""

    def __init__(self, pool: WorkerPool, infos: list[WorkerInfo]) -> None:
        self.pool = pool
        self.infos = infos
        self.pid = process_id()  # a forked child inherits the pool but none of its threads


class DataLoader:
    """Loads batches from ``dataset`` on ``num_workers`` threads of one process.

    The arguments are ``torch.utils.data.DataLoader``'s, checked the same way.
    Where threads change their meaning:

    - ``multiprocessing_context``: accepted (the same values torch accepts)
      and has no effect: there are no worker processes.
    - ``pin_memory``: torch tensors in a batch are pinned on the consumer's
      thread when torch has an accelerator; otherwise a warning says they are
      not (as torch does). NumPy arrays are never pinned.
    - ``timeout``: seconds the consumer waits for one batch before
      ``DataLoaderTimeoutError``; ``0`` waits forever.
    - ``persistent_workers``: the worker threads live as long as the loader
      instead of one epoch.

    Added: ``backend`` (see ``dataloader_api.backends()``), ``seed`` (a
    fixed seed for shuffling and worker seeds; exclusive with ``generator``),
    ``distributed`` (shard across the ranks of a ``torch.distributed`` or
    torchrun job: a ``DistributedSampler`` for map-style datasets, global
    shard ids in ``get_worker_info()`` for iterable ones; see ``set_epoch``).
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        backend: str | None = None,
        seed: int | None = None,
        distributed: bool = False,
        items_in_parallel: int = 1,
        max_concurrency: int | None = None,
        event_loop: str = "auto",
        epoch_summary: bool | Callable[[EpochStats], None] = False,
        collect_stats: bool = False,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be a non-negative int; use num_workers=0 to "
                f"load on the calling thread, but got num_workers={num_workers!r}"
            )
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < 0:
            raise ValueError(f"timeout option should be non-negative, but got timeout={timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified with worker threads. "
                "let num_workers > 0 to enable them, otherwise set prefetch_factor to None."
            )
        if num_workers > 0:
            if prefetch_factor is None:
                prefetch_factor = 2
            else:
                _check_positive_int("prefetch_factor", prefetch_factor)
        if _check_bool("persistent_workers", persistent_workers) and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._check_multiprocessing_context(multiprocessing_context, num_workers)
        _check_callable("collate_fn", collate_fn)
        _check_callable("worker_init_fn", worker_init_fn)
        _check_bool("pin_memory", pin_memory)
        _check_bool("in_order", in_order)
        _check_bool("drop_last", drop_last)
        if not isinstance(pin_memory_device, str):
            raise TypeError(
                "pin_memory_device should be a str, but got "
                f"pin_memory_device={pin_memory_device!r}"
            )
        if pin_memory_device and not pin_memory:
            raise ValueError(
                f"pin_memory_device={pin_memory_device!r} only applies with pin_memory=True"
            )
        if shuffle is not None:
            _check_bool("shuffle", shuffle)
        _check_bool("distributed", distributed)
        if distributed and generator is not None:
            raise ValueError(
                "distributed=True shuffles from seed, which must be the same on every rank; "
                "pass seed (default 0) instead of generator"
            )
        if backend is not None and not isinstance(backend, str):
            raise TypeError(f"backend should be a str or None, but got backend={backend!r}")
        seeds = EpochSeeds(seed, generator)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.seed = seed
        # Worker seeds take one draw from a user's generator, here, and count on
        # from it: the sampler alone advances the generator from epoch to epoch,
        # so a resumed loader replays the same shuffles.
        worker_base = (
            seeds.next_seed()
            if generator is not None
            else derive_seed(seeds.base_seed, _WORKER_SEED_TAG)
        )
        self._worker_seeds = EpochSeeds(worker_base)
        self._is_iterable = is_iterable_dataset(dataset)

        if self._is_iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler)):
                if value not in (None, False):
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, "
                        f"but got {name}={value!r}"
                    )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler!r}"
                )
        elif not hasattr(dataset, "__getitem__"):
            raise TypeError(
                "dataset should be map-style (__getitem__ and __len__) or iterable (__iter__), "
                f"but got {type(dataset).__name__}"
            )
        shuffle = bool(shuffle)
        self.distributed = distributed
        self.rank, self.world_size = rank_and_world_size() if distributed else (0, 1)
        if distributed and not self._is_iterable:
            if sampler is not None or batch_sampler is not None:
                raise ValueError(
                    "distributed=True builds its own DistributedSampler, so it is mutually "
                    "exclusive with sampler and batch_sampler (or pass a DistributedSampler "
                    "as sampler without distributed=True)"
                )
            sampler = DistributedSampler(
                dataset, self.world_size, self.rank, shuffle=shuffle, seed=seed or 0
            )
            shuffle = False
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive "
                "with drop_last"
            )

        if not self._is_iterable and sampler is None:
            if shuffle:
                sampler = RandomSampler(
                    dataset,
                    generator=generator,
                    seed=None
                    if generator is not None
                    else derive_seed(seeds.base_seed, _SAMPLER_SEED_TAG),
                )
            else:
                sampler = SequentialSampler(dataset)
        if not self._is_iterable and batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif self._is_iterable and batch_size is not None:
            BatchSampler([], batch_size, drop_last)  # same batch_size checks as map-style

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_sampler is not None or (
            self._is_iterable and batch_size is not None
        )
        if collate_fn is None:
            collate_fn = (
                collate_module.default_collate
                if self._auto_collation
                else collate_module.default_convert
            )
        self.collate_fn = collate_fn

        self._backend: Backend | None = None
        if num_workers > 0 or backend is not None:
            self._backend = resolve_backend(backend)
        self.backend_name = getattr(self._backend, "name", None) if self._backend else None
        self._check_items_in_parallel(items_in_parallel)
        self.items_in_parallel = items_in_parallel
        self._agetitem = None if self._is_iterable else async_getitem(dataset)
        self._check_async(max_concurrency, event_loop)
        self.max_concurrency = max_concurrency
        self.event_loop = event_loop
        self._runner: AsyncRunner | None = None
        if not isinstance(epoch_summary, bool) and not callable(epoch_summary):
            raise TypeError(
                "epoch_summary should be a bool or a callable taking EpochStats, but got "
                f"epoch_summary={epoch_summary!r}"
            )
        self.epoch_summary = epoch_summary
        # Timing every fetch and collate costs about 2 us per batch: only on request.
        self.collect_stats = _check_bool("collect_stats", collect_stats) or bool(epoch_summary)
        self._recorder: StatsRecorder | None = None
        self._persistent_pool: _Pool | None = None
        self._live_iterator: weakref.ref[LoaderIterator] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._pin_checked = False
        # Resume bookkeeping (see resume.py).
        self._epochs_started = 0
        self._epoch_start: dict[str, Any] | BaseException = {}
        self._pool_seed_state = self._worker_seeds.state_dict()
        self._pending: dict[str, Any] | None = None

    @staticmethod
    def _check_multiprocessing_context(context: Any, num_workers: int) -> None:
        if context is None:
            return
        if num_workers == 0:
            raise ValueError(
                "multiprocessing_context can only be used with worker threads "
                f"(num_workers > 0), but got num_workers={num_workers}"
            )
        if isinstance(context, str):
            if context not in _START_METHODS:
                raise ValueError(
                    "multiprocessing_context option should specify a valid start method in "
                    f"{list(_START_METHODS)!r}, but got multiprocessing_context={context!r}"
                )
        elif not isinstance(context, multiprocessing.context.BaseContext):
            raise TypeError(
                "multiprocessing_context option must be a valid context object or a string "
                f"specifying the start method, but got multiprocessing_context={context!r}"
            )

    def _check_items_in_parallel(self, items_in_parallel: Any) -> None:
        _check_positive_int("items_in_parallel", items_in_parallel)
        if items_in_parallel == 1:
            return
        given = f"items_in_parallel={items_in_parallel}"
        if self.num_workers == 0:
            raise ValueError(f"{given} needs worker threads: set num_workers > 0")
        if self._is_iterable or not self._auto_collation:
            raise ValueError(
                f"{given} splits a batch of a map-style dataset into __getitem__ calls; "
                "it needs a map-style dataset and batch_size or batch_sampler"
            )
        if getattr(self.dataset, "__getitems__", None) is not None:
            raise ValueError(
                f"{given} splits a batch into __getitem__ calls, but this dataset defines "
                "__getitems__, which fetches a batch in one call"
            )
        if self._backend is None or not self._backend.supports_items_in_parallel:
            raise ValueError(
                f"{given} is not supported by backend {self.backend_name!r}, which runs "
                "each batch on one thread; use backend='rust' or items_in_parallel=1"
            )

    def _check_async(self, max_concurrency: Any, event_loop: Any) -> None:
        if max_concurrency is not None:
            _check_positive_int("max_concurrency", max_concurrency, "a positive int or None")
        if event_loop not in EVENT_LOOPS:
            raise ValueError(
                f"event_loop option should be one of {', '.join(map(repr, EVENT_LOOPS))}, "
                f"but got event_loop={event_loop!r}"
            )
        given = [
            f"{name}={value!r}"
            for name, value, default in (
                ("max_concurrency", max_concurrency, None),
                ("event_loop", event_loop, "auto"),
            )
            if value != default
        ]
        if self._agetitem is None:
            if given:
                raise ValueError(
                    f"{' and '.join(given)} only apply to async datasets (a map-style dataset "
                    "with an async def __getitem__ or __agetitem__); this one is not async"
                )
            return
        if self.items_in_parallel > 1:
            raise ValueError(
                f"items_in_parallel={self.items_in_parallel} does not apply to an async "
                "dataset: the items of a batch already run concurrently (see max_concurrency)"
            )
        if getattr(self.dataset, "__getitems__", None) is not None:
            raise ValueError(
                "this dataset has both a coroutine item getter and __getitems__; "
                "the loader would not know which to use: keep one"
            )
        if event_loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
            raise ValueError(
                "event_loop='uvloop' needs uvloop, which is not installed; "
                "pip install uvloop, or use event_loop='auto' or 'asyncio'"
            )

    def _async_epoch(self) -> AsyncEpoch | None:
        """The async side of a new epoch, on the loader's event loop (made once)."""
        if self._agetitem is None:
            return None
        runner = self._runner
        if runner is None or runner.closed or runner.pid != process_id():
            # It stops its loop when the last loader or epoch using it is gone; one
            # inherited by a forked child has no thread there, so the child makes its own.
            runner = self._runner = AsyncRunner(self.event_loop, self.max_concurrency)
        return AsyncEpoch(runner, self._agetitem, self._auto_collation)

    @property
    def window(self) -> int:
        """Batches that may be loaded but not yet consumed: ``num_workers * prefetch_factor``."""
        return self.num_workers * (self.prefetch_factor or 0)

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    # -- workers ----------------------------------------------------------

    def _new_pool(self) -> _Pool:
        assert self._backend is not None
        self._pool_seed_state = self._worker_seeds.state_dict()
        base_seed = self._worker_seeds.next_seed()
        infos = [
            self._worker_info(worker_id, base_seed + worker_id, self._worker_dataset())
            for worker_id in range(self.num_workers)
        ]
        worker_init_fn = self.worker_init_fn

        def thread_init(worker_id: int) -> None:
            set_worker_info(infos[worker_id])
            if worker_init_fn is not None:
                worker_init_fn(worker_id)

        spec = PoolSpec(
            num_threads=self.num_workers,
            thread_init=thread_init,
            items_in_parallel=self.items_in_parallel,
        )
        return _Pool(self._backend.create_pool(spec), infos)

    def _worker_info(self, worker_id: int, seed: int, dataset: Any) -> WorkerInfo:
        workers = max(1, self.num_workers)
        if self.distributed and self._is_iterable:
            # Shards count across ranks, so torch's sharding idiom splits both ways.
            return WorkerInfo(
                id=self.rank * workers + worker_id,
                num_workers=self.world_size * workers,
                seed=seed,
                dataset=dataset,
                rank=self.rank,
                world_size=self.world_size,
                local_id=worker_id,
            )
        return WorkerInfo(
            worker_id, self.num_workers, seed, dataset, self.rank, self.world_size, worker_id
        )

    def set_epoch(self, epoch: int) -> None:
        """Forward ``epoch`` to the sampler (a ``DistributedSampler``), on every rank."""
        set_epoch = getattr(self.sampler, "set_epoch", None)
        if set_epoch is None:
            raise TypeError(
                f"set_epoch needs a sampler with set_epoch() such as DistributedSampler; this "
                f"loader's sampler is {type(self.sampler).__name__}"
            )
        set_epoch(epoch)

    def _worker_dataset(self) -> Any:
        # Each worker of an iterable dataset gets its own shallow copy, as each
        # torch worker gets its own copy: worker_init_fn may then configure
        # worker_info.dataset for its shard. Arrays and the like stay shared.
        if not self._is_iterable:
            return self.dataset
        try:
            return copy.copy(self.dataset)
        except Exception as error:
            raise TypeError(
                f"iterable dataset {type(self.dataset).__name__} cannot be shallow-copied for "
                f"each worker thread ({error}); define __copy__ for it"
            ) from error

    def _pool_for_epoch(self) -> tuple[_Pool, bool]:
        """The pool to run this epoch on, and whether the iterator owns it."""
        if not self.persistent_workers:
            return self._new_pool(), True
        if self._persistent_pool is None:
            self._persistent_pool = self._new_pool()
            self._finalizer = weakref.finalize(
                self, _close_pool, self._persistent_pool.pool, self._persistent_pool.pid
            )
        if self._persistent_pool.pid != process_id():
            raise RuntimeError(
                "this DataLoader's persistent worker threads belong to process "
                f"{self._persistent_pool.pid}, and a forked child has none: create the "
                "DataLoader in the process that iterates it, or use persistent_workers=False"
            )
        return self._persistent_pool, False

    def close(self) -> None:
        """End the current epoch and the persistent worker threads, if any."""
        live = self._live_iterator() if self._live_iterator else None
        if live is not None:
            live.close()
        if self._finalizer is not None:
            self._finalizer()
        self._persistent_pool = None
        if self._runner is not None:
            self._runner.close()

    def __enter__(self) -> DataLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- epochs -----------------------------------------------------------

    def __iter__(self) -> LoaderIterator:
        if self.persistent_workers:
            # One epoch at a time on the shared pool, as torch resets its iterator.
            previous = self._live_iterator() if self._live_iterator else None
            if previous is not None:
                previous.close()
        pending, self._pending = self._pending, None
        skip = pending["batches_consumed"] if pending and not self._is_iterable else 0
        worker_states = dict(pending["worker_states"]) if pending and self._is_iterable else {}
        # A resumed iterable epoch starts its round-robin at the worker whose turn it was.
        first_worker = pending.get("next_worker", 0) if pending and self._is_iterable else 0
        self._epoch_start = self._capture_epoch_start()
        self._epochs_started += 1
        length = self._length_or_none()
        if length is not None:
            length -= skip
        aio = self._async_epoch()
        recorder = (
            StatsRecorder(self._epochs_started, self.num_workers, self.window, self._is_iterable)
            if self.collect_stats
            else None
        )
        self._recorder = recorder
        summary = self._summary_callback()
        if self.num_workers == 0:
            batches: Iterator[Any] | BatchStream = self._calling_thread_batches(
                skip, worker_states, aio, recorder
            )
            iterator = LoaderIterator(
                batches,
                None,
                self._pin_or_none(),
                length,
                skip,
                aio,
                recorder,
                summary,
                on_threads=False,
            )
        else:
            pool, owned = self._pool_for_epoch()
            try:
                stream = self._start_stream(pool, skip, worker_states, first_worker, aio, recorder)
            except BaseException:
                if owned:
                    pool.pool.close()
                raise
            owner = pool.pool if owned else None
            iterator = LoaderIterator(
                stream, owner, self._pin_or_none(), length, skip, aio, recorder, summary
            )
        self._live_iterator = weakref.ref(iterator)
        return iterator

    # -- stats ------------------------------------------------------------

    def stats(self) -> EpochStats:
        """Figures of the current epoch, or of the last one (see ``EpochStats``)."""
        if not self.collect_stats:
            raise RuntimeError(
                "stats() needs DataLoader(..., collect_stats=True) (or epoch_summary): "
                "timing every batch is off by default"
            )
        if self._recorder is None:
            raise RuntimeError("stats(): no epoch of this loader has started yet")
        return self._recorder.snapshot()

    def _summary_callback(self) -> Callable[[EpochStats], None] | None:
        if self.epoch_summary is True:
            return print_summary
        if callable(self.epoch_summary):
            return self.epoch_summary
        return None

    # -- resume -----------------------------------------------------------

    def _capture_epoch_start(self) -> dict[str, Any] | BaseException:
        if self._is_iterable:
            return {}
        try:
            return {"sampler": sampler_state(self._index_source())}
        except TypeError as error:
            return error  # raised by state_dict(), not by iterating

    def _config(self) -> dict[str, Any]:
        """What a state must agree with to be loaded here."""
        config: dict[str, Any] = {
            "kind": "iterable" if self._is_iterable else "map",
            "batch_size": self.batch_size,
            "drop_last": self.drop_last,
        }
        if self._is_iterable:
            config["num_workers"] = self.num_workers
        else:
            config["dataset_length"] = len(self.dataset)
            source = self._index_source()
            name = type(source).__name__
            if isinstance(source, BatchSampler):
                name += f"({type(source.sampler).__name__})"
            config["sampler"] = name
        return config

    def state_dict(self) -> dict[str, Any]:
        """Where loading stands, as plain (JSON-serialisable) data.

        Taken in the middle of an epoch, a fresh loader that loads it yields
        exactly the batches this one had not delivered yet, then the same later
        epochs. Taken between epochs, it resumes at the next epoch.
        """
        if self._pending is not None:
            return dict(self._pending)
        live = self._live_iterator() if self._live_iterator else None
        running = live is not None and not live.finished
        if self._is_iterable and not is_stateful(self.dataset):
            raise TypeError(
                f"cannot take a state: iterable dataset {type(self.dataset).__name__} has no "
                "state_dict()/load_state_dict() (see the user guide's resume section)"
            )
        if running:
            start = self._epoch_start
            epoch = self._epochs_started - 1
        else:
            start = self._capture_epoch_start()
            epoch = self._epochs_started
        if isinstance(start, BaseException):
            raise start
        state: dict[str, Any] = {"version": STATE_VERSION, **self._config(), "epoch": epoch}
        if self._is_iterable:
            states = live.worker_states if running and live is not None else {}
            state["worker_states"] = [[w, s] for w, s in sorted(states.items())]
            last = live.last_worker if running and live is not None else None
            state["next_worker"] = 0 if last is None else (last + 1) % max(1, self.num_workers)
        else:
            state["batches_consumed"] = live.position if running and live is not None else 0
            state["sampler_state"] = start["sampler"]
            state["worker_seeds"] = self._pool_seed_state
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (from ``state_dict()`` of a loader configured like this)."""
        check_compatible(state, self._config())
        live = self._live_iterator() if self._live_iterator else None
        if live is not None:
            live.close()
        if not self._is_iterable:
            consumed = state.get("batches_consumed")
            if not isinstance(consumed, int) or consumed < 0:
                raise ValueError(f"state has an invalid batches_consumed={consumed!r}")
            load_sampler_state(self._index_source(), state["sampler_state"])
            self._worker_seeds.load_state_dict(state["worker_seeds"])
            self._pool_seed_state = self._worker_seeds.state_dict()
        elif not is_stateful(self.dataset):
            raise TypeError(
                f"cannot resume: iterable dataset {type(self.dataset).__name__} has no "
                "state_dict()/load_state_dict()"
            )
        self._epochs_started = int(state["epoch"])
        self._pending = dict(state)
        if self._is_iterable:
            self._pending["worker_states"] = {int(w): s for w, s in state["worker_states"]}

    def _length_or_none(self) -> int | None:
        try:
            return len(self)
        except TypeError:
            return None

    def _index_source(self) -> Any:
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _calling_thread_batches(
        self,
        skip: int,
        worker_states: dict[int, Any],
        aio: AsyncEpoch | None,
        recorder: StatsRecorder | None,
    ) -> Iterator[Any]:
        collate = recorder.timed_collate(self.collate_fn) if recorder else self.collate_fn
        if self._is_iterable:
            return self._calling_thread_stream(worker_states, collate)
        fetch = aio.fetch_now if aio is not None else make_fetch(self.dataset, self._auto_collation)
        if recorder is not None:
            fetch = recorder.timed_fetch(fetch, self._auto_collation)
        return _CallingThreadBatches(islice(self._index_source(), skip, None), fetch, collate)

    def _calling_thread_stream(
        self, worker_states: dict[int, Any], collate: Callable[[Any], Any]
    ) -> Iterator[Any]:
        # Only a distributed loader gives the calling thread a worker info:
        # its rank's shard. Otherwise get_worker_info() is None, as in torch.
        info = (
            self._worker_info(0, self._worker_seeds.next_seed(), self.dataset)
            if self.distributed
            else None
        )
        yield from self._open_iterable(self.dataset, info, 0, worker_states, collate)

    def _open_iterable(
        self,
        dataset: Any,
        info: WorkerInfo | None,
        worker_id: int,
        states: dict[int, Any],
        collate: Callable[[Any], Any],
    ) -> Iterator[Any]:
        if worker_id in states:
            with acting_as(info) if info is not None else nullcontext():
                dataset.load_state_dict(states[worker_id])
        return iterable_batches(
            dataset,
            self.batch_size,
            self.drop_last,
            collate,
            info,
            worker_id if is_stateful(dataset) else None,
        )

    def _start_stream(
        self,
        pool: _Pool,
        skip: int,
        worker_states: dict[int, Any],
        first_worker: int,
        aio: AsyncEpoch | None,
        recorder: StatsRecorder | None,
    ) -> BatchStream:
        timeout = self.timeout or None
        collate = recorder.timed_collate(self.collate_fn) if recorder else self.collate_fn
        if self._is_iterable:
            infos = pool.infos

            def open_stream(stream_id: int) -> Iterator[Any]:
                worker_id = (stream_id + first_worker) % self.num_workers
                info = infos[worker_id]
                return self._open_iterable(info.dataset, info, worker_id, worker_states, collate)

            def on_stream_timeout(position: int) -> BaseException:
                return DataLoaderTimeoutError(
                    f"DataLoader timed out after {self.timeout:g} s waiting for batch "
                    f"{position} of the iterable dataset"
                )

            return pool.pool.stream_batches(
                IterWork(open_stream, self.num_workers),
                StreamSpec(self.window, self.in_order, timeout, on_stream_timeout),
            )

        plan = EpochPlan(
            self._index_source(), self._auto_collation, memory=self.window + 1, skip=skip
        )

        def on_timeout(position: int) -> BaseException:
            indices = plan.indices_of(position)
            which = f" (indices {indices!r})" if indices is not None else ""
            return DataLoaderTimeoutError(
                f"DataLoader timed out after {self.timeout:g} s waiting for batch "
                f"{position + skip}{which}"
            )

        getitem = None
        if aio is not None:
            # Each batch's coroutines start as the backend takes its job; workers wait.
            jobs: Iterable[BatchJob] = aio.jobs(plan)
            fetch: Callable[[Any], Any] = aio.fetch
        else:
            jobs = plan
            fetch = make_fetch(self.dataset, self._auto_collation)
            if self.items_in_parallel > 1:
                getitem = self.dataset.__getitem__
        if recorder is not None:
            jobs = recorder.jobs(jobs)
            fetch = recorder.timed_fetch(fetch, self._auto_collation)
        work = MapWork(
            jobs,
            fetch,
            collate,
            collate_is_default=self.collate_fn is collate_module.default_collate,
            getitem=getitem,
            stats=recorder,
        )
        return pool.pool.map_batches(
            work, StreamSpec(self.window, self.in_order, timeout, on_timeout)
        )

    # -- pinning ----------------------------------------------------------

    def _pin_or_none(self) -> Callable[[Any], Any] | None:
        """The pinning step for this epoch's batches, or None when there is none."""
        if not self.pin_memory:
            return None
        pin = _pin_function(self.pin_memory_device, warn=not self._pin_checked)
        self._pin_checked = True
        return pin


def _pin_function(device: str, warn: bool) -> Callable[[Any], Any] | None:
    try:
        import torch
        from torch.utils.data._utils.pin_memory import pin_memory
    except ImportError:
        torch = None
    has_accelerator = torch is not None and (
        torch.cuda.is_available()
        or (hasattr(torch, "accelerator") and torch.accelerator.is_available())
    )
    if not has_accelerator:
        if warn:
            warnings.warn(
                "pin_memory=True but no accelerator is available (or torch is not installed): "
                "batches are not pinned",
                UserWarning,
                stacklevel=4,
            )
        return None

    def pin(batch: Any) -> Any:
        return pin_memory(batch, device or None)

    return pin


class _CallingThreadBatches:
    """Map-style batches loaded by ``__next__`` itself; a failed batch does not end the
    epoch (a generator would be finished by its exception), as in torch."""

    def __init__(
        self, indices: Iterator[Any], fetch: Callable[[Any], Any], collate: Callable[[Any], Any]
    ) -> None:
        self._indices, self._fetch, self._collate = indices, fetch, collate

    def __iter__(self) -> _CallingThreadBatches:
        return self

    def __next__(self) -> Any:
        return self._collate(self._fetch(next(self._indices)))


class LoaderIterator:
    """One epoch of a ``DataLoader``; closing it (or dropping it) stops its workers."""

    def __init__(
        self,
        batches: Iterator[Any] | BatchStream,
        owned_pool: WorkerPool | None,
        pin: Callable[[Any], Any] | None,
        length: int | None,
        position: int = 0,
        aio: AsyncEpoch | None = None,
        recorder: StatsRecorder | None = None,
        summary: Callable[[EpochStats], None] | None = None,
        on_threads: bool = True,
    ) -> None:
        self._batches = batches
        self._recorder = recorder
        self._summary = summary
        self._pin = pin
        self._length = length
        self._closed = False
        self.finished = False
        #: batches of the epoch delivered so far (a batch that raised counts)
        self.position = position
        #: iterable datasets: worker id -> its dataset state after its last delivered batch
        self.worker_states: dict[int, Any] = {}
        self.last_worker: int | None = None
        # A forked child inherits the epoch but not its worker threads, if it has any.
        self._pid = process_id() if on_threads else None
        # Runs on close(), on garbage collection and at interpreter exit.
        self._finalizer = weakref.finalize(self, _close_all, batches, owned_pool, aio, process_id())

    def __iter__(self) -> LoaderIterator:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        if self._pid is not None and self._pid != process_id():
            raise RuntimeError(
                f"this epoch's worker threads belong to process {self._pid}, and a forked "
                "child has none: start a new epoch (iter(loader)) in the child"
            )
        recorder = self._recorder
        start = perf_counter()
        try:
            batch = next(self._batches)
        except StopIteration:
            self.finished = True
            self.close()
            if recorder is not None:
                recorder.waited(perf_counter() - start)
                stats = recorder.finish()
                if self._summary is not None:
                    self._summary(stats)
            raise
        except DataLoaderTimeoutError:
            if recorder is not None:
                recorder.waited(perf_counter() - start)
            raise
        except Exception:
            self.position += 1  # that batch was delivered, as its exception
            if recorder is not None:
                recorder.delivered(perf_counter() - start)
            raise
        if recorder is not None:
            recorder.delivered(perf_counter() - start)
        self.position += 1
        if type(batch) is TrackedBatch:
            self.worker_states[batch.worker_id] = batch.state
            self.last_worker = batch.worker_id
            batch = batch.batch
        return batch if self._pin is None else self._pin(batch)

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this epoch's length is unknown (the dataset has no __len__)")
        return self._length

    def close(self) -> None:
        """Stop loading: no new dataset call starts once this returns."""
        self._closed = True
        self._finalizer()

    def __enter__(self) -> LoaderIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_pool(pool: WorkerPool, pid: int) -> None:
    if pid == process_id():  # a forked child has none of the threads to stop
        pool.close()


def _close_all(batches: Any, pool: WorkerPool | None, aio: AsyncEpoch | None, pid: int) -> None:
    if pid != process_id():
        return  # a forked child: the threads and the event loop are the parent's
    close = getattr(batches, "close", None)
    try:
        if close is not None:
            close()  # no new job starts
    finally:
        try:
            if aio is not None:
                aio.close()  # cancel running coroutines: workers waiting on them return
        finally:
            if pool is not None:
                pool.close()
