import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import secea_fast
from secea_fast import poly, tuning
from secea_fast.poly import reference as ref
from secea_fast.field import raw as fp_raw
from secea_fast.poly import _core, _euclid

from conftest import rand_elems

GL = secea_fast.GOLDILOCKS
EMB = secea_fast.EMBEDDING_PRIME
# native NTT primes, a prime with 2-adicity 16, and primes that need the CRT route
MUL_PRIMES = [GL, EMB, 998244353, 65537, 2**61 - 1, 2**64 - 59, 101]


def rnd(rng, p, n):
    return rand_elems(rng, p, n, edge=False)


@pytest.mark.parametrize("p", MUL_PRIMES)
@pytest.mark.parametrize("la, lb", [(1, 1), (3, 7), (48, 49), (49, 49), (100, 300), (1000, 777), (5000, 3)])
def test_mul_matches_reference(p, la, lb, backend):
    rng = np.random.default_rng(la * 31 + lb)
    a, b = rnd(rng, p, la), rnd(rng, p, lb)
    a[-1] = p - 1
    assert poly.mul(a, b, p).tolist() == ref.mul(a.tolist(), b.tolist(), p)


def test_mul_long_crt_route_beyond_two_adicity():
    p = 65537          # 2^16 | p - 1: a product of length > 2^16 needs the CRT route
    rng = np.random.default_rng(5)
    a, b = rnd(rng, p, 40000), rnd(rng, p, 40000)
    c = poly.mul(a, b, p)
    flint = pytest.importorskip("flint")
    assert c.tolist() == [int(x) for x in (flint.nmod_poly(a.tolist(), p) * flint.nmod_poly(b.tolist(), p)).coeffs()]


def test_mul_batched():
    p = GL
    rng = np.random.default_rng(1)
    A = rnd(rng, p, (5, 70))
    B = rnd(rng, p, (5, 60))
    C = poly.mul(A, B, p)
    assert [C[i].tolist() for i in range(5)] == [ref.mul(A[i].tolist(), B[i].tolist(), p) for i in range(5)]
    C1 = poly.mul(A, B[0], p)
    assert C1[3].tolist() == ref.mul(A[3].tolist(), B[0].tolist(), p)
    with pytest.raises(ValueError):
        poly.mul(A, B[:2], p)


@pytest.mark.parametrize("p", [GL, EMB, 998244353])
def test_ntt_round_trips(p):
    rng = np.random.default_rng(2)
    for logn in range(0, 17):
        n = 1 << logn
        if logn > _core.two_adicity(p):
            break
        a = rnd(rng, p, n)
        A = poly.ntt(a, p)
        assert poly.ntt(A, p, inverse=True).tolist() == a.tolist()
        if n <= 64:
            w = _core.root_of_unity(p, logn)
            assert A.tolist() == [ref.evaluate(a, pow(w, j, p), p) for j in range(n)]


@pytest.mark.parametrize("logn", [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17])
def test_ntt_any_primitive_root(logn, backend):
    """A plan accepts any primitive root: with w^k (k odd) the transform is the
    standard one permuted, A_k[j] = A[k j mod n].  This covers the kernels with
    run-time pass exponents (the standard root has compile-time ones) for every
    class of w^(n/64) = 2^e64, and the inverse with each of those roots."""
    p = GL
    n = 1 << logn
    a = rnd(np.random.default_rng(logn), p, n)
    w = _core.root_of_unity(p, logn)
    rev = _core.bitrev(logn)
    A = poly.ntt(a, p)
    j = np.arange(n)
    for k in (3, 5, 7, 9, 11, 13, 15, n - 1):
        pl = _core.ffi.gc(_core.lib.secea_ntt_plan_new(p, pow(w, k, p), logn), _core.lib.secea_ntt_plan_free)
        buf = a.copy()
        _core.lib.secea_ntt_forward(pl, _core.u64ptr(buf), 1)
        assert buf[rev].tolist() == A[(k * j) % n].tolist(), k
        _core.lib.secea_ntt_inverse(pl, _core.u64ptr(buf), 1)
        assert buf.tolist() == a.tolist(), k


@pytest.mark.parametrize("p", [GL, EMB, 2**61 - 1])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 64, 65, 300])
def test_from_roots(p, n):
    rng = np.random.default_rng(n)
    r = rnd(rng, p, n)
    if n > 3:
        r[1] = r[0]              # repeated root
    assert poly.from_roots(r, p).tolist() == ref.from_roots(r.tolist(), p)


@pytest.mark.parametrize("p", [GL, EMB, 2**64 - 59])
@pytest.mark.parametrize("n", [1, 2, 5, 64, 65, 100, 777])
def test_eval_interpolate_round_trip(p, n, backend):
    rng = np.random.default_rng(n + 7)
    xs = np.unique(rnd(rng, p, n + 10))[:n]
    rng.shuffle(xs)
    f = rnd(rng, p, n)
    ys = poly.eval(f, xs, p)
    assert ys.tolist() == [ref.evaluate(f, x, p) for x in xs]
    assert poly.interpolate(xs, ys, p).tolist() == f.tolist()
    # batched over a leading axis
    F = rnd(rng, p, (3, n))
    Y = poly.eval(F, xs, p)
    assert Y[2].tolist() == [ref.evaluate(F[2], x, p) for x in xs]
    assert (poly.interpolate(xs, Y, p) == F).all()


