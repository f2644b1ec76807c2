"""Property 14: each worker thread calls its own shallow copy of a map-style
dataset, as each torch worker process has its own: ``self`` in ``__getitem__``
is that worker's ``get_worker_info().dataset``, never the loader's dataset, one
copy per worker thread (the consumer may call a copy too, as its worker, when it
makes a batch itself: caller-runs, property 16), made anew for each epoch's workers and once for
persistent ones; state rebound on ``self`` stays with its worker. The copy
reaches the datasets the loader's dataset holds (on an attribute, in a list or
a dict): each worker calls its own copy of those too."""

from __future__ import annotations

import itertools
import threading

from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader, get_worker_info


class SelfProbe:
    """Records, per call, the thread, ``self`` and the worker's dataset; keeps a
    lazily set per-worker token on ``self``, as a lazily opened handle would be."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.token: object | None = None
        self.seen: list[tuple[int, object, object, object]] = []
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if self.token is None:
            self.token = object()
        info = get_worker_info()
        with self.lock:
            self.seen.append((threading.get_ident(), self, info and info.dataset, self.token))
        return index


@given(
    num_workers=st.integers(1, 4),
    batch_size=st.integers(1, 5),
    persistent=st.booleans(),
    epochs=st.integers(1, 3),
)
def test_each_worker_calls_its_own_copy(backend, num_workers, batch_size, persistent, epochs):
    probe = SelfProbe(40)
    loader = DataLoader(
        probe,
        batch_size=batch_size,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
    )
    copies_by_epoch = []
    for _ in range(epochs):
        probe.seen.clear()
        assert [i for b in loader for i in b.tolist()] == list(range(40))
        selves = {id(me): me for _, me, _, _ in probe.seen}
        assert probe not in selves.values(), "a worker called the loader's own dataset"
        assert all(me is dataset for _, me, dataset, _ in probe.seen)
        threads_of: dict[int, set[int]] = {}
        for thread, me, _, _ in probe.seen:
            threads_of.setdefault(id(me), set()).add(thread)
        # One copy, one worker thread (and the consumer, making batches as that worker).
        consumer = threading.get_ident()
        assert all(len(threads - {consumer}) <= 1 for threads in threads_of.values())
        assert len(selves) <= num_workers
        # The token set lazily on a copy stays that copy's.
        assert all(token is me.token for _, me, _, token in probe.seen)
        copies_by_epoch.append(selves)
    if persistent:  # one copy per worker for the loader's life
        assert len({key for selves in copies_by_epoch for key in selves}) <= num_workers
    for before, after in itertools.pairwise(copies_by_epoch):
        if not persistent:  # new copies for each epoch's workers (held: ids not reused)
            assert not before.keys() & after.keys()
    assert probe.token is None  # the loader's own dataset was never called
    loader.close()


def test_the_calling_thread_calls_the_dataset_itself():
    probe = SelfProbe(10)
    assert [i for b in DataLoader(probe, batch_size=3) for i in b.tolist()] == list(range(10))
    assert {id(me) for _, me, _, _ in probe.seen} == {id(probe)}


class Wrapper:
    """Holds probes as torch's wrappers do: on an attribute (``Subset``), in a list
    (``ConcatDataset``) or in a dict (``StackDataset(**datasets)``)."""

    def __init__(self, shape: str, length: int) -> None:
        self.shape = shape
        self.length = length
        if shape == "attribute":
            self.dataset = SelfProbe(length)
        elif shape == "dict":
            self.datasets = {"a": SelfProbe(length), "b": SelfProbe(length)}
        else:
            self.datasets = [SelfProbe(length), SelfProbe(length)]

    def held(self) -> list[SelfProbe]:
        if self.shape == "attribute":
            return [self.dataset]
        return list(self.datasets.values()) if self.shape == "dict" else list(self.datasets)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        held = self.held()
        return held[index % len(held)][index]


@given(
    shape=st.sampled_from(["attribute", "list", "dict"]),
    num_workers=st.integers(2, 4),
    batch_size=st.integers(1, 4),
    persistent=st.booleans(),
    epochs=st.integers(1, 2),
)
def test_every_dataset_inside_a_wrapper_is_per_worker(
    backend, shape, num_workers, batch_size, persistent, epochs
):
    """A dataset held by the loader's dataset is copied for each worker too, as a
    worker process unpickles its own: each inner copy is called by one thread only
    and is the one its worker's ``get_worker_info().dataset`` holds; the loader's
    own inner datasets are never called. (A probe's copies share its ``seen`` list.)"""
    wrapper = Wrapper(shape, 40)
    originals = wrapper.held()
    loader = DataLoader(
        wrapper,
        batch_size=batch_size,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
    )
    for _ in range(epochs):
        for probe in originals:
            probe.seen.clear()
        assert [i for b in loader for i in b.tolist()] == list(range(40))
        calls = [call for probe in originals for call in probe.seen]
        threads_of: dict[int, set[int]] = {}
        for thread, me, outer, token in calls:
            assert all(me is not probe for probe in originals), "the loader's own was called"
            assert any(me is own for own in outer.held()), "not its worker's inner copy"
            assert token is me.token  # state set lazily stays with its copy
            threads_of.setdefault(id(me), set()).add(thread)
        consumer = threading.get_ident()
        assert all(len(threads - {consumer}) <= 1 for threads in threads_of.values()), (
            "one inner copy was called by several worker threads"
        )
    assert all(probe.token is None for probe in originals)
    loader.close()
