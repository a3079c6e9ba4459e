"""glibc malloc settings for allocation-heavy NumPy work (see
``secea_fast.executor``, "Memory", and README "Memory").

NumPy code allocates and frees many short-lived arrays of a few hundred KB
to tens of MB (a SecEA block's queries, the transforms of a subproduct-tree
level).  With glibc's adaptive defaults those come from fresh ``mmap``s or a
heap trimmed back to the OS after use, so every call page-faults its buffers
in again, and page faults are expensive on virtual machines (2-3 us per 4 KB
page measured on this project's VM).  :func:`tune_malloc` sets
``M_MMAP_THRESHOLD`` to 32 MB and ``M_TRIM_THRESHOLD`` to 256 MB once per
process, so freed buffers are reused, at the price of keeping up to 256 MB of
freed heap in the process.

Importing the package changes nothing: these are process-wide settings, so
the caller opts in with ``secea_fast.tune_memory()`` (the command line and
the benchmarks do).  The package's own worker processes (fork workers, Ray
actors) apply it to themselves.  ``SECEA_FAST_MALLOC=default`` turns both
off (``tuned``, or unset, is the default).
"""
import ctypes
import os

_ENV = "SECEA_FAST_MALLOC"


def malloc_mode() -> str:
    """``tuned`` or ``default``, from ``SECEA_FAST_MALLOC`` (unset: tuned)."""
    mode = os.environ.get(_ENV, "").strip().lower() or "tuned"
    if mode not in ("tuned", "default"):
        raise ValueError(f"{_ENV} must be 'tuned' or 'default', got {mode!r}")
    return mode


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):   # pragma: no cover - not glibc
        return False


def tune_malloc() -> bool:
    """Set glibc's malloc thresholds for shard-sized buffers in this process
    (see the module docstring), once, unless ``SECEA_FAST_MALLOC=default``.
    Returns whether they are set (False where the C library is not glibc).
    Public as ``secea_fast.tune_memory``."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED is None and malloc_mode() == "tuned":
        _MALLOC_TUNED = False
        if not _glibc():                        # pragma: no cover - musl, macOS, Windows
            return False
        mallopt = _libc_function("mallopt")
        if mallopt is None:                     # pragma: no cover - not glibc
            return False
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        _MALLOC_TUNED = bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(
            mallopt(M_TRIM_THRESHOLD, 256 << 20))
    return bool(_MALLOC_TUNED)


_MALLOC_TUNED: bool | None = None
tune_memory = tune_malloc


def _libc_function(name):
    """A function of the C library this process runs on, or None."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except Exception:                           # pragma: no cover - no C library to load
        return None


def release_free_heap() -> None:
    """Return this process's free heap pages to the OS (glibc ``malloc_trim``;
    a no-op elsewhere).  Called before forking workers: a worker writing to
    heap addresses the parent has touched and freed takes a copy-on-write
    fault per page, which costs more than a fresh page (the first SecEA block
    of each worker: 64-72 ms with the parent's freed query buffers, 23-31 ms
    after the trim, against 10 ms for the next blocks; docs/PERFORMANCE.md,
    "Executors: local fork pool and Ray")."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim.argtypes = [ctypes.c_size_t]
        trim(0)
