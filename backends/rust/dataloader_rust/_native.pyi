from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dataloader_api.contract import BatchJob

class Pool:
    num_threads: int
    items_in_parallel: int
    attach_once: bool
    closed: bool
    def __init__(
        self,
        num_threads: int,
        thread_init: Callable[[int], None],
        name: str = "dataloader",
        items_in_parallel: int = 1,
        attach_once: bool = True,
    ) -> None: ...
    def map_batches(
        self,
        jobs: Iterable[BatchJob],
        fetch: Callable[[Any], Any],
        collate: Callable[[Any], Any],
        *,
        window: int,
        in_order: bool,
        timeout: float | None,
        on_timeout: Callable[[int], BaseException],
    ) -> MapStream: ...
    def stream_batches(
        self,
        open_stream: Callable[[int], Iterator[Any]],
        num_streams: int,
        *,
        window: int,
        in_order: bool,
        timeout: float | None,
        on_timeout: Callable[[int], BaseException],
    ) -> IterStream: ...
    def close(self) -> None: ...

class MapStream:
    def __iter__(self) -> MapStream: ...
    def __next__(self) -> Any: ...
    def close(self) -> None: ...

class IterStream:
    def __iter__(self) -> IterStream: ...
    def __next__(self) -> Any: ...
    def close(self) -> None: ...

def mark_exiting() -> None: ...
