import random

import numpy as np
import pytest

import secea_fast

# primes the kernels are compared on: tiny, near 2^31, 2^61, the defaults, near 2^64
PRIMES = [2, 3, 65537, 2**31 - 1, 2**31 + 11, 2**61 - 1, secea_fast.EMBEDDING_PRIME,
          2**50 - 27, 2**52 - 47, 2**52 + 21, secea_fast.GOLDILOCKS, 2**64 - 59]


@pytest.fixture(params=["auto", "portable", "avx2"])
def backend(request):
    """Run a test on the best variant the CPU has, on the portable C path and
    on the variants of an AVX2-only CPU (no VAES, no AVX-512)."""
    before = secea_fast.get_backend()
    secea_fast.set_backend(request.param)
    yield request.param
    secea_fast.set_backend(before)


@pytest.fixture
def no_insecure_rng(monkeypatch):
    """Make `random` and `numpy.random` raise: secret-generating code must not use them."""
    def boom(*args, **kwargs):
        raise AssertionError("insecure RNG used for secrets")

    for name in ("random", "randint", "randrange", "getrandbits", "choice", "shuffle", "sample",
                 "uniform", "randbytes"):
        monkeypatch.setattr(random, name, boom)
    for name in ("default_rng", "random", "randint", "integers", "bytes", "rand", "randn",
                 "choice", "RandomState", "Generator", "seed"):
        if hasattr(np.random, name):
            monkeypatch.setattr(np.random, name, boom)
    yield


def rand_elems(rng, p, shape, edge=True):
    """Uniform residues mod p with edge values 0, 1, p-1 planted (test data only)."""
    x = rng.integers(0, p, size=shape, dtype=np.uint64, endpoint=False) if p <= 2**63 else \
        (rng.integers(0, 2**64 - 1, size=shape, dtype=np.uint64, endpoint=True) % np.uint64(p))
    if edge and x.size >= 3:
        flat = x.reshape(-1)
        flat[0], flat[1], flat[-1] = 0, 1, p - 1
    return x
