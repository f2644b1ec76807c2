"""One epoch, from ``iter(loader)`` to its last batch: its start, its composed
work, the calling thread's batches, the plan, the iterator the user holds, and
what a loader keeps between epochs and resumes from. (``async_loop`` is imported
only when an async epoch starts: it imports asyncio.)"""

from .iterator import LengthCheckedIterator, LoaderIterator
from .loader_state import LoaderState
from .resume import load_state, take_state
from .start import epoch_length, start_epoch

__all__ = [
    "LengthCheckedIterator",
    "LoaderIterator",
    "LoaderState",
    "epoch_length",
    "load_state",
    "start_epoch",
    "take_state",
]
