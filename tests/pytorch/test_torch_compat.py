"""Drop-in checks against PyTorch itself; skipped where torch is not installed
(`nox -s torch_parity` installs it)."""

from __future__ import annotations

import collections
import gc
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed; run `nox -s torch_parity`")
from torch.utils.data import DataLoader as TorchDataLoader  # noqa: E402
from torch.utils.data import Dataset as TorchDataset  # noqa: E402
from torch.utils.data import IterableDataset as TorchIterableDataset  # noqa: E402
from torch.utils.data import get_worker_info as torch_get_worker_info  # noqa: E402

import dataloader_api  # noqa: E402
from dataloader_api import DataLoader, default_collate, get_worker_info, torch_collate  # noqa: E402

Pair = collections.namedtuple("Pair", "a b")


def to_numpy(value):
    """torch's batch with tensors turned into arrays, for comparison with ours."""
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, Pair):
        return Pair(*(to_numpy(v) for v in value))
    if isinstance(value, list):
        return [to_numpy(v) for v in value]
    return value


def assert_same(ours, theirs):
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and ours.keys() == theirs.keys()
        for key in theirs:
            assert_same(ours[key], theirs[key])
    elif isinstance(theirs, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)
    else:
        assert ours == theirs


SAMPLES = [
    [1, 2, 3],
    [1.5, 2.5],
    [True, False],
    [np.float32(1), np.float32(2)],
    [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((2, 3), np.int32)],
    [
        {"x": np.zeros(2, np.float32), "y": 1, "s": "a"},
        {"x": np.ones(2, np.float32), "y": 2, "s": "b"},
    ],
    [(1, 2.0), (3, 4.0)],
    [[1, 2], [3, 4]],
    [Pair(1, np.zeros(1)), Pair(2, np.ones(1))],
    ["a", "b"],
]


@pytest.mark.parametrize("batch", SAMPLES, ids=range(len(SAMPLES)))
def test_default_collate_has_torchs_structure_and_dtypes(batch):
    assert_same(default_collate(batch), to_numpy(torch.utils.data.default_collate(batch)))


def test_tensors_are_stacked_with_torch():
    batch = default_collate([torch.zeros(2), torch.ones(2)])
    assert isinstance(batch, torch.Tensor) and batch.shape == (2, 2)
    assert isinstance(torch_collate([np.zeros(2), np.ones(2)]), torch.Tensor)


class Squares(TorchDataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return {"i": i, "sq": np.array([i * i], dtype=np.int64)}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 4},
        {"batch_size": 5, "drop_last": True},
        {"batch_size": None},
        {"batch_sampler": [[3, 1], [0], [2, 4]]},
    ],
)
def test_batches_equal_torchs_for_a_torch_dataset(kwargs):
    ours = list(DataLoader(Squares(), num_workers=2, **kwargs))
    theirs = [to_numpy(b) for b in TorchDataLoader(Squares(), num_workers=0, **kwargs)]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if kwargs.get("batch_size", 1) is None:
            assert a["i"] == b["i"] and a["sq"].tolist() == b["sq"].tolist()
        else:
            assert_same(a, b)


