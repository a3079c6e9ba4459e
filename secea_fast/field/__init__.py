"""Vectorised arithmetic in the prime field F_p, p < 2^64, on ``uint64`` arrays.

Every function takes reduced operands (entries < p) as NumPy ``uint64``
arrays and an explicit prime ``p``; results are new ``uint64`` arrays of
canonical residues.  Bad input raises ``TypeError`` (not an ndarray, wrong
dtype) or ``ValueError`` (modulus not a prime in [2, 2^64), an entry >= p,
shape mismatch, inverse of zero).

Two moduli have fast paths:

* ``GOLDILOCKS = 2^64 - 2^32 + 1``: default for polynomial work.  Reduction
  uses 2^64 = 2^32 - 1 and 2^96 = -1 (mod p), and p - 1 = 2^32 * (2^32 - 1)
  gives NTTs of length up to 2^32.
* ``EMBEDDING_PRIME = 63 * 2^44 + 1`` (just below 2^50): default field for
  fixed-point embeddings.  Chosen for the matrix product: entries fit one
  52-bit AVX-512 IFMA limb, so a multiply-add costs two IFMA instructions
  instead of seven for a 64-bit prime (``secea_fast.linalg``).  It leaves
  room for fixed-point sums: with 8 decimal digits (scale 10^8) it holds
  sums of N values bounded by B whenever 2 N B < 5.5e6 (e.g. N = 100 clients,
  |x| <= 27,000).  Its 2-adicity (2^44 | p - 1) also allows NTTs.

Other primes use division by an invariant integer with a precomputed
reciprocal (Moller-Granlund), about as fast.

The slow twin of every function is in ``secea_fast.field.reference``.

Validation happens once, at the boundary (FLINT's managed versus raw
functions): these functions check the modulus (a set lookup once a prime has
been accepted) and every operand; add, sub, neg and mul check the range in
the C loop that computes (one pass through memory), so a call costs about
what the raw C call does, 16 entries or 2^20 (bench/test_field.py).  Code
that guarantees its operands itself, because it produced them with a kernel
or validated them on arrival, calls the raw layer ``secea_fast.field.raw``.

>>> import numpy as np
>>> from secea_fast import field, GOLDILOCKS
>>> a = np.array([1, 2, GOLDILOCKS - 1], dtype=np.uint64)
>>> field.mul(a, a, GOLDILOCKS).tolist()
[1, 4, 1]
"""
from __future__ import annotations

import builtins
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import (U64_DTYPE, check_array, check_elements, check_int, check_prime, check_same_shape,
                       check_scalar_element, known_prime)
from .._native import ffi, lib, u64ptr
from . import raw  # noqa: F401 - secea_fast.field.raw, the unchecked twins

GOLDILOCKS = 2**64 - 2**32 + 1
EMBEDDING_PRIME = 63 * 2**44 + 1

__all__ = ["GOLDILOCKS", "EMBEDDING_PRIME", "add", "sub", "neg", "mul", "pow", "inv",
           "batch_inv", "dot", "reduce", "asarray"]


_ND = np.ndarray
_U64 = U64_DTYPE
_buf = ffi.from_buffer


def _binary(a, b, p, kernel, scalar_ok):
    """The full validation (any input; raises naming what is wrong), then
    the raw kernel."""
    p = check_prime(p)
    a = check_elements(a, p, "a")
    if not isinstance(b, np.ndarray) and scalar_ok:
        c = check_scalar_element(b, p, "b")
        b = np.full(a.shape, c, dtype=np.uint64)
    b = check_elements(b, p, "b")
    check_same_shape(a, b)
    out = np.empty(a.shape, dtype=np.uint64)
    kernel(u64ptr(out), u64ptr(a), u64ptr(b), a.size, p)
    return out


def _checked2(checked, kernel, a, b, p, scalar_ok):
    """Fast path of the binary operations: two C-contiguous ``uint64`` arrays
    of one shape and a prime already accepted go to the checked C kernel, which
    range-checks each chunk of the operands just before it reads them.  Any
    other input, or an entry >= p, takes ``_binary``: the same result, and the
    same error as before the fast path existed."""
    if (type(a) is _ND and type(b) is _ND and a.dtype is _U64 and b.dtype is _U64
            and a.shape == b.shape and known_prime(p)):
        out = np.empty(a.shape, dtype=_U64)
        try:
            rc = checked(_buf("uint64_t[]", out), _buf("uint64_t[]", a), _buf("uint64_t[]", b), a.size, p)
        except ValueError:              # not C-contiguous: _binary copies it
            rc = -1
        if not rc:
            return out
    return _binary(a, b, p, kernel, scalar_ok)


def add(a: NDArray[np.uint64], b: NDArray[np.uint64] | int, p: int) -> NDArray[np.uint64]:
    """``(a + b) mod p`` elementwise; ``b`` may be an int in [0, p)."""
    return _checked2(lib.secea_fp_add_checked, lib.secea_fp_add, a, b, p, True)


def sub(a: NDArray[np.uint64], b: NDArray[np.uint64] | int, p: int) -> NDArray[np.uint64]:
    """``(a - b) mod p`` elementwise; ``b`` may be an int in [0, p)."""
    return _checked2(lib.secea_fp_sub_checked, lib.secea_fp_sub, a, b, p, True)


