"""Root finding and Reed-Solomon decoding (raw layer).

Roots over Goldilocks: tangent Graeffe transforms (``_graeffe``), with
Cantor-Zassenhaus for the last few roots.  Other primes: Cantor-Zassenhaus
equal-degree splitting (Cantor & Zassenhaus 1981; von zur Gathen & Gerhard, Modern Computer Algebra, Sec. 14.3).  The distinct
nonzero roots of f are those of g = gcd(f, x^(p-1) - 1); g is split by
gcd(g, (x + delta)^((p-1)/2) - 1) for random delta, recursively.  Powers mod g
use Barrett reduction with the precomputed inverse of the reversed modulus
(``Modulus``).  For small fields every element is tested instead.

Reed-Solomon: Gao's decoder (S. Gao, "A new algorithm for decoding
Reed-Solomon codes", 2003): g0 = prod (x - x_i), g1 the interpolant of the
received values, partial Euclid to the first remainder g of degree
< (N + k)/2 with cofactor v; the message is g / v when 2e + s <= N - k.
"""
from __future__ import annotations

import secrets

import numpy as np

from .. import tuning
from .._native import check_status, lib, u64ptr
from . import _graeffe
from ._core import (GOLDILOCKS, U64, Tree, deg, derivative, divrem, eval_tree, horner, interpolate_tree, inv_series,
                    monic, mul, mul_trunc, sub, trim)
from ._euclid import gcd, reduce_below


class Modulus:
    """Arithmetic mod a monic polynomial g of degree n >= 1 (Barrett)."""

    def __init__(self, g, p):
        self.g = g
        self.p = p
        self.n = len(g) - 1
        self.rinv = inv_series(g[::-1].copy(), max(1, self.n - 1), p) \
            if self.n > tuning.ROOTS_CLASSICAL_MAX else None          # 1 / rev(g) mod x^(n-1)

    def reduce(self, t):
        n, p = self.n, self.p
        t = trim(t)
        if len(t) <= n:
            return t
        if len(t) > 2 * n - 1:
            return divrem(t, self.g, p)[1]
        lq = len(t) - n                                   # quotient length
        q = mul_trunc(t[::-1].copy(), self.rinv[:lq], lq, p)[::-1].copy()
        return trim(sub(t[:n], mul_trunc(q, self.g, n, p), p))

    def mulmod(self, a, b):
        return self.reduce(mul(a, b, self.p))

    def powmod(self, base, e):
        """base^e mod g, left-to-right square and multiply (one C call for
        small moduli, where Python overhead would dominate)."""
        if self.n <= tuning.ROOTS_CLASSICAL_MAX and e < 2**64:
            out = np.empty(self.n, dtype=U64)
            base = np.ascontiguousarray(base)
            check_status(lib.secea_fp_poly_powmod_classical(u64ptr(out), u64ptr(base), len(base), e,
                                                            u64ptr(np.ascontiguousarray(self.g)), len(self.g),
                                                            self.p), "powmod")
            return trim(out)
        result = np.array([1 % self.p], dtype=U64)
        base = self.reduce(base)
        for bit in bin(e)[2:]:
            result = self.mulmod(result, result)
            if bit == "1":
                result = self.mulmod(result, base)
        return result


def _roots_small_field(f, p):
    xs = np.arange(p, dtype=U64)
    vals = horner(f, xs, p)
    return xs[vals == 0]


