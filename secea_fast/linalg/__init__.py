"""Exact matrix products over F_p (any prime p < 2^64).

``matmul(A, B, p)`` is the coded-query response of SecEA (Tang, Zhu, Li,
Zhang, Sun, 2022), eq. 20 and Table 1: each client multiplies its block of
query vectors by its stored shares.  Products are accumulated exactly and reduced once per output entry,
so the result is bit-for-bit the schoolbook product mod p whatever the route.

Routes (chosen in C at run time, see ``backend_info()["kernels"]["matmul"]``
and docs/PERFORMANCE.md, "Matrix product"):

* ``ifma``: AVX-512 IFMA, one 52-bit limb for p <= 2^52 (the default
  embedding prime), two limbs (52 + 12 bits) for larger p (Goldilocks);
  products with fewer than 8 rows (or k < 16 above 2^52) take the scalar route;
* ``portable`` (also on the AVX2 backend): scalar 64x64->128-bit products
  with 192-bit sums (chunked 128-bit sums for p < 2^59).

``secea_fast.linalg.raw`` holds the unchecked products (the convention of
``secea_fast.field.raw``) for code whose operands are known reduced.

The RNS-over-float64-BLAS route (FFLAS-FFPACK style) was measured and left
out: see docs/PERFORMANCE.md, "Matrix product".
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .._checks import check_elements, check_prime
from .._native import check_status, ffi, lib, resolve_threads, u64ptr
from ..prg import Prg

__all__ = ["matmul", "matvec", "PackedRight", "DecryptedRangeError"]


class DecryptedRangeError(ValueError):
    """``PackedRight.mul_decrypt``: a decrypted entry is >= p (the message was
    not a vector of field elements under this pad)."""


def _check_out(out, shape, *inputs):
    """``out`` for a product of the given shape: a writable C-contiguous uint64
    array not overlapping any input (the scalar kernels read A while writing C)."""
    if not isinstance(out, np.ndarray) or out.dtype != np.uint64:
        raise TypeError("out must be a numpy.ndarray of dtype uint64")
    if out.shape != shape or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out must be a writable C-contiguous array of shape {shape}, got {out.shape}")
    if any(np.shares_memory(out, x) for x in inputs):
        raise ValueError("out must not overlap A or B")
    return out


def matmul(A: NDArray[np.uint64], B: NDArray[np.uint64], p: int, threads: int | None = None,
           out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``A @ B mod p`` for ``uint64`` matrices ``A`` (m x k) and ``B`` (k x n).

    ``threads``: number of threads (default ``SECEA_FAST_NUM_THREADS`` or all
    cores); the GIL is released while the kernel runs.  ``out``: an optional
    C-contiguous writable ``uint64`` array of shape (m, n) to write into
    (reusing it avoids the page faults of a fresh large array, which cost
    about a quarter of the time of tall products with small k and n).

    >>> import numpy as np
    >>> A = np.array([[1, 2], [3, 4]], dtype=np.uint64)
    >>> matmul(A, A, 5).tolist()
    [[2, 0], [0, 2]]
    """
    p = check_prime(p)
    A = check_elements(A, p, "A", ndim=2)
    B = check_elements(B, p, "B", ndim=2)
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"shape mismatch: A is {A.shape}, B is {B.shape} (need A.shape[1] == B.shape[0])")
    threads = resolve_threads(threads)
    if out is not None:
        out = _check_out(out, (A.shape[0], B.shape[1]), A, B)
    return raw.matmul(A, B, p, threads, out)


