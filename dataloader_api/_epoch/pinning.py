"""``pin_memory=True``: pin torch tensors on the consumer's thread, where torch can."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["pin_function"]


def pin_function(device: str, warn: bool) -> Callable[[Any], Any] | None:
    try:
        import torch
        from torch.utils.data._utils.pin_memory import pin_memory
    except ImportError:
        torch = None
    has_accelerator = torch is not None and (
        torch.cuda.is_available()
        or (hasattr(torch, "accelerator") and torch.accelerator.is_available())
    )
    if not has_accelerator:
        if warn:
            warnings.warn(
                "pin_memory=True but no accelerator is available (or torch is not installed): "
                "batches are not pinned",
                UserWarning,
                # pin_function < _pin_or_none < start_epoch < DataLoader.__iter__ < user
                stacklevel=5,
            )
        return None

    def pin(batch: Any) -> Any:
        return pin_memory(batch, device or None)

    return pin
