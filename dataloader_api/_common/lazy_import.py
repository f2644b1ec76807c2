"""Import a module on first use: ``import dataloader_api`` then costs little, and
what a program never uses (NumPy with ``torch_collate``) is never imported."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """Stands in for ``module`` under ``alias`` in ``namespace`` (a module's globals)
    and, on the first attribute read, imports it and puts the module itself there:
    later reads cost what a plain global costs."""

    def __init__(self, module: str, namespace: dict[str, Any], alias: str) -> None:
        self._module = module
        self._namespace = namespace
        self._alias = alias

    def __getattr__(self, name: str) -> Any:
        module = importlib.import_module(self._module)
        self._namespace[self._alias] = module
        return getattr(module, name)
