"""A SecEA round as a Flower App on built-in data: the ServerApp and
ClientApp behind ``examples/flower_secea`` (deployment: ``flwr run``), the
simulation engine (:func:`run_simulation`) and the tests.

Every node builds the same public workload from the run config and keeps
its own part, chosen by its node config: ``party-id`` in deployment
(``flower-supernode --node-config "party-id=0"``), ``partition-id`` in the
simulation engine.  Nodes write their global embeddings to
``<out-dir>/client-<party>.npz`` and the server its JSON summary to
``<out-dir>/summary.json`` when ``out-dir`` is set: the demo's way to show
results; a real ClientApp keeps them in memory for its training.

Run config (defaults in ``DEFAULTS``): ``workload`` (a name of
``secea_fast.protocols.workloads.SHAPES`` or ``synthetic``), ``entities``
(M of ``synthetic``), ``num-clients``, ``d``, ``T``, ``K`` (0: eq. 7),
``precision``, ``seed``, ``block-size`` (0: default), ``blocks-per-stage``
(0: default), ``stage-timeout`` (seconds), ``out-dir``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from flwr.app import Context
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from ..protocols import workloads
from . import secea as fsecea
from . import secemb as fsecemb

__all__ = ["DEFAULTS", "demo_local", "party_of", "make_apps", "save_embeddings", "load_embeddings",
           "SECEMB_DEFAULTS", "secemb_data", "secemb_role", "make_secemb_apps"]

DEFAULTS = {"workload": "synthetic", "entities": 2000, "num-clients": 5, "d": 64, "T": 1, "K": 0,
            "precision": 8, "seed": 0, "block-size": 0, "blocks-per-stage": 0,
            "stage-timeout": 300.0, "out-dir": ""}


def _cfg(context: Context | None, overrides: dict, defaults=DEFAULTS) -> dict:
    cfg = dict(defaults)
    cfg.update(overrides)
    if context is not None:
        cfg.update(dict(context.run_config))
    return cfg


def demo_local(cfg: dict) -> list:
    """Every client's entity -> embedding mapping for the run config ``cfg``
    (the same on every node: the demo's data is public and seeded)."""
    N, d, seed = int(cfg["num-clients"]), int(cfg["d"]), int(cfg["seed"])
    if cfg["workload"] != "synthetic":
        return workloads.workload(str(cfg["workload"]), N=N, d=d, seed=seed)
    M = int(cfg["entities"])
    if M < 1:
        raise ValueError(f"entities must be >= 1, got {M}")
    rng = np.random.default_rng(seed)
    held = rng.random((N, M)) < 0.4                 # each client holds ~40% of the entities
    held[rng.integers(0, N, M), np.arange(M)] = True   # every entity has a holder
    return [{f"e{m}": rng.uniform(-1.0, 1.0, d) for m in np.flatnonzero(held[n])} for n in range(N)]


def party_of(context: Context) -> int:
    """The node's data partition: ``party-id`` of its node config, or the
    simulation engine's ``partition-id``."""
    nc = context.node_config
    for key in ("party-id", "partition-id"):
        if key in nc:
            return int(nc[key])
    raise ValueError("the node config has neither party-id nor partition-id: start the SuperNode "
                     "with --node-config \"party-id=<n>\"")


def save_embeddings(path, embeddings: dict) -> None:
    """A client's result as ``ids`` (str) and ``rows`` (float64) in an npz."""
    ids = list(embeddings)
    rows = np.array([embeddings[k] for k in ids], dtype=np.float64)
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, ids=np.array([str(k) for k in ids]), rows=rows)
    os.replace(tmp, path)


