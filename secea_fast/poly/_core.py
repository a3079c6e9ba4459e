"""Raw polynomial algorithms over F_p (no validation: see ``secea_fast.poly``).

Elementwise field arithmetic is the field's raw layer (``fp``, i.e.
``secea_fast.field.raw``): every operand here comes out of a kernel or out
of ``secea_fast.poly``'s checks, so nothing is validated twice.

Polynomials are 1-D ``uint64`` arrays of canonical residues, lowest degree
first; the zero polynomial is the empty array.  Batches are 2-D arrays with one
polynomial per row (all of one length).  Every routine is exact; the choice
between classical C kernels and NTT-based ones is made on the crossovers in
``secea_fast.tuning`` and never changes a result.

Length (about 680 lines): the one place where each polynomial operation
chooses between the classical C kernel and the NTT route; keeping every
crossover decision in one module is the point of it.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import tuning
from .._native import check_status, ffi, lib, u64ptr
from ..field import raw as fp

U64 = np.uint64
GOLDILOCKS = 2**64 - 2**32 + 1


# ---------------------------------------------------------------- helpers
def trim(a: np.ndarray) -> np.ndarray:
    nz = np.flatnonzero(a)
    return a[: nz[-1] + 1] if nz.size else a[:0]


def deg(a: np.ndarray) -> int:
    return len(a) - 1   # callers keep polynomials trimmed; deg(0) = -1


def zeros(n) -> np.ndarray:
    return np.zeros(n, dtype=U64)


def _padded(a, b):
    """a and b zero-padded to a common length (polynomial add/sub)."""
    n = max(len(a), len(b))
    x, y = zeros(n), zeros(n)
    x[: len(a)] = a
    y[: len(b)] = b
    return x, y


def add(a, b, p):
    """Polynomial sum (the elementwise sum of same-length rows is ``fp.add``)."""
    return fp.add(*_padded(a, b), p)


def sub(a, b, p):
    return fp.sub(*_padded(a, b), p)


def derivative(f, p):
    if len(f) <= 1:
        return f[:0].copy()
    idx = fp.reduce(np.arange(1, len(f), dtype=U64), p)
    return trim(fp.mul(f[1:], idx, p))


def monic(f, p):
    """f scaled to leading coefficient 1 (the zero polynomial stays zero)."""
    if len(f) == 0:
        return f.copy()
    lead = int(f[-1])
    return f.copy() if lead == 1 else fp.scale(f, pow(lead, p - 2, p), p)


# ---------------------------------------------------------------- NTT plumbing
def two_adicity(p: int) -> int:
    return ((p - 1) & -(p - 1)).bit_length() - 1


@lru_cache(maxsize=None)
def root_of_unity(p: int, logn: int) -> int:
    """A primitive 2^logn-th root of unity mod p (needs 2^logn | p - 1)."""
    v = two_adicity(p)
    if logn > v:
        raise ValueError(f"F_{p} has no 2^{logn}-th roots of unity")
    if logn == 0:
        return 1                 # the search below starts at g = 2, which is 0 mod 2
    m = (p - 1) >> v
    for g in range(2, 10_000):
        w = pow(g, m, p)
        if v == 0 or pow(w, 1 << (v - 1), p) == p - 1:   # order exactly 2^v
            return pow(w, 1 << (v - logn), p)
    raise RuntimeError("no non-residue found")  # pragma: no cover


_PLANS: dict = {}


def plan(p: int, logn: int):
    key = (p, logn)
    pl = _PLANS.get(key)
    if pl is None:
        raw = lib.secea_ntt_plan_new(p, root_of_unity(p, logn), logn)
        if raw == ffi.NULL:
            raise MemoryError(f"could not create an NTT plan of length 2^{logn} mod {p}")
        pl = _PLANS[key] = ffi.gc(raw, lib.secea_ntt_plan_free)
    return pl


def ntt_native(p: int, logn: int) -> bool:
    return logn <= 30 and (p == GOLDILOCKS or (p < 2**63 and two_adicity(p) >= logn))


@lru_cache(maxsize=32)
def bitrev(logn: int) -> np.ndarray:
    """Indices i -> bit-reversal of i on logn bits."""
    idx = np.arange(1 << logn, dtype=np.int64)
    out = np.zeros_like(idx)
    for b in range(logn):
        out |= ((idx >> b) & 1) << (logn - 1 - b)
    return out


@lru_cache(maxsize=1)
def crt_primes():
    out = ffi.new("uint64_t[3]")
    lib.secea_ntt_crt_primes(out)
    return tuple(int(x) for x in out)


def _conv_ntt(a2, b2, n_out, p):
    """Rows of a2 (count, la) times rows of b2 (count or 1, lb), lengths n_out,
    with one prime's NTT (p must support the length)."""
    count = a2.shape[0]
    logn = max(0, (n_out - 1).bit_length())
    n = 1 << logn
    pl = plan(p, logn)
    A = np.zeros((count, n), dtype=U64)
    A[:, : a2.shape[1]] = a2
    lib.secea_ntt_forward(pl, u64ptr(A), count)
    if b2 is a2:
        B = A
    else:
        B = np.zeros((b2.shape[0], n), dtype=U64)
        B[:, : b2.shape[1]] = b2
        lib.secea_ntt_forward(pl, u64ptr(B), b2.shape[0])
        if B.shape[0] != count:
            B = np.ascontiguousarray(np.broadcast_to(B, (count, n)))
    lib.secea_ntt_pointwise(pl, u64ptr(A), u64ptr(B), count * n)
    lib.secea_ntt_inverse(pl, u64ptr(A), count)
    return A[:, :n_out]


