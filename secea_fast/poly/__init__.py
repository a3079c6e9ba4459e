"""Polynomials over F_p: products, subproduct trees, multipoint evaluation and
interpolation, power-series inversion, half-GCD rational reconstruction, root
finding and Reed-Solomon decoding.

Coefficient arrays are ``uint64``, lowest degree first, entries < p.  Every
routine is exact; algorithm choices (classical C kernels below the crossovers
in ``secea_fast.tuning``, NTT above; the matrix route for few points) never
change a result.

Where SecEA uses them (SecEA (Tang, Zhu, Li, Zhang, Sun, 2022)):

* Sec. 4.1, private entity union: ``from_roots`` builds f_n (eq. 3),
  ``laurent_tail`` takes the 2Nk high-order terms of the reversed Laurent
  series of r_n / f_n, ``rational_reconstruct(..., laurent=True)`` recovers
  u / L from their sum, and ``roots(L)`` is the union.
* Sec. 4.2-4.3 and 5.2, Lagrange coded computing: ``eval`` / ``interpolate``
  at N <= 64 points for many polynomials at once, and ``rs_decode`` for the
  robust decoding of N responses.

NTT products run natively over Goldilocks (2^32 | p - 1) and any prime below
2^63 with enough 2-adicity (the default embedding prime has 2^44 | p - 1);
other primes go through a three-prime NTT and Chinese remaindering.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import tuning
from .._checks import check_elements, check_int, check_prime
from .._native import resolve_threads
from ..linalg import matmul
from . import _core, _euclid, _roots
from ._roots import DecodingError

__all__ = ["ntt", "mul", "from_roots", "eval", "interpolate", "inv_series", "divrem", "gcd", "laurent_tail",
           "rational_reconstruct", "roots", "rs_decode", "DecodingError", "lagrange_matrix",
           "vandermonde"]


def _poly(a, p, name):
    return check_elements(a, p, name, ndim=1)


def _nonzero(f, name):
    t = _core.trim(f)
    if len(t) == 0:
        raise ValueError(f"{name} is the zero polynomial")
    return t


def ntt(a: NDArray[np.uint64], p: int, inverse: bool = False) -> NDArray[np.uint64]:
    """Number-theoretic transform of length n = len(a) (a power of two dividing
    p - 1 for a native prime): A[j] = sum_i a[i] w^(ij) with
    w = ``root_of_unity(p, log2 n)``, in natural order; ``inverse=True`` maps A
    back to a.  Goldilocks uses the vectorised kernel (``backend_info()["kernels"]["ntt"]``)."""
    p = check_prime(p)
    a = _poly(a, p, "a")
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"inverse must be a bool, got {type(inverse).__name__}")
    n = len(a)
    if n == 0 or n & (n - 1):
        raise ValueError(f"the length must be a power of two, got {n}")
    logn = n.bit_length() - 1
    if not _core.ntt_native(p, logn):
        raise ValueError(f"no native NTT of length {n} mod {p} (needs {n} | p - 1 and p < 2^63 or Goldilocks)")
    pl = _core.plan(p, logn)
    rev = _core.bitrev(logn)
    if inverse:
        buf = np.ascontiguousarray(a[rev])
        _core.lib.secea_ntt_inverse(pl, _core.u64ptr(buf), 1)
        return buf
    buf = a.copy()
    _core.lib.secea_ntt_forward(pl, _core.u64ptr(buf), 1)
    return buf[rev]


def mul(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """Product of polynomials.  1-D operands give a 1-D result of length
    len(a) + len(b) - 1 (empty if either operand is empty: the zero
    polynomial); a 2-D ``a`` (one polynomial per row) is multiplied row
    by row with a 2-D ``b`` of as many rows or with one 1-D ``b``.

    >>> import numpy as np
    >>> mul(np.array([1, 1], dtype=np.uint64), np.array([1, 1], dtype=np.uint64), 7).tolist()
    [1, 2, 1]
    """
    p = check_prime(p)
    a = check_elements(a, p, "a", ndim=(1, 2))
    b = check_elements(b, p, "b", ndim=(1, 2))
    if a.ndim == 1:
        if b.ndim != 1:
            raise ValueError("a 1-D a needs a 1-D b")
        return _core.mul(a, b, p)
    b2 = b[None, :] if b.ndim == 1 else b
    if b2.shape[0] not in (1, a.shape[0]):
        raise ValueError(f"shape mismatch: a has {a.shape[0]} rows, b has {b2.shape[0]}")
    return np.ascontiguousarray(_core.mul_rows(a, b2, p))


def from_roots(roots: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """The monic polynomial prod (x - r) (SecEA, eq. 3), by a subproduct tree."""
    p = check_prime(p)
    return _core.from_roots(_poly(roots, p, "roots"), p)


def _points(xs, p):
    xs = _poly(xs, p, "xs")
    s = np.sort(xs)                      # 3x faster than np.unique's hashing at 10^5
    if len(s) > 1 and bool((s[1:] == s[:-1]).any()):
        raise ValueError("xs has duplicate points")
    return xs


def vandermonde(xs: NDArray[np.uint64], k: int, p: int) -> NDArray[np.uint64]:
    """V (N x k), V[j, i] = xs[j]^i: evaluation at xs of polynomials of length k."""
    p = check_prime(p)
    xs = _poly(xs, p, "xs")
    k = check_int(k, "k")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return np.ascontiguousarray(_core.vandermonde_t(xs, k, p).T)


def lagrange_matrix(xs: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """W (N x N) with interpolate(xs, ys) = ys @ W: row j holds the coefficients
    of the Lagrange basis polynomial L_j (L_j(x_i) = [i == j])."""
    p = check_prime(p)
    return _core.lagrange_matrix(_points(xs, p), p)


def eval(f: NDArray[np.uint64], xs: NDArray[np.uint64], p: int, threads: int | None = None) -> NDArray[np.uint64]:  # noqa: A001 - the name users ask for
    """f(x) for every x in xs.  ``f`` 1-D, or 2-D with one polynomial per row
    (result (rows, N)).  One polynomial at up to ``tuning.POLY_LCC_MAX_POINTS``
    points, or at most ``tuning.POLY_HORNER_MAX_WORK`` multiply-adds in all:
    Horner's rule in C; otherwise up to ``POLY_LCC_MAX_POINTS`` points a
    product with the transposed Vandermonde matrix on the matmul kernel;
    beyond, Horner again for polynomials of length at most
    ``tuning.POLY_EVAL_HORNER_MAX_LEN``, else a remainder tree per polynomial."""
    p = check_prime(p)
    f = check_elements(f, p, "f", ndim=(1, 2))
    xs = _poly(xs, p, "xs")
    threads = resolve_threads(threads)      # checked here: the Horner route never reaches matmul's check
    F = f[None, :] if f.ndim == 1 else f
    if F.shape[1] == 0 or len(xs) == 0:
        out = np.zeros((F.shape[0], len(xs)), dtype=np.uint64)
    elif F.shape[0] == 1 and len(xs) <= tuning.POLY_LCC_MAX_POINTS or \
            F.size * len(xs) <= tuning.POLY_HORNER_MAX_WORK:
        out = _core.horner_rows(F, xs, p)
    elif len(xs) <= tuning.POLY_LCC_MAX_POINTS:
        out = matmul(F, _core.vandermonde_t(xs, F.shape[1], p), p, threads=threads)
    elif F.shape[1] <= tuning.POLY_EVAL_HORNER_MAX_LEN:
        out = _core.horner_rows(F, xs, p)
    else:
        tree = _core.Tree(xs, p)
        out = np.stack([_core.eval_tree(_core.trim(row), tree) for row in F])
    return out[0] if f.ndim == 1 else out


def interpolate(xs: NDArray[np.uint64], ys: NDArray[np.uint64], p: int, threads: int | None = None) -> NDArray[np.uint64]:
    """Coefficients (length N) of the polynomial of degree < N through
    (xs[j], ys[..., j]).  ``ys`` 1-D or 2-D (one value set per row).  Up to
    ``tuning.POLY_LCC_MAX_POINTS`` points: ys @ W (Lagrange matrix) on the
    matmul kernel; beyond: subproduct tree per row."""
    p = check_prime(p)
    xs = _points(xs, p)
    ys = check_elements(ys, p, "ys", ndim=(1, 2))
    threads = resolve_threads(threads)
    Y = ys[None, :] if ys.ndim == 1 else ys
    if Y.shape[1] != len(xs):
        raise ValueError(f"shape mismatch: {len(xs)} points but ys rows have {Y.shape[1]} values")
    n = len(xs)
    if n == 0:
        out = np.zeros((Y.shape[0], 0), dtype=np.uint64)
    elif n <= tuning.POLY_LCC_MAX_POINTS:
        out = matmul(Y, _core.lagrange_matrix(xs, p), p, threads=threads)
    else:
        tree = _core.Tree(xs, p)
        out = np.zeros((Y.shape[0], n), dtype=np.uint64)
        for i, row in enumerate(Y):
            c = _core.interpolate_tree(row, tree)
            out[i, : len(c)] = c
    return out[0] if ys.ndim == 1 else out


def inv_series(f: NDArray[np.uint64], n: int, p: int) -> NDArray[np.uint64]:
    """g with f g = 1 mod x^n (Newton iteration); needs f[0] != 0."""
    p = check_prime(p)
    f = _poly(f, p, "f")
    n = check_int(n, "n")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n and (len(f) == 0 or f[0] == 0):
        raise ValueError("f[0] must be nonzero to invert f as a power series")
    return _core.inv_series(f, n, p)


def divrem(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """(q, r) with a = q b + r, deg r < deg b (trimmed results)."""
    p = check_prime(p)
    a = _core.trim(_poly(a, p, "a"))
    b = _nonzero(_poly(b, p, "b"), "b")
    q, r = _core.divrem(a, b, p)
    return _core.trim(q), _core.trim(r)


def gcd(a: NDArray[np.uint64], b: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """Monic greatest common divisor (half-GCD for large degrees)."""
    p = check_prime(p)
    return _euclid.gcd(_poly(a, p, "a"), _poly(b, p, "b"), p)


def laurent_tail(r: NDArray[np.uint64], f: NDArray[np.uint64], m: int, p: int) -> NDArray[np.uint64]:
    """The first m coefficients c_1..c_m of r(x)/f(x) = sum_{i>=1} c_i x^(-i)
    for deg r < deg f: the "2Nk high-order terms of the reversed Laurent series"
    of SecEA, Sec. 4.1, step 1 (m = 2Nk); see ``_core.laurent_tail``.
    The scaled remainder tree of ``eval`` starts from the same expansion."""
    p = check_prime(p)
    f = _nonzero(_poly(f, p, "f"), "f")
    r = _core.trim(_poly(r, p, "r"))
    m = check_int(m, "m")
    if m < 0:
        raise ValueError(f"m must be >= 0, got {m}")
    D = len(f) - 1
    if len(r) > D:
        raise ValueError(f"need deg r < deg f, got deg r = {len(r) - 1}, deg f = {D}")
    return _core.laurent_tail(r, f, m, p)


def rational_reconstruct(s: NDArray[np.uint64], p: int, num_len: int | None = None,
                         laurent: bool = False) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Rational function reconstruction (Shoup, A Computational Introduction to
    Number Theory and Algebra, Sec. 17.5.1) by the half-GCD.

    Power-series mode (default): ``s`` holds n terms of S(x) = U(x)/V(x) mod
    x^n; returns (U, V) with V(0) = 1, deg U < num_len (default n // 2) and
    deg V <= n - num_len.

    ``laurent=True``: ``s`` holds c_1..c_n of u(x)/L(x) = sum c_i x^(-i) (the
    sum of ``laurent_tail`` outputs); returns (u, L) with L monic,
    gcd(u, L) = 1, deg u < deg L <= n // 2.  In SecEA's entity union, L is the
    lcm of the clients' f_n and ``roots(L)`` the union.

    Raises ValueError if no fraction with the degree bounds fits ``s``."""
    p = check_prime(p)
    s = _poly(s, p, "s")
    n = len(s)
    default_len = num_len is None
    num_len = n // 2 if default_len else check_int(num_len, "num_len")
    if not 0 <= num_len <= n:
        raise ValueError(f"num_len must be in [0, {n}], got {num_len}")
    U, V = _euclid.rational_reconstruct_series(s, num_len, p)
    if not laurent:
        return U, V
    # S(y) = R(y)/F(y) with F = y^D L(1/y), R = y^(D-1) u(1/y); D = deg L.
    D = max(len(V) - 1, len(U))
    if default_len and D > n // 2:
        # odd n: the series bound deg V <= n - n // 2 is one more than deg L <= n // 2; the
        # reconstruction is minimal, so no fraction within the bound fits (any s of odd length
        # fits some deg L = n // 2 + 1, which the n terms do not determine)
        raise ValueError(f"no fraction u/L with deg u < deg L <= n // 2 = {n // 2} fits these {n} terms")
    L = np.zeros(D + 1, dtype=np.uint64)
    L[D + 1 - len(V):] = V[::-1]
    u = np.zeros(D, dtype=np.uint64)
    if len(U):
        u[D - len(U):] = U[::-1]
    return _core.trim(u), L