def neg(a: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """``-a mod p`` elementwise."""
    if type(a) is _ND and a.dtype is _U64 and known_prime(p):
        out = np.empty(a.shape, dtype=_U64)
        try:
            if not lib.secea_fp_neg_checked(_buf("uint64_t[]", out), _buf("uint64_t[]", a), a.size, p):
                return out
        except ValueError:              # not C-contiguous: copied below
            pass
    p = check_prime(p)
    a = check_elements(a, p, "a")
    out = np.empty(a.shape, dtype=np.uint64)
    lib.secea_fp_neg(u64ptr(out), u64ptr(a), a.size, p)
    return out


def mul(a: NDArray[np.uint64], b: NDArray[np.uint64] | int, p: int) -> NDArray[np.uint64]:
    """``a * b mod p`` elementwise; ``b`` may be an int in [0, p) (scalar product)."""
    if isinstance(b, np.ndarray):
        return _checked2(lib.secea_fp_mul_checked, lib.secea_fp_mul, a, b, p, False)
    if known_prime(p) and type(a) is _ND and a.dtype is _U64 and type(b) is int and 0 <= b < p:
        out = np.empty(a.shape, dtype=_U64)
        try:
            if not lib.secea_fp_mul_scalar_checked(_buf("uint64_t[]", out), _buf("uint64_t[]", a), b, a.size, p):
                return out
        except ValueError:              # not C-contiguous: copied below
            pass
    p = check_prime(p)
    a = check_elements(a, p, "a")
    c = check_scalar_element(b, p, "b")
    out = np.empty(a.shape, dtype=np.uint64)
    lib.secea_fp_mul_scalar(u64ptr(out), u64ptr(a), c, a.size, p)
    return out


def pow(a: NDArray[np.uint64], e: int | NDArray[np.uint64], p: int) -> NDArray[np.uint64]:  # noqa: A001 - the field operation's natural name
    """``a ** e mod p`` elementwise.

    ``e`` is a Python int (any size, negative allowed: then every entry of
    ``a`` must be nonzero) or a ``uint64`` array of ``a``'s shape.  ``0 ** 0``
    is 1.  For an int exponent, a^e = a^(e mod (p-1)) is used (Fermat), keeping
    0^e = 0 for e > 0.
    """
    p = check_prime(p)
    a = check_elements(a, p, "a")
    out = np.empty(a.shape, dtype=np.uint64)
    if isinstance(e, np.ndarray):
        e = check_array(e, "e")
        check_same_shape(a, e, ("a", "e"))
        lib.secea_fp_pow(u64ptr(out), u64ptr(a), u64ptr(e), a.size, p)
        return out
    e = check_int(e, "e")
    if e < 0:
        a = batch_inv(a, p)
        e = -e
    if e >= p - 1:
        e = e % (p - 1) or (p - 1)   # a^(p-1) = 1 for a != 0 and 0 for a = 0
    lib.secea_fp_pow_scalar(u64ptr(out), u64ptr(a), e, a.size, p)
    return out


def batch_inv(a: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """Elementwise inverse by Montgomery's trick: 3(n-1) multiplications and one
    exponentiation.  Raises ``ValueError`` naming the first zero entry."""
    p = check_prime(p)
    a = check_elements(a, p, "a")
    out = np.empty(a.shape, dtype=np.uint64)
    bad = lib.secea_fp_batch_inv(u64ptr(out), u64ptr(a), a.size, p)
    if bad:
        raise ValueError(f"a has no inverse mod p: entry at flat index {bad - 1} is zero")
    return out


@overload
def inv(a: int, p: int) -> int: ...
@overload
def inv(a: NDArray[np.uint64], p: int) -> NDArray[np.uint64]: ...


def inv(a: int | NDArray[np.uint64], p: int) -> int | NDArray[np.uint64]:
    """Inverse mod p of an int (returns an int) or of every entry of an array."""
    if isinstance(a, np.ndarray):
        return batch_inv(a, p)
    p = check_prime(p)
    a = check_scalar_element(a, p, "a")
    if a == 0:
        raise ValueError("zero has no inverse mod p")
    return builtins.pow(a, p - 2, p)


def dot(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int) -> int | NDArray[np.uint64]:
    """Inner product(s) ``sum_i a[..., i] * b[..., i] mod p``.

    1-D operands give an int; n-D operands of equal shape give the row-wise
    products over the last axis as a ``uint64`` array of shape ``a.shape[:-1]``.
    Products are accumulated exactly in 192 bits and reduced once.
    """
    p = check_prime(p)
    a = check_elements(a, p, "a")
    b = check_elements(b, p, "b")
    for name, x in (("a", a), ("b", b)):
        if x.ndim == 0:
            raise ValueError(f"dot: {name} must have at least 1 dimension (a vector), got a 0-d array")
    check_same_shape(a, b)
    length = a.shape[-1]
    out = np.empty(a.shape[:-1], dtype=np.uint64)
    rows = out.size
    lib.secea_fp_dot_rows(u64ptr(out), u64ptr(a), u64ptr(b), rows, length, length, p)
    return int(out[()]) if a.ndim == 1 else out


def reduce(x: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """``x mod p`` for an arbitrary ``uint64`` array (entries may exceed p)."""
    p = check_prime(p)
    x = check_array(x, "x")
    out = np.empty(x.shape, dtype=np.uint64)
    lib.secea_fp_reduce(u64ptr(out), u64ptr(x), x.size, p)
    return out


def asarray(values: ArrayLike, p: int) -> NDArray[np.uint64]:
    """Canonical residues of integers (Python ints of any size and sign, or an
    integer array) as a ``uint64`` array.  Floats are refused: quantize them
    with ``secea_fast.fixedpoint`` first."""
    p = check_prime(p)
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if isinstance(arr, np.ndarray) and arr.dtype.kind in "fc":
        raise TypeError("asarray takes integers; quantize floats with secea_fast.fixedpoint")
    obj = np.asarray(arr, dtype=object)
    for v in obj.flat:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"asarray takes integers, got {type(v).__name__}")
    # np.asarray: a 0-d object array's ``% p`` is a bare Python int, not an array
    return np.asarray(obj % p, dtype=object).astype(np.uint64)
