"""A CPU load beside the timing-sensitive tests (``nox -s tests_under_load``).

    python scripts/cpu_load.py PROCESSES   # busy until its stdin closes

Starts PROCESSES busy processes at normal priority, prints "loaded" once they
run, and stops them when its standard input reaches end of file: the session
that started it closes the pipe, or dies, and the load ends with it. Each busy
process also ends on its own once its parent is gone, so a killed session
never leaves the machine loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys

# Pure Python arithmetic, checking every ~10 ms of work whether the parent lives.
BUSY = """
import os
parent = os.getppid()
while os.getppid() == parent:
    total = 0
    for i in range(200_000):
        total += i * i
"""


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit() or int(argv[0]) < 1:
        print(f"usage: cpu_load.py PROCESSES (a positive integer), got {argv!r}", file=sys.stderr)
        return 2
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(int(argv[0]))]
    print(f"loaded: {len(busy)} busy processes on {os.cpu_count()} cores", flush=True)
    try:
        sys.stdin.read()  # until the session closes the pipe or ends
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
