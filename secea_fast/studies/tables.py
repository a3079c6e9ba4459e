"""``secea-fast study table3`` and ``table7``: SecEA's Table 3 and Table 7
on the real data sets (Tang, Zhu, Li, Zhang, Sun 2022, "Fully
Privacy-Preserving Federated Representation Learning via Secure Embedding
Aggregation", Sec. 6.1, Table 3; Appendix B; Appendix C, Table 7), our
values printed beside the published ones.

Table 3's protocol (Sec. 6.1, Appendix B): N = 3 clients, the training set
partitioned non-i.i.d. (knowledge graphs by relation), each setting run
``reps`` times (5 in the paper, one seed per repetition: partition,
initialisation, batches), the metric averaged over the clients and the
repetitions; we also report the standard deviation over repetitions (the
paper gives none).  Settings:

* **Entire** -- the same model trained centrally on all clients' data (the
  task built with N = 1, no aggregation);
* **Single** -- no aggregation (:class:`~secea_fast.studies.framework.Single`);
* **EmbAvg** -- plaintext averaging (:class:`~secea_fast.studies.framework.PlainAvg`);
* **PSI** -- secure aggregation of the entities in the intersection of all
  clients' sets only (:class:`~secea_fast.studies.framework.PSIAvg`);
* **SecEA(p)** -- the protocol at p decimal digits, p in 4, 6, 8, 10
  (:class:`~secea_fast.studies.framework.SecEAAvg`).

A row of the table is a :class:`Row` in the :data:`TABLE3` registry (name ->
loader, partition, task factory, metric, published values, rounds), so a
new model or data set plugs in by adding an entry; the published values of
every Table 3 row whose data set the package can fetch are in
:data:`PUBLISHED_TABLE3`.
"""
from __future__ import annotations

import datetime
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import framework as fw
from .._cli_checks import OneLineParser, option_problem, output_dir_problem, save_result
from .._workers import run_shards
from .ldp import PAPER_EPSILONS, PUBLISHED_TABLE7, LDPAvg

__all__ = ["Row", "TABLE3", "PUBLISHED_TABLE3", "SETTINGS", "TABLES", "data_set_path", "run_table3",
           "run_table7", "format_table3", "format_table7", "write_table_plot", "main"]

#: Table 3's settings, in the paper's column order
SETTINGS = ("Entire", "Single", "EmbAvg", "PSI", "SecEA(4)", "SecEA(6)", "SecEA(8)", "SecEA(10)")


def _pub(*v: float) -> dict[str, float]:
    return dict(zip(SETTINGS, v))


#: Table 3 as published, for the rows whose data sets the package fetches:
#: (data set, model) -> setting -> value (metric: MRR, NDCG, NMI)
PUBLISHED_TABLE3: dict[tuple[str, str], dict[str, float]] = {
    ("kinship", "transe"): _pub(0.5169, 0.3289, 0.4026, 0.3919, 0.3862, 0.3869, 0.3937, 0.3969),
    ("kinship", "rotate"): _pub(0.8342, 0.5093, 0.7413, 0.4663, 0.6166, 0.6234, 0.6249, 0.6367),
    ("ml-100k", "svd"): _pub(0.0229, 0.0170, 0.0226, 0.0221, 0.0225, 0.0225, 0.0225, 0.0226),
    ("ml-100k", "ncf"): _pub(0.6240, 0.2708, 0.4116, 0.2921, 0.3581, 0.3581, 0.3581, 0.3581),
    ("ml-100k", "lightgcn"): _pub(0.3237, 0.1905, 0.2098, 0.2009, 0.2092, 0.2097, 0.2097, 0.2097),
    ("census-income", "pca"): _pub(0.0026, 0.0014, 0.0026, 0.0026, 0.0025, 0.0025, 0.0025, 0.0026),
    ("census-income", "autoencoder"): _pub(0.0026, 0.0015, 0.0026, 0.0026, 0.0026, 0.0026, 0.0026, 0.0026),
}