@pytest.mark.parametrize("p", [GL, EMB, 2**63 - 25, 2**64 - 59])       # each reduction of Horner's chains
def test_eval_every_route_matches_the_reference(p):
    """Horner (one row, or little work in all; four points per pass plus a
    tail), the Vandermonde product and the remainder tree: every row, every
    point; and the Vandermonde matrix built by doubling."""
    rng = np.random.default_rng(p % 1000)
    for rows, npts, k in [(1, 1, 1), (1, 3, 5), (1, 4, 70), (1, 7, 9), (1, 64, 300), (3, 5, 7), (40, 7, 70),
                          (300, 9, 33), (2, 65, 4)]:
        F = rnd(rng, p, (rows, k))
        F[0, -1] = p - 1
        xs = np.unique(rnd(rng, p, npts + 5))[:npts]
        xs[0] = p - 1
        got = poly.eval(F, xs, p)
        assert got.tolist() == [[ref.evaluate(f, x, p) for x in xs] for f in F], (rows, npts, k)
        assert poly.vandermonde(xs, k, p).tolist() == [[pow(int(x), i, p) for i in range(k)] for x in xs]


def test_eval_long_polynomial_few_points_and_many_points():
    p = GL
    rng = np.random.default_rng(11)
    f = rnd(rng, p, 3000)
    xs = rnd(rng, p, 5)
    assert poly.eval(f, xs, p).tolist() == [ref.evaluate(f, x, p) for x in xs]
    xs2 = np.unique(rnd(rng, p, 1500))
    ys = poly.eval(f, xs2, p)
    assert ys[:20].tolist() == [ref.evaluate(f, x, p) for x in xs2[:20]]


def test_interpolation_small_reference():
    p = 10007
    xs = np.array([1, 5, 9, 20, 77], dtype=np.uint64)
    ys = np.array([3, 1, 4, 1, 5], dtype=np.uint64)
    assert poly.interpolate(xs, ys, p).tolist() == ref.interpolate(xs, ys, p)
    assert (poly.lagrange_matrix(xs, p) @ np.eye(5, dtype=np.uint64)).shape == (5, 5)


def test_duplicate_points_raise():
    xs = np.array([1, 2, 2], dtype=np.uint64)
    with pytest.raises(ValueError, match="duplicate"):
        poly.interpolate(xs, xs, 101)
    with pytest.raises(ValueError, match="duplicate"):
        poly.rs_decode(xs, xs, 1, 101)


@pytest.mark.parametrize("p", [GL, EMB, 2**61 - 1])
@pytest.mark.parametrize("n", [1, 2, 10, 100, 1000])
def test_inv_series(p, n):
    rng = np.random.default_rng(n)
    f = rnd(rng, p, n + 3)
    f[0] = 7
    g = poly.inv_series(f, n, p)
    assert g.tolist() == ref.inv_series(f.tolist(), n, p)
    with pytest.raises(ValueError, match="nonzero"):
        poly.inv_series(np.array([0, 1], dtype=np.uint64), 3, p)


@pytest.mark.parametrize("p", [GL, 2**61 - 1])
@pytest.mark.parametrize("la, lb", [(5, 3), (100, 60), (200, 2), (2000, 700), (3000, 1400)])
def test_divrem(p, la, lb):
    rng = np.random.default_rng(la)
    a, b = rnd(rng, p, la), rnd(rng, p, lb)
    b[-1] = 3
    q, r = poly.divrem(a, b, p)
    q_ref, r_ref = ref.divrem(a.tolist(), b.tolist(), p)
    assert q.tolist() == q_ref and r.tolist() == r_ref