class TorchShards(TorchIterableDataset):
    """The idiom from torch's IterableDataset documentation."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info() or torch_get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per_worker = -(-(self.end - self.start) // info.num_workers)
        start = self.start + info.id * per_worker
        return iter(range(start, min(start + per_worker, self.end)))


def test_torch_iterable_dataset_is_sharded_like_torch():
    ours = [x.tolist() for x in DataLoader(TorchShards(3, 7), num_workers=2)]
    theirs = [x.tolist() for x in TorchDataLoader(TorchShards(3, 7), num_workers=2)]
    assert ours == theirs == [[3], [5], [4], [6]]


def test_torch_generator_drives_shuffling():
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = [b.tolist() for b in DataLoader(range(20), batch_size=5, shuffle=True, generator=g1)]
    b = [b.tolist() for b in DataLoader(range(20), batch_size=5, shuffle=True, generator=g2)]
    assert a == b and sorted(i for batch in a for i in batch) == list(range(20))


class TorchSharded(TorchIterableDataset):
    """PyTorch's documented sharding idiom, through torch's own get_worker_info."""

    def __init__(self, length):
        self.length = length
        self.seen = []

    def __iter__(self):
        info = torch_get_worker_info()
        self.seen.append(None if info is None else (info.id, info.num_workers))
        if info is None:
            return iter(range(self.length))
        return iter(range(info.id, self.length, info.num_workers))


@pytest.mark.parametrize("backend", ["threads", "rust", "cffi"])
@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_torchs_get_worker_info_shards_an_iterable_dataset(backend, num_workers):
    """It said None in our threads: every worker yielded the whole stream."""
    if backend not in dataloader_api.backends():
        pytest.skip(f"backend {backend!r} is not installed here")
    dataset = TorchSharded(10)
    loader = DataLoader(dataset, batch_size=None, num_workers=num_workers, backend=backend)
    assert sorted(int(x) for x in loader) == list(range(10))
    assert torch_get_worker_info() is None  # still None outside the workers


def test_torchs_get_worker_info_in_a_map_style_worker_matches_ours():
    class Probe(TorchDataset):
        def __len__(self):
            return 64

        def __getitem__(self, index):
            theirs, ours = torch_get_worker_info(), get_worker_info()
            return (theirs.id, theirs.num_workers, theirs.seed, ours.id, ours.seed)

    loader = DataLoader(Probe(), batch_size=4, num_workers=2, collate_fn=list)
    rows = [row for batch in loader for row in batch]
    assert len(rows) == 64
    assert {(t_id, n) for t_id, n, *_ in rows} <= {(0, 2), (1, 2)}
    assert all(t_id == o_id and t_seed == o_seed for t_id, _, t_seed, o_id, o_seed in rows)


class UnhashableProbe(list):
    """A list (unhashable) dataset that reads torch's WorkerInfo in its workers."""

    def __getitem__(self, index):
        info = torch_get_worker_info()
        return (
            info.seed,
            info.worker_method,
            info.rng.torch_generator.initial_seed(),
            info.rng.random_generator is get_worker_info().rng.random_generator,
        )


def test_torchs_worker_info_has_thread_fields_and_any_dataset():
    """torch 2.15's `rng` and `worker_method`, and a dataset that cannot be hashed."""
    loader = DataLoader(UnhashableProbe(range(8)), batch_size=None, num_workers=2)
    for seed, method, torch_seed, shared in loader:
        assert method == "thread"
        assert torch_seed == seed  # the worker's own torch generator, seeded like torch's
        assert shared  # the same generators as our WorkerInfo's


@pytest.mark.parametrize("collate_fn", [torch_collate, torch.utils.data.default_collate])
def test_torch_collation_in_our_threads_opens_no_shared_memory(collate_fn):
    """torch's collate puts batches in shared memory when it believes it runs in a
    worker process: in a thread that leaks file descriptors until they run out."""

    class Tensors(TorchDataset):
        def __len__(self):
            return 4000

        def __getitem__(self, index):
            return torch.ones(4)

    batches = DataLoader(Tensors(), batch_size=8, num_workers=2, collate_fn=collate_fn)
    assert not any(batch.is_shared() for batch in batches)


class NoLen:
    def __getitem__(self, index):
        return index

    def __repr__(self) -> str:  # a test id: the same in every process (pytest-xdist)
        return "NoLen()"


# torch's own rules, applied to both loaders (construction and one batch).
TORCH_ARGUMENT_TABLE = [
    {"shuffle": 1},
    {"shuffle": "yes"},
    {"drop_last": 1},
    {"drop_last": np.True_},
    {"pin_memory": 0},
    {"num_workers": 1, "persistent_workers": 1},
    {"num_workers": 1, "in_order": 1},
    {"batch_size": "8"},
    {"batch_size": 0},
    {"num_workers": -1},
    {"timeout": -1},
    {"prefetch_factor": 2},
    {"persistent_workers": True},
    {"shuffle": True, "sampler": [0, 1]},
    {"batch_sampler": [[0, 1]], "batch_size": 2},
    {"batch_sampler": [[0, 1]], "shuffle": True},
    {"batch_size": None, "drop_last": True},
    {"num_workers": 1, "multiprocessing_context": "thread"},
    {"dataset": NoLen(), "shuffle": True},
]


