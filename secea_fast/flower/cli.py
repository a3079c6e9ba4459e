"""``secea-fast flower``: one protocol round on Flower, verified.

    secea-fast flower sim   [--protocol secea|secemb] [--set KEY=VALUE ...] [--json FILE]
    secea-fast flower local [--protocol secea|secemb] [--set KEY=VALUE ...] [--json FILE]
    secea-fast flower train [--set KEY=VALUE ...] [--json FILE] [--plot PNG]
    secea-fast flower roster --out DIR (--party NAME=ROLE ... | --clients N | --users U)
    secea-fast flower certs --out DIR --host NAME[,NAME...] ...      (secea_fast.flower.operator)
    secea-fast flower report OUT_DIR                                 (secea_fast.flower.operator)
    secea-fast flower netns [--profile lan|wan|none ...] ...          (secea_fast.flower.netns, root)

``sim`` runs the round in Flower's simulation engine (ClientApps on Ray
actors in this machine); ``local`` starts a real SuperLink and one real
SuperNode per party on this host (TLS with certificates made for the run)
and runs the App of ``examples/flower_secea`` with ``flwr run``.  Either
way every party is a Flower node, the results are checked bit for bit
against the in-process computation, and a per-stage table (wall seconds,
the slowest node's and the server's compute, MB down and up) is printed
with a PASS/FAIL line.  ``--set`` overrides the demo's run config
(``secea_fast.flower.demo.DEFAULTS`` / ``SECEMB_DEFAULTS``).

``train`` runs the federated recommendation example
(:mod:`secea_fast.flower.train`) in the simulation engine three times --
cross-silo with plaintext FedAvg of the embeddings, cross-silo with SecEA,
cross-device with SecEmb -- prints HR@10 / NDCG@10 per round, checks that
SecEA's run equals its in-process twin and agrees with FedAvg to the
fixed-point error and that SecEmb's equals its plaintext twin, and can
write the curves as a PNG (``--plot``, needs matplotlib).

``roster`` writes a federation's roster and one identity per party in
``--out`` (:func:`secea_fast.protocols.common.roster.write_federation`):
``roster.json`` goes to every node, ``<name>.identity.json`` to that
party's node only (``--node-config "roster-file=... identity-file=..."``).
``--party NAME=ROLE`` (repeatable) names the parties; ``--clients N`` adds
SecEA's ``client-0`` .. ``client-<N-1>`` (role ``client``), ``--users U``
adds SecEmb's ``server1`` (role ``server1``) and ``user-0`` ..
``user-<U-1>`` (role ``user``).  It prints the files, one per line.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._lifetime import remove_on_exit
from .._progress import Stages
from . import demo

__all__ = ["main", "stage_table", "roster_parties", "validate", "UsageError", "failure_lines"]


def _parse_set(items, defaults):
    out = {}
    for it in items or []:
        if "=" not in it:
            raise ValueError(f"--set takes KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        if k not in defaults:
            raise ValueError(f"--set: unknown key {k!r}; the keys are {sorted(defaults)}")
        typ = type(defaults[k])
        try:
            out[k] = typ(v)
        except ValueError:
            raise ValueError(f"--set {k}: expected {typ.__name__}, got {v!r}") from None
    return out


class UsageError(ValueError):
    """A user's mistake in the command's options or files: one line, exit 2."""


def _check(ok: bool, key: str, value: Any, why: str) -> None:
    if not ok:
        raise UsageError(f"--set {key}={value}: {why}")


def _check_file(cfg: dict, key: str, directory: bool = False) -> None:
    path = str(cfg.get(key) or "")
    if not path:
        return
    p = Path(path)
    if directory:
        _check(p.is_dir(), key, path, "no such directory")
        _check((p / "roster.json").is_file(), key, path, "no roster.json in it (secea-fast flower roster --out DIR)")
    else:
        _check(p.exists(), key, path, "no such file")
        _check(p.is_file(), key, path, "not a regular file")
        _check(os.access(p, os.R_OK), key, path, "not readable")


def validate(mode: str, protocol: str, cfg: dict[str, Any]) -> None:
    """Check a command's run config (defaults and ``--set`` overrides)
    before anything starts: :class:`UsageError` (a ValueError) naming the
    ``--set`` key and saying what it must be.  ``mode``: sim, local or
    train; ``protocol``: secea or secemb (sim / local)."""
    from ..workloads import SHAPES

    def at_least(key, low, why=""):
        _check(cfg[key] >= low, key, cfg[key], f"must be >= {low}{why}")

    for key in ("roster-file",):
        _check_file(cfg, key)
    _check_file(cfg, "roster-dir", directory=True)
    if "stage-timeout" in cfg:
        _check(cfg["stage-timeout"] > 0, "stage-timeout", cfg["stage-timeout"], "must be > 0 seconds")
    if mode == "train":
        _check(cfg["setting"] in ("cross-silo", "cross-device"), "setting", cfg["setting"],
               "must be cross-silo or cross-device")
        _check(cfg["aggregation"] in ("secea", "plain"), "aggregation", cfg["aggregation"], "must be secea or plain")
        for key in ("rounds", "d", "users", "items", "ratings", "m-prime"):
            at_least(key, 1)
        at_least("epochs", 0)
        at_least("silos", 3, " (SecEA with T = 1 needs 2T+1 = 3 silos)")
        for key in ("lr", "device-lr"):
            _check(cfg[key] > 0, key, cfg[key], "must be > 0")
        _check(1 <= cfg["precision"] <= 18, "precision", cfg["precision"], "must be in [1, 18] decimal digits")
        _check_file(cfg, "ratings-file")
        if cfg["ratings-file"]:
            from . import train
            try:                              # what every node reads first: read it here once
                train.dataset(cfg)
            except (ValueError, TypeError, OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"--set ratings-file={cfg['ratings-file']}: {str(exc)[:300]}") from None
        return
    if protocol == "secea":
        _check(cfg["workload"] == "synthetic" or cfg["workload"] in SHAPES, "workload", cfg["workload"],
               f"must be synthetic or one of {sorted(SHAPES)}")
        at_least("T", 1)
        at_least("num-clients", 2 * cfg["T"] + 1,
                 f" (SecEA tolerates T = {cfg['T']} colluding clients with 2T+1 = {2 * cfg['T'] + 1} or more)")
        for key in ("entities", "d"):
            at_least(key, 1)
        for key in ("K", "block-size", "blocks-per-stage", "stage-bytes", "count-bound"):
            at_least(key, 0, " (0: the default)")
        _check(1 <= cfg["precision"] <= 18, "precision", cfg["precision"], "must be in [1, 18] decimal digits")
    else:
        for key in ("users", "items", "d", "min-users", "server0-workers"):
            at_least(key, 1)
        _check(cfg["min-users"] <= cfg["users"], "min-users", cfg["min-users"],
               f"must be at most users ({cfg['users']})")
        _check(1 <= cfg["m-prime"] <= cfg["items"], "m-prime", cfg["m-prime"],
               f"must be in [1, items] = [1, {cfg['items']}]")
        _check(1 <= cfg["frac-bits"] <= 40, "frac-bits", cfg["frac-bits"], "must be in [1, 40]")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXC = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Failed|Exit|Interrupt)\w*(\([\w.]+\))?)(: .*)?$")


def failure_lines(sources: Mapping[str, str]) -> list[str]:
    """One line per source (the ServerApp's output, each node's log) that
    shows an exception: its name and the last exception it printed."""
    out = []
    for name, text in sources.items():
        last = None
        lines = _ANSI.sub("", text).splitlines()
        for k, line in enumerate(lines):
            m = _EXC.match(line.strip())
            if m and any("Traceback" in x for x in lines[max(0, k - 400):k]):
                last = line.strip()
        if last:
            out.append(f"  {name}: {last[:300]}")
    return out


def _report_failure(mode: str, exc: BaseException, sources: Mapping[str, str], out_dir: Path | None) -> str:
    """Print the one-line-per-node summary of a failed run and write the
    whole detail to a log file (in ``out_dir`` if the user keeps it, else a
    file of its own in the temporary directory); the log's path."""
    detail = [f"{type(exc).__name__}: {exc}"] + [f"\n===== {k} =====\n{v}" for k, v in sources.items()]
    if out_dir is not None:
        log_path = out_dir / "errors.log"
    else:
        fd, name = tempfile.mkstemp(prefix="secea-flower-errors-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    log_path.write_text("\n".join(detail))
    lines = failure_lines(sources) or [f"  {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}"]
    print(f"FAIL: the {mode} run failed:", file=sys.stderr)
    for line in lines:
        print(line, file=sys.stderr)
    print(f"  full detail: {log_path}", file=sys.stderr)
    return str(log_path)


class _Follow:
    """Reports a run's stages to ``stages`` as it goes: the command's own
    steps (``step``), the lines of ``flwr run`` that mark a step, and the
    nodes' progress files in ``out_dir`` (one line per protocol stage a
    node received, :func:`secea_fast.flower.demo.secea_client_stage`) or
    the training's ``history.json`` rounds, polled twice a second."""

    def __init__(self, stages: Stages, out_dir: Path, rounds: int = 0) -> None:
        import threading
        self.stages, self.out, self.rounds = stages, out_dir, rounds
        self.prefix = ""
        self.history = ""              # the training run's directory under out_dir
        self._seen = 0                 # lines of the longest progress file already reported
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def line(self, text: str) -> None:
        """One output line of the run (or a note of the command's)."""
        if text.startswith(("federation up", "simulation SuperLink up")):
            self.stages.stage(text)
        elif text.startswith("the simulation's Ray cluster exited"):
            self.stages.stage("Ray's cluster exited while starting: the simulation starts again")
        elif "Successfully started run" in text:
            self.stages.stage(f"{self.prefix}run submitted")

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self._look()
            except (OSError, ValueError):
                pass

    def _look(self) -> None:
        if self.rounds:
            hist = self.out / self.history / "history.json" if self.history else None
            if hist is not None and hist.exists():
                n = len(json.loads(hist.read_text()).get("rounds", []))
                if n:
                    self.stages.stage(f"{self.prefix}round {n}/{self.rounds} done")
            return
        best: list[str] = []
        for f in self.out.glob("progress-*.log"):
            lines = f.read_text().splitlines()
            if len(lines) > len(best):
                best = lines
        # every stage logged since the last poll, in order: a stage shorter
        # than the poll (the first one, on a quiet host) is still reported
        for line in best[min(self._seen, len(best)):]:
            words = line.split()           # "<stage> [<step>] attempt <k>"
            if words:
                name = " ".join(words[:2] if len(words) > 1 and words[1] != "attempt" else words[:1])
                self.stages.stage(f"{self.prefix}round: {name}")
        self._seen = max(self._seen, len(best))

    def close(self) -> None:
        """Stop following."""
        self._stop.set()
        self._thread.join(timeout=2)


def _run_logs(exc: BaseException, out: Path) -> dict[str, str]:
    """What a failed run left: the run's own output (in the exception) and
    every process log of the federation."""
    sources = {"ServerApp (flwr run)": str(exc)}
    for f in sorted([*(out / "federation" / "logs").glob("*.log"), *(out / "simulation" / "logs").glob("*.log")]):
        if f.stem != "run":           # the run's output is the exception's
            sources[f.stem] = f.read_text(errors="replace")
    return sources


def stage_table(summary: dict) -> str:
    """The stages of a round summary as text."""
    rows = [("stage", "wall-s", "server-s", "MB down", "MB up")]
    for s in summary["stages"]:
        rows.append((s["stage"], f"{s['wall']:.3f}",
                     f"{s['server_seconds']:.3f}", f"{s['bytes_down'] / 1e6:.2f}",
                     f"{s['bytes_up'] / 1e6:.2f}"))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
                     for r in rows)


