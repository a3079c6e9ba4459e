"""Distributed point functions: secea_fast vs OpenSSL AES-CTR (the same
number of AES blocks, through `cryptography`) and sycret (Rust DPF, pip
package `sycret`, EqFactory).

    python -m pytest bench/test_dpf.py --benchmark-json=bench/results/dpf.json
    secea-fast bench summary bench/results/dpf.json

Targets (the project's, DPF kernels): full domain 2^20 with 64-bit outputs <= 1 ms
(early termination) and at least as fast as OpenSSL producing the same AES
blocks; key generation <= 2 us per key for log_domain <= 24.

AES block counts: a full-depth key (early=False) over 2^n costs
2 (2^n - 1) tree blocks + 2^n conversion blocks; a default key (early
termination, e = 3 for Z_2^64: 8 outputs per leaf) costs 2 (2^(n-3) - 1) +
4 2^(n-3).  sycret's keys are fixed to a 2^32 domain (tree
depth 32) and it evaluates point by point (one key row per point); its
full-domain figure is the measured cost of 2^20 point evaluations (64
batches of 2^14 points), per_point_us is that divided by 2^20.
"""
import time

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from conftest import aes_peak_blocks_per_s
from secea_fast import dpf
from secea_fast._native import ffi, lib

N = 20
# AES blocks: 2 per internal tree node plus the Convert blocks of the leaves
# (full-depth keys: 1 per leaf; default early keys, e = 3: 2^(N-3) leaves x 4 blocks)
BLOCKS = {False: 2 * (2**N - 1) + 2**N, True: 2 * (2**(N - 3) - 1) + 4 * 2**(N - 3)}
KEYGEN_COUNT = 10000


def _tag(early):
    return "default (early)" if early else "full depth (early=False)"


@pytest.fixture(scope="module")
def full_keys():
    return {early: dpf.gen(12345, 7, N, early=early)[0] for early in (False, True)}


@pytest.fixture(scope="module")
def full_out():
    out = np.empty(2**N, dtype=np.uint64)
    out[:] = 0          # touch the pages once: no page faults inside the timing
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("early", [True, False], ids=_tag)
def test_full_domain_ours(benchmark, full_keys, full_out, early, threads):
    benchmark.group = f"dpf eval_full 2^{N} u64 {_tag(early)}"
    benchmark.extra_info.update(impl="secea_fast", threads=threads, early=early, aes_blocks=BLOCKS[early],
                                outputs=2**N)
    benchmark.pedantic(dpf.eval_full, args=(full_keys[early],), kwargs={"out": full_out, "threads": threads},
                       rounds=50, warmup_rounds=3)


@pytest.mark.parametrize("early", [True, False], ids=_tag)
def test_full_domain_openssl_same_blocks(benchmark, early):
    nbytes = 16 * BLOCKS[early]
    zeros, out = np.zeros(nbytes, dtype=np.uint8), np.empty(nbytes, dtype=np.uint8)
    enc = Cipher(algorithms.AES(bytes(range(16))), modes.CTR(bytes(16))).encryptor()
    benchmark.group = f"dpf eval_full 2^{N} u64 {_tag(early)}"
    benchmark.extra_info.update(impl="openssl aes-128-ctr (same AES blocks)", threads=1, aes_blocks=BLOCKS[early],
                                bytes=nbytes)
    benchmark.pedantic(enc.update_into, args=(zeros, out), rounds=30, warmup_rounds=2)


@pytest.fixture(scope="module")
def sycret_eval_setup():
    sycret = pytest.importorskip("sycret")
    eq = sycret.EqFactory(n_threads=1)
    keys_a, _ = eq.keygen(1)
    batch = 2**14
    keys = np.ascontiguousarray(np.repeat(keys_a, batch, axis=0))   # sycret takes one key row per point
    xs = np.arange(batch, dtype=np.int64)
    return eq, keys, xs, batch


@pytest.mark.parametrize("early", [True, False], ids=_tag)
def test_full_domain_sycret_pointwise(benchmark, sycret_eval_setup, early):
    eq, keys, xs, batch = sycret_eval_setup
    reps = 2**N // batch

    def run():
        for r in range(reps):
            eq.eval(0, xs + r * batch, keys, n_threads=1)

    benchmark.group = f"dpf eval_full 2^{N} u64 {_tag(early)}"
    benchmark.extra_info.update(impl="sycret EqFactory.eval (pointwise, depth 32)", threads=1, points=2**N)
    benchmark.pedantic(run, rounds=3, warmup_rounds=1)
    if benchmark.stats:                 # None under --benchmark-disable
        benchmark.extra_info["per_point_us"] = benchmark.stats.stats.median / 2**N * 1e6


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [20, 24])
def test_keygen_ours(benchmark, n, threads):
    alphas = np.arange(KEYGEN_COUNT, dtype=np.uint64) * np.uint64(97) % np.uint64(2**n)
    betas = np.arange(KEYGEN_COUNT, dtype=np.uint64)
    benchmark.group = f"dpf keygen {KEYGEN_COUNT} keys log_domain {n}"
    benchmark.extra_info.update(impl="secea_fast", threads=threads, keys=KEYGEN_COUNT, log_domain=n)
    benchmark.pedantic(dpf.gen_batch, args=(alphas, betas, n), kwargs={"threads": threads}, rounds=20,
                       warmup_rounds=2)
    if benchmark.stats:                 # None under --benchmark-disable
        benchmark.extra_info["per_key_us"] = benchmark.stats.stats.median / KEYGEN_COUNT * 1e6


