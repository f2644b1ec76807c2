"""Seeds: one per epoch from a fixed seed, a user's generator or OS entropy, and a
well-mixed seed derived from integers; shared by the samplers and the workers."""

from __future__ import annotations

import random
import sys
from typing import TYPE_CHECKING, Any

from .._common.lazy_import import LazyModule
from .torch_randperm import is_torch_generator

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")


__all__ = [
    "EpochSeeds",
    "IteratorSeeds",
    "derive_seed",
    "is_int",
    "torch_default_generator",
]

_SEED_MASK = 2**63 - 1


def is_int(value: object) -> bool:
    if isinstance(value, int):
        return not isinstance(value, bool)
    # A NumPy integer exists only once NumPy is imported: no import needed here.
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.integer)


class EpochSeeds:
    """One seed per epoch, from a fixed ``seed``, a user's generator, or OS entropy.

    ``generator`` may be a ``torch.Generator``, a ``numpy.random.Generator`` or
    a ``random.Random``; its state advances by one draw per epoch. Without
    either, the base seed is OS entropy, or, when torch is imported, a draw
    from torch's default generator, so that ``torch.manual_seed`` fixes it as
    it fixes torch's own shuffles.
    """

    def __init__(self, seed: int | None = None, generator: Any = None) -> None:
        if seed is not None and generator is not None:
            raise ValueError("seed and generator are mutually exclusive; pass one of them")
        if seed is not None and not is_int(seed):
            raise TypeError(f"seed should be an int or None, but got seed={seed!r}")
        if generator is not None and not _generator_kind(generator):
            raise TypeError(
                "generator should be a torch.Generator, numpy.random.Generator or "
                f"random.Random, but got {type(generator).__name__}"
            )
        self.generator = generator
        self.base_seed = int(seed) if seed is not None else _unseeded_base(generator)
        self.epoch = 0

    def state_dict(self) -> dict[str, Any]:
        """Plain data from which ``load_state_dict`` replays the same epoch seeds."""
        state: dict[str, Any] = {"base_seed": self.base_seed, "epoch": self.epoch}
        if self.generator is not None:
            state["generator"] = _generator_state(self.generator)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if ("generator" in state) != (self.generator is not None):
            raise ValueError(
                "the state was taken with a generator and this sampler has none, or the "
                "reverse; pass the same kind of generator (or seed) as the original"
            )
        self.base_seed = int(state["base_seed"])
        self.epoch = int(state["epoch"])
        if self.generator is not None:
            _set_generator_state(self.generator, state["generator"])

    def next_seed(self) -> int:
        """The seed of the next epoch."""
        epoch = self.epoch
        self.epoch += 1
        if self.generator is not None:
            return _draw(self.generator)
        return derive_seed(self.base_seed, epoch)


class IteratorSeeds:
    """Worker seeds as torch makes them from a ``torch.Generator``: one draw when an
    iterator starts (each epoch, once for persistent workers), before the sampler
    shuffles; worker ``i`` gets ``base + i``. A loaded state replays its base
    instead of drawing, as the generator's state in it is already past that draw.
    """

    def __init__(self, generator: Any, first: int | None = None) -> None:
        self.generator = generator
        self.current = 0 if first is None else first
        self._replay = first is not None  # the first iterator's draw is already made

    def draw(self) -> None:
        """The draw of a new iterator (``_BaseDataLoaderIter._base_seed`` in torch)."""
        if self._replay:
            self._replay = False
        else:
            self.current = _draw(self.generator)

    def next_seed(self) -> int:
        return self.current

    def state_dict(self) -> dict[str, Any]:
        return {"iterator_seed": self.current}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.current = int(state["iterator_seed"])
        self._replay = True


def torch_default_generator() -> Any:
    """torch's default (global) CPU generator, when torch is imported; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "empty"):
        return None
    return torch.default_generator


def _unseeded_base(generator: Any) -> int:
    torch = sys.modules.get("torch")
    if generator is None and torch is not None and hasattr(torch, "empty"):
        # What torch's RandomSampler draws when it has no generator.
        return int(torch.empty((), dtype=torch.int64).random_().item()) & _SEED_MASK
    return random.SystemRandom().getrandbits(63)  # OS entropy, as secrets has it


def derive_seed(*words: int) -> int:
    """A well-mixed 63-bit seed from integers (SeedSequence hashing)."""
    entropy = [w & _SEED_MASK for w in words]
    state = np.random.SeedSequence(entropy).generate_state(1, np.uint64)
    return int(state[0]) & _SEED_MASK


def _generator_kind(generator: Any) -> str | None:
    if isinstance(generator, np.random.Generator):
        return "numpy"
    if isinstance(generator, random.Random):
        return "random"
    if is_torch_generator(generator):
        return "torch"
    return None


def _generator_state(generator: Any) -> Any:
    kind = _generator_kind(generator)
    if kind == "numpy":
        return {"numpy": generator.bit_generator.state}
    if kind == "random":
        version, internal, gauss = generator.getstate()
        return {"random": [version, list(internal), gauss]}
    return {"torch": generator.get_state().tolist()}


def _set_generator_state(generator: Any, state: dict[str, Any]) -> None:
    kind = _generator_kind(generator)
    if kind not in state:
        raise ValueError(f"the state holds a {next(iter(state))} generator, not a {kind} one")
    if kind == "numpy":
        generator.bit_generator.state = state["numpy"]
    elif kind == "random":
        version, internal, gauss = state["random"]
        generator.setstate((version, tuple(internal), gauss))
    else:
        import torch

        generator.set_state(torch.tensor(state["torch"], dtype=torch.uint8))


def _draw(generator: Any) -> int:
    kind = _generator_kind(generator)
    if kind == "numpy":
        return int(generator.integers(0, 2**63))
    if kind == "random":
        return int(generator.getrandbits(63))
    import torch  # a torch.Generator implies torch is installed

    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item()) & _SEED_MASK
