"""``secea-fast study NAME``: SecEA's experiments as runnable studies (Tang,
Zhu, Li, Zhang, Sun 2022, Sec. 6, Table 3, Appendix C Table 7).

Each study trains one task of the paper's families under every
aggregation -- Single (no aggregation), EmbAvg (plaintext), SecEA(8) (the
protocol) and the Laplace LDP baseline at each epsilon -- and reports the
metric per round per aggregation, the seconds per phase and the bytes per
round, as a text table, JSON and a plot.  ``--quick`` runs a small
synthetic instance in well under a minute.
"""
from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import framework as fw
from .._cli_checks import OneLineParser, option_problem, output_dir_problem, save_result
from ..datasets import DATASETS, fetch
from .ldp import PAPER_EPSILONS, PUBLISHED_TABLE7, LDPAvg

__all__ = ["STUDIES", "Study", "run_study", "format_tables", "write_plot", "main"]


@dataclass
class Study:
    """A registered study: ``build(data, quick, seed, labels)`` -> Task."""
    name: str
    title: str
    build: Callable[[str | None, bool, int, str | os.PathLike[str] | None, int], fw.Task]
    rounds: int
    quick_rounds: int
    epsilons: tuple
    quick_epsilons: tuple
    data_help: str
    published: dict | None = None


def _kg(data, quick, seed, labels=None, N=3):
    from . import kg
    if data is not None:
        t = kg.triples_from_file(data, seed=seed)
        return kg.TransETask(t, N, d=32, max_test=300 if quick else 2000, seed=seed)
    t = (kg.synthetic_triples(200, 12, 5000, seed=seed) if quick
         else kg.synthetic_triples(1000, 40, 40_000, seed=seed))
    return kg.TransETask(t, N, d=32, seed=seed)


def _ldp(data, quick, seed, labels=None, N=3):
    from . import kg
    t = kg.triples_from_file(data, seed=seed) if data is not None else kg.synthetic_triples(seed=seed)
    return kg.TransETask(t, N, d=128, seed=seed)        # Appendix B: embedding dimension 128


def _recsys(data, quick, seed, labels=None, N=3):
    from . import lightgcn
    return lightgcn.build(data, quick, seed, N)


def _graph(data, quick, seed, labels=None, N=3):
    from . import graph
    return graph.build(data, quick, seed, labels, N)


def _tabular(data, quick, seed, labels=None, N=3):
    from . import tabular
    return tabular.build(data, quick, seed, N)


STUDIES = {
    "ldp": Study("ldp", "TransE on Kinship-format triples: LDP vs SecEA (Appendix C, Table 7)", _ldp,
                 20, 10, PAPER_EPSILONS, PAPER_EPSILONS,
                 "Kinship-format triples (head<TAB>relation<TAB>tail; a file or a directory with "
                 "train.txt/test.txt); default: synthetic, Kinship's shape", PUBLISHED_TABLE7),
    "kg": Study("kg", "Knowledge graph: TransE (MRR, Hits@10)", _kg, 15, 6, (1.0, 10.0, 100.0), (1.0, 100.0),
                "WN18 / FB15k-237-format triples (a file or a directory with train.txt/test.txt)"),
    "recsys": Study("recsys", "Recommendation: LightGCN (HR@10, NDCG@10)", _recsys, 10, 5,
                    (1.0, 10.0, 100.0), (1.0, 100.0),
                    "MovieLens ratings (ratings.dat, u.data or ratings.csv)"),
    "graph": Study("graph", "Graph embedding: DeepWalk (Micro-F1, link-prediction AUC)", _graph, 10, 5,
                   (1.0, 10.0, 100.0), (1.0, 100.0),
                   "an edge list (two node ids per line; Cora's cora.cites, SNAP files); labels with "
                   "--labels"),
    "tabular": Study("tabular", "Multi-view clustering: PCA on Census-Income rows (NMI)", _tabular, 10, 5,
                     (1.0, 10.0, 100.0), (1.0, 100.0),
                     "Census-Income rows (adult.data or census-income.data: comma-separated, label last)"),
}