def ntt_rows(X, N, p):
    """Forward NTT (bit-reversed output) of the rows of X zero-padded to N."""
    out = np.zeros((X.shape[0], N), dtype=U64)
    out[:, : X.shape[1]] = X[:, :N]
    lib.secea_ntt_forward(plan(p, N.bit_length() - 1), u64ptr(out), out.shape[0])
    return out


def intt_rows(Y, p):
    """Inverse NTT of rows (bit-reversed input, natural output), in place."""
    Y = np.ascontiguousarray(Y)
    lib.secea_ntt_inverse(plan(p, Y.shape[1].bit_length() - 1), u64ptr(Y), Y.shape[0])
    return Y


def _conv_crt(a2, b2, n_out, p):
    """Three-prime NTT and Chinese remaindering: exact for any p < 2^64."""
    q0, q1, q2 = crt_primes()
    res = []
    for q in (q0, q1, q2):
        aq = fp.reduce(a2, q)
        bq = aq if b2 is a2 else fp.reduce(b2, q)
        res.append(np.ascontiguousarray(_conv_ntt(aq, bq, n_out, q)))
    out = np.empty(res[0].shape, dtype=U64)
    lib.secea_ntt_crt3(u64ptr(out), u64ptr(res[0]), u64ptr(res[1]), u64ptr(res[2]), out.size, p)
    return out


def mul_rows(a2, b2, p):
    """Row-wise products: a2 (count, la), b2 (count, lb) or (1, lb) -> (count, la+lb-1)."""
    count, la = a2.shape
    lb = b2.shape[1]
    if la == 0 or lb == 0:
        return np.zeros((count, 0), dtype=U64)
    n_out = la + lb - 1
    cut = tuning.POLY_MUL_CLASSICAL_MAX if count < 8 else tuning.POLY_MUL_CLASSICAL_MAX_BATCH
    if min(la, lb) <= cut:
        a2 = np.ascontiguousarray(a2)
        b2 = np.ascontiguousarray(b2)
        out = np.empty((count, n_out), dtype=U64)
        lib.secea_fp_poly_mul_classical(u64ptr(out), u64ptr(a2), la, u64ptr(b2), lb,
                                        lb if b2.shape[0] == count else 0, count, p)
        return out
    logn = (n_out - 1).bit_length()
    if ntt_native(p, logn):
        return _conv_ntt(a2, b2, n_out, p)
    return _conv_crt(a2, b2, n_out, p)


