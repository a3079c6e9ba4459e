"""Benchmark report: PNG plots and a Markdown summary from benchmark JSON files.

``secea-fast bench report RESULTS.json... -o DIR`` (:func:`main`) reads
pytest-benchmark files (``--benchmark-json``) and ``secea-fast bench
throughput --json`` files, detected by content, and writes ``DIR/report.md``
with its plots beside it:

* kernel groups: our fastest variant (``extra_info["impl"] == "secea_fast"``)
  against each peer implementation, ratio = peer median / our median
  (> 1: ours faster);
* the per-backend suite (``extra_info["suite"] == "backends"``,
  bench/test_backends.py): each kernel's median and rate on every backend
  (``extra_info["backend"]``), and its time relative to ``auto``;
* the scaling suite (``extra_info["suite"] == "scaling"``): time per phase
  against the varied axis, and the speedup where that axis is ``processes``;
* throughput: rate and speedup against processes;
* protocol rounds (SecEA, SecEmb) beside the papers' published figures
  (:data:`PAPER`); every number is marked "published (paper)" or
  "measured (this run)".

matplotlib is optional (``pip install "secea_fast[report]"``); with
``plots=False`` / ``--no-plots`` only the Markdown is written.

``secea-fast bench summary RESULTS.json`` (:func:`summary_main`) prints a
plain-text summary of one pytest-benchmark file instead (:func:`summary`):
per group, each implementation's median and, for ours, its ratio to the
fastest peer.

Length (about 660 lines): every benchmark format the report reads and every
section it writes (kernel groups, backends, scaling, throughput, protocol
rounds beside the papers' figures) is here, so a new benchmark's reader
and its section are changed together.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict

from .._cli_checks import output_dir_problem

OURS = "secea_fast"
THROUGHPUT_KIND = "secea-fast/throughput"
PUB, MEAS = "published (paper)", "measured (this run)"

# Figures transcribed from the papers (SecEA: Tang, Zhu, Li, Zhang, Sun, 2022, full version;
# SecEmb: Mai et al., 2025; full references in docs/papers.md) with units and settings as the
# papers state them; values are the printed strings, exactly.  The SecEA full version's text
# is garbled in places: the security-parameter column prints "[0.1N]" with the bracket type
# lost; Table 6's header lists 11 client counts for its 12 value columns (N = 20
# of T = [0.5N] is missing); and Tables 5 and 6 disagree on LightGCN / ML-1M offline at
# T = [0.5N] (N = 15: 306.9342 vs 206.9342 s; N = 20: 709.3732 vs 709.3736 s).  Only the
# T = [0.1N] columns, on which both tables agree, are transcribed.
_SECEA_HW = ("one global round; 20 parallel processes on an Intel Xeon Gold 5118 CPU @ 2.30GHz "
             "(\"12 cores of 48 threads\"); communication simulated at 680 Mbps")
_SECEA_T = "T = [0.1N] (bracket type lost in the text; T = 1 at N = 5 if a ceiling)"
_SECEMB = ("ML1M (m = 3,883 items), MF, d = 64, m' = 300, 100 users per iteration, "
           "lambda = 128 (App. I)")
_USERS = (100, 200, 300, 400, 500)
# One PAPER entry: where the figures come from, their unit and setting, the printed values.
Published = TypedDict("Published", {"source": str, "unit": str, "setting": str,
                                     "values": dict[str, str]})
PAPER: dict[str, Published] = {
    "secea-t6-lightgcn-ml1m": Published(
        source="SecEA (Tang et al., 2022), Table 6: breakdown of the execution time of SecEA in a "
               "single training round", unit="s",
        setting=f"LightGCN on MovieLens-1M, N = 5 clients, {_SECEA_T}, d = 128; {_SECEA_HW}",
        values={"offline": "88.7823", "coding": "7.3514", "comm.": "0.6446",
                "training": "2200.1345"}),
    "secea-t6-svd-ml1m": Published(
        source="SecEA (Tang et al., 2022), Table 6", unit="s",
        setting=f"SVD on MovieLens-1M, N = 5 clients, {_SECEA_T}, d = 128; {_SECEA_HW}",
        values={"offline": "88.6134", "coding": "7.6975", "comm.": "0.6424",
                "training": "5.1925"}),
    "secea-t5-lightgcn-ml1m": Published(
        source="SecEA (Tang et al., 2022), Table 5: offline and training time costs in one global "
               "training round", unit="s",
        setting=f"LightGCN on MovieLens-1M, {_SECEA_T}, N clients; {_SECEA_HW}",
        values={"offline, N = 5": "88.7823", "offline, N = 10": "157.5516",
                "offline, N = 15": "177.6544", "offline, N = 20": "218.9578"}),
    "secea-t4-census": Published(
        source="SecEA (Tang et al., 2022), Table 4: execution time for a global round of FRL (SecEA "
               "columns)", unit="s",
        setting=f"Census Income (48,842 entities; d = 4 for PCA, 32 for Autoencoder), N = 5 "
                f"clients, whole round incl. training; {_SECEA_HW}",
        values={"PCA, T = 1": "3293.0407", "PCA, T = 2": "3556.2640",
                "Autoencoder, T = 1": "3726.3676", "Autoencoder, T = 2": "3873.6363"}),
    "secemb-t14-server": Published(
        source="SecEmb (Mai et al., 2025), Table 14: server computation cost per iteration for ML1M",
        unit="min", setting="ML1M; model and hardware not stated",
        values={**{f"SecEmb, {u} active users": v for u, v in
                   zip(_USERS, ("0.08", "0.16", "0.25", "0.33", "0.41"))},
                **{f"HE (CKKS), {u} active users": v for u, v in
                   zip(_USERS, ("127.26", "244.51", "391.76", "519.05", "646.38"))}}),
    "secemb-t2-upload": Published(
        source="SecEmb (Mai et al., 2025), Table 2: upload communication cost per user in one "
               "iteration", unit="MB", setting=_SECEMB,
        values={"SecEmb": "0.27", "Secure FedRec": "1.99"}),
    "secemb-t12-download": Published(
        source="SecEmb (Mai et al., 2025), Table 12: download communication cost per user in one "
               "iteration", unit="MB", setting=_SECEMB,
        values={"SecEmb": "0.15", "Secure FedRec": "0.99"}),
    "secemb-t17-secretgen": Published(
        source="SecEmb (Mai et al., 2025), Table 17 (SecEmb also in Table 5): computation cost for "
               "secret generation per user", unit="ms", setting=_SECEMB,
        values={"SecEmb": "0.47", "Secure FedRec": "1.80"}),
}


# ------------------------------------------------------------------ loading
def load_results(paths) -> list:
    """Read and classify JSON result files.  Returns ``[{"path", "kind", "data"}]``
    with kind ``"pytest-benchmark"`` or ``"throughput"``; raises ``ValueError``
    naming the file for a missing file, invalid JSON, an unknown kind or no entries."""
    if not paths:
        raise ValueError("no result files given")
    out = []
    for p in map(Path, paths):
        try:
            data = json.loads(p.read_text())
        except OSError as exc:
            raise ValueError(f"{p}: cannot read ({exc.strerror or exc})") from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{p}: not valid JSON ({exc})") from exc
        if isinstance(data, dict) and data.get("kind") == THROUGHPUT_KIND:
            kind, entries = "throughput", data.get("results")
        elif isinstance(data, dict) and "benchmarks" in data and "machine_info" in data:
            kind, entries = "pytest-benchmark", data["benchmarks"]
        else:
            raise ValueError(f"{p}: neither a pytest-benchmark JSON (machine_info, benchmarks) "
                             f"nor a throughput JSON (kind {THROUGHPUT_KIND!r})")
        if not isinstance(entries, list) or not all(map(_ENTRY_OK[kind], entries)):
            raise ValueError(f"{p}: malformed {kind} JSON")
        if not entries:
            raise ValueError(f"{p}: {kind} JSON with no entries")
        out.append({"path": str(p), "kind": kind, "data": data})
    return out


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and x > 0


def _bench_ok(b) -> bool:
    """A median; for the scaling suite, the axis and its value in params."""
    info = (b.get("extra_info") or {}) if isinstance(b, dict) else {}
    return (isinstance(b, dict) and _positive((b.get("stats") or {}).get("median"))
            and (info.get("suite") != "scaling" or info.get("axis") in (info.get("params") or {})))


def _throughput_ok(r) -> bool:
    """At least one row, each with positive processes and seconds."""
    return (isinstance(r, dict) and isinstance(r.get("rows"), list) and r["rows"] != []
            and all(isinstance(w, dict) and _positive(w.get("processes"))
                    and _positive(w.get("seconds")) for w in r["rows"]))


_ENTRY_OK = {"pytest-benchmark": _bench_ok, "throughput": _throughput_ok}


# ------------------------------------------------------------------ formatting
def _t(s) -> str:
    """Seconds with a readable unit."""
    if s is None or not math.isfinite(s):
        return "—"
    for unit, f in (("s", 1), ("ms", 1e3)):
        if abs(s) * f >= 1:
            return f"{s * f:.3g} {unit}"
    return f"{s * 1e6:.3g} µs"


def _slug(*parts) -> str:
    return re.sub(r"[^a-z0-9._-]+", "_", "_".join(map(str, parts)).lower()).strip("_")


def _table(header, rows) -> list:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + [""])


def _variant(b) -> str:
    info = b.get("extra_info") or {}
    n = info.get("threads")
    return b["name"] + (f" ({n} thread{'s' * (n != 1)})" if n is not None else "")


# ------------------------------------------------------------------ plotting
def _figure(size):
    """A headless figure and its axes.  matplotlib's object API (no pyplot) renders PNG
    with Agg and leaves the caller's pyplot backend alone."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise RuntimeError('plots need matplotlib: pip install "secea_fast[report]" '
                           '(or use --no-plots for the Markdown summary only)') from exc
    fig = Figure(figsize=size)
    return fig, fig.subplots()


