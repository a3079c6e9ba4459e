import numpy as np
import pytest

import secea_fast
from secea_fast import linalg
from secea_fast.field import reference as ref

from conftest import PRIMES, rand_elems

SHAPES = [(1, 1, 1), (2, 3, 4), (17, 33, 7), (16, 600, 6), (33, 1100, 13), (5, 2, 65)]


@pytest.mark.parametrize("p", PRIMES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_matches_reference(p, shape, backend):
    m, k, n = shape
    rng = np.random.default_rng(m * 1000 + k + n)
    A = rand_elems(rng, p, (m, k))
    B = rand_elems(rng, p, (k, n))
    expect = ref.matmul(A, B, p)
    for threads in (1, 2, 3):
        assert linalg.matmul(A, B, p, threads=threads).tolist() == expect


@pytest.mark.parametrize("p", [secea_fast.GOLDILOCKS, secea_fast.EMBEDDING_PRIME, 2**52])
def test_matmul_extremal_long_inner_dimension(p, backend):
    """All entries p-1 over k = 5000: every accumulator word sees its maximum."""
    if p == 2**52:
        p = 2**52 - 47  # largest prime below 2^52 uses the one-limb route at its limit
    A = np.full((20, 5000), p - 1, dtype=np.uint64)
    B = np.full((5000, 9), p - 1, dtype=np.uint64)
    C = linalg.matmul(A, B, p)
    assert (C == np.uint64(5000 % p)).all()


def test_matmul_degenerate_shapes():
    p = 101
    A = np.zeros((3, 0), dtype=np.uint64)
    B = np.zeros((0, 4), dtype=np.uint64)
    assert linalg.matmul(A, B, p).tolist() == [[0] * 4] * 3
    assert linalg.matmul(np.zeros((0, 5), dtype=np.uint64), np.zeros((5, 2), dtype=np.uint64), p).shape == (0, 2)


def test_matvec(backend):
    p = secea_fast.GOLDILOCKS
    rng = np.random.default_rng(3)
    A = rand_elems(rng, p, (9, 301))
    x = rand_elems(rng, p, 301)
    assert linalg.matvec(A, x, p).tolist() == [row[0] for row in ref.matmul(A, x[:, None], p)]


def test_matmul_bad_inputs():
    p = 101
    A = np.ones((2, 3), dtype=np.uint64)
    with pytest.raises(ValueError, match="shape mismatch"):
        linalg.matmul(A, A, p)
    with pytest.raises(TypeError):
        linalg.matmul(A.astype(np.float64), A.T, p)
    with pytest.raises(ValueError, match="dimension"):
        linalg.matmul(np.ones(3, dtype=np.uint64), A.T, p)
    with pytest.raises(ValueError, match=">= p"):
        linalg.matmul(A * np.uint64(101), A.T.copy(), p)
    with pytest.raises(ValueError, match="not prime"):
        linalg.matmul(A, A.T.copy(), 100)
    with pytest.raises(ValueError, match="threads"):
        linalg.matmul(A, A.T.copy(), p, threads=0)
    with pytest.raises(TypeError, match="threads"):
        linalg.matmul(A, A.T.copy(), p, threads=1.5)


def test_matmul_out_parameter():
    p = secea_fast.EMBEDDING_PRIME
    rng = np.random.default_rng(8)
    A = rand_elems(rng, p, (50, 7))
    B = rand_elems(rng, p, (7, 5))
    out = np.empty((50, 5), dtype=np.uint64)
    C = linalg.matmul(A, B, p, out=out)
    assert C is out and out.tolist() == ref.matmul(A, B, p)
    with pytest.raises(ValueError, match="shape"):
        linalg.matmul(A, B, p, out=np.empty((5, 50), dtype=np.uint64))
    with pytest.raises(TypeError):
        linalg.matmul(A, B, p, out=np.empty((50, 5), dtype=np.int64))
    sq = rand_elems(rng, p, (6, 6))
    with pytest.raises(ValueError, match="overlap"):
        linalg.matmul(sq, sq.copy(), p, out=sq)


@pytest.mark.parametrize("p", PRIMES)
def test_packed_right_matches_matmul(p, backend):
    rng = np.random.default_rng(p % 1000)
    B = rand_elems(rng, p, (1100, 13))
    PB = linalg.PackedRight(B, p)
    for m in (0, 1, 16, 37):
        A = rand_elems(rng, p, (m, 1100))
        want = linalg.matmul(A, B, p, threads=1)
        assert PB.mul(A, threads=1).tolist() == want.tolist()
        assert linalg.raw.mul_packed(A, PB, threads=2).tolist() == want.tolist()


def test_packed_right_keeps_its_variant_and_checks_inputs():
    p = secea_fast.GOLDILOCKS
    rng = np.random.default_rng(3)
    A, B = rand_elems(rng, p, (20, 50)), rand_elems(rng, p, (50, 7))
    before = secea_fast.get_backend()
    PB = linalg.PackedRight(B, p)              # packed for the best variant ...
    secea_fast.set_backend("portable")        # ... still used as packed after a switch
    try:
        assert PB.mul(A).tolist() == linalg.matmul(A, B, p).tolist()
    finally:
        secea_fast.set_backend(before)
    with pytest.raises(ValueError, match="shape mismatch"):
        PB.mul(A[:, :49])
    with pytest.raises(ValueError):
        PB.mul(np.full((2, 50), p, dtype=np.uint64))          # entries must be < p
    # the raw layer copies an operand of another layout rather than misreading it
    assert linalg.raw.mul_packed(np.asfortranarray(A), PB).tolist() == PB.mul(A).tolist()
    assert linalg.raw.matmul(np.asfortranarray(A), B, p).tolist() == PB.mul(A).tolist()
    with pytest.raises(ValueError):                           # read-only out: refused, not written
        linalg.raw.matmul(A, B, p, out=np.frombuffer(bytes(8 * 20 * 7), dtype=np.uint64).reshape(20, 7))
    assert linalg.PackedRight(np.zeros((0, 3), dtype=np.uint64), p).mul(
        np.zeros((4, 0), dtype=np.uint64)).tolist() == [[0] * 3] * 4


@pytest.mark.parametrize("p", [secea_fast.EMBEDDING_PRIME, secea_fast.GOLDILOCKS, 101])
@pytest.mark.parametrize("m, k, prefix", [(1, 5, 0), (37, 1000, 3), (40, 300, 8)])
def test_mul_decrypt_matches_decrypt_then_multiply(p, m, k, prefix, backend):
    """PackedRight.mul_decrypt(A, prg) == (prg's xor_into decryption of A) @ B,
    for streams that start mid-block, with the stream consumed the same way."""
    from secea_fast.prg import Prg
    rng = np.random.default_rng(m + k)
    D, B = rand_elems(rng, p, (m, k)), rand_elems(rng, p, (k, 7))
    enc, dec, ref_prg = (Prg(b"s" * 32, b"d") for _ in range(3))
    for g in (enc, dec, ref_prg):
        g.bytes(prefix)
    A = enc.xor_into(np.empty_like(D), D)
    C = linalg.PackedRight(B, p).mul_decrypt(A, dec, threads=2)
    assert C.tolist() == linalg.matmul(D, B, p).tolist()
    ref_prg.xor_into(np.empty_like(A), A)
    assert dec.bytes(16) == ref_prg.bytes(16)          # same stream position afterwards
    bad = A.copy()
    i, j = m // 2, k // 2
    bad[i, j] ^= D[i, j] ^ np.uint64(2**64 - 1)        # decrypts to 2^64 - 1 >= p
    again = Prg(b"s" * 32, b"d")
    again.bytes(prefix)
    with pytest.raises(ValueError, match="< p"):
        linalg.PackedRight(B, p).mul_decrypt(bad, again)


def test_packed_right_out_and_decrypt_edge_cases():
    from secea_fast.prg import Prg
    p = secea_fast.EMBEDDING_PRIME
    rng = np.random.default_rng(11)
    A, B = rand_elems(rng, p, (8, 8)), rand_elems(rng, p, (8, 8))
    PB = linalg.PackedRight(B, p)
    with pytest.raises(ValueError, match="overlap"):
        PB.mul(A, out=A)                                   # the scalar kernels read A while writing C
    ro = np.zeros((8, 8), dtype=np.uint64)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        PB.mul(A, out=ro)
    with pytest.raises(TypeError):
        PB.mul(A, out=[[0] * 8] * 8)
    out = np.empty((8, 8), dtype=np.uint64)
    assert PB.mul(A, out=out) is out and out.tolist() == linalg.matmul(A, B, p).tolist()
    # a bad thread count fails before the stream moves
    g, ref_prg = Prg(b"k" * 32, b"d"), Prg(b"k" * 32, b"d")
    with pytest.raises(ValueError):
        PB.mul_decrypt(A, g, threads=0)
    assert g.bytes(8) == ref_prg.bytes(8)
    # an empty A consumes nothing, exactly like xor_into
    g, ref_prg = Prg(b"k" * 32, b"d"), Prg(b"k" * 32, b"d")
    g.bytes(3)
    ref_prg.bytes(3)
    PB.mul_decrypt(np.zeros((0, 8), dtype=np.uint64), g)
    ref_prg.xor_into(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64))
    assert g.bytes(16) == ref_prg.bytes(16)
    # no columns: nothing to multiply, the entries are still checked
    P0 = linalg.PackedRight(np.zeros((8, 0), dtype=np.uint64), p)
    enc = Prg(b"k" * 32, b"e").xor_into(np.empty_like(A), A)
    assert P0.mul_decrypt(enc, Prg(b"k" * 32, b"e")).shape == (8, 0)
    bad = enc.copy()
    bad[0, 0] ^= A[0, 0] ^ np.uint64(2**64 - 1)
    with pytest.raises(linalg.DecryptedRangeError):
        P0.mul_decrypt(bad, Prg(b"k" * 32, b"e"))


# p = 2^59 - 55: the largest prime whose 128-bit chunks of the scalar kernel
# hold 1024 products of (p - 1)^2, so k = 1500 folds two chunks at their bound
P59 = 2**59 - 55
FLAT_SHAPES = [(11, 2, 1001), (1, 11, 977), (7, 3, 500), (17, 20, 963), (9, 1500, 5), (16, 15, 37)]


@pytest.mark.parametrize("p", [secea_fast.GOLDILOCKS, secea_fast.EMBEDDING_PRIME, P59, 2**64 - 59, 2**52 - 47, 65537])
@pytest.mark.parametrize("fill", ["random", "p-1", "ones"])
def test_matmul_routes_by_shape_agree(p, fill, backend):
    """Flat and skinny shapes (small m or k, n past the IFMA column block of
    480, odd n), which take other variants than square ones, against exact
    integer arithmetic; p - 1 everywhere puts every sum at its largest (the
    chunked 128-bit sums of the scalar kernel at their bound for P59)."""
    rng = np.random.default_rng(p % 1000)
    for m, k, n in FLAT_SHAPES:
        if fill == "random":
            A, B = rand_elems(rng, p, (m, k)), rand_elems(rng, p, (k, n))
        else:
            v = p - 1 if fill == "p-1" else 1
            A, B = np.full((m, k), v, dtype=np.uint64), np.full((k, n), v, dtype=np.uint64)
        want = (A.astype(object) @ B.astype(object)) % p
        got = linalg.matmul(A, B, p, threads=2)
        assert (got.astype(object) == want).all(), (m, k, n)


def test_threads_may_be_a_numpy_integer():
    # np.int64(2) raised TypeError ("got int64") where every other count argument takes NumPy integers
    A = np.arange(6, dtype=np.uint64).reshape(2, 3)
    B = np.arange(6, dtype=np.uint64).reshape(3, 2)
    assert linalg.matmul(A, B, 7, threads=np.int64(2)).tolist() == linalg.matmul(A, B, 7, threads=2).tolist()
    with pytest.raises(TypeError):
        linalg.matmul(A, B, 7, threads=np.float64(2))
    with pytest.raises(TypeError):
        linalg.matmul(A, B, 7, threads=np.bool_(True))