def roots(f: NDArray[np.uint64], p: int) -> NDArray[np.uint64]:
    """All roots in F_p of f as a sorted uint64 array, repeated roots once.

    Goldilocks: tangent Graeffe transforms (``_graeffe``: Grenet, van der
    Hoeven, Lecerf 2015) above degree ``tuning.ROOTS_GRAEFFE_MIN``; other
    primes and small remainders: Cantor-Zassenhaus; every element is tested
    in fields of at most ``tuning.ROOTS_SMALL_FIELD`` elements.  Randomised
    (shifts from ``secrets``) but exact: every root found is checked by an
    exact division, and rounds go on until no two roots collide."""
    p = check_prime(p)
    f = _nonzero(_poly(f, p, "f"), "f")
    return _roots.roots(f, p)


def rs_decode(xs: NDArray[np.uint64], ys: NDArray[np.uint64], k: int, p: int, erasures: ArrayLike | None = None,
              threads: int | None = None) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """Decode an evaluation (Reed-Solomon) codeword: ys[j] = m(xs[j]) for a
    message polynomial m of degree < k, up to e errors and s erasures with
    2e + s <= N - k (Gao's algorithm).

    ``ys`` is 1-D, or 2-D with one received word per row sharing the points
    (SecEA's decoding: every coordinate of a response vector comes from the
    same client, so a faulty client corrupts the same position in every row).
    ``erasures``: boolean mask (True = missing) or indices of missing values.

    Returns (coefficients of m: length k, or (rows, k); sorted positions of
    wrong values, over all rows).  Raises ``DecodingError`` when fewer than
    k values are left, or when it detects a word beyond the bound; beyond it
    a word within the radius of another codeword decodes to that codeword
    (no decoder can tell).  With no redundancy (N - s = k values) every word
    is a codeword: the interpolant is returned and nothing is detected or
    corrected; callers that need a checked result must require N - s > k
    (``secea.Client.decode(..., verify=True)`` does).

    Batches: a random combination of the rows (coefficients from ``secrets``)
    is decoded to locate the faulty positions (their union over rows, except
    with probability <= rows / p per position), then every row is
    interpolated from k good positions on the matmul kernel and checked at
    all good positions; rows that do not check out are decoded one by one.
    """
    p = check_prime(p)
    xs = _points(xs, p)
    ys = check_elements(ys, p, "ys", ndim=(1, 2))
    if ys.shape[-1] != len(xs):
        raise ValueError(f"shape mismatch: {len(xs)} points, {ys.shape[-1]} values per word")
    k = check_int(k, "k")
    threads = resolve_threads(threads)
    if not 1 <= k <= len(xs):
        raise ValueError(f"k must be in [1, N = {len(xs)}], got {k}")
    present = None
    if erasures is not None:
        e = np.asarray(erasures)
        present = np.ones(len(xs), dtype=bool)
        if e.dtype == bool:
            if e.shape != (len(xs),):
                raise ValueError("an erasure mask must have one entry per point")
            present = ~e
        elif e.size:
            if e.dtype.kind not in "iu" or e.min() < 0 or e.max() >= len(xs):
                raise ValueError("erasure indices must be integers in [0, N)")
            present[e] = False
    if ys.ndim == 1:
        return _roots.rs_decode(xs, ys, k, p, present)
    return _rs_decode_rows(xs, ys, k, p, present, threads)