@dataclass(frozen=True)
class Row:
    """One row of Table 3.  ``load(path)`` -> the data (``path``: the data
    set's directory, from :func:`data_set_path`); ``task(data, N, seed,
    quick)`` -> a :class:`~secea_fast.studies.framework.Task` partitioned
    as ``partition`` says over N clients (N = 1: Entire, one party with
    all the training data); ``metric``: the key of ``Task.evaluate``'s
    dict reported (its mean over the clients); ``rounds`` /
    ``quick_rounds``: global rounds of the full and quick runs."""
    data_set: str
    model: str
    load: Callable[[Path], Any]
    partition: str
    task: Callable[[Any, int, int, bool], fw.Task]
    metric: str
    published: dict[str, float]
    rounds: int
    quick_rounds: int


def _kinship(path: Path) -> Any:
    from .kg import triples_from_file
    return triples_from_file(path, use_valid=True)        # train + valid: 90% (9,612), test 10% (1,074)


def _kge(model: str) -> Callable[[Any, int, int, bool], fw.Task]:
    def build(data: Any, N: int, seed: int, quick: bool) -> fw.Task:
        from .kge import KGETask
        hyper = {**KGE_HYPER[model], **({"d": 32} if quick else {})}      # quick: a quarter of the width
        return KGETask(data, N, model=model, seed=seed, **hyper)
    return build


#: hyperparameters of the knowledge-graph rows (Appendix B fixes d = 128 and
#: an Adam step of 0.001 on a GPU for many epochs; ours trade a larger step
#: for fewer epochs; TransE with the L1 norm and filtered negatives:
#: docs/STUDIES.md, "Real data"); ``--quick`` runs them at d = 32
KGE_HYPER: dict[str, dict[str, Any]] = {
    "transe": {"d": 128, "gamma": 12.0, "alpha": 1.0, "lr": 0.01, "batch": 512, "epochs": 1, "norm": 1,
               "filter_negatives": True},
    "rotate": {"d": 128, "gamma": 3.0, "alpha": 1.0, "lr": 0.02, "batch": 512, "epochs": 1},
}

def _ml100k(path: Path) -> Any:
    from .recsys import Ratings
    from ..datasets import read_inter
    f = path / "ml-100k.inter" if path.is_dir() else path
    u, i, r, t = read_inter(f)
    _, uu = np.unique(u, return_inverse=True)
    _, ii = np.unique(i, return_inverse=True)
    return Ratings(uu.astype(np.int64), ii.astype(np.int64), t, int(uu.max()) + 1, int(ii.max()) + 1, values=r)


def _census(path: Path) -> Any:
    from .tabular import census_from_file
    return census_from_file(path)


def _rec(model: str) -> Callable[[Any, int, int, bool], fw.Task]:
    from .rectasks import table3_task
    return table3_task(model)


#: rounds of the recommendation rows (full, quick): the tasks' own schedules
_REC_ROUNDS = {"svd": {"quick": 2, "full": 3}, "ncf": {"quick": 2, "full": 5}, "lightgcn": {"quick": 2, "full": 5}}


def _tab(model: str) -> Callable[[Any, int, int, bool], fw.Task]:
    from .autoencoder import table3_task
    return table3_task(model)


_BY_ITEM = "by item: items dealt to the clients, every user's ratings of a client's items held there (Appendix B)"
_MULTIVIEW = "multi-view: fields dealt to the clients, each holding its view of a random 70% of the rows"

_BY_RELATION = "by relation: relations dealt uniformly to the clients (Appendix B, subgraph level)"