def _progress(msg, final=False):
    """One status line on stderr: rewritten in place on a terminal, else
    printed only when ``final`` (one line per aggregation)."""
    if sys.stderr.isatty():
        print(f"\r{msg:<78}", end="\n" if final else "", file=sys.stderr, flush=True)
    elif final:
        print(msg, file=sys.stderr, flush=True)


AGGREGATIONS = ("single", "embavg", "secea", "ldp")


def run_study(name: str, *, quick: bool = False, data: str | os.PathLike[str] | None = None,
              labels: str | os.PathLike[str] | None = None, seed: int = 0, rounds: int | None = None,
              epsilons: Sequence[float] | None = None, progress: bool = True, processes: int = 1, clients: int = 3,
              only: Iterable[str] | None = None, precisions: Sequence[int] = (8,)) -> dict[str, Any]:
    """Run study ``name``: returns a JSON-able dict (task sizes, per
    aggregation the per-round records, the published numbers if any).
    ``only``: a subset of :data:`AGGREGATIONS` (default all);
    ``precisions``: SecEA(p) for each p (Table 3 has p = 4, 6, 8, 10)."""
    only = set(AGGREGATIONS if only is None else only)
    if not only <= set(AGGREGATIONS):
        raise ValueError(f"only must name some of {AGGREGATIONS}, got {sorted(only)}")
    if name not in STUDIES:
        raise ValueError(f"name must be one of {sorted(STUDIES)}, got {name!r}")
    st = STUDIES[name]
    rounds = (st.quick_rounds if quick else st.rounds) if rounds is None else rounds
    epsilons = (st.quick_epsilons if quick else st.epsilons) if epsilons is None else tuple(epsilons)
    t0 = time.perf_counter()
    task = st.build(None if data is None else str(data), quick, seed, labels, clients)
    aggs: list[fw.Aggregator] = [a for k, a in (("single", fw.Single()), ("embavg", fw.PlainAvg())) if k in only]
    aggs += [fw.SecEAAvg(p, processes=processes) for p in precisions] if "secea" in only else []
    aggs += [LDPAvg(e) for e in epsilons] if "ldp" in only else []
    if not aggs:
        raise ValueError("no aggregation to run")
    runs = {}
    for k, agg in enumerate(aggs):
        def tick(rec, k=k, agg=agg):
            if progress:
                _progress(f"[{name}] {k + 1}/{len(aggs)} {agg.label}: round {rec.round}/{rounds} "
                          f"{task.metrics[0]} {rec.metrics[task.metrics[0]]:.4f}", rec.round == rounds)
        recs = fw.run(task, agg, rounds, on_round=tick, evaluate_init=True)
        runs[agg.label] = [r.as_dict() for r in recs]
    if progress:
        _progress(f"[{name}] done in {time.perf_counter() - t0:.1f} s", True)
    return {"study": name, "title": st.title, "quick": bool(quick), "data": None if data is None else str(data),
            "seed": seed, "rounds": rounds, "epsilons": list(epsilons), "task": task.describe(),
            "metrics": list(task.metrics), "runs": runs, "published": st.published,
            "seconds": time.perf_counter() - t0}


def _grid(rows):
    w = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r))
                     for r in rows)


