"""What this library changes in other libraries, all in one place.

To be a drop-in where code it does not own runs, the loader changes a few
functions of torch, Lightning and accelerate in this process. Each change is
installed once per process, when its library has been imported: by
``DataLoader(...)`` (all of them) and when an epoch starts (torch's, as torch
may be imported later). ``available()`` says what each does, ``installed()``
which are in place, and each can be kept out: ``disable(name)`` before it is
installed, or ``DATALOADER_INTEGRATIONS_OFF=name,...`` in the environment.
The user guide (*Frameworks*) says what turning one off costs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ._torch.frameworks import LIGHTNING_CONNECTORS, hook_accelerate, hook_lightning
from ._torch.global_generators import watch_numpy_global_rng, watch_random, watch_torch_global_rng
from ._torch.lmdb_envs import share_lmdb_environments
from ._torch.worker_info_patch import patch_torch_worker_info

__all__ = ["ENV_VAR", "available", "disable", "install_present", "installed"]

ENV_VAR = "DATALOADER_INTEGRATIONS_OFF"


@dataclass(frozen=True)
class _Integration:
    what: str
    modules: tuple[str, ...]  # installed once one of these is imported
    install: Callable[[str, type | None], bool]  # (module, loader class): installed?
    needs_loader: bool = False


def _torch_worker_info(module: str, loader_class: type | None) -> bool:
    patch_torch_worker_info()
    return True


def _torch_global_rng(module: str, loader_class: type | None) -> bool:
    watch_torch_global_rng()
    return True


def _random_global_rng(module: str, loader_class: type | None) -> bool:
    watch_random()
    return True


def _numpy_global_rng(module: str, loader_class: type | None) -> bool:
    watch_numpy_global_rng()
    return True


def _lmdb_shared_env(module: str, loader_class: type | None) -> bool:
    share_lmdb_environments()
    return True


def _lightning(module: str, loader_class: type | None) -> bool:
    assert loader_class is not None
    hook_lightning(sys.modules[module], loader_class)
    return True


def _accelerate(module: str, loader_class: type | None) -> bool:
    assert loader_class is not None
    hook_accelerate(sys.modules[module], loader_class)
    return True


_INTEGRATIONS = {
    "torch_worker_info": _Integration(
        "torch.utils.data.get_worker_info() answers in our worker threads (and "
        "torch.thread_safe_generator() gives each its own generator), so datasets "
        "that shard by it work unchanged",
        ("torch.utils.data",),
        _torch_worker_info,
    ),
    "torch_global_rng": _Integration(
        "torch.manual_seed / seed / set_rng_state called on a worker thread warn once "
        "per epoch: the one global generator is shared by the threads",
        ("torch",),
        _torch_global_rng,
    ),
    "random_global_rng": _Integration(
        "random.seed / setstate called on a worker thread warn once per epoch: the "
        "random module's one generator is shared by the threads",
        ("random",),
        _random_global_rng,
    ),
    "numpy_global_rng": _Integration(
        "numpy.random.seed / set_state called on a worker thread warn once per epoch: "
        "NumPy's one global RandomState is shared by the threads",
        ("numpy.random",),
        _numpy_global_rng,
    ),
    "lmdb_shared_env": _Integration(
        "lmdb.open on a worker thread shares one environment per path and process (LMDB "
        "refuses a second), so datasets that open it lazily per worker work unchanged",
        ("lmdb",),
        _lmdb_shared_env,
    ),
    "lightning": _Integration(
        "Lightning's DDP rebuilds our loader with distributed=True, as it rebuilds "
        "torch's around a DistributedSampler",
        LIGHTNING_CONNECTORS,
        _lightning,
        needs_loader=True,
    ),
    "accelerate": _Integration(
        "Accelerator.prepare rebuilds our loader with distributed=True on several processes",
        ("accelerate.accelerator",),
        _accelerate,
        needs_loader=True,
    ),
}
_installed: set[str] = set()
_disabled: set[str] = set()
_lock = threading.Lock()


def available() -> dict[str, str]:
    """Each integration's name and what it does."""
    return {name: integration.what for name, integration in _INTEGRATIONS.items()}


def installed() -> list[str]:
    """The integrations in place in this process."""
    return sorted(_installed)


def disable(*names: str) -> None:
    """Keep these integrations out of this process (before they are installed)."""
    for name in names:
        _check_name(name, "disable")
        if name in _installed:
            raise RuntimeError(
                f"integration {name!r} is already installed in this process: disable it "
                f"before the first DataLoader, or set {ENV_VAR}={name}"
            )
    _disabled.update(names)


def install_present(loader_class: type | None) -> None:
    """Install each integration whose library is imported (those that rebuild
    loaders only when ``loader_class`` is given). Cheap when nothing is new."""
    off = _off()  # checked on every call: a wrong name is an error at once
    for name, integration in _INTEGRATIONS.items():
        if name in _installed or (integration.needs_loader and loader_class is None):
            continue
        module = next((m for m in integration.modules if m in sys.modules), None)
        if module is None or name in off:
            continue
        with _lock:
            if name not in _installed and integration.install(module, loader_class):
                _installed.add(name)


def _off() -> set[str]:
    names = {n.strip() for n in os.environ.get(ENV_VAR, "").split(",") if n.strip()}
    for name in names:
        _check_name(name, ENV_VAR)
    return names | _disabled


def _check_name(name: str, where: str) -> None:
    if name not in _INTEGRATIONS:
        raise ValueError(
            f"{where}: {name!r} is not an integration; the integrations are "
            f"{sorted(_INTEGRATIONS)!r}"
        )