#: the registry: name -> Row
TABLE3: dict[str, Row] = {
    "kinship/transe": Row("kinship", "transe", _kinship, _BY_RELATION, _kge("transe"), "MRR",
                          PUBLISHED_TABLE3[("kinship", "transe")], 15, 4),
    "kinship/rotate": Row("kinship", "rotate", _kinship, _BY_RELATION, _kge("rotate"), "MRR",
                          PUBLISHED_TABLE3[("kinship", "rotate")], 16, 4),
    **{f"ml-100k/{m}": Row("ml-100k", m, _ml100k, _BY_ITEM, _rec(m), "NDCG@10", PUBLISHED_TABLE3[("ml-100k", m)],
                           _REC_ROUNDS[m]["full"], _REC_ROUNDS[m]["quick"]) for m in ("svd", "ncf", "lightgcn")},
    **{f"census-income/{m}": Row("census-income", m, _census, _MULTIVIEW, _tab(m), "NMI",
                                 PUBLISHED_TABLE3[("census-income", m)], 5, 2) for m in ("pca", "autoencoder")},
}

#: the commands of this module
TABLES = ("table3", "table7")


def data_set_path(name: str, data: str | os.PathLike[str] | None = None) -> Path:
    """The directory of data set ``name``: ``data`` if given, else
    ``secea_fast.datasets.fetch(name)`` (downloads once into its cache)."""
    if data is not None:
        p = Path(data)
        if not p.exists():
            raise ValueError(f"--data {str(p)!r}: no such file or directory")
        return p
    try:
        datasets = importlib.import_module("secea_fast.datasets")
    except ImportError as exc:
        raise ValueError(f"data set {name!r}: secea_fast.datasets is not available ({exc}); "
                         "pass its directory with --data") from None
    return Path(datasets.fetch(name))


def _aggregator(setting: str) -> fw.Aggregator:
    if setting in ("Entire", "Single"):
        return fw.Single()
    if setting == "EmbAvg":
        return fw.PlainAvg()
    if setting == "PSI":
        return fw.PSIAvg(8)
    if setting.startswith("SecEA(") and setting.endswith(")"):
        return fw.SecEAAvg(int(setting[6:-1]))
    raise ValueError(f"settings: unknown setting {setting!r} (one of {SETTINGS})")


def _say(progress: bool, msg: str) -> None:
    if progress:
        print(msg, file=sys.stderr, flush=True)


def _stats(values: list[float], published: float | None) -> dict[str, Any]:
    mean = float(np.mean(values))
    out: dict[str, Any] = {"mean": mean, "std": float(np.std(values)), "runs": [float(v) for v in values],
                           "published": published}
    if published is not None:
        out["diff"] = mean - published
        out["beyond_5pct"] = bool(abs(mean - published) > 0.05 * abs(published))
    return out


def _one_run(table: str, key: str, setting: str, rep: int, rounds: int, clients: int, path: str,
             quick: bool) -> tuple[list[float], dict[str, Any]]:
    """One repetition of one setting: the metric per round and the task's
    sizes (module-level, so a worker process can run it)."""
    row = TABLE3[key]
    data_obj = _load_cached(key, path)
    if table == "table7":
        agg = LDPAvg(float(setting[8:-1])) if setting.startswith("LDP(eps=") else _aggregator(setting)
        task = row.task(data_obj, clients, rep, quick)
    else:
        agg = _aggregator(setting)
        task = row.task(data_obj, 1 if setting == "Entire" else clients, rep, quick)
    recs = fw.run(task, agg, rounds)
    return [r.metrics[row.metric] for r in recs], task.describe()


_LOADED: dict[tuple[str, str], Any] = {}


def _load_cached(key: str, path: str) -> Any:
    row = TABLE3[key]
    if (row.data_set, path) not in _LOADED:
        _LOADED[(row.data_set, path)] = row.load(Path(path))
    return _LOADED[(row.data_set, path)]