def mul(a, b, p):
    if len(a) == 0 or len(b) == 0:
        return zeros(0)
    if a is b:
        a2 = a[None, :]
        return mul_rows(a2, a2, p)[0]
    return mul_rows(a[None, :], b[None, :], p)[0]


def mul_trunc(a, b, n, p):
    """a * b mod x^n."""
    return mul(a[:n], b[:n], p)[:n]


# ---------------------------------------------------------------- series and division
def inv_series_rows(F, n, p):
    """Rows g with F g = 1 mod x^n (Newton: g <- g (2 - F g)); F[:, 0] != 0.

    With a native NTT each doubling m -> m2 costs five transforms of length
    N = 2^ceil(log2 m2): F g is needed only in [m, m2), which a cyclic
    product of length N leaves intact, and NTT(g) serves both products."""
    count = F.shape[0]
    g = fp.batch_inv(np.ascontiguousarray(F[:, :1]), p)
    m = 1
    while m < n:
        m2 = min(2 * m, n)
        N = 1 << (m2 - 1).bit_length()
        if m <= tuning.POLY_MUL_CLASSICAL_MAX or not ntt_native(p, N.bit_length() - 1):
            e = mul_rows(np.ascontiguousarray(F[:, :m2]), g, p)[:, m:m2]   # F g = 1 + x^m e
            h = mul_rows(np.ascontiguousarray(e), g, p)[:, : m2 - m]       # g e mod x^(m2-m)
        else:
            G = ntt_rows(g, N, p)
            e = intt_rows(fp.mul(ntt_rows(F[:, :m2], N, p), G, p), p)[:, m:m2]
            h = intt_rows(fp.mul(ntt_rows(e, N, p), G, p), p)[:, : m2 - m]
        g2 = np.empty((count, m2), dtype=U64)
        g2[:, :m] = g
        g2[:, m:] = fp.neg(h, p)
        g, m = g2, m2
    return g


def inv_series(f, n, p):
    if n == 0:
        return zeros(0)
    F = zeros((1, n))
    F[0, : min(n, len(f))] = f[:n]
    return inv_series_rows(F, n, p)[0]


def laurent_tail(r, f, m, p):
    """c_1..c_m of r/f = sum_{i>=1} c_i x^(-i) (r, f trimmed, deg r < deg f).

    With F(y) = y^D f(1/y) and R(y) = y^(D-1) r(1/y) (D = deg f), r/f at
    x = 1/y is y R(y)/F(y), so c_(i+1) is the coefficient of y^i in R/F:
    one power-series inversion and one product."""
    out = zeros(m)
    if m == 0 or len(r) == 0:
        return out
    D = len(f) - 1
    R = zeros(D)
    R[D - len(r):] = r[::-1]
    c = mul_trunc(R, inv_series(f[::-1].copy(), m, p), m, p)
    out[: len(c)] = c
    return out


def divrem(a, b, p):
    """(q, r) with a = q b + r, deg r < deg b (b trimmed, nonzero)."""
    la, lb = len(a), len(b)
    if la < lb:
        return zeros(0), a.copy()
    if lb == 1:
        return fp.scale(a, pow(int(b[0]), p - 2, p), p), zeros(0)
    lq = la - lb + 1
    if min(lq, lb) <= tuning.POLY_DIV_CLASSICAL_MAX:
        q = np.empty(lq, dtype=U64)
        r = np.empty(lb - 1, dtype=U64)
        check_status(lib.secea_fp_poly_divrem_classical(u64ptr(q), u64ptr(r), u64ptr(np.ascontiguousarray(a)),
                                                        la, u64ptr(np.ascontiguousarray(b)), lb, p), "divrem")
        return q, trim(r)
    rb_inv = inv_series(b[::-1].copy(), lq, p)
    q = mul_trunc(a[::-1].copy(), rb_inv, lq, p)[::-1].copy()
    r = sub(a[: lb - 1], mul_trunc(q, b, lb - 1, p), p)
    return q, trim(r)


def rem(a, b, p):
    return divrem(a, b, p)[1]