def _nodes(protocol, cfg):
    return int(cfg["num-clients"]) if protocol == "secea" else int(cfg["users"]) + 1


def run_sim(protocol: str, over: dict, out_dir: Path, on_line: Callable[[str], None] | None = None) -> None:
    """One round of the demo in Flower's simulation runtime
    (:class:`~secea_fast.flower.localfed.LocalSimulation`: ``flwr run`` on a
    simulation SuperLink of the run's own), results in ``out_dir``; the
    run's output lines to ``on_line``."""
    from .localfed import LocalSimulation, example_app
    defaults = demo.DEFAULTS if protocol == "secea" else demo.SECEMB_DEFAULTS
    cfg = dict(defaults, **over, **{"out-dir": str(out_dir)})
    if protocol == "secemb":      # the roster and every party's identity, in the run's directory
        from ..protocols.common.roster import write_federation
        write_federation(out_dir / "roster", demo.secemb_parties(int(cfg["users"])))
        cfg["roster-dir"] = str(out_dir / "roster")
    if protocol == "secea" and not cfg.get("roster-file") and not cfg.get("roster-dir"):
        # every simulated party runs on this host: one federation for all of them
        cfg["roster-dir"] = demo.secea_roster_dir(int(cfg["num-clients"]), out_dir / "roster")
    with LocalSimulation(out_dir / "simulation") as sim:
        if on_line is not None:
            on_line("simulation SuperLink up")
        sim.run(example_app(), _nodes(protocol, cfg), run_config=dict(cfg, protocol=protocol), on_line=on_line)


