"""A reply is bounded by default (issue 49): ``max_bytes`` defaults to
``DEFAULT_MAX_BYTES`` (1 GiB) on the network datasets, ``max_bytes=None`` lifts
it, and a server that announces or sends more is an ``ItemTooLargeError``
naming the item and URL, on every backend, with the reference's reads and the
rust backend's native ones; a remote shard past the bound is one too."""

from __future__ import annotations

import inspect
import itertools
import threading
import time
from collections.abc import Iterator

import pytest
from rawserver import RawServer
from shard_files import make_shards

from dataloader_api import DataLoader
from dataloader_api.io import (
    DEFAULT_MAX_BYTES,
    HttpDataset,
    ItemTooLargeError,
    ObjectStoreDataset,
    RetryPolicy,
)
from dataloader_api.io.loopback import LoopbackServer
from dataloader_api.shards import TarShards

FAST = RetryPolicy(max_retries=1, backoff=0.01, max_backoff=0.02)
OK = b"HTTP/1.1 200 OK\r\n"


def load(data, backend):
    workers = 0 if backend is None else 2
    return list(DataLoader(data, num_workers=workers, backend=backend, batch_size=None))


def too_large(server: RawServer, backend, **options) -> ItemTooLargeError:
    data = HttpDataset([server.url + "/item"], retry=FAST, **options)
    with pytest.raises(ItemTooLargeError) as caught:
        load(data, backend)
    text = str(caught.value)
    assert "item 0" in text and f"127.0.0.1:{server.port}/item" in text, text
    assert "max_bytes=" in text, text
    return caught.value


def test_the_network_datasets_are_bounded_by_default():
    assert DEFAULT_MAX_BYTES == 1 << 30
    for cls in (HttpDataset, ObjectStoreDataset):
        assert inspect.signature(cls).parameters["max_bytes"].default == DEFAULT_MAX_BYTES
    assert HttpDataset(["http://127.0.0.1/x"]).max_bytes == DEFAULT_MAX_BYTES
    assert HttpDataset(["http://127.0.0.1/x"], max_bytes=None).max_bytes is None  # no bound
    with pytest.raises(ValueError, match="max_bytes"):
        HttpDataset(["http://127.0.0.1/x"], max_bytes=-1)


def test_a_terabyte_content_length_is_refused_by_default(io_mode):
    # The server says 1 TiB, sends 1 MiB and waits: refused from the header, at once.
    done = threading.Event()

    def reply(head: bytes) -> Iterator[bytes]:
        yield OK + b"Content-Length: %d\r\n\r\n" % (1 << 40)
        yield b"x" * (1 << 20)
        done.wait(30)

    with RawServer(reply) as server:
        error = too_large(server, io_mode, timeout=5)
        done.set()
    assert str(1 << 40) in str(error)


def throttled(frame: bytes) -> Iterator[bytes]:
    # 64 KiB a millisecond at most: without a bound, the timeout ends it, at a
    # size this machine holds (the test is about the error, never the speed).
    for _ in itertools.count():
        yield frame
        time.sleep(0.001)


@pytest.mark.parametrize("framing", ["until-close", "chunked"])
def test_an_endless_body_ends_at_max_bytes(io_mode, framing):
    def reply(head: bytes) -> Iterator[bytes]:
        if framing == "chunked":
            yield OK + b"Transfer-Encoding: chunked\r\n\r\n"
            yield from throttled(b"10000\r\n" + b"x" * 0x10000 + b"\r\n")
        else:
            yield OK + b"Connection: close\r\n\r\n"
            yield from throttled(b"x" * 0x10000)

    with RawServer(reply) as server:
        too_large(server, io_mode, timeout=3, max_bytes=1 << 20)
        # Refused once past the bound, not read on until the timeout.
        assert server.sent < 64 * 2**20 * server.connections


def test_max_bytes_none_lifts_the_bound(io_mode):
    body = b"y" * (3 << 20)
    with LoopbackServer({"/big": body}) as server:
        data = HttpDataset([server.url + "/big"], max_bytes=None, retry=FAST)
        assert load(data, io_mode) == [body]
        data = HttpDataset([server.url + "/big"], max_bytes=1 << 20, retry=FAST)
        with pytest.raises(ItemTooLargeError):
            load(data, io_mode)


def test_a_remote_shard_past_the_bound_is_named_before_its_buffer(tmp_path, reads):
    # An index that says a shard holds 100 GiB (a sparse member, or a lie): the
    # buffer it would stream into is never made (a bare MemoryError before).
    make_shards(tmp_path, 1, 3)
    objects = {"/d/train-000.tar": (tmp_path / "train-000.tar").read_bytes()}
    with LoopbackServer(objects) as server:
        dataset = TarShards(server.url + "/d/train-{000..000}.tar", index_cache=False)
        remote = dataset._remote
        assert remote is not None
        remote._kept.clear()  # read whole to be indexed: as if let go since
        with pytest.raises(ItemTooLargeError) as caught:
            remote.streamed(0, 100 << 30, lambda total: AssertionError(total))
        assert "train-000.tar" in str(caught.value) and "max_bytes=" in str(caught.value)
