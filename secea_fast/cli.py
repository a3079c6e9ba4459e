"""``secea-fast``: command-line entry point.

``secea-fast run`` runs a full SecEA round (Tang et al. 2022) for all parties on the
built-in default workload (the MovieLens-1M shape: M = 9,746 entities,
N = 5, T = 1, d = 128), verifies it bit for bit against plaintext EmbAvg
on the quantized embeddings, and prints a per-phase table and a one-line
verdict (the only output with ``--quiet``; exit code 1 on FAIL, 2 with one
line naming the option for a bad option value or output path, checked
before anything runs; ``secea_fast._cli_checks``); every protocol prints
the same table (phase, core-s = CPU seconds, wall-s, protocol MB), JSON
only with ``--json FILE``;
``--protocol secea-phe`` / ``secemb`` / ``osfl`` run the other protocols'
jobs, and options a protocol does not read are refused.  ``secea-fast`` (or
``secea-fast selfcheck``) runs the kernel self-check on
every available backend and a benchmark summary on the built-in default
workload (SecEA's coded-query response shape: 1024 query rows, M = 10^4,
65 share columns).  ``secea-fast info`` prints the backend selection.
``secea-fast bench throughput`` measures one protocol phase with 1..P
processes (local pool and/or Ray); ``secea-fast bench report`` renders
pytest-benchmark and throughput JSON as plots and a Markdown summary;
``secea-fast bench summary`` prints each benchmark group's medians and our
ratio to the fastest peer (``secea_fast.bench``).
``--executor ray [--address ADDR]`` runs ``run``'s entity blocks on Ray
(SecEA) or SecEmb server 0's user shards (``--processes W``: each SecEmb
server its own pool of W workers).
``secea-fast data fetch|list|path`` fetches, lists and locates the papers'
real data sets (``secea_fast.datasets``, ``secea_fast._data_cli``).

Length (about 670 lines): the parser and the ``run`` job of each of the four
protocols, which share one phase table, verdict and option checks and are
meant to be read side by side; the other commands live in their own modules.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from . import GOLDILOCKS, EMBEDDING_PRIME, backend_info, field, get_backend, linalg, prg, set_backend
from ._native import available_cpus
from .field import reference as ref
from .fixedpoint import FixedPoint
from ._cli_checks import OneLineParser, option_problem, output_file_problem, save_text


def _best(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _checks(rng) -> list:
    """Each check compares a kernel with its reference twin or with OpenSSL."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    results = []
    for p in (2**31 - 1, EMBEDDING_PRIME, GOLDILOCKS, 2**64 - 59):
        a = rng.integers(0, min(p, 2**63), 300, dtype=np.uint64) % np.uint64(p)
        b = rng.integers(0, min(p, 2**63), 300, dtype=np.uint64) % np.uint64(p)
        a[0], b[0] = p - 1, p - 1
        ok = (field.mul(a, b, p).tolist() == ref.mul(a, b, p)
              and field.add(a, b, p).tolist() == ref.add(a, b, p)
              and field.dot(a, b, p) == ref.dot(a, b, p))
        results.append((f"field ops mod {p}", ok))
        A = rng.integers(0, min(p, 2**63), (19, 700), dtype=np.uint64) % np.uint64(p)
        B = rng.integers(0, min(p, 2**63), (700, 7), dtype=np.uint64) % np.uint64(p)
        A[0, :] = p - 1
        B[:, 0] = p - 1
        results.append((f"matmul mod {p}", linalg.matmul(A, B, p).tolist() == ref.matmul(A, B, p)))
    key, iv = os.urandom(16), (2**64 - 2).to_bytes(16, "big")
    ours = prg.aes128_ctr(key, iv, 4099)
    theirs = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(bytes(4099))
    results.append(("AES-128-CTR vs OpenSSL", ours == theirs))
    results.append(("AES-128 FIPS-197 C.1", prg.aes128_ecb(bytes(range(16)),
                    bytes.fromhex("00112233445566778899aabbccddeeff")).hex()
                    == "69c4e0d86a7b0430d8cdb78070b4c55a"))
    fx = FixedPoint(EMBEDDING_PRIME, digits=8, bound=100.0, n_summands=50)
    x = rng.uniform(-100, 100, 1000)
    results.append(("fixed point round trip", (fx.decode_int(fx.encode(x)) == fx.quantize(x)).all()))
    from . import dpf, poly
    from .poly import reference as pref
    a = rng.integers(0, GOLDILOCKS, 300, dtype=np.uint64)
    b = rng.integers(0, GOLDILOCKS, 200, dtype=np.uint64)
    results.append(("poly.mul (NTT) vs schoolbook", poly.mul(a, b, GOLDILOCKS).tolist() == pref.mul(a, b, GOLDILOCKS)))
    rs = rng.integers(0, GOLDILOCKS, 40, dtype=np.uint64)
    results.append(("poly.roots of a split polynomial", poly.roots(poly.from_roots(rs, GOLDILOCKS), GOLDILOCKS).tolist()
                    == sorted(set(int(r) for r in rs))))
    for early in (False, True):
        k0, k1 = dpf.gen(777, 5, 12, early=early)
        full = dpf.eval_full(k0) + dpf.eval_full(k1)
        ok = int(full[777]) == 5 and int(np.count_nonzero(full)) == 1
        results.append((f"DPF shares sum to the point function ({'early' if early else 'default'} keys)", ok))
    return results


