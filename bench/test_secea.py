"""SecEA (Tang, Zhu, Li, Zhang, Sun, 2022) at the paper's shapes.

* MovieLens-1M shape (M = 9,746 entities, N = 5, T = 1, d = 128): a whole
  simulated round for all parties with 1 and 2 processes; reported per phase
  in core-seconds beside the paper's Table 6 (LightGCN / ML-1M, N = 5:
  offline 88.78 s, coding 7.35 s, communication 0.64 s with 20 processes on a
  12-core Xeon), the protocol overhead beyond the response products at the
  kernel speed measured in the same run, and the 2-process speedup (also
  measured with 1- and 2-process rounds alternating).
* Census-Income shape (M = 48,842, N = 5, d = 4, sample-level partition):
  seconds per round and peak memory (paper, Table 4: 3,293 s per round).
* Entity union (Sec. 4.1): N = 5 clients of 10^4 and 10^5 entities.

    python -m pytest bench/test_secea.py --benchmark-only -s
"""
import os
import resource
import time

import numpy as np
import pytest

from secea_fast import EMBEDDING_PRIME as P, linalg
from secea_fast import workloads
from secea_fast.protocols import secea

PAPER_T6_ML1M = {"offline": 88.7823, "coding": 7.3514, "comm.": 0.6446}
PAPER_T4_CENSUS = 3293.0407


@pytest.fixture(scope="module")
def ml1m():
    return workloads.workload("movielens-1m", N=5)


def _kernel_rate(M, sub, rows=192, repeat=3):
    """Multiply-adds per second of the response product's shape, one thread."""
    rng = np.random.default_rng(1)
    A = rng.integers(0, P, (rows, M), dtype=np.uint64)
    B = rng.integers(0, P, (M, sub), dtype=np.uint64)
    best = min(_timed(lambda: linalg.matmul(A, B, P, threads=1)) for _ in range(repeat))
    return rows * M * sub / best


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


ML1M_ROUNDS = int(os.environ.get("SECEA_BENCH_ML1M_ROUNDS", "3"))


ROUND_PHASES = ("encode", "offline", "responses", "noise", "decode")   # a round without the union


def _round_core(res):
    return sum(res.seconds[ph] for ph in ROUND_PHASES)


def _round_wall(res):
    return sum(res.wall[ph] for ph in ROUND_PHASES)


