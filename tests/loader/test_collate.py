"""default_collate / default_convert: torch's structure, NumPy output."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from dataloader_api import default_collate, default_convert

Point = collections.namedtuple("Point", "x y")


def test_numbers_become_arrays_with_torchs_dtypes():
    assert default_collate([1, 2, 3]).dtype == np.int64
    assert default_collate([1.0, 2.5]).dtype == np.float64
    assert default_collate([True, False]).dtype == np.bool_
    assert default_collate([np.float32(1), np.float32(2)]).dtype == np.float32
    assert default_collate([np.int16(1), np.int16(2)]).tolist() == [1, 2]


def test_arrays_are_stacked_on_a_new_first_axis():
    items = [np.full((3, 2), i, dtype=np.uint8) for i in range(4)]
    batch = default_collate(items)
    assert batch.shape == (4, 3, 2) and batch.dtype == np.uint8
    assert batch[2].tolist() == items[2].tolist()


def test_strings_and_bytes_stay_lists():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_nested_structures():
    batch = default_collate(
        [
            {"image": np.zeros(2, np.float32), "meta": {"id": 1, "name": "a"}, "pair": (1, 2.0)},
            {"image": np.ones(2, np.float32), "meta": {"id": 2, "name": "b"}, "pair": (3, 4.0)},
        ]
    )
    assert batch["image"].shape == (2, 2)
    assert batch["meta"]["id"].tolist() == [1, 2] and batch["meta"]["name"] == ["a", "b"]
    # Tuples become lists, as in torch.
    assert isinstance(batch["pair"], list)
    assert batch["pair"][0].tolist() == [1, 3] and batch["pair"][1].dtype == np.float64


def test_namedtuple_keeps_its_type():
    batch = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(batch, Point) and batch.x.tolist() == [1, 3]


def test_mapping_subclass_is_kept():
    class Record(collections.OrderedDict):
        pass

    batch = default_collate([Record(a=1), Record(a=2)])
    assert type(batch) is Record and batch["a"].tolist() == [1, 2]


def test_lists_are_transposed_and_checked():
    batch = default_collate([[1, 2], [3, 4]])
    assert isinstance(batch, list) and batch[0].tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])


def test_bad_elements_raise_type_errors():
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="dtype <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert_keeps_structure():
    sample = {"a": np.arange(3), "b": (1, "x"), "p": Point(1, 2)}
    converted = default_convert(sample)
    assert converted["a"] is sample["a"]
    assert converted["b"] == [1, "x"]
    assert converted["p"] == Point(1, 2)


def test_torch_collate_without_torch_says_how_to_install():
    pytest.importorskip("numpy")
    try:
        import torch  # noqa: F401
    except ImportError:
        from dataloader_api import torch_collate

        with pytest.raises(ImportError, match="pip install torch"):
            torch_collate([1, 2])
    else:
        from dataloader_api import torch_collate

        assert torch_collate([1, 2]).tolist() == [1, 2]
