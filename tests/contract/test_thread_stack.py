"""PoolSpec.stack_size: the stack a threading.Thread started now would get."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.contract import (
    MIN_STACK_SIZE,
    UNLIMITED_STACK_SIZE,
    PoolSpec,
    python_thread_stack_size,
)

resource = pytest.importorskip("resource")


def test_the_default_is_rlimit_stacks_soft_limit(monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (16 << 20, resource.RLIM_INFINITY))
    assert PoolSpec(1, lambda i: None).stack_size == 16 << 20


def test_an_unlimited_stack_is_capped(monkeypatch):
    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    monkeypatch.setattr(resource, "getrlimit", lambda which: unlimited)
    assert python_thread_stack_size() == UNLIMITED_STACK_SIZE


def test_a_tiny_limit_still_gets_rusts_default(monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (256 << 10, resource.RLIM_INFINITY))
    assert python_thread_stack_size() == MIN_STACK_SIZE


def test_threading_stack_size_wins_when_the_user_set_it():
    previous = threading.stack_size(32 << 20)
    try:
        assert python_thread_stack_size() == 32 << 20
    finally:
        threading.stack_size(previous)


@pytest.mark.parametrize("value", [0, 4096, 2.5e6, True, "8M"])
def test_a_bad_stack_size_is_named(value):
    with pytest.raises(
        ValueError, match=rf"PoolSpec.stack_size must be an int >= {MIN_STACK_SIZE}, got {value!r}"
    ):
        PoolSpec(1, lambda i: None, stack_size=value)


BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_users_threading_stack_size_is_never_changed(backend):
    previous = threading.stack_size(24 << 20)
    try:
        loader = DataLoader(list(range(16)), batch_size=4, num_workers=2, backend=backend)
        assert [int(x) for batch in loader for x in batch] == list(range(16))
        PoolSpec(1, lambda i: None)
        now = threading.stack_size()  # reading sets 0: put it back before asserting
        threading.stack_size(now)
        assert now == 24 << 20
    finally:
        threading.stack_size(previous)


# Run in a child whose RLIMIT_STACK is unlimited (HPC clusters' `ulimit -s unlimited`):
# glibc then starts threads with its 2 MiB fallback, too small for NumPy's LU of a
# 500x500 matrix; the pool must apply PoolSpec.stack_size (8 MiB) instead.
UNLIMITED_CHILD = """
import sys
import numpy as np
from dataloader_api import DataLoader
from dataloader_api.testing import stack_size_of_this_thread

class Inverses:
    def __len__(self):
        return 4
    def __getitem__(self, index):
        matrix = np.random.default_rng(index).random((500, 500)) + 500 * np.eye(500)
        np.linalg.inv(matrix)
        return stack_size_of_this_thread()

loader = DataLoader(Inverses(), batch_size=1, num_workers=2, backend=sys.argv[1],
                    collate_fn=list)
print(min(size for batch in loader for size in batch))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_unlimited_ulimit_gives_the_workers_8_mib(backend):
    pytest.importorskip("numpy")

    def unlimited() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    if resource.getrlimit(resource.RLIMIT_STACK)[1] != resource.RLIM_INFINITY and os.geteuid():
        pytest.skip("the hard stack limit is set and this user cannot raise it")
    done = subprocess.run(
        [sys.executable, "-c", UNLIMITED_CHILD, backend],
        preexec_fn=unlimited,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) >= UNLIMITED_STACK_SIZE