def format_tables(res: dict) -> str:
    """The study's tables as text: the primary metric per round per
    aggregation, every metric at the last round, seconds per phase and
    bytes per round, and for the LDP study Table 7 beside the published."""
    m0, labels = res["metrics"][0], list(res["runs"])
    out = [f"{res['title']}  ({res['task']['clients']} clients, {res['task']['entities']} entities, "
           f"row width {res['task']['width']}{', quick' if res['quick'] else ''})", "",
           f"{m0} per round (round 0: before training)"]
    rows = [["round"] + labels]
    for k in range(len(res["runs"][labels[0]])):
        rows.append([res["runs"][labels[0]][k]["round"]] + [f"{res['runs'][a][k][m0]:.4f}" for a in labels])
    out += [_grid(rows), "", "last round, every metric"]
    rows = [["aggregation"] + res["metrics"]]
    rows += [[a] + [f"{res['runs'][a][-1][m]:.4f}" for m in res["metrics"]] for a in labels]
    out += [_grid(rows), "", "mean wall seconds per round by phase (agg/train: aggregation phases over "
                             "local training), and protocol bytes per round"]
    phases = []
    for a in labels:
        for r in res["runs"][a][1:]:
            phases += [p for p in r["seconds"] if p not in phases]
    rows = [["aggregation"] + phases + ["agg/train", "MB/round"]]
    for a in labels:
        recs = res["runs"][a][1:]
        mean = {p: float(np.mean([r["seconds"].get(p, 0.0) for r in recs])) for p in phases}
        agg = sum(v for p, v in mean.items() if p not in ("train", "eval") and ":" not in p)
        rows.append([a] + [f"{mean[p]:.3f}" for p in phases] + [f"{agg / max(mean['train'], 1e-12):.2f}"]
                    + [f"{np.mean([r['bytes'] for r in recs]) / 1e6:.2f}"])
    out.append(_grid(rows))
    pub = res.get("published")
    need = {"EmbAvg"} | {f"LDP(eps={e:g})" for e in res["epsilons"]}
    secs = [a for a in res["runs"] if a.startswith("SecEA")]
    if pub and need <= set(res["runs"]):
        eps = [e for e in res["epsilons"]]
        out += ["", f"Table 7 shape: {pub['metric']} of {pub['task']} with and without LDP, by budget epsilon "
                    "(last round; 'published': the paper's Table 7)"]
        rows = [["budget"] + [f"{e:g}" for e in eps]]
        rows.append(["w/ LDP (ours)"] + [f"{res['runs'][f'LDP(eps={e:g})'][-1][m0]:.4f}" for e in eps])
        rows.append(["w/ LDP (published)"] + [f"{pub['with_ldp'][e]:.4f}" if e in pub["with_ldp"] else "-"
                                               for e in eps])
        rows.append(["w/o LDP: EmbAvg (ours)", f"{res['runs']['EmbAvg'][-1][m0]:.4f}"] + [""] * (len(eps) - 1))
        rows += [[f"w/o LDP: {a} (ours)", f"{res['runs'][a][-1][m0]:.4f}"] + [""] * (len(eps) - 1) for a in secs]
        rows.append(["w/o LDP (published)", f"{pub['without_ldp']:.4f}"] + [""] * (len(eps) - 1))
        out.append(_grid(rows))
    return "\n".join(out)


