"""A worker thread that reseeds or restores torch's global generator is warned.

torch's global generator is one per process. In torch's worker processes each
worker has its own, so a dataset may reseed it per item and restore it after
(torchvision's ``FakeData`` does: ``manual_seed(index)``, draw, then
``set_rng_state``). Our workers are threads of one process: such reseeds race,
and an item can draw another index's values. That cannot be made per thread,
so it is made loud: the first such call on one of our worker threads warns,
naming the consequence and the fixes.

``torch.manual_seed``, ``torch.seed`` and ``torch.set_rng_state`` (``fork_rng``
calls the last) are wrapped where torch exports them, once torch is imported
and an epoch starts; a reference taken before (``from torch import
manual_seed``) is not seen.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

from ._worker_info import get_worker_info

__all__ = ["watch_torch_global_rng"]

_WATCHED = ("manual_seed", "seed", "set_rng_state")
_lock = threading.Lock()
_watching = False
_warned = False

WARNING = (
    "torch.{name}() was called on a dataloader_api worker thread. torch's global "
    "generator is one per process, shared by every worker thread (each torch worker "
    "process has its own): items drawn from it are not reproducible, and a dataset that "
    "reseeds it per item and restores it after (torchvision's FakeData) can return another "
    "index's values. Draw from torch.thread_safe_generator() or "
    "get_worker_info().rng.torch_generator instead, or load with num_workers=0."
)


def _warn_once(name: str) -> None:
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(WARNING.format(name=name), UserWarning, stacklevel=3)


def _watched(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def on_a_worker_thread_warns(*args: Any, **kwargs: Any) -> Any:
        if get_worker_info() is not None:
            _warn_once(name)
        return original(*args, **kwargs)

    on_a_worker_thread_warns.__wrapped__ = original  # type: ignore[attr-defined]
    on_a_worker_thread_warns.__doc__ = original.__doc__
    on_a_worker_thread_warns.__name__ = original.__name__
    return on_a_worker_thread_warns


def watch_torch_global_rng() -> None:
    """Wrap torch's global-generator setters, once, if torch is imported."""
    global _watching
    torch = sys.modules.get("torch")
    if _watching or torch is None or not hasattr(torch, "random"):
        return
    with _lock:
        if _watching:
            return
        wrapped: dict[int, Callable[..., Any]] = {}
        for module in (torch, torch.random):
            for name in _WATCHED:
                original = getattr(module, name, None)
                if original is None:
                    continue
                if id(original) not in wrapped:
                    wrapped[id(original)] = _watched(name, original)
                setattr(module, name, wrapped[id(original)])
        _watching = True
