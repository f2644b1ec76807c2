"""``ObjectStoreDataset``: item ``i`` is object ``i`` of an S3-compatible bucket."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from ._base import AsyncReadDataset, run_sync
from ._errors import DEFAULT_MAX_BYTES
from ._locations import Locations
from ._progressive import ProgressiveBytes
from ._retry import RetryPolicy
from ._sigv4 import Credentials, sign_get

__all__ = ["ObjectStoreDataset"]

_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class ObjectStoreDataset(AsyncReadDataset):
    """Objects of an S3-compatible store, one object per item.

    ``url`` is ``"s3://bucket"`` or ``"s3://bucket/prefix/"``. Without
    ``keys`` the dataset is every object under the prefix, listed once here
    (in the store's order: by key). ``keys`` (relative to the prefix) is a
    list, a template filled from ``columns`` or a function of the index.

    The endpoint is ``endpoint_url``, else ``$AWS_ENDPOINT_URL_S3``, else
    ``$AWS_ENDPOINT_URL``, else AWS's for the region (``region``, else
    ``$AWS_REGION``, else ``$AWS_DEFAULT_REGION``, else ``us-east-1``).
    Credentials come from ``$AWS_ACCESS_KEY_ID``, ``$AWS_SECRET_ACCESS_KEY``
    and ``$AWS_SESSION_TOKEN``; ``anonymous=True`` sends unsigned requests
    (public buckets). Reads follow the same retry policy as ``HttpDataset``;
    a missing key raises ``FetchError`` (status 404) naming the key.
    """

    def __init__(
        self,
        url: str,
        keys: Sequence[str] | str | Callable[[int], str] | None = None,
        *,
        columns: Mapping[str, Any] | None = None,
        length: int | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        anonymous: bool = False,
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
        self.bucket, self.prefix = _parse_url(url)
        self.region = (
            region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        endpoint = (
            endpoint_url
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL")
        )
        self.endpoint = _check_endpoint(endpoint) if endpoint else None
        self.credentials = None if anonymous else _credentials()
        if keys is None:
            if columns is not None or length is not None:
                raise TypeError(
                    "ObjectStoreDataset: columns= and length= describe keys=; without keys "
                    "the objects under the prefix are listed"
                )
            self.locations = Locations(run_sync(self._list()), owner="ObjectStoreDataset")
        else:
            self.locations = Locations(
                keys, columns=columns, length=length, quote=False, owner="ObjectStoreDataset"
            )

    def object_url(self, key: str) -> str:
        """The HTTP(S) URL of ``key`` (relative to the prefix)."""
        path = quote(self.prefix + key, safe="/-_.~")
        if self.endpoint is not None:  # path-style: what S3-compatible servers all take
            return f"{self.endpoint}/{self.bucket}/{path}"
        return f"https://{self.bucket}.s3.{self.region}.amazonaws.com/{path}"

    def _headers(self, url: str) -> Callable[[], Mapping[str, str]]:
        credentials = self.credentials
        if credentials is None:
            return dict
        return lambda: sign_get(url, self.region, credentials)

    async def read(self, index: Any, location: str, sink: ProgressiveBytes | None = None) -> bytes:
        url = self.object_url(location)
        return await self.client().get(
            url,
            index,
            self._headers(url),
            shown=self.shown(location),
            detail=_s3_error,
            sink=sink,
        )

    async def _list(self) -> list[str]:
        keys: list[str] = []
        token = None
        base = self.object_url("").rstrip("/")
        if self.endpoint is not None:
            base = f"{self.endpoint}/{self.bucket}"
        while True:
            query = f"list-type=2&prefix={quote(self.prefix, safe='-_.~')}"
            if token is not None:
                query += f"&continuation-token={quote(token, safe='-_.~')}"
            url = f"{base}/?{query}"
            body = await self.client().get(
                url,
                "listing",
                self._headers(url),
                shown=f"listing s3://{self.bucket}/{self.prefix}",
                detail=_s3_error,
            )
            root = ElementTree.fromstring(body)
            keys += [
                element.text[len(self.prefix) :]
                for element in root.iter(f"{_NS}Key")
                if element.text is not None
            ]
            truncated = root.findtext(f"{_NS}IsTruncated") == "true"
            token = root.findtext(f"{_NS}NextContinuationToken")
            if not truncated or not token:
                return keys

    def reader_spec(self) -> dict[str, Any]:
        credentials = self.credentials
        return {
            "kind": "s3",
            "bucket": self.bucket,
            "prefix": self.prefix,
            "endpoint": self.endpoint,
            "region": self.region,
            "credentials": None
            if credentials is None
            else (credentials.access_key, credentials.secret_key, credentials.session_token),
            **self.network_spec(),
        }

    def shown(self, location: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{location}"

    def __repr__(self) -> str:
        return f"ObjectStoreDataset(s3://{self.bucket}/{self.prefix}, {len(self)} objects)"


def _parse_url(url: Any) -> tuple[str, str]:
    if not isinstance(url, str):
        raise TypeError(
            f"ObjectStoreDataset: url must be a str like 's3://bucket/prefix/', got {url!r}"
        )
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(
            f"ObjectStoreDataset: url={url!r} is not 's3://bucket' or 's3://bucket/prefix/' "
            "(the reference reads S3-compatible stores only)"
        )
    return parts.netloc, parts.path.lstrip("/")


def _check_endpoint(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"ObjectStoreDataset: endpoint_url={endpoint!r} is not an http(s) URL")
    return endpoint.rstrip("/")


def _credentials() -> Credentials:
    access, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not access or not secret:
        raise ValueError(
            "ObjectStoreDataset: no credentials: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or pass "
            "anonymous=True for a public bucket"
        )
    return Credentials(access, secret, os.environ.get("AWS_SESSION_TOKEN") or None)


def _s3_error(body: bytes) -> str:
    """``Code: Message`` of an S3 error document, or its first line."""
    code = re.search(rb"<Code>(.*?)</Code>", body)
    message = re.search(rb"<Message>(.*?)</Message>", body)
    if code is None:
        return body[:200].decode("utf-8", "replace").splitlines()[0] if body.strip() else ""
    text = code.group(1).decode("utf-8", "replace")
    if message is not None:
        text += f": {message.group(1).decode('utf-8', 'replace')}"
    return text