def _finish(fig, ax, path, title, xlabel, ylabel):
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # outside the data
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _line_plot(path, title, xlabel, ylabel, series, ideal=None):
    """One line per ``series`` entry ``label: (xs, ys)``; y on a log scale when the values
    span more than 10x, x when numeric and spanning 10x or more (ticks at the points)."""
    fig, ax = _figure((7, 4.2))
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=label)
    if ideal:
        ax.plot(*ideal, "k--", linewidth=1, label="ideal (linear)")
    xs = sorted({x for xs_, _ in series.values() for x in xs_})
    ys = [y for _, ys_ in series.values() for y in ys_ if y is not None and y > 0]
    numeric = all(isinstance(x, (int, float)) for x in xs)
    if numeric and xs and xs[0] > 0 and xs[-1] / xs[0] >= 10:
        ax.set_xscale("log")
        ax.minorticks_off()
    if numeric and len(xs) <= 12:
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
    if ys and max(ys) / min(ys) > 10:
        ax.set_yscale("log")
    _finish(fig, ax, path, title, xlabel, ylabel)


def _bar_plot(path, title, xlabel, categories, series, base):
    """Horizontal grouped bars on a log axis, starting at ``base`` (1 for ratios)."""
    n = len(series)
    fig, ax = _figure((8, 1.2 + 0.3 * len(categories) * max(n, 1.5)))
    h = 0.8 / n
    for i, (label, vals) in enumerate(series.items()):
        pos = [j + (i - (n - 1) / 2) * h for j in range(len(categories))]
        bars = ax.barh(pos, [v - base for v in vals], left=base, height=h, label=label)
        ax.bar_label(bars, labels=[f"{v:.3g}" if math.isfinite(v) else "" for v in vals],
                     padding=2, fontsize="x-small")
    ax.axvline(base, color="k", linewidth=0.8)
    ax.set_yticks(range(len(categories)), categories, fontsize="small")
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.margins(x=0.15)
    _finish(fig, ax, path, title, xlabel, "")


