"""What the Rust backend adds beyond the contract: native collation identical
to ``default_collate``, items of one batch fetched in parallel with their time
reported, its pool, and how it reads the contract's values."""

from __future__ import annotations

import collections
import re
import sys
import sysconfig
import threading
from types import SimpleNamespace

import dataloader_rust
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dataloader_api import DataLoader, default_collate
from dataloader_api.contract import BatchJob, IterWork, MapWork, PoolSpec, StreamSpec

STREAM = StreamSpec(1, on_timeout=lambda position: TimeoutError(position))


class Items:
    """A map-style dataset over a list of ready samples."""

    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        return self.samples[index]


def one_batch(samples, collate=default_collate, native=True, stats=None, given=default_collate):
    """The batch the Rust pool builds for ``samples`` (the default collate: natively)."""
    pool = dataloader_rust.RustBackend().create_pool(_spec(1))
    try:
        work = MapWork(
            [BatchJob(0, list(range(len(samples))))],
            lambda indices: [samples[i] for i in indices],
            collate,
            default_collate=given if native else None,
            stats=stats,
        )
        return next(pool.map_batches(work, STREAM))
    finally:
        pool.close()


def _spec(threads, items_in_parallel=1):
    return PoolSpec(threads, lambda worker_id: None, "test", items_in_parallel)


class Sink:
    """A ``StatsSink`` that keeps what it is told."""

    def __init__(self):
        self.fetches = []
        self.collates = []

    def record_fetch(self, seconds, items):
        self.fetches.append((seconds, items))

    def record_collate(self, seconds):
        self.collates.append(seconds)


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


def test_dicts_with_different_keys_go_to_default_collate_which_names_the_key():
    """A key only a later dict has is not dropped natively: the Python function
    raises, naming it and the position (issue 43)."""
    samples = [{"image": np.ones(2, np.float32), "label": i} for i in range(3)]
    samples[2]["extra"] = 1
    with pytest.raises(KeyError, match=r"batch\[2\] has \['extra'\]"):
        one_batch(samples)
    del samples[1]["label"]
    with pytest.raises(KeyError, match=r"batch\[1\] lacks \['label'\]"):
        one_batch(samples)


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


def test_only_default_collate_turns_native_collation_on(monkeypatch):
    calls = []
    real_stack = np.stack
    monkeypatch.setattr(np, "stack", lambda *a, **k: calls.append(1) or real_stack(*a, **k))
    samples = [np.ones((2, 2), np.float32) * i for i in range(4)]
    # default_collate itself, but not declared so: called as the user's function.
    batch = one_batch(samples, native=False)
    assert calls == [1]
    assert_same(batch, default_collate(samples))


def test_what_is_not_collated_natively_goes_to_the_contracts_default_collate():
    """The fallback is ``MapWork.default_collate`` as given: the backend imports
    nothing of the loader (it imported ``dataloader_api.default_collate``)."""
    calls = []

    def given(batch):
        calls.append(len(batch))
        return default_collate(batch)

    samples = [{"name": f"item{i}", "x": np.ones(2, np.int8) * i} for i in range(3)]
    batch = one_batch(samples, given=given)
    assert_same(batch, default_collate(samples))
    assert calls  # the strings went to the given function


def test_native_collation_reports_to_stats_instead_of_calling_collate():
    called = []

    def timed_default_collate(batch):  # what the loader passes with stats on
        called.append(1)
        return default_collate(batch)

    sink = Sink()
    samples = [np.full((2, 3), i, np.int16) for i in range(3)]
    batch = one_batch(samples, collate=timed_default_collate, stats=sink)
    assert_same(batch, default_collate(samples))
    assert called == []
    assert len(sink.collates) == 1
    assert sink.collates[0] >= 0
    # Not collated natively: collate times itself, the sink hears nothing.
    sink = Sink()
    one_batch(samples, collate=timed_default_collate, native=False, stats=sink)
    assert (called, sink.collates) == ([1], [])


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
        with pytest.raises(type(error), match=re.escape(str(error))):
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


