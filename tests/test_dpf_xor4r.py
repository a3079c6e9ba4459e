"""The XOR retrieval's Four-Russians kernel (``csrc/dpf/xor4r.c``: the
GF(2) product indexed by the table's bits, batches of 256 keys) against its
reference twin, the masked-XOR kernels of ``csrc/dpf/retrieve.c``
(``lib.secea_dpf_set_xor4r(0)``), bit for bit: key counts around the
256-key batch (1, 7, 255, 256, 257, 300, 600), every depth from 1 to 13
(13: two 2^12-leaf subtrees, the second partial, so two threads split the
rows), row counts that are not multiples of the 8-row groups nor of the
subtree width, d = 1, 3, 4, 5 and 64 words, 1 and 2 threads, under the
CPU-backend matrix of tests/conftest.py ("portable" keeps the plain-C path:
the switch must not take the kernel there).  Both servers' answers XOR to
the selected rows."""
import os

import numpy as np
import pytest

from secea_fast import dpf
from secea_fast._native import lib

COUNTS = (1, 7, 255, 256, 257, 300, 600)
DS = (1, 3, 4, 5, 64)


def _rows(n):
    """a row count below 2^n that is not a multiple of 8 (nor of 2^12)"""
    if n <= 2:
        return (1 << n) - 1 if n == 2 else 2
    if n == 12:
        return 3883                      # the MovieLens-1M shape
    if n == 13:
        return 4500                      # the second subtree partial
    return (1 << n) - 3


def _mode(mode, fn):
    prev = lib.secea_dpf_set_xor4r(mode)
    try:
        return fn()
    finally:
        lib.secea_dpf_set_xor4r(prev)


@pytest.mark.parametrize("count", COUNTS)
def test_xor4r_matches_the_masked_xor_twin(backend, count):
    if backend == "portable" and count not in (1, 7):
        pytest.skip("the portable backend keeps the plain-C path in both modes: two counts check it")
    for n in range(1, 14):
        m = _rows(n)
        d = DS[(n + count) % len(DS)]
        if count >= 300 and n < 12:
            d = min(d, 5)                # keeps the plain-C twin of the portable backend fast
        rng = np.random.default_rng(100 * n + count)
        alphas = rng.integers(0, m, count)
        k0, k1, _ = dpf.path_gen_batch(alphas, n)
        table = np.frombuffer(os.urandom(8 * m * d), dtype=np.uint64).reshape(m, d)
        got = []
        for keys, threads in ((k0, 1), (k1, 2)):
            ref = _mode(0, lambda: dpf.path_xor_rows(keys, table, threads=threads))
            new = _mode(2, lambda: dpf.path_xor_rows(keys, table, threads=threads))
            assert new.tobytes() == ref.tobytes(), (n, m, d, threads)
            got.append(new)
        assert np.array_equal((got[0] ^ got[1]).reshape(count, d), table[alphas]), (n, m, d)


@pytest.mark.parametrize("count", (300, 400))
def test_xor4r_auto_mode_at_the_movielens_shape_with_d_64(count):
    """the auto mode at 12 levels, 3,883 rows and d = 64 (the SecEmb
    retrieval's shape) against the twin: 300 keys are one batch of 256 in
    the kernel and a tail of 44 in the masked XOR, 400 two batches (the
    second of 144 keys) in the kernel"""
    n, m, d = 12, 3883, 64
    rng = np.random.default_rng(count)
    alphas = rng.integers(0, m, count)
    k0, k1, _ = dpf.path_gen_batch(alphas, n)
    table = np.frombuffer(os.urandom(8 * m * d), dtype=np.uint64).reshape(m, d)
    for keys in (k0, k1):
        ref = _mode(0, lambda: dpf.path_xor_rows(keys, table, threads=2))
        assert _mode(1, lambda: dpf.path_xor_rows(keys, table, threads=2)).tobytes() == ref.tobytes()
    both = _mode(1, lambda: dpf.path_xor_rows(k0, table) ^ dpf.path_xor_rows(k1, table))
    assert np.array_equal(both, table[alphas])


def test_xor4r_switch_returns_the_previous_mode_and_clamps():
    prev = lib.secea_dpf_set_xor4r(0)
    try:
        assert lib.secea_dpf_set_xor4r(7) == 0
        assert lib.secea_dpf_set_xor4r(-3) == 2
        assert lib.secea_dpf_set_xor4r(1) == 0
    finally:
        lib.secea_dpf_set_xor4r(prev)
    assert prev == 1


def _walk(fused, fn):
    prev = lib.secea_dpf_set_xor4r_walk(fused)
    try:
        return fn()
    finally:
        lib.secea_dpf_set_xor4r_walk(prev)


@pytest.mark.parametrize("count", (1, 7, 255, 257))
def test_xor4r_fused_leaf_level_matches_its_twin(backend, count):
    """the leaf level hashed straight into the control bits (the "vaes256"
    variant, ``secea_dpf_set_xor4r_walk(1)``, the default) against its twin,
    the variant's expand then the gather of the leaves' bits (``(0)``), bit
    for bit, and both against the masked XOR: every depth from 1 to 13 (odd
    leaf counts: a lone last parent; 8-parent groups and their tails), 1 and
    2 threads; on the other backends the switch must change nothing"""
    if backend == "portable" and count != 7:
        pytest.skip("the portable backend keeps the plain-C path: one count checks it")
    for n in range(1, 14):
        m = _rows(n) - (n % 2 if n > 2 else 0)
        d = DS[(n + count) % len(DS)] if n < 12 else 3
        rng = np.random.default_rng(1000 * n + count)
        alphas = rng.integers(0, m, count)
        k0, k1, _ = dpf.path_gen_batch(alphas, n)
        table = np.frombuffer(os.urandom(8 * m * d), dtype=np.uint64).reshape(m, d)
        got = []
        for keys, threads in ((k0, 1), (k1, 2)):
            twin = _walk(0, lambda: _mode(2, lambda: dpf.path_xor_rows(keys, table, threads=threads)))
            new = _walk(1, lambda: _mode(2, lambda: dpf.path_xor_rows(keys, table, threads=threads)))
            ref = _mode(0, lambda: dpf.path_xor_rows(keys, table, threads=threads))
            assert new.tobytes() == twin.tobytes() == ref.tobytes(), (n, m, d, threads)
            got.append(new)
        assert np.array_equal((got[0] ^ got[1]).reshape(count, d), table[alphas]), (n, m, d)


def test_xor4r_walk_switch_returns_the_previous_setting():
    prev = lib.secea_dpf_set_xor4r_walk(0)
    try:
        assert lib.secea_dpf_set_xor4r_walk(5) == 0
        assert lib.secea_dpf_set_xor4r_walk(0) == 1
    finally:
        lib.secea_dpf_set_xor4r_walk(prev)
    assert prev == 1
