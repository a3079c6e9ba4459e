"""Numba kernels written with ``secea_fast.numba`` against the package's C
kernels, same inputs, one thread: element-wise products and an inner product
over 2^20 elements, both primes.  Where a Numba kernel beat the C one, the
package would use it there (docs/PERFORMANCE.md, "Numba interop").

    python -m pytest bench/test_numba.py --benchmark-only
"""
import numpy as np
import pytest

import secea_fast
from secea_fast import field

from conftest import uniform

numba = pytest.importorskip("numba")
snb = pytest.importorskip("secea_fast.numba")

N = 1 << 20
PRIMES = {"goldilocks": secea_fast.GOLDILOCKS, "embedding": secea_fast.EMBEDDING_PRIME}


@numba.njit(cache=False)
def _mul_gl(out, a, b):
    for i in range(a.shape[0]):
        out[i] = snb.gl_mul(a[i], b[i])


@numba.njit(cache=False)
def _mul_small(out, a, b, p):
    for i in range(a.shape[0]):
        out[i] = snb.mulmod(a[i], b[i], p)


@numba.njit(cache=False)
def _dot_gl(a, b):
    acc = np.uint64(0)
    for i in range(a.shape[0]):
        acc = snb.gl_add(acc, snb.gl_mul(a[i], b[i]))
    return acc


@numba.njit(cache=False)
def _dot_small(a, b, p):
    acc = np.uint64(0)
    for i in range(a.shape[0]):
        acc = snb.addmod(acc, snb.mulmod(a[i], b[i], p), p)
    return acc


@pytest.fixture(scope="module")
def data(rng):
    return {k: (p, uniform(rng, p, N), uniform(rng, p, N)) for k, p in PRIMES.items()}


@pytest.mark.parametrize("pname", PRIMES)
@pytest.mark.parametrize("impl", ["C", "C-checked", "numba"])
def test_numba_mul(benchmark, data, pname, impl):
    """Equal work: "C" is the raw kernel (through cffi) and "numba" the njit
    loop, both into a preallocated output, neither checking its inputs;
    "C-checked" is the public ``field.mul`` (checks both inputs are reduced,
    allocates its output)."""
    p, a, b = data[pname]
    out = np.empty_like(a)
    benchmark.group = f"elementwise mul {pname} 2^20"
    benchmark.extra_info.update(impl=impl, threads=1)
    if impl == "C":
        ffi, lib = snb.c_kernels()
        po, pa, pb = ffi.from_buffer("uint64_t[]", out), ffi.from_buffer("uint64_t[]", a), \
            ffi.from_buffer("uint64_t[]", b)
        fn = lambda: lib.secea_fp_mul(po, pa, pb, N, p)     # noqa: E731
    elif impl == "C-checked":
        fn = lambda: field.mul(a, b, p)                      # noqa: E731
    elif pname == "goldilocks":
        fn = lambda: _mul_gl(out, a, b)                      # noqa: E731
    else:
        fn = lambda: _mul_small(out, a, b, np.uint64(p))     # noqa: E731
    fn()
    benchmark.pedantic(fn, rounds=20, warmup_rounds=2)
    if impl != "C-checked":
        assert np.array_equal(out, field.mul(a, b, p))


@pytest.mark.parametrize("pname", PRIMES)
@pytest.mark.parametrize("impl", ["C", "numba"])
def test_numba_dot(benchmark, data, pname, impl):
    p, a, b = data[pname]
    benchmark.group = f"inner product {pname} 2^20"
    benchmark.extra_info.update(impl=impl, threads=1)
    if impl == "C":
        fn = lambda: field.dot(a, b, p)                      # noqa: E731
    elif pname == "goldilocks":
        fn = lambda: _dot_gl(a, b)                           # noqa: E731
    else:
        fn = lambda: _dot_small(a, b, np.uint64(p))          # noqa: E731
    got = benchmark.pedantic(fn, rounds=20, warmup_rounds=2)
    assert int(got) == int(field.dot(a, b, p))