def _run_all(table: str, jobs: list[tuple[str, str, int]], rounds: dict[str, int], clients: int, path: Path,
             quick: bool, processes: int, progress: bool) -> dict[tuple[str, str, int], Any]:
    """Every (row key, setting, repetition) of ``jobs``, on ``processes``
    worker processes (1: in this process)."""
    args = [(table, k, s, rep, rounds[k], clients, str(path), quick) for k, s, rep in jobs]
    out: dict[tuple[str, str, int], Any] = {}

    def collect(item):
        i, res = item
        k, s, rep = jobs[i]
        out[(k, s, rep)] = res
        _say(progress, f"[{table} {k}] {s} rep {rep + 1}: {TABLE3[k].metric} {res[0][-1]:.4f}")
    # the package's one pool (forked per call): a SIGTERM or an error stops every worker
    # with the caller (a ProcessPoolExecutor's shutdown waited for the running jobs)
    run_shards(_indexed_run, list(range(len(args))), args, collect, processes if processes > 1 else 0)
    return {j: out[j] for j in jobs}


def _indexed_run(args, i):
    return i, _one_run(*args[i])


def run_table3(data_set: str, *, models: Sequence[str] | None = None, quick: bool = False, reps: int | None = None,
               data: str | os.PathLike[str] | None = None, rounds: int | None = None,
               settings: Sequence[str] = SETTINGS, clients: int = 3, processes: int = 1,
               progress: bool = True) -> dict[str, Any]:
    """Table 3's rows of ``data_set`` (``models``: a subset of its rows'
    models, default all): every setting trained ``reps`` times (default 5,
    quick 1; repetition r uses seed r), the last round's metric averaged
    over the clients, then mean and standard deviation over the
    repetitions, beside the published value; ``processes`` runs
    (setting, repetition) pairs in parallel.  Returns a JSON-able dict."""
    rows = {r.model: k for k, r in TABLE3.items() if r.data_set == data_set}
    if not rows:
        raise ValueError(f"--data-set must be one of {sorted({r.data_set for r in TABLE3.values()})}, "
                         f"got {data_set!r}")
    models = list(rows) if models is None else list(models)
    for m in models:
        if m not in rows:
            raise ValueError(f"--models: {data_set} has the models {sorted(rows)}, got {m!r}")
    for s in settings:
        _aggregator(s)
    reps = (1 if quick else 5) if reps is None else reps
    if reps < 1:
        raise ValueError(f"--reps must be >= 1, got {reps}")
    t0 = time.perf_counter()
    path = data_set_path(data_set, data)
    R = {rows[m]: (TABLE3[rows[m]].quick_rounds if quick else TABLE3[rows[m]].rounds) if rounds is None else rounds
         for m in models}
    jobs = [(rows[m], s, rep) for m in models for s in settings for rep in range(reps)]
    done = _run_all("table3", jobs, R, clients, path, quick, processes, progress)
    out: dict[str, Any] = {"table": "table3", "data_set": data_set, "quick": bool(quick), "reps": reps,
                           "clients": clients, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                               timespec="seconds"), "load_average": list(os.getloadavg()), "models": {}}
    for m in models:
        row = TABLE3[rows[m]]
        res: dict[str, Any] = {"metric": row.metric, "rounds": R[rows[m]], "partition": row.partition,
                               "task": done[(rows[m], settings[0], 0)][1], "settings": {}}
        for s in settings:
            curves = [done[(rows[m], s, rep)][0] for rep in range(reps)]
            res["settings"][s] = {**_stats([c[-1] for c in curves], row.published.get(s)), "curves": curves}
        out["models"][m] = res
    out["seconds"] = time.perf_counter() - t0
    return out


