"""The loader's arguments, validated once into a frozen :class:`LoaderOptions`.

Every check and error message of ``DataLoader(...)`` lives here; the rest of
the package reads the options object and never re-validates or re-reads an
argument. Derived choices (the sampler, the batch sampler, the collate
function, the backend) are made here too, so an epoch only executes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _collate
from ._async_detect import async_getitem
from ._batch_sampler import BatchSampler
from ._distributed import rank_and_world_size
from ._distributed_sampler import DistributedSampler
from ._option_checks import (
    check_async,
    check_bool,
    check_callable,
    check_items_in_parallel,
    check_multiprocessing_context,
    check_positive_int,
)
from ._registry import ENV_VAR as BACKEND_ENV_VAR
from ._registry import resolve_backend
from ._samplers import RandomSampler, SequentialSampler
from ._seeding import EpochSeeds, derive_seed
from ._stats import EpochStats
from ._torch_datapipes import take_shuffle
from ._torch_random import is_torch_generator
from ._transform_hook import check_transform
from .contract import Backend

__all__ = ["LoaderOptions", "build_options", "is_iterable_dataset"]

# Tags that keep the sampler's and the workers' seed streams independent.
_SAMPLER_SEED_TAG = 0
_WORKER_SEED_TAG = 1


@dataclass(frozen=True, slots=True)
class LoaderOptions:
    """What ``DataLoader(...)`` was asked for, checked, with the choices it implies."""

    dataset: Any
    num_workers: int
    batch_size: int | None
    drop_last: bool
    sampler: Any
    batch_sampler: Any
    collate_fn: Callable[[Any], Any]
    pin_memory: bool
    pin_memory_device: str
    timeout: float
    worker_init_fn: Callable[[int], None] | None
    multiprocessing_context: Any
    generator: Any
    prefetch_factor: int | None
    persistent_workers: bool
    in_order: bool
    seed: int | None
    # None: not said. False silences the warning of an unsharded loader in a job.
    distributed: bool | None
    backend: Backend | None
    items_in_parallel: int
    max_concurrency: int | None
    event_loop: str
    epoch_summary: bool | Callable[[EpochStats], None]
    collect_stats: bool
    is_iterable: bool
    # Batches are lists of samples collated together (batch_size or batch_sampler).
    auto_collation: bool
    # The dataset's coroutine item getter, for async map-style datasets.
    agetitem: Callable[[Any], Any] | None
    # The first worker seed; worker seeds count on from it, one pool at a time
    # (None: drawn from a torch.Generator per iterator, see IteratorSeeds).
    worker_seed_base: int | None
    # f(index, item) on the workers, or a transforms.Compose (bound per epoch).
    transform: Any = None
    # Every worker calls the one dataset object instead of its own copy.
    share_dataset: bool = False

    @property
    def window(self) -> int:
        """Batches that may be loaded but not yet consumed: ``num_workers * prefetch_factor``."""
        return self.num_workers * (self.prefetch_factor or 0)

    def ranks(self) -> tuple[int, int]:
        """This process's rank and the world size: looked up now (an epoch start),
        not at construction, so a loader may be built before the process group."""
        if not self.distributed:
            return 0, 1
        if isinstance(self.sampler, DistributedSampler):
            return self.sampler.rank, self.sampler.num_replicas
        return rank_and_world_size()

    @property
    def backend_name(self) -> str | None:
        return self.backend.name if self.backend is not None else None

    @property
    def index_source(self) -> Any:
        """What the epoch plan iterates: the batch sampler, else the sampler."""
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    @property
    def collate_is_default(self) -> bool:
        return self.collate_fn is _collate.default_collate


def is_iterable_dataset(dataset: Any) -> bool:
    """PyTorch's ``IterableDataset`` (or ours), or anything iterable without ``__getitem__``."""
    for cls in type(dataset).__mro__:
        if cls.__name__ == "IterableDataset" and cls.__module__.split(".")[0] in (
            "torch",
            "dataloader_api",
        ):
            return True
    return not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__")


