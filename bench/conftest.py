"""pytest-benchmark scaling runs.  Not part of the test suite (testpaths =
tests); run with

    python -m pip install -e ".[bench]"
    python -m pytest bench --benchmark-json=bench/results/run.json

and summarise ratios with ``secea-fast bench summary bench/results/run.json``.
Peers (python-flint, galois, cryptography/OpenSSL) come from the ``bench`` extra.
"""
import mmap
import time
from pathlib import Path

import numpy as np
import pytest


def pytest_configure(config):
    """``--benchmark-json=bench/results/X.json`` in a fresh clone: the results directory
    is run output and not in git, so make the file's directory before the run writes it.
    The benchmarks run with the package's malloc settings (``secea_fast.tune_memory``),
    as the command line does."""
    import secea_fast
    secea_fast.tune_memory()
    path = config.getoption("benchmark_json", None)
    # pytest-benchmark 5 opens the file itself (argparse.FileType): only a path names a directory
    path = getattr(path, "name", path)
    if isinstance(path, str) and path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(20261121)   # benchmark data only


def aes_peak_blocks_per_s(clock=time.process_time, n: int = 1 << 24, reps: int = 5, variant: str = "aes") -> float:
    """AES blocks per second of one core at its ceiling, best of ``reps`` on
    ``clock``: ``variant`` "aes", the AES variant's (``secea_aes_peak``: 8
    independent chains of AES rounds on registers), or "dpf", the DPF
    variant's in force (``secea_dpf_aes_peak``: VAES on ymm registers for
    "vaes256", twice the AES-NI ceiling on such a CPU).  The process's CPU
    time by default, so a loaded machine's waits do not count; benchmarks run
    on a loaded machine should use ``--benchmark-timer=time.process_time``
    too, so both sides count the same."""
    from secea_fast._native import lib
    peak = {"aes": lib.secea_aes_peak, "dpf": lib.secea_dpf_aes_peak}[variant]
    best = 0.0
    for _ in range(reps):
        t = clock()
        peak(n)
        best = max(best, n / (clock() - t))
    return best


@pytest.fixture(scope="session")
def aes_peak():
    """The AES ceiling of one core in this run (:func:`aes_peak_blocks_per_s`)."""
    return aes_peak_blocks_per_s()


def uniform(rng, p, shape):
    if p <= 2**63:
        return rng.integers(0, p, size=shape, dtype=np.uint64)
    return rng.integers(0, 2**64 - 1, size=shape, dtype=np.uint64, endpoint=True) % np.uint64(p)


def zero_page(nbytes):
    """``nbytes`` zero bytes, read-only, backed by the kernel's zero page: a private
    read-only anonymous mapping is never written, so its pages all map the zero page and
    reading it touches no memory beyond that page.  OpenSSL (through `cryptography`) has
    no keystream call; encrypting this buffer is its keystream write, reading nothing from
    memory, like ours.  The mapping asks for transparent huge pages (then reads map the 2 MiB
    huge zero page): with 4 KiB pages every page of the buffer is another TLB entry for the
    same physical page, and OpenSSL read 64 MiB of it at 7.5 GB/s against 9.0 GB/s from
    the huge zero page and 9.0-9.1 GB/s from ordinary zeros or random data (2026-11-24)."""
    try:
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    except (AttributeError, TypeError, ValueError, OSError):    # pragma: no cover - not POSIX
        return np.zeros(nbytes, dtype=np.uint8)
    try:
        m.madvise(mmap.MADV_HUGEPAGE)
    except (AttributeError, ValueError, OSError):                # pragma: no cover - no THP
        pass
    return np.frombuffer(m, dtype=np.uint8)