def write_plot(res: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Primary metric vs round: Single, EmbAvg and SecEA (which coincide),
    LDP per epsilon below."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    m0 = res["metrics"][0]
    fig, ax = plt.subplots(figsize=(5.2, 3.4), dpi=90)
    ldps = [a for a in res["runs"] if a.startswith("LDP")]
    cmap = plt.get_cmap("Reds")
    for a, recs in res["runs"].items():
        x = [r["round"] for r in recs]
        y = [r[m0] for r in recs]
        if a == "EmbAvg":
            ax.plot(x, y, "-", color="tab:blue", lw=3, alpha=0.5, label=a)
        elif a.startswith("SecEA"):
            ax.plot(x, y, "--", color="black", lw=1.2, label=a)
        elif a == "Single":
            ax.plot(x, y, ":", color="tab:green", label=a)
        else:
            ax.plot(x, y, "-", color=cmap(0.35 + 0.6 * ldps.index(a) / max(1, len(ldps) - 1)), lw=1, label=a)
    ax.set_xlabel("round")
    ax.set_ylabel(m0)
    ax.set_title(res["title"], fontsize=8)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """``secea-fast study``: parse ``argv``, run the study, print or write its tables; the exit status.
    ``table3`` and ``table7`` are SecEA's tables on the real data (:mod:`.tables`), ``secemb-table3``
    SecEmb's (:mod:`.secemb_table3`)."""
    from .blas import single_threaded_blas
    with single_threaded_blas():        # one BLAS thread for the whole run (studies.blas)
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in ("table3", "table7"):
        from . import tables
        return tables.main(argv)
    if argv[:1] == ["secemb-table3"]:        # SecEmb's Table 3: its own options (secemb_table3.main)
        from . import secemb_table3
        return secemb_table3.main(argv[1:])
    p = OneLineParser(prog="secea-fast study", description=__doc__.split("\n\n")[0],
                      epilog="SecEmb's Table 3 (MF on MovieLens-100K against lossy compression): "
                             "secea-fast study secemb-table3 --help")
    p.add_argument("name", choices=sorted(STUDIES), help="; ".join(f"{k}: {v.title}" for k, v in STUDIES.items())
                   + "; and table3 / table7: Table 3 / Table 7 on the real data sets, the published values "
                     "beside ours (secea-fast study table3 --help)")
    p.add_argument("--quick", action="store_true", help="small synthetic instance, fewer rounds (1.6-29.6 s each on 2 shared "
                   "cores at load 2.5-3.9, 2026-11-25; docs/STUDIES.md)")
    p.add_argument("--data", metavar="FILE", help="the real data set's file or directory, or the name of a "
                   "data set `secea-fast data` fetches (kinship, nations, umls, ml-100k, census-income; "
                   "fetched if not cached; see docs/STUDIES.md); default: a synthetic set of the same shape")
    p.add_argument("--labels", metavar="FILE", help="graph: node labels (node label per line, or Cora's "
                   "cora.content: id, features, label)")
    p.add_argument("--out", metavar="DIR", default=None, help="write NAME.json and NAME.png here "
                   "(default: study-out; checked before the run, and if writing fails after it the "
                   "results go to the current directory, said on stderr)")
    p.add_argument("--rounds", type=int, default=None, help="rounds (default: the study's)")
    p.add_argument("--eps", type=float, nargs="+", default=None, help="LDP budgets (default: the study's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--processes", type=int, default=1, help="SecEA worker processes (default 1)")
    p.add_argument("--clients", type=int, default=3, help="clients N (default 3, the paper's Sec. 6.1)")
    p.add_argument("--precision", type=int, nargs="+", default=[8],
                   help="SecEA(p) decimal digits, one run per value (default 8; Table 3: 4 6 8 10)")
    p.add_argument("--only", nargs="+", choices=AGGREGATIONS, default=None,
                   help="run only these aggregations (default: all)")
    args = p.parse_args(argv)
    bad = study_option_problem(args)
    if bad:
        print(f"secea-fast study: error: {bad}", file=sys.stderr)
        return 2
    try:
        if args.data in DATASETS and not os.path.exists(args.data):
            args.data = str(fetch(args.data))
        res = run_study(args.name, quick=args.quick, data=args.data, labels=args.labels, seed=args.seed,
                        rounds=args.rounds, epsilons=args.eps, processes=args.processes, clients=args.clients,
                        only=args.only, precisions=args.precision)
    except (ValueError, TypeError, OSError) as exc:
        print(f"\nsecea-fast study: error: {exc}", file=sys.stderr)
        return 2
    print(format_tables(res))
    return save_result(json.dumps(res, indent=1, default=float), Path(args.out or "study-out") / f"{args.name}.json",
                       "--out", lambda png: write_plot(res, png), "secea-fast study")


def study_option_problem(args: Any) -> str | None:
    """The first ``study`` option whose value is out of range or whose
    file cannot be used, as one sentence naming the option; None if all
    are fine.  Checked before anything runs."""
    bad = option_problem([("--clients", args.clients, 2, None), ("--rounds", args.rounds, 1, None),
                          ("--processes", args.processes, 1, None), ("--seed", args.seed, 0, None),
                          ("--precision", args.precision, 0, 18)])
    if bad:
        return bad
    for e in args.eps or ():
        if not (math.isfinite(e) and e > 0):
            return f"--eps must be positive finite numbers, got {e}"
    for flag, path in (("--data", args.data), ("--labels", args.labels)):
        if path is not None and not os.path.exists(path) and not (flag == "--data" and path in DATASETS):
            return f"{flag} {path!r}: no such file or directory (nor a data set name: {', '.join(DATASETS)})"
    return output_dir_problem(args.out or "study-out", "--out")
