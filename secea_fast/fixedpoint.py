"""Fixed-point codec between real numbers and F_p (SecEA(p) of SecEA (Tang, Zhu,
Li, Zhang, Sun, 2022), Sec. 6).

A real x is quantized to the integer q(x) = rint(x * scale), scale = 10^digits
(the paper's precision in decimal digits) or 2^bits, and embedded in F_p as
q mod p.  Decoding is centered: residues above (p-1)/2 are negative.

Sums are exact as long as they do not wrap: with N summands bounded by B in
absolute value, the decoded sum is the exact sum of the quantized values iff
p > 2 N B scale (the capacity condition).  ``FixedPoint(..., bound=B,
n_summands=N)`` checks it at construction and then refuses, at ``encode``,
any input above ``bound``, so overflow raises instead of wrapping silently.

>>> from secea_fast import EMBEDDING_PRIME
>>> fx = FixedPoint(EMBEDDING_PRIME, digits=4, bound=10.0, n_summands=3)
>>> from secea_fast import field
>>> s = field.add(fx.encode([1.5, -2.25]), fx.encode([0.25, 0.5]), EMBEDDING_PRIME)
>>> fx.decode(s).tolist()
[1.75, -1.75]
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import check_array, check_elements, check_int, check_prime
from ._native import ffi, lib
from .field import EMBEDDING_PRIME

__all__ = ["FixedPoint", "encode_rows"]


def encode_rows(x: NDArray[np.float64], rows: NDArray[np.int64] | None, frac_bits: int, lim: float,
                bits: int = 64, *, impl: str = "c") -> NDArray[np.uint64]:
    """Fixed point in Z_2^bits of selected rows: ``out[i] = rint(x[rows[i]]
    * 2^frac_bits) mod 2^bits`` (two's complement, uint64 values < 2^bits;
    ties to even as ``numpy.rint``), a zero row where ``rows[i] < 0``, every
    row with the same work (C kernel, csrc/field/fixed_rows.c; ``impl="numpy"``:
    the twin, bit for bit the same).  ``rows=None``: all rows of ``x``.

    ``x``: float64 array of shape (n, d); ``rows``: int64 array, entries
    < n; ``lim``: a real number >= 0 (infinity: what int64 holds).
    ValueError if a rounded value is NaN, infinite or above ``lim``
    in absolute value (fixed-point units).

    >>> encode_rows(np.array([[1.5, -0.25]]), np.array([0, -1]), 2, 100).tolist()
    [[6, 18446744073709551615], [0, 0]]
    """
    frac_bits = check_int(frac_bits, "frac_bits")
    bits = check_int(bits, "bits")
    if bits not in (32, 64) or not 0 <= frac_bits <= 62:
        raise ValueError(f"need bits in (32, 64) and frac_bits in [0, 62], got {bits}, {frac_bits}")
    if not isinstance(x, np.ndarray) or x.dtype != np.float64 or x.ndim != 2:
        raise TypeError("x must be a 2-D float64 NumPy array")
    if rows is not None and (not isinstance(rows, np.ndarray) or rows.dtype != np.int64 or rows.ndim != 1):
        raise TypeError("rows must be a 1-D int64 NumPy array or None")
    n, d = x.shape
    nrows = n if rows is None else rows.size
    scale, mask = float(1 << frac_bits), (1 << bits) - 1
    if isinstance(lim, bool) or not isinstance(lim, (int, float, np.integer, np.floating)):
        raise TypeError(f"lim must be a real number, got {type(lim).__name__}")
    if not float(lim) >= 0:         # NaN too: the kernel's fast pass would skip the range check
        raise ValueError(f"lim must be a number >= 0, got {lim}")
    lim = min(float(lim), _INT64_MAX_FLOAT)         # what int64 holds, as a double
    if impl == "numpy":
        if rows is not None and nrows and int(rows.max()) >= n:
            raise ValueError(f"rows: a row index is >= the {n} rows of x")
        if rows is None:
            sel = x
        else:
            src = x[np.maximum(rows, 0)] if n else np.zeros((nrows, d))
            sel = np.where((rows >= 0)[:, None], src, 0.0)
        q = np.rint(sel * scale)
        if q.size and not (q.min() >= -lim and q.max() <= lim):
            _raise_range(sel, lim, scale)
        return q.astype(np.int64).view(np.uint64) & np.uint64(mask)
    if impl != "c":
        raise ValueError(f"impl must be 'c' or 'numpy', got {impl!r}")
    x = np.ascontiguousarray(x)
    out = np.empty((nrows, d), dtype=np.uint64)
    st = lib.secea_fixed_encode_rows(ffi.from_buffer("uint64_t[]", out, require_writable=True),
                                     ffi.from_buffer("double[]", x), n,
                                     ffi.NULL if rows is None else ffi.from_buffer("int64_t[]", np.ascontiguousarray(rows)),
                                     nrows, d, scale, float(lim), mask)
    if st == 1:
        sel = x if rows is None else x[rows[rows >= 0]]
        _raise_range(sel, lim, scale)
    if st == lib.SECEA_EINVAL:
        raise ValueError(f"rows: a row index is >= the {n} rows of x")
    if st != 0:
        raise MemoryError("encode_rows: out of memory")
    return out


_INT64_MAX_FLOAT = float(2**63 - 1024)        # the largest double below 2^63


def _raise_range(x: np.ndarray, lim: float, scale: float) -> None:
    if not np.isfinite(x).all():
        raise ValueError("values contain NaN or infinity")
    raise ValueError(f"a value exceeds the range {lim / scale:.6g}")


class FixedPoint:
    """Quantization with ``digits`` decimal digits or ``bits`` binary digits.

    ``bound`` (optional): largest |x| accepted by ``encode``; with
    ``n_summands`` the capacity p > 2 * n_summands * bound * scale is checked.
    """

    def __init__(self, p: int = EMBEDDING_PRIME, *, digits: int | None = None, bits: int | None = None,
                 bound: float | None = None,
                 n_summands: int = 1) -> None:
        self.p = check_prime(p)
        if (digits is None) == (bits is None):
            raise ValueError("give exactly one of digits= or bits=")
        if digits is not None:
            digits = check_int(digits, "digits")
            if not 0 <= digits <= 18:
                raise ValueError(f"digits must be in [0, 18], got {digits}")
            self.scale = 10 ** digits
        else:
            bits = check_int(bits, "bits")
            if not 0 <= bits <= 62:
                raise ValueError(f"bits must be in [0, 62], got {bits}")
            self.scale = 1 << bits
        self.digits, self.bits = digits, bits
        self.half = (self.p - 1) // 2
        self.n_summands = check_int(n_summands, "n_summands")
        if self.n_summands < 1:
            raise ValueError(f"n_summands must be >= 1, got {n_summands}")
        self.bound = None
        if bound is not None:
            self.bound = self._check_bound(bound)
            self.check_capacity(self.n_summands, self.bound)

    @staticmethod
    def _check_bound(bound) -> float:
        if isinstance(bound, bool) or not isinstance(bound, (int, float, np.integer, np.floating)):
            raise TypeError(f"bound must be a real number, got {type(bound).__name__}")
        bound = float(bound)
        if not math.isfinite(bound) or bound <= 0:
            raise ValueError(f"bound must be finite and > 0, got {bound}")
        return bound

    def max_quantized(self, bound: float) -> int:
        """Largest |q(x)| for |x| <= bound (exact)."""
        return math.ceil(Fraction(self._check_bound(bound)) * self.scale)

    def check_capacity(self, n_summands: int, bound: float) -> None:
        """Raise ``ValueError`` unless p > 2 * N * B * scale, i.e. unless the sum of
        N quantized values of magnitude <= B decodes without wrapping."""
        n = check_int(n_summands, "n_summands")
        if n < 1:
            raise ValueError(f"n_summands must be >= 1, got {n}")
        need = 2 * n * self.max_quantized(bound)
        if not self.p > need:
            raise ValueError(
                f"capacity exceeded: p = {self.p} must exceed 2 * N * B * scale = {need} "
                f"(N = {n}, B = {bound}, scale = {self.scale}); use a larger prime, a smaller "
                f"precision or a smaller bound")

    def quantize(self, x: ArrayLike) -> NDArray[np.int64]:
        """q(x) = rint(x * scale) as int64 (round half to even), with range checks."""
        x = np.asarray(x)
        if x.dtype.kind not in "fiu" or x.dtype == np.bool_:
            raise TypeError(f"x must be real numbers, got dtype {x.dtype}")
        x = x.astype(np.float64)
        if not np.isfinite(x).all():
            raise ValueError("x contains NaN or infinity")
        if self.bound is not None:
            over = np.abs(x) > self.bound
            if over.any():
                i = int(np.argmax(over))
                raise ValueError(f"|x| exceeds bound {self.bound} at flat index {i} (value {x.flat[i]})")
        q = np.rint(x * self.scale)
        limit = min(self.half, 2**63 - 1024)
        big = np.abs(q) > limit
        if big.any():
            i = int(np.argmax(big))
            raise ValueError(
                f"x = {x.flat[i]} at flat index {i} does not fit: |x * scale| must be <= {limit}")
        return q.astype(np.int64)

    def encode(self, x: ArrayLike) -> NDArray[np.uint64]:
        """Field elements (uint64) of the quantized values of ``x``."""
        q = self.quantize(x)
        out = q.astype(np.uint64)            # two's complement of negatives
        neg = q < 0
        out[neg] = np.uint64(self.p) - (-q[neg]).astype(np.uint64)
        return out

    def decode_int(self, y: NDArray[np.uint64]) -> NDArray[np.int64]:
        """Centered integers (int64) of field elements: y > (p-1)/2 means y - p."""
        y = check_elements(y, self.p, "y")
        neg = y > np.uint64(self.half)
        out = y.astype(np.int64)
        out[neg] = -((np.uint64(self.p) - y[neg]).astype(np.int64))
        return out

    def decode(self, y: NDArray[np.uint64], divisor: ArrayLike = 1) -> NDArray[np.float64]:
        """Real values of field elements (centered), optionally divided by
        ``divisor`` (e.g. the number of clients averaged, SecEA eq. 5)."""
        y = check_array(y, "y")
        return self.decode_int(y) / (self.scale * np.asarray(divisor, dtype=np.float64))
