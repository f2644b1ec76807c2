"""Samplers with PyTorch's names, arguments and checks.

Random samplers draw one seed per epoch (one per ``iter()``), so every epoch
is reshuffled while a fixed ``seed`` replays the same sequence of epochs on
every run, every backend and every worker count. Given a ``torch.Generator``
they make torch's own calls on it instead, so the order equals torch's for the
same generator state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from itertools import islice
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import _torch_random as torch_random
from ._lazy import LazyModule
from ._seeding import EpochSeeds, is_int

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_lazy)
    np = LazyModule("numpy", globals(), "np")

__all__ = [
    "BatchSampler",
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


# How many indices of an int64 array become Python ints at a time.
_CHUNK = 1 << 16


def _python_ints(indices: np.ndarray) -> Iterator[int]:
    """The array's indices as Python ints, converted a chunk at a time."""
    for start in range(0, len(indices), _CHUNK):
        yield from indices[start : start + _CHUNK].tolist()


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
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Any = None,
        *,
        seed: int | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if num_samples is not None and (not is_int(num_samples) or num_samples <= 0):
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
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
        return _python_ints(self.epoch_indices())

    def epoch_indices(self) -> np.ndarray:
        """The next epoch's indices as one int64 array (draws the epoch's seed): 8
        bytes an index instead of a Python list's ~36, which BatchSampler slices
        into batches. Not for a ``torch.Generator``, whose order is torch's lists."""
        n = len(self.data_source)
        count = self.num_samples
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


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``, as
    [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.BatchSampler).

    Args:
        sampler: The indices to group.
        batch_size: Indices per batch.
        drop_last: Drop the last list when it is shorter than ``batch_size``.
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not is_int(batch_size) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size!r}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(
                f"drop_last should be a boolean value, but got drop_last={drop_last!r}"
            )
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        size = self.batch_size
        if type(self.sampler) is SequentialSampler:
            # The common case, without touching each index in Python.
            n = len(self.sampler)
            stop = n - n % size if self.drop_last else n
            for start in range(0, stop, size):
                yield list(range(start, min(start + size, n)))
            return
        if type(self.sampler) is RandomSampler and not torch_random.is_torch_generator(
            self.sampler.seeds.generator
        ):
            # Batches sliced from the epoch's index array: no Python int per index
            # is made ahead of its batch.
            array = self.sampler.epoch_indices()
            n = len(array)
            stop = n - n % size if self.drop_last else n
            for start in range(0, stop, size):
                yield array[start : start + size].tolist()
            return
        indices = iter(self.sampler)
        while batch := list(islice(indices, size)):
            if len(batch) < size and self.drop_last:
                return
            yield batch

    def state_dict(self) -> dict[str, Any]:
        return {"sampler": sampler_state(self.sampler)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_sampler_state(self.sampler, state["sampler"])

    def __len__(self) -> int:
        size = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return size // self.batch_size
        return (size + self.batch_size - 1) // self.batch_size


def sampler_state(sampler: Any) -> Any:
    """The resumable state of any sampler: its ``state_dict()``, or None for a
    plain sequence (a list, tuple or range replays itself)."""
    if callable(getattr(sampler, "state_dict", None)):
        return sampler.state_dict()
    if isinstance(sampler, list | tuple | range):
        return None
    raise TypeError(
        f"cannot resume: sampler {type(sampler).__name__} has no state_dict()/load_state_dict(); "
        "use a dataloader_api sampler, a list of indices, or add those two methods"
    )


def load_sampler_state(sampler: Any, state: Any) -> None:
    if callable(getattr(sampler, "load_state_dict", None)):
        sampler.load_state_dict(state)
    elif state is not None or not isinstance(sampler, list | tuple | range):
        raise TypeError(f"sampler {type(sampler).__name__} cannot load a state")