def build_options(
    dataset: Any,
    batch_size: int | None,
    shuffle: bool | None,
    sampler: Any,
    batch_sampler: Any,
    num_workers: int,
    collate_fn: Callable[[Any], Any] | None,
    pin_memory: bool,
    drop_last: bool,
    timeout: float,
    worker_init_fn: Callable[[int], None] | None,
    multiprocessing_context: Any,
    generator: Any,
    prefetch_factor: int | None,
    persistent_workers: bool,
    pin_memory_device: str,
    in_order: bool,
    backend: str | None,
    seed: int | None,
    distributed: bool | None,
    items_in_parallel: int,
    max_concurrency: int | None,
    event_loop: str,
    epoch_summary: bool | Callable[[EpochStats], None],
    collect_stats: bool,
    transform: Any = None,
    share_dataset: bool = False,
) -> LoaderOptions:
    """Check every argument of ``DataLoader(...)`` (same rules and messages as torch
    where torch has the argument) and make the choices they imply."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative (an int >= 0); use num_workers=0 "
            f"to load on the calling thread, but got num_workers={num_workers!r}"
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
            check_positive_int("prefetch_factor", prefetch_factor)
    # torch takes any truthy value for these four flags (shuffle=1, np.True_, ...).
    persistent_workers, pin_memory, in_order = (
        bool(persistent_workers),
        bool(pin_memory),
        bool(in_order),
    )
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if timeout > 0 and num_workers == 0:
        raise ValueError(
            f"timeout={timeout!r} needs worker threads (num_workers > 0): with "
            "num_workers=0 the calling thread loads each batch, there is nothing to wait "
            "for (torch fails on it when iterating); use timeout=0 or num_workers > 0"
        )
    check_multiprocessing_context(multiprocessing_context, num_workers)
    check_callable("collate_fn", collate_fn)
    check_callable("worker_init_fn", worker_init_fn)
    if not isinstance(pin_memory_device, str):
        raise TypeError(
            f"pin_memory_device should be a str, but got pin_memory_device={pin_memory_device!r}"
        )
    if pin_memory_device and not pin_memory:
        raise ValueError(
            f"pin_memory_device={pin_memory_device!r} only applies with pin_memory=True"
        )
    if shuffle is not None:
        shuffle = bool(shuffle)
    if distributed is not None:
        check_bool("distributed", distributed)
    if distributed and generator is not None:
        raise ValueError(
            "distributed=True shuffles from seed, which must be the same on every rank; "
            "pass seed (default 0) instead of generator"
        )
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"backend should be a str or None, but got backend={backend!r}")
    seeds = EpochSeeds(seed, generator)
    # Worker seeds take one draw from a user's generator, here, and count on
    # from it: the sampler alone advances the generator from epoch to epoch,
    # so a resumed loader replays the same shuffles. A torch.Generator is
    # drawn from as torch does instead, when each iterator starts (None here).
    worker_seed_base: int | None
    if is_torch_generator(generator):
        worker_seed_base = None
    elif generator is not None:
        worker_seed_base = seeds.next_seed()
    else:
        worker_seed_base = derive_seed(seeds.base_seed, _WORKER_SEED_TAG)
    iterable = is_iterable_dataset(dataset)
    if iterable:
        shuffle = take_shuffle(dataset, shuffle)  # a torch datapipe shuffles itself
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
    if distributed and not iterable:
        if sampler is not None or batch_sampler is not None:
            raise ValueError(
                "distributed=True builds its own DistributedSampler, so it is mutually "
                "exclusive with sampler and batch_sampler (or pass a DistributedSampler "
                "as sampler without distributed=True)"
            )
        sampler = DistributedSampler.ranked_at_first_use(dataset, shuffle=shuffle, seed=seed or 0)
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
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
        )
    # After the checks above, as torch orders them (its tests match the first error).
    if not isinstance(drop_last, bool):
        raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")

    if not iterable and sampler is None:
        if shuffle and not hasattr(dataset, "__len__"):
            raise TypeError(
                f"shuffle=True needs the dataset's length, but {type(dataset).__name__} has no "
                "__len__; define it, or pass a sampler"
            )
        if shuffle:
            sampler_seed = (
                None if generator is not None else derive_seed(seeds.base_seed, _SAMPLER_SEED_TAG)
            )
            sampler = RandomSampler(dataset, generator=generator, seed=sampler_seed)
        else:
            sampler = SequentialSampler(dataset)
    if not iterable and batch_size is not None and batch_sampler is None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    elif iterable and batch_size is not None:
        BatchSampler([], batch_size, drop_last)  # same batch_size checks as map-style
    auto_collation = batch_sampler is not None or (iterable and batch_size is not None)
    if collate_fn is None:
        collate_fn = _collate.default_collate if auto_collation else _collate.default_convert

    # $DATALOADER_BACKEND is checked whatever num_workers is, as backend= is.
    named = backend is not None or os.environ.get(BACKEND_ENV_VAR, "").strip()
    resolved = resolve_backend(backend) if num_workers > 0 or named else None
    check_positive_int("items_in_parallel", items_in_parallel)
    if items_in_parallel > 1:
        check_items_in_parallel(
            items_in_parallel, dataset, num_workers, iterable or not auto_collation, resolved
        )
    check_transform(transform)
    agetitem = None if iterable else async_getitem(dataset)
    check_async(dataset, agetitem, items_in_parallel, max_concurrency, event_loop)
    if not isinstance(epoch_summary, bool) and not callable(epoch_summary):
        raise TypeError(
            "epoch_summary should be a bool or a callable taking EpochStats, but got "
            f"epoch_summary={epoch_summary!r}"
        )
    # Timing every fetch and collate costs about 2 us per batch: only on request.
    collect_stats = check_bool("collect_stats", collect_stats) or bool(epoch_summary)
    return LoaderOptions(
        dataset=dataset,
        num_workers=num_workers,
        batch_size=batch_size,
        drop_last=drop_last,
        sampler=sampler,
        batch_sampler=batch_sampler,
        collate_fn=collate_fn,
        pin_memory=pin_memory,
        pin_memory_device=pin_memory_device,
        timeout=float(timeout),
        worker_init_fn=worker_init_fn,
        multiprocessing_context=multiprocessing_context,
        generator=generator,
        prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers,
        in_order=in_order,
        seed=seed,
        distributed=distributed,
        backend=resolved,
        items_in_parallel=items_in_parallel,
        max_concurrency=max_concurrency,
        event_loop=event_loop,
        epoch_summary=epoch_summary,
        collect_stats=collect_stats,
        is_iterable=iterable,
        auto_collation=auto_collation,
        agetitem=agetitem,
        worker_seed_base=worker_seed_base,
        transform=transform,
        share_dataset=check_bool("share_dataset", share_dataset),
    )