# ------------------------------------------------------------------ sections
def _kernels(benches, out, plots) -> list:
    """Per group: our fastest variant against each peer (peer median / our median)."""
    groups = defaultdict(list)
    for b in benches:
        info = b.get("extra_info") or {}
        if "impl" in info and info.get("suite") not in ("scaling", "backends"):
            groups[b.get("group") or b["name"]].append(b)
    if not groups:
        return []
    rows, cats, ratios = [], [], []
    for g in sorted(groups):
        ours = [b for b in groups[g] if b["extra_info"]["impl"] == OURS]
        peers: dict[str, float] = {}
        for b in groups[g]:
            impl = b["extra_info"]["impl"]
            if impl != OURS and (impl not in peers or b["stats"]["median"] < peers[impl]):
                peers[impl] = b["stats"]["median"]
        if not ours:
            rows += [(g, "—", "—", p, _t(m), "—", "—") for p, m in sorted(peers.items())]
            continue
        best = min(ours, key=lambda b: b["stats"]["median"])
        t_ours = best["stats"]["median"]
        one = [b["stats"]["median"] for b in ours if b["extra_info"].get("threads") == 1]
        threads = best["extra_info"].get("threads")
        label = _variant(best) + (f", fastest of {len(ours)}" if len(ours) > 1 else "")
        if not peers:
            rows.append((g, label, _t(t_ours), "—", "—", "—", "—"))
        for p, m in sorted(peers.items()):
            one_r = "same" if threads == 1 else f"{m / min(one):.2f}x" if one else "—"
            rows.append((g, label, _t(t_ours), p, _t(m), f"**{m / t_ours:.2f}x**", one_r))
            cats.append(f"{g} — {p}")
            ratios.append(m / t_ours)
    md = ["## Kernels against peers", "",
          f"{MEAS}. Ratio = peer median / our median (> 1: ours faster); ours = the fastest of "
          f"our variants in the group, named; the last column uses our fastest 1-thread variant.",
          ""]
    md += _table(["group", "ours (variant)", "ours median", "peer", "peer median",
                  "peer / ours", "peer / ours, 1 thread"], rows)
    if plots and cats:
        _bar_plot(out / "kernels_vs_peers.png", "Kernels: peer median / our median "
                  "(> 1: ours faster)", "ratio (log scale)", cats, {MEAS: ratios}, base=1.0)
        md += ["![kernels: ratio of each peer's median to ours](kernels_vs_peers.png)", ""]
    return md


