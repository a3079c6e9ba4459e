import os
import random

import numpy as np
import pytest

import secea_fast

# primes the kernels are compared on: tiny, near 2^31, 2^61, the defaults, near 2^64
PRIMES = [2, 3, 65537, 2**31 - 1, 2**31 + 11, 2**61 - 1, secea_fast.EMBEDDING_PRIME,
          2**50 - 27, 2**52 - 47, 2**52 + 21, secea_fast.GOLDILOCKS, 2**64 - 59]


# ----------------------------------------------------------------- the CPU-backend matrix
# Rule: the matrix runs exactly the tests that request the `backend` fixture, and only the
# kernel test modules below may request it (each of their `backend` tests compares a C kernel
# with a reference); a test elsewhere that asks for it is a collection error.  A kernel test
# runs once per backend that selects a different set of kernels on this CPU: "auto",
# "portable", and "avx2" unless it is the same as "auto".  "avx2" only lowers the dispatch
# ceiling below VAES and AVX-512 (csrc/common/dispatch.c), so on a CPU with neither (every
# AVX2-only x86, every ARM) it selects exactly what "auto" selects and a third run would
# repeat the second.  SECEA_FAST_TEST_BACKENDS=all runs all three anyway.
KERNEL_MODULES = frozenset({"test_dpf", "test_field", "test_linalg", "test_paillier",
                            "test_poly", "test_prg", "test_properties"})
BACKENDS = ("auto", "portable", "avx2")
# the features secea_dispatch_init's "avx2" ceiling hides (what backend_info reports of them)
_ABOVE_AVX2 = ("vaes", "vaes256", "avx512f", "avx512dq", "avx512ifma")


def kernel_backends() -> list:
    """The backends whose kernel selections differ on this CPU (see the rule above)."""
    forced = os.environ.get("SECEA_FAST_TEST_BACKENDS", "")
    if forced not in ("", "all"):
        raise ValueError(f"SECEA_FAST_TEST_BACKENDS must be 'all' or unset, got {forced!r}")
    cpu = secea_fast.backend_info()["cpu"]
    if forced == "all" or any(cpu.get(f, True) for f in _ABOVE_AVX2):
        return list(BACKENDS)
    return ["auto", "portable"]


def pytest_generate_tests(metafunc):
    if "backend" not in metafunc.fixturenames:
        return
    module = metafunc.module.__name__.rpartition(".")[2]
    if module not in KERNEL_MODULES:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} requests the `backend` fixture but {module} is not a "
            "kernel test module (tests/conftest.py, KERNEL_MODULES): the CPU-backend matrix "
            "runs only where a kernel is under test")
    metafunc.parametrize("backend", kernel_backends(), indirect=True)


@pytest.fixture
def backend(request):
    """Run a test on the best variant the CPU has, on the portable C path and
    (where it differs from the best) on the variants of an AVX2-only CPU (no
    VAES, no AVX-512)."""
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
