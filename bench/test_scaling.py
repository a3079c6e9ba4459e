"""Scaling study: whole protocol rounds swept over the axes users vary, one axis
at a time around a default point, for SecEA (Tang, Zhu, Li, Zhang, Sun, 2022),
SecEmb (Mai et al., 2025) and objective-hiding one-shot FL ("osfl"; OSFL, Egger,
Urbanke, Bitar, 2025).

Run the full study (57 points, estimated 4-6 minutes on 2 cores; the longest
point, SecEA at M = 30,000, about a minute) and render the report:

    python -m pip install -e ".[bench]" && python -m pytest bench -m "scaling and not smoke" --benchmark-json=bench/results/scaling.json
    secea-fast bench report bench/results/scaling.json -o bench/report

or only this module with ``python -m pytest bench/test_scaling.py -m scaling``.
``-m scaling`` alone also runs the 16 smoke points below (every test of the
module carries the ``scaling`` mark); they are recorded with
``extra_info["smoke"] = True`` and the report leaves them out.
The smoke subset (one tiny point per axis, the same test functions, each well
under 2 s) runs in CI through ``tests/test_bench_smoke.py``:

    python -m pytest bench/test_scaling.py -m smoke

Every point checks exactness before it is recorded: SecEA runs with
``verify=True`` (the decoded sums equal the plaintext sums of the quantized
embeddings bit for bit), SecEmb compares the retrieved rows and the aggregate
with the fixed-point plaintext, osfl compares the reconstructed label sums
with the plaintext sums.

Recorded per benchmark (``extra_info``; consumed by ``secea-fast bench
report``, keep the keys):

    suite="scaling", protocol="secea"|"secemb"|"osfl", axis=<axis name>,
    params={every parameter of the point}, phases={phase: wall seconds},
    impl="secea_fast"

Groups are ``scaling-<protocol>-<axis>`` (e.g. ``scaling-secea-N``).  Phases
are disjoint, so they sum to the round's wall time; with more than one round
each phase is the best over the rounds: points estimated to take more than
LONG_S seconds run once, the others twice (``SECEA_SCALING_ROUNDS=k`` forces
k rounds everywhere).

Axes and defaults (see SECEA_*, SECEMB_*, OSFL_* below):

* secea: N clients, T colluders (K >= 1: T <= floor((N+1)/2) - 1), M entities
  in the union, d, precision (decimal digits; points beyond the capacity
  p > 2 N bound 10^precision are skipped with the reason), processes.  The
  workload is synthetic: M entities, each held by one random "home" client
  plus every other client with probability (holders - 1)/(N - 1), so the
  expected number of holders per entity (and sum_n |E_n| = holders * M) does
  not change along the N axis.  Kernels run one thread per process.
* secemb: users, m items, m' items per user (users rate between m'/2 and
  3m'/2 items, so both padding and truncation occur), d.
* osfl: n clients, T objectives, rho (clients per objective, column weight
  of the assignment), z = z_s = z_q colluders (data privacy / objective
  hiding), s public labels; cyclic assignment, c = 10 classes, 17 levels.
  Constraints of OSFLParams: rho - z_q + z_s odd and rho >= z_s + z_q + 1.

Kernel-level comparisons with peers (python-flint, galois, OpenSSL via
cryptography, phe, sycret) are not repeated here; they live in
bench/test_matmul.py, bench/test_poly.py, bench/test_dpf.py,
bench/test_aes.py and bench/test_paillier.py (groups hold ours and the peer
side by side), and run with ``python -m pytest bench`` too.
"""
import os

import numpy as np
import pytest

from secea_fast.protocols import osfl, secea, secemb

pytestmark = [pytest.mark.scaling]
SMOKE = pytest.mark.smoke

# rounds per point: 2 (best of each phase kept) unless the point's estimated
# round time exceeds LONG_S, then 1; SECEA_SCALING_ROUNDS=<k> forces k rounds
LONG_S = 4.0
_FORCED_ROUNDS = os.environ.get("SECEA_SCALING_ROUNDS")


def _rounds(estimate_s):
    if _FORCED_ROUNDS:
        return max(1, int(_FORCED_ROUNDS))
    return 1 if estimate_s > LONG_S else 2