def _rate(info, median) -> str:
    if "bytes" in info:
        return f"{info['bytes'] / median / 1e9:.3g} GB/s"
    if "macs" in info:
        return f"{info['macs'] / median / 1e9:.3g} G MAC/s"
    if "outputs" in info:
        r = info["outputs"] / median
        return f"{r / 1e9:.3g} G outputs/s" if r >= 1e9 else f"{r / 1e6:.3g} M outputs/s"
    return "—"


def _backends(benches) -> list:
    """Per kernel, each backend's median and rate, and median / the ``auto`` median."""
    kernels: defaultdict[str, dict[str, dict]] = defaultdict(dict)
    for b in benches:
        info = b.get("extra_info") or {}
        if info.get("suite") == "backends":
            kernels[info.get("kernel", b.get("group") or b["name"])][info.get("backend", "?")] = b
    if not kernels:
        return []
    rows = []
    for k in sorted(kernels):
        auto = kernels[k].get("auto")
        for name, b in sorted(kernels[k].items(), key=lambda kv: kv[1]["stats"]["median"]):
            med = b["stats"]["median"]
            rel = f"{med / auto['stats']['median']:.2f}x" if auto else "—"
            rows.append((k, name, _t(med), _rate(b["extra_info"], med), rel))
    return (["## Backends", "",
             f"{MEAS}: the same work on each kernel backend (`secea_fast.set_backend`: `auto` = the "
             "best the CPU has, `avx2` = an AVX2 / AES-NI CPU's variants, `portable` = plain C, "
             "what non-x86 CPUs run); one thread.", ""]
            + _table(["kernel", "backend", "median", "rate", "median / auto"], rows))


