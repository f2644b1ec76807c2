"""A worker thread that seeds, reseeds or restores a process-wide generator is warned.

``random``'s, NumPy's legacy and torch's global generators are one per process.
In torch's worker processes each worker has its own (torch seeds them per
worker), so PyTorch's reproducibility recipe seeds them in ``worker_init_fn``
(``seed_worker``) and a dataset may reseed one per item and restore it after
(torchvision's ``FakeData``). Our workers are threads of one process, and a
free thread takes the next batch: per-thread generators would still give other
values each run, so such calls are made loud instead. The first such call on
one of our worker threads in each epoch warns, naming the consequence and the
fix (each worker's own generators in ``get_worker_info().rng``).

The setters are wrapped where their modules export them, once each module is
imported and an epoch starts; a reference taken before (``from torch import
manual_seed``, ``from random import seed``) is not seen.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .._common.worker_info import get_worker_info

__all__ = ["rearm_warnings", "watch_numpy_global_rng", "watch_random", "watch_torch_global_rng"]

_lock = threading.Lock()
_watching: set[str] = set()
# The generators warned of since the current epoch started.
_warned: set[str] = set()

WARNING = (
    "{call}() was called on a dataloader_api worker thread. {what} is one per "
    "process, shared by every worker thread (each torch worker process has its own, "
    "seeded by torch), and a free thread takes the next batch: seeding it per worker "
    "does not make items reproducible, and a dataset that reseeds it per item and "
    "restores it after (torchvision's FakeData) can return another index's values. "
    "Draw from {fix} instead (each worker's own, seeded with its seed); for values that "
    "are the same in every run, seed a generator per item from the loader's seed and the "
    "index (dataloader_api.transforms pipelines are seeded so), or load with num_workers=0."
)
_GENERATORS = {
    "torch": (
        "torch's global generator",
        "torch.thread_safe_generator() or get_worker_info().rng.torch_generator",
    ),
    "random": ("The random module's generator", "get_worker_info().rng.random_generator"),
    "numpy": ("NumPy's global RandomState", "get_worker_info().rng.numpy_generator"),
}


def rearm_warnings() -> None:
    """A new epoch warns again (called when an epoch starts)."""
    _warned.clear()


def _warn(generator: str, call: str) -> None:
    with _lock:
        if generator in _warned:
            return
        _warned.add(generator)
    what, fix = _GENERATORS[generator]
    caller = sys._getframe(2)
    # warn_explicit with no registry: the user's line warns again in a later epoch or
    # loader, where the default filter would show it once per process.
    warnings.warn_explicit(
        WARNING.format(call=call, what=what, fix=fix),
        UserWarning,
        caller.f_code.co_filename,
        caller.f_lineno,
        module=caller.f_globals.get("__name__", "<unknown>"),
        registry=None,
    )


def _watched(generator: str, call: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def on_a_worker_thread_warns(*args: Any, **kwargs: Any) -> Any:
        if get_worker_info() is not None:
            _warn(generator, call)
        return original(*args, **kwargs)

    on_a_worker_thread_warns.__wrapped__ = original  # type: ignore[attr-defined]
    on_a_worker_thread_warns.watched_by_dataloader_api = True  # type: ignore[attr-defined]
    on_a_worker_thread_warns.__doc__ = original.__doc__
    on_a_worker_thread_warns.__name__ = original.__name__
    return on_a_worker_thread_warns


def _watch(generator: str, modules: list[tuple[Any, str]], names: tuple[str, ...]) -> None:
    """Wraps ``names`` in each of ``modules`` (module, the name users call it by), once."""
    with _lock:
        if generator in _watching:
            return
        wrapped: dict[int, Callable[..., Any]] = {}
        for module, prefix in modules:
            for name in names:
                original = getattr(module, name, None)
                # Ours only: torch's own setters carry __wrapped__ (its decorators).
                if original is None or getattr(original, "watched_by_dataloader_api", False):
                    continue
                if id(original) not in wrapped:
                    wrapped[id(original)] = _watched(generator, f"{prefix}.{name}", original)
                setattr(module, name, wrapped[id(original)])
        _watching.add(generator)


def watch_torch_global_rng() -> None:
    """torch's global-generator setters (``fork_rng`` calls ``set_rng_state``)."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "random"):
        _watch(
            "torch",
            [(torch, "torch"), (torch.random, "torch")],
            ("manual_seed", "seed", "set_rng_state"),
        )


def watch_random() -> None:
    """The ``random`` module's seeding and state setters (``seed_worker`` calls ``seed``)."""
    import random

    _watch("random", [(random, "random")], ("seed", "setstate"))


def watch_numpy_global_rng() -> None:
    """NumPy's legacy global state: ``np.random.seed`` and ``set_state``."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        _watch("numpy", [(numpy_random, "numpy.random")], ("seed", "set_state"))
