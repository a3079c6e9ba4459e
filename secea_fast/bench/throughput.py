"""``secea-fast bench throughput``: one protocol phase with 1..P worker
processes on a local pool and/or Ray, reporting rate, speedup and
efficiency (speedup / P).

Phases (each an executor map over independent shards, timed wall-clock
from the first shard to the last result, setup excluded):

* ``secea``, phase ``offline`` (coded queries, eqs. 13-16), ``responses``
  (queries and the response products, eq. 19: the queries are streamed, so
  the online products cannot be timed without generating them) or ``round``
  (every per-block phase: queries, responses, server noise, decoding).
  Unit: entities/s, an entity being one row a client queries (the sum of
  the clients' set sizes per round).  Parties, union and sharing are set up
  afresh for every process count (pads are one-time) and not timed.
* ``paillier``, phase ``encrypt``: batch Paillier encryption with fresh
  randomness (SecEA-PHE (Tang, Zhu, Li, Sun, 2022), eq. 11), values/s, shards of 64 values.
* ``dpf``, phase ``keygen`` (``dpf.gen_batch``) or ``eval`` (full-domain
  evaluation, the SecEmb server's per-user work, SecEmb (Mai et al., 2025), Sec. 4): keys/s,
  shards of 256 (keygen) or 16 (eval) keys over a 2^log_domain domain.

The JSON written by ``--json`` is the ``secea-fast/throughput`` format that
``secea-fast bench report`` reads: ``{"kind", "version", "machine",
"results": [{"protocol", "phase", "unit", "executor", "workload", "rows":
[{"processes", "seconds", "rate", "speedup", "efficiency"}],
"shard_overhead_s"}]}``; with both executors, ``ray_overhead`` (Ray's wall
time over the local pool's, minus 1, per process count) is added.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._cli_checks import option_problem, output_dir_problem, output_file_problem, save_text
from .._native import available_cpus
from ..executor import get_executor, ray_available

__all__ = ["measure", "main", "PHASES"]

PHASES = {"secea": ("offline", "responses", "round"), "paillier": ("encrypt",),
          "dpf": ("keygen", "eval")}
UNITS = {"secea": "entities/s", "paillier": "values/s", "dpf": "keys/s"}


# ------------------------------------------------------------------ shard bodies
def _paillier_job(S, count):
    vals = np.arange(count, dtype=np.int64).tolist()
    return len(S["pk"].encrypt(vals))


def _dpf_keygen_job(S, count):
    from .. import dpf
    rng = np.random.default_rng()       # benchmark points only; the keys' seeds come from secrets
    alphas = rng.integers(0, 1 << S["log_domain"], count, dtype=np.uint64)
    betas = rng.integers(0, 1 << 63, count, dtype=np.uint64)
    dpf.gen_batch(alphas, betas, S["log_domain"], threads=1)
    return count


def _dpf_eval_job(S, keys):
    from .. import dpf
    out = dpf.eval_full_batch(keys, threads=1)
    return int(out.shape[0])


# ------------------------------------------------------------------ one measurement
class _Workload:
    """Builds the shards and state of one (protocol, phase) and runs them."""

    def __init__(self, protocol, phase, opts):
        self.protocol, self.phase, self.opts = protocol, phase, opts
        if protocol == "secea":
            from .. import workloads
            self.local = workloads.workload(opts["workload"], N=opts["N"], d=opts["d"],
                                            seed=opts["seed"])
            self.items = sum(len(x) for x in self.local)
            self.info = {"workload": opts["workload"], "N": opts["N"], "T": opts["T"],
                         "d": len(next(iter(self.local[0].values()))), "entities": self.items}
        elif protocol == "paillier":
            from .. import paillier
            self.pk, _ = paillier.keygen(opts["key_bits"])
            self.items = opts["count"] or 2048
            self.info = {"key_bits": opts["key_bits"], "values": self.items}
        else:
            from .. import dpf
            self.items = opts["count"] or (16384 if phase == "keygen" else 512)
            logd = opts["log_domain"]
            self.info = {"log_domain": logd, "keys": self.items}
            if phase == "eval":
                rng = np.random.default_rng(opts["seed"])
                k0, _ = dpf.gen_batch(rng.integers(0, 1 << logd, self.items, dtype=np.uint64),
                                      rng.integers(0, 1 << 63, self.items, dtype=np.uint64), logd)
                self.key_shards = [dpf.KeyBatch.from_keys([k0[j] for j in range(i, min(i + 16, self.items))])
                                   for i in range(0, self.items, 16)]

    def run(self, executor) -> float:
        """Wall seconds of the phase on ``executor``."""
        if self.protocol == "secea":
            from ..protocols import secea
            upto = "all" if self.phase == "round" else self.phase
            # one thread per product at every process count: efficiency is
            # per core, the 1-process run included
            res = secea.run_round(self.local, T=self.opts["T"], executor=executor, upto=upto,
                                   verify=(upto == "all"), threads=1)
            return res.wall["blocks"]
        if self.protocol == "paillier":
            jobs = _chunk_sizes(self.items, 64)
            fn, state = _paillier_job, {"pk": self.pk}
        elif self.phase == "keygen":
            jobs = _chunk_sizes(self.items, 256)
            fn, state = _dpf_keygen_job, {"log_domain": self.opts["log_domain"]}
        else:
            jobs = self.key_shards
            fn, state = _dpf_eval_job, None
        done = [0]
        t0 = time.perf_counter()
        executor.map(fn, jobs, state, lambda r: done.__setitem__(0, done[0] + r))
        t = time.perf_counter() - t0
        if done[0] != self.items:
            raise AssertionError(f"{done[0]} of {self.items} items were processed")
        return t


def _chunk_sizes(total, size):
    """Shard sizes: ``total`` items in shards of ``size`` (the last smaller)."""
    return [min(size, total - i) for i in range(0, total, size)]


def measure(protocol: str = "secea", phase: str = "responses", processes: int | Sequence[int] | None = None,
            executors: Sequence[str] = ("local",), *, address: str | None = None, repeat: int = 1,
            progress: bool = False, **opts: Any) -> dict[str, Any]:
    """Run ``protocol``'s ``phase`` with 1..``processes`` workers (an int:
    every count up to it; or a list of counts) on each executor kind in
    ``executors`` ("local", "ray"); ``repeat``: runs per point, the fastest
    kept.  ``opts``: workload options (secea: workload, N, T, d, seed;
    paillier: key_bits, count; dpf: log_domain, count).  Returns the
    ``secea-fast/throughput`` dict (see the module docstring)."""
    if protocol not in PHASES:
        raise ValueError(f"unknown protocol {protocol!r}: expected one of {sorted(PHASES)}")
    if phase not in PHASES[protocol]:
        raise ValueError(f"protocol {protocol!r} has phases {PHASES[protocol]}, not {phase!r}")
    counts = _process_counts(processes)
    if isinstance(executors, str):
        executors = (executors,)
    for kind in executors:
        if kind not in ("local", "ray"):
            raise ValueError(f"unknown executor {kind!r}: expected 'local' or 'ray'")
    if "ray" in executors and not ray_available():
        raise ImportError('--executor ray needs Ray: pip install "secea_fast[ray]"')
    if address is not None and "ray" not in executors:
        raise ValueError("address applies to the ray executor only")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat must be a positive integer, got {repeat!r}")
    o = {"workload": "movielens-1m", "N": 5, "T": 1, "d": None, "seed": 0,
         "key_bits": 2048, "count": None, "log_domain": 14}
    for k, v in opts.items():
        if k not in o:
            raise ValueError(f"unknown option {k!r}; known: {sorted(o)}")
        if v is not None:
            o[k] = v
    work = _Workload(protocol, phase, o)
    results = []
    ray_started = False
    try:
        for kind in executors:
            if kind == "ray" and address is None:
                import ray
                if not ray.is_initialized():
                    ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False)
                    ray_started = True
            rows, overhead = [], None
            for P in counts:
                ex = get_executor(kind, P, address if kind == "ray" else None)
                try:
                    best = float("inf")
                    for _ in range(repeat):
                        best = min(best, work.run(ex))
                        if progress:
                            sys.stderr.write(f"{protocol} {phase} {kind} P={P}: {best:.3f} s\n")
                    if P == max(counts):
                        overhead = ex.shard_overhead()
                finally:
                    ex.close()
                rows.append({"processes": P, "seconds": best, "rate": work.items / best})
            t1 = next((r["seconds"] for r in rows if r["processes"] == 1), None)
            for r in rows:
                r["speedup"] = t1 / r["seconds"] if t1 else None
                r["efficiency"] = r["speedup"] / r["processes"] if t1 else None
            results.append({"protocol": protocol, "phase": phase, "unit": UNITS[protocol],
                            "executor": kind, "workload": work.info, "rows": rows,
                            "shard_overhead_s": overhead})
    finally:
        if ray_started:
            import ray
            ray.shutdown()
    out = {"kind": "secea-fast/throughput", "version": 1, "machine": _machine(),
           "results": results}
    byk = {r["executor"]: r for r in results}
    if "local" in byk and "ray" in byk:
        out["ray_overhead"] = {str(a["processes"]): b["seconds"] / a["seconds"] - 1.0
                               for a, b in zip(byk["local"]["rows"], byk["ray"]["rows"])}
    return out


def _process_counts(processes):
    if processes is None:
        processes = available_cpus()
    if isinstance(processes, int) and not isinstance(processes, bool):
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        return list(range(1, processes + 1))
    try:
        counts = sorted({int(p) for p in processes})
    except (TypeError, ValueError):
        raise TypeError("processes must be an int or a list of ints") from None
    if not counts or counts[0] < 1:
        raise ValueError("process counts must be >= 1")
    return counts


def _machine() -> dict:
    from .. import backend_info
    info = backend_info()
    try:
        load = os.getloadavg()
    except OSError:             # pragma: no cover
        load = None
    return {"cpus": available_cpus(), "cpu": info.get("cpu"), "python": platform.python_version(),
            "platform": platform.platform(), "loadavg_before": load}


def table(out: dict) -> str:
    """The results as a plain-text table."""
    lines = []
    for r in out["results"]:
        w = r["workload"]
        lines.append(f"{r['protocol']} {r['phase']} ({', '.join(f'{k}={v}' for k, v in w.items())}), "
                     f"{r['executor']} executor")
        lines.append(f"  {'processes':>9}  {'seconds':>9}  {r['unit']:>12}  {'speedup':>7}  {'efficiency':>10}")
        for row in r["rows"]:
            sp = "-" if row["speedup"] is None else f"{row['speedup']:.2f}"
            ef = "-" if row["efficiency"] is None else f"{row['efficiency']:.2f}"
            lines.append(f"  {row['processes']:>9}  {row['seconds']:>9.3f}  {row['rate']:>12,.0f}  "
                         f"{sp:>7}  {ef:>10}")
        if r["shard_overhead_s"] is not None:
            lines.append(f"  scheduling cost per shard: {r['shard_overhead_s'] * 1e3:.3f} ms")
    for p, x in out.get("ray_overhead", {}).items():
        lines.append(f"Ray over the local pool at {p} processes: {100 * x:+.1f}%")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``secea-fast bench throughput``: parse ``argv`` and print the measurement; the exit status."""
    ap = argparse.ArgumentParser(prog="secea-fast bench throughput",
                                 description="multi-process throughput of one protocol phase")
    ap.add_argument("--protocol", default="secea", choices=sorted(PHASES))
    ap.add_argument("--phase", default=None,
                    help="secea: offline|responses|round (default responses); "
                         "paillier: encrypt; dpf: keygen|eval (default keygen)")
    ap.add_argument("-P", "--processes", type=int, default=None,
                    help="measure 1..P processes (default: the CPUs of this machine)")
    ap.add_argument("--executor", default="local",
                    help="local, ray, or local,ray for both side by side")
    ap.add_argument("--address", default=None, help="Ray cluster address (default: a local instance)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point, the fastest kept")
    ap.add_argument("--workload", default=None, help="secea workload shape (default movielens-1m)")
    ap.add_argument("-N", type=int, default=None)
    ap.add_argument("-T", type=int, default=None)
    ap.add_argument("-d", type=int, default=None)
    ap.add_argument("--count", type=int, default=None, help="paillier values / dpf keys")
    ap.add_argument("--log-domain", type=int, default=None)
    ap.add_argument("--key-bits", type=int, default=None)
    ap.add_argument("--json", default=None, help="write the results to this file")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    bad = a.json and (output_file_problem(a.json, "--json") if os.path.isdir(os.path.dirname(a.json) or ".")
                      else output_dir_problem(os.path.dirname(a.json), "--json"))
    bad = bad or option_problem([("-P/--processes", a.processes, 1, None), ("--repeat", a.repeat, 1, None),
                                 ("-d", a.d, 1, None), ("--count", a.count, 1, None)])
    if bad:
        print(f"secea-fast bench throughput: error: {bad}", file=sys.stderr)
        return 2
    phase = a.phase or {"secea": "responses", "paillier": "encrypt", "dpf": "keygen"}[a.protocol]
    opts = dict(workload=a.workload, N=a.N, T=a.T, d=a.d, count=a.count, log_domain=a.log_domain,
                key_bits=a.key_bits)
    try:
        out = measure(a.protocol, phase, a.processes, tuple(a.executor.split(",")),
                      address=a.address, repeat=a.repeat, progress=not a.quiet, **opts)
    except (TypeError, ValueError, ImportError) as exc:
        print(f"secea-fast bench throughput: {exc}", file=sys.stderr)
        return 2
    if a.json:
        save_text(json.dumps(out, indent=1), a.json, "--json")
    if not a.quiet or not a.json:
        print(table(out))
    return 0
