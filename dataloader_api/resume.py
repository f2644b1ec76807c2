"""The resumable state of a loader: plain, JSON-serialisable data.

A state names the epoch, how many of its batches the consumer had taken, and
what is needed to replay the rest: for map-style datasets the sampler's state
at the start of that epoch (the plan is deterministic from it) and the worker
seed stream; for iterable datasets, per worker, the dataset copy's own
``state_dict()`` as it was right after producing the last batch consumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class TrackedBatch:
    """A batch from an iterable worker, with the worker's dataset state after it."""

    batch: Any
    worker_id: int
    state: Any


def is_stateful(dataset: Any) -> bool:
    """Whether an iterable dataset follows the resume protocol."""
    return callable(getattr(dataset, "state_dict", None)) and callable(
        getattr(dataset, "load_state_dict", None)
    )


def check_compatible(state: Any, expected: dict[str, Any]) -> None:
    """Raise ValueError unless ``state`` was taken from a loader configured like this one."""
    if not isinstance(state, dict):
        raise TypeError(f"state should be a dict from DataLoader.state_dict(), got {type(state)}")
    if state.get("version") != STATE_VERSION:
        raise ValueError(
            f"state has version {state.get('version')!r}; this dataloader_api reads "
            f"version {STATE_VERSION}"
        )
    for key, value in expected.items():
        if state.get(key) != value:
            raise ValueError(
                f"the state was taken from a loader with {key}={state.get(key)!r}, "
                f"but this loader has {key}={value!r}"
            )