def _points(default, smoke_default, axes, smoke):
    """pytest params (axis, params) for every value of every axis around
    ``default``, plus one smoke point per axis around ``smoke_default``."""
    out = []
    for axis, values in axes.items():
        for v in values:
            prm = dict(default)
            prm.update(v if isinstance(v, dict) else {axis: v})
            out.append(pytest.param(axis, prm, id=f"{axis}-" + "-".join(
                f"{k}{prm[k]}" for k in (v if isinstance(v, dict) else {axis: v}))))
        prm = dict(smoke_default)
        prm.update(smoke[axis])
        out.append(pytest.param(axis, prm, marks=SMOKE, id=f"smoke-{axis}-" + "-".join(
            f"{k}{prm[k]}" for k in smoke[axis])))
    return out


def _record(benchmark, request, protocol, axis, params, runs, **extra):
    """The extra_info convention of the scaling suite; ``runs``: one phase ->
    wall seconds dict per round (the best of each phase is kept).  ``smoke``
    tells the tiny CI points apart from the study's."""
    phases = {ph: min(r[ph] for r in runs) for ph in runs[0]}
    benchmark.extra_info.update({"suite": "scaling", "protocol": protocol, "axis": axis,
                                 "params": dict(params), "phases": phases, "impl": "secea_fast",
                                 "smoke": request.node.get_closest_marker("smoke") is not None})
    benchmark.extra_info.update(extra)


def _run(benchmark, protocol, axis, fn, estimate_s):
    """``fn`` under ``benchmark.pedantic`` in the axis' group; returns the rounds run."""
    benchmark.group = f"scaling-{protocol}-{axis}"
    rounds = _rounds(estimate_s)
    benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=0)
    benchmark.extra_info["rounds"] = rounds
    benchmark.extra_info["estimated_round_s"] = round(float(estimate_s), 3)
    return rounds


# ============================================================ SecEA (Tang et al., 2022)
SECEA_DEFAULT = dict(N=5, T=1, M=3000, d=32, precision=8, bound=100.0, processes=1, threads=1,
                     holders=2.0, seed=0)
SECEA_SMOKE_DEFAULT = dict(SECEA_DEFAULT, N=3, M=200, d=4)
SECEA_AXES = {
    "N": [3, 5, 8, 12, 16],
    "T": [dict(N=8, T=1), dict(N=8, T=2), dict(N=8, T=3)],
    "M": [1000, 3000, 10000, 30000],
    "d": [8, 32, 128, 512],
    # 12 digits is the most the 50-bit prime holds at N = 5, bound = 100
    # (p > 2 N bound 10^12); 13 is skipped with the capacity error
    "precision": [4, 8, 12, 13],
    "processes": [1, 2],
}
SECEA_SMOKE = {"N": dict(N=4), "T": dict(N=5, T=2), "M": dict(M=300), "d": dict(d=8),
               "precision": dict(precision=12), "processes": dict(processes=2)}

_SECEA_DATA = {}


def secea_workload(N, M, d, holders=2.0, seed=0):
    """``local`` for ``secea.run_round``: a union of exactly M integer
    entities over N clients, each entity held by a random home client plus
    every other client with probability (holders - 1)/(N - 1); embeddings
    uniform in [-1, 1)^d (simulation data from a seeded Generator)."""
    key = (N, M, d, holders, seed)
    if key not in _SECEA_DATA:
        _SECEA_DATA.clear()                      # keep one workload alive at a time
        rng = np.random.default_rng([seed, N, M, d])
        q = min(1.0, max(0.0, (holders - 1.0) / (N - 1)))
        held = rng.random((M, N)) < q
        held[np.arange(M), rng.integers(0, N, M)] = True
        emb = rng.uniform(-1.0, 1.0, size=(int(held.sum()), d))
        local, k = [], 0
        for n in range(N):
            ids = np.flatnonzero(held[:, n])
            local.append({int(e): emb[k + i] for i, e in enumerate(ids)})
            k += len(ids)
        _SECEA_DATA[key] = local
    return _SECEA_DATA[key]


