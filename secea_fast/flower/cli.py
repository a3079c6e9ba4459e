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
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import demo

__all__ = ["main", "stage_table", "roster_parties"]


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


def run_sim(protocol: str, over: dict, out_dir: Path) -> None:
    """One round of the demo in the simulation engine, results in ``out_dir``."""
    from flwr.simulation import run_simulation
    defaults = demo.DEFAULTS if protocol == "secea" else demo.SECEMB_DEFAULTS
    cfg = dict(defaults, **over, **{"out-dir": str(out_dir)})
    if protocol == "secemb":      # the roster and every party's identity, in the run's directory
        from ..protocols.common.roster import write_federation
        write_federation(out_dir / "roster", demo.secemb_parties(int(cfg["users"])))
        cfg["roster-dir"] = str(out_dir / "roster")
    if protocol == "secea" and not cfg.get("roster-file") and not cfg.get("roster-dir"):
        # every simulated party runs on this host: one federation for all of them
        cfg["roster-dir"] = demo.secea_roster_dir(int(cfg["num-clients"]), out_dir / "roster")
    server_app, client_app = demo.make_example_apps(**cfg, protocol=protocol)
    run_simulation(server_app, client_app, num_supernodes=_nodes(protocol, cfg),
                   backend_config={"client_resources": {"num_cpus": 1}})


def run_local(protocol: str, over: dict, out_dir: Path) -> None:
    """One round of the example App on a local deployment (real SuperLink and
    SuperNodes, TLS), results in ``out_dir``."""
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
    with LocalFederation(n, node_configs=node_configs, workdir=out_dir / "federation", roster=roster) as fed:
        if fed.roster_file:
            run_config["roster-file"] = fed.roster_file
        fed.run(example_app(), run_config=run_config)


def run_training(over: dict, out_dir: Path) -> dict:
    """The three runs of ``secea-fast flower train`` and their checks."""
    from flwr.simulation import run_simulation

    from ..protocols import secea
    from ..studies import recsys
    from . import train
    cfg = dict(train.TRAIN_DEFAULTS, **over)
    runs = {}
    for name, setting, agg, nodes in (("FedAvg (plaintext)", "cross-silo", "plain", int(cfg["silos"])),
                                      ("SecEA", "cross-silo", "secea", int(cfg["silos"])),
                                      ("SecEmb", "cross-device", "secemb", None)):
        out = out_dir / setting / agg
        rc = dict(cfg, setting=setting, aggregation=agg, **{"out-dir": str(out)})
        if agg == "secea" and not rc.get("roster-file") and not rc.get("roster-dir"):
            rc["roster-dir"] = demo.secea_roster_dir(int(cfg["silos"]), out / "roster")
        if nodes is None:
            nodes = train.dataset(rc).n_users + 1
            from ..protocols.common.roster import write_federation
            write_federation(out / "roster", demo.secemb_parties(nodes - 1))
            rc["roster-dir"] = str(out / "roster")
        server_app, client_app = train.make_train_apps(**rc)
        t0 = time.perf_counter()
        run_simulation(server_app, client_app, num_supernodes=nodes,
                       backend_config={"client_resources": {"num_cpus": 1}})
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
    p.add_argument("mode", choices=("sim", "local", "train", "roster"),
                   help="sim: Flower's simulation engine; local: a real SuperLink and SuperNodes here; "
                        "train: the federated recommendation example (simulation engine); "
                        "roster: write a federation's roster and identity files to --out")
    p.add_argument("--party", action="append", metavar="NAME=ROLE", help="roster: one party (repeatable)")
    p.add_argument("--clients", type=int, metavar="N", help="roster: SecEA clients client-0 .. client-<N-1>")
    p.add_argument("--users", type=int, metavar="U", help="roster: SecEmb server1 and users user-0 .. user-<U-1>")
    p.add_argument("--plot", metavar="PNG", help="train: write HR@10 / NDCG@10 per round as a PNG")
    p.add_argument("--protocol", choices=("secea", "secemb"), default="secea")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a run-config value of the demo (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the round's summary (stages, times, bytes) as JSON")
    p.add_argument("--out", metavar="DIR", help="keep the nodes' results and logs here (default: a temporary dir)")
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
    except ValueError as exc:
        p.error(str(exc))
    if args.mode == "train":
        return _train_main(args, over)
    tmp = None
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="secea-flower-")
        out = Path(tmp.name)
    try:
        t0 = time.perf_counter()
        (run_sim if args.mode == "sim" else run_local)(args.protocol, over, out)
        wall = time.perf_counter() - t0
        verify = demo.verify_secea if args.protocol == "secea" else demo.verify_secemb
        ok, why = verify(out, over)
        summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None
        if summary:
            print(stage_table(summary))
            summary.update(mode=args.mode, verified=ok, verification=why, command_seconds=wall)
            if args.json:
                Path(args.json).write_text(json.dumps(summary, indent=1))
        print(f"{'PASS' if ok else 'FAIL'}: {args.protocol} on Flower ({args.mode}): {why}; "
              f"round {summary['wall_seconds'] if summary else float('nan'):.2f} s, command {wall:.1f} s")
        return 0 if ok else 1
    finally:
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
    with tempfile.TemporaryDirectory(prefix="secea-train-") as tmp:
        t0 = time.perf_counter()
        res = run_training(over, Path(args.out) if args.out else Path(tmp))
        res["command_seconds"] = time.perf_counter() - t0
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
