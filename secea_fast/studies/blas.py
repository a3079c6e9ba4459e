"""Single-threaded BLAS for the study commands.

The studies' products are small ((512 x 128) by (128 x 104) for a Kinship
batch, a few thousand rows for LightGCN): OpenBLAS's threads cost more in
start-up and contention than they gain, and on a shared machine they make
things much worse -- one TransE epoch on real Kinship was 14x slower with
OpenBLAS's default threads than with one at load average 20, and the other
studies 6-14x (docs/STUDIES.md, "Real data").  Every study command
(:func:`secea_fast.studies.runner.main`, :func:`~secea_fast.studies.tables.main`,
:func:`~secea_fast.studies.secemb_table3.main`) runs inside
:func:`single_threaded_blas`, so the user need not remember
``OPENBLAS_NUM_THREADS=1``.

How: with threadpoolctl installed, its ``threadpool_limits(1)`` (OpenBLAS,
MKL, BLIS, OpenMP); without it, the OpenBLAS libraries loaded in this
process (found in ``/proc/self/maps``: NumPy's and SciPy's bundled copies)
through their own ``*_set_num_threads`` entry points by ctypes.  Either way
``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` are
set to 1 for the duration, so worker processes started by ``spawn`` (which
import NumPy afresh) get one thread too; workers started by ``fork`` inherit
the library's setting.  Everything is restored on exit: the functions
calling a study as a library do not keep a changed process.
"""
from __future__ import annotations

import ctypes
import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["single_threaded_blas", "blas_threads", "set_blas_threads", "THREAD_VARIABLES"]

#: the environment variables set to 1 inside :func:`single_threaded_blas`
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# OpenBLAS's entry points under the names its builds export (plain, NumPy's
# 64-bit-integer scipy_openblas64_, SciPy's scipy_openblas)
_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_")
_GETTERS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_")


def _openblas_libraries() -> dict[str, ctypes.CDLL]:
    """The OpenBLAS shared libraries mapped into this process, by path."""
    try:
        with open("/proc/self/maps") as f:
            fields = [line.split() for line in f]
    except OSError:                 # not Linux: nothing found, threadpoolctl is the way there
        return {}
    paths = {x[-1] for x in fields if len(x) >= 6 and "openblas" in os.path.basename(x[-1]).lower()
             and ".so" in os.path.basename(x[-1])}
    out = {}
    for p in sorted(paths):
        try:
            out[p] = ctypes.CDLL(p, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        except OSError:
            continue
    return out


def _entry(lib: ctypes.CDLL, names: tuple[str, ...]):
    for n in names:
        fn = getattr(lib, n, None)
        if fn is not None:
            return fn
    return None


def _threadpoolctl() -> Any:
    try:
        return importlib.import_module("threadpoolctl")       # optional: not a dependency
    except ImportError:
        return None


def blas_threads() -> dict[str, int]:
    """The thread count of every BLAS library loaded in this process, by
    library path (empty if none is found)."""
    tp = _threadpoolctl()
    if tp is not None:
        return {i["filepath"]: int(i["num_threads"]) for i in tp.threadpool_info() if i.get("user_api") == "blas"}
    out = {}
    for path, lib in _openblas_libraries().items():
        get = _entry(lib, _GETTERS)
        if get is not None:
            get.restype = ctypes.c_int
            out[path] = int(get())
    return out


def set_blas_threads(n: int | dict[str, int]) -> dict[str, int]:
    """Set every loaded BLAS library to ``n`` threads, or each library named
    in the dict ``n`` (path -> count, as :func:`blas_threads` returns) to
    its count; returns :func:`blas_threads` from before.  Raises TypeError
    or ValueError naming ``n`` for anything but counts >= 1."""
    counts = n if isinstance(n, dict) else None
    values: list[Any] = list(n.values()) if isinstance(n, dict) else [n]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"n must be an int or a dict of int counts, got {type(v).__name__}")
        if v < 1:
            raise ValueError(f"n must be >= 1, got {v}")
    before = blas_threads()
    tp = _threadpoolctl()
    if tp is not None:
        for c in sorted(set(values)):       # threadpoolctl sets by API, not by path: one count in practice
            tp.threadpool_limits(c, user_api="blas")
        return before
    for path, lib in _openblas_libraries().items():
        want = counts.get(path) if counts is not None else values[0]
        fn = _entry(lib, _SETTERS)
        if fn is not None and want is not None:
            fn.argtypes = [ctypes.c_int]
            fn(int(want))
    return before


@contextmanager
def single_threaded_blas() -> Iterator[dict[str, int]]:
    """Run the block with one BLAS thread (module docstring); yields the
    counts before, restored on exit together with the environment."""
    saved_env = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    os.environ.update({k: "1" for k in THREAD_VARIABLES})
    before = set_blas_threads(1)
    try:
        yield before
    finally:
        if before:
            set_blas_threads(before)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
