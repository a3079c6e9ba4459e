"""Exact matmul mod p: secea_fast vs python-flint nmod_mat (and galois at small sizes).

Target (the project's): 1024x10000 by 10000x65 mod Goldilocks, one thread, >= 2x
python-flint; two threads >= 1.8x one thread.  Group = kernel + shape so each
group holds ours and the peer side by side.
"""
import pytest

import secea_fast
from secea_fast import linalg

from conftest import uniform

flint = pytest.importorskip("flint")

SHAPES = [(128, 10000, 65), (512, 4096, 65), (1024, 10000, 65), (11, 2, 100_000)]
PRIMES = {"goldilocks": secea_fast.GOLDILOCKS, "embedding": secea_fast.EMBEDDING_PRIME}


@pytest.fixture(scope="module")
def data(rng):
    cache = {}

    def get(pname, shape):
        key = (pname, shape)
        if key not in cache:
            p = PRIMES[pname]
            m, k, n = shape
            A, B = uniform(rng, p, (m, k)), uniform(rng, p, (k, n))
            cache[key] = (p, A, B, flint.nmod_mat(A.tolist(), p), flint.nmod_mat(B.tolist(), p))
        return cache[key]
    return get


def _name(shape):
    return "x".join(map(str, shape))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=_name)
@pytest.mark.parametrize("pname", PRIMES)
def test_matmul_ours(benchmark, data, shape, pname, threads):
    p, A, B, _, _ = data(pname, shape)
    benchmark.group = f"matmul {pname} {_name(shape)}"
    benchmark.extra_info.update(macs=shape[0] * shape[1] * shape[2], impl="secea_fast", threads=threads)
    benchmark.pedantic(linalg.matmul, args=(A, B, p), kwargs={"threads": threads}, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("shape", SHAPES, ids=_name)
@pytest.mark.parametrize("pname", PRIMES)
def test_matmul_flint(benchmark, data, shape, pname):
    p, _, _, FA, FB = data(pname, shape)
    benchmark.group = f"matmul {pname} {_name(shape)}"
    benchmark.extra_info.update(macs=shape[0] * shape[1] * shape[2], impl="python-flint nmod_mat", threads=1)
    benchmark.pedantic(lambda: FA * FB, rounds=5, warmup_rounds=1)


def test_matmul_galois_small(benchmark, rng):
    galois = pytest.importorskip("galois")
    p = secea_fast.GOLDILOCKS
    GF = galois.GF(p)
    shape = (32, 256, 65)
    A, B = uniform(rng, p, shape[:2]), uniform(rng, p, shape[1:])
    GA, GB = GF(A), GF(B)
    benchmark.group = f"matmul goldilocks {_name(shape)}"
    benchmark.extra_info.update(macs=shape[0] * shape[1] * shape[2], impl="galois", threads=1)
    benchmark.pedantic(lambda: GA @ GB, rounds=3, warmup_rounds=1)


def test_matmul_ours_small(benchmark, rng):
    p = secea_fast.GOLDILOCKS
    shape = (32, 256, 65)
    A, B = uniform(rng, p, shape[:2]), uniform(rng, p, shape[1:])
    benchmark.group = f"matmul goldilocks {_name(shape)}"
    benchmark.extra_info.update(macs=shape[0] * shape[1] * shape[2], impl="secea_fast", threads=1)
    benchmark.pedantic(linalg.matmul, args=(A, B, p), kwargs={"threads": 1}, rounds=20, warmup_rounds=2)
