"""Samplers with PyTorch's names, arguments and checks.

Random samplers draw one seed per epoch (one per ``iter()``), so every epoch
is reshuffled while a fixed ``seed`` replays the same sequence of epochs on
every run, every backend and every worker count. Given a ``torch.Generator``
they make torch's own calls on it instead, so the order equals torch's for the
same generator state.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence, Sized
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._common.lazy_import import LazyModule
from . import torch_randperm as torch_random
from .index_shuffle import IndexChunks, python_ints, shuffled_positions
from .seeds import EpochSeeds, is_int

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")

__all__ = [
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

T = TypeVar("T")


class Sampler(Generic[T]):
    """Base class: an iterable of indices (or of index lists, for batch samplers).

    ``state_dict()`` / ``load_state_dict()`` capture where the sequence of
    epochs stands, for resuming a loader; samplers without randomness keep none.
    """

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class _SeededSampler(Sampler[int]):
    """A sampler whose only state is its per-epoch seeds."""

    seeds: EpochSeeds

    def state_dict(self) -> dict[str, Any]:
        return {"seeds": self.seeds.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.seeds.load_state_dict(state["seeds"])


# From this length on, RandomSampler's default (index_shuffle=None) shuffles with
# the bijection: a NumPy permutation of 2**20 items takes about 14 ms here, and
# of 10M items 0.5 to 0.9 s before the first batch.
INDEX_SHUFFLE_FROM = 1 << 20
# From this length on, a permutation asked for (index_shuffle=False) is big
# enough (1 GiB) that RandomSampler names index_shuffle=True.
LARGE_PERMUTATION = 1 << 27

# The __iter__ of each sampler of ours that is "its _index_chunks(0) as ints":
# BatchSampler slices batches from the chunks instead, unless a subclass
# replaced __iter__.
CHUNKED_ITERS: set[Callable[..., Any]] = set()


def chunked_iter(cls: type) -> type:
    """Registers ``cls.__iter__`` as equal to its ``_index_chunks``."""
    CHUNKED_ITERS.add(cls.__iter__)  # type: ignore[attr-defined]
    return cls


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``, as [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.SequentialSampler).

    Args:
        data_source: Anything with a length.
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(_SeededSampler):
    """A new permutation every epoch, or ``num_samples`` draws with replacement, as
    [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.RandomSampler).

    Args:
        data_source: Anything with a length.
        replacement: Draw with replacement (``num_samples`` draws).
        num_samples: How many indices an epoch yields (default: the length).
        generator: A ``torch.Generator`` (torch's own order), a
            ``numpy.random.Generator`` or a ``random.Random``.
        seed: Instead of ``generator``: a fixed seed, the same epochs on every run.
        index_shuffle: True: instead of a permutation array (8 bytes an
            index), a seeded bijection of ``range(n)`` computed a chunk at a
            time: no memory that grows with ``n`` and a first batch that does
            not wait for a whole permutation, for up to ``2**62`` items; not
            with ``replacement`` or a ``torch.Generator``. False: always the
            permutation. None (default): the bijection from 2**20 items on
            where it is allowed. The two give different orders for one seed.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Any = None,
        *,
        seed: int | None = None,
        index_shuffle: bool | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if index_shuffle is not None and not isinstance(index_shuffle, bool):
            raise TypeError(
                f"index_shuffle should be a boolean value, but got index_shuffle={index_shuffle!r}"
            )
        if index_shuffle and replacement:
            raise ValueError(
                "index_shuffle=True shuffles without replacement; it cannot be combined "
                "with replacement=True"
            )
        if index_shuffle and torch_random.is_torch_generator(generator):
            raise ValueError(
                "index_shuffle=True has its own order, not torch's: pass seed= or a "
                "numpy.random.Generator instead of a torch.Generator, or drop index_shuffle"
            )
        if num_samples is not None and (not is_int(num_samples) or num_samples <= 0):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.index_shuffle = index_shuffle
        self.seeds = EpochSeeds(seed, generator)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        count = self.num_samples
        generator = self.seeds.generator
        if torch_random.is_torch_generator(generator):
            if self.replacement and n == 0:
                raise ValueError(
                    "RandomSampler with replacement=True needs a non-empty data_source"
                )
            self.seeds.epoch += 1
            return iter(torch_random.random_sampler_order(n, count, self.replacement, generator))
        chunks = self._index_chunks(0)
        assert chunks is not None
        return python_ints(chunks)

    def _index_chunks(self, start: int, multiple_of: int = 1) -> IndexChunks | None:
        """The next epoch's indices from position ``start`` on, as int64 arrays
        (draws the epoch's seed now), which BatchSampler slices into batches.
        None for a ``torch.Generator``, whose order is torch's lists."""
        if torch_random.is_torch_generator(self.seeds.generator):
            return None
        if self._shuffles_by_index():
            seed = self.seeds.next_seed()
            return shuffled_positions(
                len(self.data_source), seed, start, self.num_samples, multiple_of
            )
        return iter([self.epoch_indices()[start:]])

    def _shuffles_by_index(self) -> bool:
        if self.index_shuffle is None:
            return not self.replacement and len(self.data_source) >= INDEX_SHUFFLE_FROM
        return self.index_shuffle

    def epoch_indices(self) -> np.ndarray:
        """The next epoch's indices as one int64 array (draws the epoch's seed): 8
        bytes an index instead of a Python list's ~36. Not for a ``torch.Generator``,
        whose order is torch's lists, nor with ``index_shuffle``."""
        n = len(self.data_source)
        count = self.num_samples
        if not self.replacement and n >= LARGE_PERMUTATION:
            warnings.warn(
                f"RandomSampler: each shuffled epoch of {n:,} items builds a permutation "
                f"of {n * 8 / 2**30:.1f} GiB; pass sampler=RandomSampler(dataset, "
                "index_shuffle=True, seed=...) for a shuffle whose memory does not grow",
                stacklevel=3,
            )
        rng = np.random.Generator(np.random.PCG64(self.seeds.next_seed()))
        if self.replacement:
            if n == 0:
                raise ValueError(
                    "RandomSampler with replacement=True needs a non-empty data_source"
                )
            return rng.integers(0, n, size=count)
        parts = []
        left = count if n > 0 else 0
        while left > 0:
            parts.append(rng.permutation(n)[:left])
            left -= len(parts[-1])
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return self.num_samples


chunked_iter(RandomSampler)


class SubsetRandomSampler(_SeededSampler):
    """The given indices in a new random order every epoch, as
    [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.SubsetRandomSampler).

    Args:
        indices: The indices to shuffle.
        generator: As for ``RandomSampler``.
        seed: As for ``RandomSampler``.
    """

    def __init__(
        self, indices: Sequence[int], generator: Any = None, *, seed: int | None = None
    ) -> None:
        self.indices = indices
        self.seeds = EpochSeeds(seed, generator)

    def __iter__(self) -> Iterator[int]:
        if torch_random.is_torch_generator(self.seeds.generator):
            self.seeds.epoch += 1
            order = torch_random.permutation(len(self.indices), self.seeds.generator)
        else:
            rng = np.random.Generator(np.random.PCG64(self.seeds.next_seed()))
            order = rng.permutation(len(self.indices)).tolist()
        return iter([self.indices[i] for i in order])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_SeededSampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``, as
    [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.WeightedRandomSampler).

    Args:
        weights: One non-negative weight per index.
        num_samples: How many indices an epoch yields.
        replacement: Draw with replacement; without it, at most the number of
            non-zero weights.
        generator: As for ``RandomSampler``.
        seed: As for ``RandomSampler``.
    """

    def __init__(
        self,
        weights: Sequence[float] | np.ndarray,
        num_samples: int,
        replacement: bool = True,
        generator: Any = None,
        *,
        seed: int | None = None,
    ) -> None:
        if not is_int(num_samples) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        array = np.asarray(weights, dtype=np.float64)
        if array.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(array.shape)}"
            )
        if array.size == 0 or not np.all(np.isfinite(array)) or np.any(array < 0):
            raise ValueError("weights must be a non-empty sequence of finite, non-negative numbers")
        total = float(array.sum())
        if total <= 0:
            raise ValueError("weights must not all be zero")
        if not replacement and num_samples > int(np.count_nonzero(array)):
            raise ValueError(
                f"num_samples={num_samples} exceeds the {int(np.count_nonzero(array))} indices "
                "with non-zero weight, which is impossible with replacement=False"
            )
        self.weights = array
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self._probabilities = array / total
        self.seeds = EpochSeeds(seed, generator)

    def __iter__(self) -> Iterator[int]:
        generator = self.seeds.generator
        if torch_random.is_torch_generator(generator):
            self.seeds.epoch += 1
            return iter(
                torch_random.weighted_draws(
                    self.weights, self.num_samples, self.replacement, generator
                )
            )
        rng = np.random.Generator(np.random.PCG64(self.seeds.next_seed()))
        drawn = rng.choice(
            len(self.weights),
            size=self.num_samples,
            replace=self.replacement,
            p=self._probabilities,
        )
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples
