import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import secea_fast
from secea_fast import field
from secea_fast.field import reference as ref

from conftest import PRIMES, rand_elems

elem_lists = st.integers(min_value=0, max_value=2**64 - 1)


def residues(p, n):
    return st.lists(st.one_of(st.integers(0, p - 1), st.sampled_from([0, 1 % p, p - 1, p // 2])),
                    min_size=n, max_size=n)


@pytest.mark.parametrize("p", PRIMES)
def test_elementwise_matches_reference(p, backend):
    rng = np.random.default_rng(p % 1000)
    a = rand_elems(rng, p, 257)
    b = rand_elems(rng, p, 257)[::-1].copy()
    assert field.add(a, b, p).tolist() == ref.add(a, b, p)
    assert field.sub(a, b, p).tolist() == ref.sub(a, b, p)
    assert field.neg(a, p).tolist() == ref.neg(a, p)
    assert field.mul(a, b, p).tolist() == ref.mul(a, b, p)
    assert field.mul(a, p - 1, p).tolist() == ref.mul(a, [p - 1] * a.size, p)
    assert field.add(a, 1 % p, p).tolist() == ref.add(a, [1 % p] * a.size, p)
    e = rng.integers(0, 2**64 - 1, size=a.size, dtype=np.uint64, endpoint=True)
    e[:3] = [0, 1, 2**64 - 1]
    assert field.pow(a, e, p).tolist() == ref.pow(a, e, p)
    assert field.dot(a, b, p) == ref.dot(a, b, p)
    nz = a.copy()
    nz[nz == 0] = 1
    inv = field.batch_inv(nz, p)
    assert inv.tolist() == ref.inv(nz, p)
    assert field.mul(inv, nz, p).tolist() == [1 % p] * nz.size


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PRIMES).flatmap(lambda p: st.tuples(st.just(p), residues(p, 9), residues(p, 9))))
def test_hypothesis_ops(args):
    p, a, b = args
    A = np.array(a, dtype=np.uint64)
    B = np.array(b, dtype=np.uint64)
    assert field.add(A, B, p).tolist() == ref.add(a, b, p)
    assert field.sub(A, B, p).tolist() == ref.sub(a, b, p)
    assert field.mul(A, B, p).tolist() == ref.mul(a, b, p)
    assert field.dot(A, B, p) == ref.dot(a, b, p)
    assert field.pow(A, B, p).tolist() == ref.pow(a, b, p)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PRIMES), st.integers(-2**200, 2**200))
def test_pow_big_and_negative_exponents(p, e):
    a = np.array([1 % p, p - 1, 2 % p, (p // 3) or 1], dtype=np.uint64)
    a = a[a != 0]
    assert field.pow(a, e, p).tolist() == [pow(int(x), e, p) for x in a]
    z = np.array([0], dtype=np.uint64)
    if e > 0:
        assert field.pow(z, e, p).tolist() == [0]
    elif e == 0:
        assert field.pow(z, e, p).tolist() == [1]
    else:
        with pytest.raises(ValueError):
            field.pow(z, e, p)


def test_dot_rows_and_long_sums(backend):
    p = secea_fast.GOLDILOCKS
    a = np.full((3, 5000), p - 1, dtype=np.uint64)  # forces the 192-bit carry
    b = np.full((3, 5000), p - 1, dtype=np.uint64)
    out = field.dot(a, b, p)
    assert out.shape == (3,)
    assert out.tolist() == [5000 % p] * 3   # (p-1)^2 = 1


def test_inv_scalar_and_errors():
    p = 101
    assert field.inv(5, p) * 5 % p == 1
    with pytest.raises(ValueError, match="zero"):
        field.inv(0, p)
    with pytest.raises(ValueError, match="index 2"):
        field.batch_inv(np.array([1, 2, 0, 3], dtype=np.uint64), p)


def test_reduce_and_asarray():
    p = 2**61 - 1
    x = np.array([0, p, p + 5, 2**64 - 1], dtype=np.uint64)
    assert field.reduce(x, p).tolist() == [int(v) % p for v in x]
    assert field.asarray([-1, 2**100, 3], p).tolist() == [p - 1, 2**100 % p, 3]
    with pytest.raises(TypeError):
        field.asarray([1.5], p)


@pytest.mark.parametrize("value", [-1, 2**100, np.int64(-1), np.array(-1), np.array(2**100, dtype=object)])
def test_asarray_of_a_scalar_is_a_0d_array(value):
    # a 0-d input used to raise AttributeError ('int' object has no attribute 'astype')
    p = 2**61 - 1
    out = field.asarray(value, p)
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.uint64
    assert int(out) == int(value) % p


@pytest.mark.parametrize("bad_p, exc", [(4, ValueError), (1, ValueError), (0, ValueError),
                                        (2**64 + 13, ValueError), (2**64 - 1, ValueError),
                                        (1.0, TypeError), ("7", TypeError), (True, TypeError)])
def test_bad_modulus(bad_p, exc):
    a = np.array([1], dtype=np.uint64)
    with pytest.raises(exc):
        field.add(a, a, bad_p)


def test_bad_arrays():
    p = 101
    a = np.array([1, 2, 3], dtype=np.uint64)
    with pytest.raises(TypeError, match="uint64"):
        field.add(a.astype(np.int64), a, p)
    with pytest.raises(TypeError, match="ndarray"):
        field.mul([1, 2, 3], a, p)
    with pytest.raises(ValueError, match=">= p"):
        field.mul(np.array([1, 101], dtype=np.uint64), np.array([1, 1], dtype=np.uint64), p)
    with pytest.raises(ValueError, match="shape mismatch"):
        field.add(a, a[:2], p)
    with pytest.raises(ValueError):
        field.mul(a, 101, p)
    with pytest.raises(TypeError):
        field.pow(a, 1.5, p)


def test_zero_dimensional_operands():
    """A 0-d array is not a vector: ``dot`` refuses it (it used to be
    reshaped to (1,) by the input check and answered), and elementwise
    operations keep its shape, as NumPy does."""
    p = 101
    z = np.array(7, dtype=np.uint64)
    v = np.array([7], dtype=np.uint64)
    with pytest.raises(ValueError, match="dot: a must have at least 1 dimension"):
        field.dot(z, z, p)
    with pytest.raises(ValueError, match="dot: b must have at least 1 dimension"):
        field.dot(v, z, p)
    assert field.dot(v, v, p) == 49
    for op in (field.add, field.sub, field.mul):
        r = op(z, z, p)
        assert r.shape == () and int(r) == op(v, v, p)[0]
    assert field.mul(z, 3, p).shape == () and int(field.mul(z, 3, p)) == 21
    assert field.pow(z, 2, p).shape == () and field.neg(z, p).shape == ()
    assert field.batch_inv(z, p).shape == () and field.reduce(z, p).shape == ()
    assert field.pow(z, np.array(2, dtype=np.uint64), p).shape == ()


def test_non_contiguous_inputs():
    p = 65537
    a = np.arange(20, dtype=np.uint64)[::2]
    assert field.mul(a, a, p).tolist() == ref.mul(a, a, p)


@pytest.mark.parametrize("p", [secea_fast.EMBEDDING_PRIME, 2**50 - 27, 1000003, 3])
def test_mul_by_scalar_every_length_and_edge_scalars(p, backend):
    """The scalar product's vector routes (Shoup in 52-bit IFMA for p < 2^50)
    against Python integers, with tails of every length mod 8."""
    rng = np.random.default_rng(p % 1009)
    a = rand_elems(rng, p, 37)
    a[:3] = [0, 1, p - 1]
    for k in {0, 1, p - 1, int(rng.integers(0, p)), p // 2}:
        for n in (1, 7, 8, 9, 37):
            assert field.mul(a[:n], k, p).tolist() == [int(x) * k % p for x in a[:n]]


@pytest.mark.parametrize("p", [3, 2**31 - 1, secea_fast.EMBEDDING_PRIME, secea_fast.GOLDILOCKS, 2**64 - 59])
def test_one_pass_range_check_names_every_bad_entry(p, backend):
    """The managed functions check the operands' range in the C loop that
    computes (add, sub, neg) or chunk by chunk just before it (mul; chunks of
    2048 entries): an entry >= p anywhere, in either operand, at either edge
    of a chunk, raises the same ValueError as the separate scan did, naming
    the operand, the flat index and the value."""
    rng = np.random.default_rng(p % 997)
    ops = {"add": lambda a, b: field.add(a, b, p), "sub": lambda a, b: field.sub(a, b, p),
           "mul": lambda a, b: field.mul(a, b, p), "neg": lambda a, b: field.neg(a, p),
           "scale": lambda a, b: field.mul(a, int(b.flat[0]) % p, p)}
    for n in (1, 2047, 2049, 4100):
        a, b = rand_elems(rng, p, n), rand_elems(rng, p, n)
        for name, op in ops.items():
            want = op(a, b)                   # valid operands: no error
            for pos in {0, min(n - 1, 2047), min(n - 1, 2048), n - 1}:
                for bad in (p, 2**64 - 1):
                    operands = ("a", "b") if name in ("add", "sub", "mul") else ("a",)
                    for which in operands:
                        x, y = a.copy(), b.copy()
                        (x if which == "a" else y)[pos] = bad
                        with pytest.raises(ValueError, match=rf"^{which} has an entry >= p at flat index {pos} "
                                                             rf"\(value {bad}, p = {p}\)"):
                            op(x, y)
            assert op(a, b).tolist() == want.tolist()
    # the control: the same operands pass the unchecked kernel silently, so
    # the errors above come from the managed layer's check
    x = a.copy()
    x[5] = p
    out = np.empty_like(x)
    secea_fast._native.lib.secea_fp_add(secea_fast._native.u64ptr(out), secea_fast._native.u64ptr(x),
                                        secea_fast._native.u64ptr(b), x.size, p)


def test_known_prime_cache_takes_only_primes():
    """The managed functions remember the primes they accepted (one set lookup
    per call); a composite, a modulus out of range or a non-int never enters
    the cache and is refused on every call."""
    from secea_fast import _checks
    a = np.array([1], dtype=np.uint64)
    for bad in (4, 2**64 - 1, 2**64 + 13, 1):
        for _ in range(2):
            with pytest.raises(ValueError):
                field.add(a, a, bad)
        assert not _checks.known_prime(bad)
    for bad in (7.0, True, "7"):
        with pytest.raises(TypeError):
            field.add(a, a, bad)
        assert not _checks.known_prime(bad)
    assert field.add(a, a, 7).tolist() == [2] and _checks.known_prime(7)
    assert field.add(a, a, np.uint64(7)).tolist() == [2]      # a NumPy int still works (full check)


@pytest.mark.parametrize("p", [3, 2**31 - 1, secea_fast.EMBEDDING_PRIME, secea_fast.GOLDILOCKS])
def test_raw_layer_matches_the_managed_functions(p):
    """``field.raw`` computes what the managed functions do on valid operands,
    of any layout, writing into ``out`` (which may be an operand)."""
    from secea_fast.field import raw
    rng = np.random.default_rng(p % 991)
    a, b = rand_elems(rng, p, 300).reshape(20, 15), rand_elems(rng, p, 300).reshape(20, 15)
    c = int(a.flat[7])
    assert raw.add(a, b, p).tolist() == field.add(a, b, p).tolist()
    assert raw.sub(a, b, p).tolist() == field.sub(a, b, p).tolist()
    assert raw.mul(a, b, p).tolist() == field.mul(a, b, p).tolist()
    assert raw.neg(a, p).tolist() == field.neg(a, p).tolist()
    assert raw.scale(a, c - p, p).tolist() == field.mul(a, c, p).tolist()     # any int c
    assert raw.reduce(a * np.uint64(3), p).tolist() == field.reduce(a * np.uint64(3), p).tolist()
    nz = a.copy()
    nz[nz == 0] = 1
    assert raw.batch_inv(nz, p).tolist() == field.batch_inv(nz, p).tolist()
    with pytest.raises(ZeroDivisionError):
        raw.batch_inv(np.zeros(3, dtype=np.uint64), p)
    assert raw.add(a[:, ::2], b.T[::2].T, p).tolist() == field.add(a[:, ::2], b[:, ::2], p).tolist()
    acc = a.copy()
    assert raw.add(acc, b, p, out=acc) is acc and acc.tolist() == field.add(a, b, p).tolist()
    assert raw.add(a[:0], b[:0], p).shape == (0, 15)
