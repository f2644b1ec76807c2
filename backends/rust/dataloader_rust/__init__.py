"""The ``rust`` backend: a rayon thread pool driven through pyo3.

Each pool thread attaches to the interpreter once, when it starts, and keeps
that thread state for its whole life; running a job re-activates it. See
``backends/rust/README.md`` for the design and its measurements.
"""

from __future__ import annotations

from typing import Any

from dataloader_api.contract import PoolSpec
from dataloader_api.kit import attach_once, on_exit_wait

from ._native import (
    EXIT_THREADS,
    JPEG_SIMD,
    WITHOUT_SIMD,
    IterStream,
    MapStream,
    NativeReader,
    Pool,
    drain_at_exit,
)

__all__ = ["IterStream", "MapStream", "NativeReader", "Pool", "RustBackend"]

# The kit's exit hook runs before the interpreter starts finalizing, while pool
# threads may still attach safely: every live pool is closed natively and its
# running jobs get the seconds left to return; from then on no thread attaches.
on_exit_wait(drain_at_exit)

# For the attach-once benchmark and the test that proves attach-once matters:
# with "per-task", each job gets a new thread state and deletes it afterwards.
_ATTACH_MODE_VARIABLE = "DATALOADER_RUST_ATTACH"


class RustBackend:
    """Entry point ``rust`` of the ``dataloader_api.backends`` group."""

    name = "rust"
    supports_items_in_parallel = True

    def create_pool(self, spec: PoolSpec) -> Pool:
        return Pool(spec, attach_once=attach_once(_ATTACH_MODE_VARIABLE))

    def pool_settings(self) -> object:
        """What ``create_pool`` reads besides its spec: an idle pool made with
        another attach mode is not shared (``Backend.pool_settings``)."""
        return attach_once(_ATTACH_MODE_VARIABLE)

    def open_reader(self, spec: dict[str, Any], concurrency: int | None) -> NativeReader:
        """The reads of a ``dataloader_api.io`` dataset, natively (crate dataloader-netio)."""
        return NativeReader(spec, concurrency)

    def describe(self) -> dict[str, str]:
        """What this build is (``contract.Describes``): whether libjpeg-turbo got
        its SIMD kernels, which needs NASM when the backend is compiled, and how
        a thread that finalization ends ends (``src/interp/exit_hang.rs``)."""
        jpeg = (
            "libjpeg-turbo with its SIMD kernels"
            if JPEG_SIMD
            else f"libjpeg-turbo in plain C: {WITHOUT_SIMD}"
        )
        return {"jpeg_decoding": jpeg, "threads_ended_at_exit": EXIT_THREADS}
