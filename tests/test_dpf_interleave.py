"""The server kernels' interleaved walk (several keys' top tree levels in one
hash batch) against the reference walk of one tree at a time
(``lib.secea_dpf_set_interleave``): bit for bit, for the XOR retrieval, the
fused dot product and the fused aggregation in both rings, over every DPF
variant this CPU runs, batch sizes around the 8-key groups (1 and odd counts
included), trees below, at and above the 2^12-leaf subtree height, and
tables that do not fill the domain."""
import os

import numpy as np
import pytest

import secea_fast
from secea_fast import dpf
from secea_fast._native import lib

from _switches import check_reports_previous

VARIANTS = ("portable", "aesni", "vaes256", "vaes", "armce")
COUNTS = (1, 3, 8, 9, 17)
# (log_domain, m): a 1-level tree, a partial domain, the MovieLens-1M shape's
# 12 levels, and 13 levels (a top walk above the 2^12-leaf subtrees, the
# second subtree partial)
SHAPES = ((1, 2), (5, 19), (12, 3883), (13, 4500))


def _both_walks(fn):
    """fn() under the reference walk, then under the interleaved one."""
    prev = lib.secea_dpf_set_interleave(0)
    try:
        ref = fn()
        lib.secea_dpf_set_interleave(1)
        new = fn()
    finally:
        lib.secea_dpf_set_interleave(prev)
    return ref, new


@pytest.fixture(params=VARIANTS)
def variant(request):
    if lib.secea_dpf_select_variant(request.param.encode()) != 0:
        pytest.skip(f"this CPU does not run the {request.param} variant")
    yield request.param
    secea_fast.set_backend(secea_fast.get_backend())


def _keys(count, n, m, seed):
    rng = np.random.default_rng(seed)
    alphas = rng.integers(0, m, count)
    return alphas, dpf.path_gen_batch(alphas, n)


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("n, m", SHAPES)
def test_xor_rows_interleaved_matches_reference(variant, count, n, m):
    alphas, (k0, k1, _) = _keys(count, n, m, 1000 * n + count)
    table = np.frombuffer(os.urandom(8 * m * 6), dtype=np.uint64).reshape(m, 6)   # a 4-word slice + 2
    r0, i0 = _both_walks(lambda: dpf.path_xor_rows(k0, table, threads=1))
    r1, i1 = _both_walks(lambda: dpf.path_xor_rows(k1, table, threads=2))
    assert i0.tobytes() == r0.tobytes() and i1.tobytes() == r1.tobytes()
    got = (i0 ^ i1).reshape(count, 6)
    assert np.array_equal(got, table[alphas])     # and both are right


@pytest.mark.parametrize("group, dtype", (("u64", np.uint64), ("u32", np.uint32)))
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("n, m", SHAPES)
def test_convert_accumulate_interleaved_matches_reference(variant, group, dtype, count, n, m):
    d = 5   # full and partial 16-byte blocks in both rings
    alphas, (k0, k1, sec) = _keys(count, n, m, 7 + 1000 * n + count)
    rng = np.random.default_rng(count)
    betas = rng.integers(0, 1 << 32, (count, d), dtype=np.uint64)
    cw = dpf.convert_gen_batch(sec, betas, group, domain=3)
    start = np.frombuffer(os.urandom(m * d * np.dtype(dtype).itemsize), dtype=dtype).reshape(m, d)
    outs = []
    for keys, party, threads in ((k0, 0, 1), (k1, 1, 2)):
        ref, new = _both_walks(lambda: dpf.path_convert_accumulate(start.copy(), keys, party, cw, domain=3,
                                                                   threads=threads))
        assert new.tobytes() == ref.tobytes()
        outs.append(new)
    want = np.zeros((m, d), dtype=np.uint64)
    np.add.at(want, alphas, betas)
    got = (outs[0].astype(np.uint64) + outs[1].astype(np.uint64) - 2 * start.astype(np.uint64))
    mask = np.uint64(0xFFFFFFFF if dtype == np.uint32 else 2**64 - 1)
    assert np.array_equal(got & mask, want & mask)


@pytest.mark.parametrize("early", (False, True))
@pytest.mark.parametrize("count", COUNTS)
def test_eval_full_dot_interleaved_matches_reference(variant, early, count):
    n, m = 13, 4500
    rng = np.random.default_rng(count + 50 * early)
    alphas = rng.integers(0, m, count)
    betas = rng.integers(1, 1 << 40, count, dtype=np.uint64)
    k0, k1 = dpf.gen_batch(alphas, betas, n, early=early)
    table = np.frombuffer(os.urandom(8 * m * 2), dtype=np.uint64).reshape(m, 2)
    r0, i0 = _both_walks(lambda: dpf.eval_full_dot(k0, table, threads=1))
    r1, i1 = _both_walks(lambda: dpf.eval_full_dot(k1, table, threads=2))
    assert i0.tobytes() == r0.tobytes() and i1.tobytes() == r1.tobytes()
    want = betas[:, None] * table[alphas]
    assert np.array_equal((i0 + i1).reshape(count, 2), want)


def test_interleave_switch_returns_the_previous_setting():
    check_reports_previous(lib.secea_dpf_set_interleave, 1, 0, [(5, 0), (1, 1)])