@pytest.mark.parametrize("axis,params", _points(SECEA_DEFAULT, SECEA_SMOKE_DEFAULT, SECEA_AXES, SECEA_SMOKE))
def test_secea_scaling(benchmark, request, axis, params):
    p = params
    try:
        prm = secea.SecEAParams(N=p["N"], d=p["d"], T=p["T"], precision=p["precision"], bound=p["bound"])
    except ValueError as e:
        pytest.skip(f"invalid SecEA point {p}: {e}")
    local = secea_workload(p["N"], p["M"], p["d"], p["holders"], p["seed"])
    runs, out = [], {}

    def target():
        res = secea.run_round(local, T=p["T"], precision=p["precision"], bound=p["bound"],
                               processes=p["processes"], threads=p["threads"], verify=True)
        assert res.union_size == p["M"]
        runs.append({ph: res.wall[ph] for ph in ("union", "encode", "offline", "responses",
                                                   "noise", "decode")})
        out["res"] = res

    # rough model of this machine (2-core Zen 5, one thread): union ~ M,
    # queries + response products ~ holders M^2 N (sub + T + 1)
    est = 1e-4 * p["M"] + 3.3e-10 * p["holders"] * p["M"] ** 2 * p["N"] * (prm.sub + p["T"] + 1)
    _run(benchmark, "secea", axis, target, est / p["processes"])
    res = out["res"]
    _record(benchmark, request, "secea", axis, dict(p, K=prm.K, sub=prm.sub,
                                            block_size=secea.default_block_size(p["M"])), runs,
            entities_per_client=[len(x) for x in local],
            core_seconds=dict(res.seconds), product_wall_seconds=res.wall.get("product", 0.0),
            bytes_via_server=dict(res.bytes))


# ============================================================ SecEmb (Mai et al., 2025)
SECEMB_DEFAULT = dict(users=50, m=4000, m_prime=100, d=32, frac_bits=16, threads=1, seed=0)
SECEMB_SMOKE_DEFAULT = dict(SECEMB_DEFAULT, users=4, m=200, m_prime=16, d=8)
SECEMB_AXES = {
    "users": [10, 50, 200],
    "m": [1000, 4000, 16000, 64000],
    "m_prime": [25, 100, 400],
    "d": [16, 32, 128],
}
SECEMB_SMOKE = {"users": dict(users=6), "m": dict(m=300), "m_prime": dict(m_prime=24), "d": dict(d=16)}