@pytest.mark.parametrize("n", [20, 24])
def test_keygen_sycret(benchmark, n):
    sycret = pytest.importorskip("sycret")
    eq = sycret.EqFactory(n_threads=1)
    benchmark.group = f"dpf keygen {KEYGEN_COUNT} keys log_domain {n}"
    benchmark.extra_info.update(impl="sycret EqFactory.keygen (depth 32)", threads=1, keys=KEYGEN_COUNT)
    benchmark.pedantic(eq.keygen, args=(KEYGEN_COUNT,), rounds=10, warmup_rounds=1)
    if benchmark.stats:                 # None under --benchmark-disable
        benchmark.extra_info["per_key_us"] = benchmark.stats.stats.median / KEYGEN_COUNT * 1e6


@pytest.mark.parametrize("n", [20, 24, 32])
def test_keygen_single_ours(benchmark, n):
    benchmark.group = "dpf keygen one key (Python call)"
    benchmark.extra_info.update(impl="secea_fast", threads=1, keys=1, log_domain=n)
    # 200 calls per round: a round stays well above the timer's resolution
    # (process_time on a loaded machine)
    benchmark.pedantic(dpf.gen, args=(12345, 7, n), rounds=50, iterations=200, warmup_rounds=1)


def test_keygen_single_sycret(benchmark):
    """The peer's single call beside ours (its keys: depth 32, a random alpha)."""
    sycret = pytest.importorskip("sycret")
    eq = sycret.EqFactory(n_threads=1)
    benchmark.group = "dpf keygen one key (Python call)"
    benchmark.extra_info.update(impl="sycret EqFactory.keygen(1) (depth 32)", threads=1, keys=1)
    benchmark.pedantic(eq.keygen, args=(1,), rounds=50, iterations=200, warmup_rounds=1)


# ------------------------------------------------ point evaluation, one point per key

PT_KEYS, PT_DEPTH = 2**12, 32


@pytest.fixture(scope="module")
def point_batch(rng):
    alphas = rng.integers(0, 2**PT_DEPTH, size=PT_KEYS, dtype=np.uint64)
    K0, _ = dpf.gen_batch(alphas, np.ones(PT_KEYS, dtype=np.uint64), PT_DEPTH, early=False)   # depth 32, no early cut
    xs = alphas ^ (rng.integers(0, 2, size=PT_KEYS, dtype=np.uint64))   # half the points on alpha
    return K0, xs


@pytest.mark.parametrize("walk", ["interleaved", "reference"])
def test_points_one_per_key_ours(benchmark, point_batch, aes_peak, walk):
    """secea_dpf_eval_points (the interleaved walk) beside its reference twin
    (one hash_sel pass per level): 4,096 keys of depth 32, one point each,
    one thread; 33 AES blocks per point (32 levels + 1 Convert block)."""
    K0, xs = point_batch
    bodies, parties = np.ascontiguousarray(K0.bodies), np.zeros(PT_KEYS, dtype=np.uint8)
    out = np.empty(PT_KEYS, dtype=np.uint64)
    fn = lib.secea_dpf_eval_points if walk == "interleaved" else lib.secea_dpf_eval_points_ref
    args = (K0.params.shape(), ffi.from_buffer("uint64_t[]", out, require_writable=True), ffi.from_buffer(bodies),
            ffi.from_buffer(parties), ffi.from_buffer("uint64_t[]", xs), PT_KEYS, 1, 1)
    benchmark.group = f"dpf eval_points {PT_KEYS} keys x 1 point depth {PT_DEPTH}"
    benchmark.extra_info.update(impl=f"secea_fast ({walk} walk)", threads=1, points=PT_KEYS, aes_blocks_per_point=33,
                                aes_peak_blocks_per_s=aes_peak)
    benchmark.pedantic(fn, args=args, rounds=50, warmup_rounds=3)
    if benchmark.stats:
        per = benchmark.stats.stats.min / PT_KEYS
        # the walk runs on VAES-256 where the CPU has it: its ceiling is the DPF variant's
        # (twice AES-NI's on such a CPU), not only the AES variant's
        dpf_peak = aes_peak_blocks_per_s(variant="dpf")
        mix = points_peak_ns()
        benchmark.extra_info.update(per_point_ns=per * 1e9, aes_fraction=33 / aes_peak / per,
                                    dpf_peak_blocks_per_s=dpf_peak, dpf_ceiling_fraction=33 / dpf_peak / per,
                                    walk_peak_ns_per_point=mix, walk_ceiling_fraction=mix / (per * 1e9))


