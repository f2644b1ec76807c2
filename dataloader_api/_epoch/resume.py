"""The resumable state of a loader: plain, JSON-serialisable data.

A state names the epoch, how many of its batches the consumer had taken, and
what is needed to replay the rest: for map-style datasets the sampler's state
at the start of that epoch (the plan is deterministic from it) and the worker
seed stream; for iterable datasets, per worker, the dataset copy's own
``state_dict()`` as it was right after producing the last batch consumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._options.loader_options import LoaderOptions
from .._sampling.batch_sampler import BatchSampler, load_sampler_state, sampler_state
from .loader_state import LoaderState
from .plan import resume_protocol_problem

__all__ = ["ResumePoint", "capture_epoch_start", "load_state", "resume_point", "take_state"]

STATE_VERSION = 1


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


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a new epoch starts: past ``skip`` batches (map-style), from these
    per-worker dataset states, its round-robin at ``first_worker`` (iterable)."""

    skip: int = 0
    worker_states: dict[int, Any] = field(default_factory=dict)
    first_worker: int = 0
    #: the seed every worker's copy of a torch datapipe shuffles with (None: no datapipe)
    datapipe_seed: int | None = None


def resume_point(state: LoaderState, iterable: bool) -> ResumePoint:
    """The point the next epoch starts from, consuming a loaded state."""
    pending, state.pending = state.pending, None
    if pending is None:
        return ResumePoint()
    if iterable:
        # A resumed iterable epoch starts its round-robin at the worker whose turn it was.
        return ResumePoint(0, dict(pending["worker_states"]), pending.get("next_worker", 0))
    return ResumePoint(skip=pending["batches_consumed"])


def capture_epoch_start(options: LoaderOptions) -> dict[str, Any] | BaseException:
    if options.sampling.is_iterable:
        return {}
    try:
        return {"sampler": sampler_state(options.sampling.index_source)}
    except TypeError as error:
        return error  # raised by state_dict(), not by iterating


def _config(options: LoaderOptions) -> dict[str, Any]:
    """What a state must agree with to be loaded here."""
    config: dict[str, Any] = {
        "kind": "iterable" if options.sampling.is_iterable else "map",
        "batch_size": options.sampling.batch_size,
        "drop_last": options.sampling.drop_last,
    }
    if options.sampling.is_iterable:
        config["num_workers"] = options.workers.num_workers
    else:
        config["dataset_length"] = len(options.sampling.dataset)
        source = options.sampling.index_source
        name = type(source).__name__
        if isinstance(source, BatchSampler):
            name += f"({type(source.sampler).__name__})"
        config["sampler"] = name
    return config


def take_state(options: LoaderOptions, state: LoaderState) -> dict[str, Any]:
    """``DataLoader.state_dict()``."""
    if state.pending is not None:
        return dict(state.pending)
    live = state.live()
    running = live is not None and not live.finished
    problem = (
        resume_protocol_problem(options.sampling.dataset) if options.sampling.is_iterable else None
    )
    if problem is not None:
        raise TypeError(
            "cannot take a state: iterable dataset "
            f"{type(options.sampling.dataset).__name__} {problem} "
            "(see the user guide's resume section)"
        )
    if running:
        start = state.epoch_start
        epoch = state.epochs_started - 1
    else:
        start = capture_epoch_start(options)
        epoch = state.epochs_started
    if isinstance(start, BaseException):
        raise start
    taken: dict[str, Any] = {"version": STATE_VERSION, **_config(options), "epoch": epoch}
    if options.sampling.is_iterable:
        states = live.worker_states if running and live is not None else {}
        taken["worker_states"] = [[w, s] for w, s in sorted(states.items())]
        last = live.last_worker if running and live is not None else None
        workers = max(1, options.workers.num_workers)
        taken["next_worker"] = 0 if last is None else (last + 1) % workers
    else:
        taken["batches_consumed"] = live.position if running and live is not None else 0
        taken["sampler_state"] = start["sampler"]
        taken["worker_seeds"] = state.pool_seed_state
    return taken


def load_state(options: LoaderOptions, state: LoaderState, loaded: dict[str, Any]) -> None:
    """``DataLoader.load_state_dict()``."""
    check_compatible(loaded, _config(options))
    live = state.live()
    if live is not None:
        live.close()
    if not options.sampling.is_iterable:
        consumed = loaded.get("batches_consumed")
        if not isinstance(consumed, int) or consumed < 0:
            raise ValueError(f"state has an invalid batches_consumed={consumed!r}")
        load_sampler_state(options.sampling.index_source, loaded["sampler_state"])
        state.worker_seeds.load_state_dict(loaded["worker_seeds"])
        state.pool_seed_state = state.worker_seeds.state_dict()
    elif (problem := resume_protocol_problem(options.sampling.dataset)) is not None:
        raise TypeError(
            f"cannot resume: iterable dataset {type(options.sampling.dataset).__name__} {problem} "
            "(see the user guide's resume section)"
        )
    state.epochs_started = int(loaded["epoch"])
    state.pending = dict(loaded)
    if options.sampling.is_iterable:
        state.pending["worker_states"] = {int(w): s for w, s in loaded["worker_states"]}
