"""What an epoch loads and in which order (``SamplingOptions``): the dataset, the
sampler and batch sampler the arguments imply, the seeds; checked once, in
torch's order and words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._common.distributed_ranks import rank_and_world_size
from .._sampling.batch_sampler import BatchSampler
from .._sampling.distributed_sampler import DistributedSampler
from .._sampling.samplers import RandomSampler, SequentialSampler
from .._sampling.seeds import EpochSeeds, derive_seed, torch_default_generator
from .._sampling.torch_randperm import is_torch_generator
from .._torch.datapipes import take_shuffle
from .arguments import LoaderArguments
from .checks import check_bool

__all__ = ["SamplingOptions", "check_sampling", "is_iterable_dataset"]

# Tags that keep the sampler's and the workers' seed streams independent.
_SAMPLER_SEED_TAG = 0
_WORKER_SEED_TAG = 1


@dataclass(frozen=True, slots=True)
class SamplingOptions:
    """The dataset and the order of its items in batches."""

    dataset: Any
    is_iterable: bool
    sampler: Any
    batch_sampler: Any
    batch_size: int | None
    drop_last: bool
    generator: Any
    seed: int | None
    # None: not said. False silences the warning of an unsharded loader in a job.
    distributed: bool | None
    # The first worker seed; worker seeds count on from it, one pool at a time
    # (None: drawn from worker_seed_generator per iterator, see IteratorSeeds).
    worker_seed_base: int | None
    # The user's torch.Generator, or torch's default one when neither seed nor
    # generator was given and torch is imported: each iterator draws its workers'
    # base seed from it, as torch's does (a sampler on the global generator then
    # sees it where torch's loader leaves it, every epoch).
    worker_seed_generator: Any
    # The first iterator's base seed, already drawn (the unseeded base), or None.
    first_worker_seed: int | None
    # Batches are lists of samples collated together (batch_size or batch_sampler).
    auto_collation: bool

    @property
    def index_source(self) -> Any:
        """What the epoch plan iterates: the batch sampler, else the sampler."""
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def ranks(self) -> tuple[int, int]:
        """This process's rank and the world size: looked up now (an epoch start),
        not at construction, so a loader may be built before the process group."""
        if not self.distributed:
            return 0, 1
        if isinstance(self.sampler, DistributedSampler):
            return self.sampler.rank, self.sampler.num_replicas
        return rank_and_world_size()


def is_iterable_dataset(dataset: Any) -> bool:
    """PyTorch's ``IterableDataset`` (or ours), or anything iterable without ``__getitem__``."""
    for cls in type(dataset).__mro__:
        if cls.__name__ == "IterableDataset" and cls.__module__.split(".")[0] in (
            "torch",
            "dataloader_api",
        ):
            return True
    return not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__")


def check_sampling(arguments: LoaderArguments) -> SamplingOptions:
    dataset, shuffle = arguments.dataset, arguments.shuffle
    sampler, batch_sampler = arguments.sampler, arguments.batch_sampler
    batch_size, drop_last = arguments.batch_size, arguments.drop_last
    generator, seed, distributed = (
        arguments.generator,
        arguments.seed,
        arguments.distributed,
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
    seeds = EpochSeeds(seed, generator)
    worker_seed_base, worker_seed_generator, first_worker_seed = _worker_seeds(
        generator, seed, seeds
    )
    iterable = is_iterable_dataset(dataset)
    shuffle = _check_kind(dataset, iterable, shuffle, sampler, batch_sampler)
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
        sampler = _default_sampler(dataset, shuffle, generator, seeds)
    if not iterable and batch_size is not None and batch_sampler is None:
        batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    elif iterable and batch_size is not None:
        BatchSampler([], batch_size, drop_last)  # same batch_size checks as map-style
    return SamplingOptions(
        dataset=dataset,
        is_iterable=iterable,
        sampler=sampler,
        batch_sampler=batch_sampler,
        batch_size=batch_size,
        drop_last=drop_last,
        generator=generator,
        seed=seed,
        distributed=distributed,
        worker_seed_base=worker_seed_base,
        worker_seed_generator=worker_seed_generator,
        first_worker_seed=first_worker_seed,
        auto_collation=batch_sampler is not None or (iterable and batch_size is not None),
    )


def _worker_seeds(
    generator: Any, seed: int | None, seeds: EpochSeeds
) -> tuple[int | None, Any, int | None]:
    """The workers' first seed, the generator each iterator draws their base from
    instead, and the first iterator's base already drawn (``SamplingOptions``).

    Worker seeds take one draw from a user's generator, here, and count on
    from it: the sampler alone advances the generator from epoch to epoch,
    so a resumed loader replays the same shuffles. A torch.Generator is
    drawn from as torch does instead, when each iterator starts (None here)."""
    if is_torch_generator(generator):
        return None, generator, None
    if generator is None and seed is None and (default := torch_default_generator()):
        # The base drawn from torch's default generator is torch's first _base_seed.
        return None, default, seeds.base_seed
    if generator is not None:
        return seeds.next_seed(), None, None
    return derive_seed(seeds.base_seed, _WORKER_SEED_TAG), None, None


def _check_kind(
    dataset: Any, iterable: bool, shuffle: bool | None, sampler: Any, batch_sampler: Any
) -> bool:
    """An iterable dataset takes no shuffle, sampler or batch sampler (a torch
    datapipe's own shuffle taken); any other must be map-style. The shuffle flag."""
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
    return bool(shuffle)


def _default_sampler(dataset: Any, shuffle: bool, generator: Any, seeds: EpochSeeds) -> Any:
    """A map-style dataset's sampler when none was given: random or sequential."""
    if shuffle and not hasattr(dataset, "__len__"):
        raise TypeError(
            f"shuffle=True needs the dataset's length, but {type(dataset).__name__} has no "
            "__len__; define it, or pass a sampler"
        )
    if shuffle:
        sampler_seed = (
            None if generator is not None else derive_seed(seeds.base_seed, _SAMPLER_SEED_TAG)
        )
        return RandomSampler(dataset, generator=generator, seed=sampler_seed)
    return SequentialSampler(dataset)