def run_table7(*, quick: bool = False, reps: int | None = None, data: str | os.PathLike[str] | None = None,
               rounds: int | None = None, epsilons: Sequence[float] = PAPER_EPSILONS, clients: int = 3,
               processes: int = 1, progress: bool = True) -> dict[str, Any]:
    """Table 7 on real Kinship: TransE (the ``kinship/transe`` row's model
    and schedule) under the Laplace LDP baseline at each epsilon (fresh
    noise from ``secrets``), and without LDP under EmbAvg and SecEA(8),
    ``reps`` times (default 5, quick 1); last-round MRR, mean and std over
    repetitions."""
    key = "kinship/transe"
    row = TABLE3[key]
    reps = (1 if quick else 5) if reps is None else reps
    if reps < 1:
        raise ValueError(f"--reps must be >= 1, got {reps}")
    t0 = time.perf_counter()
    path = data_set_path("kinship", data)
    R = (row.quick_rounds if quick else row.rounds) if rounds is None else rounds
    with_ldp: dict[float, float] = dict(PUBLISHED_TABLE7["with_ldp"])      # type: ignore[call-overload]
    without = float(PUBLISHED_TABLE7["without_ldp"])                       # type: ignore[arg-type]
    labels = [(f"LDP(eps={float(e):g})", with_ldp.get(float(e))) for e in epsilons]
    labels += [("EmbAvg", without), ("SecEA(8)", without)]
    jobs = [(key, lab, rep) for lab, _ in labels for rep in range(reps)]
    done = _run_all("table7", jobs, {key: R}, clients, path, quick, processes, progress)
    res: dict[str, Any] = {"table": "table7", "data_set": "kinship", "model": "transe", "quick": bool(quick),
                           "reps": reps, "rounds": R, "clients": clients, "metric": row.metric,
                           "epsilons": [float(e) for e in epsilons],
                           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "load_average": list(os.getloadavg()), "settings": {}}
    for lab, pub in labels:
        curves = [done[(key, lab, rep)][0] for rep in range(reps)]
        res["settings"][lab] = {**_stats([c[-1] for c in curves], pub), "curves": curves}
    res["seconds"] = time.perf_counter() - t0
    return res


def _grid(rows: list[list[str]]) -> str:
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)) for r in rows)


def _lines(settings: dict[str, Any]) -> list[list[str]]:
    rows = [["setting", "ours (mean)", "std", "published", "ours - pub", ""]]
    for s, v in settings.items():
        pub = v.get("published")
        rows.append([s, f"{v['mean']:.4f}", f"{v['std']:.4f}", "-" if pub is None else f"{pub:.4f}",
                     "-" if pub is None else f"{v['diff']:+.4f}", "*" if v.get("beyond_5pct") else ""])
    return rows


def format_table3(res: dict[str, Any]) -> str:
    """Table 3 as text: one block per model, our mean and std over the
    repetitions beside the published value; ``*``: we differ by more than
    5% of the published value (the paper gives no standard deviation)."""
    out = []
    for m, r in res["models"].items():
        out += [f"Table 3, {res['data_set']} / {m} ({r['metric']}{', filtered' if r['metric'] == 'MRR' else ''}; {res['clients']} clients, "
                f"{r['rounds']} rounds, {res['reps']} repetition(s){', quick' if res['quick'] else ''})",
                _grid(_lines(r["settings"])), ""]
    out.append(f"*: |ours - published| > 5% of published.  {res['seconds']:.0f} s")
    return "\n".join(out)


def format_table7(res: dict[str, Any]) -> str:
    """Table 7 as text (the rows of :func:`format_table3`, one per budget)."""
    return "\n".join([f"Table 7, kinship / TransE with and without LDP ({res['metric']}, filtered; "
                      f"{res['clients']} clients, {res['rounds']} rounds, {res['reps']} repetition(s)"
                      f"{', quick' if res['quick'] else ''}; {res['seconds']:.0f} s)",
                      _grid(_lines(res["settings"])), "", "*: |ours - published| > 5% of published"])