@pytest.mark.parametrize("p", [GL, 10007])
# (n = 1500: 10-13 s each against the pure-Python Euclid, the default run's slowest tests)
@pytest.mark.parametrize("n", [20, 130, 600, pytest.param(1500, marks=pytest.mark.slow)])
def test_reduce_below_matches_classical_euclid(p, n):
    rng = np.random.default_rng(n)
    a, b = rnd(rng, p, n + 1), rnd(rng, p, n)
    a[-1] = 1
    b[-1] = 5
    for d in sorted({0, 1, n // 3, n // 2, (2 * n) // 3, n - 1}):
        M, r0, r1 = _euclid.reduce_below(_core.trim(a), _core.trim(b), d, p)
        r_ref, t_ref = ref.remainder_sequence(a.tolist(), b.tolist(), p, d)
        assert r1.tolist() == r_ref
        assert M[1][1].tolist() == t_ref
        # the matrix really maps (a, b) to (r0, r1)
        assert _euclid.apply(M, _core.trim(a), _core.trim(b), p)[1].tolist() == r1.tolist()


def test_reduce_below_non_normal_sequences():
    """Quotients of degree > 1 (a, b built from a chosen remainder sequence)."""
    p = 10007
    rng = np.random.default_rng(3)
    r_prev, r = rnd(rng, p, 40), rnd(rng, p, 35)
    r_prev[-1] = r[-1] = 1
    for _ in range(12):      # walk the sequence backwards with random quotients of degree 1..9
        q = rnd(rng, p, int(rng.integers(2, 11)))
        q[-1] = 1
        r_prev, r = _core.trim(_core.add(_core.mul(q, r_prev, p), r, p)), r_prev
    a, b = r_prev, r
    for d in range(0, len(a), max(1, len(a) // 25)):
        _, _, r1 = _euclid.reduce_below(a, b, d, p)
        assert r1.tolist() == ref.remainder_sequence(a.tolist(), b.tolist(), p, d)[0]


@pytest.mark.parametrize("p", [GL, EMB])
@pytest.mark.parametrize("n", [4, 50, 300, 2000])
def test_rational_reconstruction_recovers_random_fraction(p, n):
    rng = np.random.default_rng(n)
    h = n // 2
    V = rnd(rng, p, h + 1)
    V[0] = 1
    U = rnd(rng, p, h)
    S = _core.mul_trunc(U, _core.inv_series(V, n, p), n, p)
    S = np.concatenate([S, np.zeros(n - len(S), dtype=np.uint64)])
    U2, V2 = poly.rational_reconstruct(S, p)
    # the reconstruction is the reduced fraction: equal to U/V after dividing out gcd
    g = _euclid.gcd(U, V, p)
    Ur = _core.trim(_core.divrem(_core.trim(U), g, p)[0]) if len(g) > 1 else _core.trim(U)
    Vr = _core.trim(_core.divrem(_core.trim(V), g, p)[0]) if len(g) > 1 else _core.trim(V)
    c = pow(int(Vr[0]), p - 2, p)
    assert V2.tolist() == fp_raw.scale(Vr, c, p).tolist()
    assert U2.tolist() == _core.trim(fp_raw.scale(Ur, c, p)).tolist()


@pytest.mark.parametrize("p", [GL])
def test_private_set_union_math(p):
    """SecEA (Tang, Zhu, Li, Zhang, Sun, 2022), Sec. 4.1, without the masks: sum of
    Laurent tails -> u/L -> roots = union."""
    rng = np.random.default_rng(9)
    N, k = 4, 30
    universe = rnd(rng, p, 200)
    sets = [np.unique(rng.choice(universe, k, replace=False)) for _ in range(N)]
    total = np.zeros(2 * N * k, dtype=np.uint64)
    for s in sets:
        f = poly.from_roots(s, p)
        r = rnd(rng, p, len(s))          # random r_n of degree < k
        total = fp_raw.add(total, poly.laurent_tail(r, f, 2 * N * k, p), p)
    u, L = poly.rational_reconstruct(total, p, laurent=True)
    union = np.unique(np.concatenate(sets))
    assert L.tolist() == poly.from_roots(union, p).tolist()
    assert poly.roots(L, p).tolist() == union.tolist()


@pytest.mark.parametrize("p", [GL, EMB, 2**61 - 1, 10007, 3, 2])
@pytest.mark.parametrize("n", [1, 2, 3, 10, 200])
def test_roots_of_split_polynomials_with_repeats(p, n):
    rng = np.random.default_rng(n * 3 + p % 97)
    rs = rnd(rng, p, n)
    if n > 2:
        rs[1] = rs[0]
        rs[2] = 0
    f = poly.from_roots(rs, p)
    # times a factor without roots: x^2 - c for a non-residue c (p odd)
    if p > 2:
        c = next(c for c in range(2, p) if pow(c, (p - 1) // 2, p) == p - 1)
        f = poly.mul(f, np.array([(p - c) % p, 0, 1], dtype=np.uint64), p)
    got = poly.roots(f, p)
    assert got.tolist() == sorted(set(int(x) for x in rs))
    if p < 20000:
        assert got.tolist() == ref.roots_bruteforce(f.tolist(), p)


def test_roots_against_flint():
    flint = pytest.importorskip("flint")
    p = GL
    rng = np.random.default_rng(4)
    rs = rnd(rng, p, 300)
    f = poly.from_roots(rs, p)
    fl = flint.nmod_poly(f.tolist(), p)
    assert sorted(int(r) for r, _ in fl.roots()) == poly.roots(f, p).tolist()


# ---- tangent Graeffe root finding (Goldilocks) --------------------------------
from secea_fast.poly import _graeffe, _roots  # noqa: E402


@pytest.mark.parametrize("logd", [1, 2, 3, 6, 11])
def test_graeffe_kernels_match_reference_twins(logd, backend):
    rng = np.random.default_rng(logd)
    pn = _graeffe._Plan(logd)
    a, b = rnd(rng, GL, pn.D), rnd(rng, GL, pn.D)
    for r in _graeffe.ODD_ORDERS:
        want = _graeffe.graeffe_odd_ref(a.copy(), b.copy(), r, pn)
        got = _graeffe.graeffe_odd(a.copy(), b.copy(), r, pn)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    for steps in (1, 3):
        want = _graeffe.graeffe_binary_ref(a.copy(), b.copy(), steps, pn)
        got = _graeffe.graeffe_binary(a.copy(), b.copy(), steps, pn)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@pytest.mark.parametrize("orders", [(3,), (257,), (2,), (2, 2, 5), (17, 2, 3)])
def test_tangent_graeffe_maps_roots_and_tangents(orders):
    """A + eps B = f(x) + eps f'(x) has roots alpha - eps; after transforms of
    total order m, A is (up to its leading coefficient) prod (y - alpha^m) and
    B(alpha^m) = m alpha^(m-1) A'(alpha^m): what recovery (*) relies on."""
    rng = np.random.default_rng(sum(orders))
    alphas = rnd(rng, GL, 9)
    f = poly.from_roots(alphas, GL)
    pn = _graeffe._Plan(4)
    a = np.zeros(pn.D, dtype=np.uint64)
    b = np.zeros(pn.D, dtype=np.uint64)
    a[:10] = f
    b[:9] = _core.derivative(f, GL)
    m = 1
    for r in orders:
        a, b = (_graeffe.graeffe_binary(a, b, 1, pn) if r == 2 else _graeffe.graeffe_odd(a, b, r, pn))
        m *= r
    a, b = _core.trim(a), _core.trim(b)
    omegas = np.array([pow(int(x), m, GL) for x in alphas], dtype=np.uint64)
    lead = int(a[-1])
    assert a.tolist() == fp_raw.scale(poly.from_roots(omegas, GL), lead, GL).tolist()
    da = _core.derivative(a, GL)
    for x, w in zip(alphas.tolist(), omegas.tolist()):
        at = np.array([w], dtype=np.uint64)
        assert int(_core.horner(b, at, GL)[0]) == m * pow(x, m - 1, GL) * int(_core.horner(da, at, GL)[0]) % GL


def test_taylor_shift_and_rader_evaluation():
    rng = np.random.default_rng(3)
    f = rnd(rng, GL, 70000)                      # longer than 65537: folded
    g = _graeffe.taylor_shift(f[:300], 123456789)
    xs = rnd(rng, GL, 5)
    assert _core.horner(g, xs, GL).tolist() == _core.horner(f[:300], _core.add(xs, np.full(5, 123456789, dtype=np.uint64), GL), GL).tolist()
    rad = _graeffe._rader(1)
    vals = rad.evaluate(f, f[:10])
    for c, k in [(0, 0), (0, 1), (1, 0), (1, 65536), (0, 4242)]:
        x = int(rad.point(np.array([c]), np.array([k]))[0])
        assert pow(x, rad.s, GL) == 1
        assert int(vals[0, c, k]) == int(_core.horner(f, np.array([x], dtype=np.uint64), GL)[0])
        assert int(vals[1, c, k]) == int(_core.horner(f[:10], np.array([x], dtype=np.uint64), GL)[0])


def test_graeffe_round_collisions_and_shift_at_a_root():
    """Roots with (alpha - tau)^m = (beta - tau)^m collide and are reported as a
    collision, not as wrong roots; a shift tau that is itself a root is found."""
    rng = np.random.default_rng(8)
    others = rnd(rng, GL, 200)
    tau = 987654321
    j = _graeffe._choose_j(203)
    m = (GL - 1) // (_graeffe.Q << j)
    zeta_m = pow(_graeffe.GENERATOR, (GL - 1) // m, GL)
    alpha = 5555
    beta = (tau + zeta_m * (alpha - tau)) % GL
    f = poly.from_roots(np.concatenate([others, np.array([alpha, beta, tau], dtype=np.uint64)]), GL)
    found, collided = _graeffe.graeffe_round(f, tau=tau)
    assert collided == 1
    assert sorted(found.tolist()) == sorted(others.tolist() + [tau])
    assert poly.roots(f, GL).tolist() == sorted(others.tolist() + [alpha, beta, tau])


@pytest.mark.parametrize("n", [65, 300, 3000])
def test_graeffe_roots_match_cantor_zassenhaus_on_random_polynomials(n):
    """Random (mostly non-split) polynomials, split ones with repeated roots and
    a factor without roots: the Graeffe route and Cantor-Zassenhaus agree."""
    rng = np.random.default_rng(n)
    f = np.concatenate([rnd(rng, GL, n), np.array([1], dtype=np.uint64)])
    assert poly.roots(f, GL).tolist() == sorted(_roots._roots_cz(f, GL))
    rs = rnd(rng, GL, n)
    rs[: n // 3] = rs[n // 3: 2 * (n // 3)]          # a third of the roots twice
    g = poly.mul(poly.from_roots(rs, GL), f, GL)
    want = sorted(set(rs.tolist()) | set(_roots._roots_cz(f, GL)))
    assert poly.roots(g, GL).tolist() == want


def test_roots_of_a_single_repeated_root_and_of_no_roots():
    f = poly.from_roots(np.full(100, 77, dtype=np.uint64), GL)
    assert poly.roots(f, GL).tolist() == [77]
    # (x^2 - c)^60 for a non-residue c: no root in F_p
    c = next(c for c in range(2, 100) if pow(c, (GL - 1) // 2, GL) == GL - 1)
    q = np.array([GL - c, 0, 1], dtype=np.uint64)
    g = np.array([1], dtype=np.uint64)
    for _ in range(60):
        g = poly.mul(g, q, GL)
    assert poly.roots(g, GL).tolist() == []


@pytest.mark.parametrize("N", [4, 7, 16, 64])
def test_rs_decode_every_error_erasure_pattern_in_bound(N):
    p = EMB
    rng = np.random.default_rng(N)
    xs = np.arange(1, N + 1, dtype=np.uint64)
    for k in sorted({1, N // 3 or 1, N // 2, N - 1}):
        msg = rnd(rng, p, k)
        code = poly.eval(msg, xs, p)
        for s in range(0, N - k + 1):
            for e in range(0, (N - k - s) // 2 + 1):
                pos = rng.permutation(N)
                err, era = np.sort(pos[:e]), pos[e:e + s]
                y = code.copy()
                y[err] = (y[err] + np.uint64(1) + rng.integers(0, 1000, e).astype(np.uint64)) % np.uint64(p)
                y[era] = 0
                dec, bad = poly.rs_decode(xs, y, k, p, erasures=era)
                assert dec.tolist() == msg.tolist(), (N, k, s, e)
                assert bad.tolist() == err.tolist()


def test_rs_decode_beyond_bound_raises_or_miscorrects_to_a_codeword():
    """Beyond 2e + s <= N - k the decoder raises DecodingError when it can tell;
    otherwise (the received word is within the radius of another codeword) it
    returns that codeword: it never returns a non-codeword."""
    p = 10007
    N, k = 16, 6
    rng = np.random.default_rng(0)
    xs = np.arange(1, N + 1, dtype=np.uint64)
    raised = 0
    for trial in range(60):
        msg = rnd(rng, p, k)
        y = poly.eval(msg, xs, p)
        e = (N - k) // 2 + 1 + trial % 3
        pos = rng.permutation(N)[:e]
        y[pos] = rnd(rng, p, e)
        try:
            dec, bad = poly.rs_decode(xs, y, k, p)
        except poly.DecodingError:
            raised += 1
            continue
        assert 2 * len(bad) <= N - k
        assert (poly.eval(dec, xs, p) != y).sum() == len(bad)
    assert raised > 40


def test_rs_decode_errors():
    xs = np.arange(1, 6, dtype=np.uint64)
    with pytest.raises(ValueError, match="k must be"):
        poly.rs_decode(xs, xs, 0, 101)
    with pytest.raises(poly.DecodingError):
        poly.rs_decode(xs, xs, 3, 101, erasures=[0, 1, 2])
    with pytest.raises(ValueError):
        poly.rs_decode(xs, xs, 3, 101, erasures=[7])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 10006), min_size=1, max_size=30),
       st.lists(st.integers(0, 10006), min_size=1, max_size=30))
def test_hypothesis_mul_divrem_gcd(a, b):
    p = 10007
    A, B = np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64)
    assert poly.mul(A, B, p).tolist() == ref.mul(a, b, p)
    if any(b):
        q, r = poly.divrem(A, B, p)
        assert (q.tolist(), r.tolist()) == ref.divrem(a, b, p)


@pytest.mark.parametrize("N, k", [(5, 3), (16, 6), (64, 20)])
def test_rs_decode_batched_rows(N, k):
    """Rows share the faulty positions (SecEA: a faulty client corrupts every coordinate)."""
    p = EMB
    rng = np.random.default_rng(N)
    xs = np.arange(1, N + 1, dtype=np.uint64)
    msgs = rnd(rng, p, (40, k))
    Y = poly.eval(msgs, xs, p)
    s = 1 if N > 5 else 0
    e = (N - k - s) // 2
    pos = rng.permutation(N)
    err, era = np.sort(pos[:e]), pos[e:e + s]
    Y[:, err] = (Y[:, err] + np.uint64(1)) % np.uint64(p)
    Y[:, era] = 0
    dec, bad = poly.rs_decode(xs, Y, k, p, erasures=era)
    assert (dec == msgs).all()
    assert set(err.tolist()) <= set(bad.tolist())
    # a row with an error of its own, elsewhere, still decodes (the per-row fallback)
    if e >= 1:
        Y2 = poly.eval(msgs, xs, p)
        Y2[:, err[:-1]] += np.uint64(1)
        Y2[7, err[-1]] += np.uint64(5)
        dec2, bad2 = poly.rs_decode(xs, Y2 % np.uint64(p), k, p)
        assert (dec2 == msgs).all() and bad2.tolist() == err.tolist()


# ---- native half-GCD (csrc/poly/hgcd.c) against the Python recursion --------------------
HGCD_PRIMES = [GL, EMB, 998244353]


@pytest.fixture
def python_hgcd(monkeypatch):
    """``_euclid.hgcd`` / ``reduce_below`` forced onto the Python recursion."""
    def run(fn, *args, **kw):
        with monkeypatch.context() as m:
            m.setattr(tuning, "HGCD_NATIVE_MIN", 10**18)
            return fn(*args, **kw)
    return run


def _as_lists(M):
    return [[M[i][j].tolist() for j in range(2)] for i in range(2)]


def _check_native_hgcd(a, b, p, python_hgcd, bases=(0,)):
    a, b = _core.trim(a), _core.trim(b)
    M_py = python_hgcd(_euclid.hgcd, a, b, p)
    c, d = _euclid.apply(M_py, a, b, p)
    for base in bases:
        M, r0, r1 = _euclid.hgcd_native(a, b, p, remainders=True, base_deg=base)
        assert _as_lists(M) == _as_lists(M_py), (len(a), base)
        assert r0.tolist() == c.tolist() and r1.tolist() == d.tolist()
        assert _as_lists(_euclid.hgcd_native(a, b, p, base_deg=base)) == _as_lists(M_py)
    m = len(a) // 2           # ceil(deg a / 2)
    assert len(c) - 1 >= m > len(d) - 1 or (len(b) - 1 < m and len(d) == len(b))


def _nonzero_elem(rng, p):
    return 1 + int(rng.integers(0, min(p - 1, 2**62)))


def _sequence_pair(rng, p, n, qdeg_max):
    """(a, b) with deg a ~ n whose remainder sequence has quotients of degree 1..qdeg_max."""
    r_prev, r = rnd(rng, p, int(rng.integers(1, 4))), rnd(rng, p, 1)
    r_prev[-1] = _nonzero_elem(rng, p)
    r[-1] = _nonzero_elem(rng, p)
    r_prev, r = _core.trim(r_prev), _core.trim(r)
    if len(r) >= len(r_prev):
        r_prev, r = r, r_prev[:0]
    while len(r_prev) <= n:
        q = rnd(rng, p, int(rng.integers(2, qdeg_max + 2)))
        q[-1] = _nonzero_elem(rng, p)
        r_prev, r = _core.trim(_core.add(_core.mul(q, r_prev, p), r, p)), r_prev
    return r_prev, r


@pytest.mark.parametrize("p", HGCD_PRIMES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 16, 127, 128, 129, 200, 257, 700, 1500, 3000])
def test_native_hgcd_matches_python_random(p, n, python_hgcd):
    rng = np.random.default_rng(1000 + n)
    a, b = rnd(rng, p, n + 1), rnd(rng, p, n)
    a[-1] = 1
    bases = (0, 2, 7, 33) if p == GL else (0, 5)
    _check_native_hgcd(a, b, p, python_hgcd, bases)


@pytest.mark.parametrize("qmax", [3, 12, 90, 400])
@pytest.mark.parametrize("p", [GL, EMB])
def test_native_hgcd_non_normal_sequences(p, qmax, backend, python_hgcd):
    """Quotients of degree > 1 (up to 400: Newton division inside the recursion)."""
    rng = np.random.default_rng(qmax)
    for n in (40, 300, 1200, 3000):
        a, b = _sequence_pair(rng, p, n, qmax)
        _check_native_hgcd(a, b, p, python_hgcd, (0, 3, 40))


@pytest.mark.parametrize("p", [GL, 998244353])
def test_native_hgcd_structured(p, python_hgcd):
    """Short b (leading zeros trimmed), sparse operands, untrimmed b, tiny degrees."""
    rng = np.random.default_rng(11)
    n = 2000
    cases = []
    for db in (0, 1, n // 2 - 1, n // 2, n // 2 + 1, n // 2 + 7, (3 * n) // 4, n - 2, n - 1):
        a = rnd(rng, p, n + 1)
        a[-1] = 1
        b = np.zeros(n, dtype=np.uint64)
        b[: db + 1] = rnd(rng, p, db + 1)
        b[db] = 3
        cases.append((a, b))
    xn = np.zeros(n + 1, dtype=np.uint64)
    xn[-1] = 1
    xn[0] = p - 1                                   # x^n - 1
    for k in (n - 1, n // 2 + 3, 3 * n // 4, 600):
        xk = np.zeros(k + 1, dtype=np.uint64)
        xk[-1], xk[0] = 1, p - 1                    # x^k - 1: gcd x^gcd(n,k) - 1
        cases.append((xn, xk))
    mono = np.zeros(n + 1, dtype=np.uint64)
    mono[-1] = 1                                    # x^n and x^(n-1) + x^j
    for j in (0, 5, n // 2):
        bb = np.zeros(n, dtype=np.uint64)
        bb[-1], bb[j] = 1, 2
        cases.append((mono, bb))
    for a, b in cases:
        _check_native_hgcd(a, b, p, python_hgcd, (0, 4))
    # b passed with its leading zeros (the kernel trims)
    a, b = cases[3]
    M = _euclid.hgcd_native(_core.trim(a), b, p)
    assert _as_lists(M) == _as_lists(python_hgcd(_euclid.hgcd, _core.trim(a), _core.trim(b), p))


@pytest.mark.parametrize("p", [GL, EMB])
@pytest.mark.parametrize("n", [300, 2500])
def test_native_reduce_below_and_gcd_match_python(p, n, python_hgcd):
    rng = np.random.default_rng(n + 3)
    g = rnd(rng, p, 40)
    g[-1] = 1
    a = _core.trim(_core.mul(g, rnd(rng, p, n - 38), p))
    b = _core.trim(_core.mul(g, rnd(rng, p, n - 60), p))
    for d in (0, 1, 39, 40, 41, n // 3, n // 2, n - 61):
        M, r0, r1 = _euclid.reduce_below(a, b, d, p)
        M2, s0, s1 = python_hgcd(_euclid.reduce_below, a, b, d, p)
        assert _as_lists(M) == _as_lists(M2) and r0.tolist() == s0.tolist() and r1.tolist() == s1.tolist()
        _, t0, t1 = _euclid.reduce_below(a, b, d, p, matrix=False)
        assert t0.tolist() == r0.tolist() and t1.tolist() == r1.tolist()
    assert _euclid.gcd(a, b, p).tolist() == python_hgcd(_euclid.gcd, a, b, p).tolist()
    assert len(_euclid.gcd(a, b, p)) >= 40


def test_native_hgcd_support_and_errors():
    assert _euclid.native_supported(GL, 10**6)
    assert _euclid.native_supported(998244353, 2**22) and not _euclid.native_supported(998244353, 2**23 + 1)
    assert not _euclid.native_supported(2**64 - 59, 100) and not _euclid.native_supported(101, 100)
    a = np.array([1, 2, 3], dtype=np.uint64)
    # the kernel's SECEA_EINVAL: a ValueError naming the operands (a RuntimeError before
    # the status codes were mapped in one place)
    with pytest.raises(ValueError, match=r"half-gcd: a \(length 3\) and b \(length 3\)"):
        _euclid.hgcd_native(a, np.array([1, 2, 3], dtype=np.uint64), GL)     # needs deg a > deg b
    with pytest.raises(ValueError, match="p = 101"):
        _euclid.hgcd_native(a, np.array([1], dtype=np.uint64), 101)          # unsupported prime
    M = _euclid.hgcd_native(a, np.zeros(0, dtype=np.uint64), GL)
    assert _as_lists(M) == [[[1], []], [[], [1]]]


@pytest.mark.parametrize("N,k", [(5, 3), (4, 3), (8, 4), (9, 2)])
def test_rs_decode_odd_redundancy_one_error_too_many_is_a_decoding_error(N, k):
    """When the values left exceed k by an odd number r and there are
    (r + 1)/2 errors, the interpolant has degree in [k, (n + k)/2): a
    detected, uncorrectable word.  It used to crash with a NumPy broadcast
    ValueError (the interpolant copied into k coefficients); it is now a
    DecodingError, for 1-D and 2-D words."""
    p = 10007
    rng = np.random.default_rng(N * 10 + k)
    xs = np.arange(1, N + 1, dtype=np.uint64)
    for s in range(0, N - k):
        r = N - k - s
        if r % 2 == 0:
            continue
        for trial in range(10):
            msg = rnd(rng, p, k)
            y = poly.eval(msg, xs, p)
            perm = rng.permutation(N)
            era, err = np.sort(perm[:s]), perm[s:s + (r + 1) // 2]
            y[err] = (y[err] + np.uint64(1 + trial)) % np.uint64(p)
            for word in (y, np.stack([y, y])):
                try:
                    dec, bad = poly.rs_decode(xs, word, k, p, erasures=era)
                except poly.DecodingError:
                    continue
                # otherwise it found another codeword within the radius
                assert 2 * len(bad) + s <= N - k


@pytest.mark.parametrize("p", [GL, EMB, 2**64 - 59])
def test_gcd_of_equal_degrees_on_every_route(p):
    """Equal degrees reach the half-GCD only after a plain division step (the
    native kernel needs deg b < deg a: it used to fail with RuntimeError on
    two random polynomials of one length)."""
    rng = np.random.default_rng(5)
    for n in (30, 700, 3000):
        g = rnd(rng, p, 40)
        g[-1] = 1
        u, v = rnd(rng, p, n), rnd(rng, p, n)
        u[-1] = v[-1] = 1
        a, b = poly.mul(g, u, p), poly.mul(g, v, p)
        assert len(a) == len(b)
        got = poly.gcd(a, b, p)
        assert poly.divrem(a, got, p)[1].size == 0 and poly.divrem(b, got, p)[1].size == 0
        assert poly.gcd(u, v, p).tolist() == [1]            # coprime with overwhelming probability
        assert got.tolist() == g.tolist()                   # so the gcd is g (monic)


@pytest.mark.parametrize("call", [
    lambda t: poly.eval(np.ones(3, np.uint64), np.arange(4, dtype=np.uint64), GL, threads=t),
    lambda t: poly.interpolate(np.arange(4, dtype=np.uint64), np.ones(4, np.uint64), GL, threads=t),
    lambda t: poly.rs_decode(np.arange(4, dtype=np.uint64), np.ones(4, np.uint64), 2, GL, threads=t),
])
@pytest.mark.parametrize("threads, exc", [(0, ValueError), (-1, ValueError), (1.5, TypeError), ("2", TypeError)])
def test_bad_threads_refused_on_every_route(call, threads, exc):
    """Small inputs take routes (Horner, one word) that never reach matmul's
    check of ``threads``: eval(..., threads=0 or 1.5) used to be accepted."""
    with pytest.raises(exc, match="threads"):
        call(threads)


def test_vandermonde_negative_k_names_k():
    # used to raise NumPy's "negative dimensions are not allowed"
    with pytest.raises(ValueError, match="k must be"):
        poly.vandermonde(np.ones(2, np.uint64), -1, GL)


@pytest.mark.parametrize("p", [2, 3, GL])
def test_ntt_of_length_one(p):
    """Length 1 is the identity; mod 2 it raised MemoryError ("could not create
    an NTT plan"): the root-of-unity search returned 2 mod 2 = 0 for w^1 = 1."""
    for v in (0, 1):
        a = np.array([v], dtype=np.uint64)
        assert poly.ntt(a, p).tolist() == [v] and poly.ntt(a, p, inverse=True).tolist() == [v]


def test_mul_mod_2_on_the_ntt_route(monkeypatch):
    """With the crossover at 0 every product takes the NTT route; mod 2 the
    length-1 transform is native (1 | p - 1) and used to fail the same way."""
    from secea_fast import tuning
    monkeypatch.setattr(tuning, "POLY_MUL_CLASSICAL_MAX", 0)
    one = np.ones(1, dtype=np.uint64)
    assert poly.mul(one, one, 2).tolist() == [1]


@pytest.mark.parametrize("p", [GL, 7681])
@pytest.mark.parametrize("n", [3, 5, 9, 129])
def test_laurent_reconstruction_keeps_the_degree_bound_for_odd_n(p, n):
    """Any n terms fit some u/L with deg L = n // 2 + 1 when n is odd; that L is
    not determined by them.  Random terms of odd length used to come back as
    such an L instead of ValueError (the bound deg L <= n // 2 was not checked)."""
    rng = np.random.default_rng(n)
    s = rnd(rng, p, n)
    with pytest.raises(ValueError, match="n // 2"):
        poly.rational_reconstruct(s, p, laurent=True)
    # a true fraction of degree n // 2 still comes back
    L = np.concatenate([rnd(rng, p, n // 2), np.ones(1, np.uint64)])
    u = rnd(rng, p, n // 2)
    u[0] = u[0] or 1
    u2, L2 = poly.rational_reconstruct(poly.laurent_tail(u, L, n, p), p, laurent=True)
    assert len(L2) - 1 <= n // 2
    assert np.array_equal(poly.laurent_tail(u2, L2, n, p), poly.laurent_tail(u, L, n, p))


@pytest.mark.parametrize("p", [GL, 2**64 - 59])
@pytest.mark.parametrize("k", [1, 3, 128, 129])
def test_eval_short_polynomials_at_many_points_by_horner(p, k, monkeypatch):
    """Beyond POLY_LCC_MAX_POINTS points a polynomial of length <= 128 is
    evaluated by Horner (a length-3 one at 10^5 points mod 2^64 - 59 took
    4.3 s through the remainder tree); both routes agree."""
    rng = np.random.default_rng(k)
    F = rnd(rng, p, 3 * k).reshape(3, k)
    xs = rnd(rng, p, 300)
    got = poly.eval(F, xs, p)
    monkeypatch.setattr(tuning, "POLY_EVAL_HORNER_MAX_LEN", 0)
    assert np.array_equal(got, poly.eval(F, xs, p))
    assert got[1, :5].tolist() == [ref.evaluate(F[1].tolist(), int(x), p) for x in xs[:5]]


@pytest.mark.parametrize("cut", [None, 0, 3])
def test_tree_middle_products_over_a_prime_without_ntt(cut, monkeypatch):
    """Above POLY_MUL_CLASSICAL_MAX the remainder tree's middle products take a
    full product (three-prime route mod 2^64 - 59; they were classical at
    every level, quadratic at many points)."""
    p = 2**64 - 59
    if cut is not None:
        monkeypatch.setattr(tuning, "POLY_MUL_CLASSICAL_MAX", cut)
    rng = np.random.default_rng(7)
    xs = np.unique(rnd(rng, p, 600))
    ys = rnd(rng, p, len(xs))
    c = poly.interpolate(xs, ys, p)
    assert np.array_equal(poly.eval(c, xs, p), ys)
    assert [ref.evaluate(c.tolist(), int(x), p) for x in xs[:3]] == ys[:3].tolist()


def test_ntt_inverse_flag_must_be_a_bool():
    a = np.arange(4, dtype=np.uint64)
    with pytest.raises(TypeError, match="inverse"):
        poly.ntt(a, GL, inverse="yes")
    assert poly.ntt(poly.ntt(a, GL), GL, inverse=np.bool_(True)).tolist() == a.tolist()
    assert poly.mul(a, np.zeros(0, dtype=np.uint64), GL).size == 0          # the zero polynomial
