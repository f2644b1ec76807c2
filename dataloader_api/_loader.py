"""``DataLoader``: PyTorch's arguments and semantics, with worker threads.

A thin facade: ``_options`` validates the arguments once into a frozen
``LoaderOptions``, ``_epoch.start`` runs an epoch from it, ``_epoch.resume``
takes and loads states, and ``_epoch.loader_state.LoaderState`` is all that
changes between epochs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ._epoch.iterator import LoaderIterator
from ._epoch.loader_state import LoaderState
from ._epoch.resume import load_state, take_state
from ._epoch.start import epoch_length, start_epoch
from ._features.stats import EpochStats
from ._options.loader_options import LoaderArguments, LoaderOptions, build_options
from ._workers.pool import join_pools, warn_if_more_workers_than_cpus
from .integrations import install_present

__all__ = ["DataLoader", "LoaderIterator"]

T_co = TypeVar("T_co", covariant=True)

# torch raises ValueError when these are set on a built DataLoader: its batches
# would no longer match its length. The other options are read-only properties.
_FIXED_AFTER_INIT = frozenset(
    ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
)


def _option(group: str, name: str, doc: str = "") -> property:
    def get(self: DataLoader[Any]) -> Any:
        return getattr(getattr(self._options, group), name)

    return property(get, doc=doc or f"The ``{name}`` this loader was built with.")


class DataLoader(Generic[T_co]):
    """Loads batches from ``dataset`` on ``num_workers`` threads of one process.

    The arguments are [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader),
    checked with torch's rules and messages; the ones torch has mean what they
    mean there, except where threads change that (said below). The options are
    fixed once built: setting ``batch_size``, ``sampler``, ``batch_sampler``,
    ``drop_last``, ``dataset`` or ``persistent_workers`` raises ``ValueError``
    (as in torch); the others are read-only.

    Args:
        dataset: A map-style dataset (``__getitem__`` and ``__len__``, with
            ``__getitems__`` used when present) or an iterable one; as in torch.
        batch_size: Items per batch; ``None`` turns batching off. As in torch.
        shuffle: Reshuffle every epoch (any truthy value). As in torch.
        sampler: The indices of an epoch. As in torch.
        batch_sampler: The batches of indices of an epoch. As in torch.
        num_workers: Worker **threads**; ``0`` loads on the calling thread.
        collate_fn: Merges a list of items into a batch; the default makes
            NumPy arrays (``torch_collate`` makes torch's tensors).
        pin_memory: Pins torch tensors on the consumer's thread when torch has
            an accelerator; NumPy arrays are never pinned.
        drop_last: Drop the last incomplete batch. As in torch.
        timeout: Seconds the consumer waits for one batch before
            ``DataLoaderTimeoutError``; ``0`` waits forever. Needs workers.
        worker_init_fn: Called with the worker id on each worker thread before
            it loads anything. As in torch.
        multiprocessing_context: Accepted with the values torch accepts; no
            effect, there are no worker processes.
        generator: A ``torch.Generator`` (torch's order and worker seeds), a
            ``numpy.random.Generator`` or a ``random.Random``.
        prefetch_factor: Batches loaded ahead per worker (default 2 with
            workers). As in torch.
        persistent_workers: Keep the worker threads for the loader's life
            instead of one epoch. As in torch.
        pin_memory_device: The device to pin for. As in torch.
        in_order: Deliver batches in plan order; ``False`` delivers them as
            they finish. As in torch.
        backend: The execution backend by name (see ``backends()``); default
            ``$DATALOADER_BACKEND``, else the first installed of ``rust``,
            ``cffi``, ``threads``.
        seed: A fixed seed for shuffling and worker seeds: the same batches on
            every run, backend and worker count. Exclusive with ``generator``.
        distributed: ``True`` shards across the ranks of a ``torch.distributed``
            or torchrun job, looked up when an epoch starts (a
            ``DistributedSampler`` for map-style datasets, global shard ids in
            ``get_worker_info()`` for iterable ones); ``False`` says every rank
            loads everything on purpose; ``None`` (not said) warns once when an
            unsharded loader runs in a job of several ranks.
        items_in_parallel: Fetch the items of one batch on up to this many
            pool threads (backends that support it); for large batches of
            slow items.
        max_concurrency: Async datasets: coroutines in flight at most; the
            ``dataloader_api.io`` datasets: reads in flight at most.
        event_loop: Async datasets: ``"auto"``, ``"asyncio"`` or ``"uvloop"``.
        epoch_summary: Print a summary of each epoch's stats (``True``) or
            pass them to this callable.
        collect_stats: Time fetches, collation and waits (``stats()``).
        transform: ``f(index, item)`` applied to every item on the worker
            threads before collation, or a ``dataloader_api.transforms.Compose``
            image pipeline (its random ops keyed by ``seed``, epoch and index).
            For an iterable dataset the index is the item's position in its
            worker's stream.
        share_dataset: ``False`` (default): each worker thread calls its own
            shallow copy of the dataset, as each torch worker process has its
            own, so per-worker state on ``self`` (a handle opened lazily) stays
            per worker; ``True``: every worker calls this one object (a cache
            meant for all workers).
    """

    _options: LoaderOptions
    _state: LoaderState
    _arguments: LoaderArguments

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
        distributed: bool | None = None,
        items_in_parallel: int = 1,
        max_concurrency: int | None = None,
        event_loop: str = "auto",
        epoch_summary: bool | Callable[[EpochStats], None] = False,
        collect_stats: bool = False,
        transform: Callable[[Any, Any], Any] | Any = None,
        share_dataset: bool = False,
    ) -> None:
        arguments = LoaderArguments(
            dataset=dataset,
            batch_size=batch_size,
            shuffle=shuffle,
            sampler=sampler,
            batch_sampler=batch_sampler,
            num_workers=num_workers,
            collate_fn=collate_fn,
            pin_memory=pin_memory,
            drop_last=drop_last,
            timeout=timeout,
            worker_init_fn=worker_init_fn,
            multiprocessing_context=multiprocessing_context,
            generator=generator,
            prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers,
            pin_memory_device=pin_memory_device,
            in_order=in_order,
            backend=backend,
            seed=seed,
            distributed=distributed,
            items_in_parallel=items_in_parallel,
            max_concurrency=max_concurrency,
            event_loop=event_loop,
            epoch_summary=epoch_summary,
            collect_stats=collect_stats,
            transform=transform,
            share_dataset=share_dataset,
        )
        options = build_options(arguments)
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_arguments", arguments)
        warn_if_more_workers_than_cpus(options.workers.num_workers, stacklevel=3)
        install_present(DataLoader)  # torch, Lightning and accelerate (see integrations)
        object.__setattr__(
            self,
            "_state",
            LoaderState.new(
                options.sampling.worker_seed_base,
                options.sampling.worker_seed_generator,
                options.sampling.first_worker_seed,
            ),
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FIXED_AFTER_INIT and "_options" in self.__dict__:
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is "
                "initialized; build a new DataLoader with the value you want"
            )
        option = getattr(type(self), name, None)
        if isinstance(option, property) and option.fset is None and "_options" in self.__dict__:
            raise AttributeError(
                f"{name} is read-only on a built {type(self).__name__} (its options are "
                f"checked once); build a new DataLoader with {name}={value!r}"
            )
        object.__setattr__(self, name, value)

    dataset = _option("sampling", "dataset")
    batch_size = _option("sampling", "batch_size")
    drop_last = _option("sampling", "drop_last")
    sampler = _option("sampling", "sampler")
    batch_sampler = _option("sampling", "batch_sampler")
    num_workers = _option("workers", "num_workers")
    collate_fn = _option("items", "collate_fn")
    pin_memory = _option("items", "pin_memory")
    pin_memory_device = _option("items", "pin_memory_device")
    timeout = _option("workers", "timeout")
    worker_init_fn = _option("workers", "worker_init_fn")
    multiprocessing_context = _option("workers", "multiprocessing_context")
    generator = _option("sampling", "generator")
    prefetch_factor = _option("workers", "prefetch_factor")
    persistent_workers = _option("workers", "persistent_workers")
    in_order = _option("workers", "in_order")
    seed = _option("sampling", "seed")
    distributed = _option("sampling", "distributed")

    @property
    def rank(self) -> int:
        """This process's rank (0 unless ``distributed=True``), looked up when asked."""
        return self._options.sampling.ranks()[0]

    @property
    def world_size(self) -> int:
        """The number of ranks (1 unless ``distributed=True``), looked up when asked."""
        return self._options.sampling.ranks()[1]

    backend_name = _option(
        "execution", "backend_name", "The backend that runs the workers, or None."
    )
    items_in_parallel = _option("execution", "items_in_parallel")
    max_concurrency = _option("items", "max_concurrency")
    event_loop = _option("items", "event_loop")
    epoch_summary = _option("stats", "epoch_summary")
    collect_stats = _option("stats", "collect_stats")
    share_dataset = _option("workers", "share_dataset")
    window = _option(
        "workers",
        "window",
        "Batches that may be loaded but not yet consumed: ``num_workers * prefetch_factor``.",
    )

    # torch's private attributes that its tests and some libraries read.
    @property
    def _auto_collation(self) -> bool:
        """Batches are lists of items collated together (torch's attribute)."""
        return self._options.sampling.auto_collation

    @property
    def _index_sampler(self) -> Any:
        """What an epoch draws indices from: the batch sampler when batching,
        else the sampler (torch's attribute)."""
        return self._options.sampling.index_source

    @property
    def _dataset_kind(self) -> int:
        """torch's ``_DatasetKind``: 0 map-style, 1 iterable."""
        return 1 if self._options.sampling.is_iterable else 0

    @property
    def _IterableDataset_len_called(self) -> int | None:
        """``len(dataset)`` once ``len(loader)`` was taken of an iterable dataset, else
        None (torch's attribute and value)."""
        if self._state.iterable_len_called is None:
            return None
        return len(self._options.sampling.dataset)

    @property
    def _iterator(self) -> LoaderIterator | None:
        """The live epoch of persistent workers (torch keeps it only for them)."""
        live = self._state.live() if self._options.workers.persistent_workers else None
        return live if live is not None and not live.closed else None

    @_iterator.setter
    def _iterator(self, value: None) -> None:
        # Lightning's teardown sets it to None to end torch's persistent workers.
        if value is not None:
            raise AttributeError(
                f"_iterator can only be set to None (which ends persistent workers, as in "
                f"torch), got {value!r}"
            )
        if self._options.workers.persistent_workers:
            self.close()

    def __len__(self) -> int:
        length = epoch_length(self._options)
        if self._options.sampling.is_iterable:
            self._state.iterable_len_called = length  # the epochs warn past it
        return length

    def __iter__(self) -> LoaderIterator:
        return start_epoch(self._options, self._state, self)

    def set_epoch(self, epoch: int) -> None:
        """Forward ``epoch`` to the sampler (a ``DistributedSampler``), on every rank."""
        set_epoch = getattr(self._options.sampling.sampler, "set_epoch", None)
        if set_epoch is None:
            raise TypeError(
                f"set_epoch needs a sampler with set_epoch() such as DistributedSampler; this "
                f"loader's sampler is {type(self._options.sampling.sampler).__name__}"
            )
        set_epoch(epoch)

    def _sharded_copy(self, seed: int = 0) -> DataLoader[T_co] | None:
        """This loader built again with ``distributed=True``, for a training framework
        that shards the loaders handed to it (``_torch.frameworks``); ``seed`` shuffles if
        the loader has none. None where the framework would not shard a torch loader
        either (iterable datasets) or where the user chose (``distributed`` given, a
        sampler of theirs): the epoch-start warning speaks for those."""
        given = self._arguments
        if (
            given.distributed is not None
            or self._options.sampling.is_iterable
            or given.sampler is not None
            or given.batch_sampler is not None
        ):
            return None
        arguments = given.by_name()
        if given.seed is None:
            arguments["seed"] = seed
        # Every rank must shuffle alike: the seed does, a generator's state may not.
        arguments.update(distributed=True, generator=None)
        import inspect

        try:
            inspect.signature(type(self)).bind(**arguments)
        except TypeError:  # a subclass whose __init__ takes other arguments: it says for itself
            return None
        return type(self)(**arguments)  # its own errors are the user's to see

    def close(self) -> None:
        """End the current epoch and the persistent worker threads, if any."""
        state = self._state
        live = state.live()
        if live is not None:
            live.close()
        if state.finalizer is not None:
            state.finalizer()
        state.persistent = None
        if state.runner is not None:
            state.runner.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every worker thread this loader started has ended, ``timeout``
        seconds at most (``None``: no limit); True if none is left.

        ``close()`` and ``break`` return at once, whatever the items are doing: a
        thread busy in a slow ``__getitem__`` finishes that item on its own and
        starts nothing new. Call this after them when you need the threads gone
        (before ``os.fork()``, say). A live persistent pool's threads only end
        with ``close()``.
        """
        state = self._state
        state.pools = join_pools(state.pools, timeout)
        return not state.pools

    def __enter__(self) -> DataLoader[T_co]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> EpochStats:
        """Figures of the current epoch, or of the last one (see ``EpochStats``)."""
        if not self._options.stats.collect_stats:
            raise RuntimeError(
                "stats() needs DataLoader(..., collect_stats=True) (or epoch_summary): "
                "timing every batch is off by default"
            )
        if self._state.recorder is None:
            raise RuntimeError("stats(): no epoch of this loader has started yet")
        return self._state.recorder.snapshot()

    def state_dict(self) -> dict[str, Any]:
        """Where loading stands, as plain (JSON-serialisable) data.

        Taken in the middle of an epoch, a fresh loader that loads it yields
        exactly the batches this one had not delivered yet, then the same later
        epochs. Taken between epochs, it resumes at the next epoch.
        """
        return take_state(self._options, self._state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (from ``state_dict()`` of a loader configured like this)."""
        load_state(self._options, self._state, state)