def selfcheck(quick: bool = False) -> int:
    rng = np.random.default_rng(2026)   # simulation data only
    info = backend_info()
    print("secea_fast self-check")
    print(f"  cpu: {', '.join(f for f, v in info['cpu'].items() if v) or 'baseline'}; "
          f"threads: {info['threads']}")
    failed = 0
    before = get_backend()
    for backend in ("auto", "avx2", "portable"):
        set_backend(backend)
        kernels = backend_info()["kernels"]
        print(f"\n[{backend}] kernels: " + ", ".join(f"{k}={v}" for k, v in kernels.items()))
        for name, ok in _checks(rng):
            failed += not ok
            print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    set_backend(before)

    m, k, n = (256, 4000, 65) if quick else (1024, 10000, 65)
    print(f"\nbenchmark summary (best of 3; {'quick' if quick else 'default'} workload)")
    for name, p in (("Goldilocks", GOLDILOCKS), ("embedding prime", EMBEDDING_PRIME)):
        A = rng.integers(0, p, (m, k), dtype=np.uint64)
        B = rng.integers(0, p, (k, n), dtype=np.uint64)
        for threads in sorted({1, info["threads"]}):
            dt = _best(lambda: linalg.matmul(A, B, p, threads=threads), 3)
            print(f"  matmul {m}x{k} by {k}x{n} mod {name}, {threads} thread(s): "
                  f"{dt * 1e3:8.1f} ms  {m * k * n / dt / 1e9:6.2f} G multiply-adds/s")
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    size = (8 if quick else 64) << 20
    buf = np.empty(size, dtype=np.uint8)
    zeros = np.zeros(size, dtype=np.uint8)
    key, iv = os.urandom(16), os.urandom(16)
    ours = _best(lambda: prg.aes128_ctr_into(key, iv, buf), 5)
    enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    # ndarrays are buffers; numpy's stubs declare __buffer__ only for Python >= 3.12
    theirs = _best(lambda: enc.update_into(zeros, buf), 5)  # type: ignore[arg-type]
    print(f"  AES-128-CTR keystream {size >> 20} MiB: {size / ours / 1e9:6.2f} GB/s "
          f"(OpenSSL via cryptography: {size / theirs / 1e9:.2f} GB/s, ratio {theirs / ours:.2f}x)")
    x = rng.integers(0, GOLDILOCKS, 1 << 22, dtype=np.uint64)
    dt = _best(lambda: field.mul(x, x, GOLDILOCKS), 3)
    print(f"  field.mul mod Goldilocks, 2^22 elements: {x.size / dt / 1e9:6.2f} G elements/s")
    from . import dpf, poly
    deg = 10**5 if quick else 10**6
    pa = rng.integers(0, GOLDILOCKS, deg, dtype=np.uint64)
    dt = _best(lambda: poly.mul(pa, pa, GOLDILOCKS), 3)
    print(f"  poly.mul, degree {deg} mod Goldilocks (NTT): {dt * 1e3:8.1f} ms")
    logd = 16 if quick else 20
    dkey = dpf.gen(12345, 7, logd, early=True)[0]
    out = np.zeros(1 << logd, dtype=np.uint64)
    for threads in sorted({1, info["threads"]}):
        dt = _best(lambda: dpf.eval_full(dkey, out=out, threads=threads), 5)
        print(f"  DPF full-domain evaluation 2^{logd}, 64-bit outputs, {threads} thread(s): {dt * 1e3:8.3f} ms")
    print(f"\n{'all checks passed' if not failed else f'{failed} check(s) FAILED'}")
    return 1 if failed else 0


# Seed 002, Table 6 (SecEA, T = ceil(0.1 N), N = 5, 20 processes on a 12-core
# Xeon): per-round seconds the paper published, shown beside ours as such.
PAPER_TABLE6 = {
    "movielens-1m": {"model": "LightGCN / SVD on ML-1M", "offline": 88.7823, "coding": 7.3514,
                     "comm.": 0.6446},
    "census-income": {"model": "PCA on Census Income (Table 4, whole round)", "round": 3293.0407},
}


