"""benchmarks/closing_server.py (workload 10d taken apart) serves what the
loopback server generates, one request per connection, and its processes go
with it: published figures depend on both."""

from __future__ import annotations

import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dataloader_api.io.loopback import generated_object

SERVER = Path(__file__).resolve().parents[1] / "benchmarks" / "closing_server.py"

pytestmark = pytest.mark.skipif(not hasattr(select, "epoll"), reason="the server runs on epoll")


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_every_object_exact_on_its_own_connection_from_every_process():
    command = [sys.executable, str(SERVER), "--objects", "40", "--size", "3000",
               "--latency", "0.05", "--spread", "0.01", "--processes", "3"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        workers = children(server.pid)
        assert len(workers) == 2

        def get(index: int) -> tuple[bytes, int, str | None, float]:
            start = time.monotonic()  # before the connect: the time taken is never shorter
            with urllib.request.urlopen(f"{url}/{index}", timeout=60) as reply:
                body, length = reply.read(), reply.headers["Content-Length"]
                return body, reply.version, length, time.monotonic() - start

        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(get, range(40)))
        for index, (body, version, length, _) in enumerate(replies):
            assert body == generated_object(index, 3000)
            assert (version, length) == (10, "3000")  # HTTP/1.0: the server closes
        # Never early (a busy machine only makes replies later): 50 - 10 ms at least.
        early = [(i, took) for i, (*_, took) in enumerate(replies) if took < 0.04]
        assert not early, f"replies before their time: {early}"
        for missing in ("/40", "/x", "/"):
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(f"{url}{missing}", timeout=60)
            assert error.value.code == 404
    finally:
        server.terminate()
        server.wait(60)
    deadline = time.monotonic() + 60  # generous: a loaded machine schedules late
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if alive(pid)], "a server process outlived the first"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--processes", "0"], "--processes must be at least 1, not 0"),
        (["--latency", "0.02", "--spread", "0.03"],
         "--spread must be from 0 to --latency (0.02), not 0.03"),
        (["--spread", "-1"], "--spread must be from 0 to --latency (0.0), not -1.0"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_by_name(options, message):
    command = [sys.executable, str(SERVER), *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
