"""secea_fast.numba: njit modular arithmetic and the C kernels from njit code,
against the package's NumPy-facing kernels (secea_fast.field)."""
import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="the numba extra is not installed")

import secea_fast as sf  # noqa: E402
import secea_fast.numba as snb  # noqa: E402
from secea_fast import field  # noqa: E402

GL, EP = sf.GOLDILOCKS, sf.EMBEDDING_PRIME


def _operands(p, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, p, size=n, dtype=np.uint64)
    b = rng.integers(0, p, size=n, dtype=np.uint64)
    edge = np.array([0, 1, 2, p - 1, p - 2, (p - 1) // 2, (p + 1) // 2, 2**32, 2**32 - 1,
                     p - 2**32, 2**63 % p, 2**48 % p], dtype=np.uint64)
    ea, eb = np.meshgrid(edge, edge)                               # every pair of edge values
    return np.concatenate([a, ea.ravel()]), np.concatenate([b, eb.ravel()])


@numba.njit
def _elementwise(a, b, p, which):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        if which == 0:
            out[i] = snb.gl_mul(a[i], b[i])
        elif which == 1:
            out[i] = snb.gl_add(a[i], b[i])
        elif which == 2:
            out[i] = snb.gl_sub(a[i], b[i])
        elif which == 3:
            out[i] = snb.mulmod(a[i], b[i], p)
        elif which == 4:
            out[i] = snb.addmod(a[i], b[i], p)
        else:
            out[i] = snb.submod(a[i], b[i], p)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_scalar_functions_equal_the_field_kernels(seed):
    a, b = _operands(GL, 20000, seed)
    gp = np.uint64(GL)
    assert np.array_equal(_elementwise(a, b, gp, 0), field.mul(a, b, GL))
    assert np.array_equal(_elementwise(a, b, gp, 1), field.add(a, b, GL))
    assert np.array_equal(_elementwise(a, b, gp, 2), field.sub(a, b, GL))
    assert np.array_equal(_elementwise(a, b, gp, 4), field.add(a, b, GL))   # addmod at p near 2^64
    a, b = _operands(EP, 20000, seed)
    ep = np.uint64(EP)
    assert np.array_equal(_elementwise(a, b, ep, 3), field.mul(a, b, EP))
    assert np.array_equal(_elementwise(a, b, ep, 4), field.add(a, b, EP))
    assert np.array_equal(_elementwise(a, b, ep, 5), field.sub(a, b, EP))
    q = 1125899906842597                                             # the largest prime below 2^50
    a, b = _operands(q, 20000, seed)
    assert q < snb.MULMOD_MAX_P
    assert np.array_equal(_elementwise(a, b, np.uint64(q), 3), field.mul(a, b, q))


@numba.njit
def _masked_dot(a, b, mask):
    """What a user writes: a fused masked inner product mod Goldilocks."""
    acc = np.uint64(0)
    for i in range(a.shape[0]):
        if mask[i]:
            acc = snb.gl_add(acc, snb.gl_mul(a[i], b[i]))
    return acc


def test_user_kernel_matches_numpy_twin():
    a, b = _operands(GL, 5000, 2)
    mask = np.random.default_rng(3).random(a.shape[0]) < 0.5
    want = field.dot(a[mask], b[mask], GL)
    assert int(_masked_dot(a, b, mask)) == int(want)


def test_c_kernels_from_njit_code():
    ffi, lib = snb.c_kernels()

    @numba.njit
    def mul_into(out, a, b, p):
        lib.secea_fp_mul(ffi.from_buffer(out), ffi.from_buffer(a), ffi.from_buffer(b), a.size, p)

    for p in (GL, EP):
        a, b = _operands(p, 3000, 4)
        out = np.zeros_like(a)
        mul_into(out, a, b, np.uint64(p))
        assert np.array_equal(out, field.mul(a, b, p))
