"""Root finding over Goldilocks by tangent Graeffe transforms.

B. Grenet, J. van der Hoeven, G. Lecerf, "Randomized root finding over finite
FFT-fields using tangent Graeffe transforms", ISSAC 2015, Sec. 2-3.

For f squarefree of degree n with f(0) != 0 and a random shift tau, the
roots of A_0 = f(x + tau) are alpha - tau.  Work in F_p[eps]/(eps^2): the
roots of A_0 + eps A_0' are alpha - tau - eps.  The Graeffe transform of
order r, G_r(A)(x^r) = prod_{zeta^r = 1} A(zeta x) (up to sign), maps roots to
their r-th powers; applied with total order m to A_0 + eps A_0' it gives
A + eps B whose roots are

    (alpha - tau - eps)^m = omega - eps m (alpha - tau)^(m-1),
    omega = (alpha - tau)^m.

If omega is a simple root of A, A(omega + eps delta) + eps B(omega) = 0 gives
delta = -B(omega) / A'(omega), hence

    alpha = tau + m omega A'(omega) / B(omega).                         (*)

Over Goldilocks p - 1 = 2^32 * 3 * 5 * 17 * 257 * 65537.  With
s = 65537 * 2^j and m = (p - 1) / s = 2^(32-j) * 3 * 5 * 17 * 257, every
omega lies in mu_s, so the roots of A are found by evaluating A on mu_s:
2^j cosets of mu_65537, each a length-65537 DFT done by Rader's algorithm
(a cyclic convolution of length 2^16, three NTTs).  Factors of f without a
root in F_p never give an omega in mu_s: (beta - tau)^m in mu_s means
(beta - tau)^(p-1) = 1, so beta is in F_p.

Two roots collide, (alpha - tau)^m = (alpha' - tau)^m, with probability
1/s per pair for a random tau; colliding roots show up as omega with
A(omega) = A'(omega) = 0 and are found in the next round, on f divided by
the roots found so far, with a fresh tau.

Costs, with D the smallest power of two above n: a Graeffe step of order 2
is four length-D NTTs (the values of A on mu_2D are those of the previous
step on mu_D plus one twisted transform), one of odd order r is 2r forward
NTTs of length D (A and B on the r cosets of mu_D in mu_rD) and two inverse
ones.  The odd orders 3 + 5 + 17 + 257 dominate: about 560 transforms
against 4 (32 - j) for the binary steps.
"""
from __future__ import annotations

import secrets
from functools import lru_cache

import numpy as np

from .._native import check_status, lib, u64ptr
from ..field import raw as fp
from ._core import GOLDILOCKS, U64, deg, derivative, mul, plan, trim
from ._core import powers as _powers

P = GOLDILOCKS
GENERATOR = 7                      # a generator of F_p^* for Goldilocks
Q = 65537                          # Fermat prime; q - 1 = 2^16
Q_GENERATOR = 3                    # a generator of F_q^*
ODD_ORDERS = (3, 5, 17, 257)       # (p - 1) / 2^32 = 3 * 5 * 17 * 257 * 65537