def _scaling(benches, out, plots) -> list:
    """Time per phase against the varied axis, per (protocol, axis); parameters
    that change along the axis without being it (derived ones, such as K with
    N) become table columns, the others are listed as fixed."""
    # (axis value, phases, median, params) per (protocol, axis); JSON values, hence Any
    series: defaultdict[tuple[str, str], list[tuple[Any, dict, float, dict]]] = defaultdict(list)
    for b in benches:
        info = b.get("extra_info") or {}
        if info.get("suite") == "scaling" and not info.get("smoke"):   # smoke: CI-sized points
            prm = info.get("params") or {}
            series[(info.get("protocol", "?"), info["axis"])].append(
                (prm.get(info["axis"]), info.get("phases") or {}, b["stats"]["median"], prm))
    if not series:
        return []
    md = ["## Scaling suite", "", f"{MEAS}: total = benchmark median; phases as recorded.", ""]
    for (proto, axis), pts in sorted(series.items(), key=lambda kv: str(kv[0])):
        pts.sort(key=lambda p: (isinstance(p[0], str), p[0]))
        name = _slug("scaling", proto, axis)
        keys = sorted({k for *_, prm in pts for k in prm if k != axis})
        vals = {k: [str(prm.get(k)) for *_, prm in pts] for k in keys}
        fixed = [(k, v[0]) for k, v in vals.items() if len(set(v)) == 1]
        derived = [k for k, v in vals.items() if len(set(v)) > 1]
        phases = list(dict.fromkeys(ph for _, phs, _, _ in pts for ph in phs))
        xs = [p[0] for p in pts]
        lines = {"total": (xs, [p[2] for p in pts])}
        lines.update({ph: ([x for x, phs, _, _ in pts if ph in phs],
                           [phs[ph] for _, phs, _, _ in pts if ph in phs]) for ph in phases})
        md += [f"### {proto}: {axis}", "",
               "Fixed: " + (", ".join(f"{k} = {v}" for k, v in fixed) or "—"), ""]
        md += _table([axis] + derived + ["total"] + phases,
                     [[x] + [prm.get(k) for k in derived] + [_t(tot)]
                      + [_t(phs.get(ph)) for ph in phases] for x, phs, tot, prm in pts])
        if plots:
            _line_plot(out / f"{name}.png", f"{proto}: time per phase against {axis}", axis,
                       "seconds (wall)", lines)
            md += [f"![{proto}: time per phase against {axis}]({name}.png)", ""]
        if axis == "processes" and plots and len(pts) > 1:
            x0 = min(xs)
            sp = {lab: (lx, [ly[lx.index(x0)] / y if y > 0 else math.nan for y in ly])
                  for lab, (lx, ly) in lines.items() if x0 in lx}
            _line_plot(out / f"{name}_speedup.png", f"{proto}: speedup t({x0})/t(P)",
                       "processes P", f"speedup t({x0})/t(P)", sp,
                       ideal=(xs, [x / x0 for x in xs]))
            md += [f"![{proto}: speedup against processes]({name}_speedup.png)", ""]
    return md


def _throughput(items, out, plots) -> list:
    results = [(Path(it["path"]).stem, r) for it in items for r in it["data"]["results"]]
    md = ["## Throughput", "", f"{MEAS}. Speedup = t(1 process) / t(P); efficiency = "
          "speedup / P.", ""]
    rows: list[tuple] = []
    speed: dict[str, tuple[list, list]] = {}
    rates: defaultdict[str, dict[str, tuple[list, list]]] = defaultdict(dict)
    for stem, r in results:
        label = f"{r.get('protocol')} {r.get('phase')} ({r.get('executor', 'local')})"
        label = f"{stem}: {label}" if len(items) > 1 else label
        label += f" #{len(speed) + 1}" if label in speed else ""
        unit = r.get("unit", "items/s")
        base = min(r["rows"], key=lambda w: w["processes"])
        ps = [w["processes"] for w in r["rows"]]
        sp = [w.get("speedup") or base["seconds"] / w["seconds"] for w in r["rows"]]
        speed[label] = (ps, sp)
        rates[unit][label] = (ps, [w.get("rate") for w in r["rows"]])
        for w, s in zip(r["rows"], sp):
            rate = f"{w['rate']:.4g} {unit}" if w.get("rate") is not None else "—"
            eff = w.get("efficiency", s / w["processes"])
            rows.append((label, w["processes"], _t(w["seconds"]), rate, f"{s:.2f}x", f"{eff:.2f}"))
        md += [f"- **{label}**: workload `{json.dumps(r.get('workload', {}), sort_keys=True)}`"
               + (f"; shard overhead {_t(r['shard_overhead_s'])}"
                  if r.get("shard_overhead_s") is not None else "")]
    md += [""] + _table(["protocol / phase (executor)", "processes", "seconds", "rate",
                         "speedup", "efficiency"], rows)
    if plots:
        allp = sorted({p for ps, _ in speed.values() for p in ps})
        _line_plot(out / "throughput_speedup.png", "Throughput: speedup against processes",
                   "processes P", "speedup t(1)/t(P)", speed,
                   ideal=(allp, [p / allp[0] for p in allp]))
        md += ["![throughput speedup against processes](throughput_speedup.png)", ""]
        for unit, lines in sorted(rates.items()):
            lines = {k: v for k, v in lines.items() if None not in v[1]}
            if not lines:
                continue
            name = _slug("throughput_rate", unit)
            _line_plot(out / f"{name}.png", "Throughput: rate against processes",
                       "processes P", unit, lines)
            md += [f"![throughput rate ({unit}) against processes]({name}.png)", ""]
    md += [f"No {PUB} figure is a direct counterpart: the papers report per-round times "
           "with 20 processes (see Published figures).", ""]
    return md


