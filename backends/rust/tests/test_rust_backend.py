"""What the Rust backend adds beyond the contract: native collation identical
to ``default_collate``, items of one batch fetched in parallel, and its pool."""

from __future__ import annotations

import collections
import sys
import sysconfig
import threading

import dataloader_rust
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dataloader_api import DataLoader
from dataloader_api.collate import default_collate
from dataloader_api.contract import BatchJob


class Items:
    """A map-style dataset over a list of ready samples."""

    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        return self.samples[index]


def one_batch(samples):
    """The batch the Rust pool builds for ``samples`` with the default collate."""
    pool = dataloader_rust.RustBackend().create_pool(_spec(1))
    try:
        stream = pool.map_batches(
            [BatchJob(0, list(range(len(samples))))],
            lambda indices: [samples[i] for i in indices],
            default_collate,
            window=1,
            in_order=True,
            timeout=None,
            on_timeout=lambda position: TimeoutError(position),
        )
        return next(stream)
    finally:
        pool.close()


def _spec(threads, items_in_parallel=1):
    from dataloader_api.contract import PoolSpec

    return PoolSpec(threads, lambda worker_id: None, "test", items_in_parallel)


def assert_same(native, python):
    assert type(native) is type(python)
    if isinstance(python, np.ndarray):
        assert native.dtype == python.dtype
        assert native.shape == python.shape
        assert native.flags.c_contiguous
        np.testing.assert_array_equal(native, python)
    elif isinstance(python, dict):
        assert list(native) == list(python)
        for key in python:
            assert_same(native[key], python[key])
    elif isinstance(python, list | tuple):
        assert len(native) == len(python)
        for a, b in zip(native, python, strict=True):
            assert_same(a, b)
    else:
        assert native == python


