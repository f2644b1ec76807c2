"""torch's global generator from worker threads (torch session): one per process,
so a dataset that reseeds or restores it on a worker thread is warned, once per
epoch, with the consequence and the fixes; torch.thread_safe_generator() is each worker's own."""

from __future__ import annotations

import threading
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed; run `nox -s torch_parity`")

import dataloader_api._torch.global_generators as global_rng  # noqa: E402
from dataloader_api import DataLoader, get_worker_info  # noqa: E402

BACKENDS = [n for n in __import__("dataloader_api").backends() if not n.startswith("broken-")]


@pytest.fixture
def fresh_warning():
    """The warning is once per epoch: each test sees its first time."""
    global_rng.rearm_warnings()


class Reseeds:
    """FakeData's shape: reseed the global generator per item, draw, restore."""

    def __init__(self, how: str) -> None:
        self.how = how

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int) -> float:
        if self.how == "fork_rng":
            with torch.random.fork_rng():
                torch.manual_seed(index)
                return float(torch.rand(()))
        state = torch.get_rng_state()
        torch.manual_seed(index)
        value = float(torch.rand(()))
        torch.set_rng_state(state)
        return value


def caught_warnings(loader: DataLoader) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in loader:
            pass
    return [str(w.message) for w in caught if "global generator" in str(w.message)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["restore", "fork_rng"])
def test_reseeding_on_a_worker_thread_warns_once(fresh_warning, backend, how):
    messages = caught_warnings(
        DataLoader(Reseeds(how), batch_size=2, num_workers=2, backend=backend)
    )
    assert len(messages) == 1, messages
    assert "worker thread" in messages[0]
    assert "torch.thread_safe_generator()" in messages[0]
    assert "num_workers=0" in messages[0]


def test_the_calling_thread_is_not_warned(fresh_warning):
    assert caught_warnings(DataLoader(Reseeds("restore"), batch_size=2)) == []
    torch.manual_seed(3)  # nor is the main thread outside a loader
    assert not global_rng._warned


def test_torchvision_fake_data_is_warned(fresh_warning):
    datasets = pytest.importorskip("torchvision.datasets")
    fake = datasets.FakeData(size=8, image_size=(3, 4, 4))
    messages = caught_warnings(
        DataLoader(fake, batch_size=2, num_workers=2, collate_fn=lambda batch: batch)
    )
    assert len(messages) == 1 and messages[0].startswith("torch.manual_seed() was called")


def test_fake_data_warns_every_loader_under_the_default_filter():
    """Not once per process: each loader that reseeds is told, whatever the warning
    registry of the user's module remembers."""
    datasets = pytest.importorskip("torchvision.datasets")
    fake = datasets.FakeData(size=8, image_size=(3, 4, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(2):
            for _ in DataLoader(fake, batch_size=2, num_workers=2, collate_fn=list):
                pass
    assert sum("global generator" in str(w.message) for w in caught) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_thread_safe_generator_is_each_workers_own(backend):
    lock = threading.Lock()
    seen: dict[int, set[int]] = {}

    class Draws:
        def __len__(self) -> int:
            return 16

        def __getitem__(self, index: int) -> int:
            generator = torch.thread_safe_generator()
            assert generator is get_worker_info().rng.torch_generator
            with lock:
                seen.setdefault(threading.get_ident(), set()).add(id(generator))
            return int(torch.randint(0, 1000, (), generator=generator))

    assert len([b for b in DataLoader(Draws(), batch_size=2, num_workers=2, backend=backend)]) == 8
    assert all(len(ids) == 1 for ids in seen.values())
    assert len({next(iter(ids)) for ids in seen.values()}) == len(seen)
    assert torch.thread_safe_generator() is None  # not a worker
