"""Workload 10g alone (``remote_nginx.py``): the HTTP reads against nginx, with
the rust and threads backends, in turns with curl; prints its Markdown table.

    python benchmarks/http_nginx.py [rounds]   # in a venv with the rust backend
"""

from __future__ import annotations

import sys

import render
from remote_nginx import nginx
from workloads import Settings

if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for table in nginx(Settings(["rust", "threads"], rounds, False)):
        print("\n".join(render.lines(table)))