def _root(order):
    """A primitive root of unity of the given order (order | p - 1)."""
    assert (P - 1) % order == 0
    return pow(GENERATOR, (P - 1) // order, P)


def _prefix_products(a):
    """Inclusive prefix products mod p (Hillis-Steele scan)."""
    out = a.copy()
    sh = 1
    while sh < len(out):
        out[sh:] = fp.mul(out[sh:], out[:-sh], P)
        sh *= 2
    return out


@lru_cache(maxsize=4)
def _factorials(n):
    """(k! for k < n, 1/k! for k < n) mod p (n < p)."""
    ks = np.arange(n, dtype=U64)
    ks[0] = 1
    fact = _prefix_products(ks)
    return fact, fp.batch_inv(fact, P)


def taylor_shift(f, tau):
    """Coefficients of f(x + tau) (Aho-Steiglitz-Ullman: one product).

    g_k k! = sum_i f_i i! tau^(i-k) / (i-k)!, a correlation of (f_i i!) with
    (tau^j / j!)."""
    n = len(f)
    if n <= 1 or tau % P == 0:
        return f.copy()
    fact, ifact = _factorials(n)
    F = fp.mul(f, fact, P)[::-1].copy()                 # F[n-1-i] = f_i i!
    E = fp.mul(_powers(tau, n, P), ifact, P)
    c = mul(F, E, P)[:n][::-1].copy()                 # c[k] = sum_i f_i i! E_(i-k)
    return fp.mul(c, ifact, P)


class _Plan:
    """NTT plans and twiddle tables for one transform length D = 2^logd."""

    def __init__(self, logd):
        self.logd = logd
        self.D = 1 << logd
        self.pl = plan(P, logd)
        self.tw2 = _powers(_root(2 * self.D), self.D, P)     # omega_2D^k: the odd coset of mu_D in mu_2D

    def fwd(self, a):
        lib.secea_ntt_forward(self.pl, u64ptr(a), 1)
        return a

    def inv(self, a):
        lib.secea_ntt_inverse(self.pl, u64ptr(a), 1)
        return a

    def mul_into(self, a, b):
        """a *= b pointwise (in place)."""
        lib.secea_ntt_pointwise(self.pl, u64ptr(a), u64ptr(b), len(a))
        return a


def graeffe_odd_ref(a, b, r, pn):
    """Tangent Graeffe transform of odd order r of A + eps B (coefficient
    arrays of length D, degree < D): the coefficients of G_r(A) + eps (...).

    G_r(A)(z^r) = prod_{c < r} A(zeta^c z) for z in mu_D (gcd(r, D) = 1 so
    z -> z^r permutes mu_D); A(zeta^c z) on mu_D is the NTT of the
    coefficients a_k zeta^(ck).  The inverse transform of the values at
    y_j = z_j^r reads coefficient k at index r k mod D."""
    D = pn.D
    zeta = _root(r)
    step = _powers(zeta, D, P)                  # zeta^k
    tw = np.ones(D, dtype=U64)              # zeta^(c k)
    Pv = Qv = None
    for c in range(r):
        ac = pn.fwd(fp.mul(a, tw, P) if c else a.copy())
        bc = pn.fwd(fp.mul(b, tw, P) if c else b.copy())
        if Pv is None:
            Pv, Qv = ac, bc
        else:
            Qv = fp.add(pn.mul_into(Qv, ac), pn.mul_into(bc, Pv), P)     # Q A_c + P B_c
            pn.mul_into(Pv, ac)
        if c + 1 < r:
            tw = pn.mul_into(tw, step)
    idx = (np.arange(D, dtype=np.int64) * r) % D
    return pn.inv(Pv)[idx], pn.inv(Qv)[idx]


def graeffe_binary_ref(a, b, steps, pn):
    """`steps` tangent Graeffe transforms of order 2 of A + eps B.

    With the values of A on mu_2D laid out as the bit-reversed length-2D
    transform (mu_D in bit-reversed order, then the coset omega_2D mu_D), x and
    -x sit at adjacent positions, so G_2(A)(x^2) = A(x) A(-x) is a product of
    neighbours and comes out on mu_D in bit-reversed order: the first half of
    the next step's layout.  The second half is one twisted transform."""
    D = pn.D

    def full(coef, evens=None):
        out = np.empty(2 * D, dtype=U64)
        out[:D] = pn.fwd(coef.copy()) if evens is None else evens
        out[D:] = pn.fwd(fp.mul(coef, pn.tw2, P))
        return out

    XA, XB = full(a), full(b)
    for t in range(steps):
        a0, a1 = XA[0::2].copy(), XA[1::2].copy()
        b0, b1 = XB[0::2].copy(), XB[1::2].copy()
        va = fp.mul(a0, a1, P)
        vb = fp.add(pn.mul_into(a0, b1), pn.mul_into(b0, a1), P)
        a = pn.inv(va.copy())
        b = pn.inv(vb.copy())
        if t + 1 < steps:
            XA, XB = full(a, va), full(b, vb)
    return a, b


def graeffe_odd(a, b, r, pn):
    """``graeffe_odd_ref`` in C (csrc/poly/graeffe.c): in place, returns (a, b)."""
    check_status(lib.secea_gl_graeffe_odd(pn.pl, u64ptr(a), u64ptr(b), r, _root(r)), "tangent Graeffe",
                 f"order r must be odd and >= 3 over the Goldilocks plan, got r = {r}")
    return a, b


def graeffe_binary(a, b, steps, pn):
    """``graeffe_binary_ref`` in C: in place, returns (a, b)."""
    check_status(lib.secea_gl_graeffe2(pn.pl, u64ptr(a), u64ptr(b), steps), "tangent Graeffe",
                 "the plan must be over the Goldilocks prime")
    return a, b


class _Rader:
    """Evaluation of polynomials on mu_s, s = 65537 * 2^j: 2^j cosets of
    mu_65537, each a Rader DFT (a length-2^16 cyclic convolution)."""

    def __init__(self, j):
        self.j = j
        self.s = Q << j
        self.eta = _root(self.s)
        wq = pow(self.eta, 1 << j, P)                       # primitive 65537-th root
        self.wq_pow = _powers(wq, Q, P)
        g = np.ones(Q - 1, dtype=np.int64)
        for b in range(1, Q - 1):
            g[b] = g[b - 1] * Q_GENERATOR % Q
        self.perm = g                                        # g^b mod q
        self.perm_neg = g[(-np.arange(Q - 1)) % (Q - 1)]     # g^-a mod q
        self.pn = _Plan(16)
        v = self.wq_pow[self.perm_neg]                      # omega^(g^-c)
        self.vhat = self.pn.fwd(np.ascontiguousarray(v))
        self.eta_pow = _powers(self.eta, 1 << j, P)

    def dft(self, x):
        """X[i, k] = sum_n x[i, n] omega_q^(n k), k < q, for the rows of x (rows, q)."""
        rows = x.shape[0]
        u = np.ascontiguousarray(x[:, self.perm])
        lib.secea_ntt_forward(self.pn.pl, u64ptr(u), rows)
        for i in range(rows):
            self.pn.mul_into(u[i], self.vhat)
        lib.secea_ntt_inverse(self.pn.pl, u64ptr(u), rows)
        X = np.empty((rows, Q), dtype=U64)
        lo = (x & np.uint64(0xFFFFFFFF)).sum(axis=1)      # q 2^32 < 2^64: no overflow
        hi = (x >> np.uint64(32)).sum(axis=1)
        for i in range(rows):
            X[i, 0] = (int(lo[i]) + (int(hi[i]) << 32)) % P
            X[i, self.perm_neg] = fp.add(u[i], np.full(Q - 1, x[i, 0], dtype=U64), P)
        return X

    def roots_of(self, a, da, b):
        """Positions (c, k) where a vanishes on mu_s, with da and b there:
        coset by coset, so memory stays at three length-q rows whatever j."""
        cs, ks, vda, vb = [], [], [], []
        n = max(len(a), len(da), len(b))
        for c in range(1 << self.j):
            vals = self._coset(c, (a, da, b), n)
            z = np.flatnonzero(vals[0] == 0)
            if len(z):
                cs.append(np.full(len(z), c, dtype=np.int64))
                ks.append(z)
                vda.append(vals[1, z])
                vb.append(vals[2, z])
        if not cs:
            e = np.zeros(0, dtype=np.int64)
            return e, e, np.zeros(0, dtype=U64), np.zeros(0, dtype=U64)
        return np.concatenate(cs), np.concatenate(ks), np.concatenate(vda), np.concatenate(vb)

    def _coset(self, c, polys, n):
        """Values of the polynomials on the coset eta^c mu_q: (len(polys), q)."""
        L = -(-max(n, 1) // Q) * Q
        tw = _powers(int(self.eta_pow[c]), n, P) if c else None
        folded = np.zeros((len(polys), L), dtype=U64)
        for i, f in enumerate(polys):
            folded[i, : len(f)] = fp.mul(f, tw[: len(f)], P) if c else f
        acc = folded[:, :Q].copy()
        for t in range(1, L // Q):
            acc = fp.add(acc, folded[:, t * Q:(t + 1) * Q], P)
        return self.dft(acc)

    def evaluate(self, *polys):
        """Values of the polynomials on mu_s as an array (len(polys), 2^j, q):
        [i, c, k] is polys[i] at eta^c omega_q^k."""
        n = max(len(f) for f in polys)
        out = np.empty((len(polys), 1 << self.j, Q), dtype=U64)
        for c in range(1 << self.j):
            out[:, c] = self._coset(c, polys, n)
        return out

    def point(self, c, k):
        return fp.mul(self.eta_pow[c], self.wq_pow[k], P)


@lru_cache(maxsize=8)
def _rader(j):
    return _Rader(j)


def _choose_j(n):
    """Evaluation set mu_s, s = 65537 2^j: the smallest with s >= c n,
    c = ``tuning.ROOTS_GRAEFFE_POINTS_PER_ROOT``; a fraction of about
    1 - exp(-n/s) of the roots collide and go to the next round."""
    from .. import tuning
    j = 0
    while (Q << j) < tuning.ROOTS_GRAEFFE_POINTS_PER_ROOT * n and j < 12:
        j += 1
    return j


def graeffe_round(f, tau=None):
    """One round on f (monic, squarefree, f(0) != 0, deg >= 1).

    Returns (roots found, number of colliding omegas): every root of f in
    F_p is among the roots found unless the count is positive."""
    n = deg(f)
    if tau is None:
        tau = secrets.randbelow(P)
    found = []
    A0 = taylor_shift(f, tau)
    if A0[0] == 0:                       # tau is a root
        found.append(tau)
        A0 = A0[1:].copy()
        n -= 1
        if n == 0:
            return np.array(found, dtype=U64), 0
    B0 = derivative(A0, P)
    logd = max(1, n.bit_length())        # D > n
    pn = _Plan(logd)
    D = pn.D
    a = np.zeros(D, dtype=U64)
    b = np.zeros(D, dtype=U64)
    a[: n + 1] = A0
    b[: len(B0)] = B0
    j = _choose_j(n)
    for r in ODD_ORDERS:
        a, b = graeffe_odd(a, b, r, pn)
    a, b = graeffe_binary(a, b, 32 - j, pn)
    a = trim(a[: n + 1])
    b = trim(b[: n + 1])
    rad = _rader(j)
    cs, ks, vda, vb = rad.roots_of(a, derivative(a, P), b)
    if len(cs) == 0:
        return np.array(found, dtype=U64), 0
    ok = vda != 0
    collided = int(np.count_nonzero(~ok))
    cs, ks, vda, vb = cs[ok], ks[ok], vda[ok], vb[ok]
    if np.any(vb == 0):                  # cannot happen for an exact transform of f
        raise ArithmeticError("tangent Graeffe: B(omega) = 0 at a simple root")
    m = (P - 1) // rad.s
    omega = rad.point(cs, ks)
    ratio = fp.mul(fp.mul(omega, vda, P), fp.batch_inv(vb, P), P)
    shifted = fp.scale(ratio, m, P)
    alphas = fp.add(shifted, np.full(len(shifted), tau, dtype=U64), P)
    return np.concatenate([np.array(found, dtype=U64), alphas]), collided


def split_roots(g, fallback, squarefree):
    """Distinct roots of g (monic, g(0) != 0, deg >= 1) in F_p, unsorted.

    The first round runs on g as given: a repeated root of g shows up like a
    collision (a multiple root of A), so the rest of g, after dividing out the
    roots found, is made squarefree by ``squarefree(h, p)`` before the next
    rounds (a gcd at a fraction of the first degree).  Rounds go on until one
    reports no collision; polynomials of degree at most
    ``tuning.ROOTS_GRAEFFE_MIN`` go to ``fallback(g)`` (Cantor-Zassenhaus)."""
    from .. import tuning
    from ._core import divrem, from_roots
    out = []
    first = True
    while deg(g) > tuning.ROOTS_GRAEFFE_MIN:
        found, collided = graeffe_round(g)
        if len(found):
            q, r = divrem(g, from_roots(found, P), P)
            if len(trim(r)):             # every root found must divide g exactly
                raise ArithmeticError("tangent Graeffe produced a non-root")
            out.append(found)
            g = trim(q)
        if collided == 0:
            return np.concatenate(out) if out else np.zeros(0, dtype=U64)
        if first:
            g = squarefree(g, P)
            first = False
    if deg(g) >= 1:
        out.append(np.asarray(fallback(g), dtype=U64))
    return np.concatenate(out) if out else np.zeros(0, dtype=U64)