def points_peak_ns(n: int = PT_KEYS, reps: int = 20) -> float:
    """The walk's own ceiling (``secea_dpf_points_peak``: the walk of
    ``secea_dpf_eval_points`` on 16 synthetic depth-32 keys in L1, no key
    memory traffic, preparation or conversion) in ns per path, best of
    ``reps`` on the process CPU clock."""
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        lib.secea_dpf_points_peak(n)
        best = min(best, time.process_time() - t)
    return best / n * 1e9


def test_points_walk_peak(benchmark):
    """The walk's ceiling beside the walks above: 4,096 paths of depth 32
    (32 AES blocks each, no Convert block) over 16 keys that stay in L1."""
    benchmark.group = f"dpf eval_points {PT_KEYS} keys x 1 point depth {PT_DEPTH}"
    benchmark.extra_info.update(impl="secea_dpf_points_peak (the walk on keys in L1)", threads=1, points=PT_KEYS,
                                aes_blocks_per_point=32)
    benchmark.pedantic(lib.secea_dpf_points_peak, args=(PT_KEYS,), rounds=50, warmup_rounds=3)
    if benchmark.stats:
        per = benchmark.stats.stats.min / PT_KEYS
        dpf_peak = aes_peak_blocks_per_s(variant="dpf")
        benchmark.extra_info.update(per_point_ns=per * 1e9, dpf_peak_blocks_per_s=dpf_peak,
                                    dpf_ceiling_fraction=32 / dpf_peak / per)


def test_points_one_per_key_sycret(benchmark):
    """The peer on the same shape: 4,096 distinct keys (its domain is 2^32),
    one point each."""
    sycret = pytest.importorskip("sycret")
    eq = sycret.EqFactory(n_threads=1)
    keys_a, _ = eq.keygen(PT_KEYS)
    xs = np.arange(PT_KEYS, dtype=np.int64)
    benchmark.group = f"dpf eval_points {PT_KEYS} keys x 1 point depth {PT_DEPTH}"
    benchmark.extra_info.update(impl="sycret EqFactory.eval (depth 32)", threads=1, points=PT_KEYS)
    benchmark.pedantic(eq.eval, args=(0, xs, keys_a), kwargs={"n_threads": 1}, rounds=20, warmup_rounds=2)
    if benchmark.stats:
        benchmark.extra_info["per_point_ns"] = benchmark.stats.stats.min / PT_KEYS * 1e9


# ------------------------------------------------ SecEmb server kernels

M_ITEMS, D_EMB, USERS = 2**17, 32, 8


@pytest.fixture(scope="module")
def secemb(rng):
    table = rng.integers(0, 2**64, size=(M_ITEMS, D_EMB), dtype=np.uint64, endpoint=False)
    alphas = rng.integers(0, M_ITEMS, size=USERS).astype(np.uint64)
    K0, _ = dpf.gen_batch(alphas, np.ones(USERS, dtype=np.uint64), 17, early=False)   # SecEmb keys keep the path
    states = dpf.path_eval_full(K0)
    cws = rng.integers(0, 2**64, size=(USERS, D_EMB), dtype=np.uint64, endpoint=False)
    return table, K0, states, cws


@pytest.mark.parametrize("threads", [1, 2])
def test_eval_full_dot_fused(benchmark, secemb, threads):
    table, K0, _, _ = secemb
    benchmark.group = f"dpf retrieval {USERS} keys x 2^17 x {D_EMB}"
    benchmark.extra_info.update(impl="secea_fast", threads=threads, macs=USERS * M_ITEMS * D_EMB)
    benchmark.pedantic(dpf.eval_full_dot, args=(K0, table), kwargs={"threads": threads}, rounds=10, warmup_rounds=1)


def test_eval_full_dot_unfused(benchmark, secemb):
    table, K0, _, _ = secemb

    def unfused():
        F = dpf.eval_full_batch(K0, threads=1)
        return np.stack([(F[i][:, None] * table).sum(axis=0, dtype=np.uint64) for i in range(USERS)])

    benchmark.group = f"dpf retrieval {USERS} keys x 2^17 x {D_EMB}"
    benchmark.extra_info.update(impl="eval_full_batch + numpy (unfused)", threads=1, macs=USERS * M_ITEMS * D_EMB)
    benchmark.pedantic(unfused, rounds=3, warmup_rounds=1)


@pytest.mark.parametrize("threads", [1, 2])
def test_convert_accumulate(benchmark, secemb, threads):
    _, _, states, cws = secemb
    acc = np.zeros((M_ITEMS, D_EMB), dtype=np.uint64)
    benchmark.group = f"dpf aggregation {USERS} keys x 2^17 x {D_EMB}"
    benchmark.extra_info.update(impl="secea_fast", threads=threads,
                                aes_blocks=USERS * M_ITEMS * ((D_EMB + 1) // 2))
    benchmark.pedantic(dpf.convert_accumulate, args=(acc, states, 0, cws), kwargs={"threads": threads},
                       rounds=10, warmup_rounds=1)
