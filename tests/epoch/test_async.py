"""Async datasets: coroutine items awaited on the loader's event loop."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import traceback

import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.testing import wait_until

BACKENDS = [None, *[n for n in dataloader_api.backends() if not n.startswith("broken-")]]


class Sleepy:
    """Each item awaits ``seconds``; records starts, ends and cancellations."""

    def __init__(
        self, length: int = 1000, seconds: float = 0.05, fail: int | None = None, fast: int = 0
    ):
        self.length, self.seconds, self.fail, self.fast = length, seconds, fail, fast
        self.cancelled: list[int] = []
        self.cleaned: list[int] = []

    def __len__(self) -> int:
        return self.length

    async def __getitem__(self, index: int) -> int:
        try:
            await asyncio.sleep(0 if index < self.fast else self.seconds)
        except asyncio.CancelledError:
            self.cancelled.append(index)
            await asyncio.sleep(0.01)  # async clean-up, awaited to its end
            self.cleaned.append(index)
            raise
        if index == self.fail:
            raise KeyError(f"item {index} is missing")
        return index


def workers_for(backend):
    return 0 if backend is None else 2


@pytest.mark.timing
@pytest.mark.parametrize("backend", BACKENDS)
def test_items_overlap_on_the_event_loop(backend):
    dataset = Sleepy()
    loader = DataLoader(dataset, batch_size=50, num_workers=workers_for(backend), backend=backend)
    seen = [i for batch in loader for i in batch.tolist()]
    assert seen == list(range(1000))
    # A batch's items run together; with workers, every batch of the window too.
    # Counted, not timed: a loaded machine changes the seconds, not the overlap.
    assert loader._state.runner.peak_in_flight >= (50 if backend is None else 150)


def test_agetitem_and_single_items():
    class Named:
        def __len__(self):
            return 6

        def __getitem__(self, index):
            raise AssertionError("the sync getter must not be used")

        async def __agetitem__(self, index):
            await asyncio.sleep(0)
            return {"index": index}

    loader = DataLoader(Named(), batch_size=None, num_workers=2)
    assert [b["index"] for b in loader] == list(range(6))


def test_max_concurrency_caps_items_in_flight():
    loader = DataLoader(Sleepy(200, 0.01), batch_size=20, num_workers=2, max_concurrency=5)
    assert sum(len(b) for b in loader) == 200
    assert loader._state.runner.peak_in_flight == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failing_item_raises_its_own_exception(backend):
    dataset = Sleepy(40, 0.001, fail=13)
    it = iter(DataLoader(dataset, batch_size=10, num_workers=workers_for(backend), backend=backend))
    assert next(it).tolist() == list(range(10))
    with pytest.raises(KeyError, match="item 13 is missing") as caught:
        next(it)
    frames = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert "__getitem__" in frames  # the user's coroutine frame is kept
    assert [b.tolist()[0] for b in it] == [20, 30]  # the epoch goes on


@pytest.mark.timing
@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_closing_cancels_running_items_and_awaits_their_cleanup(backend):
    dataset = Sleepy(400, 30.0, fast=10)  # the first batch is quick, the rest would take 30 s
    loader = DataLoader(dataset, batch_size=10, num_workers=2, backend=backend)
    it = iter(loader)
    assert next(it).tolist() == list(range(10))
    # The window after the first batch: 2 workers x 2 batches of 10 slow items.
    assert wait_until(lambda: loader._state.runner.in_flight == 40)
    running = loader._state.runner.in_flight
    it.close()
    # Every running item was cancelled (none ran its 30 s out), and close() returned
    # once their clean-up ended: counted, not timed.
    assert len(dataset.cancelled) == running
    assert sorted(dataset.cleaned) == sorted(dataset.cancelled), "cancellation was not awaited"
    assert loader._state.runner.in_flight == 0


def test_closing_the_loader_ends_its_event_loop_thread():
    before = threading.active_count()
    loader = DataLoader(Sleepy(10, 0), batch_size=5, num_workers=1, persistent_workers=True)
    assert len(list(loader)) == 2
    assert any(t.name == "dataloader-event-loop" for t in threading.enumerate())
    loader.close()
    assert threading.active_count() <= before
    assert len(list(loader)) == 2  # a closed loader starts a new loop when iterated again
    loader.close()


def test_resume_mid_epoch_with_an_async_dataset():
    loader = DataLoader(Sleepy(30, 0), batch_size=4, shuffle=True, seed=5, num_workers=2)
    it = iter(loader)
    first = [next(it).tolist() for _ in range(3)]
    state = loader.state_dict()
    rest = [b.tolist() for b in it]
    resumed = DataLoader(Sleepy(30, 0), batch_size=4, shuffle=True, seed=5, num_workers=2)
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] == rest
    assert len(first) + len(rest) == 8


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_event_loop_choice(event_loop):
    if event_loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
        pytest.skip("uvloop is not installed here")
    loader = DataLoader(Sleepy(20, 0.001), batch_size=5, num_workers=2, event_loop=event_loop)
    assert sum(len(b) for b in loader) == 20
    assert event_loop in loader._state.runner.loop_type.lower() or (
        event_loop == "asyncio" and "unix_events" in loader._state.runner.loop_type
    )


def test_auto_uses_uvloop_when_installed():
    loader = DataLoader(Sleepy(4, 0), batch_size=2, num_workers=1)
    list(loader)
    expected = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    assert expected in loader._state.runner.loop_type


@pytest.mark.parametrize(
    ("dataset", "kwargs", "error", "message"),
    [
        (list(range(4)), {"max_concurrency": 3}, ValueError, "applies only to async datasets"),
        (list(range(4)), {"event_loop": "asyncio"}, ValueError, "applies only to async datasets"),
        (Sleepy(4), {"max_concurrency": 0}, ValueError, "max_concurrency option should be"),
        (Sleepy(4), {"event_loop": "trio"}, ValueError, "event_loop option should be one of"),
        (
            Sleepy(4),
            {"items_in_parallel": 2, "num_workers": 1, "backend": "rust", "batch_size": 2},
            ValueError,
            "does not apply to an async dataset",
        ),
    ],
)
def test_bad_async_arguments(dataset, kwargs, error, message):
    if kwargs.get("backend") == "rust" and "rust" not in dataloader_api.backends():
        pytest.skip("the rust backend is not installed")
    with pytest.raises(error, match=message):
        DataLoader(dataset, **kwargs)


def test_agetitem_must_be_a_coroutine_function():
    class Wrong:
        def __len__(self):
            return 1

        def __getitem__(self, index):
            return index

        def __agetitem__(self, index):
            return index

    with pytest.raises(TypeError, match="__agetitem__ must be an async def function"):
        DataLoader(Wrong())


def test_uvloop_requested_but_missing_is_named():
    if importlib.util.find_spec("uvloop") is not None:
        pytest.skip("uvloop is installed here")
    with pytest.raises(ValueError, match="event_loop='uvloop' needs uvloop"):
        DataLoader(Sleepy(4), event_loop="uvloop")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch_size", [None, 3])
def test_transform_gets_each_async_items_own_index(backend, batch_size):
    class Tens:
        def __len__(self):
            return 10

        async def __getitem__(self, index):
            return index * 10

    loader = DataLoader(
        Tens(), batch_size=batch_size, shuffle=True, seed=4, num_workers=workers_for(backend),
        backend=backend, transform=lambda index, item: (index, item), collate_fn=list,
    )  # fmt: skip
    pairs = [p for batch in loader for p in (batch if batch_size else [batch])]
    assert sorted(tuple(p) for p in pairs) == [(i, i * 10) for i in range(10)]
