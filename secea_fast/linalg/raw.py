"""The raw layer of ``secea_fast.linalg``: the matrix products, no validation.

The convention of ``secea_fast.field.raw`` (FLINT's raw versus managed
functions): ``linalg.matmul`` and ``PackedRight.mul`` check their operands
and call these; protocol code whose operands come out of kernels or were
validated when they arrived calls them directly, skipping the O(mk + kn)
range scans.  Preconditions, none checked: ``p`` a prime < 2^64; ``A``
(m x k) and ``B`` (k x n) 2-D ``uint64`` arrays with entries < p (a
non-contiguous one is copied); ``out``, when given, a C-contiguous writable
``uint64`` array of shape (m, n) not overlapping ``A`` or ``B``.

>>> import numpy as np
>>> from secea_fast.linalg import raw
>>> A = np.array([[1, 2], [3, 4]], dtype=np.uint64)
>>> raw.matmul(A, A, 5).tolist()
[[2, 0], [0, 2]]
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .._native import check_status, ffi, lib, resolve_threads, u64in, u64out
from . import PackedRight               # defined before the package imports this module

__all__ = ["matmul", "mul_packed"]

def matmul(A: NDArray[np.uint64], B: NDArray[np.uint64], p: int, threads: int | None = None,
           out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``A @ B mod p`` (unchecked; see the module docstring).  ``MemoryError``
    if the kernel cannot allocate its work space."""
    m, k = A.shape
    n = B.shape[1]
    C = np.empty((m, n), dtype=np.uint64) if out is None else out
    if C.size == 0:
        return C
    check_status(lib.secea_fp_mat_mul(u64out(C), u64in(A) if A.size else ffi.NULL,
                                      u64in(B) if B.size else ffi.NULL, m, k, n, p, resolve_threads(threads)),
                 f"matmul of a {m}x{k} by a {k}x{n} matrix")
    return C


def mul_packed(A: NDArray[np.uint64], B: PackedRight, threads: int | None = None,
               out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``A @ B mod p`` for a packed right operand (unchecked: ``A`` of shape
    (m, k) with entries < ``B.p``)."""
    m = A.shape[0]
    k, n = B.shape
    C = np.empty((m, n), dtype=np.uint64) if out is None else out
    if C.size == 0:
        return C
    if B.handle is None:                 # k == 0
        C[:] = 0
        return C
    check_status(lib.secea_fp_mat_mul_packed(u64out(C), u64in(A), B.handle, m, resolve_threads(threads)),
                 f"matmul of a {m}x{k} by a packed {k}x{n} matrix")
    return C
