"""pytest-benchmark scaling runs.  Not part of the test suite (testpaths =
tests); run with

    python -m pip install -e ".[bench]"
    python -m pytest bench --benchmark-json=bench/results/run.json

and summarise ratios with ``python bench/report.py bench/results/run.json``.
Peers (python-flint, galois, cryptography/OpenSSL) come from the ``bench`` extra.
"""
from pathlib import Path

import numpy as np
import pytest


def pytest_configure(config):
    """``--benchmark-json=bench/results/X.json`` in a fresh clone: the results directory
    is run output and not in git, so make the file's directory before the run writes it."""
    path = config.getoption("benchmark_json", None)
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(20261121)   # benchmark data only


def uniform(rng, p, shape):
    if p <= 2**63:
        return rng.integers(0, p, size=shape, dtype=np.uint64)
    return rng.integers(0, 2**64 - 1, size=shape, dtype=np.uint64, endpoint=True) % np.uint64(p)