def run_local(protocol: str, over: dict, out_dir: Path, on_line: Callable[[str], None] | None = None) -> None:
    """One round of the example App on a local deployment (real SuperLink and
    SuperNodes, TLS), results in ``out_dir``; the run's output lines to
    ``on_line``."""
    from .localfed import LocalFederation, example_app
    defaults = demo.DEFAULTS if protocol == "secea" else demo.SECEMB_DEFAULTS
    cfg = dict(defaults, **over, **{"out-dir": str(out_dir)})
    n = _nodes(protocol, cfg)
    node_configs: list[dict[str, Any]]
    roster = None
    if protocol == "secea":
        node_configs = [{"party-id": i} for i in range(n)]
        roster = [(demo.secea_party_name(i), "client") for i in range(n)]
    else:
        node_configs = [{} for _ in range(n)]
        roster = demo.secemb_parties(n - 1)
    run_config = dict(cfg, protocol=protocol)
    # startup: minutes, not seconds, on a loaded host (registration took > 60 s at load 20 on 2 cores)
    with LocalFederation(n, node_configs=node_configs, workdir=out_dir / "federation", roster=roster,
                         startup_timeout=300.0) as fed:
        if fed.roster_file:
            run_config["roster-file"] = fed.roster_file
        if on_line is not None:
            on_line(f"federation up: SuperLink and {n} SuperNodes")
        fed.run(example_app(), run_config=run_config, on_line=on_line)


