"""Datasets whose items are bytes read from files, HTTP(S) URLs and S3-compatible
object stores, with retries of transient failures and many reads in flight.

>>> from dataloader_api.io import FileDataset
>>> FileDataset(["/etc/hostname"])[0] == open("/etc/hostname", "rb").read()
True
"""

from __future__ import annotations

from ._errors import DEFAULT_MAX_BYTES, FetchError, ItemTooLargeError
from ._file import FileDataset
from ._http import HttpDataset
from ._locations import Locations
from ._object_store import ObjectStoreDataset
from ._retry import TRANSIENT_STATUSES, RetryPolicy

__all__ = [
    "DEFAULT_MAX_BYTES",
    "TRANSIENT_STATUSES",
    "FetchError",
    "FileDataset",
    "HttpDataset",
    "ItemTooLargeError",
    "Locations",
    "ObjectStoreDataset",
    "RetryPolicy",
]
