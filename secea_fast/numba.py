"""Numba interop: the package's modular arithmetic as ``@numba.njit``
functions and its C kernels callable from a user's njit code.

Fused kernels of your own (a product, a reduction and a comparison in one
pass over the data) are written with the scalar functions below; bulk work
calls the C kernels through cffi, which Numba compiles to a direct call::

    import numba, numpy as np
    import secea_fast, secea_fast.numba as snb

    ffi, lib = snb.c_kernels()              # registers the cffi module with Numba

    @numba.njit
    def masked_dot(a, b, mask):             # sum of a[i] * b[i] where mask[i], mod Goldilocks
        acc = np.uint64(0)
        for i in range(a.shape[0]):
            if mask[i]:
                acc = snb.gl_add(acc, snb.gl_mul(a[i], b[i]))
        return acc

    @numba.njit
    def mul_then_sum(out, a, b, p):         # a C kernel inside njit code
        lib.secea_fp_mul(ffi.from_buffer(out), ffi.from_buffer(a), ffi.from_buffer(b), a.size, p)
        return out.sum()

Scalars are ``np.uint64`` in [0, p).  Goldilocks p = 2^64 - 2^32 + 1
(``gl_*``) reduces the 128-bit product with 2^64 = 2^32 - 1 and
2^96 = -1 mod p; ``mulmod`` serves any prime p < 2^50 (the embedding prime
63 * 2^44 + 1 among them) with a floating-point quotient estimate corrected
in integer arithmetic.  The C kernels run on whatever CPU variant
``secea_fast.backend_info()`` reports.

Needs the ``numba`` extra (``pip install "secea_fast[numba]"``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

try:
    import numba as _numba
except ImportError:  # pragma: no cover - depends on the install
    raise ImportError('secea_fast.numba needs Numba: pip install "secea_fast[numba]"') from None

from . import _native

__all__ = ["c_kernels", "gl_add", "gl_sub", "gl_mul", "addmod", "submod", "mulmod", "MULMOD_MAX_P"]

MULMOD_MAX_P = 1 << 50          # mulmod's float quotient is off by at most 2 below this

_U = np.uint64
_P = _U(0xFFFFFFFF00000001)     # Goldilocks
_EPS = _U(0xFFFFFFFF)           # 2^64 mod p = 2^32 - 1
_M32 = _U(0xFFFFFFFF)
_S32 = _U(32)


@_numba.njit(inline="always")
def _mul128(a, b):
    """(hi, lo) of the 128-bit product of two uint64."""
    a0, a1 = a & _M32, a >> _S32
    b0, b1 = b & _M32, b >> _S32
    ll, hl, lh, hh = a0 * b0, a1 * b0, a0 * b1, a1 * b1
    cross = (ll >> _S32) + (hl & _M32) + lh
    hi = hh + (hl >> _S32) + (cross >> _S32)
    lo = (cross << _S32) | (ll & _M32)
    return hi, lo


@_numba.njit(inline="always")
def gl_add(a: int | np.uint64, b: int | np.uint64) -> np.uint64:
    """a + b mod Goldilocks."""
    a, b = _U(a), _U(b)
    s = a + b
    if s < a or s >= _P:          # wrapped past 2^64 (adds 2^32 - 1) or past p
        s = s - _P
    return s


@_numba.njit(inline="always")
def gl_sub(a: int | np.uint64, b: int | np.uint64) -> np.uint64:
    """a - b mod Goldilocks."""
    a, b = _U(a), _U(b)
    d = a - b
    if a < b:
        d = d + _P
    return d


@_numba.njit(inline="always")
def gl_mul(a: int | np.uint64, b: int | np.uint64) -> np.uint64:
    """a * b mod Goldilocks."""
    hi, lo = _mul128(_U(a), _U(b))
    hh, hl = hi >> _S32, hi & _M32
    t0 = lo - hh                   # - hh * 2^96 = + hh
    if lo < hh:
        t0 = t0 - _EPS             # borrowed 2^64 = 2^32 - 1
    t1 = hl * _EPS                 # hl * 2^64
    t2 = t0 + t1
    if t2 < t1:
        t2 = t2 + _EPS             # carried 2^64
    if t2 >= _P:
        t2 = t2 - _P
    return t2


@_numba.njit(inline="always")
def addmod(a: int | np.uint64, b: int | np.uint64, p: int | np.uint64) -> np.uint64:
    """a + b mod p for any p < 2^64."""
    a, b, p = _U(a), _U(b), _U(p)
    s = a + b
    if s < a or s >= p:
        s = s - p
    return s


@_numba.njit(inline="always")
def submod(a: int | np.uint64, b: int | np.uint64, p: int | np.uint64) -> np.uint64:
    """a - b mod p for any p < 2^64."""
    a, b, p = _U(a), _U(b), _U(p)
    d = a - b
    if a < b:
        d = d + p
    return d


@_numba.njit(inline="always")
def mulmod(a: int | np.uint64, b: int | np.uint64, p: int | np.uint64) -> np.uint64:
    """a * b mod p for a prime p < 2^50 (``MULMOD_MAX_P``): the quotient from
    float64 is within 2 of the true one, and the remainder is exact in
    wrapping 64-bit arithmetic."""
    a, b, p = _U(a), _U(b), _U(p)
    q = _U(np.float64(a) * np.float64(b) / np.float64(p))
    r = np.int64(a * b - q * p)    # exact modulo 2^64, and |r| < 3p here
    while r < 0:
        r += np.int64(p)
    while r >= np.int64(p):
        r -= np.int64(p)
    return _U(r)


_REGISTERED: list[bool] = []


def c_kernels() -> tuple[Any, Any]:
    """``(ffi, lib)`` of the package's C extension, registered with Numba so
    that njit code calls ``lib.secea_*`` functions (the declarations in
    ``csrc/include/secea.h``) with ``ffi.from_buffer(array)`` pointers.  The
    kernels expect the inputs the Python API checks (reduced values, C-
    contiguous uint64 arrays): njit code calling them is responsible for that."""
    if not _REGISTERED:
        from numba.core.typing import cffi_utils
        cffi_utils.register_module(_native.cffi_module())
        _REGISTERED.append(True)
    return _native.ffi, _native.lib
