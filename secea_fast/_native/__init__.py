"""Thin bindings to the compiled kernels (``secea_fast._native._lib``).

Everything here is *raw*: callers have validated their inputs (see
``secea_fast._checks``).  This module also owns run-time backend selection:

* ``SECEA_FAST_BACKEND=portable`` (read at import) forces the portable C path,
  ``SECEA_FAST_BACKEND=avx2`` the variants of a CPU with AVX2, BMI2 and AES-NI
  but no VAES and no AVX-512 (what an AVX2-only x86 runs);
  ``set_backend("auto" | "portable" | "avx2")`` switches at run time (tests
  use it to run every path in one process).
  On 64-bit ARM, ``auto`` (and ``avx2``) pick the ARMv8 Crypto Extensions
  AES and DPF variants (``"armce"``) where the CPU has them (Linux
  ``HWCAP_AES``, macOS ``hw.optional.arm.FEAT_AES``) and the NEON matrix
  product for p < 2^50 (``"neon"``); the field kernels run the portable C
  there.
* ``backend_info()`` tells which variant each kernel family uses.
* ``SECEA_FAST_NUM_THREADS`` / ``threads=`` set the thread count of parallel
  kernels (default: the cores this process may run on).
* ``check_status`` maps the C status codes (``enum secea_status`` of
  ``csrc/include/secea.h``, read as ``lib.SECEA_OK``, ...) to exceptions: the
  one place where a return code becomes an error.
"""
from __future__ import annotations

import numbers
import os

import numpy as np

try:
    from ._lib import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "secea_fast's C extension is not built; install the package with "
        "`python -m pip install -e .` (or `pip install .`) so cffi compiles csrc/"
    ) from exc

_BACKENDS = ("auto", "portable", "avx2")
_LEVEL = {"auto": 0, "portable": 1, "avx2": 2}          # secea_dispatch_init's levels
_state = {"backend": "auto"}


def check_status(status: int, what: str, invalid: str = "arguments outside the kernel's limits") -> None:
    """Raise for a failed C call: ``SECEA_ENOMEM`` -> ``MemoryError``,
    ``SECEA_EINVAL`` -> ``ValueError`` with ``invalid`` (say which argument),
    anything else but ``SECEA_OK`` -> ``RuntimeError`` (a kernel bug, or a
    positive result the caller should have handled first).  ``what`` names the
    operation, e.g. ``"dpf eval_full"``.

    >>> check_status(lib.SECEA_OK, "x")
    >>> check_status(lib.SECEA_EINVAL, "matmul", "skip must be 0 or 8")
    Traceback (most recent call last):
    ...
    ValueError: matmul: skip must be 0 or 8
    """
    if status == lib.SECEA_OK:
        return
    if status == lib.SECEA_ENOMEM:
        raise MemoryError(f"{what}: could not allocate working memory")
    if status == lib.SECEA_EINVAL:
        raise ValueError(f"{what}: {invalid}")
    raise RuntimeError(f"{what}: the C kernel failed (status {status})")


def set_backend(name: str) -> None:
    """Select the kernel variants: ``"auto"`` (best the CPU supports),
    ``"portable"`` (plain C everywhere) or ``"avx2"`` (at most AVX2 / AES-NI:
    on a CPU with VAES or AVX-512, what an AVX2-only CPU would run; below
    that, the best the CPU has)."""
    if not isinstance(name, str):
        raise TypeError(f"backend must be a str, got {type(name).__name__}")
    if name not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {name!r}")
    lib.secea_dispatch_init(_LEVEL[name])
    _state["backend"] = name


def get_backend() -> str:
    return _state["backend"]


def backend_info() -> dict:
    """Which variant each kernel family runs, and what the CPU offers.

    >>> info = backend_info(); sorted(info["kernels"])
    ['aes', 'bignum', 'dpf', 'field', 'matmul', 'ntt']
    """
    kernels = {}
    for name in ("aes", "bignum", "dpf", "field", "matmul", "ntt"):
        v = lib.secea_kernel_variant(name.encode())
        kernels[name] = ffi.string(v).decode() if v != ffi.NULL else "unknown"
    cpu = {f: bool(lib.secea_cpu_supports(f.encode()))
           for f in ("aes", "vaes", "vaes256", "avx2", "bmi2", "avx512f", "avx512dq", "avx512ifma")}
    return {"backend": _state["backend"], "kernels": kernels, "cpu": cpu,
            "threads": default_threads()}


def default_threads() -> int:
    env = os.environ.get("SECEA_FAST_NUM_THREADS")
    if env:
        try:
            t = int(env)
        except ValueError:
            raise ValueError(f"SECEA_FAST_NUM_THREADS must be a positive integer, got {env!r}") from None
        if t < 1:
            raise ValueError(f"SECEA_FAST_NUM_THREADS must be a positive integer, got {env!r}")
        return t
    return available_cpus()


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def resolve_threads(threads) -> int:
    """``threads=None`` means the default; otherwise a positive int (at most
    ``lib.SECEA_MAX_THREADS``, 64)."""
    top = lib.SECEA_MAX_THREADS
    if threads is None:
        return min(default_threads(), top)
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError(f"threads must be a positive int or None, got {type(threads).__name__}")
    threads = int(threads)                   # a NumPy integer is an int like every other count argument
    if not 1 <= threads <= top:
        raise ValueError(f"threads must be between 1 and {top}, got {threads}")
    return threads


def cffi_module():
    """The compiled cffi extension module itself (``secea_fast._native._lib``):
    what Numba's ``cffi_utils.register_module`` takes (``secea_fast.numba``)."""
    import importlib
    return importlib.import_module(__name__ + "._lib")       # the module the import above loaded


def u64ptr(arr):
    """``uint64_t[]`` cdata over a C-contiguous uint64 array (read or write).

    The returned object keeps ``arr`` alive, so temporaries such as
    ``u64ptr(np.ascontiguousarray(x))`` stay valid for the whole call (a bare
    ``ffi.cast`` of ``ffi.from_buffer`` would not: the buffer could be freed
    before the C function runs)."""
    return ffi.from_buffer("uint64_t[]", arr)


def u64out(out):
    """``uint64_t[]`` cdata to write into ``out``; a read-only array (one over
    ``bytes``) raises instead of being written."""
    return ffi.from_buffer("uint64_t[]", out, require_writable=True)


def u64in(x):
    """``uint64_t[]`` cdata to read ``x`` from: ``x`` itself if C-contiguous,
    else a contiguous copy (a view, a broadcast), kept alive by the cdata."""
    try:
        return ffi.from_buffer("uint64_t[]", x)
    except ValueError:                   # not C-contiguous
        return ffi.from_buffer("uint64_t[]", np.ascontiguousarray(x))


def u8ptr(buf):
    return ffi.from_buffer("uint8_t[]", buf)


_env_backend = os.environ.get("SECEA_FAST_BACKEND", "").strip().lower() or "auto"
if _env_backend not in _BACKENDS:
    raise ValueError(f"SECEA_FAST_BACKEND must be one of {', '.join(_BACKENDS)}, got {_env_backend!r}")
set_backend(_env_backend)
