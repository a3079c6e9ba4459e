"""``secea-fast flower``: one protocol round on Flower, verified.

    secea-fast flower sim   [--protocol secea|secemb] [--set KEY=VALUE ...] [--json FILE]
    secea-fast flower local [--protocol secea|secemb] [--set KEY=VALUE ...] [--json FILE]

``sim`` runs the round in Flower's simulation engine (ClientApps on Ray
actors in this machine); ``local`` starts a real SuperLink and one real
SuperNode per party on this host (TLS with certificates made for the run)
and runs the App of ``examples/flower_secea`` with ``flwr run``.  Either
way every party is a Flower node, the results are checked bit for bit
against the in-process computation, and a per-stage table (wall seconds,
the slowest node's and the server's compute, MB down and up) is printed
with a PASS/FAIL line.  ``--set`` overrides the demo's run config
(``secea_fast.flower.demo.DEFAULTS`` / ``SECEMB_DEFAULTS``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from . import demo

__all__ = ["main", "stage_table"]


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
    rows = [("stage", "wall-s", "node-s", "server-s", "MB down", "MB up")]
    for s in summary["stages"]:
        rows.append((s["stage"], f"{s['wall']:.3f}", f"{s['client_seconds']:.3f}",
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
    server_app, client_app = demo.make_example_apps(**cfg, protocol=protocol)
    run_simulation(server_app, client_app, num_supernodes=_nodes(protocol, cfg),
                   backend_config={"client_resources": {"num_cpus": 1}})


def run_local(protocol: str, over: dict, out_dir: Path) -> None:
    """One round of the example App on a local deployment (real SuperLink and
    SuperNodes, TLS), results in ``out_dir``."""
    from .deployment import LocalFederation, example_app
    defaults = demo.DEFAULTS if protocol == "secea" else demo.SECEMB_DEFAULTS
    cfg = dict(defaults, **over, **{"out-dir": str(out_dir)})
    n = _nodes(protocol, cfg)
    if protocol == "secea":
        node_configs = [{"party-id": i} for i in range(n)]
    else:
        node_configs = [{"role": "server1"}] + [{"role": "user", "party-id": u} for u in range(n - 1)]
    run_config = dict(cfg, protocol=protocol)
    with LocalFederation(n, node_configs=node_configs, workdir=out_dir / "federation") as fed:
        fed.run(example_app(), run_config=run_config)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="secea-fast flower", description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("sim", "local"),
                   help="sim: Flower's simulation engine; local: a real SuperLink and SuperNodes here")
    p.add_argument("--protocol", choices=("secea", "secemb"), default="secea")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a run-config value of the demo (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the round's summary (stages, times, bytes) as JSON")
    p.add_argument("--out", metavar="DIR", help="keep the nodes' results and logs here (default: a temporary dir)")
    args = p.parse_args(argv)
    defaults = demo.DEFAULTS if args.protocol == "secea" else demo.SECEMB_DEFAULTS
    try:
        over = _parse_set(args.set, defaults)
    except ValueError as exc:
        p.error(str(exc))
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
