"""The errors a pipeline raises for one item; every backend raises these types."""

from __future__ import annotations

from typing import Any

__all__ = ["ImageDecodeError", "TransformError"]


class TransformError(ValueError):
    """An op could not be applied to an item (the message names the item's index)."""

    def __init__(self, index: Any, message: str, path: str | None = None) -> None:
        where = f"item {index!r}" + (f" ({path})" if path else "")
        super().__init__(f"transform of {where}: {message}")
        self.index = index
        self.path = path


class ImageDecodeError(TransformError):
    """Bytes that are not an image this pipeline decodes: corrupt, truncated, of
    another format, or larger than ``Decode(max_pixels=...)``."""
