import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import secea_fast
from secea_fast import field
from secea_fast.fixedpoint import FixedPoint

P = secea_fast.EMBEDDING_PRIME


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1000, 1000, allow_nan=False), min_size=1, max_size=20),
       st.integers(0, 8))
def test_roundtrip_is_quantization(xs, digits):
    fx = FixedPoint(P, digits=digits)
    q = fx.quantize(xs)
    assert q.tolist() == [int(np.rint(np.float64(x) * 10**digits)) for x in xs]
    assert fx.decode_int(fx.encode(xs)).tolist() == q.tolist()
    assert np.allclose(fx.decode(fx.encode(xs)), q / 10**digits)


def test_bits_scale():
    fx = FixedPoint(P, bits=16)
    assert fx.scale == 65536
    assert fx.decode(fx.encode([0.5, -0.25])).tolist() == [0.5, -0.25]


@pytest.mark.parametrize("sign", [1, -1])
def test_n_extremal_inputs_decode_exactly(sign):
    """N summands at the bound B with p just above 2 N B scale: the sum is exact."""
    digits, n = 8, 100
    bound = (P // 2 - 1) // (n * 10**digits)   # largest integer bound that fits
    fx = FixedPoint(P, digits=digits, bound=float(bound), n_summands=n)
    enc = fx.encode(np.full(n, sign * float(bound)))
    total = np.zeros(1, dtype=np.uint64)
    for v in enc:
        total = field.add(total, np.array([v], dtype=np.uint64), P)
    assert fx.decode_int(total).tolist() == [sign * n * bound * 10**digits]


def test_capacity_check_refuses_small_modulus():
    with pytest.raises(ValueError, match="capacity"):
        FixedPoint(P, digits=8, bound=1e5, n_summands=100)
    fx = FixedPoint(P, digits=8)
    fx.check_capacity(100, 1000.0)
    with pytest.raises(ValueError, match="capacity"):
        fx.check_capacity(10**6, 1000.0)


def test_encode_refuses_out_of_bound_and_overflow():
    fx = FixedPoint(P, digits=8, bound=10.0, n_summands=3)
    with pytest.raises(ValueError, match="bound"):
        fx.encode([1.0, 10.5])
    fx2 = FixedPoint(P, digits=8)
    with pytest.raises(ValueError, match="does not fit"):
        fx2.encode([1e9])   # 1e17 > (p-1)/2
    with pytest.raises(ValueError, match="NaN"):
        fx2.encode([float("nan")])
    with pytest.raises(ValueError, match="NaN"):
        fx2.encode([float("inf")])
    with pytest.raises(TypeError):
        fx2.encode(["1.0"])


def test_constructor_errors():
    with pytest.raises(ValueError, match="exactly one"):
        FixedPoint(P)
    with pytest.raises(ValueError, match="exactly one"):
        FixedPoint(P, digits=2, bits=3)
    with pytest.raises(ValueError):
        FixedPoint(P, digits=-1)
    with pytest.raises(ValueError, match="not prime"):
        FixedPoint(100, digits=2)
    with pytest.raises(ValueError):
        FixedPoint(P, digits=2, bound=-1)
    with pytest.raises(TypeError):
        FixedPoint(P, digits=2.5)


def test_decode_with_divisor_and_goldilocks():
    fx = FixedPoint(secea_fast.GOLDILOCKS, digits=6)
    enc = fx.encode([3.0, -3.0])
    assert fx.decode(enc, divisor=np.array([2.0, 3.0])).tolist() == [1.5, -1.0]
    with pytest.raises(ValueError, match=">= p"):
        FixedPoint(101, digits=0).decode(np.array([101], dtype=np.uint64))


# ------------------------------------------------------------ encode_rows
def test_encode_rows_matches_numpy_twin():
    """The C kernel against its NumPy twin, bit for bit: ties to even, signs,
    values near 2^52 (where the rounding trick stops) and near the bound,
    padding rows, both rings, rows=None, an empty x."""
    from secea_fast.fixedpoint import encode_rows
    rng = np.random.default_rng(3)
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.49999999999999994, 2.0**51 + 0.5,
                     2.0**52 - 0.5, 2.0**52 + 1, -(2.0**53) - 2, 1e-300, -1e-300])
    for f in (0, 3, 16):
        for bits in (32, 64):
            for n, d, nr in ((4, 7, 9), (50, 64, 300), (1, 14, 3), (0, 5, 4)):
                x = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-3, 4)
                if n and d == 14:
                    x[0] = ties / 2**f
                rows = rng.integers(-1, max(n, 1), nr).astype(np.int64) if n else np.full(nr, -1, dtype=np.int64)
                lim = 2**62
                a = encode_rows(x, rows, f, lim, bits)
                b = encode_rows(x, rows, f, lim, bits, impl="numpy")
                assert a.dtype == np.uint64 and np.array_equal(a, b), (f, bits, n, d)
                assert np.array_equal(encode_rows(x, None, f, lim, bits), encode_rows(x, None, f, lim, bits, impl="numpy"))


