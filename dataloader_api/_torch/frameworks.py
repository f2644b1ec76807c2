"""Training frameworks shard our loader as they shard torch's.

Lightning (``Trainer(strategy="ddp")``) and accelerate (``Accelerator.prepare``)
give each rank its share of a ``torch.utils.data.DataLoader`` by rebuilding it
around a ``DistributedSampler``; anything else they pass through untouched, so
our loader would load every batch on every rank. When one of them is imported,
its dataloader step is wrapped once (``integrations``: "lightning",
"accelerate") so that our loader is rebuilt instead with
``distributed=True`` (``DataLoader._sharded_copy``): the items stay on our
threads. Where the copy cannot be made (iterable datasets, a user's sampler,
``distributed`` given) the loader is passed on as before and the epoch-start
warning of ``_common.distributed_ranks`` names the fix: never a silent duplicate.

NOTE: the wrapped methods are private to each framework. They are looked up by
name and left alone when missing or of another shape; the torch nox session
runs both frameworks for real with two processes (``tests/pytorch/frameworks/``).
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any

__all__ = ["LIGHTNING_CONNECTORS", "hook_accelerate", "hook_lightning"]

#: Lightning's module whose data connector prepares the loaders (both packagings)
LIGHTNING_CONNECTORS = (
    "lightning.pytorch.trainer.connectors.data_connector",
    "pytorch_lightning.trainer.connectors.data_connector",
)


def _has_parameters(function: Any, names: tuple[str, ...]) -> bool:
    try:
        parameters = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return parameters[: len(names)] == names


def hook_lightning(module: Any, loader_class: type) -> None:
    """Wrap the data connector of ``module`` and of the other packaging if imported."""
    for name in LIGHTNING_CONNECTORS:
        other = sys.modules.get(name)
        if other is not None and other is not module:
            _hook_lightning(other, loader_class)
    _hook_lightning(module, loader_class)


def _hook_lightning(module: Any, loader_class: type) -> None:
    connector = getattr(module, "_DataConnector", None)
    original = getattr(connector, "_prepare_dataloader", None)
    if original is None or not _has_parameters(original, ("self", "dataloader", "shuffle", "mode")):
        return

    def _prepare_dataloader(self: Any, dataloader: object, shuffle: bool, mode: Any) -> object:
        if isinstance(dataloader, loader_class):
            settings = self.trainer._accelerator_connector
            if settings.use_distributed_sampler and settings.is_distributed:
                # Lightning seeds its DistributedSampler from seed_everything's seed.
                seed = int(os.environ.get("PL_GLOBAL_SEED", 0))
                sharded = dataloader._sharded_copy(seed)  # type: ignore[attr-defined]
                if sharded is not None:
                    return sharded
            return dataloader
        return original(self, dataloader, shuffle, mode)

    setattr(connector, "_prepare_dataloader", _prepare_dataloader)  # noqa: B010

    # Lightning checks that a loader other than torch's is iterable by calling
    # iter() on it: for ours that would start (and warn about) an epoch of the
    # unsharded original. Ours is always iterable, as torch's is.
    check = getattr(module, "_check_dataloader_iterable", None)
    if check is not None and _has_parameters(check, ("dataloader", "source", "trainer_fn")):

        def _check_dataloader_iterable(dataloader: object, *args: Any, **kwargs: Any) -> None:
            if not isinstance(dataloader, loader_class):
                check(dataloader, *args, **kwargs)

        # The loops import the function by name: replace it wherever it is bound.
        for holder in list(sys.modules.values()):
            if getattr(holder, "_check_dataloader_iterable", None) is check:
                setattr(holder, "_check_dataloader_iterable", _check_dataloader_iterable)  # noqa: B010


def hook_accelerate(module: Any, loader_class: type) -> None:
    accelerator = getattr(module, "Accelerator", None)
    original = getattr(accelerator, "_prepare_one", None)
    if original is None or not _has_parameters(original, ("self", "obj", "first_pass")):
        return

    def _prepare_one(self: Any, obj: Any, first_pass: bool = False, **kwargs: Any) -> Any:
        if first_pass and isinstance(obj, loader_class) and self.num_processes > 1:
            sharded = obj._sharded_copy()  # type: ignore[attr-defined]
            if sharded is not None:
                return sharded
        return original(self, obj, first_pass=first_pass, **kwargs)

    setattr(accelerator, "_prepare_one", _prepare_one)  # noqa: B010
