"""Protocol rounds on Flower, split into compute, Flower's transport floor
and our overhead, all measured in one run.

    python -m pytest bench/test_flower.py -s --benchmark-json=bench/results/flower.json

Each deployment run first measures the floor on the same SuperLink and
SuperNodes with the same App (``secea_fast.flower.demo.measure_floor``): the
wall time of an empty stage (Flower's polling and a fresh ClientApp process
per message) and the bytes per second of stages moving a raw payload,
different for every node (Flower stores message parts by content hash, so
equal parts would move once), down only and up only.  The round is then

    wall = compute + floor + overhead,
    compute = sum over stages of (slowest node's protocol work + server's work),
    floor   = sum over stages of (empty stage + bytes down / down rate
                                  + bytes up / up rate),
              the empty stage to one node for a stage addressed to one node,

and ``overhead`` (what this package adds: state save and load between the
processes, record packing, pipeline bubbles) is reported as a share of the
round; the target is <= 20%.  The in-process round on the same data
(``secea.run_round``, every party in this process) is timed beside it.

The MovieLens-1M SecEA run (``-m slow``) streams the coded queries through
the SuperLink and samples the resident memory of every process of the
federation (SuperLink, SuperNodes, ServerApp and ClientApp processes).
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed")
psutil = pytest.importorskip("psutil")

from secea_fast.flower import demo  # noqa: E402
from secea_fast.flower.localfed import LocalFederation, example_app  # noqa: E402
from secea_fast.protocols import secea, secemb  # noqa: E402


class MemorySampler:
    """Largest sum of resident memory over a federation's process trees."""

    def __init__(self, fed, every=0.25):
        self.fed, self.every, self.peak = fed, every, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            total = 0
            for q in self.fed._tree([p for p in [self.fed.superlink, *self.fed.nodes] if p]):
                try:
                    total += q.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.every)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def node_seconds(out_dir) -> dict:
    """(attempt, stage, step) -> the slowest node's compute seconds, from
    the files the SecEA demo's nodes write for themselves
    (``seconds-<party>.jsonl``: no reply carries a timing)."""
    out: dict = {}
    for path in Path(out_dir).glob("seconds-*.jsonl"):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            key = (r["attempt"], r["stage"], r["step"])
            out[key] = max(out.get(key, 0.0), sum(r["seconds"].values()))
    return out


def breakdown(summary: dict, floor: dict | None, out_dir=None) -> dict:
    """wall = compute + floor + overhead for a round summary (see the module
    docstring); the nodes' compute seconds come from their own files in
    ``out_dir`` (SecEA) or, where a protocol still reports them, the stages."""
    stages = summary["stages"]
    wall = float(summary["wall_seconds"])
    nodes = node_seconds(out_dir) if out_dir is not None else {}
    compute = sum(s.get("client_seconds", 0.0) + s["server_seconds"]
                  + nodes.get((s.get("attempt"), s["stage"], s.get("step")), 0.0) for s in stages)
    out = {"stages": len(stages), "wall_s": wall, "compute_s": compute,
           "bytes": sum(s["bytes_down"] + s["bytes_up"] for s in stages)}
    if floor:
        bps = floor["bytes_per_s"]
        down, up = floor.get("down_bytes_per_s") or bps, floor.get("up_bytes_per_s") or bps

        def moving(s):
            # each direction at its own rate (measured down only and up only)
            return (s["bytes_down"] / down if down else 0.0) + (s["bytes_up"] / up if up else 0.0)
        # a stage to one node waits for one poll; to several, for the slowest of them
        fl = sum((floor["empty_one_s"] if s.get("nodes", 2) == 1 else floor["empty_s"]) + moving(s)
                 for s in stages)
        out.update(floor_s=fl, empty_stage_s=floor["empty_s"], empty_one_s=floor["empty_one_s"],
                   payload_mib_per_s=(bps or 0) / 2**20, down_mib_per_s=(down or 0) / 2**20,
                   up_mib_per_s=(up or 0) / 2**20,
                   overhead_s=wall - compute - fl, overhead_share=(wall - compute - fl) / wall)
    return out


SECEA_ROSTER = [(demo.secea_party_name(i), "client") for i in range(5)]