# Which ``run`` options each protocol reads; anything else given on the
# command line is refused (exit code 2) instead of being silently ignored.
_RUN_OPTIONS = {
    "secea": {"workload", "movielens", "N", "T", "K", "d", "precision", "processes", "block_size",
              "executor", "address", "seed", "json", "quiet"},
    "secea-phe": {"workload", "N", "T", "d", "precision", "processes", "block_size", "seed", "json",
                  "quiet"},
    "secemb": {"users", "items", "m_prime", "d", "frac_bits", "processes", "executor", "address", "seed", "json",
               "quiet"},
    "osfl": {"N", "seed", "json", "quiet"},
}
_FLAG_NAMES = {"N": "-N", "T": "-T", "K": "-K", "d": "-d"}
_OSFL_MIN_N = 11       # the OSFL job's rho: every objective is held by 11 clients

# SecEmb's job: the MovieLens-1M shape of SecEmb (Mai et al. 2025) (3,883 movies, d = 64,
# m' = 300); 100 users take about 7 s on 2 cores.
SECEMB_DEFAULTS = {"users": 100, "items": 3883, "m_prime": 300, "d": 64, "frac_bits": 16}


def check_run_options(args, given) -> str | None:
    """The first option in ``given`` (dests given on the command line) that
    ``args.protocol`` does not read, as a sentence; None if all apply."""
    allowed = _RUN_OPTIONS[args.protocol]
    for dest in sorted(given):
        if dest in allowed:
            continue
        flag = _FLAG_NAMES.get(dest, "--" + dest.replace("_", "-"))
        users = sorted(p for p, opts in _RUN_OPTIONS.items() if dest in opts)
        why = {("osfl", "T"): " (OSFL's T counts objectives, not colluding clients; the job's "
                              "collusion thresholds are z_s = z_q = 2)"}.get((args.protocol, dest), "")
        return (f"{flag} does not apply to --protocol {args.protocol}{why}; it is read by "
                f"{', '.join('--protocol ' + p for p in users)}")
    if args.protocol == "secea" and args.movielens and args.workload:
        return "--movielens replaces --workload; give one of them"
    return None


def phase_table(rows, head=("phase", "core-s", "wall-s", "protocol MB")) -> str:
    """Left-aligned first column, right-aligned others."""
    rows = [tuple(head)] + [tuple(r) for r in rows]
    w = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
                     for r in rows)




def _secea_rows(seconds, wall, nbytes, phases, bytes_of=None):
    bytes_of = bytes_of or {}
    return [(ph, f"{seconds.get(ph, 0.0):.3f}", f"{wall.get(ph, 0.0):.3f}",
             f"{nbytes.get(bytes_of.get(ph, ph), 0) / 1e6:.2f}") for ph in phases]


# printed under every protocol's table (the same four columns for all)
TABLE_NOTE = ("(core-s: CPU seconds, user + sys, of the processes that ran the phase, summed; "
              "wall-s: wall clock; protocol MB: the size of the messages the protocol sends in the "
              "phase, counted from their byte encodings; every party runs on this machine, nothing "
              "crosses a network)")


def verdict(protocol: str, ok: bool, what: str, seconds: float, timed: str) -> str:
    """The line printed even with --quiet."""
    return f"{protocol}: {'PASS' if ok else 'FAIL'} ({what}); round {seconds:.2f} s {timed}"


def _write_json(path, obj):
    if path:
        save_text(json.dumps(obj, indent=2, default=str), path, "--json")


def run_option_problem(args) -> str | None:
    """The first ``run`` option whose value is out of range, as one
    sentence naming the option (as typed); None if all are in range."""
    proto = args.protocol
    bad = option_problem([
        ("-N", args.N, _OSFL_MIN_N if proto == "osfl" else 2, None), ("-T", args.T, 1, None),
        ("-K", args.K, 1, None), ("-d", args.d, 1, None), ("--precision", args.precision, 0, 18),
        ("--processes", args.processes, 1, None), ("--block-size", args.block_size, 1, None),
        ("--seed", args.seed, 0, None), ("--users", args.users, 1, None), ("--items", args.items, 1, None),
        ("--m-prime", args.m_prime, 1, None), ("--frac-bits", args.frac_bits, 0, 40)])
    if bad:
        return bad
    if args.movielens is not None and not os.path.isfile(args.movielens):
        return (f"--movielens {args.movielens!r}: " + ("not a regular file" if os.path.exists(args.movielens)
                                                         else "no such file"))
    if args.json and (bad := output_file_problem(args.json, "--json")):
        return bad
    if proto not in ("secea", "secea-phe"):
        return None
    N = args.N if args.N is not None else (5 if proto == "secea" else 3)
    T = 1 if args.T is None else args.T
    t_max = (N + 1) // 2 - 1
    if T > t_max:
        return (f"-T must be <= {t_max} for -N {N} (T <= floor((N+1)/2) - 1, Tang et al. 2022, "
                f"eq. 7), got {T}")
    if args.K is not None and args.K > t_max + 1 - T:
        return f"-K must be in [1, {t_max + 1 - T}] for -N {N}, -T {T}, got {args.K}"
    return None