def _split(g, p, out):
    """Append the roots of g (monic, squarefree, split, g(0) != 0) to out."""
    stack = [g]
    while stack:
        g = stack.pop()
        d = deg(g)
        if d <= 0:
            continue
        if d == 1:
            out.append((p - int(g[0])) % p)
            continue
        if d <= tuning.ROOTS_BRUTE_MAX and p <= tuning.ROOTS_SMALL_FIELD:
            out.extend(int(x) for x in _roots_small_field(g, p))
            continue
        mod = Modulus(g, p)
        while True:
            delta = secrets.randbelow(p)
            h = mod.powmod(np.array([delta, 1 % p], dtype=U64), (p - 1) // 2)
            h1 = sub(h, np.array([1 % p], dtype=U64), p)
            g1 = gcd(g, h1, p)
            if 0 < deg(g1) < d:
                g2, _ = divrem(g, g1, p)
                stack.append(g1)
                stack.append(monic(trim(g2), p))
                break


def _split_2adic(g, p, out):
    """Roots of g (monic, squarefree, split, g(0) != 0) by successive square
    roots of unity (the 2-adic structure of F_p^*, p - 1 = 2^v m).

    With u(alpha) = (alpha + delta)^(m 2^(v - L)) in mu_{2^L}, L about
    log2(deg g) + 2, write u = zeta^k (zeta a primitive 2^L-th root of unity).
    Level t splits a node whose roots share k mod 2^t = e by
    gcd(g, U^(2^(L-1-t)) - zeta^(e 2^(L-1-t))): the next bit of k.  One
    exponentiation by m 2^(v - L) at the top replaces Cantor-Zassenhaus'
    exponentiation by (p-1)/2 at every node; level t then costs L - 1 - t
    squarings per node.  Roots whose u collide end in a node of degree > 1
    after L levels and are split by ``_split`` with a fresh delta."""
    v = ((p - 1) & -(p - 1)).bit_length() - 1
    n = deg(g)
    L = min(v, n.bit_length() + 2)
    m = (p - 1) >> v
    from ._core import root_of_unity
    zeta = root_of_unity(p, L)
    delta = secrets.randbelow(p)
    U = Modulus(g, p).powmod(np.array([delta, 1 % p], dtype=U64), m << (v - L))
    level = [(g, U, 0)]
    leftovers = []
    for t in range(L):
        nxt = []
        for gn, un, e in level:
            d = deg(gn)
            if d == 1:
                out.append((p - int(gn[0])) % p)
                continue
            modn = Modulus(gn, p)
            z = modn.powmod(un, 1 << (L - 1 - t))
            s = pow(zeta, e << (L - 1 - t), p)
            g1 = gcd(gn, sub(z, np.array([s], dtype=U64), p), p)
            d1 = deg(g1)
            if d1 == d:
                nxt.append((gn, un, e))
            elif d1 <= 0:
                nxt.append((gn, un, e + (1 << t)))
            else:
                g2 = monic(trim(divrem(gn, g1, p)[0]), p)
                nxt.append((g1, divrem(un, g1, p)[1], e))
                nxt.append((g2, divrem(un, g2, p)[1], e + (1 << t)))
        level = nxt
    for gn, _, _ in level:
        if deg(gn) == 1:
            out.append((p - int(gn[0])) % p)
        elif deg(gn) > 1:
            leftovers.append(gn)
    for gn in leftovers:
        _split(gn, p, out)


def roots(f, p):
    """Sorted distinct roots in F_p of f (trimmed, nonzero, deg >= 0)."""
    f = monic(trim(f), p)
    if deg(f) <= 0:
        return np.zeros(0, dtype=U64)
    if p <= tuning.ROOTS_SMALL_FIELD:
        return np.unique(_roots_small_field(f, p))
    out = []
    nz = np.flatnonzero(f)
    if nz[0] > 0:                       # x^t divides f
        out.append(0)
        f = f[nz[0]:]
    if deg(f) > tuning.ROOTS_GRAEFFE_MIN and p == GOLDILOCKS:
        found = _graeffe.split_roots(f, lambda g: _roots_cz(g, p), _squarefree)
        return np.unique(np.concatenate([np.array(out, dtype=U64), found]))
    elif deg(f) >= 1:
        out.extend(_roots_cz(f, p))
    return np.array(sorted(set(out)), dtype=U64)


def _squarefree(f, p):
    """f divided by gcd(f, f'): each repeated factor once (deg f < p)."""
    h = gcd(f, derivative(f, p), p)
    return monic(trim(divrem(f, h, p)[0]), p) if deg(h) > 0 else f


def _roots_cz(f, p):
    """Distinct roots of f (monic, f(0) != 0, deg >= 1) by Cantor-Zassenhaus."""
    out = []
    mod = Modulus(f, p)
    xp = mod.powmod(np.array([0, 1], dtype=U64), p - 1)         # x^(p-1) mod f
    g = gcd(f, sub(xp, np.array([1], dtype=U64), p), p)
    if deg(g) > tuning.ROOTS_CLASSICAL_MAX and (p - 1) % 4 == 0:
        _split_2adic(g, p, out)
    else:
        _split(g, p, out)
    return out


class DecodingError(ValueError):
    """Reed-Solomon decoding failed: more errors than 2e + s <= N - k allows."""


def rs_decode(xs, ys, k, p, present=None):
    """Gao's decoder.  Returns (coefficients of length k, sorted error positions).

    ``present`` masks erasures (False = missing).  Corrects e errors when
    2e + s <= N - k.  Raises DecodingError when the received word is
    detectably beyond the decoding radius; with exactly k values present
    (no redundancy) the interpolant is returned unchecked."""
    n_total = len(xs)
    idx = np.arange(n_total) if present is None else np.flatnonzero(present)
    s = n_total - len(idx)
    x, y = xs[idx], ys[idx]
    n = len(idx)
    if n < k:
        raise DecodingError(f"only {n} values left after {s} erasures; need at least k = {k}")
    tree = Tree(x, p) if n else None
    g0 = tree.root
    g1 = interpolate_tree(y, tree)
    dstop = (n + k + 1) // 2
    if deg(g1) < k:                     # no error: the interpolant is the message
        f = g1
    elif deg(g1) < dstop:
        # not a codeword, and Gao's partial Euclid would stop at g1 itself
        # (v = 1, f = g1 of degree >= k): errors detected, none correctable
        raise DecodingError(
            f"cannot decode: the {n} values are no codeword of dimension k = {k} and "
            f"(N - k - s)/2 = {(n - k) // 2} errors can be corrected (N = {n_total}, s = {s})")
    else:
        M, _, g = reduce_below(g0, g1, dstop, p)
        v = M[1][1]
        f, r = divrem(g, v, p)
        if len(trim(r)) or deg(f) >= k:
            raise DecodingError(
                f"cannot decode: more than (N - k - s)/2 = {(n - k) // 2} errors among "
                f"N = {n_total} values with s = {s} erasures and k = {k}")
    f = trim(f)
    vals = eval_tree(f, tree) if len(f) else np.zeros(n, dtype=U64)
    bad = idx[vals != y]
    if 2 * len(bad) + s > n_total - k:
        raise DecodingError(f"{len(bad)} errors and {s} erasures exceed 2e + s <= N - k = {n_total - k}")
    coeffs = np.zeros(k, dtype=U64)
    coeffs[: len(f)] = f
    return coeffs, bad