DTYPES = st.sampled_from(
    [
        "bool",
        "uint8",
        "int16",
        "int32",
        "int64",
        "float16",
        "float32",
        "float64",
        "complex64",
        ">f4",
        "<i8",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    dtype=DTYPES,
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    count=st.integers(1, 6),
    data=st.data(),
)
def test_native_stack_equals_default_collate(dtype, shape, count, data):
    samples = [data.draw(hnp.arrays(dtype, shape)) for _ in range(count)]
    assert_same(one_batch(samples), default_collate(samples))


def test_nested_samples_equal_default_collate():
    Point = collections.namedtuple("Point", "x y")
    samples = [
        {
            "image": np.full((3, 4, 4), i, np.float32),
            "label": i,
            "pair": (np.arange(2) + i, np.float64(i)),
            "name": f"s{i}",
            "point": Point(i, np.ones(2)),
            "nested": [{"a": np.zeros(1, np.uint8) + i}],
        }
        for i in range(5)
    ]
    assert_same(one_batch(samples), default_collate(samples))


def test_large_arrays_are_stacked_natively():
    samples = [np.random.default_rng(i).random((64, 64, 3)) for i in range(8)]
    assert_same(one_batch(samples), default_collate(samples))


def test_native_path_does_not_call_numpy_stack(monkeypatch):
    calls = []
    real_stack = np.stack
    monkeypatch.setattr(np, "stack", lambda *a, **k: calls.append(1) or real_stack(*a, **k))
    samples = [np.ones((2, 2), np.float32) * i for i in range(4)]
    one_batch(samples)
    assert calls == [], "same-shape float32 arrays should be stacked in Rust"
    one_batch([np.ones((2, 2)).T, np.ones((2, 2))])  # not C-contiguous: Python's path
    assert calls == [1]


@pytest.mark.parametrize(
    "samples",
    [
        [np.ones(2), np.ones(3)],  # shapes differ: NumPy's own error
        [np.ones(2, np.float32), np.ones(2, np.float64)],  # dtypes differ: np.stack promotes
        [np.array(["a"]), np.array(["b"])],  # strings: default_collate's TypeError
        [np.ones(2), 3],
        [{"a": 1}, {"b": 2}],
        [(1, 2), (1,)],
    ],
)
def test_fallback_gives_python_result_or_error(samples):
    try:
        expected = default_collate(samples)
    except Exception as error:
        with pytest.raises(type(error), match=str(error).replace("(", r"\(").replace(")", r"\)")):
            one_batch(samples)
    else:
        assert_same(one_batch(samples), expected)


class ThreadNames:
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return index, threading.get_ident()


def test_items_in_parallel_fetches_one_batch_on_several_threads():
    barrier = threading.Barrier(2, timeout=10)

    class NeedsTwo:
        def __len__(self):
            return 4

        def __getitem__(self, index):
            barrier.wait()  # only passes if two items of the batch run at once
            return index

    loader = DataLoader(
        NeedsTwo(),
        batch_size=4,
        num_workers=2,
        backend="rust",
        items_in_parallel=2,
        collate_fn=list,
    )
    assert list(loader) == [[0, 1, 2, 3]]


def test_items_in_parallel_keeps_index_order_and_errors():
    loader = DataLoader(
        ThreadNames(),
        batch_size=16,
        num_workers=2,
        backend="rust",
        items_in_parallel=4,
        shuffle=True,
        seed=3,
    )
    plain = DataLoader(
        ThreadNames(), batch_size=16, num_workers=2, backend="rust", shuffle=True, seed=3
    )
    assert [b[0].tolist() for b in loader] == [b[0].tolist() for b in plain]

    class Fails(Items):
        def __getitem__(self, index):
            if index == 5:
                raise LookupError("item 5")
            return index

    failing = DataLoader(
        Fails(list(range(8))), batch_size=8, num_workers=2, backend="rust", items_in_parallel=2
    )
    with pytest.raises(LookupError, match="item 5"):
        list(failing)


def test_pool_reports_its_settings_and_closes_once():
    pool = dataloader_rust.RustBackend().create_pool(_spec(3, items_in_parallel=2))
    assert (pool.num_threads, pool.items_in_parallel, pool.attach_once) == (3, 2, True)
    pool.close()
    pool.close()
    assert pool.closed
    with pytest.raises(RuntimeError, match="closed"):
        pool.map_batches(
            [], list, list, window=1, in_order=True, timeout=None, on_timeout=TimeoutError
        )


def test_bad_pool_arguments_are_value_errors():
    with pytest.raises(ValueError, match="num_threads must be at least 1"):
        dataloader_rust.Pool(0, lambda i: None)
    with pytest.raises(ValueError, match="items_in_parallel must be at least 1"):
        dataloader_rust.Pool(1, lambda i: None, "x", 0)
    pool = dataloader_rust.Pool(1, lambda i: None)
    try:
        with pytest.raises(ValueError, match="window must be at least 1"):
            pool.map_batches(
                [], list, list, window=0, in_order=True, timeout=None, on_timeout=TimeoutError
            )
        with pytest.raises(ValueError, match="timeout must be a positive number"):
            pool.map_batches(
                [], list, list, window=1, in_order=True, timeout=-1.0, on_timeout=TimeoutError
            )
    finally:
        pool.close()


def test_unknown_attach_mode_is_named(monkeypatch):
    monkeypatch.setenv("DATALOADER_RUST_ATTACH", "sometimes")
    with pytest.raises(ValueError, match="DATALOADER_RUST_ATTACH='sometimes' is not one of once"):
        dataloader_rust.RustBackend().create_pool(_spec(1))


@pytest.mark.skipif(
    not sysconfig.get_config_var("Py_GIL_DISABLED"), reason="needs a free-threaded CPython build"
)
def test_import_keeps_the_gil_disabled():
    assert not sys._is_gil_enabled()


def test_native_collation_survives_the_loaders_timing_wrapper(monkeypatch):
    calls = []
    real_stack = np.stack
    monkeypatch.setattr(np, "stack", lambda *a, **k: calls.append(1) or real_stack(*a, **k))
    samples = [np.full((3, 8, 8), i, np.float32) for i in range(32)]
    loader = DataLoader(
        Items(samples), batch_size=8, num_workers=2, backend="rust", collect_stats=True
    )
    batches = list(loader)
    assert calls == []
    assert [b.shape for b in batches] == [(8, 3, 8, 8)] * 4
    assert loader.stats().collate_seconds > 0  # reported by the native path
