"""galois interop: the package's kernels on ``galois.FieldArray`` and ``galois.Poly``.

galois (Hostetter, https://github.com/mhostetter/galois) stores the elements
of a prime field whose products overflow int64 as Python integers (dtype
object) and computes on them in Python: both primes of this package,
Goldilocks ``2^64 - 2^32 + 1`` and ``EMBEDDING_PRIME``, are such fields, so
``A @ B`` at 256 x 4000 x 65 takes seconds in galois.  The functions here
take galois arrays of ``GF(p)``, run the package's C kernels on uint64 copies
and return galois arrays of the same field::

    import galois, secea_fast.galois as sg
    GF = galois.GF(2**64 - 2**32 + 1)
    C = sg.matmul(A, B)               # == A @ B, as a GF array

For a field whose elements galois keeps in an int64 array (p < 2^31 or so)
the conversion is a zero-copy view; for object arrays (both primes above)
it is one pass over the elements each way, included in every figure of
``docs/PERFORMANCE.md``.  Polynomials are ``galois.Poly`` (coefficients
in galois's descending order; the kernels use ascending order internally).
For both primes of the package the NTT's root of unity is the one
``galois.ntt`` uses, so ``ntt(x) == galois.ntt(x)`` (tested).

Needs the ``galois`` extra (``pip install "secea_fast[galois]"``).
"""
from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import NDArray

from . import linalg, poly
from . import field as _field

try:
    import galois as _galois
except ImportError:  # pragma: no cover - depends on the install
    raise ImportError('secea_fast.galois needs galois: pip install "secea_fast[galois]"') from None

__all__ = ["to_numpy", "from_numpy", "matmul", "dot", "ntt", "intt", "poly_mul", "poly_eval",
           "interpolate", "roots"]


def _field_of(x, name: str):
    if not isinstance(x, _galois.FieldArray):
        raise TypeError(f"{name} must be a galois.FieldArray, got {type(x).__name__}")
    GF = type(x)
    if GF.degree != 1:
        raise ValueError(f"{name} must be over a prime field GF(p), got {GF.name}")
    if GF.characteristic >= 2**64:
        raise ValueError(f"{name}: the kernels work in GF(p) for p < 2^64, got p = {GF.characteristic}")
    return GF


def _same_field(a, b, na: str, nb: str):
    Fa, Fb = _field_of(a, na), _field_of(b, nb)
    if Fa is not Fb:
        raise ValueError(f"{na} and {nb} must be over the same field, got {Fa.name} and {Fb.name}")
    return Fa


def to_numpy(x: _galois.FieldArray) -> NDArray[np.uint64]:
    """The elements of a GF(p) array as a uint64 array (a view when galois
    stores them as int64, else a converted copy)."""
    _field_of(x, "x")
    raw = x.view(np.ndarray)
    if raw.dtype == np.int64:
        return raw.view(np.uint64)
    return raw.astype(np.uint64)          # dtype object: Python ints in [0, p)


def from_numpy(a: np.ndarray, GF: type[_galois.FieldArray]) -> _galois.FieldArray:
    """A ``GF`` array holding the uint64 values ``a`` (already reduced mod p,
    as every kernel returns them), without galois's per-element re-check."""
    return np.asarray(a).astype(GF.dtypes[-1]).view(GF)      # dtype object for both primes


def matmul(A: _galois.FieldArray, B: _galois.FieldArray, *, threads: int | None = None) -> _galois.FieldArray:
    """``A @ B`` for 2-D (or 1-D on either side, as NumPy) GF(p) arrays on
    the matrix-product kernel (``secea_fast.linalg.matmul``)."""
    GF = _same_field(A, B, "A", "B")
    return from_numpy(linalg.matmul(to_numpy(A), to_numpy(B), GF.characteristic, threads=threads), GF)


def dot(a: _galois.FieldArray, b: _galois.FieldArray) -> _galois.FieldArray:
    """Inner products over the last axis (``secea_fast.field.dot``)."""
    GF = _same_field(a, b, "a", "b")
    out = _field.dot(to_numpy(a), to_numpy(b), GF.characteristic)
    return from_numpy(np.asarray(out), GF)


def ntt(x: _galois.FieldArray) -> _galois.FieldArray:
    """The NTT of a GF(p) vector of power-of-two length, equal to ``galois.ntt(x)``."""
    GF = _field_of(x, "x")
    return from_numpy(poly.ntt(to_numpy(x), GF.characteristic), GF)


def intt(X: _galois.FieldArray) -> _galois.FieldArray:
    """The inverse of :func:`ntt` (``galois.intt``)."""
    GF = _field_of(X, "X")
    return from_numpy(poly.ntt(to_numpy(X), GF.characteristic, inverse=True), GF)


def _poly_coeffs(f, name: str):
    if not isinstance(f, _galois.Poly):
        raise TypeError(f"{name} must be a galois.Poly, got {type(f).__name__}")
    coeffs = cast(_galois.FieldArray, f.coeffs)      # a Poly's coefficients are a FieldArray
    GF = _field_of(coeffs, name)
    return GF, np.ascontiguousarray(to_numpy(coeffs)[::-1])     # ascending


def _poly(c: np.ndarray, GF: type[_galois.FieldArray]) -> _galois.Poly:
    """The ``galois.Poly`` of ascending coefficients ``c`` (galois drops leading zeros)."""
    return _galois.Poly(from_numpy(np.ascontiguousarray(np.asarray(c)[::-1]), GF))


def poly_mul(f: _galois.Poly, g: _galois.Poly) -> _galois.Poly:
    """``f * g`` for ``galois.Poly`` over the same GF(p) (``secea_fast.poly.mul``)."""
    Ff, a = _poly_coeffs(f, "f")
    Fg, b = _poly_coeffs(g, "g")
    if Ff is not Fg:
        raise ValueError(f"f and g must be over the same field, got {Ff.name} and {Fg.name}")
    return _poly(poly.mul(a, b, Ff.characteristic), Ff)


def poly_eval(f: _galois.Poly, x: _galois.FieldArray, *, threads: int | None = None) -> _galois.FieldArray:
    """``f(x)`` at every element of the GF(p) vector ``x`` (``secea_fast.poly.eval``)."""
    GF, c = _poly_coeffs(f, "f")
    if _field_of(x, "x") is not GF:
        raise ValueError(f"f and x must be over the same field, got {GF.name} and {type(x).name}")
    xs = np.atleast_1d(to_numpy(x))
    return from_numpy(poly.eval(c, xs, GF.characteristic, threads=threads).reshape(np.shape(x)), GF)


def interpolate(x: _galois.FieldArray, y: _galois.FieldArray, *, threads: int | None = None) -> _galois.Poly:
    """The polynomial of degree < n through the n points (x_i, y_i), distinct
    x_i (``secea_fast.poly.interpolate``; galois's ``lagrange_poly``)."""
    GF = _same_field(x, y, "x", "y")
    c = poly.interpolate(to_numpy(x).ravel(), to_numpy(y).ravel(), GF.characteristic, threads=threads)
    return _poly(c, GF)


def roots(f: _galois.Poly) -> _galois.FieldArray:
    """The distinct roots of ``f`` in GF(p), sorted (``galois.Poly.roots()``)."""
    GF, c = _poly_coeffs(f, "f")
    return from_numpy(poly.roots(c, GF.characteristic), GF)
