"""LMDB's usual idioms under worker threads: ``lmdb.open`` lazily per worker (torch's
recipe), the environment opened lazily under a lock with a transaction per worker,
and the environment opened in ``__init__``: every record, on every backend, at 2
and 4 workers, persistent or not; one environment per path and process, closed
once its last handle is; torch's loader gives the same records (torch session)."""

from __future__ import annotations

import gc
import threading

import pytest

import dataloader_api
from dataloader_api import DataLoader, release_idle_workers
from dataloader_api._torch.lmdb_envs import SharedEnvironment

lmdb = pytest.importorskip("lmdb")

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
LENGTH = 300


@pytest.fixture(autouse=True)
def no_copy_left():
    """Each test ends with no worker copy alive (an idle pool's threads hold their
    last loader's copies, and with them the environment, until their next job)."""
    yield
    release_idle_workers()
    gc.collect()


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = str(tmp_path_factory.mktemp("lmdb"))
    env = lmdb.open(folder, map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i in range(LENGTH):
            txn.put(b"%d" % i, b"%d" % (i * 7))
    env.close()
    return folder


class OpenPerWorker:
    """torch's common recipe: ``lmdb.open`` on first use, in each worker process."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.env = None

    def __len__(self) -> int:
        return LENGTH

    def __getitem__(self, index: int) -> int:
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        with self.env.begin() as txn:
            return int(txn.get(b"%d" % index))


class OpenUnderALock(OpenPerWorker):
    """The environment opened lazily under a lock, a transaction per worker."""

    lock = threading.Lock()

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.txn = None

    def __getitem__(self, index: int) -> int:
        with self.lock:
            if self.env is None:
                self.env = lmdb.open(self.path, readonly=True, lock=False)
        if self.txn is None:
            self.txn = self.env.begin()
        return int(self.txn.get(b"%d" % index))


class OpenInInit(OpenUnderALock):
    """The environment opened in ``__init__`` (shared by the copies)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.env = lmdb.open(path, readonly=True, lock=False)


IDIOMS = {
    "open per worker": OpenPerWorker,
    "under a lock": OpenUnderALock,
    "in __init__": OpenInInit,
}


def wait_until_closed(path: str) -> object:
    """The path opened on this thread, once the threads of earlier tests have ended
    and freed their copies' handles (polled: no bound on this machine's speed)."""
    for _ in range(600):
        try:
            return lmdb.open(path, readonly=True, lock=False)
        except lmdb.Error:
            gc.collect()
            threading.Event().wait(0.1)
    return lmdb.open(path, readonly=True, lock=False)


def values(loader) -> list[int]:
    return [int(x) for batch in loader for x in batch]


def closes(dataset: object) -> None:
    env = getattr(dataset, "env", None)
    if env is not None:
        env.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", [2, 4])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_every_idiom_gives_every_record(path, backend, num_workers, persistent, idiom):
    dataset = IDIOMS[idiom](path)
    loader = DataLoader(
        dataset,
        batch_size=8,
        shuffle=True,
        seed=1,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
    )
    for _ in range(2):
        assert sorted(values(loader)) == [i * 7 for i in range(LENGTH)]
    loader.close()
    closes(dataset)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_environment_closes_with_its_last_handle(path, backend):
    """Once the loader and its copies are gone, the path can be opened again in
    this process (LMDB would refuse while an environment stayed open)."""
    loader = DataLoader(OpenPerWorker(path), batch_size=8, num_workers=2, backend=backend)
    assert len(values(loader)) == LENGTH
    loader.close()
    release_idle_workers()
    assert loader.join(timeout=60)  # the threads, and the copies they held, are gone
    del loader
    gc.collect()
    lmdb.open(path, readonly=True, lock=False).close()


def test_closing_one_handle_leaves_the_others_open(path):
    handles: list[SharedEnvironment] = []
    lock = threading.Lock()

    class Closes(OpenPerWorker):
        def __getitem__(self, index: int) -> int:
            value = super().__getitem__(index)
            with lock:
                if not any(h is self.env for h in handles):
                    handles.append(self.env)
            return value

    loader = DataLoader(
        Closes(path), batch_size=4, num_workers=2, persistent_workers=True, backend="threads"
    )
    assert len(values(loader)) == LENGTH
    assert all(isinstance(h, SharedEnvironment) for h in handles)
    handles[0].close()
    with pytest.raises(lmdb.Error, match="is closed"):
        handles[0].begin()
    if len(handles) > 1:
        with handles[1].begin() as txn:
            assert txn.get(b"3") == b"21"
    loader.close()


def test_the_calling_thread_opens_as_lmdb_does(path):
    dataset = OpenPerWorker(path)
    opened = wait_until_closed(path)
    opened.close()
    assert values(DataLoader(dataset, batch_size=8)) == [i * 7 for i in range(LENGTH)]
    assert isinstance(dataset.env, lmdb.Environment)
    dataset.env.close()


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_torch_gives_the_same_records(path, idiom):
    torch_data = pytest.importorskip("torch.utils.data")
    theirs_dataset = IDIOMS[idiom](path)
    if idiom == "in __init__":  # an open environment cannot go to torch's workers
        closes(theirs_dataset)
        theirs_dataset.env = None
        theirs_dataset.__class__ = OpenUnderALock
    theirs = values(torch_data.DataLoader(theirs_dataset, batch_size=8, num_workers=2))
    ours_dataset = IDIOMS[idiom](path)
    assert values(DataLoader(ours_dataset, batch_size=8, num_workers=2)) == theirs
    closes(ours_dataset)