def run_job(args) -> int:
    if args.protocol == "osfl":
        return _osfl_job(args)
    if args.protocol == "secea-phe":
        return _secea_phe_job(args)
    if args.protocol == "secemb":
        return _secemb_job(args)
    say = (lambda *a: None) if args.quiet else print
    args.N = 5 if args.N is None else args.N
    args.T = 1 if args.T is None else args.T
    args.precision = 8 if args.precision is None else args.precision
    args.seed = 0 if args.seed is None else args.seed
    args.processes = available_cpus() if args.processes is None else args.processes
    args.executor = args.executor or "local"
    if not args.movielens:
        args.workload = args.workload or "movielens-1m"
    from .executor import get_executor
    executor = get_executor(args.executor, args.processes, args.address)
    try:
        return _secea_job(args, executor, say)
    finally:
        executor.close()


def _secea_job(args, executor, say) -> int:
    from ._progress import Stages
    with Stages("run secea", enabled=not args.quiet) as stages:
        return _secea_stages(args, executor, say, stages)


def _secea_stages(args, executor, say, stages) -> int:
    stages.stage("generate the workload")
    from ._progress import Bar
    from . import workloads
    from .protocols import baselines, secea
    t0 = time.perf_counter()
    if args.movielens:
        local = workloads.load_movielens(args.movielens, N=args.N, d=args.d or 128, seed=args.seed)
        wname = f"movielens file {args.movielens}"
    else:
        local = workloads.workload(args.workload, N=args.N, d=args.d, seed=args.seed)
        wname = args.workload
    say(f"workload: {wname}, N = {args.N}, entities per client "
        f"{[len(x) for x in local]} ({time.perf_counter() - t0:.1f} s to generate)")
    stages.stage("the round (every party in this process)")
    t_round = time.perf_counter()
    res = secea.run_round(local, T=args.T, precision=args.precision, K=args.K,
                           executor=executor, block_size=args.block_size,
                           progress=None if args.quiet else Bar, verify=False)
    t_round = time.perf_counter() - t_round
    prm = res.params
    assert isinstance(prm, secea.SecEAParams), type(prm)   # RoundResult.params is typed object
    stages.stage("verify against the plaintext sums")
    t0 = time.perf_counter()
    ok = all(np.array_equal(s_ref, s) and np.array_equal(c_ref, c) for (s_ref, c_ref), s, c in
             zip(secea.plaintext_sums(local, prm), res.sums, res.counts))
    t_verify = time.perf_counter() - t0
    emb = baselines.embavg_round(local)
    worst = max((float(np.max(np.abs(res.embeddings[n][k] - emb["embeddings"][n][k])))
                 for n in range(len(local)) for k in local[n]), default=0.0)
    stages.stage("baselines (EmbAvg, PSI+SA)")
    psi = baselines.psi_sa_round(local, precision=args.precision)
    stages.close()
    round_core = sum(res.seconds[ph] for ph in ("encode", "offline", "responses", "noise", "decode"))
    say(f"\nSecEA round: M = {res.union_size} entities, N = {prm.N}, T = {prm.T}, K = {prm.K}, "
        f"d = {prm.d}, precision = {prm.precision} digits, p = {prm.p}, "
        f"{res.processes} process(es), {executor.name} executor")
    say(phase_table(_secea_rows(res.seconds, res.wall, res.bytes, res.PHASES)))
    say(TABLE_NOTE)
    say(f"round (excluding the one-time union): {round_core:.2f} core-s; response products "
        f"(with the fused query decryption) {res.seconds['product']:.2f} core-s; overhead beyond them "
        f"{100 * (round_core - res.seconds['product']) / max(res.seconds['product'], 1e-9):.0f}%")
    say(f"verification against plaintext EmbAvg on the quantized embeddings: "
        f"{'PASS (bit for bit)' if ok else 'FAIL'}; largest difference to the float mean "
        f"{worst:.2e} (quantization 10^-{prm.precision})  [{t_verify:.1f} s]")
    say(f"baselines: EmbAvg server {emb['seconds']['server']:.3f} s (no privacy); PSI+SA "
        f"{psi['seconds']['clients'] + psi['seconds']['server']:.3f} s, aggregates only "
        f"{psi['intersection']} of {res.union_size} entities")
    paper = PAPER_TABLE6.get(args.workload) if not args.movielens else None
    if paper:
        say(f"paper (SecEA, Tang et al. 2022; published, 20 processes on a 12-core Xeon): {paper}")
    if args.json:
        out = {"workload": wname, "N": prm.N, "T": prm.T, "K": prm.K, "d": prm.d,
               "precision": prm.precision, "p": prm.p, "M": res.union_size,
               "processes": res.processes, "executor": executor.name, "core_seconds": res.seconds, "wall_seconds": res.wall,
               "bytes_via_server": res.bytes, "verified": ok, "max_abs_diff_to_float_mean": worst,
               "baselines": {"embavg_seconds": emb["seconds"], "psi_sa_seconds": psi["seconds"],
                             "psi_intersection": psi["intersection"]},
               "paper": paper}
        _write_json(args.json, out)
    print(verdict("secea", ok, "bit for bit against plaintext EmbAvg" if ok else
                  "differs from plaintext EmbAvg", t_round, "wall (with the one-time union)"))
    return 0 if ok else 1