def test_items_in_parallel_reports_fetch_time_to_stats():
    samples = list(range(10))
    pool = dataloader_rust.RustBackend().create_pool(_spec(2, items_in_parallel=2))
    try:
        sink = Sink()
        work = MapWork(
            [BatchJob(0, [3, 1, 4]), BatchJob(1, [5, 9])],
            lambda indices: pytest.fail("fetch is replaced by getitem"),
            list,
            getitem=samples.__getitem__,
            stats=sink,
        )
        assert list(pool.map_batches(work, StreamSpec(2))) == [[3, 1, 4], [5, 9]]
        # Two workers fetch the two batches at once; either may report first.
        assert sorted(items for _, items in sink.fetches) == [2, 3]
        assert sink.collates == []  # collate (list) is the caller's, not replaced
    finally:
        pool.close()


def test_getitem_is_ignored_on_a_pool_without_items_in_parallel():
    pool = dataloader_rust.RustBackend().create_pool(_spec(2))
    try:
        work = MapWork(
            [BatchJob(0, [1, 2])],
            lambda indices: [i * 10 for i in indices],
            list,
            getitem=lambda index: pytest.fail("getitem needs items_in_parallel > 1"),
        )
        assert list(pool.map_batches(work, STREAM)) == [[10, 20]]
    finally:
        pool.close()


def test_pool_reports_its_settings_and_closes_once():
    pool = dataloader_rust.RustBackend().create_pool(_spec(3, items_in_parallel=2))
    assert (pool.num_threads, pool.items_in_parallel, pool.attach_once) == (3, 2, True)
    pool.close()
    pool.close()
    assert pool.closed
    with pytest.raises(RuntimeError, match="closed"):
        pool.map_batches(MapWork([], list, list), STREAM)
    with pytest.raises(RuntimeError, match="closed"):
        pool.stream_batches(IterWork(lambda i: iter([]), 1), STREAM)


def test_bad_specs_are_refused_by_the_contract():
    with pytest.raises(ValueError, match=r"PoolSpec.num_threads must be an int >= 1"):
        PoolSpec(0, lambda i: None)
    with pytest.raises(ValueError, match=r"StreamSpec.window must be an int >= 1"):
        StreamSpec(0)
    with pytest.raises(ValueError, match=r"StreamSpec.timeout must be > 0 or None"):
        StreamSpec(1, timeout=-1.0)
    with pytest.raises(ValueError, match=r"IterWork.num_streams must be an int >= 1"):
        IterWork(lambda i: iter([]), 0)


def _pool_spec(**fields):
    values = {
        "num_threads": 1,
        "thread_init": lambda i: None,
        "name": "t",
        "items_in_parallel": 1,
        "stack_size": 8 << 20,
    }
    return SimpleNamespace(**{**values, **fields})


def _stream(**fields):
    values = {"window": 1, "in_order": True, "timeout": None, "on_timeout": TimeoutError}
    return SimpleNamespace(**{**values, **fields})


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"num_threads": 0}, ValueError, r"PoolSpec.num_threads must be an int >= 1, got 0"),
        ({"num_threads": True}, ValueError, r"PoolSpec.num_threads must be an int >= 1"),
        ({"num_threads": 2.0}, ValueError, r"PoolSpec.num_threads must be an int >= 1"),
        ({"num_threads": 2**70}, ValueError, r"more than this backend can hold"),
        ({"num_threads": 10**6}, ValueError, r"more than rayon runs in one pool"),
        ({"items_in_parallel": -1}, ValueError, r"PoolSpec.items_in_parallel must be"),
        ({"name": None}, TypeError, r"PoolSpec.name must be a str"),
        ({"stack_size": 0}, ValueError, r"PoolSpec.stack_size must be an int >= 1, got 0"),
        ({"thread_init": None}, TypeError, r"'NoneType' object is not callable"),
    ],
)
def test_a_hand_built_pool_spec_gets_python_errors(fields, error, match):
    with pytest.raises(error, match=match):
        dataloader_rust.Pool(_pool_spec(**fields))


def test_a_pool_spec_missing_a_field_is_named():
    spec = _pool_spec()
    del spec.thread_init
    with pytest.raises(TypeError, match=r"expected a dataloader_api.contract.PoolSpec, got a "):
        dataloader_rust.Pool(spec)


