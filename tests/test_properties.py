"""Property tests of the public kernel API against the pure-Python references.

Every public function of ``secea_fast.poly``, ``secea_fast.field`` and
``secea_fast.linalg.matmul`` is driven by hypothesis over the input shapes
no hand-written test tends to try: empty arrays, length 1, zero polynomials,
untrimmed inputs (leading zeros), equal degrees, deg b > deg a, repeated
roots, the points 0 and p - 1, sizes just below, at and above every crossover
in ``secea_fast.tuning``, and the kinds of prime (Goldilocks, the embedding
prime, a generic 64-bit prime, small primes without 2-adicity).  Results are
compared exactly with ``secea_fast.poly.reference``,
``secea_fast.field.reference`` or plain Python integers; bad input must raise
TypeError / ValueError, never anything else.

Hypothesis draws the structure (prime, sizes, zero patterns, seeds); NumPy
draws the bulk values from the seed, so examples stay fast and shrink well.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import secea_fast
from secea_fast import field, linalg, poly, tuning
from secea_fast.field import reference as fref
from secea_fast.poly import reference as pref

GOLD = secea_fast.GOLDILOCKS
EMB = secea_fast.EMBEDDING_PRIME
# the three kinds of 64-bit prime, and small ones without 2-adicity (10007 - 1 = 2 * 5003)
# and primes whose 2-adicity covers only short transforms (7681 = 15 * 2^9 + 1, 257 = 2^8 + 1), where
# one call mixes native NTT levels with the three-prime route
PRIMES = [GOLD, EMB, 2**64 - 59, 10007, 2, 3, 65537, 7681, 257]
BIG_PRIMES = [GOLD, EMB, 2**64 - 59]

# SECEA_PROP_SCALE multiplies the example counts (a long hunt: SECEA_PROP_SCALE=50)
SCALE = float(os.environ.get("SECEA_PROP_SCALE", 1))
FAST = settings(max_examples=int(40 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIXTURE = settings(max_examples=int(25 * SCALE), deadline=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SLOW = settings(max_examples=int(150 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _around(*cuts):
    out = set()
    for c in cuts:
        out.update(x for x in (c - 1, c, c + 1, c + 2) if x >= 0)
    return sorted(out)


# lengths straddling the crossovers of the polynomial kernels (the largest kept < 300 so the
# quadratic references stay fast)
SMALL_LENS = [0, 1, 2, 3, 4, 5, 7, 8, 9]
THRESH_LENS = _around(tuning.POLY_EVAL_LEAF, tuning.POLY_DIV_CLASSICAL_MAX, tuning.POLY_MUL_CLASSICAL_MAX,
                      tuning.POLY_MUL_CLASSICAL_MAX_BATCH, tuning.POLY_TREE_NTT_MIN, tuning.POLY_LCC_MAX_POINTS,
                      tuning.HGCD_CLASSICAL_MAX, tuning.HGCD_NATIVE_BASE, 2 * tuning.POLY_MUL_CLASSICAL_MAX,
                      2 * tuning.POLY_DIV_CLASSICAL_MAX)
THRESH_LENS = [n for n in THRESH_LENS if n <= 260]
LENS = st.sampled_from(SMALL_LENS + THRESH_LENS)
SEEDS = st.integers(0, 2**32 - 1)


def rand(rng, p, n, edge=True):
    """n uniform residues mod p, with 0, 1 and p - 1 planted at random places."""
    if p <= 2**63:
        x = rng.integers(0, p, size=n, dtype=np.uint64)
    else:
        x = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True) % np.uint64(p)
    if edge and n >= 3 and rng.random() < 0.5:
        for v in (0, 1, p - 1):
            x[rng.integers(0, n)] = v
    return x


def make_poly(rng, p, n, lead_zeros=0, nonzero_lead=True):
    """Length n (+ lead_zeros zero coefficients on top); nonzero leading coefficient if asked."""
    f = rand(rng, p, n)
    if n and nonzero_lead and f[-1] == 0:
        f[-1] = 1
    return np.concatenate([f, np.zeros(lead_zeros, dtype=np.uint64)])


def L(a):
    return [int(x) for x in a]


def ref_gcd(a, b, p):
    a, b = pref.trim(a), pref.trim(b)
    while b:
        a, b = b, pref.divrem(a, b, p)[1]
    if not a:
        return []
    c = pow(a[-1], p - 2, p)
    return [x * c % p for x in a]


def distinct_points(rng, p, n):
    """n distinct points mod p (n <= p), always including 0 and p - 1 when n allows."""
    if p <= 4 * n + 16:
        pts = rng.permutation(p)[:n].astype(np.uint64)
    else:
        s = {0, p - 1} if n >= 2 else set()
        while len(s) < n:
            s.update(int(v) for v in rand(rng, p, 2 * n, edge=False))
        pts = np.array(sorted(s)[:n] if n >= 2 else list(s)[:n], dtype=np.uint64)
        if n >= 2 and (0 not in pts.tolist() or p - 1 not in pts.tolist()):
            pts[0], pts[-1] = 0, p - 1
        pts = pts[rng.permutation(n)]
    return np.ascontiguousarray(pts)


# ============================================================ polynomials
@FAST
@given(p=st.sampled_from(PRIMES), la=LENS, lb=LENS, za=st.sampled_from([0, 0, 1, 3]),
       zb=st.sampled_from([0, 0, 2]), seed=SEEDS)
def test_mul_matches_reference(p, la, lb, za, zb, seed):
    rng = np.random.default_rng(seed)
    a, b = make_poly(rng, p, la, za), make_poly(rng, p, lb, zb)
    got = poly.mul(a, b, p)
    want = pref.mul(L(a), L(b), p)
    assert got.dtype == np.uint64 and got.ndim == 1
    assert pref.trim(got) == pref.trim(want)
    if len(a) and len(b):
        assert len(got) == len(a) + len(b) - 1


@FAST
@given(p=st.sampled_from(PRIMES), rows=st.sampled_from([0, 1, 2, 7, 8, 9]), la=LENS, lb=LENS,
       one_b=st.booleans(), seed=SEEDS)
def test_mul_rows_matches_reference(p, rows, la, lb, one_b, seed):
    rng = np.random.default_rng(seed)
    A = rand(rng, p, rows * la).reshape(rows, la)
    B = rand(rng, p, lb) if one_b else rand(rng, p, rows * lb).reshape(rows, lb)
    got = poly.mul(A, B, p)
    assert got.shape[0] == rows
    for i in range(rows):
        want = pref.mul(L(A[i]), L(B if one_b else B[i]), p)
        assert pref.trim(got[i]) == pref.trim(want)


@FAST
@given(p=st.sampled_from(PRIMES), la=LENS, lb=LENS.filter(lambda n: n > 0), za=st.sampled_from([0, 0, 2]),
       zb=st.sampled_from([0, 0, 1]), seed=SEEDS)
def test_divrem_matches_reference(p, la, lb, za, zb, seed):
    rng = np.random.default_rng(seed)
    a, b = make_poly(rng, p, la, za), make_poly(rng, p, lb, zb)
    q, r = poly.divrem(a, b, p)
    wq, wr = pref.divrem(L(a), L(b), p)
    assert L(q) == wq and L(r) == wr


@FAST
@given(p=st.sampled_from(PRIMES), lg=st.sampled_from([0, 1, 2, 5, 40, 70]), lu=LENS, lv=LENS,
       za=st.sampled_from([0, 0, 2]), swap=st.booleans(), seed=SEEDS)
def test_gcd_matches_euclid(p, lg, lu, lv, za, swap, seed):
    rng = np.random.default_rng(seed)
    g = make_poly(rng, p, lg)
    a = np.array(pref.mul(L(g), L(make_poly(rng, p, lu)), p) + [0] * za, dtype=np.uint64)
    b = np.array(pref.mul(L(g), L(make_poly(rng, p, lv)), p), dtype=np.uint64)
    if swap:
        a, b = b, a
    assert L(poly.gcd(a, b, p)) == ref_gcd(L(a), L(b), p)


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from(SMALL_LENS + THRESH_LENS), same=st.booleans(), seed=SEEDS)
def test_gcd_equal_lengths(p, n, same, seed):
    """The shape that broke the half-GCD: two random polynomials of one length."""
    rng = np.random.default_rng(seed)
    a = make_poly(rng, p, n)
    b = a.copy() if same else make_poly(rng, p, n)
    assert L(poly.gcd(a, b, p)) == ref_gcd(L(a), L(b), p)


@FAST
@given(p=st.sampled_from(PRIMES), lf=LENS, n=LENS, zf=st.sampled_from([0, 0, 3]), seed=SEEDS)
def test_inv_series_matches_reference(p, lf, n, zf, seed):
    rng = np.random.default_rng(seed)
    f = make_poly(rng, p, lf, zf)
    if n and (len(f) == 0 or f[0] == 0):
        with pytest.raises(ValueError):
            poly.inv_series(f, n, p)
        return
    got = poly.inv_series(f, n, p)
    assert L(got) == (pref.inv_series(L(f), n, p) if n else [])


@FAST
@given(p=st.sampled_from(PRIMES), lf=LENS, npts=st.sampled_from(SMALL_LENS + THRESH_LENS),
       zf=st.sampled_from([0, 0, 4]), seed=SEEDS)
def test_eval_matches_horner(p, lf, npts, zf, seed):
    rng = np.random.default_rng(seed)
    f = make_poly(rng, p, lf, zf)
    xs = rand(rng, p, npts)               # repeated points are allowed in eval
    got = poly.eval(f, xs, p)
    assert got.shape == (npts,)
    assert L(got) == [pref.evaluate(L(f), x, p) for x in L(xs)]


@FIXTURE
@given(p=st.sampled_from(BIG_PRIMES + [10007]), rows=st.sampled_from([0, 1, 2, 3, 17]),
       lf=st.sampled_from([0, 1, 2, 30, 33, 65, 130]), npts=st.sampled_from([0, 1, 2, 63, 64, 65, 66, 130]),
       seed=SEEDS)
def test_eval_rows_matches_horner(backend, p, rows, lf, npts, seed):
    """2-D f at the Horner / matmul / remainder-tree crossovers (POLY_HORNER_MAX_WORK,
    POLY_LCC_MAX_POINTS)."""
    rng = np.random.default_rng(seed)
    F = rand(rng, p, rows * lf).reshape(rows, lf)
    xs = rand(rng, p, npts)
    got = poly.eval(F, xs, p)
    assert got.shape == (rows, npts)
    for i in range(rows):
        assert L(got[i]) == [pref.evaluate(L(F[i]), x, p) for x in L(xs)]


@FIXTURE
@given(p=st.sampled_from(PRIMES), n=st.sampled_from(SMALL_LENS + THRESH_LENS),
       rows=st.sampled_from([None, 0, 1, 3, 8, 17]), seed=SEEDS)
def test_interpolate_through_points(backend, p, n, rows, seed):
    """8 rows or more take the IFMA matmul kernel on the matrix route."""
    n = min(n, p)
    rng = np.random.default_rng(seed)
    xs = distinct_points(rng, p, n)
    ys = rand(rng, p, n) if rows is None else rand(rng, p, rows * n).reshape(rows, n)
    c = poly.interpolate(xs, ys, p)
    assert c.shape == ys.shape
    for y, row in ([(ys, c)] if rows is None else zip(ys, c)):
        assert [pref.evaluate(L(row), x, p) for x in L(xs)] == L(y)


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from(SMALL_LENS + THRESH_LENS), seed=SEEDS)
def test_lagrange_matrix_and_vandermonde(p, n, seed):
    n = min(n, p, 70)
    rng = np.random.default_rng(seed)
    xs = distinct_points(rng, p, n)
    W = poly.lagrange_matrix(xs, p)
    V = poly.vandermonde(xs, n, p)
    assert W.shape == (n, n) and V.shape == (n, n)
    assert [[int(v) for v in row] for row in V] == [[pow(int(x), i, p) for i in range(n)] for x in xs]
    # (W V^T)[j, i] = L_j(x_i) = [i == j]
    prod = fref.matmul(W, V.T, p)
    assert prod == [[int(i == j) for i in range(n)] for j in range(n)]


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from([0, 1, 2, 5]), k=st.sampled_from([0, 1, 2, 3, 70]), seed=SEEDS)
def test_vandermonde_any_k(p, n, k, seed):
    rng = np.random.default_rng(seed)
    xs = rand(rng, p, n)                  # duplicates allowed
    V = poly.vandermonde(xs, k, p)
    assert V.shape == (n, k)
    assert [[int(v) for v in row] for row in V] == [[pow(int(x), i, p) for i in range(k)] for x in xs]


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from(SMALL_LENS + THRESH_LENS + [300, 513]),
       repeat=st.sampled_from([0.0, 0.0, 0.5, 1.0]), seed=SEEDS)
def test_from_roots_matches_reference(p, n, repeat, seed):
    rng = np.random.default_rng(seed)
    rs = rand(rng, p, n)
    if n and repeat:
        rs[rng.random(n) < repeat] = rs[0]
    got = poly.from_roots(rs, p)
    assert L(got) == pref.from_roots(L(rs), p)


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from([0, 1, 2, 3, 10, 63, 64, 65, 66, 130]),
       repeat=st.sampled_from([0.0, 0.3, 1.0]), scale=st.booleans(), seed=SEEDS)
def test_roots_of_split_polynomial(p, n, repeat, scale, seed):
    rng = np.random.default_rng(seed)
    rs = rand(rng, p, n)
    if n and repeat:
        rs[rng.random(n) < repeat] = rs[0]
    f = poly.from_roots(rs, p)
    if scale and p > 2:
        f = field.mul(f, int(rng.integers(2, min(p, 2**62))) % p or 1, p)
    assert L(poly.roots(f, p)) == sorted(set(L(rs)))


@FAST
@given(p=st.sampled_from([2, 3, 10007]), n=st.sampled_from([1, 2, 3, 4, 9, 20, 65]), seed=SEEDS)
def test_roots_small_field_bruteforce(p, n, seed):
    rng = np.random.default_rng(seed)
    f = make_poly(rng, p, n)
    assert L(poly.roots(f, p)) == pref.roots_bruteforce(L(f), p)


@FAST
@given(p=st.sampled_from(BIG_PRIMES), nr=st.sampled_from([1, 2, 5, 64, 65, 70]),
       lg=st.sampled_from([2, 3, 5, 20]), seed=SEEDS)
def test_roots_with_rootless_factor(p, nr, lg, seed):
    """f = prod (x - r) * g: every r is found, and every root returned is a root."""
    rng = np.random.default_rng(seed)
    rs = rand(rng, p, nr)
    g = make_poly(rng, p, lg)
    f = poly.mul(poly.from_roots(rs, p), g, p)
    got = L(poly.roots(f, p))
    assert set(L(rs)) <= set(got)
    assert got == sorted(set(got))
    assert all(pref.evaluate(L(f), x, p) == 0 for x in got)
    assert set(got) - set(L(rs)) == {x for x in got if pref.evaluate(L(g), x, p) == 0} - set(L(rs))


@FAST
@given(p=st.sampled_from(PRIMES), D=st.sampled_from([1, 2, 3, 30, 64, 65, 129]), lr=st.integers(0, 200),
       m=st.sampled_from([0, 1, 2, 5, 64, 65, 130, 260]), zr=st.sampled_from([0, 0, 2]), seed=SEEDS)
def test_laurent_tail_matches_series(p, D, lr, m, zr, seed):
    rng = np.random.default_rng(seed)
    f = make_poly(rng, p, D + 1)
    r = make_poly(rng, p, min(lr, D), zr)
    got = poly.laurent_tail(r, f, m, p)
    # r/f = y * rev_{D-1}(r)(y) / rev_D(f)(y), y = 1/x
    rt = pref.trim(L(r))
    rr = [(rt[D - 1 - i] if D - 1 - i < len(rt) else 0) for i in range(D)]
    want = pref.mul(rr, pref.inv_series(L(f)[::-1], m, p), p)[:m] if m else []
    want += [0] * (m - len(want))
    assert L(got) == want


@FAST
@given(p=st.sampled_from(PRIMES), lu=st.sampled_from([0, 1, 2, 5, 30, 64, 65, 129]),
       lv=st.sampled_from([1, 2, 3, 6, 31, 64, 65, 130]), extra=st.sampled_from([0, 1, 2, 5]), seed=SEEDS)
def test_rational_reconstruct_series(p, lu, lv, extra, seed):
    rng = np.random.default_rng(seed)
    U = make_poly(rng, p, lu, nonzero_lead=False)
    V = make_poly(rng, p, lv)
    V[0] = 1
    n = lu + lv - 1 + extra                # enough terms for a unique answer
    if n == 0:
        return
    S = np.array(pref.mul(L(U), pref.inv_series(L(V), n, p), p)[:n] + [0] * n, dtype=np.uint64)[:n]
    U2, V2 = poly.rational_reconstruct(S, p, num_len=max(lu, 1) if lu else 0)
    assert int(V2[0]) == 1
    lhs = pref.mul(L(V2), L(S), p)[:n]
    assert pref.trim(lhs) == pref.trim(L(U2))
    assert len(U2) <= max(lu, 0) and len(V2) - 1 <= n - lu
    # same fraction: U2 V = U V2
    assert pref.trim(pref.mul(L(U2), L(V), p)) == pref.trim(pref.mul(L(U), L(V2), p))


@FAST
@given(p=st.sampled_from(BIG_PRIMES + [10007]), sizes=st.lists(st.sampled_from([1, 2, 3, 10, 33, 64, 65]),
       min_size=1, max_size=3), share=st.booleans(), seed=SEEDS)
def test_rational_reconstruct_laurent_union(p, sizes, share, seed):
    """SecEA's entity union: sum of laurent_tail(r_n, f_n) -> (u, L), roots(L) = union."""
    rng = np.random.default_rng(seed)
    sets = [rand(rng, p, k) for k in sizes]          # 0 and p - 1 among the entities
    if share and len(sets) > 1:
        sets[1][0] = sets[0][0]
    sets = [np.array(sorted(set(L(s))), dtype=np.uint64) for s in sets]
    union = sorted(set().union(*(L(s) for s in sets)))
    m = 2 * sum(len(s) for s in sets)
    total = np.zeros(m, dtype=np.uint64)
    for s in sets:
        f = poly.from_roots(s, p)
        r = rand(rng, p, len(s), edge=False)
        while not poly.eval(r, s, p).all():          # r_n(x) = 0 at an entity would cancel its pole
            r = rand(rng, p, len(s), edge=False)
        total = field.add(total, poly.laurent_tail(r, f, m, p), p)
    u, Lp = poly.rational_reconstruct(total, p, laurent=True)
    assert int(Lp[-1]) == 1 and len(u) < len(Lp)
    got = L(poly.roots(Lp, p)) if len(Lp) > 1 else []
    assert set(got) <= set(union)
    if p > 2**32:                                    # no cancellation, except with probability ~ m / p
        assert L(Lp) == L(poly.from_roots(np.array(union, dtype=np.uint64), p)) and got == union


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from(SMALL_LENS + THRESH_LENS), kind=st.sampled_from(["random", "sparse",
       "fraction", "corrupted"]), seed=SEEDS)