def load_embeddings(path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {str(k): z["rows"][i] for i, k in enumerate(z["ids"])}


def make_apps(**overrides):
    """(ServerApp, ClientApp) of the demo; ``overrides`` replace defaults
    of the run config (the run config itself wins, as ``flwr run
    --run-config`` sets it)."""
    server_app = ServerApp()
    client_app = ClientApp()

    @server_app.main()
    def _main(grid: Grid, context: Context) -> None:
        cfg = _cfg(context, overrides)
        N = int(cfg["num-clients"])
        res = fsecea.run_secea(grid, d=int(cfg["d"]), T=int(cfg["T"]), K=int(cfg["K"]) or None,
                               precision=int(cfg["precision"]),
                               block_size=int(cfg["block-size"]) or None,
                               blocks_per_stage=int(cfg["blocks-per-stage"]) or None,
                               min_nodes=N, timeout=float(cfg["stage-timeout"]))
        if cfg["out-dir"]:
            out = Path(str(cfg["out-dir"]))
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.json").write_text(json.dumps(res.summary(), indent=1))

    @client_app.query("secea")
    def _stage(msg, context: Context):
        cfg = _cfg(context, overrides)
        party = party_of(context)
        local = demo_local(cfg)[party]

        def keep(ctx, embeddings):
            if cfg["out-dir"]:
                out = Path(str(cfg["out-dir"]))
                out.mkdir(parents=True, exist_ok=True)
                save_embeddings(out / f"client-{party}.npz", embeddings)
        return fsecea.handle_message(msg, context, local, on_result=keep)

    return server_app, client_app


# ----------------------------------------------------------------- SecEmb
SECEMB_DEFAULTS = {"users": 5, "items": 3883, "d": 64, "m-prime": 300, "frac-bits": 16, "seed": 0,
                   "stage-timeout": 300.0, "out-dir": ""}


def secemb_data(cfg: dict):
    """(Q, items, grads) of the SecEmb demo: the public item table, and per
    user its rated items (MovieLens-like counts, 20 to ~2 m') and gradient
    rows, seeded by the run config (the same on every node)."""
    U, m, d = int(cfg["users"]), int(cfg["items"]), int(cfg["d"])
    rng = np.random.default_rng(int(cfg["seed"]))
    Q = rng.normal(scale=0.1, size=(m, d))
    items, grads = [], []
    for _ in range(U):
        k = int(min(m, max(1, min(20, m), rng.zipf(1.5) * 20)))
        it = np.sort(rng.choice(m, size=k, replace=False))
        items.append(it.tolist())
        grads.append(rng.normal(scale=0.01, size=(k, d)))
    return Q, items, grads


def secemb_role(context: Context):
    """("server1", None) or ("user", data index) of a node: ``role`` and
    ``party-id`` of its node config in deployment; in the simulation engine
    partition 0 is server 1 and partition u + 1 is user u."""
    nc = context.node_config
    if "role" in nc:
        role = str(nc["role"])
        return (role, None) if role == "server1" else (role, int(nc["party-id"]))
    p = int(nc["partition-id"])
    return ("server1", None) if p == 0 else ("user", p - 1)


def make_secemb_apps(**overrides):
    """(ServerApp, ClientApp) of a SecEmb round on the demo data: server 0 is
    the ServerApp; server 1 and the users are SuperNodes (:func:`secemb_role`)."""
    server_app = ServerApp()
    client_app = ClientApp()

    @server_app.main()
    def _main(grid: Grid, context: Context) -> None:
        cfg = _cfg(context, overrides, SECEMB_DEFAULTS)
        Q, _, _ = secemb_data(cfg)
        res = fsecemb.run_secemb(grid, Q, m_prime=int(cfg["m-prime"]), frac_bits=int(cfg["frac-bits"]),
                                 min_nodes=int(cfg["users"]) + 1, timeout=float(cfg["stage-timeout"]))
        if cfg["out-dir"]:
            out = Path(str(cfg["out-dir"]))
            out.mkdir(parents=True, exist_ok=True)
            np.save(out / "aggregate.npy", res.aggregate)
            (out / "summary.json").write_text(json.dumps(res.summary(), indent=1))

    @client_app.query("secemb")
    def _stage(msg, context: Context):
        cfg = _cfg(context, overrides, SECEMB_DEFAULTS)
        role, u = secemb_role(context)
        if role == "server1":
            return fsecemb.handle_message(msg, context, "server1")
        _, items, grads = secemb_data(cfg)

        def keep(ctx, rows):
            if cfg["out-dir"]:
                out = Path(str(cfg["out-dir"]))
                out.mkdir(parents=True, exist_ok=True)
                np.save(out / f"rows-{u}.npy", rows)
        return fsecemb.handle_message(msg, context, "user", items[u], lambda rows: grads[u],
                                      on_retrieved=keep)

    return server_app, client_app
