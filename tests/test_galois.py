"""secea_fast.galois against galois's own results, for both primes of the package."""
import numpy as np
import pytest

galois = pytest.importorskip("galois", reason="the galois extra is not installed")

import secea_fast as sf  # noqa: E402
import secea_fast.galois as sg  # noqa: E402

PRIMES = [sf.GOLDILOCKS, sf.EMBEDDING_PRIME]


@pytest.fixture(scope="module", params=PRIMES, ids=["goldilocks", "embedding"])
def GF(request):
    return galois.GF(request.param)


def _rand(GF, shape, rng):
    return sg.from_numpy(rng.integers(0, GF.characteristic, size=shape, dtype=np.uint64), GF)


def test_conversions_round_trip(GF):
    rng = np.random.default_rng(1)
    a = rng.integers(0, GF.characteristic, size=(4, 5), dtype=np.uint64)
    x = sg.from_numpy(a, GF)
    assert type(x) is GF and np.array_equal(np.array(x.tolist(), dtype=np.uint64), a)
    assert np.array_equal(sg.to_numpy(x), a) and sg.to_numpy(x).dtype == np.uint64
    assert np.array_equal(sg.to_numpy(GF(a.tolist())), a)          # an array galois made


def test_matmul_and_dot_equal_galois(GF):
    rng = np.random.default_rng(2)
    for m, k, n in [(1, 1, 1), (3, 17, 5), (8, 64, 9)]:
        A, B = _rand(GF, (m, k), rng), _rand(GF, (k, n), rng)
        C = sg.matmul(A, B)
        assert type(C) is GF and np.array_equal(C, A @ B)
    a, b = _rand(GF, (6, 11), rng), _rand(GF, (6, 11), rng)
    assert np.array_equal(sg.dot(a, b), np.sum(a * b, axis=-1))
    top = GF(GF.characteristic - 1)                                 # p - 1 everywhere: the largest products
    A = np.full((4, 33), top.tolist(), dtype=object).view(GF)
    assert np.array_equal(sg.matmul(A, A.T), A @ A.T)


def test_ntt_equals_galois(GF):
    rng = np.random.default_rng(3)
    for n in (1, 2, 8, 256):
        x = _rand(GF, n, rng)
        X = sg.ntt(x)
        assert np.array_equal(X, galois.ntt(x)), n
        assert np.array_equal(sg.intt(X), x)


def test_polynomials_equal_galois(GF):
    rng = np.random.default_rng(4)
    f = galois.Poly(_rand(GF, 40, rng))
    g = galois.Poly(_rand(GF, 23, rng))
    assert sg.poly_mul(f, g) == f * g
    x = _rand(GF, 50, rng)
    assert np.array_equal(sg.poly_eval(f, x), f(x))
    xs = sg.from_numpy(rng.choice(10**6, size=30, replace=False).astype(np.uint64), GF)
    ys = _rand(GF, 30, rng)
    assert sg.interpolate(xs, ys) == galois.lagrange_poly(xs, ys)
    # (galois's own Poly.roots() tries every field element: hopeless for these p, so
    # the reference is the construction: known roots times a factor without roots)
    r = sg.from_numpy(np.array([3, 5, 5, 10**9 + 7], dtype=np.uint64), GF)
    w = GF.primitive_element                                        # a non-square: x^2 - w has no root
    h = galois.Poly.Roots(r) * galois.Poly(GF([1, 0, int(-w)]))
    found = sg.roots(h)
    assert np.array_equal(sg.to_numpy(found), np.array([3, 5, 10**9 + 7], dtype=np.uint64))
    assert not np.any(h(found))
    assert sg.poly_mul(galois.Poly([0], field=GF), g) == galois.Poly([0], field=GF)


def test_bad_inputs_name_the_argument():
    GF, GF2 = galois.GF(sf.GOLDILOCKS), galois.GF(sf.EMBEDDING_PRIME)
    a = GF([1, 2, 3])
    with pytest.raises(TypeError, match="A must be a galois.FieldArray"):
        sg.matmul(np.ones((2, 2), dtype=np.uint64), a)
    with pytest.raises(ValueError, match="same field"):
        sg.dot(a, GF2([1, 2, 3]))
    with pytest.raises(ValueError, match="prime field"):
        sg.ntt(galois.GF(2**8)([1, 2]))
    with pytest.raises(TypeError, match="f must be a galois.Poly"):
        sg.roots(a)
    with pytest.raises(ValueError, match="same field"):
        sg.poly_eval(galois.Poly([1, 2], field=GF), GF2([1]))