def _compare_secea(benches, out, plots, matched) -> list:
    """SecEA rounds: per-phase table, and the ML-1M / Census rounds beside Tables 6 / 4."""
    rounds = [b for b in benches if "core_seconds" in (b.get("extra_info") or {})]
    if not rounds:
        return []
    md = ["### SecEA rounds, per phase", "",
          f"{MEAS}: wall seconds / CPU seconds (user + sys, summed over parties) / MB through the server.",
          ""]
    labels = [f"{b['name']}, {b['extra_info'].get('processes', '?')} proc." for b in rounds]
    phases = list(dict.fromkeys(ph for b in rounds for ph in b["extra_info"]["core_seconds"]))

    def cell(info, ph):
        mb = (info.get("bytes_via_server") or {}).get(ph)
        return (f"{_t(info.get('wall_seconds', {}).get(ph))} / {_t(info['core_seconds'].get(ph))}"
                + (f" / {mb / 1e6:,.1f} MB" if mb is not None else ""))

    md += _table(["phase"] + labels, [[ph] + [cell(b["extra_info"], ph) for b in rounds]
                                      for ph in phases])
    rows: list[tuple] = []
    bars: defaultdict[str, dict[str, float]] = defaultdict(dict)
    t6 = PAPER["secea-t6-lightgcn-ml1m"]["values"]
    coding = ("encode", "responses", "noise", "decode")
    for b, lab in zip(rounds, labels):
        info = b["extra_info"]
        w = info.get("wall_seconds", {})
        if "paper_table6_ml1m_s" in info:
            matched.add("secea-t6-lightgcn-ml1m")
            code = sum(w.get(ph, 0.0) for ph in coding)
            rows += [("offline (wall)", f"{t6['offline']} s", _t(w.get("offline")), lab,
                      "Table 6"),
                     ("coding (wall; ours: encode + responses + noise + decode)",
                      f"{t6['coding']} s", _t(code), lab, "Table 6"),
                     ("comm.", f"{t6['comm.']} s", "not simulated", lab, "Table 6")]
            bars[lab].update(offline=w.get("offline", math.nan), coding=code)
        if "paper_table4_round_s" in info:
            matched.add("secea-t4-census")
            rows.append(("Census Income round (wall, excl. union; paper: PCA, T = 1, incl. "
                         "training)", f"{PAPER['secea-t4-census']['values']['PCA, T = 1']} s",
                         _t(info.get("round_wall_s")), lab, "Table 4"))
    if rows:
        md += ["### SecEA beside the paper", "",
               f"Paper setting: N = 5 clients, {_SECEA_T}; {_SECEA_HW}. Ours: the "
               "MovieLens-1M / Census Income shapes on the machine above.", ""]
        md += _table(["quantity", PUB, MEAS, "our run", "source"], rows)
    if plots and bars:
        series = {f"{PUB}, 20 processes": [float(t6["offline"]), float(t6["coding"])]}
        series.update({f"{MEAS}: {lab}": [v["offline"], v["coding"]] for lab, v in bars.items()})
        _bar_plot(out / "secea_ml1m_vs_paper.png", "SecEA, MovieLens-1M shape, N = 5: "
                  "per-round phases", "seconds, wall (log scale)",
                  ["offline", "coding\n(ours: encode + responses\n+ noise + decode)"], series,
                  base=min(v for s in series.values() for v in s if v > 0) / 3)
        md += ["![SecEA ML-1M phases, published against measured](secea_ml1m_vs_paper.png)", ""]
    return md


