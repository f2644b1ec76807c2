"""Property 6b: interpreter exit in the middle of an epoch is clean: the process
keeps its own exit code, with no abort, fatal error or traceback, also while
workers are inside native code (jobs already running return before
finalization, within DATALOADER_EXIT_TIMEOUT)."""

from __future__ import annotations

import os
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest
from support import run_clean_child

from dataloader_api.testing import SIGINT_RAISES

# exit bounds: nox -s tests_under_load runs them beside a CPU load
pytestmark = pytest.mark.timing

HERE = Path(__file__).parent


EXIT_PRELUDE = textwrap.dedent("""
    import sys, threading, time
    from dataloader_api import DataLoader, DataLoaderTimeoutError

    class Slow:
        def __len__(self): return 100_000
        def __getitem__(self, i):
            time.sleep(0.002)
            return i
""")

EXIT_SCENARIOS = {
    "live iterators": (
        "its = [iter(DataLoader(Slow(), batch_size=4, num_workers=2, backend=BACKEND))"
        " for _ in range(2)]\n"
        "[next(it) for it in its]"
    ),
    "persistent loader": (
        "loader = DataLoader(Slow(), batch_size=4, num_workers=2, persistent_workers=True,"
        " backend=BACKEND)\n"
        "it = iter(loader); next(it)"
    ),
    "loader in a reference cycle": (
        "class Holder: pass\n"
        "h = Holder(); h.me = h\n"
        "h.loader = DataLoader(Slow(), batch_size=4, num_workers=2, persistent_workers=True,"
        " backend=BACKEND)\n"
        "h.it = iter(h.loader); next(h.it)\n"
        "del h"
    ),
    "epoch on a non-main thread": (
        "alive = []\n"
        "def run():\n"
        "    it = iter(DataLoader(Slow(), batch_size=4, num_workers=2, backend=BACKEND))\n"
        "    next(it); alive.append(it)\n"
        "t = threading.Thread(target=run); t.start(); t.join()"
    ),
    "epoch still running on a daemon thread": (
        "def run():\n"
        "    for _ in DataLoader(Slow(), batch_size=4, num_workers=2, backend=BACKEND): pass\n"
        "threading.Thread(target=run, daemon=True).start()\n"
        "time.sleep(0.1)"
    ),
    "a worker blocked in an item": (
        "class Blocked(Slow):\n"
        "    def __getitem__(self, i):\n"
        "        if i == 5: threading.Event().wait()\n"
        "        return i\n"
        "it = iter(DataLoader(Blocked(), batch_size=1, num_workers=2, backend=BACKEND))\n"
        "[next(it) for _ in range(5)]"
    ),
    "exit after KeyboardInterrupt mid-epoch": (
        SIGINT_RAISES + "import _thread\n"
        "it = iter(DataLoader(Slow(), batch_size=4, num_workers=2, backend=BACKEND)); next(it)\n"
        "threading.Timer(0.1, _thread.interrupt_main).start()\n"
        "try:\n"
        "    for _ in it: pass\n"
        "except KeyboardInterrupt:\n"
        "    pass"
    ),
}


# Native code in flight at exit: every item runs C++ that releases the GIL and
# takes it back in a destructor (native/gil_guard.cpp), as torch ops do.
NATIVE_SCENARIOS = {
    "native code in flight, iterator still referenced": (
        "it = iter(DataLoader(Native(), batch_size=16, num_workers=2, backend=BACKEND))\nnext(it)"
    ),
    "native code in flight, persistent loader after break": (
        "loader = DataLoader(Native(), batch_size=16, num_workers=2, persistent_workers=True,"
        " backend=BACKEND)\n"
        "for batch in loader: break"
    ),
    # A new epoch must not start once exit began: its pool would run native
    # code through finalization, after the hook's wait.
    "native code in flight, an epoch started on a daemon thread while exit waits": (
        "from dataloader_api.kit import exiting\n"
        "class Held(Native):\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.3 if i else 0)\n"
        "        return i\n"
        "def run():\n"
        "    while not exiting(): time.sleep(0.001)\n"
        "    for _ in DataLoader(Native(), batch_size=16, num_workers=2, backend=BACKEND): pass\n"
        "threading.Thread(target=run, daemon=True).start()\n"
        "it = iter(DataLoader(Held(), batch_size=1, num_workers=2, backend=BACKEND)); next(it)"
    ),
    # A job is a whole batch: once exit begins, its remaining items must not start,
    # or the batch (64 x 40 ms) outlasts the exit bound (1 s) inside native code.
    "native code in flight, a batch longer than the exit bound": (
        "class Slower(Native):\n"
        "    def __getitem__(self, i):\n"
        "        gil_guard.hold(0.04)\n"
        "        return i\n"
        "it = iter(DataLoader(Slower(), batch_size=64, num_workers=2, backend=BACKEND))\n"
        "next(it)"
    ),
    "native code in flight, break": (
        "for batch in DataLoader(Native(), batch_size=16, num_workers=2, backend=BACKEND):\n"
        "    break"
    ),
}
NATIVE_PRELUDE = textwrap.dedent("""
    import gil_guard

    class Native:
        def __len__(self): return 100_000
        def __getitem__(self, i):
            gil_guard.hold(0.002)
            return i
""")
# How long exit waits for running jobs: short, so that "a worker blocked in an item"
# costs this much per run; the native jobs take 2 ms.
EXIT_TIMEOUT = "1.0"