def run_training(over: dict, out_dir: Path, on_stage: Callable[[str], None] | None = None) -> dict:
    """The three runs of ``secea-fast flower train`` (one simulation
    SuperLink, three ``flwr run``) and their checks; ``on_stage(name)``
    before each run."""
    from ..protocols import secea
    from ..studies import recsys
    from . import train
    from .localfed import LocalSimulation, train_app
    cfg = dict(train.TRAIN_DEFAULTS, **over)
    runs = {}
    with LocalSimulation(out_dir / "simulation") as sim:
        for name, setting, agg, nodes in (("FedAvg (plaintext)", "cross-silo", "plain", int(cfg["silos"])),
                                          ("SecEA", "cross-silo", "secea", int(cfg["silos"])),
                                          ("SecEmb", "cross-device", "secemb", None)):
            if on_stage is not None:
                on_stage(name)
            out = out_dir / setting / agg
            rc = dict(cfg, setting=setting, aggregation=agg, **{"out-dir": str(out)})
            if agg == "secea" and not rc.get("roster-file") and not rc.get("roster-dir"):
                rc["roster-dir"] = demo.secea_roster_dir(int(cfg["silos"]), out / "roster")
            if nodes is None:
                nodes = train.dataset(rc).n_users + 1
                from ..protocols.common.roster import write_federation
                write_federation(out / "roster", demo.secemb_parties(nodes - 1))
                rc["roster-dir"] = str(out / "roster")
            t0 = time.perf_counter()
            sim.run(train_app(), nodes, run_config=rc, timeout=3600.0)
            hist = json.loads((out / "history.json").read_text())["rounds"]
            runs[name] = {"rounds": hist, "seconds": time.perf_counter() - t0}
    # the in-process twins of the same seeds
    rounds, d = int(cfg["rounds"]), int(cfg["d"])
    twin_ea = recsys.run_cross_silo(train.silos_of(cfg), rounds=rounds, d=d, epochs=int(cfg["epochs"]),
                                    lr=float(cfg["lr"]), seed=int(cfg["seed"]),
                                    aggregate=lambda l: secea.aggregate(l, precision=int(cfg["precision"])))
    twin_em = recsys.run_cross_device(train.dataset(cfg), rounds=rounds, d=d, m_prime=int(cfg["m-prime"]),
                                      lr=float(cfg["device-lr"]), seed=int(cfg["seed"]), secure=False)
    ea, avg, em = runs["SecEA"]["rounds"], runs["FedAvg (plaintext)"]["rounds"], runs["SecEmb"]["rounds"]
    checks = {
        "SecEA on Flower = in-process SecEA": all(a["hr"] == b["hr"] and abs(a["ndcg"] - b["ndcg"]) < 1e-12
                                                  for a, b in zip(ea, twin_ea)),
        "SecEA vs plaintext FedAvg, largest |HR| / |NDCG| difference":
            max(max(abs(a["hr"] - b["hr"]), abs(a["ndcg"] - b["ndcg"])) for a, b in zip(ea, avg)),
        "SecEmb on Flower = plaintext twin": all(a["hr"] == b["hr"] and abs(a["ndcg"] - b["ndcg"]) < 1e-12
                                                 for a, b in zip(em, twin_em)),
    }
    return {"config": cfg, "runs": runs, "checks": checks,
            "twins": {"SecEA in process": twin_ea, "SecEmb plaintext twin": twin_em}}


