"""Polynomial kernels over Goldilocks: secea_fast vs python-flint, one thread.

Targets (the project's): roots deg 10^4 <= 0.1 s, 10^5 <= 1 s, >= 30x flint's fastest
roots at degree 3000; from_roots 10^5 at least half flint's balanced product
speed; 2^20 NTT <= 4 ms; degree-10^6 product <= 30 ms; inv_series 10^5 <= 8 ms;
half-GCD 10^5 <= 0.15 s; eval / interpolate at 10^5 points <= 0.1 s each.
"""
import numpy as np
import pytest

import secea_fast
from secea_fast import poly
from secea_fast.poly import _core, _euclid

from conftest import uniform

flint = pytest.importorskip("flint")
P = secea_fast.GOLDILOCKS


def _fl(a):
    return flint.nmod_poly([int(x) for x in a], P)


def _flint_linear_factors(rs):
    """The x - r as python-flint polynomials: the input converted to flint's type, outside
    the timing as for every other flint operand (it took 77 of 270 ms at 10^5 roots)."""
    return [flint.nmod_poly([(-int(r)) % P, 1], P) for r in rs]


def _flint_from_roots(level):
    """Balanced product tree over the linear factors (python-flint has no from_roots)."""
    while len(level) > 1:
        level = [level[i] * level[i + 1] if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0]


def _bench(benchmark, group, impl, fn, rounds=3, **info):
    benchmark.group = group
    benchmark.extra_info.update(impl=impl, **info)
    return benchmark.pedantic(fn, rounds=rounds, warmup_rounds=1)


@pytest.mark.parametrize("logn", [16, 20])
def test_ntt(benchmark, rng, logn):
    a = uniform(rng, P, 1 << logn)
    pl = _core.plan(P, logn)
    buf = a.copy()
    _bench(benchmark, f"ntt 2^{logn}", "secea_fast", lambda: _core.lib.secea_ntt_forward(pl, _core.u64ptr(buf), 1), 10)


@pytest.mark.parametrize("n", [10**4, 10**6])
@pytest.mark.parametrize("impl", ["secea_fast", "flint"])
def test_mul(benchmark, rng, n, impl):
    a, b = uniform(rng, P, n), uniform(rng, P, n)
    if impl == "flint":
        fa, fb = _fl(a), _fl(b)
        _bench(benchmark, f"mul deg {n}", "python-flint", lambda: fa * fb)
    else:
        _bench(benchmark, f"mul deg {n}", impl, lambda: poly.mul(a, b, P))


@pytest.mark.parametrize("n", [10**4, 10**5])
@pytest.mark.parametrize("impl", ["secea_fast", "flint"])
def test_from_roots(benchmark, rng, n, impl):
    rs = uniform(rng, P, n)
    if impl == "flint":
        leaves = _flint_linear_factors(rs)
        _bench(benchmark, f"from_roots {n}", "python-flint", lambda: _flint_from_roots(leaves))
    else:
        _bench(benchmark, f"from_roots {n}", impl, lambda: poly.from_roots(rs, P))


@pytest.mark.parametrize("impl", ["secea_fast", "flint"])
def test_inv_series(benchmark, rng, impl):
    n = 10**5
    f = uniform(rng, P, n)
    f[0] = 1
    if impl == "flint":
        ff = _fl(f)
        _bench(benchmark, "inv_series 10^5", "python-flint", lambda: ff.inverse_series_trunc(n))
    else:
        _bench(benchmark, "inv_series 10^5", impl, lambda: poly.inv_series(f, n, P))


@pytest.mark.parametrize("impl", ["secea_fast", "flint"])
def test_half_gcd(benchmark, rng, impl):
    n = 10**5
    a, b = uniform(rng, P, n + 1), uniform(rng, P, n)
    if impl == "flint":
        fa, fb = _fl(a), _fl(b)
        _bench(benchmark, "half-gcd / xgcd 10^5", "python-flint xgcd (full)", lambda: fa.xgcd(fb), 1)
    else:
        _bench(benchmark, "half-gcd / xgcd 10^5", impl,
               lambda: _euclid.hgcd(_core.trim(a), _core.trim(b), P), 1)


@pytest.mark.parametrize("impl", ["secea_fast", "flint"])
def test_eval_interp(benchmark, rng, impl):
    n = 10**5
    xs = np.unique(uniform(rng, P, n + 100))[:n]
    f = uniform(rng, P, n)
    if impl == "flint":
        ctx = flint.fmpz_mod_poly_ctx(P)
        ff = ctx([int(c) for c in f])
        pts = [int(x) for x in xs]
        _bench(benchmark, "eval 10^5 points", "python-flint fmpz_mod_poly", lambda: ff.multipoint_evaluate(pts), 1)
    else:
        _bench(benchmark, "eval 10^5 points", impl, lambda: poly.eval(f, xs, P), 1)


@pytest.mark.parametrize("n, npts", [(8, 1), (4096, 16)])
@pytest.mark.parametrize("impl", ["secea_fast", "flint"])
def test_eval_few_points(benchmark, rng, n, npts, impl):
    """One polynomial at a few points (Horner in C on our side; python-flint's
    nmod_poly called once per point): the eight-coefficient case measures the
    per-call floor of NumPy arrays in and out against flint's own objects."""
    xs = uniform(rng, P, npts)
    f = uniform(rng, P, n)
    group = f"eval length {n} at {npts} point(s)"
    if impl == "flint":
        ff, pts = _fl(f), [int(x) for x in xs]
        _bench(benchmark, group, "python-flint nmod_poly", lambda: [ff(x) for x in pts], 200)
    else:
        got = _bench(benchmark, group, impl, lambda: poly.eval(f, xs, P), 200)
        assert [int(v) for v in got] == [int(_fl(f)(int(x))) for x in xs]


def test_interpolate(benchmark, rng):
    n = 10**5
    xs = np.unique(uniform(rng, P, n + 100))[:n]
    ys = uniform(rng, P, n)
    _bench(benchmark, "interpolate 10^5 points", "secea_fast", lambda: poly.interpolate(xs, ys, P), 1)


@pytest.mark.parametrize("n", [3000, 10**4, 10**5])
@pytest.mark.parametrize("impl", ["secea_fast", "flint-nmod", "flint-fmpz_mod"])
def test_roots(benchmark, rng, n, impl):
    if impl != "secea_fast" and n > 3000:
        pytest.skip("flint needs about 92 s at degree 10^4 (one-off measurement)")
    rs = uniform(rng, P, n)
    f = poly.from_roots(rs, P)
    want = sorted(set(rs.tolist()))
    if impl == "flint-nmod":
        ff = _fl(f)
        got = _bench(benchmark, f"roots {n}", "python-flint nmod_poly", lambda: ff.roots(), 1)
        assert sorted(int(r) for r, _ in got) == want
    elif impl == "flint-fmpz_mod":
        ff = flint.fmpz_mod_poly_ctx(P)([int(c) for c in f])
        got = _bench(benchmark, f"roots {n}", "python-flint fmpz_mod_poly", lambda: ff.roots(), 1)
        assert sorted(int(r) for r, _ in got) == want
    else:
        got = _bench(benchmark, f"roots {n}", impl, lambda: poly.roots(f, P), 5 if n <= 10**4 else 3)
        assert got.tolist() == want
