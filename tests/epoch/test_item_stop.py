"""A batch stops between its items once its epoch is stopped: after ``break``,
``close()``, ``del`` or ``KeyboardInterrupt``, each worker finishes at most the
item it is in, and starts none of its batch's others (counted, not timed)."""

from __future__ import annotations

import gc
import threading

import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.testing import sigint_raises_keyboard_interrupt

# threads racing a stop: nox -s tests_under_load runs it beside a CPU load
pytestmark = pytest.mark.timing

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
WORKERS = 2


class Gated:
    """Items of batch 0 return at once; later items wait for ``gate`` (bounded), so
    when the epoch is stopped every worker is inside one item of a big batch."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started: list[int] = []
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.started.append(index)
        if index >= 64:
            self.gate.wait(30)
        return index


def stop_by(how: str, loader: DataLoader) -> None:
    if how == "break":
        for _ in loader:  # batch 0; the iterator is dropped at the break
            break
        return
    iterator = iter(loader)
    next(iterator)
    if how == "close()":
        iterator.close()
    elif how == "loader.close()":
        loader.close()
    elif how == "del":
        del iterator
        gc.collect()
    elif how == "KeyboardInterrupt":
        threading.Timer(0.2, __import__("_thread").interrupt_main).start()
        with sigint_raises_keyboard_interrupt(), pytest.raises(KeyboardInterrupt):
            for _ in iterator:
                pass


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["close()", "loader.close()", "del", "break", "KeyboardInterrupt"])
def test_a_stopped_epoch_starts_no_more_items_of_its_batches(backend, how):
    dataset = Gated()
    loader = DataLoader(dataset, batch_size=64, num_workers=WORKERS, backend=backend)
    stop_by(how, loader)
    with dataset.lock:
        at_stop = len(dataset.started)
    dataset.gate.set()  # the items in flight return
    assert loader.join(30)
    late = len(dataset.started) - at_stop
    # Each worker was inside one item (or about to start one) of its big batch.
    assert late <= WORKERS, f"{late} items started after the epoch was stopped"
