"""``Compose``: a checked sequence of ops, applied to one part of an item, and
its binding to an epoch's seed (the ``transform=`` of a loader)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._op_base import ENCODED, Kind, Op
from ._ops import op_from_dict
from ._random import ItemRandom

__all__ = ["BoundPipeline", "Compose"]


class Compose:
    """Image ops applied in order to each item, on the loader's worker threads.

    ``on`` says which part of an item is the image: ``None`` for the whole
    item, an int for a position in a tuple or list (the other parts are kept),
    a str for a key of a mapping. ``start`` is the kind of the image before the
    first op: ``"encoded"`` (bytes: begin with ``Decode()``), ``"uint8"`` or
    ``"float32"`` (an HWC array; a Pillow image counts as ``uint8``). The ops
    are checked against each other here, so a misordered pipeline fails when
    it is built, not in a worker.
    """

    def __init__(self, ops: Sequence[Op], on: int | str | None = None, start: str | None = None):
        if isinstance(ops, Op) or not isinstance(ops, Sequence):
            raise TypeError(f"Compose: ops should be a list of transforms, but got ops={ops!r}")
        for position, op in enumerate(ops):
            if not isinstance(op, Op):
                raise TypeError(
                    f"Compose: ops[{position}] should be a dataloader_api.transforms op "
                    f"(for a Python function, pass it as transform= directly), but got {op!r}"
                )
        if on is not None and (isinstance(on, bool) or not isinstance(on, (int, str))):
            raise TypeError(
                f"Compose: on should be None, an int (tuple position) or a str (mapping key), "
                f"but got on={on!r}"
            )
        if start is None:
            start = "encoded" if ops and ops[0].name == "decode" else "uint8"
        kinds = {"encoded": ENCODED, "uint8": ("uint8", "HWC"), "float32": ("float32", "HWC")}
        if start not in kinds:
            raise ValueError(
                f"Compose: start should be one of {sorted(kinds)}, but got start={start!r}"
            )
        kind: Kind = kinds[start]
        for position, op in enumerate(ops):
            try:
                kind = op.output_kind(kind)
            except (TypeError, ValueError) as error:
                raise type(error)(f"Compose: ops[{position}]: {error}") from None
        self.ops: tuple[Op, ...] = tuple(ops)
        self.on = on
        self.start = start
        self.output = kind
        self.random = any(op.random for op in ops)

    def __repr__(self) -> str:
        ops = ", ".join(map(repr, self.ops))
        return f"Compose([{ops}], on={self.on!r}, start={self.start!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Compose) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.ops, self.on, self.start))

    def to_dict(self) -> dict[str, Any]:
        """The pipeline as plain data (what a native backend reads)."""
        return {"on": self.on, "start": self.start, "ops": [op.to_dict() for op in self.ops]}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Compose:
        return cls(
            [op_from_dict(dict(r)) for r in record["ops"]], record.get("on"), record.get("start")
        )

    def bind(self, epoch_seed: int) -> BoundPipeline:
        """The pipeline as ``transform(index, item)`` for one epoch."""
        return BoundPipeline(self, epoch_seed)

    def __call__(self, item: Any, index: Any = 0, epoch_seed: int = 0) -> Any:
        """Apply to one item outside a loader (random ops keyed by ``epoch_seed`` and ``index``)."""
        return BoundPipeline(self, epoch_seed)(index, item)


class BoundPipeline:
    """A pipeline and an epoch's seed: the loader's ``transform(index, item)``."""

    __slots__ = ("_run", "epoch_seed", "pipeline")

    def __init__(self, pipeline: Compose, epoch_seed: int) -> None:
        from ._reference import run_ops  # Pillow and NumPy are imported when first used

        self.pipeline = pipeline
        self.epoch_seed = epoch_seed
        self._run = run_ops

    def __call__(self, index: Any, item: Any) -> Any:
        pipeline = self.pipeline
        random = ItemRandom(self.epoch_seed, index) if pipeline.random else None
        image = self.image_of(item, index)
        return self.put(item, self._run(pipeline.ops, image, random, index))

    def image_of(self, item: Any, index: Any = None) -> Any:
        """The part of ``item`` the pipeline transforms (``Compose``'s ``on=``)."""
        on = self.pipeline.on
        if on is None:
            return item
        try:
            return item[on]
        except (LookupError, TypeError):
            which = f"item {index!r}" if index is not None else "the item"
            raise TypeError(
                f"transform: the pipeline takes the image from item[{on!r}] (Compose's on=), "
                f"but {which} is {type(item).__name__} without it"
            ) from None

    def put(self, item: Any, image: Any) -> Any:
        """``item`` with its image replaced by the transformed ``image``."""
        on = self.pipeline.on
        if on is None:
            return image
        if isinstance(item, Mapping):
            changed = dict(item)
            changed[on] = image
            return changed
        parts = list(item)
        parts[on] = image  # type: ignore[index]
        return tuple(parts) if isinstance(item, tuple) else parts
