"""The raw layer of ``secea_fast.field``: the same kernels, no validation.

FLINT's convention ("Underscores in function names": ``_fn`` assumes valid
input, ``fn`` validates and calls it).  Here the managed functions are
``secea_fast.field.add`` etc.; these are their raw twins, for code that
guarantees the preconditions itself because it produced the operands with a
kernel or validated them when they arrived (polynomial algorithms, a
protocol's own accumulators).  Data from another party is validated at the
session boundary first, never passed here unchecked.

Preconditions, none of them checked: ``p`` a prime < 2^64; every operand a
``uint64`` ndarray with entries < p; the operands of a binary function of one
shape; ``out``, when given, a C-contiguous writable ``uint64`` array of that
shape (it may be one of the operands: the kernels read each entry before
writing it).  Operands of any layout are accepted (a non-contiguous one is
copied).  Breaking a precondition gives a wrong answer or, for shapes, reads
out of bounds: that is the price of skipping the checks, and why only
internal code calls this module.

>>> import numpy as np
>>> from secea_fast.field import raw
>>> a = np.array([3, 4], dtype=np.uint64)
>>> raw.add(a, a, 7).tolist(), raw.scale(a, 2, 7).tolist()
([6, 1], [6, 1])
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .._native import lib, u64in, u64out

__all__ = ["add", "sub", "neg", "mul", "scale", "batch_inv", "reduce"]

_U64 = np.dtype(np.uint64)
def _out(out, a):
    return np.empty(a.shape, dtype=_U64) if out is None else out


def add(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int,
        out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``(a + b) mod p`` elementwise (unchecked; see the module docstring)."""
    out = _out(out, a)
    lib.secea_fp_add(u64out(out), u64in(a), u64in(b), out.size, p)
    return out


def sub(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int,
        out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``(a - b) mod p`` elementwise (unchecked)."""
    out = _out(out, a)
    lib.secea_fp_sub(u64out(out), u64in(a), u64in(b), out.size, p)
    return out


def neg(a: NDArray[np.uint64], p: int, out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``-a mod p`` elementwise (unchecked)."""
    out = _out(out, a)
    lib.secea_fp_neg(u64out(out), u64in(a), out.size, p)
    return out


def mul(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int,
        out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``a * b mod p`` elementwise for two arrays (unchecked)."""
    out = _out(out, a)
    lib.secea_fp_mul(u64out(out), u64in(a), u64in(b), out.size, p)
    return out


def scale(a: NDArray[np.uint64], c: int, p: int, out: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """``c * a mod p`` for an int ``c`` (any size and sign: reduced here)."""
    out = _out(out, a)
    lib.secea_fp_mul_scalar(u64out(out), u64in(a), c % p, out.size, p)
    return out


def batch_inv(a: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """Elementwise inverse (Montgomery's trick); ``ZeroDivisionError`` if an
    entry is zero (a property of the data, so checked even here)."""
    out = np.empty(a.shape, dtype=_U64)
    if out.size and lib.secea_fp_batch_inv(u64out(out), u64in(a), out.size, p):
        raise ZeroDivisionError("inverse of zero")
    return out


def reduce(a: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """``a mod p`` for any ``uint64`` entries (no precondition on the range)."""
    out = np.empty(a.shape, dtype=_U64)
    lib.secea_fp_reduce(u64out(out), u64in(a), out.size, p)
    return out