def _outcome(loader_class, kwargs):
    kwargs = dict(kwargs)
    dataset = kwargs.pop("dataset", list(range(10)))
    try:
        next(iter(loader_class(dataset, **kwargs)))
    except Exception as error:
        return type(error)
    return None


@pytest.mark.parametrize("kwargs", TORCH_ARGUMENT_TABLE, ids=repr)
def test_argument_rules_match_torchs(kwargs):
    """The same exception type as torch's DataLoader (or none), for each combination."""
    theirs = _outcome(TorchDataLoader, kwargs)
    ours = _outcome(DataLoader, kwargs)
    assert ours is theirs or (theirs is not None and ours is not None and issubclass(ours, theirs))


class SlowSecondItem(TorchDataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        if index == 1:
            import time

            time.sleep(2.0)
        return index


def timeout_message(loader_class):
    """The error of a second `next` that waits for a 2 s item with timeout=0.3.

    Only the message leaves this function, so the iterator (and, for torch, its
    worker process) is shut down on return, not by a later garbage collection
    while the next loader waits: that stall once let our slow item arrive in time."""
    loader = loader_class(SlowSecondItem(), batch_size=None, num_workers=1, timeout=0.3)
    iterator = iter(loader)
    next(iterator)
    try:
        next(iterator)
    except RuntimeError as error:
        return str(error)
    pytest.fail(f"{loader_class.__module__}.DataLoader did not time out")


def test_timeout_message_starts_with_torchs_wording():
    """Code that matches torch's message keeps working; our detail comes after it."""
    gc.collect()  # earlier tests' torch iterators join their workers now, not mid-wait
    theirs = timeout_message(TorchDataLoader)
    gc.collect()
    ours = timeout_message(DataLoader)
    assert theirs == "DataLoader timed out after 0.3 seconds"
    assert ours.startswith(theirs + ", waiting for batch 1")


class TorchLongerThanItsLen(TorchIterableDataset):
    def __len__(self):
        return 4

    def __iter__(self):
        return iter(range(10))


def warnings_of(loader_class, **kwargs):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = loader_class(**kwargs)
        if kwargs.get("batch_size") == 2:
            len(loader)
        list(loader)
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize(
    ("kwargs", "prefix"),
    [
        ({"dataset": TorchLongerThanItsLen(), "batch_size": 2}, "Length of IterableDataset"),
        (
            {"dataset": list(range(4)), "num_workers": len(os.sched_getaffinity(0)) + 1},
            "This DataLoader will create",
        ),
    ],
    ids=["iterable-longer-than-len", "more-workers-than-cpus"],
)
def test_torchs_warnings_are_given_too(kwargs, prefix):
    theirs = [m for m in warnings_of(TorchDataLoader, **kwargs) if m.startswith(prefix)]
    ours = [m for m in warnings_of(DataLoader, **kwargs) if m.startswith(prefix)]
    # At each batch past the length: torch counts that length in samples, we in
    # batches (as len(loader) does), so we warn from an earlier batch on.
    assert theirs and len(ours) >= len(theirs)


def test_private_attributes_equal_torchs():
    """What torch's own tests and some libraries read from a DataLoader."""
    import warnings

    from dataloader_api import IterableDataset as OurIterable

    class Stream(OurIterable, torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 5

    for dataset, kwargs in [
        (list(range(10)), {"batch_size": 3}),
        (list(range(10)), {"batch_size": None}),
        (Stream(), {"batch_size": 2}),
    ]:
        theirs = torch.utils.data.DataLoader(dataset, **kwargs)
        ours = DataLoader(dataset, **kwargs)
        assert ours._auto_collation == theirs._auto_collation
        assert ours._dataset_kind == theirs._dataset_kind
        if not isinstance(dataset, Stream):
            assert list(ours._index_sampler) == list(theirs._index_sampler)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert len(ours) == len(theirs)
        assert ours._IterableDataset_len_called == theirs._IterableDataset_len_called
