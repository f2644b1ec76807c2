"""The loader's arguments, each checked once by its concern's function into a
frozen group; ``LoaderOptions`` composes the groups (``build_options``)."""

from .arguments import LoaderArguments
from .items import ItemOptions, StatsOptions
from .loader_options import LoaderOptions, build_options
from .sampling import SamplingOptions
from .workers import ExecutionOptions, WorkerOptions

__all__ = [
    "ExecutionOptions",
    "ItemOptions",
    "LoaderArguments",
    "LoaderOptions",
    "SamplingOptions",
    "StatsOptions",
    "WorkerOptions",
    "build_options",
]
