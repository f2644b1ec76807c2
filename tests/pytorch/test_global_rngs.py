"""PyTorch's reproducibility recipe (``seed_worker`` seeding ``random`` and NumPy's
global state in ``worker_init_fn``) cannot make items reproducible on threads
that share those generators and take batches as they come free: the seeding call
on a worker thread warns, in every epoch and loader, naming each worker's own
generators; the calling thread and other threads are never warned."""

from __future__ import annotations

import random
import threading
import warnings

import pytest

import dataloader_api
import dataloader_api._torch.global_generators as global_rngs
from dataloader_api import DataLoader, get_worker_info

np = pytest.importorskip("numpy")

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


def seed_worker(worker_id: int) -> None:
    """PyTorch's recipe (its reproducibility notes), without torch."""
    worker_seed = get_worker_info().seed % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class Draws:
    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int) -> tuple[float, float]:
        return random.random(), float(np.random.rand())


def warned(run) -> list[str]:
    """The generator warnings ``run()`` gives under Python's default filter."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        run()
    return [str(w.message) for w in caught if "worker thread" in str(w.message)]


def epochs(loader: DataLoader, count: int = 1) -> None:
    for _ in range(count):
        for _ in loader:
            pass


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_seed_worker_warns_for_random_and_numpy(backend, persistent):
    loader = DataLoader(
        Draws(),
        batch_size=2,
        num_workers=2,
        worker_init_fn=seed_worker,
        persistent_workers=persistent,
        backend=backend,
        collate_fn=list,
    )
    messages = warned(lambda: epochs(loader))
    loader.close()
    assert len(messages) == 2, messages  # once per generator, not once per worker
    by_call = {m.split("(")[0]: m for m in messages}
    assert set(by_call) == {"numpy.random.seed", "random.seed"}
    assert "get_worker_info().rng.numpy_generator" in by_call["numpy.random.seed"]
    assert "get_worker_info().rng.random_generator" in by_call["random.seed"]
    for message in messages:
        assert "not make items reproducible" in message and "num_workers=0" in message


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_loader_is_warned_not_once_per_process(backend):
    def two_loaders() -> None:
        for _ in range(2):
            epochs(
                DataLoader(
                    Draws(), batch_size=2, num_workers=2, worker_init_fn=seed_worker,
                    backend=backend, collate_fn=list,
                )
            )  # fmt: skip

    assert len(warned(two_loaders)) == 4


def test_an_item_that_restores_the_random_state_is_warned():
    class Restores(Draws):
        def __getitem__(self, index: int) -> tuple[float, float]:
            state = random.getstate()
            random.seed(index)
            value = random.random()
            random.setstate(state)
            return value, 0.0

    messages = warned(lambda: epochs(DataLoader(Restores(), batch_size=2, num_workers=2)))
    assert len(messages) == 1 and messages[0].startswith("random.seed() was called")


def test_the_calling_thread_and_other_threads_are_not_warned():
    def elsewhere() -> None:
        epochs(DataLoader(Draws(), batch_size=2, worker_init_fn=seed_worker, collate_fn=list))
        random.seed(1)
        np.random.seed(1)
        thread = threading.Thread(target=random.seed, args=(2,))
        thread.start()
        thread.join()

    epochs(DataLoader(Draws(), batch_size=2, num_workers=2, collate_fn=list))  # installs
    assert warned(elsewhere) == []


def test_seeding_still_seeds():
    epochs(DataLoader(Draws(), batch_size=2, num_workers=2, collate_fn=list))
    assert random.seed.__wrapped__ is not None  # the watch is in place
    random.seed(5)
    first = random.random()
    random.seed(5)
    assert random.random() == first
    np.random.seed(5)
    drawn = np.random.rand()
    np.random.seed(5)
    assert np.random.rand() == drawn


def test_the_watches_are_named_integrations():
    epochs(DataLoader(Draws(), batch_size=2, num_workers=2, collate_fn=list))
    assert {"random_global_rng", "numpy_global_rng"} <= set(dataloader_api.integrations.installed())
    assert global_rngs.WARNING.startswith("{call}() was called on a dataloader_api worker thread")