def _compare_secemb(benches, matched) -> list:
    """SecEmb / Secure FedRec rounds beside Tables 14, 17, 2 and 12 (ML1M)."""
    rows = []
    for b in benches:
        info = b.get("extra_info") or {}
        if "upload_kib_per_user" not in info:
            continue
        system = "Secure FedRec" if "fedrec" in str(info.get("impl", "")).lower() else "SecEmb"
        run = _variant(b)
        users = int(info.get("users", 100))
        bits = f", b = {info['agg_bits']}" if "agg_bits" in info else ""
        pub_key = f"SecEmb, {users} active users"
        if "server_seconds_per_iteration" in info and system == "SecEmb" and \
                pub_key in PAPER["secemb-t14-server"]["values"]:
            matched.add("secemb-t14-server")
            pub = PAPER["secemb-t14-server"]["values"][pub_key]
            rows.append((f"server computation per iteration, {users} users (ours: per server{bits})",
                         system, f"{pub} min ({float(pub) * 60:.3g} s)",
                         _t(info["server_seconds_per_iteration"]), run, "Table 14"))
        secretgen = "user_secretgen_ms_per_user" if "user_secretgen_ms_per_user" in info else "user_upload_ms_per_user"
        for key, pid, table, what, conv, unit in (
                (secretgen, "secemb-t17-secretgen", "Table 17",
                 "secret generation per user (ours: PathGen, ConvertGen, dense shares, messages as bytes)"
                 if secretgen == "user_secretgen_ms_per_user" else
                 "secret generation per user (ours: aggregation upload)", 1.0, "ms"),
                ("upload_kib_per_user", "secemb-t2-upload", "Table 2",
                 "upload per user (ours: retrieval + aggregation)", 1024 / 1e6, "MB"),
                ("download_kib_per_user", "secemb-t12-download", "Table 12",
                 "download per user", 1024 / 1e6, "MB")):
            if key in info:
                matched.add(pid)
                rows.append((what, system, f"{PAPER[pid]['values'][system]} {unit}",
                             f"{info[key] * conv:.3g} {unit}", run, table))
    if not rows:
        return []
    return (["### SecEmb beside the paper", "", f"Paper setting: {_SECEMB}; MB = 10^6 bytes.", ""]
            + _table(["quantity", "system", PUB, MEAS, "our run", "source"], rows))


def _published(matched) -> list:
    md = ["## Published figures (paper)", "",
          f"All numbers in this section are {PUB}, transcribed from the papers; they were not "
          "measured in this run and come from other hardware.", ""]
    for pid, e in PAPER.items():
        md += [f"### {e['source']}", "", f"Setting: {e['setting']}.", "",
               "Counterpart " + ("measured in this run: see above." if pid in matched else
                                 "in these inputs: none."), ""]
        md += _table(["figure", f"{PUB}, {e['unit']}"], list(e["values"].items()))
    return md


def _machine(it) -> str:
    d = it["data"]
    if it["kind"] == "throughput":
        m = d.get("machine") or {}
        return ", ".join(f"{k}={v}" for k, v in m.items() if not isinstance(v, (dict, list)))
    mi = d.get("machine_info") or {}
    cpu = mi.get("cpu") or {}
    return (f"{cpu.get('brand_raw', mi.get('processor') or '?')}, {cpu.get('count', '?')} cores, "
            f"Python {mi.get('python_version', '?')}, {mi.get('system', '')} "
            f"{mi.get('release', '')}").strip()


