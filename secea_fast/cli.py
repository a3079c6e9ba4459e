"""``secea-fast``: command-line entry point.

``secea-fast run`` runs a full SecEA round (seed 002) for all parties on the
built-in default workload (the MovieLens-1M shape: M = 9,746 entities,
N = 5, T = 1, d = 128), verifies it bit for bit against plaintext EmbAvg
on the quantized embeddings, and prints a per-phase table; ``--protocol
osfl`` / ``secea-phe`` run the other protocols' jobs.  ``secea-fast`` (or
``secea-fast selfcheck``) runs the kernel self-check on
every available backend and a benchmark summary on the built-in default
workload (SecEA's coded-query response shape: 1024 query rows, M = 10^4,
65 share columns).  ``secea-fast info`` prints the backend selection.
``secea-fast bench throughput`` measures one protocol phase with 1..P
processes (local pool and/or Ray); ``secea-fast bench report`` renders
pytest-benchmark and throughput JSON as plots and a Markdown summary.
``--executor ray [--address ADDR]`` runs ``run``'s entity blocks on Ray.
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
    for backend in ("auto", "portable"):
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
    theirs = _best(lambda: enc.update_into(zeros, buf), 5)
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
    key = dpf.gen(12345, 7, logd, early=True)[0]
    out = np.zeros(1 << logd, dtype=np.uint64)
    for threads in sorted({1, info["threads"]}):
        dt = _best(lambda: dpf.eval_full(key, out=out, threads=threads), 5)
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


def run_job(args) -> int:
    if args.executor != "local" and args.protocol != "secea":
        raise ValueError("--executor ray applies to --protocol secea")
    if args.protocol in ("osfl", "secea-phe"):
        if args.protocol == "osfl":
            from .protocols import osfl
            res = osfl.main_job()
        else:
            from .protocols import secea_phe
            wl = args.workload if args.workload != "movielens-1m" else None   # its own small default
            res = secea_phe.main_job(N=args.N, T=args.T, d=args.d,
                                     processes=args.processes, seed=args.seed, workload=wl)
        print(json.dumps(res, indent=2, default=str))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=2, default=str)
        return 0
    say = (lambda *a: None) if args.quiet else print
    args.N = 5 if args.N is None else args.N
    from .executor import get_executor
    executor = get_executor(args.executor, args.processes, args.address)
    try:
        return _secea_job(args, executor, say)
    finally:
        executor.close()


def _secea_job(args, executor, say) -> int:
    from .protocols import baselines, runner, workloads
    t0 = time.perf_counter()
    if args.movielens:
        local = workloads.load_movielens(args.movielens, N=args.N, d=args.d or 128, seed=args.seed)
        wname = f"movielens file {args.movielens}"
    else:
        local = workloads.workload(args.workload, N=args.N, d=args.d, seed=args.seed)
        wname = args.workload
    say(f"workload: {wname}, N = {args.N}, entities per client "
        f"{[len(x) for x in local]} ({time.perf_counter() - t0:.1f} s to generate)")
    res = runner.run_round(local, T=args.T, precision=args.precision, K=args.K,
                           executor=executor, block_size=args.block_size,
                           progress=not args.quiet, verify=False)
    prm = res.params
    t0 = time.perf_counter()
    ok = all(np.array_equal(s_ref, s) and np.array_equal(c_ref, c) for (s_ref, c_ref), s, c in
             zip(runner.plaintext_sums(local, prm), res.sums, res.counts))
    t_verify = time.perf_counter() - t0
    emb = baselines.embavg_round(local)
    worst = max((float(np.max(np.abs(res.embeddings[n][k] - emb["embeddings"][n][k])))
                 for n in range(len(local)) for k in local[n]), default=0.0)
    psi = baselines.psi_sa_round(local, precision=args.precision)
    round_core = sum(res.seconds[ph] for ph in ("encode", "offline", "responses", "noise", "decode"))
    say(f"\nSecEA round: M = {res.union_size} entities, N = {prm.N}, T = {prm.T}, K = {prm.K}, "
        f"d = {prm.d}, precision = {prm.precision} digits, p = {prm.p}, "
        f"{res.processes} process(es), {executor.name} executor")
    say(res.table())
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
        say(f"paper (seed 002, published, 20 processes on a 12-core Xeon): {paper}")
    if args.json:
        out = {"workload": wname, "N": prm.N, "T": prm.T, "K": prm.K, "d": prm.d,
               "precision": prm.precision, "p": prm.p, "M": res.union_size,
               "processes": res.processes, "executor": executor.name, "core_seconds": res.seconds, "wall_seconds": res.wall,
               "bytes_via_server": res.bytes, "verified": ok, "max_abs_diff_to_float_mean": worst,
               "baselines": {"embavg_seconds": emb["seconds"], "psi_sa_seconds": psi["seconds"],
                             "psi_intersection": psi["intersection"]},
               "paper": paper}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="secea-fast", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    sc = sub.add_parser("selfcheck", help="kernel self-check and benchmark summary (default)")
    sc.add_argument("--quick", action="store_true", help="smaller benchmark workload")
    sub.add_parser("info", help="print backend_info() as JSON")
    from .protocols.workloads import SHAPES
    rp = sub.add_parser("run", help="run a full protocol round on a workload and verify it")
    rp.add_argument("--protocol", choices=("secea", "secea-phe", "osfl"), default="secea")
    rp.add_argument("--workload", choices=sorted(SHAPES), default="movielens-1m",
                    help="dataset shape (seed 002, Table 2); default movielens-1m")
    rp.add_argument("--movielens", metavar="RATINGS_FILE",
                    help="use a MovieLens ratings file instead (ratings.dat, u.data or ratings.csv)")
    rp.add_argument("-N", type=int, default=None,
                    help="clients (default 5; 3 for --protocol secea-phe)")
    rp.add_argument("-T", type=int, default=1, help="colluding clients tolerated (default 1)")
    rp.add_argument("-K", type=int, default=None, help="partitions (default eq. 7)")
    rp.add_argument("-d", type=int, default=None, help="embedding size (default: the shape's)")
    rp.add_argument("--precision", type=int, default=8, help="decimal digits (default 8)")
    rp.add_argument("--processes", type=int, default=available_cpus(),
                    help="worker processes (default: the CPUs this process may use)")
    rp.add_argument("--block-size", type=int, default=None, help="query rows per block")
    rp.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="entity-block workers: a local process pool (default) or Ray actors")
    rp.add_argument("--address", default=None,
                    help="Ray cluster to join (e.g. auto or ray://host:10001); default: "
                         "start a local Ray instance")
    rp.add_argument("--seed", type=int, default=0, help="workload seed (simulation data only)")
    rp.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    rp.add_argument("--quiet", action="store_true", help="no progress bar or table")
    bp = sub.add_parser("bench", help="throughput measurement and benchmark reports",
                        description="secea-fast bench throughput [options] | "
                                    "secea-fast bench report RESULTS.json... -o DIR")
    bp.add_argument("what", choices=("throughput", "report"))
    bp.add_argument("rest", nargs=argparse.REMAINDER, help="options of the bench command (--help)")
    args = parser.parse_args(argv)
    if args.command == "bench":
        if args.what == "throughput":
            from . import throughput
            return throughput.main(args.rest)
        from . import report
        return report.main(args.rest)
    if args.command == "run":
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