def secemb_workload(users, m, m_prime, d, seed=0):
    """(Q, items, grads): an m x d table and, per user, between m'/2 and
    3m'/2 distinct rated items (capped at m) with one gradient row each."""
    rng = np.random.default_rng([seed, users, m, m_prime, d])
    Q = rng.uniform(-1.0, 1.0, size=(m, d))
    lo, hi = max(1, m_prime // 2), min(m, (3 * m_prime) // 2)
    sizes = rng.integers(lo, hi + 1, users)
    items = [rng.choice(m, size=int(k), replace=False) for k in sizes]
    grads = [rng.uniform(-0.1, 0.1, size=(len(it), d)) for it in items]
    return Q, items, grads


def _secemb_check(rep, Q, items, grads, m_prime, frac_bits):
    """Retrieved rows equal the fixed-point table; the aggregate equals the
    exact sum of the quantized gradients of the items each user kept."""
    scale = float(1 << frac_bits)
    Qf = np.rint(Q * scale).astype(np.int64) / scale
    acc = np.zeros(Q.shape, dtype=np.int64)
    for it, g, got in zip(items, grads, rep.retrieved):
        kept = ~np.isnan(got).any(axis=1)               # rows truncated away are NaN
        assert kept.sum() == min(len(it), m_prime), "SecEmb kept a wrong number of items"
        assert np.array_equal(got[kept], Qf[it[kept]]), "SecEmb retrieval differs from the table"
        np.add.at(acc, it[kept], np.rint(g[kept] * scale).astype(np.int64))
    assert np.array_equal(rep.aggregate, acc / scale), "SecEmb aggregate differs from the plaintext sum"


@pytest.mark.parametrize("axis,params", _points(SECEMB_DEFAULT, SECEMB_SMOKE_DEFAULT, SECEMB_AXES, SECEMB_SMOKE))
def test_secemb_scaling(benchmark, request, axis, params):
    p = params
    try:
        secemb.SecEmbParams(m=p["m"], d=p["d"], m_prime=p["m_prime"], frac_bits=p["frac_bits"],
                            n_users=p["users"])
    except ValueError as e:
        pytest.skip(f"invalid SecEmb point {p}: {e}")
    Q, items, grads = secemb_workload(p["users"], p["m"], p["m_prime"], p["d"], p["seed"])
    runs, out = [], {}

    def target():
        rep = secemb.run_round(Q, items, grads, p["m_prime"], frac_bits=p["frac_bits"],
                                    threads=p["threads"])
        runs.append({ph: rep.seconds[ph] for ph in ("user_keygen", "server_retrieval",
                                                      "user_upload", "server_aggregation")})
        out["rep"] = rep

    # server aggregation dominates: ~ users m' m (d/2 + 4) AES blocks per server
    est = 2 * p["users"] * p["m_prime"] * p["m"] * (p["d"] / 2 + 4) / 0.66e9
    _run(benchmark, "secemb", axis, target, est)
    rep = out["rep"]
    _secemb_check(rep, Q, items, grads, p["m_prime"], p["frac_bits"])
    _record(benchmark, request, "secemb", axis, p, runs,
            rated_items_mean=float(np.mean([len(it) for it in items])),
            bytes_up_per_user=dict(rep.bytes_up), bytes_down_per_user=dict(rep.bytes_down))


# ============================================================ osfl (Egger et al., 2025)
OSFL_DEFAULT = dict(n=20, T=5, rho=11, z=2, s=20000, c=10, levels=17, symmetric=False, j=None,
                    threads=1, seed=0)
OSFL_SMOKE_DEFAULT = dict(OSFL_DEFAULT, n=8, T=3, rho=5, z=1, s=200)
OSFL_AXES = {
    "n": [12, 20, 50, 100],
    "T": [2, 5, 10, 20],
    "rho": [5, 7, 11, 15, 19],
    "z": [1, 2, 3, 5],
    "s": [2000, 20000, 100000],
    "symmetric": [False, True],
}
OSFL_SMOKE = {"n": dict(n=10), "T": dict(T=4), "rho": dict(rho=7), "z": dict(z=2),
              "s": dict(s=500), "symmetric": dict(symmetric=True)}


@pytest.mark.parametrize("axis,params", _points(OSFL_DEFAULT, OSFL_SMOKE_DEFAULT, OSFL_AXES, OSFL_SMOKE))
def test_osfl_scaling(benchmark, request, axis, params):
    p = dict(params)
    p["j"] = p["T"] // 2 if p["j"] is None else p["j"]
    try:
        asg = osfl.Assignment.cyclic(p["n"], p["T"], p["rho"])
        prm = osfl.OSFLParams(asg, p["z"], p["z"], p["s"], p["c"], levels=p["levels"])
    except ValueError as e:
        pytest.skip(f"invalid osfl point {p}: {e}")
    rng = np.random.default_rng([p["seed"], p["n"], p["T"], p["s"]])
    labels = rng.integers(0, p["levels"], size=(p["n"], p["T"], p["s"], p["c"]), dtype=np.uint8)
    want = labels[list(asg.clients(p["j"])), p["j"]].astype(np.int64).sum(axis=0)
    runs, out = [], {}

    def target():
        rep = osfl.run_round(labels, asg, p["j"], p["z"], p["z"], p["symmetric"], levels=p["levels"],
                             threads=p["threads"])
        res = rep.sums
        runs.append({ph: rep.seconds[ph] for ph in ("share", "aggregate", "query", "answer",
                                                      "reconstruct")})
        out["res"], out["rep"] = res, rep

    # sharing dominates: T rho products rho x k_C @ k_C x cols, ~30 ns per output
    # element on these skinny shapes
    est = 0.1 + 3e-8 * p["T"] * p["rho"] ** 2 * prm.cols
    _run(benchmark, "osfl", axis, target, est)
    assert np.array_equal(out["res"], want), "osfl reconstruction differs from the plaintext label sums"
    rep = out["rep"]
    _record(benchmark, request, "osfl", axis, dict(p, z_s=p["z"], z_q=p["z"], k_C=prm.k_C, K=prm.K), runs,
            bytes=dict(rep.bytes), elements=dict(rep.elements), measured_rates=rep.measured_rates())
