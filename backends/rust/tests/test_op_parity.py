"""Each op is described once per language, and the two descriptions agree: every
Python op (``transforms._ops.OPS``) has a row in the native parser's table
(``backends/rust/src/images/pipeline_record.rs``) and every row a Python op, and each
row reads exactly the fields of its op's record (``Op.to_dict()``)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from dataloader_rust import _native as native

from dataloader_api import transforms as T
from dataloader_api.transforms._ops import OPS

# One op of each kind, with the arguments it needs (an op without required
# arguments need not be listed). A new op with required arguments gets a row.
SAMPLES: dict[str, T.Op] = {
    op.name: op
    for op in (
        T.Crop(0, 0, 2, 2),
        T.CenterCrop(2),
        T.Resize(2),
        T.RandomResizedCrop(2),
        T.RandomCrop(2),
        T.PadTo(2, 2),
        T.Normalize(0.5, 0.5),
        T.RandomApply([T.HFlip()]),
        T.RandomChoice([T.HFlip(), T.VFlip()], p=[1, 3]),
        T.RandomOrder([T.HFlip(), T.RandomSolarize(9)]),
        T.AdjustBrightness(1.5),
        T.AdjustContrast(1.5),
        T.AdjustSaturation(1.5),
        T.AdjustHue(0.1),
        T.RandomSolarize(128),
        T.RandomPosterize(4),
        T.RandomAdjustSharpness(2.0),
        T.GaussianBlur(3),
    )
}


def sample(name: str) -> T.Op:
    if name in SAMPLES:
        return SAMPLES[name]
    try:
        return OPS[name]()
    except TypeError as error:  # pragma: no cover - the message is the point
        raise AssertionError(
            f"{name} needs arguments: add a sample of it to SAMPLES in {__file__}"
        ) from error


def test_every_op_is_described_in_both_languages() -> None:
    python, rust = set(OPS), set(native.pipeline_ops())
    assert not python - rust, f"ops with no row in pipeline_record.rs: {sorted(python - rust)}"
    assert not rust - python, f"native rows with no Python op: {sorted(rust - python)}"
    assert len(native.pipeline_ops()) == len(rust), "an op with two native rows"


@pytest.mark.parametrize("name", sorted(OPS))
def test_the_native_parser_reads_the_records_own_fields(name: str) -> None:
    op = sample(name)
    record: dict[str, Any] = op.to_dict()
    assert set(record) - {"op"} == {f.name for f in fields(op)}  # type: ignore[arg-type]
    read = native.pipeline_fields(record)
    assert len(read) == len(set(read)), f"{name}: a field read twice: {read}"
    assert set(read) == set(record) - {"op"}, (
        f"{name}: the native parser reads {sorted(read)}, the record holds "
        f"{sorted(set(record) - {'op'})}"
    )


def test_the_samples_are_ops_of_the_registry() -> None:
    for name, op in SAMPLES.items():
        assert OPS[name] is type(op)
