"""Finding installed backends and choosing one."""

from __future__ import annotations

import os
import sysconfig
from typing import TYPE_CHECKING, Literal, overload

from ..contract import CAPABILITIES, Backend, Describes

if TYPE_CHECKING:  # importlib.metadata costs ~30 ms: imported at the first scan
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "dataloader_api.backends"
ENV_VAR = "DATALOADER_BACKEND"
# A fixed preference (the benchmarks' order of speed here): the default is the
# first of these that is installed, else the first other backend by name.
PREFERENCE = ("rust", "cffi", "threads")


# Scanning the installed distributions takes about a millisecond, too much for
# every DataLoader: it is done once, and again only for a name not yet seen.
_scanned: dict[str, EntryPoint] | None = None
_loaded: dict[str, Backend] = {}


def _entry_points(rescan: bool = False) -> dict[str, EntryPoint]:
    global _scanned
    if _scanned is None or rescan:
        from importlib.metadata import entry_points

        _scanned = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _scanned


@overload
def backends(details: Literal[False] = False) -> list[str]: ...
@overload
def backends(details: Literal[True]) -> dict[str, dict[str, str]]: ...


def backends(details: bool = False) -> list[str] | dict[str, dict[str, str]]:
    """Names of the installed backends in preference order (``rust``, ``cffi``,
    ``threads``, then the others by name): the first is the default.

    ``details=True``: each name maps to what its build reports
    (``contract.Describes``: a native part built without its fast path, say),
    or ``{"error": ...}`` when it cannot be loaded; this loads every backend.
    """
    if not isinstance(details, bool):
        raise TypeError(f"backends: details should be a bool, but got details={details!r}")
    names = set(_entry_points(rescan=True))
    ranked = [name for name in PREFERENCE if name in names]
    ranked += sorted(names - set(PREFERENCE))
    if not details:
        return ranked
    return {name: _described(name) for name in ranked}


def _described(name: str) -> dict[str, str]:
    try:
        backend = resolve_backend(name)
    except Exception as error:  # a broken install is a detail, not a failure here
        return {"error": f"{type(error).__name__}: {error}"}
    if isinstance(backend, Describes):
        return {str(topic): str(text) for topic, text in backend.describe().items()}
    return {}


def resolve_backend(name: str | None = None) -> Backend:
    """The backend named by ``name``, else ``$DATALOADER_BACKEND``, else the default."""
    installed = _entry_points()
    source = "backend"
    if name is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            name, source = env, ENV_VAR
    if name is None:
        ranked = backends()
        if not ranked:
            raise RuntimeError(
                f"no dataloader_api backend is installed (entry-point group "
                f"{ENTRY_POINT_GROUP!r}), though dataloader-api ships the threads backend: "
                "its installation is incomplete; reinstall it with "
                "`pip install --force-reinstall dataloader-api`"
            )
        name = ranked[0]
    if not isinstance(name, str):
        raise TypeError(f"backend must be a str or None, got {type(name).__name__}")
    if name in _loaded:
        return _loaded[name]
    if name not in installed:
        installed = _entry_points(rescan=True)  # installed since the last scan?
    if name not in installed:
        listed = ", ".join(repr(n) for n in backends()) or "none"
        raise ValueError(
            f"{source}={name!r} is not an installed dataloader_api backend; "
            f"installed backends: {listed}{_why_absent(name)}"
        )
    loaded = installed[name].load()
    backend = loaded() if isinstance(loaded, type) else loaded
    if not callable(getattr(backend, "create_pool", None)):
        raise TypeError(
            f"backend {name!r} ({installed[name].value}) does not implement "
            "dataloader_api.contract.Backend: it has no create_pool()"
        )
    if not isinstance(getattr(backend, "supports_items_in_parallel", None), bool):
        raise TypeError(
            f"backend {name!r} ({installed[name].value}) does not implement "
            "dataloader_api.contract.Backend: it must declare supports_items_in_parallel "
            "(a bool)"
        )
    for capability in CAPABILITIES:
        present = getattr(backend, capability, None)
        if present is not None and not callable(present):
            raise TypeError(
                f"backend {name!r} ({installed[name].value}) has {capability}="
                f"{present!r}, which should be a method (the optional capability "
                f"dataloader_api.contract.{CAPABILITIES[capability].__name__}) or absent"
            )
    _loaded[name] = backend
    return backend  # type: ignore[no-any-return]


def free_threaded_build() -> bool:
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _why_absent(name: str) -> str:
    """Why a shipped backend cannot be installed on this interpreter, if it cannot."""
    if name == "cffi" and free_threaded_build():
        return (
            " (the cffi backend cannot be installed on a free-threaded build: cffi does not "
            "support it; use 'rust' or 'threads')"
        )
    return ""
