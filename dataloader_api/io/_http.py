"""``HttpDataset``: item ``i`` is the body of one GET of URL ``i``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._base import AsyncReadDataset
from ._errors import DEFAULT_MAX_BYTES
from ._http_client import redact
from ._locations import Locations
from ._progressive import ProgressiveBytes
from ._retry import RetryPolicy

__all__ = ["HttpDataset"]


class HttpDataset(AsyncReadDataset):
    """Bytes over HTTP(S): one GET per item on pooled keep-alive connections.

    ``urls`` is a list of URLs, a template filled from ``columns`` (string
    values percent-encoded) or a function of the index (with ``length``).
    ``headers`` go with every request (auth: they never appear in errors).
    Connection errors, timeouts (``timeout`` seconds per attempt), bodies cut
    short and the statuses of ``retry.statuses`` (408, 429, 500, 502, 503,
    504) are retried with backoff, jitter and ``Retry-After``, at most
    ``max_retries`` times; any other status raises ``FetchError`` at once.
    A reply of more than ``max_bytes`` (default ``DEFAULT_MAX_BYTES``, 1 GiB;
    ``None``: no bound) raises ``ItemTooLargeError``.

    An async dataset: in a ``DataLoader`` its reads run on the loader's
    event loop, up to ``max_concurrency`` (a ``DataLoader`` argument) at once.
    """

    def __init__(
        self,
        urls: Sequence[str] | str | Callable[[int], str],
        *,
        columns: Mapping[str, Any] | None = None,
        length: int | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        max_connections: int = 64,
    ) -> None:
        super().__init__(
            timeout=timeout,
            max_retries=max_retries,
            retry=retry,
            max_bytes=max_bytes,
            max_connections=max_connections,
        )
        self.headers = _check_headers(headers)
        self.locations = Locations(
            urls, columns=columns, length=length, quote=True, owner="HttpDataset"
        )

    async def read(self, index: Any, location: str, sink: ProgressiveBytes | None = None) -> bytes:
        return await self.client().get(location, index, self.headers, sink=sink)

    def reader_spec(self) -> dict[str, Any]:
        return {"kind": "http", "headers": list(self.headers.items()), **self.network_spec()}

    def shown(self, location: str) -> str:
        return f"GET {redact(location)}"

    def __repr__(self) -> str:
        return f"HttpDataset({len(self)} items, timeout={self.timeout:g})"


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError(f"HttpDataset: headers must be a mapping of str to str, got {headers!r}")
    checked = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"HttpDataset: headers must map str to str, got {name!r}: {type(value).__name__}"
            )
        if any(c in name + value for c in "\r\n") or not name or ":" in name:
            raise ValueError(f"HttpDataset: header {name!r} has a newline or a bad name")
        if name.lower() in ("host", "content-length", "transfer-encoding"):
            raise ValueError(f"HttpDataset: header {name!r} is set by the client")
        checked[name] = value
    return checked
