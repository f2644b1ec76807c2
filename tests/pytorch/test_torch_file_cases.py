"""Cases of PyTorch's own ``test/test_dataloader.py``, run side by side with torch's
loader: its error words and their order, nested tensors in the default collate,
a ``worker_init_fn`` that is a method of the dataset, and ``IterDataPipe`` graphs
(shuffle settings, one seed per epoch, sharding by worker). The whole file runs
through ``scripts/torch_test_file.py``."""

from __future__ import annotations

import itertools
import re

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader as TorchDataLoader  # noqa: E402
from torch.utils.data import get_worker_info as torch_get_worker_info  # noqa: E402
from torch.utils.data.datapipes.iter import IterableWrapper  # noqa: E402

import dataloader_api  # noqa: E402
from dataloader_api import DataLoader  # noqa: E402

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
SAMPLER = torch.utils.data.SequentialSampler(range(10))
BATCH_SAMPLER = torch.utils.data.BatchSampler(SAMPLER, 3, False)

# (arguments, the exception and the words torch's tests match)
CONSTRUCTION = [
    pytest.param({"num_workers": -1}, ValueError, "num_workers option should be non-negative",
                 id="negative-workers"),
    pytest.param({"num_workers": 0, "multiprocessing_context": "spawn"}, ValueError,
                 r"multi-process loading \(num_workers > 0\), but got", id="context-no-workers"),
    pytest.param({"num_workers": 1, "multiprocessing_context": "bad"}, ValueError,
                 "should specify a valid start method in", id="context-bad-name"),
    pytest.param({"num_workers": 1, "multiprocessing_context": object()}, TypeError,
                 "multiprocessing_context option should be a valid context ", id="context-object"),
    pytest.param({"drop_last": 3, "batch_sampler": BATCH_SAMPLER}, ValueError,
                 "batch_sampler option is mutually exclusive with", id="batch-sampler-drop-last"),
    pytest.param({"batch_sampler": BATCH_SAMPLER, "sampler": SAMPLER, "shuffle": 3}, ValueError,
                 "sampler option is mutually exclusive with shuffle", id="sampler-shuffle"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "kind", "words"), CONSTRUCTION)
def test_construction_errors_have_torchs_type_and_words(kwargs, kind, words):
    for loader_class in (TorchDataLoader, DataLoader):
        with pytest.raises(kind) as caught:
            loader_class(list(range(10)), **kwargs)
        assert re.search(words, str(caught.value)), (loader_class, caught.value)


@pytest.mark.parametrize("kind", ["nested", "sparse"])
def test_nested_and_sparse_tensors_fail_in_collate_as_in_torch(kind):
    if kind == "nested":
        items = [torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]) for _ in range(2)]
    else:
        items = [torch.eye(2).to_sparse() for _ in range(2)]
    messages = []
    for loader_class in (TorchDataLoader, DataLoader):
        with pytest.raises(RuntimeError) as caught:
            list(loader_class(items, batch_size=2))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert f"Batches of {kind} tensors are not currently supported by the default" in messages[1]


class InitOnSelf(torch.utils.data.Dataset):
    """torch's test_ind_worker_queue: ``worker_init_fn`` is a method that sets state
    on ``self``, read by ``__getitem__``."""

    def __init__(self):
        self.worker_id = None

    def __len__(self):
        return 12

    def __getitem__(self, index):
        return (self.worker_id, torch_get_worker_info().id)

    def worker_init_fn(self, worker_id):
        self.worker_id = worker_id


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_a_worker_init_method_runs_on_the_workers_copy(backend, persistent):
    def pairs(loader_class, **extra):
        dataset = InitOnSelf()
        loader = loader_class(
            dataset, batch_size=None, num_workers=2, persistent_workers=persistent,
            worker_init_fn=dataset.worker_init_fn, **extra,
        )  # fmt: skip
        got = [tuple(int(x) for x in item) for _ in range(2) for item in loader]
        return got, dataset.worker_id

    for got, untouched in (pairs(TorchDataLoader), pairs(DataLoader, backend=backend)):
        assert untouched is None  # the loader's own dataset is not the one set up
        assert all(set_up == worker for set_up, worker in got), got


def pipe(buffer_size=20):
    return IterableWrapper(list(range(100))).shuffle(buffer_size=buffer_size).sharding_filter()


def epochs(loader_class, workers, persistent, **extra):
    """torch's test_shuffler_iterdatapipe: an epoch unseeded, two from one torch seed
    and one from another."""
    loader = loader_class(
        pipe(), num_workers=workers, shuffle=True, persistent_workers=persistent, **extra
    )
    got = [[int(x[0]) for x in loader]]
    for seed in (123, 123, 321):
        torch.manual_seed(seed)
        got.append([int(x[0]) for x in loader])
    return got


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("workers", "persistent"),
    [(w, p) for w, p in itertools.product((0, 1, 2), (False, True)) if w or not p],
)
def test_a_datapipe_is_shuffled_seeded_and_sharded_as_by_torch(backend, workers, persistent):
    ours = epochs(DataLoader, workers, persistent, backend=backend)
    assert all(sorted(epoch) == list(range(100)) for epoch in ours)  # each item once
    assert ours[1] == ours[2] != ours[3]  # one seed, one order; another, another
    theirs = epochs(TorchDataLoader, workers, persistent)
    assert ours[1:] == theirs[1:]  # torch's very order from the same seed


def test_shuffle_false_turns_a_datapipes_shuffle_off():
    for loader_class in (TorchDataLoader, DataLoader):
        got = [int(x[0]) for x in loader_class(pipe(), shuffle=False, num_workers=2)]
        assert got == list(range(100))  # each worker's half, the workers in turn