@pytest.mark.parametrize("processes", [1, 2])
def test_secea_round_ml1m(benchmark, ml1m, processes):
    """ML1M_ROUNDS rounds (default 3, env SECEA_BENCH_ML1M_ROUNDS), each
    followed by the kernel-rate measurement: the reported round is the median
    of the per-round overheads (this VM's speed drifts within minutes)."""
    runs = []

    def one():
        res = secea.run_round(ml1m, processes=processes, threads=1, block_size=192)
        runs.append((res, _kernel_rate(res.union_size, res.params.sub)))
        return res

    benchmark.pedantic(one, rounds=ML1M_ROUNDS, iterations=1)
    prm = runs[0][0].params
    sizes = [len(x) for x in ml1m]
    macs = sum(sizes) * runs[0][0].union_size * prm.sub * prm.N
    overheads = [(_round_core(r) - macs / rate) / (macs / rate) for r, rate in runs]
    res, rate = runs[sorted(range(len(runs)), key=overheads.__getitem__)[len(runs) // 2]]
    kernel_s = macs / rate
    round_core = _round_core(res)
    round_wall = _round_wall(res)
    info = {
        "processes": processes, "M": res.union_size, "core_seconds": res.seconds,
        "wall_seconds": res.wall, "bytes_via_server": res.bytes,
        "response_macs": macs, "kernel_rate_gmacs": rate / 1e9,
        "products_at_kernel_speed_s": kernel_s,
        "overhead_beyond_products": (round_core - kernel_s) / kernel_s,
        "round_wall_s": round_wall, "paper_table6_ml1m_s": PAPER_T6_ML1M,
        "overheads_all_rounds": overheads,
        "round_walls_all_rounds": [_round_wall(r) for r, _ in runs],
    }
    benchmark.extra_info.update(info)
    print(f"\nML-1M shape, {processes} process(es): round {round_wall:.2f} s wall, "
          f"{round_core:.2f} core-s; products at kernel speed ({rate / 1e9:.2f} G MAC/s) "
          f"{kernel_s:.2f} s; overhead {100 * info['overhead_beyond_products']:.0f}% (median of "
          f"{', '.join(f'{100 * o:.0f}%' for o in overheads)})")
    print(res.table())
    print(f"paper Table 6 (20 processes): {PAPER_T6_ML1M}")
    walls = sorted(info["round_walls_all_rounds"])
    test_secea_round_ml1m.walls[processes] = walls[len(walls) // 2]
    if len(test_secea_round_ml1m.walls) == 2:
        sp = test_secea_round_ml1m.walls[1] / test_secea_round_ml1m.walls[2]
        benchmark.extra_info["speedup_2_over_1"] = sp
        print(f"2 processes vs 1 (medians of the runs above, minutes apart): {sp:.2f}x")


test_secea_round_ml1m.walls = {}


def test_secea_speedup_ml1m_alternating(benchmark, ml1m):
    """2 processes over 1 measured as docs/PERFORMANCE.md asks for ratios: the two
    alternate round by round (1, 2, 1, 2, ...), so this VM's drift, which
    moves a round by up to 25% within minutes, falls on both alike; the
    median of the ML1M_ROUNDS per-pair ratios of round walls is reported."""
    pairs = []

    def one():
        w = {P_: _round_wall(secea.run_round(ml1m, processes=P_, threads=1, block_size=192))
             for P_ in (1, 2)}
        pairs.append((w[1], w[2]))

    benchmark.pedantic(one, rounds=ML1M_ROUNDS, iterations=1)
    ratios = sorted(a / b for a, b in pairs)
    med = ratios[len(ratios) // 2]
    benchmark.extra_info.update({"round_walls_1_2": pairs, "speedup_2_over_1_pairs": ratios,
                                 "speedup_2_over_1_alternating": med})
    print(f"\nML-1M shape, 1 and 2 processes alternating: round walls "
          f"{', '.join(f'{a:.2f}/{b:.2f}' for a, b in pairs)} s; 2 over 1 {med:.2f}x "
          f"(median of {', '.join(f'{r:.2f}' for r in ratios)})")


def test_secea_round_census(benchmark):
    local = workloads.workload("census-income", N=5)
    res = benchmark.pedantic(lambda: secea.run_round(local, processes=2), rounds=1, iterations=1)
    peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    round_wall = _round_wall(res)
    benchmark.extra_info.update({"M": res.union_size, "core_seconds": res.seconds,
                                 "wall_seconds": res.wall, "round_wall_s": round_wall,
                                 "peak_rss_mb": peak_kb / 1024,
                                 "paper_table4_round_s": PAPER_T4_CENSUS})
    print(f"\nCensus shape: round {round_wall:.1f} s wall (+ union {res.wall['union']:.1f} s "
          f"once), peak RSS {peak_kb / 1024:.0f} MB; paper Table 4: {PAPER_T4_CENSUS} s")
    print(res.table())


@pytest.mark.parametrize("k", [10**4, 10**5])
def test_entity_union(benchmark, k):
    rng = np.random.default_rng(k)
    universe = 3 * k
    sets = [[int(x) for x in rng.choice(universe, k, replace=False)] for _ in range(5)]
    union = benchmark.pedantic(lambda: secea.entity_union(sets), rounds=1, iterations=1)
    assert len(union) == len(set().union(*map(set, sets)))
    benchmark.extra_info.update({"N": 5, "k": k, "union": int(len(union))})


def test_secea_session_auth_cost(benchmark):
    """What the deployment rules cost in process (same run, alternating):
    ``run_round`` through the sessions with roster-signed keys and every
    check, the same sessions without a roster (``authenticate=False``), and
    the executor's block path (no sessions: no envelopes, no stage checks).
    Target: authentication and checks <= 5% of an in-process round.

        python -m pytest bench/test_secea.py -k auth_cost --benchmark-only -s
    """
    from secea_fast.executor import LocalExecutor
    from secea_fast.flower import demo
    local = demo.demo_local(dict(demo.DEFAULTS, entities=2000, d=64))     # M = 2,000, N = 5, d = 64
    runs = {"auth": {}, "noauth": {"authenticate": False}, "no sessions": {"executor": LocalExecutor(1)}}
    best = {k: float("inf") for k in runs}
    reps = int(os.environ.get("SECEA_BENCH_AUTH_REPS", "5"))

    def run():
        secea.run_round(local, authenticate=False)                          # warm caches
        for _ in range(reps):
            for k, kw in runs.items():
                best[k] = min(best[k], _timed(lambda: secea.run_round(local, **kw)))
    benchmark.pedantic(run, rounds=1, iterations=1)
    ratio_auth = best["auth"] / best["noauth"]
    ratio_all = best["auth"] / best["no sessions"]
    benchmark.extra_info.update({f"{k}_s": v for k, v in best.items()},
                                auth_over_noauth=ratio_auth, sessions_over_blocks=ratio_all)
    print(f"\nSecEA run_round, M=2000 N=5 d=64, best of {reps}: "
          + ", ".join(f"{k} {v:.3f} s" for k, v in best.items())
          + f"; signatures/verification {100 * (ratio_auth - 1):+.1f}%, "
          f"sessions with every check vs the block path {100 * (ratio_all - 1):+.1f}%")
    assert ratio_auth <= 1.05
