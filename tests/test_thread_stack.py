"""PoolSpec.stack_size: the stack a threading.Thread started now would get."""

from __future__ import annotations

import threading

import pytest

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