def test_rational_reconstruct_laurent_contract(p, n, kind, seed):
    """Any terms: ValueError, or (u, L) with L monic, gcd(u, L) = 1,
    deg u < deg L <= n // 2 whose expansion is exactly s (odd n once broke the bound)."""
    rng = np.random.default_rng(seed)
    D = int(rng.integers(1, n // 2 + 1)) if n > 1 else 1
    if kind in ("fraction", "corrupted"):
        Lt = make_poly(rng, p, D + 1)
        Lt = field.mul(Lt, pow(int(Lt[-1]), p - 2, p), p)
        s = poly.laurent_tail(rand(rng, p, D), Lt, n, p)
        if kind == "corrupted" and n:
            s[rng.integers(0, n)] = rand(rng, p, 1)[0]
    elif kind == "sparse":
        s = np.zeros(n, dtype=np.uint64)
        if n:
            s[rng.integers(0, n, 2)] = rand(rng, p, 2)
    else:
        s = rand(rng, p, n)
    try:
        u, Lp = poly.rational_reconstruct(s, p, laurent=True)
    except ValueError:
        assert kind != "fraction" or n < 2
        return
    assert int(Lp[-1]) == 1 and len(u) < len(Lp) and len(Lp) - 1 <= n // 2
    assert L(poly.laurent_tail(u, Lp, n, p)) == L(s)
    assert len(u) == 0 and len(Lp) == 1 or L(poly.gcd(u, Lp, p)) == [1]


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from([1, 2, 3, 5, 8, 20, 64, 65]), kfrac=st.floats(0, 1),
       nerr=st.integers(0, 40), ners=st.integers(0, 40), rows=st.sampled_from([None, 1, 3]), mask=st.booleans(),
       seed=SEEDS)
def test_rs_decode_within_radius(p, n, kfrac, nerr, ners, rows, mask, seed):
    n = min(n, p)
    rng = np.random.default_rng(seed)
    k = max(1, min(n, int(round(kfrac * n))))
    s = min(ners, n - k)
    e = min(nerr, (n - k - s) // 2)
    xs = distinct_points(rng, p, n)
    nr = 1 if rows is None else rows
    M = rand(rng, p, nr * k).reshape(nr, k)
    Y = np.array([[pref.evaluate(L(m), x, p) for x in L(xs)] for m in M], dtype=np.uint64)
    pos = rng.permutation(n)
    erased, wrong = np.sort(pos[:s]), np.sort(pos[s:s + e])
    for j in wrong:
        Y[:, j] = (Y[:, j] + np.uint64(1 + int(rng.integers(0, p - 1)) if p > 2 else 1)) % np.uint64(p) \
            if p < 2**63 else np.array([(int(v) + 1) % p for v in Y[:, j]], dtype=np.uint64)
    for j in erased:
        Y[:, j] = rand(rng, p, nr)
    er = None
    if s:
        if mask:
            er = np.zeros(n, dtype=bool)
            er[erased] = True
        else:
            er = erased.astype(np.int64)
    ys = Y[0] if rows is None else Y
    coeffs, bad = poly.rs_decode(xs, ys, k, p, erasures=er)
    assert L(np.asarray(coeffs).reshape(-1)) == L(M.reshape(-1))
    assert L(bad) == L(wrong)


@FAST
@given(p=st.sampled_from([GOLD, EMB, 65537, 998244353]), logn=st.integers(0, 9), seed=SEEDS)
def test_ntt_matches_dft(p, logn, seed):
    n = 1 << logn
    rng = np.random.default_rng(seed)
    a = rand(rng, p, n)
    e1 = np.zeros(n, dtype=np.uint64)
    e1[1 % n] = 1
    w = int(poly.ntt(e1, p)[1]) if n > 1 else 1
    assert pow(w, n, p) == 1 and (n == 1 or pow(w, n // 2, p) == p - 1)
    A = poly.ntt(a, p)
    assert L(A) == [pref.evaluate(L(a), pow(w, j, p), p) for j in range(n)]     # A[j] = a(w^j)
    assert L(poly.ntt(A, p, inverse=True)) == L(a)


@FIXTURE
@given(p=st.sampled_from([GOLD, EMB, 65537, 998244353, 7681]), logn=st.integers(0, 14), seed=SEEDS)
def test_ntt_long_matches_evaluation(backend, p, logn, seed):
    """Long transforms (the vectorised Goldilocks kernel): A[j] = a(w^j) at a few j."""
    n = 1 << logn
    if (p - 1) % n:
        with pytest.raises(ValueError, match="no native NTT"):
            poly.ntt(np.zeros(n, dtype=np.uint64), p)
        return
    rng = np.random.default_rng(seed)
    a = rand(rng, p, n)
    e1 = np.zeros(n, dtype=np.uint64)
    e1[1 % n] = 1
    w = int(poly.ntt(e1, p)[1]) if n > 1 else 1
    A = poly.ntt(a, p)
    for j in {0, n - 1, *rng.integers(0, n, 4).tolist()}:
        assert int(A[j]) == pref.evaluate(L(a), pow(w, int(j), p), p)
    assert L(poly.ntt(A, p, inverse=True)) == L(a)


@pytest.mark.parametrize("p", [2**64 - 59, 10007, 3])
def test_ntt_refuses_primes_without_roots(p):
    with pytest.raises(ValueError, match="no native NTT"):
        poly.ntt(np.zeros(4, dtype=np.uint64), p)


# ------------------------------------------------------------ bad input
POLY_CALLS = {
    "mul": lambda a, p: poly.mul(a, a, p),
    "divrem": lambda a, p: poly.divrem(a, np.ones(1, np.uint64), p),
    "gcd": lambda a, p: poly.gcd(a, a, p),
    "inv_series": lambda a, p: poly.inv_series(a, 3, p),
    "eval": lambda a, p: poly.eval(a, np.ones(1, np.uint64), p),
    "interpolate": lambda a, p: poly.interpolate(a, np.ones(np.size(a), np.uint64), p),
    "from_roots": lambda a, p: poly.from_roots(a, p),
    "roots": lambda a, p: poly.roots(a, p),
    "rational_reconstruct": lambda a, p: poly.rational_reconstruct(a, p),
    "laurent_tail": lambda a, p: poly.laurent_tail(np.zeros(0, np.uint64), a, 3, p),
    "rs_decode": lambda a, p: poly.rs_decode(a, np.ones(np.size(a), np.uint64), 1, p),
    "lagrange_matrix": lambda a, p: poly.lagrange_matrix(a, p),
    "vandermonde": lambda a, p: poly.vandermonde(a, 2, p),
    "ntt": lambda a, p: poly.ntt(a, p),
}


@pytest.mark.parametrize("name", sorted(POLY_CALLS))
@pytest.mark.parametrize("bad, exc", [
    ([1, 2], TypeError), (np.array([1, 2], dtype=np.int64), TypeError), (np.array([1.0, 2.0]), TypeError),
    (np.array([1, 2], dtype=np.uint32), TypeError), (np.array([1, 17], dtype=np.uint64), ValueError),
    (np.array([[1, 2]] * 3, dtype=np.uint64)[None], ValueError), (np.uint64(3), TypeError),
    (np.array(3, dtype=np.uint64), ValueError),
])
def test_poly_bad_arrays_refused(name, bad, exc):
    with pytest.raises(exc):
        POLY_CALLS[name](bad, 17)


@pytest.mark.parametrize("name", sorted(POLY_CALLS))
@pytest.mark.parametrize("p, exc", [(15, ValueError), (1, ValueError), (2**64 + 13, ValueError),
                                    (17.0, TypeError), ("17", TypeError), (True, TypeError)])
def test_poly_bad_modulus_refused(name, p, exc):
    with pytest.raises(exc):
        POLY_CALLS[name](np.array([1, 2, 4, 8], dtype=np.uint64), p)


def test_poly_noncontiguous_inputs():
    p = GOLD
    rng = np.random.default_rng(1)
    big = rand(rng, p, 400)
    a, b = big[::2], big[1::3]
    assert L(poly.mul(a, b, p)) == pref.mul(L(a), L(b), p)
    assert L(poly.gcd(a, b, p)) == ref_gcd(L(a), L(b), p)
    q, r = poly.divrem(a, b[:60], p)
    assert (L(q), L(r)) == tuple(pref.divrem(L(a), L(b[:60]), p))
    F = rand(rng, p, 20 * 40).reshape(20, 40).T          # Fortran order
    assert L(poly.eval(F, a[:5], p).reshape(-1)) == [pref.evaluate(L(row), x, p) for row in F for x in L(a[:5])]


# ============================================================ field
def _arr(rng, p, shape, layout):
    base = rand(rng, p, int(np.prod(shape)) * 2).reshape(*shape[:-1], 2 * shape[-1]) if shape else None
    if not shape:
        return np.array(rand(rng, p, 1)[0], dtype=np.uint64)
    if layout == "strided":
        return base[..., ::2]
    if layout == "fortran" and len(shape) == 2:
        return np.asfortranarray(base[..., : shape[-1]])
    return np.ascontiguousarray(base[..., : shape[-1]])


SHAPES = st.sampled_from([(), (0,), (1,), (2,), (7,), (31,), (33,), (64,), (257,), (0, 3), (3, 0), (1, 1),
                          (4, 5), (3, 2, 5)])
LAYOUTS = st.sampled_from(["c", "strided", "fortran"])


@FIXTURE
@given(p=st.sampled_from(PRIMES + [2**31 - 1, 2**61 - 1]), shape=SHAPES, layout=LAYOUTS, seed=SEEDS)
def test_field_elementwise_matches_reference(backend, p, shape, layout, seed):
    rng = np.random.default_rng(seed)
    a, b = _arr(rng, p, shape, layout), _arr(rng, p, shape, layout)
    fa, fb = L(a.reshape(-1)), L(b.reshape(-1))
    for name in ("add", "sub", "mul"):
        got = getattr(field, name)(a, b, p)
        assert got.shape == a.shape and got.dtype == np.uint64
        assert L(got.reshape(-1)) == getattr(fref, name)(fa, fb, p)
        c = int(rng.integers(0, min(p, 2**62)))
        got = getattr(field, name)(a, c, p)
        assert got.shape == a.shape
        assert L(got.reshape(-1)) == getattr(fref, name)(fa, [c] * len(fa), p)
    assert L(field.neg(a, p).reshape(-1)) == fref.neg(fa, p)
    assert L(field.reduce(a, p).reshape(-1)) == fa
    e = _arr(rng, 2**64 - 59, shape, layout)
    assert L(field.pow(a, e, p).reshape(-1)) == fref.pow(fa, L(e.reshape(-1)), p)
    for k in (0, 1, 2, p - 1, p, 2**70 + 3):
        assert L(field.pow(a, k, p).reshape(-1)) == [pow(x, k, p) for x in fa]
    nz = field.add(field.mul(a, 0, p), 1, p) if p == 2 else np.where(a == 0, np.uint64(1), a)
    fnz = L(nz.reshape(-1))
    assert L(field.inv(nz, p).reshape(-1)) == fref.inv(fnz, p)
    assert L(field.batch_inv(nz, p).reshape(-1)) == fref.inv(fnz, p)
    assert L(field.pow(nz, -3, p).reshape(-1)) == [pow(x, -3, p) for x in fnz]
    if 0 in fa:
        with pytest.raises(ValueError):
            field.batch_inv(a, p)
    if a.ndim:
        got = field.dot(a, b, p)
        want = [sum(int(x) * int(y) for x, y in zip(a[i], b[i])) % p for i in np.ndindex(a.shape[:-1])]
        if a.ndim == 1:
            assert isinstance(got, int) and got == want[0]
        else:
            assert got.shape == a.shape[:-1] and L(got.reshape(-1)) == want


@FAST
@given(p=st.sampled_from(PRIMES), shape=SHAPES, seed=SEEDS)
def test_field_reduce_and_asarray(p, shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**64 - 1, size=shape, dtype=np.uint64, endpoint=True)
    assert L(field.reduce(x, p).reshape(-1)) == [v % p for v in L(x.reshape(-1))]
    vals = [int(v) - 2**63 + (int(rng.integers(0, 2**32)) << 70) for v in x.reshape(-1)]
    got = field.asarray(np.array(vals, dtype=object).reshape(shape), p)
    assert got.shape == shape and L(got.reshape(-1)) == [v % p for v in vals]
    assert L(field.asarray(x, p).reshape(-1)) == [v % p for v in L(x.reshape(-1))]


FIELD_CALLS = {
    "add": lambda a, p: field.add(a, a, p), "sub": lambda a, p: field.sub(a, a, p),
    "mul": lambda a, p: field.mul(a, a, p), "neg": field.neg, "inv": field.inv, "batch_inv": field.batch_inv,
    "pow": lambda a, p: field.pow(a, 3, p), "dot": lambda a, p: field.dot(a, a, p),
    "add_b": lambda a, p: field.add(np.ones(2, np.uint64), a, p),
    "mul_b": lambda a, p: field.mul(np.ones(2, np.uint64), a, p),
    "pow_e": lambda a, p: field.pow(np.ones(2, np.uint64), a, p),
    "matmul_A": lambda a, p: linalg.matmul(a, np.ones((2, 2), np.uint64), p),
    "matmul_B": lambda a, p: linalg.matmul(np.ones((2, 2), np.uint64), a, p),
}


@pytest.mark.parametrize("name", sorted(FIELD_CALLS))
@pytest.mark.parametrize("bad", [[1, 2], np.array([1, 2], dtype=np.int64), np.array([1.0, 2.0]),
                                 np.array([1, 2], dtype=np.uint32), np.array([1, 2], dtype=object), "ab", None,
                                 np.array([[1, 2], [3, 4]], dtype=np.int64)])
def test_field_wrong_types_refused(name, bad):
    with pytest.raises(TypeError):
        FIELD_CALLS[name](bad, 17)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "neg", "inv", "batch_inv", "pow", "dot", "add_b", "mul_b",
                                  "matmul_A", "matmul_B"])
def test_field_out_of_range_refused(name):
    with pytest.raises(ValueError):
        FIELD_CALLS[name](np.array([[1, 17], [2, 3]], dtype=np.uint64), 17)


@pytest.mark.parametrize("call", [
    lambda: field.add(np.ones(2, np.uint64), 17, 17), lambda: field.add(np.ones(2, np.uint64), -1, 17),
    lambda: field.mul(np.ones(2, np.uint64), 2**64, 17), lambda: field.inv(17, 17), lambda: field.inv(0, 17),
    lambda: field.inv(-1, 17), lambda: field.add(np.ones(2, np.uint64), np.ones(3, np.uint64), 17),
    lambda: field.dot(np.ones(2, np.uint64), np.ones(3, np.uint64), 17),
    lambda: field.dot(np.array(1, np.uint64), np.array(1, np.uint64), 17),
    lambda: field.pow(np.zeros(2, np.uint64), -1, 17),
    lambda: field.pow(np.ones(2, np.uint64), np.ones(3, np.uint64), 17),
    lambda: linalg.matmul(np.ones((2, 3), np.uint64), np.ones((2, 3), np.uint64), 17),
    lambda: linalg.matmul(np.ones(3, np.uint64), np.ones((3, 2), np.uint64), 17),
    lambda: field.add(np.ones(2, np.uint64), np.ones(2, np.uint64), 16),
])
def test_field_bad_values_refused(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("call", [
    lambda: field.add(np.ones(2, np.uint64), True, 17), lambda: field.add(np.ones(2, np.uint64), 1.0, 17),
    lambda: field.mul(np.ones(2, np.uint64), np.uint64(1) * 1.5, 17), lambda: field.inv(1.0, 17),
    lambda: field.pow(np.ones(2, np.uint64), 1.5, 17), lambda: field.asarray([1.5], 17),
    lambda: field.asarray(["a"], 17), lambda: field.reduce([1, 2], 17),
    lambda: field.add(np.ones(2, np.uint64), np.ones(2, np.uint64), 17.0),
    lambda: linalg.matmul(np.ones((2, 2), np.uint64), np.ones((2, 2), np.uint64), 17, threads=1.5),
])
def test_field_bad_types_refused(call):
    with pytest.raises(TypeError):
        call()


MAT_SHAPES = st.sampled_from([(0, 0, 0), (0, 3, 2), (2, 0, 3), (3, 2, 0), (1, 1, 1), (1, 7, 1), (1, 1, 9),
                              (9, 1, 1), (1, 64, 1), (2, 3, 4), (17, 5, 3), (3, 5, 17), (65, 9, 2), (2, 9, 65),
                              (33, 33, 33), (200, 3, 2), (5, 130, 7)])


@FIXTURE
@given(p=st.sampled_from(PRIMES + [2**52 - 47, 2**52 + 21, 2**50 - 27]), shape=MAT_SHAPES,
       layout=st.sampled_from(["c", "strided", "fortran", "transposed"]), threads=st.sampled_from([None, 1, 2]),
       use_out=st.booleans(), seed=SEEDS)
def test_matmul_matches_reference(backend, p, shape, layout, threads, use_out, seed):
    m, k, n = shape
    rng = np.random.default_rng(seed)

    def mat(r, c):
        x = rand(rng, p, r * c * 2).reshape(r, 2 * c)
        if layout == "strided":
            return x[:, ::2]
        if layout == "fortran":
            return np.asfortranarray(x[:, :c])
        if layout == "transposed":
            return np.ascontiguousarray(x[:, :c]).T.copy().T
        return np.ascontiguousarray(x[:, :c])

    A, B = mat(m, k), mat(k, n)
    out = np.full((m, n), 7, dtype=np.uint64) if use_out else None
    C = linalg.matmul(A, B, p, threads=threads, out=out)
    assert C.shape == (m, n) and C.dtype == np.uint64
    want = fref.matmul(A.tolist(), B.tolist(), p) if k else [[0] * n for _ in range(m)]
    assert C.tolist() == want
    if use_out:
        assert C is out


# ============================================================ heavier variants
@pytest.mark.slow
@SLOW
@given(p=st.sampled_from(BIG_PRIMES), la=st.integers(0, 700), lb=st.integers(1, 700), seed=SEEDS)
def test_slow_gcd_divrem_any_lengths(p, la, lb, seed):
    rng = np.random.default_rng(seed)
    g = make_poly(rng, p, int(rng.integers(1, 50)))
    a = np.array(pref.mul(L(g), L(make_poly(rng, p, la)), p), dtype=np.uint64)
    b = np.array(pref.mul(L(g), L(make_poly(rng, p, lb)), p), dtype=np.uint64)
    assert L(poly.gcd(a, b, p)) == ref_gcd(L(a), L(b), p)
    q, r = poly.divrem(a, b, p)
    assert (L(q), L(r)) == tuple(pref.divrem(L(a), L(b), p))


@pytest.mark.slow
@SLOW
@given(p=st.sampled_from(PRIMES), n=st.integers(0, 600), seed=SEEDS)
def test_slow_from_roots_eval_interpolate(p, n, seed):
    n = min(n, p)
    rng = np.random.default_rng(seed)
    xs = distinct_points(rng, p, n)
    f = poly.from_roots(xs, p)
    assert L(f) == pref.from_roots(L(xs), p)
    assert not poly.eval(f, xs, p).any()
    ys = rand(rng, p, n)
    c = poly.interpolate(xs, ys, p)
    assert L(poly.eval(c, xs, p)) == L(ys)
    assert [pref.evaluate(L(c), x, p) for x in L(xs[:20])] == L(ys[:20])


@FAST
@given(p=st.sampled_from(PRIMES), n=st.sampled_from(SMALL_LENS + THRESH_LENS + [300, 400]),
       frac=st.floats(0, 1), top_zeros=st.sampled_from([0, 0, 1, 5, 70]), seed=SEEDS)
def test_rational_reconstruct_matches_euclid(p, n, frac, top_zeros, seed):
    """Arbitrary terms and num_len: the answer is the reference Euclid's
    remainder and cofactor at the first degree below num_len, normalised,
    and ValueError exactly when that cofactor vanishes at 0."""
    rng = np.random.default_rng(seed)
    s = rand(rng, p, n)
    s[max(0, n - top_zeros):] = 0
    num_len = int(round(frac * n))
    r1, t1 = pref.remainder_sequence([0] * n + [1], L(s), p, num_len)
    if not pref.trim(L(s)):
        r1, t1 = [], [1]
    if not t1 or t1[0] == 0:
        with pytest.raises(ValueError):
            poly.rational_reconstruct(s, p, num_len=num_len)
        return
    U, V = poly.rational_reconstruct(s, p, num_len=num_len)
    c = pow(t1[0], p - 2, p)
    assert L(U) == pref.trim([x * c % p for x in r1]) and L(V) == pref.trim([x * c % p for x in t1])


def _euclid_by_divrem(a, b, p, stop_deg=None):
    """Classical Euclid driven by poly.divrem (itself checked against the reference
    above): an independent route to the half-GCD's answers at sizes where the
    pure-Python reference is too slow.  Returns (r1, t1) like
    reference.remainder_sequence, or (monic gcd, None) without stop_deg."""
    r0, r1 = poly.divrem(a, np.ones(1, np.uint64), p)[0], poly.divrem(b, np.ones(1, np.uint64), p)[0]
    t0, t1 = np.zeros(0, np.uint64), np.ones(1, np.uint64)
    stop = 0 if stop_deg is None else stop_deg
    while len(r1) - 1 >= stop:
        q, r = poly.divrem(r0, r1, p)
        r0, r1 = r1, r
        if stop_deg is not None:
            qt = poly.mul(q, t1, p)
            n = max(len(t0), len(qt))
            t0, t1 = t1, field.sub(np.pad(t0, (0, n - len(t0))), np.pad(qt, (0, n - len(qt))), p)
            t1 = t1[: len(pref.trim(L(t1)))]
    if stop_deg is not None:
        return r1, t1
    if len(r0) == 0:
        return r0, None
    return field.mul(r0, pow(int(r0[-1]), p - 2, p), p), None


@pytest.mark.slow
@SLOW
@given(p=st.sampled_from(PRIMES), lg=st.sampled_from([0, 1, 2, 100, 129, 700, 1500]),
       lu=st.integers(0, 3000), lv=st.integers(0, 3000), equal=st.booleans(), seed=SEEDS)
def test_slow_gcd_large_against_euclid(p, lg, lu, lv, equal, seed):
    """Deep half-GCD recursions (native and Python, every kind of prime)."""
    rng = np.random.default_rng(seed)
    if equal:
        lv = lu
    g = make_poly(rng, p, lg)
    a = poly.mul(g, make_poly(rng, p, lu), p)
    b = poly.mul(g, make_poly(rng, p, lv), p)
    assert L(poly.gcd(a, b, p)) == L(_euclid_by_divrem(a, b, p)[0])


@pytest.mark.slow
@SLOW
@given(p=st.sampled_from(PRIMES), n=st.integers(0, 2500), frac=st.floats(0, 1), struct=st.booleans(), seed=SEEDS)
def test_slow_rational_reconstruct_large_against_euclid(p, n, frac, struct, seed):
    rng = np.random.default_rng(seed)
    num_len = int(round(frac * n))
    if struct and n:                        # s = U / V mod x^n with small degrees: the SecEA shape
        dv = int(rng.integers(1, n // 2 + 2))
        V = make_poly(rng, p, dv)
        V[0] = 1
        U = make_poly(rng, p, max(0, min(num_len, n - dv)), nonzero_lead=False)
        s = poly.mul(U, poly.inv_series(V, n, p), p)[:n] if len(U) else np.zeros(n, np.uint64)
        s = np.concatenate([s, np.zeros(n - len(s), np.uint64)])
    else:
        s = rand(rng, p, n)
    xn = np.zeros(n + 1, np.uint64)
    xn[n] = 1
    if not s.any():
        return
    r1, t1 = _euclid_by_divrem(xn, s, p, num_len)
    if len(t1) == 0 or t1[0] == 0:
        with pytest.raises(ValueError):
            poly.rational_reconstruct(s, p, num_len=num_len)
        return
    U2, V2 = poly.rational_reconstruct(s, p, num_len=num_len)
    c = pow(int(t1[0]), p - 2, p)
    assert L(U2) == L(field.mul(r1, c, p)) and L(V2) == L(field.mul(t1, c, p))


# ---------------------------------------------------------------- any tuning, same answers
TUNING_NAMES = ["POLY_MUL_CLASSICAL_MAX", "POLY_MUL_CLASSICAL_MAX_BATCH", "POLY_DIV_CLASSICAL_MAX",
                "POLY_TREE_NTT_MIN", "POLY_EVAL_LEAF", "POLY_LCC_MAX_POINTS", "POLY_HORNER_MAX_WORK",
                "POLY_EVAL_HORNER_MAX_LEN",
                "HGCD_CLASSICAL_MAX", "HGCD_NATIVE_MIN", "HGCD_NATIVE_BASE", "ROOTS_SMALL_FIELD", "ROOTS_BRUTE_MAX",
                "ROOTS_CLASSICAL_MAX", "ROOTS_GRAEFFE_MIN", "ROOTS_GRAEFFE_POINTS_PER_ROOT"]
TUNINGS = st.fixed_dictionaries({n: st.sampled_from([None, 0, 1, 2, 3, 4, 8, 16]) for n in TUNING_NAMES})


TUNED_INPUTS = dict(tune=TUNINGS, p=st.sampled_from(PRIMES), la=st.integers(0, 60), lb=st.integers(0, 60),
                    npts=st.integers(0, 80), seed=SEEDS)


@settings(max_examples=int(8 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TUNED_INPUTS)
def test_any_tuning_gives_the_same_results(tune, p, la, lb, npts, seed):
    _check_any_tuning(tune, p, la, lb, npts, seed)


@pytest.mark.slow
@settings(max_examples=int(300 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TUNED_INPUTS)
def test_slow_any_tuning_gives_the_same_results(tune, p, la, lb, npts, seed):
    _check_any_tuning(tune, p, la, lb, npts, seed)


def _check_any_tuning(tune, p, la, lb, npts, seed):
    """tuning.py promises its constants never change a result: tiny crossovers
    send small inputs down the NTT, tree and recursive routes (the shapes a
    sweep reaches; mod 2 it found the length-1 NTT plan bug)."""
    before = {n: getattr(tuning, n) for n in TUNING_NAMES}
    try:
        for n, v in tune.items():
            if v is not None:
                setattr(tuning, n, v)
        rng = np.random.default_rng(seed)
        a, b = make_poly(rng, p, la, int(rng.integers(0, 3))), make_poly(rng, p, lb)
        assert pref.trim(poly.mul(a, b, p)) == pref.trim(pref.mul(L(a), L(b), p))
        if lb:
            q, r = poly.divrem(a, b, p)
            assert (L(q), L(r)) == tuple(pref.divrem(L(a), L(b), p))
        g = make_poly(rng, p, int(rng.integers(0, 10)))
        A = np.array(pref.mul(L(g), L(a), p), np.uint64)
        B = np.array(pref.mul(L(g), L(b), p), np.uint64)
        assert L(poly.gcd(A, B, p)) == ref_gcd(L(A), L(B), p)
        if la and a[0]:
            assert L(poly.inv_series(a, lb, p)) == (pref.inv_series(L(a), lb, p) if lb else [])
        xs = rand(rng, p, npts)
        F = rand(rng, p, 3 * la).reshape(3, la)
        got = poly.eval(F, xs, p)
        assert all(L(got[i]) == [pref.evaluate(L(F[i]), x, p) for x in L(xs)] for i in range(3))
        m = min(p, npts)
        pts, ys = distinct_points(rng, p, m), rand(rng, p, m)
        assert [pref.evaluate(L(poly.interpolate(pts, ys, p)), x, p) for x in L(pts)] == L(ys)
        rs = xs.copy()
        if len(rs) > 2 and rng.random() < 0.5:
            rs[: len(rs) // 2] = rs[0]
        f = poly.from_roots(rs, p)
        assert L(f) == pref.from_roots(L(rs), p)
        assert L(poly.roots(f, p)) == sorted(set(L(rs)))
        s = rand(rng, p, npts)
        num_len = int(rng.integers(0, npts + 1))
        r1, t1 = pref.remainder_sequence([0] * npts + [1], L(s), p, num_len) if s.any() else ([], [1])
        if not t1 or t1[0] == 0:
            with pytest.raises(ValueError):
                poly.rational_reconstruct(s, p, num_len=num_len)
        else:
            U, V = poly.rational_reconstruct(s, p, num_len=num_len)
            c = pow(t1[0], p - 2, p)
            assert L(U) == pref.trim([x * c % p for x in r1]) and L(V) == pref.trim([x * c % p for x in t1])
    finally:
        for n, v in before.items():
            setattr(tuning, n, v)
