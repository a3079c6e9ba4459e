"""Input validation shared by the managed (public) kernel functions.

Validation happens once, at the API boundary; the raw bindings in
``secea_fast._native`` trust their inputs.
"""
from __future__ import annotations

import numbers
from functools import lru_cache

import gmpy2
import numpy as np

from ._native import ffi, lib

U64_LIMIT = 1 << 64
U64_DTYPE = np.dtype(np.uint64)
# Every modulus check_prime accepted: a managed call on a known prime costs
# one set lookup instead of the int, range and primality checks (bounded so
# a caller cycling through primes cannot grow it without limit).
_KNOWN_PRIMES: set = set()
_KNOWN_PRIMES_MAX = 4096


@lru_cache(maxsize=256)
def prime_test(p: int) -> bool:
    """Primality of an int (unchecked; ``secea_fast.nt.is_prime`` checks its
    argument).  Strong BPSW: no pseudoprime is known, and none exists below
    2^64."""
    return bool(gmpy2.is_strong_bpsw_prp(p)) if p > 3 else p in (2, 3)


def check_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


def check_prime(p, name: str = "p") -> int:
    """The modulus: a prime with 2 <= p < 2^64."""
    if type(p) is int and p in _KNOWN_PRIMES:
        return p
    p = check_int(p, name)
    if not 2 <= p < U64_LIMIT:
        raise ValueError(f"{name} must satisfy 2 <= {name} < 2^64, got {p}")
    if not prime_test(p):
        raise ValueError(f"{name} = {p} is not prime")
    if len(_KNOWN_PRIMES) < _KNOWN_PRIMES_MAX:
        _KNOWN_PRIMES.add(p)
    return p


def known_prime(p) -> bool:
    """``p`` is a plain int that ``check_prime`` has accepted before (the
    managed functions' fast path; anything else takes the full check)."""
    return type(p) is int and p in _KNOWN_PRIMES


def check_array(a, name: str, *, ndim=None) -> np.ndarray:
    """A NumPy uint64 array, returned C-contiguous (copied only if needed),
    with its shape unchanged: a 0-d array stays 0-d (``np.ascontiguousarray``
    would return it with shape (1,), so a 0-d operand passed any 1-D check
    downstream).  ``ndim``: the allowed number(s) of dimensions."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of dtype uint64, got {type(a).__name__}")
    if a.dtype != np.uint64:
        raise TypeError(f"{name} must have dtype uint64, got {a.dtype}")
    if ndim is not None and a.ndim not in (ndim if isinstance(ndim, tuple) else (ndim,)):
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def check_elements(a, p: int, name: str, *, ndim=None) -> np.ndarray:
    """A uint64 array whose entries are reduced field elements (< p)."""
    a = check_array(a, name, ndim=ndim)
    if not a.size:
        return a
    if type(p) is int and 0 < p < U64_LIMIT:
        # one vectorised C pass (a NumPy max costs about 1 us whatever the
        # size, and twice the C scan's time on large arrays)
        bad = lib.secea_fp_first_ge(ffi.from_buffer("uint64_t[]", a), a.size, p) - 1
    else:
        bad = int(np.argmax(a >= np.uint64(p))) if int(a.max()) >= p else -1
    if bad >= 0:
        raise ValueError(
            f"{name} has an entry >= p at flat index {bad} (value {int(a.flat[bad])}, p = {p})")
    return a


def check_same_shape(a: np.ndarray, b: np.ndarray, names=("a", "b")) -> None:
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {names[0]} has shape {a.shape}, {names[1]} has shape {b.shape}")


def check_scalar_element(c, p: int, name: str) -> int:
    c = check_int(c, name)
    if not 0 <= c < p:
        raise ValueError(f"{name} must satisfy 0 <= {name} < p = {p}, got {c}")
    return c