def _rs_decode_rows(xs, Y, k, p, present, threads):
    import secrets
    rows, n = Y.shape
    if rows == 0:
        return np.zeros((0, k), dtype=np.uint64), np.zeros(0, dtype=np.int64)
    r = np.array([secrets.randbelow(p) for _ in range(rows)], dtype=np.uint64)
    combo = matmul(r[None, :], Y, p, threads=threads)[0]
    _, bad = _roots.rs_decode(xs, combo, k, p, present)
    good = np.ones(n, dtype=bool) if present is None else present.copy()
    good[bad] = False
    idx = np.flatnonzero(good)
    base = idx[:k]
    W = _core.lagrange_matrix(xs[base], p)                     # k x k
    coeffs = matmul(np.ascontiguousarray(Y[:, base]), W, p, threads=threads)
    check = matmul(coeffs, _core.vandermonde_t(xs[idx], k, p), p, threads=threads)
    wrong = np.flatnonzero((check != Y[:, idx]).any(axis=1))
    all_bad = set(int(b) for b in bad)
    for i in wrong:                                            # rows with their own errors
        c, b = _roots.rs_decode(xs, np.ascontiguousarray(Y[i]), k, p, present)
        coeffs[i] = c
        all_bad.update(int(x) for x in b)
    s = 0 if present is None else int((~present).sum())
    if 2 * len(all_bad) + s > n - k:
        raise DecodingError(f"{len(all_bad)} faulty positions and {s} erasures exceed 2e + s <= N - k = {n - k}")
    return coeffs, np.array(sorted(all_bad), dtype=np.int64)
