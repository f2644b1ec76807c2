"""How much a process grows while shuffled reads cycle remote shards through a
memory bound: 24 shards of 2 MiB behind the loopback server (another process),
``TarShards(max_bytes_in_memory=3 shards)``, ``shuffle=True``, 2 workers, three
epochs per backend, each backend in a child of its own. Prints the peak RSS
growth per epoch in shards' worth (the bound is 3).

    python benchmarks/shard_rss.py [BACKEND ...]
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings

SHARDS, SAMPLES, SAMPLE_BYTES = 24, 16, 128 << 10
SHARD_BYTES = 2 << 20
SERVER = """
import sys, time
sys.path.insert(0, {here!r})
from shard_rss import shards
from dataloader_api.io.loopback import LoopbackServer
with LoopbackServer(shards()) as server:
    print(server.url, flush=True)
    time.sleep(3600)
"""


def shards() -> dict[str, bytes]:
    """The server's objects: shard ``s`` holds samples of ``SAMPLE_BYTES`` each."""
    objects = {}
    for shard in range(SHARDS):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for sample in range(SAMPLES):
                data = bytes([shard, sample]) * (SAMPLE_BYTES // 2)
                info = tarfile.TarInfo(f"{shard:03d}{sample:03d}.bin")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        objects[f"/s/{shard:03d}.tar"] = out.getvalue()
    return objects


def rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def child(url: str, backend: str) -> None:
    from dataloader_api import DataLoader
    from dataloader_api.shards import TarShards

    warnings.simplefilter("ignore")  # the re-read warning: this run means to re-read
    data = TarShards(
        [f"{url}/s/{shard:03d}.tar" for shard in range(SHARDS)],
        max_bytes_in_memory=3 * SHARD_BYTES + 100_000,
    )
    loader = DataLoader(
        data, batch_size=4, shuffle=True, seed=1, num_workers=2, backend=backend, collate_fn=list
    )
    base, peaks = rss(), []
    for _ in range(3):
        peak = 0
        for _batch in loader:
            peak = max(peak, rss())
        peaks.append(round((peak - base) / SHARD_BYTES, 1))
    print(backend, peaks)


def main() -> None:
    import dataloader_api

    backends = sys.argv[1:] or [n for n in dataloader_api.backends() if n in ("rust", "threads")]
    here = os.path.dirname(os.path.abspath(__file__))
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(here=here)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        print(f"peak RSS growth per epoch, in shards' worth (bound: 3), {SHARDS} x 2 MiB shards")
        with tempfile.TemporaryDirectory() as cache:
            environment = {**os.environ, "DATALOADER_CACHE_DIR": cache}
            for backend in backends:
                subprocess.run(
                    [sys.executable, __file__, "--child", url, backend],
                    env=environment,
                    check=True,
                )
                time.sleep(0.1)
    finally:
        server.kill()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main()