def _stage_kw(args, stages) -> dict:
    """``on_stage`` for a protocol's job unless ``--quiet`` (then nothing is passed)."""
    return {} if args.quiet else {"on_stage": stages.stage}


def _osfl_job(args) -> int:
    from . import jobs
    from ._progress import Stages
    t0 = time.perf_counter()
    with Stages("run osfl", enabled=not args.quiet) as stages:
        res = jobs.osfl_job(n=args.N, seed=args.seed, **_stage_kw(args, stages))
    wall = time.perf_counter() - t0
    ok = bool(res["exact_sum"]) and bool(res.get("approach1", {}).get("exact_sum", True))
    phases = ("share", "aggregate", "query", "answer", "reconstruct")
    secs = res.get("seconds", {})
    protocol_s = sum(v for k, v in secs.items() if k in phases)
    if not args.quiet:
        prm, acc = res.get("params", {}), res.get("accuracy", {})
        print(f"\nOSFL round: n = {prm.get('n')} clients, T = {prm.get('T')} objectives, rho = "
              f"{prm.get('rho')}, z_s = {prm.get('z_s')}, z_q = {prm.get('z_q')}, s = {prm.get('s')} "
              f"public samples, p = {prm.get('p')}")
        print(phase_table(_secea_rows(secs, res.get("wall_seconds", {}), res.get("bytes", {}), phases,
                                      {"share": "sharing", "query": "queries", "answer": "answers"})))
        print(TABLE_NOTE)
        if acc:
            print(f"distillation: student accuracy {acc.get('student', 0):.3f} (pooled data "
                  f"{acc.get('pooled', 0):.3f}, best teacher {acc.get('teacher_max', 0):.3f}); local "
                  f"training {secs.get('local_training', 0):.2f} s, student training "
                  f"{secs.get('student_training', 0):.2f} s; --json FILE for every figure")
    _write_json(args.json, res)
    print(verdict("osfl", ok, "retrieved label sums exact" if ok else "a retrieved label sum is wrong",
                  protocol_s, f"in the protocol's phases, {wall:.2f} s job wall"))
    return 0 if ok else 1


def _secea_phe_job(args) -> int:
    from . import jobs
    from ._progress import Stages
    from .protocols import secea_phe
    with Stages("run secea-phe", enabled=not args.quiet) as stages:
        res = jobs.secea_phe_job(N=args.N, T=args.T, d=args.d, precision=args.precision,
                                 processes=args.processes, block_size=args.block_size, seed=args.seed,
                                 workload=args.workload, **_stage_kw(args, stages))
    res["table"] = phase_table(_secea_rows(res["core_seconds"], res["wall_seconds"],
                                           res["bytes_via_server"], secea_phe.PHERoundResult.PHASES))
    ok = bool(res["verified"]) and bool(res.get("secea", {}).get("same_means", True))
    if not args.quiet:
        head = [f"{k} = {res[k]}" for k in ("M", "N", "T", "K", "d", "precision", "key_bits", "processes")
                if k in res]
        if head:
            print(f"\nSecEA-PHE round: workload {res.get('workload')}, {', '.join(head)}")
        print(res["table"])
        print(TABLE_NOTE)
    _write_json(args.json, res)
    print(verdict("secea-phe", ok, "bit for bit against plaintext EmbAvg" if ok else "differs from plaintext",
                  sum(res["wall_seconds"].values()), "wall"))
    return 0 if ok else 1


def secemb_workload(users, m, d, seed):
    """Synthetic MovieLens-1M-like SecEmb inputs (simulation data only):
    per-user rating counts log-normal with median 96 and mean ~166 (ML-1M:
    median 96, mean 165.6), at least min(20, m) and at most m; items drawn
    without replacement from a Zipf-like popularity (exponent 0.9); Q ~
    N(0, 0.1^2), gradient rows ~ N(0, 0.01^2).  Returns (Q, items, grads)."""
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, m + 1) ** 0.9
    rng.shuffle(pop)
    pop /= pop.sum()
    counts = np.clip(np.rint(rng.lognormal(np.log(96), 1.04, users)), min(20, m), m).astype(int)
    items = [np.sort(rng.choice(m, size=k, replace=False, p=pop)) for k in counts]
    Q = rng.normal(0.0, 0.1, (m, d))
    grads = [rng.normal(0.0, 0.01, (len(it), d)) for it in items]
    return Q, items, grads


