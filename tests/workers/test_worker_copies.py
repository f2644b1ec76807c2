"""Each worker thread calls its own shallow copy of a map-style dataset, as each
torch worker process has its own: the idioms of datasets written for worker
processes (a handle opened lazily on ``self``, a cache, a counter) give torch's
items on every backend, worker count and persistence."""

from __future__ import annotations

import struct
import threading

import pytest
from lazy_handles import CALLER_RUNS_WARNING, LazyFile, LazySqlite, write_database, write_records

import dataloader_api
from dataloader_api import DataLoader, get_worker_info, release_idle_workers

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
LENGTH = 3000


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_records(tmp_path_factory.mktemp("records"), LENGTH)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_database(tmp_path_factory.mktemp("sqlite"), LENGTH)


class OpenedInWorkerInit(LazyFile):
    """The handle opened by ``worker_init_fn`` on ``get_worker_info().dataset``."""

    def __getitem__(self, index: int) -> int:
        assert self.file is not None, "worker_init_fn opened the handle on another object"
        self.file.seek(8 * index)
        return struct.unpack("<q", self.file.read(8))[0]


def open_in_worker_init(worker_id: int) -> None:
    dataset = get_worker_info().dataset
    dataset.file = open(dataset.path, "rb")  # noqa: SIM115


class CacheAndCounter:
    """A per-worker cache and counter on ``self``, rebound (not mutated) per item."""

    def __init__(self) -> None:
        self.last = None
        self.count = 0

    def __len__(self) -> int:
        return LENGTH

    def __getitem__(self, index: int) -> tuple[int, int, int]:
        self.count = self.count + 1
        self.last = index
        value = self.last  # another worker rebinding self.last here would change it
        threading.Event().wait(0) if index % 97 == 0 else None  # lets the threads interleave
        return value, self.count, get_worker_info().id


def items(loader: DataLoader) -> list:
    return [x for batch in loader for x in (batch.tolist() if hasattr(batch, "tolist") else batch)]


def make(kind: str, records: str, database: str) -> tuple[object, dict]:
    if kind == "lazy file":
        return LazyFile(records, LENGTH), {}
    if kind == "opened in worker_init_fn":
        return OpenedInWorkerInit(records, LENGTH), {"worker_init_fn": open_in_worker_init}
    return LazySqlite(database, LENGTH), {}


@pytest.mark.filterwarnings(CALLER_RUNS_WARNING)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", [1, 2, 4])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("kind", ["lazy file", "opened in worker_init_fn", "sqlite3"])
def test_a_handle_on_self_gives_every_record(
    records, database, backend, num_workers, persistent, kind
):
    dataset, extra = make(kind, records, database)
    loader = DataLoader(
        dataset,
        batch_size=16,
        shuffle=True,
        seed=3,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
        **extra,
    )
    for _ in range(2):
        assert sorted(items(loader)) == list(range(LENGTH))
    loader.close()
    if kind != "opened in worker_init_fn":
        assert (
            getattr(dataset, "file", None) is None and getattr(dataset, "connection", None) is None
        )


@pytest.mark.parametrize("kind", ["lazy file", "sqlite3"])
def test_the_calling_thread_uses_the_dataset_itself(records, database, kind):
    dataset, _ = make(kind, records, database)
    assert items(DataLoader(dataset, batch_size=16)) == list(range(LENGTH))
    assert (dataset.file if kind == "lazy file" else dataset.connection) is not None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_a_cache_and_a_counter_stay_per_worker(backend, persistent):
    dataset = CacheAndCounter()
    loader = DataLoader(
        dataset,
        batch_size=8,
        num_workers=2,
        persistent_workers=persistent,
        backend=backend,
        collate_fn=list,
    )
    counts: dict[int, list[int]] = {}
    for _ in range(2):
        if not persistent:
            counts.clear()
        got = items(loader)
        assert [value for value, _, _ in got] == list(range(LENGTH))
        for _, count, worker in got:
            counts.setdefault(worker, []).append(count)
        # Each worker's counter counts exactly its own items, however the scheduler spread
        # them (one worker may take them all); a persistent worker's copy goes on counting.
        for seen in counts.values():
            assert sorted(seen) == list(range(1, len(seen) + 1))
    assert dataset.count == 0 and dataset.last is None  # the loader's own is untouched


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_each_worker_sees_its_copy_in_worker_info(backend, persistent):
    seen: list[tuple[int, object, object]] = []
    lock = threading.Lock()

    class Records:
        def __len__(self) -> int:
            return 64

        def __getitem__(self, index: int) -> int:
            info = get_worker_info()
            with lock:
                seen.append((info.id, info.dataset, self))
            return index

    dataset = Records()
    loader = DataLoader(
        dataset, batch_size=4, num_workers=2, persistent_workers=persistent, backend=backend
    )
    epochs = []
    for _ in range(2):
        seen.clear()
        assert items(loader) == list(range(64))
        assert all(copy is me for _, copy, me in seen)  # self is get_worker_info().dataset
        assert all(me is not dataset for _, _, me in seen)
        by_worker = {worker: me for worker, _, me in seen}
        assert len({id(me) for me in by_worker.values()}) == len(by_worker)  # one per worker
        epochs.append(by_worker)  # holds the copies: their ids are not reused
    for worker in epochs[0].keys() & epochs[1].keys():
        # made once for the life of persistent workers, for each epoch otherwise
        assert (epochs[0][worker] is epochs[1][worker]) is persistent
    loader.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_taken_idle_pool_calls_the_new_loaders_copies(backend):
    release_idle_workers()
    owners: set[str] = set()
    lock = threading.Lock()

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def __len__(self) -> int:
            return 32

        def __getitem__(self, index: int) -> int:
            with lock:
                owners.add(self.name)
            return index

    assert items(DataLoader(Named("first"), batch_size=4, num_workers=2, backend=backend))
    owners.clear()
    assert items(DataLoader(Named("second"), batch_size=4, num_workers=2, backend=backend))
    assert owners == {"second"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_share_dataset_lets_every_worker_call_one_object(backend):
    selves: set[int] = set()

    class Records:
        def __len__(self) -> int:
            return 64

        def __getitem__(self, index: int) -> int:
            selves.add(id(self))
            assert get_worker_info().dataset is self
            return index

    dataset = Records()
    loader = DataLoader(dataset, batch_size=4, num_workers=2, backend=backend, share_dataset=True)
    assert items(loader) == list(range(64))
    assert selves == {id(dataset)}
    assert loader.share_dataset is True


def test_share_dataset_must_be_a_bool():
    with pytest.raises(TypeError, match=r"share_dataset should be a bool, but got share_dataset=1"):
        DataLoader(list(range(4)), share_dataset=1)


def test_a_dataset_that_cannot_be_copied_is_named_with_the_opt_out():
    class Uncopyable:
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int) -> int:
            return index

        def __copy__(self) -> Uncopyable:
            raise RuntimeError("holds a live socket")

    loader = DataLoader(Uncopyable(), batch_size=2, num_workers=2)
    with pytest.raises(TypeError) as caught:
        iter(loader)
    message = str(caught.value)
    assert "map-style dataset Uncopyable cannot be shallow-copied" in message
    assert "RuntimeError: holds a live socket" in message
    assert "share_dataset=True" in message
    assert items(DataLoader(Uncopyable(), batch_size=2, num_workers=2, share_dataset=True)) == [
        0,
        1,
        2,
        3,
    ]