class PackedRight:
    """A right operand ``B`` (k x n) packed once for many products ``A @ B mod
    p`` (``mul``): SecEA's responder multiplies every query block of a round
    by the same shares, so packing them per block (5 MB at the MovieLens-1M
    shape) would cost about a tenth of each product and force large blocks.

    >>> import numpy as np
    >>> B = PackedRight(np.array([[1, 2], [3, 4]], dtype=np.uint64), 5)
    >>> B.mul(np.array([[1, 1]], dtype=np.uint64)).tolist()
    [[4, 1]]
    """

    def __init__(self, B: NDArray[np.uint64], p: int) -> None:
        p = check_prime(p)
        B = check_elements(B, p, "B", ndim=2)
        self.p = p
        self.shape = B.shape
        self.handle = None
        """The packed matrix (cdata, freed with this object; None if B is empty)."""
        if B.size:
            h = lib.secea_fp_mat_pack(u64ptr(B), B.shape[0], B.shape[1], p)
            if h == ffi.NULL:
                raise MemoryError(f"could not pack a {B.shape[0]}x{B.shape[1]} matrix")
            self.handle = ffi.gc(h, lib.secea_fp_mat_pack_free)

    def _left(self, A, check):
        """A (m x k) validated: range-scanned when ``check``, else only its
        layout (``mul_decrypt``: A is a ciphertext, any uint64 entry)."""
        if check:
            A = check_elements(A, self.p, "A", ndim=2)
        elif not (isinstance(A, np.ndarray) and A.dtype == np.uint64 and A.ndim == 2 and A.flags.c_contiguous):
            raise TypeError("A must be a C-contiguous 2-D uint64 array")
        if A.shape[1] != self.shape[0]:
            raise ValueError(f"shape mismatch: A is {A.shape}, B is {self.shape}")
        return A

    def _status(self, rc, m):
        k, n = self.shape
        check_status(rc, f"matmul of a {m}x{k} by a packed {k}x{n} matrix", "the stream skip must be 0 or 8")

    def mul(self, A: NDArray[np.uint64], threads: int | None = None,
            out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
        """``A @ B mod p`` for A (m x k) (``secea_fast.linalg.raw.mul_packed``
        is the unchecked twin)."""
        A = self._left(A, True)
        threads = resolve_threads(threads)
        if out is not None:
            out = _check_out(out, (A.shape[0], self.shape[1]), A)
        return raw.mul_packed(A, self, threads, out)

    def mul_decrypt(self, A: NDArray[np.uint64], prg: Prg, threads: int | None = None) -> NDArray[np.uint64]:
        """``(A XOR pad) @ B mod p`` where the pad is the next ``8 * A.size``
        bytes of ``prg`` (what ``prg.xor_into(out, A, p, check=True)`` would
        decrypt), without materialising the plaintext: 16 rows at a time are
        decrypted into cache and multiplied from there.  ``DecryptedRangeError``
        (a ValueError) if a decrypted entry is >= p."""
        A = self._left(A, check=False)
        m, n = A.shape[0], self.shape[1]
        threads = resolve_threads(threads)       # before the stream moves
        C = np.empty((m, n), dtype=np.uint64)
        if A.size == 0:                          # as xor_into: nothing consumed
            return C
        if self.handle is None:                  # n == 0: decrypt only to check the entries
            try:
                prg.xor_into(np.empty_like(A), A, self.p, check=True)
            except ValueError:
                raise DecryptedRangeError("decrypted entries must be < p") from None
            return C
        key, block, skip = prg.claim_stream(A.size)
        rc = lib.secea_fp_mat_mul_packed_xor(u64ptr(C), u64ptr(A), self.handle, m, threads, key, block, skip)
        if rc == 1:
            raise DecryptedRangeError("decrypted entries must be < p")
        self._status(rc, m)
        return C


def matvec(A: NDArray[np.uint64], x: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """``A @ x mod p`` for a ``uint64`` matrix ``A`` (m x k) and vector ``x`` (k,)."""
    p = check_prime(p)
    A = check_elements(A, p, "A", ndim=2)
    x = check_elements(x, p, "x", ndim=1)
    if A.shape[1] != x.shape[0]:
        raise ValueError(f"shape mismatch: A is {A.shape}, x is {x.shape} (need A.shape[1] == x.shape[0])")
    out = np.empty(A.shape[0], dtype=np.uint64)
    if out.size == 0:
        return out
    if A.shape[1] == 0:
        out[:] = 0
        return out
    lib.secea_fp_dot_rows(u64ptr(out), u64ptr(A), u64ptr(x), A.shape[0], A.shape[1], 0, p)
    return out


# last: the raw layer's annotations name PackedRight
from . import raw  # noqa: E402