def _secemb_executors(args):
    """(server 0's executor, server 1's, what they are) for ``run --protocol
    secemb``: none by default (both servers in this process); ``--processes
    W``: each server its own local pool of W workers; ``--executor ray``:
    server 0 on Ray (W actors, a local instance or the cluster at
    ``--address``) and server 1 on its own local pool, since one process
    holds one Ray instance and the two servers must not share one (a
    deployment runs each server in its own process, on its own cluster)."""
    from .executor import LocalExecutor, get_executor
    if args.address is not None and args.executor != "ray":
        raise ValueError("--address applies with --executor ray only")
    if args.executor is None and args.processes is None:
        return None, None, "both servers and every user in this process"
    w = available_cpus() if args.processes is None else args.processes
    if w < 1:
        raise ValueError(f"--processes must be >= 1, got {w}")
    ex1 = LocalExecutor(w)
    ex0 = get_executor(args.executor or "local", w, args.address)
    return ex0, ex1, (f"every user in this process, server 0 on {ex0.name} ({ex0.processes} workers), server 1 on its own local pool "
                      f"({w} workers)")


def _secemb_job(args) -> int:
    o = {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in SECEMB_DEFAULTS.items()}
    if args.m_prime is None:
        o["m_prime"] = min(o["m_prime"], o["items"])
    for k in ("users", "items", "m_prime", "d"):
        if o[k] < 1:
            raise ValueError(f"--{k.replace('_', '-')} must be >= 1, got {o[k]}")
    if o["m_prime"] > o["items"]:
        raise ValueError(f"--m-prime ({o['m_prime']}) must be at most --items ({o['items']})")
    say = (lambda *a: None) if args.quiet else print
    seed = 0 if args.seed is None else args.seed
    from ._progress import Stages
    with Stages("run secemb", enabled=not args.quiet) as stages:
        return _secemb_stages(args, o, seed, say, stages)