# ---------------------------------------------------------------- subproduct trees
class Tree:
    """Subproduct tree of points xs (any count >= 1).

    Level i holds ``full[i]``: the products over consecutive blocks of 2^i
    points, shape (n // 2^i, 2^i + 1), and ``part[i]``: the product over the
    remaining n mod 2^i points (None if there are none).
    """

    def __init__(self, xs, p):
        self.p = p
        self.xs = xs
        n = len(xs)
        full = np.empty((n, 2), dtype=U64)
        full[:, 0] = fp.neg(xs, p)
        full[:, 1] = 1
        self.full = [full]
        self.part = [None]
        self.transforms = {}      # level -> NTTs (length 2^(i+1)) of its first 2*pairs full rows
        self._inv_dM = None       # 1 / M'(x_i), once interpolation needs it
        evens = None              # the last products' values on mu_(2^(i+1)) (monic_products)
        while True:
            f, pt = self.full[-1], self.part[-1]
            cnt = f.shape[0]
            if cnt == 0 or (cnt == 1 and pt is None):
                break
            pairs = cnt // 2
            if pairs:
                nf, T, evens = monic_products(f[: 2 * pairs], p, keep_transforms=True, evens=evens)
                if T is not None:
                    self.transforms[len(self.full) - 1] = T
            else:
                nf, evens = np.zeros((0, 2 * f.shape[1] - 1), dtype=U64), None
            if cnt % 2:
                npt = f[-1].copy() if pt is None else mul(f[-1], pt, p)
            else:
                npt = pt
            self.full.append(nf)
            self.part.append(npt)
        self.root = self.full[-1][0] if self.full[-1].shape[0] else self.part[-1]

    @property
    def levels(self):
        return len(self.full)


def _pad_to(a, n):
    out = zeros(n)
    out[: min(n, len(a))] = a[:n]
    return out


def _native_len(p, N):
    return N >= tuning.POLY_TREE_NTT_MIN and ntt_native(p, N.bit_length() - 1)


def mid_rows(A, Mrev, d_sib, p):
    """Middle products: D[r, k] = sum_j M_r[j] A[r, k + j], k < len(A) - d_sib,
    for M_r (degree d_sib) given reversed as rows of Mrev.  The classical C
    kernel up to ``tuning.POLY_MUL_CLASSICAL_MAX``; above, coefficients
    d_sib .. len(A) - 1 of the products A_r * Mrev_r (NTT or three-prime
    route: the remainder tree over a prime without a native NTT was quadratic)."""
    L = A.shape[1]
    if d_sib > tuning.POLY_MUL_CLASSICAL_MAX:
        return np.ascontiguousarray(mul_rows(np.ascontiguousarray(A), np.ascontiguousarray(Mrev), p)[:, d_sib:L])
    M = np.ascontiguousarray(Mrev[:, ::-1])          # back to lowest-first
    A = np.ascontiguousarray(A)
    out = np.empty((A.shape[0], L - d_sib), dtype=U64)
    lib.secea_fp_poly_midprod_batch(u64ptr(out), u64ptr(A), L, u64ptr(M), M.shape[1], M.shape[1], A.shape[0], p)
    return out


def _mid(a, m, p):
    """Single middle product: coefficients deg(m) .. len(a)-1 of a * rev(m)."""
    dm = len(m) - 1
    if len(a) <= dm:
        return zeros(0)
    return mul(a, m[::-1].copy(), p)[dm:len(a)]