# ------------------------------------------------------------------ entry points
def render(results, out_dir, plots=True, title=None) -> Path:
    """Write ``out_dir/report.md`` (and the PNG plots unless ``plots=False``) from
    :func:`load_results` output; returns the path of report.md.  Raises
    ``RuntimeError`` when plots are asked for and matplotlib is missing."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if plots:
        _figure((1, 1))                # fail early, before any file is written
    benches = [b for it in results if it["kind"] == "pytest-benchmark"
               for b in it["data"]["benchmarks"]]
    tput = [it for it in results if it["kind"] == "throughput"]
    md = [f"# {title or 'secea_fast benchmark report'}", "",
          f"Numbers marked **{MEAS}** come from the input files; numbers marked **{PUB}** are "
          "transcribed from the papers (`secea_fast.bench.report.PAPER`, table cited) and were "
          "obtained on other hardware.", "", "## Inputs", ""]
    md += _table(["file", "kind", "entries", "machine", "date", "commit"], [
        (f"`{it['path']}`", it["kind"], len(it["data"].get("benchmarks") or it["data"]["results"]),
         _machine(it), it["data"].get("datetime", "—"),
         (it["data"].get("commit_info") or {}).get("id", "")[:10] or "—") for it in results])
    matched: set[str] = set()
    md += _kernels(benches, out, plots) + _backends(benches) + _scaling(benches, out, plots)
    if tput:
        md += _throughput(tput, out, plots)
    proto = _compare_secea(benches, out, plots, matched) + _compare_secemb(benches, matched)
    if proto:
        md += ["## Protocol rounds beside published figures", ""] + proto
    md += _published(matched)
    path = out / "report.md"
    path.write_text("\n".join(md))
    return path


def main(argv=None) -> int:
    """``secea-fast bench report``: returns 0, 2 on bad input, 1 without matplotlib."""
    ap = argparse.ArgumentParser(prog="secea-fast bench report",
                                 description="Plots and a Markdown summary (report.md) from "
                                             "pytest-benchmark and throughput JSON files.")
    ap.add_argument("results", nargs="+", metavar="RESULTS.json")
    ap.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    ap.add_argument("--no-plots", action="store_true", help="Markdown only (no matplotlib)")
    ap.add_argument("--title", help="report title")
    args = ap.parse_args(argv)
    bad = output_dir_problem(args.out, "--out")
    if bad:
        print(f"secea-fast bench report: error: {bad}", file=sys.stderr)
        return 2
    try:
        results = load_results(args.results)
    except ValueError as exc:
        print(f"secea-fast bench report: error: {exc}", file=sys.stderr)
        return 2
    try:
        path = render(results, args.out, plots=not args.no_plots, title=args.title)
    except RuntimeError as exc:
        print(f"secea-fast bench report: error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


# ------------------------------------------------------------------ plain-text summary
def summary(data) -> str:
    """Plain-text summary of a pytest-benchmark JSON (``data``: the parsed file or its path).

    Per group (sorted by name), one line per benchmark, fastest first: its
    implementation (``extra_info["impl"]``, else the test name) with
    ``(Nt)`` when ``extra_info["threads"]`` is set and ``[backend]`` when
    ``extra_info["backend"]`` is (bench/test_backends.py), its median in ms, its
    rate when ``extra_info`` has ``macs`` (G MAC/s) or ``bytes`` (GB/s), and
    for ours (``impl == "secea_fast"``) the ratio fastest peer median / our
    median (> 1: ours faster), a peer being any other implementation."""
    if not isinstance(data, dict):
        with open(data) as fh:
            data = json.load(fh)
    groups = defaultdict(list)
    for b in data["benchmarks"]:
        groups[b["group"]].append(b)
    lines = []
    for group in sorted(groups, key=str):
        rows = groups[group]
        peers = [b["stats"]["median"] for b in rows if b["extra_info"].get("impl") != OURS]
        lines.append(str(group))
        for b in sorted(rows, key=lambda b: b["stats"]["median"]):
            med = b["stats"]["median"]
            info = b["extra_info"]
            rate = ""
            if "macs" in info:
                rate = f"{info['macs'] / med / 1e9:7.2f} G MAC/s"
            elif "bytes" in info:
                rate = f"{info['bytes'] / med / 1e9:7.2f} GB/s"
            ratio = f"  {min(peers) / med:5.2f}x best peer" if peers and info.get("impl") == OURS else ""
            extra = f" ({info['threads']}t)" if "threads" in info else ""
            extra += f" [{info['backend']}]" if "backend" in info else ""
            lines.append(f"  {info.get('impl', b['name'])+extra:32s} {med * 1e3:10.3f} ms {rate}{ratio}")
    return "\n".join(lines)


def summary_main(argv=None) -> int:
    """``secea-fast bench summary``: returns 0, 2 on an unreadable file."""
    ap = argparse.ArgumentParser(prog="secea-fast bench summary",
                                 description="Per group, each implementation's median and our "
                                             "ratio to the fastest peer, from one "
                                             "pytest-benchmark JSON file.")
    ap.add_argument("results", metavar="RESULTS.json")
    args = ap.parse_args(argv)
    try:
        text = summary(args.results)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"secea-fast bench summary: error: {args.results}: {exc!r}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
