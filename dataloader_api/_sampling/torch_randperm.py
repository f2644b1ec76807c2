"""PyTorch's CPU ``randperm`` reproduced bit for bit, without torch; and, given a
``torch.Generator``, torch's samplers' own calls on it.

``DistributedSampler`` must shard exactly as ``torch.utils.data.DistributedSampler``
does for the same seed and epoch, so that a job can switch loaders without
changing which rank sees which sample. torch's CPU generator is the standard
MT19937 seeded with ``init_genrand(seed mod 2**32)``, which is also what NumPy's
legacy ``RandomState(seed)`` uses, so NumPy supplies the raw 32-bit stream and
this module replays torch's shuffle on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._common.lazy_import import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")


_UINT32_MAX = 2**32 - 1
# torch switches to a 64-bit draw from this size on (aten randperm_cpu).
_SMALL_N_LIMIT = _UINT32_MAX // 20


def mt19937_uint32(seed: int, count: int) -> np.ndarray:
    """The first ``count`` outputs of MT19937 after ``manual_seed(seed)``, as int64."""
    state = np.random.RandomState(seed & _UINT32_MAX)
    # high=2**32 spans the whole uint32 range, for which NumPy returns raw outputs.
    return state.randint(0, 2**32, size=count, dtype=np.uint32).astype(np.int64)


def randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``."""
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    if n < _SMALL_N_LIMIT:
        draws = mt19937_uint32(seed, max(n - 1, 0))
        offsets = (draws % np.arange(n, 1, -1, dtype=np.int64)).tolist()
        perm = list(range(n))
        for i, offset in enumerate(offsets):
            j = i + offset
            perm[i], perm[j] = perm[j], perm[i]
        return perm
    # Inside-out Fisher-Yates on random64() = (first << 32) | second.
    raw = mt19937_uint32(seed, 2 * n).astype(np.uint64)
    words = ((raw[0::2] << np.uint64(32)) | raw[1::2]).tolist()
    out = [0] * n
    for i, word in enumerate(words):
        z = word % (i + 1)
        out[i] = out[z]
        out[z] = i
    return out


def is_torch_generator(generator: Any) -> bool:
    kind = type(generator)
    return kind.__module__.startswith("torch") and kind.__name__ == "Generator"


def random_sampler_order(n: int, count: int, replacement: bool, generator: Any) -> list[int]:
    """``torch.utils.data.RandomSampler``'s indices for a ``torch.Generator``: the
    same calls on the same generator, so the order equals torch's."""
    import torch  # a torch.Generator implies torch is installed

    out: list[int] = []
    if replacement:
        for size in [32] * (count // 32) + [count % 32]:
            out += torch.randint(
                high=n, size=(size,), dtype=torch.int64, generator=generator
            ).tolist()
        return out
    if n == 0:
        return out
    for _ in range(count // n):
        out += torch.randperm(n, generator=generator).tolist()
    tail: list[int] = torch.randperm(n, generator=generator).tolist()[: count % n]
    return out + tail


def permutation(n: int, generator: Any) -> list[int]:
    """``torch.randperm(n, generator=generator)`` (``SubsetRandomSampler``'s order)."""
    import torch

    return list(torch.randperm(n, generator=generator).tolist())


def weighted_draws(weights: np.ndarray, count: int, replacement: bool, generator: Any) -> list[int]:
    """``WeightedRandomSampler``'s indices for a ``torch.Generator``, as torch draws them."""
    import torch

    tensor = torch.as_tensor(weights, dtype=torch.double)
    return list(torch.multinomial(tensor, count, replacement, generator=generator).tolist())