def training_table(res: dict) -> str:
    names = list(res["runs"])
    rows = [["round"] + [f"{n} HR@10" for n in names] + [f"{n} NDCG@10" for n in names]]
    for k in range(len(res["runs"][names[0]]["rounds"])):
        rows.append([str(k + 1)] + [f"{res['runs'][n]['rounds'][k]['hr']:.4f}" for n in names]
                    + [f"{res['runs'][n]['rounds'][k]['ndcg']:.4f}" for n in names])
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w[i]) for i, c in enumerate(r)) for r in rows)


def training_plot(res: dict, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    styles = {"FedAvg (plaintext)": ("k", "-", "o"), "SecEA": ("tab:blue", "--", "x"),
              "SecEmb": ("tab:orange", "-", "s")}
    for name, run in res["runs"].items():
        xs = [r["round"] for r in run["rounds"]]
        c, ls, mk = styles.get(name, ("gray", "-", "."))
        for ax, key in zip(axes, ("hr", "ndcg")):
            ax.plot(xs, [r[key] for r in run["rounds"]], color=c, linestyle=ls, marker=mk, label=name)
    twin = res["twins"]["SecEmb plaintext twin"]
    for ax, key in zip(axes, ("hr", "ndcg")):
        ax.plot([r["round"] for r in twin], [r[key] for r in twin], color="k", linestyle=":",
                label="SecEmb's plaintext twin")
    cfg = res["config"]
    for ax, label in zip(axes, ("HR@10", "NDCG@10")):
        ax.set_xlabel("round")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Federated MF on Flower (simulation engine): {cfg['users']} users, {cfg['items']} items; "
                 f"cross-silo ({cfg['silos']} silos) and cross-device", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """``secea-fast flower``: parse ``argv`` and run the chosen command; the exit status."""
    # ---- operator tools: their own argument parsers (secea_fast.flower.operator, .netns)
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in ("certs", "report"):
        from . import operator
        return (operator.certs_main if args_list[0] == "certs" else operator.report_main)(args_list[1:])
    if args_list and args_list[0] == "netns":
        from . import netns
        return netns.main(args_list[1:])
    # ---- end of operator tools
    p = argparse.ArgumentParser(prog="secea-fast flower", description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("sim", "local", "train", "roster", "certs", "report", "netns"),
                   help="sim: Flower's simulation engine; local: a real SuperLink and SuperNodes here; "
                        "train: the federated recommendation example (simulation engine); "
                        "roster: write a federation's roster and identity files to --out; "
                        "certs: a CA and SuperLink certificates for given host names; "
                        "report: PASS/FAIL and the stage table of an out-dir's summary; "
                        "netns: the federation across network namespaces with shaped links (root); "
                        "certs, report and netns have their own options (secea-fast flower certs --help)")
    p.add_argument("--party", action="append", metavar="NAME=ROLE", help="roster: one party (repeatable)")
    p.add_argument("--clients", type=int, metavar="N", help="roster: SecEA clients client-0 .. client-<N-1>")
    p.add_argument("--users", type=int, metavar="U", help="roster: SecEmb server1 and users user-0 .. user-<U-1>")
    p.add_argument("--plot", metavar="PNG", help="train: write HR@10 / NDCG@10 per round as a PNG")
    p.add_argument("--protocol", choices=("secea", "secemb"), default="secea")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a run-config value of the demo (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the round's summary (stages, times, bytes) as JSON")
    p.add_argument("--out", metavar="DIR", help="keep the nodes' results and logs here (default: a temporary dir)")
    p.add_argument("--quiet", action="store_true",
                   help="print only the verdict line (no stage progress, no table)")
    args = p.parse_args(argv)
    if args.mode == "roster":
        return _roster_main(p, args)
    if args.mode == "train":
        from .train import TRAIN_DEFAULTS
        defaults = TRAIN_DEFAULTS
    else:
        defaults = demo.DEFAULTS if args.protocol == "secea" else demo.SECEMB_DEFAULTS
    try:
        over = _parse_set(args.set, defaults)
        validate(args.mode, args.protocol, dict(defaults, **over))
    except ValueError as exc:         # one line, before anything starts
        print(f"secea-fast flower {args.mode}: error: {exc}", file=sys.stderr)
        return 2
    if args.mode == "train":
        return _train_main(args, over)
    tmp = None
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="secea-flower-")
        out = Path(tmp.name)
        remove_on_exit(out)             # also if this process is killed
    stages = Stages(f"flower {args.mode}", enabled=not args.quiet)
    follow = None
    try:
        t0 = time.perf_counter()
        stages.stage("start the simulation runtime" if args.mode == "sim" else
                     f"start a SuperLink and {_nodes(args.protocol, dict(defaults, **over))} SuperNodes")
        follow = _Follow(stages, out)
        try:
            (run_sim if args.mode == "sim" else run_local)(args.protocol, over, out, on_line=follow.line)
            if not (out / "summary.json").exists():
                # flwr run ends with status 0 once the SuperLink closes the run's log stream, also
                # when the run was marked failed without an error line reaching the stream
                raise RuntimeError("flwr run ended, but the ServerApp wrote no summary: the run did not "
                                   "complete (the SuperLink's and Ray's logs are in the detail)")
        except RuntimeError as exc:
            follow.close()
            stages.close()
            _report_failure(args.mode, exc, _run_logs(exc, out), out if args.out else None)
            return 1
        follow.close()
        wall = time.perf_counter() - t0
        stages.stage("verify against the in-process computation")
        verify = demo.verify_secea if args.protocol == "secea" else demo.verify_secemb
        ok, why = verify(out, over)
        stages.close()
        summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
        if summary:
            if not args.quiet:
                print(stage_table(summary))
            summary.update(mode=args.mode, verified=ok, verification=why, command_seconds=wall)
            if args.json:
                Path(args.json).write_text(json.dumps(summary, indent=1))
        print(f"{'PASS' if ok else 'FAIL'}: {args.protocol} on Flower ({args.mode}): {why}; "
              f"round {summary['wall_seconds'] if summary else float('nan'):.2f} s, command {wall:.1f} s")
        return 0 if ok else 1
    finally:
        if follow is not None:
            follow.close()
        stages.close()
        if tmp is not None:
            tmp.cleanup()


def roster_parties(party: Sequence[str] = (), clients: int | None = None,
                   users: int | None = None) -> list[tuple[str, str]]:
    """The (name, role) list ``secea-fast flower roster`` writes: the
    ``NAME=ROLE`` items, then ``clients`` SecEA clients, then SecEmb's
    server 1 and ``users`` users.  ValueError naming the bad option."""
    out = []
    for item in party:
        name, eq, role = str(item).partition("=")
        if not eq or not name.strip() or not role.strip():
            raise ValueError(f"--party: expected NAME=ROLE, got {item!r}")
        out.append((name.strip(), role.strip()))
    for opt, n in (("--clients", clients), ("--users", users)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"{opt} must be an int >= 1, got {n!r}")
    out += [(f"client-{i}", "client") for i in range(clients or 0)]
    if users:
        out += [("server1", "server1")] + [(f"user-{u}", "user") for u in range(users)]
    if not out:
        raise ValueError("name the parties: --party NAME=ROLE, --clients N or --users U")
    names = [n for n, _ in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"--party: party {dup[0]!r} is named twice")
    return out


def _roster_main(p, args) -> int:
    from ..protocols.common.roster import write_federation
    if not args.out:
        p.error("roster: --out DIR is required (where roster.json and the identity files go)")
    try:
        files = write_federation(args.out, roster_parties(args.party or (), args.clients, args.users))
    except ValueError as exc:
        p.error(f"roster: {exc}")
    for name, path in files.items():
        print(f"{name}\t{path}")
    return 0


def _train_main(args, over) -> int:
    from . import train
    with tempfile.TemporaryDirectory(prefix="secea-train-") as tmp:
        remove_on_exit(tmp)
        out = Path(args.out) if args.out else Path(tmp)
        t0 = time.perf_counter()
        stages = Stages("flower train", enabled=not args.quiet)
        stages.stage("start the simulation runtime")
        follow = _Follow(stages, out, rounds=int(dict(train.TRAIN_DEFAULTS, **over)["rounds"]))

        def on_stage(name: str) -> None:
            follow.prefix = f"{name}: "
            follow.history = {"FedAvg (plaintext)": "cross-silo/plain", "SecEA": "cross-silo/secea"}.get(
                name, "cross-device/secemb")
            stages.stage(f"{name}: start")
        try:
            res = run_training(over, out, on_stage=on_stage)
        except RuntimeError as exc:
            follow.close()
            stages.close()
            _report_failure("train", exc, _run_logs(exc, out), out if args.out else None)
            return 1
        finally:
            follow.close()
            stages.close()
        res["command_seconds"] = time.perf_counter() - t0
    if not args.quiet:
        print(training_table(res))
        for k, v in res["checks"].items():
            print(f"{k}: {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    if args.plot:
        training_plot(res, args.plot)
    tol = 10.0 ** -(int(res["config"]["precision"]) - 3)
    ok = (res["checks"]["SecEA on Flower = in-process SecEA"] and res["checks"]["SecEmb on Flower = plaintext twin"]
          and res["checks"]["SecEA vs plaintext FedAvg, largest |HR| / |NDCG| difference"] <= tol)
    print(f"{'PASS' if ok else 'FAIL'}: federated training on Flower, {res['config']['rounds']} rounds, "
          f"{res['command_seconds']:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