def test_containers_and_arrays_are_shared_not_copied():
    np = pytest.importorskip("numpy")
    datasets: set[int] = set()

    def note(worker_id: int) -> None:
        datasets.add(id(get_worker_info().dataset))

    for dataset in (list(range(40)), np.arange(40)):
        datasets.clear()
        loader = DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=note)
        assert items(loader) == list(range(40))
        assert datasets == {id(dataset)}


@pytest.mark.filterwarnings(CALLER_RUNS_WARNING)
def test_torch_agrees_where_installed(records, database):
    torch_data = pytest.importorskip("torch.utils.data")
    for kind in ("lazy file", "opened in worker_init_fn", "sqlite3"):
        theirs, extra = make(kind, records, database)
        ours, _ = make(kind, records, database)
        if "worker_init_fn" in extra:
            extra = {"worker_init_fn": _torch_worker_init}
        expected = [
            int(x)
            for batch in torch_data.DataLoader(theirs, batch_size=16, num_workers=2, **extra)
            for x in batch
        ]
        extra = {"worker_init_fn": open_in_worker_init} if extra else {}
        assert items(DataLoader(ours, batch_size=16, num_workers=2, **extra)) == expected


def _torch_worker_init(worker_id: int) -> None:
    import torch.utils.data

    dataset = torch.utils.data.get_worker_info().dataset
    dataset.file = open(dataset.path, "rb")  # noqa: SIM115


class LmdbPerWorkerOpen:
    """``lmdb.open`` per worker: fine in torch's processes, refused by LMDB in one
    process (not every time: only when two workers open at once)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.env = None

    def __len__(self) -> int:
        return 400

    def __getitem__(self, index: int) -> int:
        import lmdb

        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        with self.env.begin() as txn:
            return int(txn.get(b"%d" % index))


class LmdbRecipe(LmdbPerWorkerOpen):
    """The user guide's recipe: the environment opened once, a transaction per worker."""

    def __init__(self, path: str) -> None:
        import lmdb

        super().__init__(path)
        self.env = lmdb.open(path, readonly=True, lock=False)
        self.txn = None

    def __getitem__(self, index: int) -> int:
        if self.txn is None:
            self.txn = self.env.begin()
        return int(self.txn.get(b"%d" % index))


@pytest.fixture
def lmdb_path(tmp_path):
    lmdb = pytest.importorskip("lmdb")
    env = lmdb.open(str(tmp_path), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i in range(400):
            txn.put(b"%d" % i, b"%d" % i)
    env.close()
    return str(tmp_path)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_lmdb_the_guides_recipe_gives_every_record(lmdb_path, backend, persistent):
    dataset = LmdbRecipe(lmdb_path)
    loader = DataLoader(
        dataset, batch_size=8, num_workers=2, persistent_workers=persistent, backend=backend
    )
    for _ in range(2):
        assert items(loader) == list(range(400))
    loader.close()
    dataset.env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_lmdb_opened_per_worker_fails_with_the_recipe_named(lmdb_path, backend):
    """Whenever LMDB refuses a worker's open, the error names the recipe. The
    environment is held open here, so every worker's open is refused (two workers
    opening at the same moment are refused only now and then)."""
    import lmdb

    held = lmdb.open(lmdb_path, readonly=True, lock=False)
    try:
        loader = DataLoader(
            LmdbPerWorkerOpen(lmdb_path), batch_size=1, num_workers=2, backend=backend
        )
        with pytest.raises(lmdb.Error) as caught:
            items(loader)
    finally:
        held.close()
    assert "already open in this process" in str(caught.value)
    assert any("begin a read transaction per worker" in n for n in caught.value.__notes__)
