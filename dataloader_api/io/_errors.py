"""The errors an I/O dataset raises for one item; every backend raises these."""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, urlunsplit

__all__ = ["DEFAULT_MAX_BYTES", "FetchError", "ItemTooLargeError", "downgrade", "relabeled"]

#: A reply's size per item at most unless ``max_bytes=`` says otherwise
#: (``max_bytes=None``: no bound). An endless or lying server is an
#: ``ItemTooLargeError`` past it, not a process grown until the system kills it.
DEFAULT_MAX_BYTES = 1 << 30


class FetchError(OSError):
    """An item could not be read: a permanent HTTP status (404, 403, ...), or a
    transient failure that outlasted the retries. The message names the item's
    index, the location (credentials redacted) and the cause."""

    def __init__(
        self,
        index: Any,
        location: str,
        message: str,
        *,
        status: int | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"item {index!r}: {location}: {message}")
        self.index = index
        self.location = location
        self.status = status
        self.attempts = attempts

    def __reduce__(self) -> Any:
        return (
            _rebuild,
            (type(self), self.args[0], self.index, self.location, self.status, self.attempts),
        )


class ItemTooLargeError(FetchError):
    """An item larger than the dataset's ``max_bytes``."""


def _rebuild(
    cls: type[FetchError], text: str, index: Any, location: str, status: int | None, attempts: int
) -> FetchError:
    error = cls.__new__(cls)
    OSError.__init__(error, text)
    error.index, error.location, error.status, error.attempts = index, location, status, attempts
    return error


def relabeled(error: FetchError, label: str) -> FetchError:
    """``error`` said of ``label`` (``"shard 1"``: a dataset whose items are not the
    io dataset's) instead of ``item 1``; the same class and attributes."""
    text = str(error.args[0]) if error.args else ""
    prefix = f"item {error.index!r}: "
    if not text.startswith(prefix):
        return error
    text = f"{label}: {text[len(prefix) :]}"
    return _rebuild(type(error), text, error.index, error.location, error.status, error.attempts)


def downgrade(to: SplitResult) -> str:
    """Why a redirect from https to http is not followed (reqwest and requests
    follow it): the item's bytes would come unauthenticated, open to anyone on the
    path, from a dataset that listed https URLs; the error names the fix. Rust's
    ``redirect::downgrade``, word for word."""
    shown = urlunsplit((to.scheme, to.netloc.rpartition("@")[2], to.path or "/", "", ""))
    return (
        f"refused a redirect from https to {shown}: a downgrade to plain http is not "
        "followed; list the http:// URL itself to read it without TLS (not retried)"
    )
