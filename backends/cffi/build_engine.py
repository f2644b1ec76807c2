"""cffi API-mode build of dataloader_cffi._engine: csrc/dlpool.c and csrc/dlring.c
(the pool and the batch rings, no Python) and csrc/dlpool_py.c (the hooks that
attach each pool thread to the interpreter). The declarations cffi reads are the headers
themselves, the same ones csrc/test_dlpool.c compiles against."""

from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).parent
CSRC = HERE / "csrc"


def declarations(header: Path) -> str:
    """A C header as cffi's cdef takes it: no comments, no preprocessor lines."""
    text = re.sub(r"/\*.*?\*/", "", header.read_text(), flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


ffibuilder = FFI()
ffibuilder.cdef(declarations(CSRC / "dlpool.h") + declarations(CSRC / "dlpool_py.h"))
ffibuilder.set_source(
    "dataloader_cffi._engine",
    '#include "dlpool_py.h"',
    sources=[str(CSRC / name) for name in ("dlpool.c", "dlring.c", "dlpool_py.c")],
    include_dirs=[str(CSRC)],
    extra_compile_args=["-Wall", "-Wextra", "-Werror", "-O2"],
    # Thread-state calls (PyThreadState_New, PyInterpreterState_Main) are not in
    # the limited API.
    py_limited_api=False,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
