"""The backend contract: the one package a backend author reads (this page, then
``_values.py``, ``_protocols.py``, ``_index_batches.py``, ``_process.py``).

The common API decides *what* is loaded (the epoch plan: which indices form
which batch, in which order), wraps the user's dataset and collate function
into plain callables and owns every argument check and error message. A
backend decides only *how* those callables run on its threads.

A backend is an object with a ``create_pool`` method and its declared
capabilities (:class:`Backend`), registered under the entry-point group
``dataloader_api.backends``. The loader creates one :class:`WorkerPool` per
loader (``persistent_workers=True``) or per epoch from a :class:`PoolSpec`, and
asks it for one :class:`BatchStream` per epoch through
:meth:`WorkerPool.map_batches` (map-style datasets, the work as a
:class:`MapWork`) or :meth:`WorkerPool.stream_batches` (iterable datasets, an
:class:`IterWork`), each with the epoch's :class:`StreamSpec` (window,
ordering, timeout). Everything crosses the contract as these frozen values:
nothing is read from attributes hung on callables.

``dataloader_api.kit`` holds what Python backends share (exit registry,
waiting, the Python window and iterable streams, a thread pool); a backend may
use it or not, but never imports another backend.

Duties of every backend (the conformance suite checks each of them):

Bounded window
    At most ``StreamSpec.window`` batches of one stream are *started but not yet
    consumed* at any time: a job may start only while fewer than ``window``
    of the stream's batches have been started and not yet returned by
    ``__next__``. This holds behind a slow batch too: in ordered mode the
    batches finished after it wait in a reorder buffer and count against the
    window. For :meth:`WorkerPool.stream_batches` the window is split evenly:
    each of the ``n = IterWork.num_streams`` streams has at most
    ``max(1, window // n)`` batches started but not consumed.

Ordering
    ``StreamSpec.in_order=True``: batches come out in plan order
    (``BatchJob.position``), each job exactly once. ``in_order=False``: in
    completion order, same multiset, a slow batch does not hold back the others.

Errors
    An exception raised by ``fetch``, ``collate`` or a stream is raised by
    ``__next__`` for the batch it belongs to, as the same exception object (so
    its type, message and ``__traceback__`` with the user's frame survive).
    The stream stays usable: the next ``__next__`` returns the next batch (a
    failed iterable stream counts as exhausted). An exception raised by
    ``PoolSpec.thread_init`` is raised by ``create_pool`` or, at the latest,
    by the first ``__next__`` of every stream of that pool, before any batch;
    a thread whose ``thread_init`` raised runs no job.

Timeout
    With ``StreamSpec.timeout`` set, a ``__next__`` that waited ``timeout``
    seconds without its batch arriving raises the exception returned by
    ``StreamSpec.on_timeout(position)`` and closes the stream.

Waiting
    The consumer waits in slices short enough that ``KeyboardInterrupt`` and
    other signals are raised promptly (``threading`` waits do this in Python;
    native waits must release the interpreter and check signals between
    slices). A ``KeyboardInterrupt`` raised while waiting leaves the stream
    closable.

Shutdown
    ``BatchStream.close()`` and ``WorkerPool.close()`` are idempotent and
    return promptly (tens of milliseconds), whatever the jobs are doing: they
    never wait for a thread busy in user code. After they return no job of
    theirs *starts*; a job already running finishes on its own, and
    ``WorkerPool.close()`` ends each pool thread once it is idle.
    ``WorkerPool.join(timeout)`` is the explicit wait: it returns True once
    every thread of the pool has ended, False if some are still running after
    ``timeout`` seconds (``None``: no limit), waiting in slices so that
    ``KeyboardInterrupt`` is raised promptly. At
    interpreter exit, before finalization, every pool whose threads may still
    run is closed and its running jobs get up to ``DATALOADER_EXIT_TIMEOUT``
    seconds to return (a job inside native code must not take the interpreter
    back during finalization); then no pool thread enters the interpreter
    again. The process keeps its own exit code. A consumer on a
    non-main thread whose pool was closed that way waits until the process
    ends (as a daemon thread would), never raising into user code or ending
    its loop while the interpreter shuts down. Nothing a backend
    creates may keep the loader or the user's iterator alive (worker threads
    must not reference the :class:`BatchStream` object the user holds), so
    dropping the iterator frees it and closes it. Raise a delivered
    exception so that no frame of the backend keeps a reference to it
    (``try: raise error finally: del error``), and let idle pool threads run
    now and then (a wait with a timeout): on free-threaded builds an object a
    worker created (an exception) is freed by that worker once others drop it.

Attach once
    Each pool thread runs ``PoolSpec.thread_init(worker_id)`` once, on itself,
    before any job, and keeps one Python thread state for its whole life:
    a ``threading.local()`` set by a job is seen by later jobs on that thread.

Fork
    A process forked from the one that made a pool has none of its threads.
    The loader never calls a pool, stream or event loop there: the child's next
    batch of an inherited epoch raises :class:`ForkedPoolError` (a
    ``RuntimeError``), and closing it does not reach the backend. A backend
    that checks for an inherited pool itself raises the same type. A backend
    that frees its objects on its own (``__del__``, ``Drop``) must not wait
    for the parent's threads when that runs in a child;
    :func:`process_id` tells which process it is in, without a system call.
"""

from ._index_batches import PIECE, IndexBatches
from ._process import (
    MIN_STACK_SIZE,
    UNLIMITED_STACK_SIZE,
    ForkedPoolError,
    PoolClosedError,
    process_id,
    python_thread_stack_size,
)
from ._protocols import (
    CAPABILITIES,
    Backend,
    BatchStream,
    Describes,
    HasPoolSettings,
    ReadsNatively,
    WorkerPool,
)
from ._values import (
    BatchJob,
    ImageWork,
    IterWork,
    MapWork,
    PoolSpec,
    StatsSink,
    StreamSpec,
)

__all__ = [
    "CAPABILITIES",
    "MIN_STACK_SIZE",
    "PIECE",
    "UNLIMITED_STACK_SIZE",
    "Backend",
    "BatchJob",
    "BatchStream",
    "Describes",
    "ForkedPoolError",
    "HasPoolSettings",
    "ImageWork",
    "IndexBatches",
    "IterWork",
    "MapWork",
    "PoolClosedError",
    "PoolSpec",
    "ReadsNatively",
    "StatsSink",
    "StreamSpec",
    "WorkerPool",
    "process_id",
    "python_thread_stack_size",
]