def _print(title, b):
    keys = ("stages", "wall_s", "compute_s", "floor_s", "overhead_s", "overhead_share", "bytes",
            "empty_stage_s", "empty_one_s", "payload_mib_per_s", "down_mib_per_s", "up_mib_per_s",
            "inprocess_s", "peak_rss_gb")
    print(f"\n{title}: " + ", ".join(f"{k}={b[k]:.3g}" if isinstance(b[k], float) else f"{k}={b[k]}"
                                     for k in keys if k in b))


def _deploy(tmp_path, n, node_configs, cfg, sample=False, env=None, roster=None):
    out = tmp_path / "out"
    cfg = dict(cfg, **{"out-dir": str(out)})
    with LocalFederation(n, node_configs=node_configs, workdir=tmp_path / "fed", env=env, roster=roster) as fed:
        if fed.roster_file:
            cfg["roster-file"] = fed.roster_file
        if sample:
            with MemorySampler(fed) as mem:
                fed.run(example_app(), run_config=cfg, timeout=7200)
            peak = mem.peak
        else:
            fed.run(example_app(), run_config=cfg, timeout=7200)
            peak = None
    summary = json.loads((out / "summary.json").read_text())
    floor = json.loads((out / "floor.json").read_text()) if (out / "floor.json").exists() else None
    return out, summary, floor, peak


def test_secea_deployment_m2000(benchmark, tmp_path):
    """SecEA, M = 2,000 entities, N = 5, d = 64, real SuperLink + 5 SuperNodes, TLS."""
    # the floor's payload stage moves 64 MiB each way per node, like the round's largest stages
    cfg = {"protocol": "secea", "workload": "synthetic", "entities": 2000, "num-clients": 5, "d": 64,
           "floor-bytes": 640 << 20}
    res = {}

    def run():
        res["r"] = _deploy(tmp_path, 5, [{"party-id": i} for i in range(5)], cfg, roster=SECEA_ROSTER)
    benchmark.group = "flower secea deployment"
    benchmark.pedantic(run, rounds=1, iterations=1)
    out, summary, floor, _ = res["r"]
    ok, why = demo.verify_secea(out, cfg)
    assert ok, why
    local = demo.demo_local(dict(demo.DEFAULTS, **cfg))
    t0 = time.perf_counter()
    secea.run_round(local, processes=1)
    b = breakdown(summary, floor, out)
    b["inprocess_s"] = time.perf_counter() - t0
    benchmark.extra_info.update(b)
    _print("SecEA on Flower deployment, M=2000 N=5 d=64", b)


def test_secea_admission_cost(benchmark, tmp_path):
    """What authentication and admission cost a SecEA round on Flower, in one
    run on one set of SuperNodes (``bench/flower_auth_app``): rounds as
    deployed (roster-signed keys checked by every party, admission folded
    into the first ``keys`` stage) alternated A N N A with the same rounds
    unauthenticated (``SecEAStageRunner(roster=None)``, nodes without
    identity).  M = 1,000, N = 5, d = 64: about 1-2 min a round on an idle
    2-core host, so four rounds fit one run.
    Reported: each round's wall, and mean(A) / mean(N) - 1."""
    cfg = {"entities": 1000, "num-clients": 5, "d": 64, "order": "ANNA"}
    res = {}

    def run():
        out = tmp_path / "out"
        with LocalFederation(5, node_configs=[{"party-id": i} for i in range(5)], workdir=tmp_path / "fed",
                             roster=SECEA_ROSTER) as fed:
            fed.run(Path(__file__).resolve().parent / "flower_auth_app",
                    run_config=dict(cfg, **{"out-dir": str(out), "roster-file": fed.roster_file}), timeout=7200)
        res["rows"] = json.loads((out / "auth_cost.json").read_text())
        res["out"] = out
    benchmark.group = "flower secea admission cost"
    benchmark.pedantic(run, rounds=1, iterations=1)
    rows = res["rows"]
    ok, why = demo.verify_secea(res["out"], cfg)      # the last authenticated round's results
    assert ok, why
    rounds = [r for r in rows if r["mode"] != "warm-up"]
    assert all(r["attempts"] == 1 and r["done"] == 5 for r in rounds)
    auth = [r["wall"] for r in rounds if r["mode"] == "auth"]
    plain = [r["wall"] for r in rounds if r["mode"] == "noauth"]
    ratio = (sum(auth) / len(auth)) / (sum(plain) / len(plain)) - 1.0
    info = {"auth_walls_s": auth, "noauth_walls_s": plain, "auth_cost_share": ratio,
            "stages": sorted({r["stages"] for r in rounds})}
    benchmark.extra_info.update(info)
    for r in rows:
        print(f"\n{r['mode']}: wall {r['wall']:.1f} s" + (f", {r['stages']} stages, first stage "
                                                        f"{r['first_stage_wall']:.1f} s" if "stages" in r else ""))
    print(f"\nSecEA on Flower, M=1000 N=5 d=64: authenticated {auth} s, unauthenticated {plain} s, "
          f"cost of the rules {100 * ratio:+.1f}%")