@pytest.mark.parametrize("impl", ["c", "numpy"])
def test_encode_rows_refuses_out_of_range(impl):
    from secea_fast.fixedpoint import encode_rows
    x = np.array([[1.0, 2.0], [3.0, np.nan]])
    with pytest.raises(ValueError, match="NaN"):
        encode_rows(x, np.array([0, 1]), 4, 1000, impl=impl)
    assert encode_rows(x, np.array([0, -1]), 4, 1000, impl=impl).tolist() == [[16, 32], [0, 0]]   # NaN row not kept
    with pytest.raises(ValueError, match="exceeds"):
        encode_rows(x, np.array([0]), 4, 31, impl=impl)                  # 2.0 * 16 = 32 > 31
    with pytest.raises(ValueError, match="exceeds"):
        encode_rows(np.array([[2.0**70]]), None, 0, 2**64, impl=impl)    # clamped to what int64 holds
    with pytest.raises(ValueError, match="rows"):
        encode_rows(x, np.array([2]), 4, 1000, impl=impl)
    with pytest.raises(TypeError, match="rows"):
        encode_rows(x, np.array([0], dtype=np.int32), 4, 1000, impl=impl)
    with pytest.raises(TypeError, match="x"):
        encode_rows(x.astype(np.float32), None, 4, 1000, impl=impl)


@pytest.mark.parametrize("impl", ["c", "numpy"])
def test_encode_rows_checks_lim(impl):
    """lim must be a real number >= 0: a NaN bound made the C kernel's fast
    pass skip the range check (NaN < 2^51 is false, so its bound fell back to
    2^51) while the twin refused every value; None gave float()'s message"""
    from secea_fast.fixedpoint import encode_rows
    x = np.array([[1.0, 2.0]])
    for bad in (float("nan"), -1.0, float("-inf")):
        with pytest.raises(ValueError, match="lim"):
            encode_rows(x, None, 4, bad, impl=impl)
    for bad in (None, "100", 1j):
        with pytest.raises(TypeError, match="lim"):
            encode_rows(x, None, 4, bad, impl=impl)
    assert encode_rows(x, None, 4, float("inf"), impl=impl).tolist() == [[16, 32]]
    assert encode_rows(x, None, 4, np.float64(32), impl=impl).tolist() == [[16, 32]]
    with pytest.raises(ValueError, match="exceeds"):
        encode_rows(x, None, 4, 0, impl=impl)               # lim = 0: only zeros fit


@pytest.mark.parametrize("impl", ["c", "numpy"])
def test_encode_rows_checks_every_column(impl):
    """a bad value in any column is refused, the odd last column included
    (the C kernel's SSE2 loop takes columns in pairs and a scalar loop the
    last one of an odd d; the other tests' bad values sat in the pairs)"""
    from secea_fast.fixedpoint import encode_rows
    for d in (1, 3, 5):
        for k in range(d):
            for bad, what in ((np.nan, "NaN"), (np.inf, "NaN"), (3.0, "exceeds"), (-3.0, "exceeds")):
                x = np.full((2, d), 0.5)
                x[1, k] = bad
                with pytest.raises(ValueError, match=what):
                    encode_rows(x, np.array([-1, 1, 0]), 2, 10, impl=impl)        # 3.0 * 4 = 12 > 10
                assert encode_rows(x, np.array([0, -1]), 2, 10, impl=impl).tolist() == [[2] * d, [0] * d]
