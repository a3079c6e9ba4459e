"""galois interop: ``secea_fast.galois.matmul`` against galois's own ``A @ B``
on GF(p) arrays, conversion both ways included (galois stores elements of both
primes of the package as Python ints, dtype object).

Target: >= 100x galois at 256 x 4000 x 65 over Goldilocks.

    python -m pytest bench/test_galois.py --benchmark-only
"""
import pytest

import secea_fast

from conftest import uniform

galois = pytest.importorskip("galois")
sg = pytest.importorskip("secea_fast.galois")

SHAPE = (256, 4000, 65)
PRIMES = {"goldilocks": secea_fast.GOLDILOCKS, "embedding": secea_fast.EMBEDDING_PRIME}


@pytest.fixture(scope="module")
def operands(rng):
    cache = {}

    def get(pname):
        if pname not in cache:
            p = PRIMES[pname]
            GF = galois.GF(p)
            A, B = uniform(rng, p, SHAPE[:2]), uniform(rng, p, SHAPE[1:])
            cache[pname] = (GF(A), GF(B))
        return cache[pname]
    return get


@pytest.mark.parametrize("pname", PRIMES)
def test_galois_matmul_galois(benchmark, operands, pname):
    GA, GB = operands(pname)
    benchmark.group = f"galois matmul {pname} 256x4000x65"
    benchmark.extra_info.update(impl="galois A @ B", threads=1)
    C = benchmark.pedantic(lambda: GA @ GB, rounds=1, iterations=1)
    assert type(C) is type(GA)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("pname", PRIMES)
def test_galois_matmul_ours(benchmark, operands, pname, threads):
    GA, GB = operands(pname)
    benchmark.group = f"galois matmul {pname} 256x4000x65"
    benchmark.extra_info.update(impl="secea_fast.galois.matmul (conversions included)", threads=threads)
    C = benchmark.pedantic(sg.matmul, args=(GA, GB), kwargs={"threads": threads}, rounds=5, warmup_rounds=1)
    assert type(C) is type(GA)
    assert C[:2].tolist() == (GA[:2] @ GB).tolist()          # bit for bit against galois (two rows)
