"""A process forked from one with loaders (torch's worker processes, multiprocessing)
inherits the pools but none of their threads: closing them there must not wait for
those threads, and iterating a persistent loader there must raise, not hang."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
from collections.abc import Callable

import pytest

import dataloader_api
from dataloader_api import DataLoader, IterableDataset
from dataloader_api._epoch import async_loop
from dataloader_api.contract import BatchJob, ForkedPoolError, MapWork, PoolSpec, StreamSpec

SHIPPED = [name for name in ("threads", "rust", "cffi") if name in dataloader_api.backends()]

pytestmark = [
    pytest.mark.timing,  # waits in the child: nox -s tests_under_load runs it beside a CPU load
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # Python 3.12+ warns about fork() in a process with threads: that is the point here.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def blocked(body: Callable[[], int]) -> tuple[int, float]:
    """Run ``body`` on this thread: its result, and the seconds it spent blocked,
    neither on a CPU nor waiting for one (Linux's per-thread schedstat). A wait for
    threads that are not there shows here however loaded the machine is; a slow,
    busy machine does not. NaN where schedstat is missing."""
    stat = "/proc/thread-self/schedstat"

    def running() -> float:  # on a CPU + waiting in the run queue
        with open(stat) as numbers:
            on_cpu, queued, _ = numbers.read().split()
        return (int(on_cpu) + int(queued)) / 1e9

    if not os.path.exists(stat):
        return body(), float("nan")
    started, ran = time.monotonic(), running()
    result = body()
    return result, (time.monotonic() - started) - (running() - ran)


def in_child(body: Callable[[], int]) -> tuple[int, float]:
    """Run ``body`` in a forked child (killed after 60 s): its exit code, and the
    seconds the child's thread spent blocked in it (see ``blocked``)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        signal.alarm(60)
        code = 1
        try:
            code, seconds = blocked(body)
            os.write(write_end, repr(seconds).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        timed = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), float(timed or "nan")


def no_wait(seconds: float) -> bool:
    """Blocked for well under the 2 s a pool or event loop used to wait, or not
    measurable here (no schedstat: the exit code still checks the rest)."""
    return not seconds >= 0.5


def persistent(backend: str) -> DataLoader:
    loader = DataLoader(
        list(range(40)), batch_size=4, num_workers=2, backend=backend, persistent_workers=True
    )
    assert sum(len(b) for b in loader) == 40
    return loader


@pytest.mark.parametrize("backend", SHIPPED)
def test_a_child_frees_inherited_pools_without_waiting_for_their_threads(backend):
    # Garbage in cycles: the child's gc.collect() closes both pools. Each close used
    # to wait 2 s for threads that only the parent has.
    cycle: list[object] = [persistent(backend), persistent(backend)]
    cycle.append(cycle)
    del cycle
    gc.disable()
    try:

        def collect() -> int:
            gc.collect()
            return 0

        code, seconds = in_child(collect)
    finally:
        gc.enable()
        gc.collect()
    assert code == 0
    assert no_wait(seconds), f"the child waited {seconds:.2f} s to free two inherited pools"


@pytest.mark.parametrize("backend", SHIPPED)
def test_a_child_iterating_an_inherited_persistent_loader_gets_an_error(backend):
    loader = persistent(backend)

    def iterate() -> int:
        try:
            next(iter(loader))
        except ForkedPoolError as error:
            return 0 if "forked child" in str(error) else 2
        return 3

    code, _ = in_child(iterate)
    loader.close()
    assert code == 0


@pytest.mark.parametrize("backend", SHIPPED)
def test_a_child_runs_an_inherited_loader_without_persistent_workers(backend):
    loader = DataLoader(list(range(40)), batch_size=4, num_workers=2, backend=backend)
    assert sum(len(b) for b in loader) == 40

    def iterate() -> int:
        return 0 if sum(len(b) for b in loader) == 40 else 2

    code, _ = in_child(iterate)
    assert code == 0


class AsyncItems:
    def __len__(self) -> int:
        return 40

    async def __getitem__(self, index: int) -> int:
        await asyncio.sleep(0)
        return index


def async_loader() -> DataLoader:
    loader = DataLoader(AsyncItems(), batch_size=4, num_workers=2, backend="threads")
    assert sum(len(b) for b in loader) == 40
    return loader


def test_a_child_frees_an_inherited_event_loop_without_waiting_for_its_thread():
    # Closing the loop used to wait 2 s for the parent's loop thread to cancel its tasks.
    cycle: list[object] = [async_loader(), async_loader()]
    cycle.append(cycle)
    del cycle
    gc.disable()
    try:

        def collect() -> int:
            gc.collect()
            return 0

        code, seconds = in_child(collect)
    finally:
        gc.enable()
        gc.collect()
    assert code == 0
    assert no_wait(seconds), f"the child waited {seconds:.2f} s to free two inherited event loops"


def test_a_child_runs_an_inherited_async_loader_on_its_own_event_loop():
    loader = async_loader()

    def iterate() -> int:
        # A wait for the parent's loop thread now lasts until the alarm: a failure
        # that does not depend on how busy the machine is (the workers' own waits
        # would blur a measured one).
        async_loop.CANCEL_WAIT_SECONDS = 3600.0
        return 0 if sum(len(b) for b in loader) == 40 else 2

    code, _ = in_child(iterate)
    loader.close()
    assert code == 0, "killed by the alarm: the child waited for the parent's loop thread"


class Numbers(IterableDataset):
    def __iter__(self):
        return iter(range(400))


@pytest.mark.parametrize("iterable", [False, True], ids=["map", "iterable"])
@pytest.mark.parametrize("backend", SHIPPED)
def test_a_child_gets_an_error_from_an_inherited_epoch_not_a_hang(backend, iterable):
    dataset = Numbers() if iterable else list(range(400))
    loader = DataLoader(dataset, batch_size=4, num_workers=2, backend=backend)
    epoch = iter(loader)
    next(epoch)

    def go_on() -> int:
        try:
            next(epoch)
        except ForkedPoolError as error:
            return 0 if "forked child" in str(error) else 2
        return 3

    def new_epoch() -> int:
        # Each worker copy of the iterable yields all 400.
        return 0 if sum(len(b) for b in loader) == (800 if iterable else 400) else 4

    code, seconds = in_child(go_on)
    new_epoch_code, _ = in_child(new_epoch)
    epoch.close()
    assert code == 0
    assert no_wait(seconds), f"the child waited {seconds:.2f} s for the inherited epoch"
    assert new_epoch_code == 0


def test_a_child_exit_leaves_the_parents_threads_backend_pools_alone():
    from dataloader_api.kit import _exit

    loader = persistent("threads")

    def exit_hook_pools() -> int:
        # They may hold locks a parent thread had at the fork: closing them could hang.
        return len(_exit._live_pools)

    code, _ = in_child(exit_hook_pools)
    loader.close()
    assert code == 0


@pytest.mark.parametrize("backend", [b for b in ("rust", "cffi") if b in SHIPPED])
def test_a_backend_raises_the_contracts_fork_error_for_an_inherited_pool(backend):
    """The backends that check for an inherited pool themselves raise the
    contract's type, as the loader does (rust and cffi raised a bare RuntimeError)."""
    pool = dataloader_api.resolve_backend(backend).create_pool(PoolSpec(1, lambda i: None))
    # One epoch first, so that the fork finds the pool's thread started and idle,
    # as a user's does (forked while it attaches, a lock it held stays held in the
    # child: once in CI beside a loaded machine, the child hung until its alarm).
    assert list(pool.map_batches(MapWork([BatchJob(0, [7])], list, list), StreamSpec(1))) == [[7]]

    def use() -> int:
        try:
            pool.map_batches(MapWork([], list, list), StreamSpec(1))
        except ForkedPoolError as error:
            return 0 if "forked child" in str(error) else 2
        except BaseException:
            return 3
        return 4

    try:
        code, _ = in_child(use)
    finally:
        pool.close()
    assert code == 0
