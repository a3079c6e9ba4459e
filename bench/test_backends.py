"""One figure per kernel backend: the same work on ``auto`` (the best variants
the CPU has), ``avx2`` (what an AVX2 / AES-NI CPU without VAES or AVX-512
runs) and ``portable`` (the plain C that every other CPU, ARM included,
runs), selected with ``secea_fast.set_backend`` inside each benchmark and
restored after it.

    python -m pytest bench/test_backends.py --benchmark-only
    secea-fast bench summary bench/results/backends.json   # with --benchmark-json=...

Groups (``backends <kernel>``; ``extra_info``: ``suite="backends"``,
``backend``, ``kernel``, and the variant each kernel family ran,
``variants``, from ``secea_fast.backend_info()``):

* ``aes128-ctr keystream 1 MiB``: ``prg.aes128_ctr_into`` into a
  preallocated buffer, one thread (GB/s in the summary);
* ``dpf eval_full 2^20 u64 default`` / ``early``: one key's full-domain
  evaluation, one thread (AES block counts as in bench/test_dpf.py);
* ``matmul goldilocks 128x10000x65``: ``linalg.matmul``, one thread;
* ``matmul embedding 11x2x100000``: a flat product (the thin share
  polynomials of bench/test_osfl.py), one thread.

Few rounds: the portable DPF takes about 0.1 s per default evaluation.
``secea-fast bench report`` lists these in its "Backends" table.
"""
import os

import numpy as np
import pytest

import secea_fast
from secea_fast import dpf, linalg, prg

from conftest import uniform

BACKENDS = ["auto", "avx2", "portable"]
SUITE = "backends"
N = 20
DPF_BLOCKS = {False: 2 * (2**N - 1) + 2**N, True: 2 * (2**(N - 3) - 1) + 4 * 2**(N - 3)}
MATMUL = (128, 10000, 65)
MATMUL_FLAT = (11, 2, 100_000)
AES_BYTES = 1 << 20


@pytest.fixture
def use_backend(request):
    """Selects the parametrised backend for the benchmark, restores the previous one."""
    before = secea_fast.get_backend()
    secea_fast.set_backend(request.param)
    yield request.param
    secea_fast.set_backend(before)


def _info(benchmark, name, kernel, **extra):
    benchmark.group = f"{SUITE} {kernel}"
    benchmark.extra_info.update(impl="secea_fast", suite=SUITE, backend=name, kernel=kernel,
                                threads=1, variants=secea_fast.backend_info()["kernels"], **extra)


@pytest.mark.parametrize("use_backend", BACKENDS, indirect=True)
def test_aes_ctr_keystream(benchmark, use_backend):
    out = np.empty(AES_BYTES, dtype=np.uint8)
    out[:] = 1
    key, iv = os.urandom(16), os.urandom(16)
    _info(benchmark, use_backend, "aes128-ctr keystream 1 MiB", bytes=AES_BYTES)
    benchmark.pedantic(prg.aes128_ctr_into, args=(key, iv, out), rounds=20, warmup_rounds=2)


@pytest.mark.parametrize("early", [False, True], ids=["default", "early"])
@pytest.mark.parametrize("use_backend", BACKENDS, indirect=True)
def test_dpf_full_domain(benchmark, use_backend, early):
    key = dpf.gen(12345, 7, N, early=early)[0]
    out = np.empty(2**N, dtype=np.uint64)
    out[:] = 0
    _info(benchmark, use_backend, f"dpf eval_full 2^{N} u64 {'early' if early else 'default'}",
          aes_blocks=DPF_BLOCKS[early], outputs=2**N)
    benchmark.pedantic(dpf.eval_full, args=(key,), kwargs={"out": out, "threads": 1},
                       rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("use_backend", BACKENDS, indirect=True)
def test_matmul(benchmark, use_backend, rng):
    p = secea_fast.GOLDILOCKS
    m, k, n = MATMUL
    A, B = uniform(rng, p, (m, k)), uniform(rng, p, (k, n))
    _info(benchmark, use_backend, f"matmul goldilocks {m}x{k}x{n}", macs=m * k * n)
    benchmark.pedantic(linalg.matmul, args=(A, B, p), kwargs={"threads": 1}, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("use_backend", BACKENDS, indirect=True)
def test_matmul_flat(benchmark, use_backend, rng):
    p = secea_fast.EMBEDDING_PRIME
    m, k, n = MATMUL_FLAT
    A, B = uniform(rng, p, (m, k)), uniform(rng, p, (k, n))
    _info(benchmark, use_backend, f"matmul embedding {m}x{k}x{n}", macs=m * k * n)
    benchmark.pedantic(linalg.matmul, args=(A, B, p), kwargs={"threads": 1}, rounds=10, warmup_rounds=1)