def _secemb_stages(args, o, seed, say, stages) -> int:
    from .protocols import secemb
    stages.stage("generate the workload")
    t0 = time.perf_counter()
    Q, items, grads = secemb_workload(o["users"], o["items"], o["d"], seed)
    counts = np.array([len(it) for it in items])
    say(f"workload: MovieLens-1M-like, {o['users']} users, m = {o['items']} items, d = {o['d']}, "
        f"items per user median {int(np.median(counts))} (min {counts.min()}, max {counts.max()}; "
        f"{int((counts > o['m_prime']).sum())} users truncated to m' = {o['m_prime']}) "
        f"({time.perf_counter() - t0:.1f} s to generate)")
    ex0, ex1, where = _secemb_executors(args)
    stages.stage(f"the round ({where})")
    t0 = time.perf_counter()
    try:
        rep = secemb.run_round(Q, items, grads, o["m_prime"], frac_bits=o["frac_bits"], executors=(ex0, ex1))
    finally:
        for ex in (ex0, ex1):
            if ex is not None:
                ex.close()
    wall = time.perf_counter() - t0
    assert isinstance(rep.params, secemb.SecEmbParams), type(rep.params)   # typed object
    stages.stage("verify against the plaintext computation")
    ok, what = secemb.plaintext_check(Q, items, grads, rep.params, rep)
    stages.close()
    nu = o["users"]
    # per-phase seconds over all users; bytes per user and server
    stages = (("user_keygen", "retrieval", rep.bytes_up), ("server_retrieval", "retrieval", rep.bytes_down),
              ("user_reconstruct", None, None), ("user_upload", "aggregation", rep.bytes_up), ("server_aggregation", None, None))
    nb = {ph: 0 if side is None else side.get(stage, 0) * 2 * nu for ph, stage, side in stages}
    say(f"\nSecEmb round: m = {o['items']}, d = {o['d']}, m' = {o['m_prime']}, {nu} users, "
        f"frac_bits = {o['frac_bits']}, two servers")
    say(phase_table(_secea_rows(rep.seconds, rep.wall, nb, [ph for ph, _, _ in stages])))
    say(TABLE_NOTE)
    say(f"(protocol MB: the users' messages to and from both servers; server 1's aggregate share "
        f"to server 0 is not counted; per user and server: retrieval "
        f"{rep.bytes_up.get('retrieval', 0) / 1e3:.1f} KB up, {rep.bytes_down.get('retrieval', 0) / 1e3:.1f} "
        f"KB down, aggregation {rep.bytes_up.get('aggregation', 0) / 1e3:.1f} KB up)")
    if args.json:
        _write_json(args.json, {"protocol": "secemb", **o, "seed": seed, "verified": ok, "check": what,
                                "seconds": dict(rep.seconds), "wall_seconds": wall,
                                "bytes_up_per_user_server": dict(rep.bytes_up),
                                "bytes_down_per_user_server": dict(rep.bytes_down),
                                "items_per_user": counts.tolist()})
    print(verdict("secemb", ok, what, wall, "wall"))
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = OneLineParser(prog="secea-fast", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    sc = sub.add_parser("selfcheck", help="kernel self-check and benchmark summary (default)")
    sc.add_argument("--quick", action="store_true", help="smaller benchmark workload")
    sub.add_parser("info", help="print backend_info() as JSON")
    from .workloads import SHAPES
    rp = sub.add_parser(
        "run", help="run a full protocol round on a workload and verify it",
        description="Run one round of a protocol with every party in this process, verify it "
                    "against the plaintext computation and print its per-phase CPU and wall times "
                    "and communication, then a one-line verdict (PASS/FAIL, round time); the same "
                    "table and verdict for every protocol.  Exit code 0 on PASS, 1 on FAIL, 2 (one "
                    "line naming the option, before anything runs) for an option the protocol does "
                    "not read, a value out of range or a --json path that cannot be written.",
        epilog="options per protocol -- secea: --workload/--movielens -N -T -K -d --precision "
               "--processes --block-size --executor --address --seed; secea-phe: --workload -N -T "
               "-d --precision --processes --block-size --seed; secemb: --users --items --m-prime "
               "-d --frac-bits --processes --executor --address --seed; osfl: -N --seed.  --json and --quiet apply to all.")
    rp.add_argument("--protocol", choices=("secea", "secea-phe", "secemb", "osfl"), default="secea",
                    help="secea (default): SecEA on the MovieLens-1M shape; secea-phe: its "
                         "Paillier variant on the tiny shape; secemb: one SecEmb round on the "
                         "MovieLens-1M shape (100 users); osfl: the one-shot FL distillation "
                         "example.  Whole command, --quiet, on 2 cores on 2026-11-27 at load "
                         "average 2.2-3.2, no AVX-512 (secea: 8.5 s on an idle AVX-512 Zen 4, "
                         "2026-11-24): secea about 53 s, secea-phe 14 s, secemb 33 s, osfl 3 s")
    rp.add_argument("--workload", choices=sorted(SHAPES), default=None,
                    help="dataset shape (SecEA paper, Table 2) for secea / secea-phe; default "
                         "movielens-1m for secea, tiny for secea-phe")
    rp.add_argument("--movielens", metavar="RATINGS_FILE",
                    help="secea: use a MovieLens ratings file instead of --workload "
                         "(ratings.dat, u.data or ratings.csv)")
    rp.add_argument("-N", type=int, default=None,
                    help="clients: default 5 (secea), 3 (secea-phe), 20 (osfl)")
    rp.add_argument("-T", type=int, default=None,
                    help="colluding clients tolerated, secea / secea-phe (default 1)")
    rp.add_argument("-K", type=int, default=None, help="secea: partitions (default eq. 7)")
    rp.add_argument("-d", type=int, default=None,
                    help="embedding size: default the shape's (secea, secea-phe), 64 (secemb)")
    rp.add_argument("--precision", type=int, default=None,
                    help="decimal digits, secea / secea-phe (default 8)")
    rp.add_argument("--processes", type=int, default=None,
                    help="worker processes: default the CPUs this process may use (secea), "
                         "that number up to 4 (secea-phe); secemb: workers per server (default: none, "
                         "each server in this process)")
    rp.add_argument("--block-size", type=int, default=None,
                    help="query rows per block, secea / secea-phe (default: sized to the cache)")
    rp.add_argument("--executor", choices=("local", "ray"), default=None,
                    help="secea: entity-block workers on a local process pool (default) or Ray actors; "
                         "secemb: server 0's users sharded over Ray actors, server 1's over its own local pool")
    rp.add_argument("--address", default=None,
                    help="secea, secemb with --executor ray: Ray cluster to join (e.g. auto or "
                         "ray://host:10001); default: start a local Ray instance")
    rp.add_argument("--users", type=int, default=None,
                    help=f"secemb: users (default {SECEMB_DEFAULTS['users']})")
    rp.add_argument("--items", type=int, default=None,
                    help=f"secemb: catalogue size m (default {SECEMB_DEFAULTS['items']}, MovieLens-1M's movies)")
    rp.add_argument("--m-prime", type=int, default=None,
                    help=f"secemb: unified items per user m' (default {SECEMB_DEFAULTS['m_prime']}, "
                         f"at most --items); users with more items are truncated")
    rp.add_argument("--frac-bits", type=int, default=None,
                    help=f"secemb: fixed-point fraction bits (default {SECEMB_DEFAULTS['frac_bits']})")
    rp.add_argument("--seed", type=int, default=None, help="workload seed, simulation data only (default 0)")
    rp.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    rp.add_argument("--quiet", action="store_true", default=None,
                    help="print only the verdict line (no stage progress, table or JSON)")
    bp = sub.add_parser("bench", help="throughput measurement and benchmark reports",
                        description="secea-fast bench throughput [options] | "
                                    "secea-fast bench report RESULTS.json... -o DIR | "
                                    "secea-fast bench summary RESULTS.json")
    bp.add_argument("what", choices=("throughput", "report", "summary"))
    bp.add_argument("rest", nargs=argparse.REMAINDER, help="options of the bench command (--help)")
    fp = sub.add_parser("flower", help="the protocols on Flower: sim, local, train, roster, certs, report, netns",
                        description="secea-fast flower sim|local|train|roster|certs|report|netns [options]  (needs the flower "
                                    "extra; `secea-fast flower sim --help` lists the options).  sim: a "
                                    "verified protocol round (--protocol secea|secemb) in Flower's "
                                    "simulation runtime; local: the same round on a real SuperLink and "
                                    "SuperNodes on this host, TLS on; train: the federated recommendation "
                                    "example (FedAvg, SecEA, SecEmb); roster: write a federation's roster "
                                    "and identity files to --out; certs: a CA and SuperLink certificates "
                                    "for the host names given; report: PASS/FAIL and the stage table of "
                                    "an operator's out-dir; netns: the federation across network "
                                    "namespaces on this host with shaped links (root).")
    fp.add_argument("rest", nargs=argparse.REMAINDER, help="options of the flower command (--help)")
    stp = sub.add_parser("study", add_help=False, help="the SecEA paper's experiments: a task trained under EmbAvg, SecEA "
                                       "and the LDP baseline (metric per round, seconds, bytes, plot)",
                         description="secea-fast study NAME [--quick] [--data FILE] [--out DIR]  "
                                     "(NAME: ldp, kg, recsys, graph, tabular; table3 / table7: the paper's "
                                     "tables on the real data sets; docs/STUDIES.md)")
    stp.add_argument("rest", nargs=argparse.REMAINDER, help="NAME and the options of the study command (--help)")
    dp = sub.add_parser("data", add_help=False, help="the papers' real data sets: fetch, list, path",
                        description="secea-fast data fetch NAME... [--cache DIR] | secea-fast data list | "
                                    "secea-fast data path NAME  (kinship, nations, umls, ml-100k, "
                                    "census-income; docs/STUDIES.md, Real data)")
    dp.add_argument("rest", nargs=argparse.REMAINDER, help="fetch, list or path and its options (--help)")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["data"]:           # every option, --help too, is the data command's own
        from ._data_cli import main as data_main
        from ._lifetime import run_guarded
        return run_guarded("secea-fast data", lambda: data_main(argv[1:]))
    if argv[:1] == ["study"]:          # every option, --help too, is the study command's own
        from ._lifetime import run_guarded
        from .studies import runner
        return run_guarded("secea-fast study", lambda: runner.main(argv[1:]))
    args = parser.parse_args(argv)
    from . import tune_memory
    tune_memory()        # the command owns its process: reuse freed buffers (secea_fast._memory)
    # a signal ends the command and everything it started (secea_fast._lifetime)
    from ._lifetime import run_guarded
    name = " ".join(["secea-fast", args.command or "selfcheck"]
                    + (args.rest[:1] if args.command == "flower" else []))
    return run_guarded(name, lambda: _command(args, rp), watchdog=args.command in ("run", "flower", "bench"))


def _command(args, rp) -> int:
    if args.command == "flower":
        try:
            from .flower import cli as flower_cli
        except ImportError as exc:
            print(f"secea-fast flower: {exc}", file=sys.stderr)
            return 2
        return flower_cli.main(args.rest)
    if args.command == "bench":
        if args.what == "throughput":
            from .bench import throughput
            return throughput.main(args.rest)
        from .bench import report
        if args.what == "summary":
            return report.summary_main(args.rest)
        return report.main(args.rest)
    if args.command == "run":
        # every run option but --protocol defaults to None: not None = given
        bad = check_run_options(args, {k for k, v in vars(args).items()
                                       if v is not None and k not in ("command", "protocol")})
        if bad:
            rp.error(bad)
        bad = run_option_problem(args)
        if bad:
            print(f"secea-fast run: error: {bad}", file=sys.stderr)
            return 2
        try:
            return run_job(args)
        except (ValueError, TypeError, ImportError) as exc:
            print(f"secea-fast run: error: {exc}", file=sys.stderr)
            return 2
    if args.command == "info":
        print(json.dumps(backend_info(), indent=2))
        return 0
    return selfcheck(quick=getattr(args, "quick", False))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