def write_table_plot(res: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Bars: ours (mean, std as error bar) beside the published value, per
    setting; one panel per model (Table 3) or one panel (Table 7)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = (list(res["models"].items()) if res["table"] == "table3"
              else [(res["model"], {"settings": res["settings"], "metric": res["metric"]})])
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.4), dpi=90, squeeze=False)
    for ax, (m, r) in zip(axes[0], panels):
        labels = list(r["settings"])
        x = np.arange(len(labels))
        ours = [r["settings"][s]["mean"] for s in labels]
        err = [r["settings"][s]["std"] for s in labels]
        pub = [r["settings"][s]["published"] or 0.0 for s in labels]
        ax.bar(x - 0.2, ours, 0.4, yerr=err, label="ours", color="tab:blue")
        ax.bar(x + 0.2, pub, 0.4, label="published", color="tab:gray")
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel(r["metric"])
        ax.set_title(f"{res['table']}: {res['data_set']} / {m}", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: Sequence[str]) -> int:
    """``secea-fast study table3|table7 ...``: parse, run, print, write
    JSON and a plot; the exit status."""
    from .blas import single_threaded_blas
    with single_threaded_blas():        # one BLAS thread for the whole run (studies.blas)
        return _main(argv)


def _main(argv: Sequence[str]) -> int:
    argv = list(argv)
    name = argv[0] if argv else ""
    p = OneLineParser(prog=f"secea-fast study {name}",
                      description="SecEA's Table 3 (every setting of a data set's rows) or Table 7 (LDP vs "
                                  "SecEA, TransE on Kinship) on the real data, the published values beside ours")
    p.add_argument("--data-set", default="kinship", help="table3: the data set (default kinship; "
                   f"registered: {', '.join(sorted({r.data_set for r in TABLE3.values()}))})")
    p.add_argument("--models", nargs="+", default=None, help="table3: the data set's models (default all)")
    p.add_argument("--quick", action="store_true", help="a few rounds, one repetition")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 5, the paper's; quick 1)")
    p.add_argument("--rounds", type=int, default=None, help="global rounds (default: the row's)")
    p.add_argument("--settings", nargs="+", default=None, help=f"table3: a subset of {' '.join(SETTINGS)}")
    p.add_argument("--eps", type=float, nargs="+", default=None, help="table7: LDP budgets (default the paper's)")
    p.add_argument("--processes", type=int, default=1, help="worker processes, one (setting, repetition) "
                   "each (default 1)")
    p.add_argument("--data", metavar="DIR", default=None, help="the data set's directory (default: fetched "
                   "by secea_fast.datasets into its cache)")
    p.add_argument("--out", metavar="DIR", default=None, help="write NAME.json and NAME.png here (default study-out)")
    args = p.parse_args(argv[1:])
    bad = option_problem([("--reps", args.reps, 1, None), ("--rounds", args.rounds, 1, None),
                          ("--processes", args.processes, 1, None)])
    bad = bad or output_dir_problem(args.out or "study-out", "--out")
    if name == "table7" and args.data_set != "kinship":
        bad = bad or f"--data-set: table7 is on kinship, got {args.data_set!r}"
    if bad:
        print(f"secea-fast study {name}: error: {bad}", file=sys.stderr)
        return 2
    try:
        if name == "table3":
            res = run_table3(args.data_set, models=args.models, quick=args.quick, reps=args.reps, data=args.data,
                             rounds=args.rounds, settings=tuple(args.settings or SETTINGS),
                             processes=args.processes)
            text, stem = format_table3(res), f"table3-{args.data_set}"
        else:
            res = run_table7(quick=args.quick, reps=args.reps, data=args.data, rounds=args.rounds,
                             epsilons=tuple(args.eps or PAPER_EPSILONS), processes=args.processes)
            text, stem = format_table7(res), "table7-kinship"
    except (ValueError, TypeError, OSError) as exc:
        print(f"secea-fast study {name}: error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return save_result(json.dumps(res, indent=1), Path(args.out or "study-out") / f"{stem}.json", "--out",
                       lambda png: write_table_plot(res, png), f"secea-fast study {name}")
