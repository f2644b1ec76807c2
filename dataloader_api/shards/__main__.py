"""``python -m dataloader_api.shards index SHARD...``: write each tar shard's
companion index (DALI's v1.2 ``.idx``), one this package reads and checks."""

from __future__ import annotations

import argparse
import sys

from ._companion import write_index
from ._tar_index import ShardError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dataloader_api.shards",
        description="Tools for WebDataset-convention tar shards.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    index = commands.add_parser(
        "index",
        help="write each shard's companion index (DALI's v1.2 .idx format)",
        description=(
            "Write each tar shard's companion index beside it: NVIDIA DALI's v1.2 .idx "
            "format, named as the shard with its last extension replaced by .idx "
            "(train-000001.tar -> train-000001.idx, set.v2-000.tar -> set.v2-000.idx). "
            "Every regular member is indexed where tar puts it (pax and long-name "
            "headers read), and the index is checked to cover its shard, so TarShards "
            "reads it instead of the shard's headers, locally or next to a remote shard. "
            "An existing index is replaced."
        ),
    )
    index.add_argument("shards", nargs="+", metavar="SHARD", help="a local tar file")
    arguments = parser.parse_args(argv)
    failed = 0
    for shard in arguments.shards:
        try:
            path, samples = write_index(shard)
        except (OSError, ShardError, ValueError) as error:
            failed += 1
            print(f"error: {shard!r}: {_reason(error)}", file=sys.stderr)
            continue
        print(f"{path} ({samples} samples)")
    if failed:
        print(f"{failed} of {len(arguments.shards)} shards not indexed", file=sys.stderr)
    return 1 if failed else 0


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"cannot read it: {error.strerror}"
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
