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
# runs once per backend that selects different kernels for the families its module tests:
# "auto", "portable", and "avx2" unless "avx2" selects what "auto" selects for every family
# of the module.  "avx2" only lowers the dispatch ceiling below VAES and AVX-512
# (csrc/common/dispatch.c), so on a CPU with neither (every AVX2-only x86, every ARM) it
# repeats "auto" everywhere, and on a CPU with VAES but no AVX-512 (Zen 3) only the DPF
# family differs.  SECEA_FAST_TEST_BACKENDS=all runs all three everywhere anyway.
# The kernel families (backend_info()["kernels"]) each kernel test module exercises:
MODULE_FAMILIES = {"test_dpf": {"dpf", "aes"}, "test_dpf_xor4r": {"dpf"}, "test_prg": {"aes", "field"},
                   "test_field": {"field"},
                   "test_linalg": {"matmul", "field"}, "test_paillier": {"bignum"},
                   "test_poly": {"ntt", "field", "matmul"}, "test_properties": {"ntt", "field", "matmul"}}
KERNEL_MODULES = frozenset(MODULE_FAMILIES)
BACKENDS = ("auto", "portable", "avx2")
_CHOSEN: dict = {}


def backend_kernels() -> dict:
    """backend name -> the kernel variant each family selects on this CPU."""
    if not _CHOSEN:
        before = secea_fast.get_backend()
        try:
            for name in BACKENDS:
                secea_fast.set_backend(name)
                _CHOSEN[name] = dict(secea_fast.backend_info()["kernels"])
        finally:
            secea_fast.set_backend(before)
    return _CHOSEN


def kernel_backends(module: str) -> list:
    """The backends whose kernel selections differ on this CPU for ``module``'s
    families (see the rule above)."""
    forced = os.environ.get("SECEA_FAST_TEST_BACKENDS", "")
    if forced not in ("", "all"):
        raise ValueError(f"SECEA_FAST_TEST_BACKENDS must be 'all' or unset, got {forced!r}")
    chosen = backend_kernels()
    if forced == "all" or any(chosen["avx2"][f] != chosen["auto"][f] for f in MODULE_FAMILIES[module]):
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
    metafunc.parametrize("backend", kernel_backends(module), indirect=True)


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