class _TreeNTT:
    """Transforms of the tree's full nodes at length 2^(i+1): taken from the
    tree's construction when it used the NTT route, else computed on demand."""

    def __init__(self, tree):
        self.tree = tree
        self.fwd = {}

    def fwd_ntt(self, i):
        if i not in self.fwd:
            tree = self.tree
            f = tree.full[i]
            N = 2 * (f.shape[1] - 1)
            if i in tree.transforms:
                self.fwd[i] = tree.transforms[i]
            else:
                rows = 2 * (f.shape[0] // 2)
                self.fwd[i] = ntt_rows(f[:rows], N, tree.p) if rows and _native_len(tree.p, N) else None
        return self.fwd[i]


def _tree_ntt(tree):
    if not hasattr(tree, "_ntt"):
        tree._ntt = _TreeNTT(tree)
    return tree._ntt


def eval_tree(f, tree: Tree):
    """f at every point of the tree by a scaled remainder tree (Bernstein,
    "Scaled remainder trees", 2004; Bostan, Lecerf & Schost, ISSAC 2003).

    Each node v carries c_1..c_deg(v) of the expansion at infinity of
    (f mod M_v) / M_v = sum_k c_k x^(-k).  A child's coefficients are a middle
    product of its parent's with its sibling: (r_v / M_v) M_sib = r_child /
    M_child + polynomial.  At a leaf x - x_i, c_1 = f(x_i).  Each level costs
    one forward and two inverse transforms of the parents' length."""
    p = tree.p
    n = len(tree.xs)
    top = tree.levels - 1
    root = tree.root
    f = trim(f)
    if len(f) > len(root) - 1:
        f = rem(f, root, p)
    D = len(root) - 1
    series = laurent_tail(f, root, D, p)                            # c_1..c_D
    if tree.full[top].shape[0]:
        sf, sp = series[None, :], None
    else:
        sf, sp = np.zeros((0, 1), dtype=U64), series
    tn = _tree_ntt(tree)
    for i in range(top - 1, -1, -1):
        full_c, part_c = tree.full[i], tree.part[i]
        cnt = full_c.shape[0]
        d = full_c.shape[1] - 1
        pairs = cnt // 2
        nsf = np.empty((cnt, d), dtype=U64)
        if pairs:
            fw = tn.fwd_ntt(i)
            if fw is not None:
                # D[k] = sum_j M[j] A[k + j] = conv(rev A, M)[2d - 1 - k]: one
                # transform of the reversed parent serves both children, and the
                # siblings' transforms are the tree's own (no reversed copies)
                L = 2 * d
                TA = ntt_rows(sf[:pairs, ::-1], L, p)
                P = np.empty((2 * pairs, L), dtype=U64)
                F = np.ascontiguousarray(fw[: 2 * pairs])
                lib.secea_fp_tree_pair_mul(u64ptr(P), u64ptr(TA), u64ptr(F), pairs, L, p)
                C = intt_rows(P, p)
                nsf[: 2 * pairs] = C[:, d:L][:, ::-1]
            else:
                A = np.ascontiguousarray(sf[:pairs])
                nsf[0:2 * pairs:2] = mid_rows(A, full_c[1:2 * pairs:2, ::-1], d, p)
                nsf[1:2 * pairs:2] = mid_rows(A, full_c[0:2 * pairs:2, ::-1], d, p)
        nsp = None
        if cnt % 2:
            if part_c is None:
                nsf[-1] = sp
            else:
                nsf[-1] = _mid(sp, part_c, p)
                nsp = _mid(sp, full_c[-1], p)
        else:
            nsp = sp
        sf, sp = nsf, nsp
    return np.ascontiguousarray(sf[:, 0]) if n else np.zeros(0, dtype=U64)


def interpolate_tree(ys, tree: Tree):
    """The polynomial of degree < n through (xs[i], ys[i]): weights
    y_i / M'(x_i), then the linear combination up the tree
    (T_parent = T_left M_right + T_right M_left, transforms of the nodes
    computed once).  Each level's pointwise sums are its results' values on
    mu_N, so the next level transforms only the odd coset (one NTT of half
    the length, as in ``monic_products``)."""
    p = tree.p
    if tree._inv_dM is None:                # 1 / M'(x_i): once per tree, for every row
        tree._inv_dM = fp.batch_inv(eval_tree(derivative(tree.root, p), tree), p)
    w = fp.mul(ys, tree._inv_dM, p)
    tf = w[:, None]           # level 0: constants
    tp = None
    tn = _tree_ntt(tree)
    evens = None              # the rows of tf on mu_d (their parents' pointwise sums)
    for i in range(tree.levels - 1):
        full, part = tree.full[i], tree.part[i]
        cnt = full.shape[0]
        d = full.shape[1] - 1
        pairs = cnt // 2
        nevens = None
        if pairs:
            fw = tn.fwd_ntt(i)
            if fw is not None:
                # one forward call for all rows; each row meets its sibling's transform
                N, rows = 2 * d, 2 * pairs
                # values on mu_d from the level below when it had them
                T = _transforms_from_evens(tf[:rows], evens, p)
                if T is None:
                    T = ntt_rows(tf[:rows], N, p)
                S = np.empty((pairs, N), dtype=U64)
                F = np.ascontiguousarray(fw[:rows])
                check_status(lib.secea_fp_tree_cross(u64ptr(S), u64ptr(T), u64ptr(F), pairs, N, p),
                             "tree interpolation")
                nevens = S.copy()
                ntf = intt_rows(S, p)
            else:
                left = mul_rows(tf[0:2 * pairs:2], full[1:2 * pairs:2], p)
                right = mul_rows(tf[1:2 * pairs:2], full[0:2 * pairs:2], p)
                ntf = fp.add(left, right, p)[:, : 2 * d]
        else:
            ntf = np.zeros((0, 2 * d), dtype=U64)
        if cnt % 2:
            last_t, last_m = tf[-1], full[-1]
            ntp = last_t.copy() if tp is None else add(mul(last_t, part, p), mul(tp, last_m, p), p)
        else:
            ntp = tp
        tf, tp, evens = ntf, ntp, nevens
    top = tf[0] if tf.shape[0] else tp
    assert top is not None, "a tree of n >= 1 points ends in one node: a full row or the partial one"
    return trim(top)


# ---------------------------------------------------------------- small point sets (LCC regime)
def lagrange_matrix(xs, p):
    """W (N x N) with interpolant coefficients = ys @ W: row j = coefficients of L_j."""
    n = len(xs)
    M = from_roots_classical(xs, p)
    W = np.empty((n, n), dtype=U64)
    dM = derivative(M, p)
    inv = fp.batch_inv(horner(dM, xs, p), p)
    for j in range(n):
        qj, _ = divrem(M, np.array([(p - int(xs[j])) % p, 1], dtype=U64), p)   # M / (x - x_j)
        W[j] = fp.scale(_pad_to(qj, n), int(inv[j]), p)
    return W


def vandermonde_t(xs, k, p):
    """V^T (k x N): V^T[i, j] = xs[j]^i, by doubling: rows [m, 2m) are rows
    [0, m) times xs^m, so log2(k) kernel calls instead of k."""
    n = len(xs)
    V = np.empty((k, n), dtype=U64)
    if k:
        V[0] = 1 % p
    m, step = 1, np.ascontiguousarray(xs, dtype=U64)          # step = xs^m
    while m < k:
        h = min(m, k - m)
        V[m:m + h] = fp.mul(V[:h], np.broadcast_to(step, (h, n)), p)
        m += h
        if m < k:
            step = fp.mul(step, step, p)
    return V


def horner_rows(F, xs, p):
    """F[r](xs[j]) for every row r of F (rows, k) and point j (classical,
    eight points per pass in C)."""
    F = np.ascontiguousarray(F, dtype=U64)
    xs = np.ascontiguousarray(xs, dtype=U64)
    out = np.zeros((F.shape[0], len(xs)), dtype=U64)
    if F.size and len(xs):
        lib.secea_fp_poly_eval_horner(u64ptr(out), u64ptr(F), F.shape[1], u64ptr(xs), len(xs), 0,
                                      F.shape[0], p)
    return out


def horner(f, xs, p):
    """f at every x (classical; f may be empty = zero polynomial)."""
    return horner_rows(np.asarray(f, dtype=U64)[None, :], xs, p)[0]


def from_roots_classical(xs, p):
    f = np.array([1 % p], dtype=U64)
    for x in xs:
        f = mul(f, np.array([(p - int(x)) % p, 1], dtype=U64), p)
    return f


def powers(h, n, p):
    """[1, h, h^2, ..., h^(n-1)] mod p (by doubling: log n vector products)."""
    out = np.empty(n, dtype=U64)
    if n == 0:
        return out
    out[0] = 1 % p
    filled, hk = 1, h % p
    while filled < n:
        take = min(filled, n - filled)
        out[filled:filled + take] = fp.scale(out[:take], hk, p)
        filled += take
        hk = hk * hk % p
    return out


@lru_cache(maxsize=32)
def _odd_coset_twist(p: int, N: int) -> np.ndarray:
    """omega_N^k for k < N/2 (omega_N the plan's root of length N)."""
    return powers(root_of_unity(p, N.bit_length() - 1), N // 2, p)


def _transforms_from_evens(X, evens, p, top=None):
    """Length-2d transforms (bit-reversed) of the rows of X (rows x d, plus
    the x^d coefficients ``top`` if given) whose values on mu_d, the first
    half of those transforms, are the rows of ``evens``: only the odd coset
    omega_2d mu_d is transformed, one length-d NTT of the coefficients
    twisted by omega_2d^k (x^d folds onto the constant as omega_2d^d = -1).
    None if ``evens`` does not cover X."""
    rows, d = X.shape
    if evens is None or evens.shape[1] != d or evens.shape[0] < rows:
        return None
    T = np.empty((rows, 2 * d), dtype=U64)
    T[:, :d] = evens[:rows]
    q = fp.mul(X, np.broadcast_to(_odd_coset_twist(p, 2 * d), (rows, d)), p)
    if top is not None:
        q[:, 0] = sub(q[:, 0], np.ascontiguousarray(top), p)
    T[:, d:] = ntt_rows(q, d, p)
    return T


def monic_products(level, p, keep_transforms=False, evens=None):
    """Products of adjacent rows of a (2c, d+1) array of monic polynomials.

    Above the classical crossover the product of two monic polynomials of
    degree d is taken cyclically of length 2d (its x^(2d) coefficient, 1,
    wraps onto the constant term and is subtracted back): transforms of half
    the size a plain product needs.

    Returns (products, T, E) with ``keep_transforms``: T the rows'
    length-2d transforms (None on the classical route) and E the pointwise
    products, which are the products' values on mu_2d, i.e. the first half of
    their length-4d transforms in the plan's bit-reversed layout.  Passing E
    back as ``evens`` for the next level leaves only the odd coset
    omega_4d mu_2d to transform: one length-2d NTT of the coefficients
    twisted by omega_4d^k (the x^(2d) term, 1, folds onto the constant as
    omega_4d^(2d) = -1) instead of a length-4d NTT."""
    d = level.shape[1] - 1
    if d <= tuning.POLY_MUL_CLASSICAL_MAX or not ntt_native(p, (2 * d).bit_length() - 1) or d & (d - 1):
        out = mul_rows(level[0::2], level[1::2], p)
        return (out, None, None) if keep_transforms else out
    N = 2 * d
    T = _transforms_from_evens(level[:, :d], evens, p, top=level[:, d])
    if T is None:
        T = ntt_rows(level, N, p)                 # every row: the tree keeps them
    E = fp.mul(T[0::2], T[1::2], p)
    C = intt_rows(E.copy() if keep_transforms else E, p)
    out = np.empty((C.shape[0], N + 1), dtype=U64)
    out[:, :N] = C
    out[:, 0] = sub(C[:, 0], np.ones(C.shape[0], dtype=U64), p) if C.shape[0] else C[:, 0]
    out[:, N] = 1
    return (out, T, E) if keep_transforms else out


def from_roots(roots, p):
    """prod (x - r): subproduct tree over the roots padded to a power of two
    with zeros, whose factor x^pad is then shifted out."""
    n = len(roots)
    if n == 0:
        return np.array([1 % p], dtype=U64)
    m = 1 << (n - 1).bit_length()
    level = np.zeros((m, 2), dtype=U64)
    level[:n, 0] = fp.neg(roots, p)
    level[:, 1] = 1
    evens = None
    while level.shape[0] > 1:
        level, _, evens = monic_products(level, p, keep_transforms=True, evens=evens)
    return level[0][m - n:].copy()
