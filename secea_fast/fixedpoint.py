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
from .field import EMBEDDING_PRIME

__all__ = ["FixedPoint"]


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