def test_secemb_deployment_5_users(benchmark, tmp_path):
    """SecEmb at the MovieLens-1M shape (m = 3,883, m' = 300, d = 64): server 1
    and 5 users as SuperNodes, server 0 the ServerApp."""
    cfg = {"protocol": "secemb", "users": 5, "items": 3883, "m-prime": 300, "d": 64,
           "floor-bytes": 256 << 20}
    configs = [{} for _ in range(6)]
    res = {}

    def run():
        res["r"] = _deploy(tmp_path, 6, configs, cfg, roster=demo.secemb_parties(5))
    benchmark.group = "flower secemb deployment"
    benchmark.pedantic(run, rounds=1, iterations=1)
    out, summary, floor, _ = res["r"]
    ok, why = demo.verify_secemb(out, cfg)
    assert ok, why
    Q, items, grads = demo.secemb_data(dict(demo.SECEMB_DEFAULTS, **cfg))
    t0 = time.perf_counter()
    secemb.run_round(Q, items, grads, 300)
    b = breakdown(summary, floor, out)
    b["inprocess_s"] = time.perf_counter() - t0
    benchmark.extra_info.update(b)
    _print("SecEmb on Flower deployment, 2 servers + 5 users, ML-1M shape", b)


def test_secemb_simulation_100_users(benchmark, tmp_path):
    """SecEmb with 100 users at the MovieLens-1M shape in the simulation engine
    (101 virtual SuperNodes on Ray actors)."""
    from secea_fast.flower.cli import run_sim
    cfg = {"users": 100, "items": 3883, "m-prime": 300, "d": 64, "floor-bytes": 256 << 20}
    out = tmp_path / "out"

    def run():
        run_sim("secemb", cfg, out)
    benchmark.group = "flower secemb simulation"
    benchmark.pedantic(run, rounds=1, iterations=1)
    ok, why = demo.verify_secemb(out, cfg)
    assert ok, why
    summary = json.loads((out / "summary.json").read_text())
    floor = json.loads((out / "floor.json").read_text()) if (out / "floor.json").exists() else None
    b = breakdown(summary, floor)
    benchmark.extra_info.update(b)
    _print("SecEmb on Flower simulation, 100 users, ML-1M shape", b)


@pytest.mark.slow
def test_secea_deployment_movielens_1m(benchmark, tmp_path):
    """SecEA at the MovieLens-1M shape (M = 9,746, N = 5, d = 128) in
    deployment: completes, bit for bit; time and bytes per stage; peak
    resident memory of all processes together (target <= 8 GB)."""
    # 128 MiB of queries in flight per stage (blocks of 86 rows) and two malloc arenas in
    # the Flower processes: the memory settings of docs/FLOWER.md for this shape
    cfg = {"protocol": "secea", "workload": "movielens-1m", "num-clients": 5, "d": 128,
           "floor-bytes": 256 << 20, "stage-timeout": 3600.0, "stage-bytes": 128 << 20}
    res = {}

    def run():
        res["r"] = _deploy(tmp_path, 5, [{"party-id": i} for i in range(5)], cfg, sample=True, roster=SECEA_ROSTER,
                           env={"MALLOC_ARENA_MAX": "2"})
    benchmark.group = "flower secea deployment ML-1M"
    benchmark.pedantic(run, rounds=1, iterations=1)
    out, summary, floor, peak = res["r"]
    b = breakdown(summary, floor, out)
    b["peak_rss_gb"] = peak / 1e9
    print(f"\nsummed peak resident memory of the federation: {peak / 1e9:.2f} GB")
    ok, why = demo.verify_secea(out, cfg)
    assert ok, why
    benchmark.extra_info.update(b, phases=summary["phases"])
    _print("SecEA on Flower deployment, MovieLens-1M shape", b)
    Path(out / "phases.json").write_text(json.dumps(summary["phases"], indent=1))
