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

from _switches import check_reports_previous, under

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


def _instance(seed, n, m, d, count):
    """``count`` random rows of ``m`` (their indices), the two servers' keys
    for them at depth ``n``, a random ``m`` x ``d`` table of words"""
    alphas = np.random.default_rng(seed).integers(0, m, count)
    k0, k1, _ = dpf.path_gen_batch(alphas, n)
    table = np.frombuffer(os.urandom(8 * m * d), dtype=np.uint64).reshape(m, d)
    return alphas, (k0, k1), table


def _check_servers(alphas, keys, table, where, forms):
    """Server 0 on 1 thread, server 1 on 2: ``forms(xor_rows)`` runs the
    retrieval ``xor_rows()`` under each switch setting to compare, new
    first; all agree bit for bit, and the servers' answers XOR to the
    selected rows."""
    got = []
    for k, threads in zip(keys, (1, 2)):
        out = forms(lambda: dpf.path_xor_rows(k, table, threads=threads))
        assert all(o.tobytes() == out[0].tobytes() for o in out[1:]), (*where, threads)
        got.append(out[0])
    assert np.array_equal((got[0] ^ got[1]).reshape(len(alphas), table.shape[1]), table[alphas]), where


def _mode(mode, fn):
    return under(lib.secea_dpf_set_xor4r, mode, fn)


@pytest.mark.parametrize("count", COUNTS)
def test_xor4r_matches_the_masked_xor_twin(backend, count):
    if backend == "portable" and count not in (1, 7):
        pytest.skip("the portable backend keeps the plain-C path in both modes: two counts check it")
    for n in range(1, 14):
        m = _rows(n)
        d = DS[(n + count) % len(DS)]
        if count >= 300 and n < 12:
            d = min(d, 5)                # keeps the plain-C twin of the portable backend fast
        alphas, keys, table = _instance(100 * n + count, n, m, d, count)
        _check_servers(alphas, keys, table, (n, m, d), lambda xor_rows: [
            _mode(2, xor_rows), _mode(0, xor_rows)])


@pytest.mark.parametrize("count", (300, 400))
def test_xor4r_auto_mode_at_the_movielens_shape_with_d_64(count):
    """the auto mode at 12 levels, 3,883 rows and d = 64 (the SecEmb
    retrieval's shape) against the twin: 300 keys are one batch of 256 in
    the kernel and a tail of 44 in the masked XOR, 400 two batches (the
    second of 144 keys) in the kernel"""
    n, m, d = 12, 3883, 64
    alphas, (k0, k1), table = _instance(count, n, m, d, count)
    for keys in (k0, k1):
        ref = _mode(0, lambda: dpf.path_xor_rows(keys, table, threads=2))
        assert _mode(1, lambda: dpf.path_xor_rows(keys, table, threads=2)).tobytes() == ref.tobytes()
    both = _mode(1, lambda: dpf.path_xor_rows(k0, table) ^ dpf.path_xor_rows(k1, table))
    assert np.array_equal(both, table[alphas])


def test_xor4r_switch_returns_the_previous_mode_and_clamps():
    check_reports_previous(lib.secea_dpf_set_xor4r, 1, 0, [(7, 0), (-3, 2), (1, 0)])


def _walk(fused, fn):
    return under(lib.secea_dpf_set_xor4r_walk, fused, fn)


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
        alphas, keys, table = _instance(1000 * n + count, n, m, d, count)
        _check_servers(alphas, keys, table, (n, m, d), lambda xor_rows: [
            _walk(1, lambda: _mode(2, xor_rows)), _walk(0, lambda: _mode(2, xor_rows)), _mode(0, xor_rows)])


def test_xor4r_walk_switch_returns_the_previous_setting():
    check_reports_previous(lib.secea_dpf_set_xor4r_walk, 1, 0, [(5, 0), (0, 1)])