def test_a_thread_name_with_a_nul_byte_is_accepted():
    pool = dataloader_rust.Pool(_pool_spec(name="a\0b"))
    pool.close()


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"window": 0}, ValueError, r"StreamSpec.window must be an int >= 1, got 0"),
        ({"window": "2"}, ValueError, r"StreamSpec.window must be an int >= 1, got '2'"),
        ({"timeout": -1.0}, ValueError, r"StreamSpec.timeout must be > 0 or None, got -1.0"),
        ({"timeout": float("nan")}, ValueError, r"StreamSpec.timeout must be > 0 or None"),
        ({"timeout": "soon"}, TypeError, r"StreamSpec.timeout must be a number of seconds"),
    ],
)
def test_a_hand_built_stream_spec_gets_python_errors(fields, error, match):
    pool = dataloader_rust.RustBackend().create_pool(_spec(1))
    try:
        with pytest.raises(error, match=match):
            pool.map_batches(MapWork([], list, list), _stream(**fields))
        with pytest.raises(error, match=match):
            pool.stream_batches(IterWork(lambda i: iter([]), 1), _stream(**fields))
    finally:
        pool.close()


def test_hand_built_work_gets_python_errors():
    pool = dataloader_rust.RustBackend().create_pool(_spec(1, items_in_parallel=2))
    try:
        work = SimpleNamespace(
            jobs=[], fetch=list, collate=list, default_collate=1, getitem=None, stats=None
        )
        with pytest.raises(
            TypeError, match=r"MapWork.default_collate must be callable or None, got 1"
        ):
            pool.map_batches(work, STREAM)
        work = MapWork([], list, default_collate, default_collate=default_collate, stats=object())
        with pytest.raises(TypeError, match=r"StatsSink, .* type object without .record_collate"):
            pool.map_batches(work, STREAM)
        work = MapWork([], list, list, getitem=print, stats=SimpleNamespace())
        with pytest.raises(TypeError, match=r"StatsSink, .* SimpleNamespace without .record_fetch"):
            pool.map_batches(work, STREAM)
        with pytest.raises(TypeError, match=r"expected a dataloader_api.contract.MapWork"):
            pool.map_batches(IterWork(lambda i: iter([]), 1), STREAM)
        with pytest.raises(TypeError, match="'int' object is not iterable"):
            pool.map_batches(MapWork(3, list, list), STREAM)
        streams = SimpleNamespace(open_stream=lambda i: iter([]), num_streams=2**62)
        with pytest.raises(MemoryError, match="cannot allocate buffers for"):
            pool.stream_batches(streams, STREAM)
        streams.num_streams = 0
        with pytest.raises(ValueError, match=r"IterWork.num_streams must be an int >= 1, got 0"):
            pool.stream_batches(streams, STREAM)
    finally:
        pool.close()


def test_a_timeout_too_long_for_rust_means_no_timeout():
    pool = dataloader_rust.RustBackend().create_pool(_spec(1))
    try:
        for timeout in (1e300, float("inf")):
            spec = _stream(timeout=timeout)
            work = MapWork([BatchJob(0, [1]), BatchJob(1, [2])], list, list)
            assert list(pool.map_batches(work, spec)) == [[1], [2]]
            streams = IterWork(lambda i: iter([[i]]), 1)
            assert list(pool.stream_batches(streams, spec)) == [[0]]
    finally:
        pool.close()


ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70),
    st.sampled_from([2**62, 2**64, 2**70, -(2**70)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.sampled_from([object(), len, [], [BatchJob(0, [1])], SimpleNamespace()]),
)
FIELDS = {
    "map": ["jobs", "fetch", "collate", "default_collate", "getitem", "stats"],
    "iter": ["open_stream", "num_streams"],
    "stream": ["window", "in_order", "timeout", "on_timeout"],
}


@pytest.fixture(scope="module")
def fuzz_pool():
    pool = dataloader_rust.RustBackend().create_pool(_spec(2, items_in_parallel=2))
    yield pool
    pool.close()


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["map", "iter"]), data=st.data())
def test_no_value_makes_rust_panic(fuzz_pool, kind, data):
    """Whatever the fields hold, starting an epoch returns a stream or raises an
    ordinary Exception; a Rust panic would surface as PanicException, a BaseException."""
    work = SimpleNamespace(**{name: data.draw(ANYTHING, name) for name in FIELDS[kind]})
    stream = SimpleNamespace(**{name: data.draw(ANYTHING, name) for name in FIELDS["stream"]})
    start = fuzz_pool.map_batches if kind == "map" else fuzz_pool.stream_batches
    try:
        batches = start(work, stream)
    except Exception:
        return
    batches.close()


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