@pytest.fixture(scope="session")
def gil_guard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding native/gil_guard.cpp built for this interpreter."""
    folder = tmp_path_factory.mktemp("gil_guard")
    target = folder / f"gil_guard{sysconfig.get_config_var('EXT_SUFFIX')}"
    command = [
        os.environ.get("CXX", "g++"),
        "-O1",
        "-shared",
        "-fPIC",
        f"-I{sysconfig.get_path('include')}",
        str(HERE / "native" / "gil_guard.cpp"),
        "-o",
        str(target),
    ]
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, f"building the C++ reproducer failed:\n{built.stderr}"
    return folder


@pytest.mark.parametrize("exit_code", [0, 3])
@pytest.mark.parametrize("scenario", sorted(EXIT_SCENARIOS) + sorted(NATIVE_SCENARIOS))
def test_interpreter_exit_mid_epoch(backend, thorough, gil_guard, scenario, exit_code):
    """The process ends with its own exit code, no abort, no fatal error, no
    traceback; with native code in flight the jobs return before finalization."""
    body = EXIT_SCENARIOS.get(scenario) or NATIVE_PRELUDE + NATIVE_SCENARIOS[scenario]
    code = f"BACKEND = {backend!r}\n" + EXIT_PRELUDE + body + f"\nsys.exit({exit_code})\n"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(gil_guard), os.environ.get("PYTHONPATH")) if p
        ),
        "DATALOADER_EXIT_TIMEOUT": EXIT_TIMEOUT,
    }
    for _ in range(100 if thorough else 1):
        run_clean_child(code, exit_code, env)


# User code that sleeps at exit, past the point where the process finalizes:
# the thread that runs it is ended when it takes the interpreter back (CPython
# <= 3.13 does so with pthread_exit). An object whose __del__ sleeps, held by a
# module that finalization frees, keeps it going meanwhile, so that moment comes
# before the process ends. (Held by __main__ it might never be freed: a leaked
# dataset keeps __main__'s globals alive through its class's methods.)
FINALIZING_PRELUDE = textwrap.dedent("""
    import types
    class HoldsFinalization:
        def __del__(self, sleep=time.sleep):
            sleep(0.6)
    sys.modules["holds_finalization"] = types.ModuleType("holds_finalization")
    sys.modules["holds_finalization"].held = HoldsFinalization()
""")
FINALIZING_SCENARIOS = {
    # The consumer must decide to wait out the exit without running Python code:
    # here, threading.current_thread (monkeypatched, as gevent does) sleeps.
    "a daemon consumer while threading.current_thread sleeps": (
        "class Held(Slow):\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.3 if i >= 4 else 0)\n"
        "        return i\n"
        "current_thread = threading.current_thread\n"
        "def sleepy_current_thread(sleep=time.sleep):\n"
        "    sleep(0.5)\n"
        "    return current_thread()\n"
        "def run():\n"
        "    for _ in DataLoader(Held(), batch_size=4, num_workers=2, backend=BACKEND): pass\n"
        "threading.Thread(target=run, daemon=True).start()\n"
        "time.sleep(0.1)\n"
        "threading.current_thread = sleepy_current_thread"
    ),
    # A worker's thread-local values are freed when the worker ends, past the exit
    # bound when their __del__ sleeps longer than it.
    "a worker's thread-local value whose __del__ outlasts the exit bound": (
        "local = threading.local()\n"
        "class Lingers:\n"
        "    def __del__(self, sleep=time.sleep):\n"
        "        sleep(0.6)\n"
        "def init(worker_id):\n"
        "    local.value = Lingers()\n"
        "loader = DataLoader(Slow(), batch_size=4, num_workers=2, worker_init_fn=init,"
        " persistent_workers=True, backend=BACKEND)\n"
        "it = iter(loader); next(it)"
    ),
    # An iterable dataset's generator is closed, running its finally block, when
    # the exit hook closes the epoch.
    "a generator whose finally block outlasts the exit bound": (
        "from dataloader_api import IterableDataset\n"
        "class Stream(IterableDataset):\n"
        "    def __iter__(self):\n"
        "        try:\n"
        "            while True:\n"
        "                time.sleep(0.002)\n"
        "                yield 1\n"
        "        finally:\n"
        "            time.sleep(0.6)\n"
        "it = iter(DataLoader(Stream(), batch_size=4, num_workers=2, backend=BACKEND)); next(it)"
    ),
}


@pytest.mark.parametrize("scenario", sorted(FINALIZING_SCENARIOS))
def test_interpreter_exit_while_user_code_sleeps_into_finalization(backend, thorough, scenario):
    """A thread that sleeps in user code at exit, and takes the interpreter back
    while it finalizes, ends without taking the process down with it."""
    body = FINALIZING_SCENARIOS[scenario]
    code = f"BACKEND = {backend!r}\n" + EXIT_PRELUDE + FINALIZING_PRELUDE + body + "\nsys.exit(3)\n"
    env = {**os.environ, "DATALOADER_EXIT_TIMEOUT": "0.3"}
    for _ in range(10 if thorough else 1):
        run_clean_child(code, 3, env)
