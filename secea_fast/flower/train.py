"""Federated recommendation training on Flower, the protocols aggregating
every round: the example to copy (:mod:`secea_fast.studies.recsys` has the
model and data).

* ``cross-silo`` (SecEA's setting): each SuperNode is a silo holding the
  ratings of its items (:class:`~secea_fast.studies.recsys.Silos`).  A round
  is a ``train`` stage (local epochs on the silo's ratings), the aggregation
  of the user and item embeddings over the silos holding them -- by SecEA
  (``aggregation = "secea"``: :func:`secea_fast.flower.secea.run_secea`, the
  entity union computed once in round 1) or in the clear through the server
  (``"plain"``, FedAvg of the embeddings: the baseline) -- and an ``eval``
  stage (each silo's HR@10 / NDCG@10 on its test cases).
* ``cross-device`` (SecEmb's setting): server 1 and every user are
  SuperNodes, server 0 the ServerApp with the item table Q.  A round is one
  SecEmb round (:func:`secea_fast.flower.secemb.run_secemb`) in which each
  user retrieves the rows of its request, takes its local step and uploads
  its gradient rows; server 0 steps Q by their sum; then an ``eval`` stage
  sends Q (the servers' model) to the users, who report their test hit.

Each node keeps its model in ``context.state``; everything is seeded from
the run config, so a Flower run equals the in-process twin
(:func:`secea_fast.studies.recsys.run_cross_silo` / ``run_cross_device``):
SecEA's and the plaintext run's metrics agree to the fixed-point error, and
the SecEmb run equals the plaintext twin bit for bit.
"""
from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from ..protocols import baselines
from ..studies import recsys
from . import secea as fsecea
from .admission import NodeIdentity, node_identity
from .demo import secea_roster
from . import secemb as fsecemb
from .records import grid_exchange, log, pack, unpack, wait_nodes
from .state import load_state, save_state

__all__ = ["TRAIN_DEFAULTS", "make_train_apps", "dataset", "silos_of"]

TRAIN_DEFAULTS = {"setting": "cross-silo", "aggregation": "secea", "rounds": 5, "d": 16, "silos": 5,
                  "users": 300, "items": 400, "ratings": 15000, "ratings-file": "", "seed": 0,
                  "epochs": 2, "lr": 0.05, "device-lr": 0.1, "m-prime": 40, "precision": 8,
                  "stage-timeout": 300.0, "out-dir": "", "roster-file": "", "roster-dir": ""}
MESSAGE_TYPE = "query.mf"
_EMB = "secea_fast.train.emb"
_LOCAL = "secea_fast.train.local"


def _cfg(context, overrides):
    cfg = dict(TRAIN_DEFAULTS)
    cfg.update(overrides)
    if context is not None:
        cfg.update({k: v for k, v in dict(context.run_config).items() if k in TRAIN_DEFAULTS})
    return cfg


_CACHE: dict[tuple, Any] = {}      # per configuration key: Ratings, Silos or the device data


def dataset(cfg: Mapping[str, Any]) -> recsys.Ratings:
    """The ratings of the run: a MovieLens file every node can read
    (``ratings-file``) or the synthetic set of the given sizes."""
    key = (cfg["ratings-file"], cfg["users"], cfg["items"], cfg["ratings"], cfg["seed"])
    if key not in _CACHE:
        _CACHE[key] = (recsys.ratings_from_file(cfg["ratings-file"]) if cfg["ratings-file"] else
                       recsys.synthetic_ratings(int(cfg["users"]), int(cfg["items"]), int(cfg["ratings"]),
                                                seed=int(cfg["seed"])))
    return _CACHE[key]


def silos_of(cfg: Mapping[str, Any]) -> recsys.Silos:
    """The silos of the run's ratings (cached per configuration, as :func:`dataset`)."""
    key = ("silos", cfg["silos"], cfg["ratings-file"], cfg["users"], cfg["items"], cfg["ratings"], cfg["seed"])
    if key not in _CACHE:
        _CACHE[key] = recsys.Silos(dataset(cfg), int(cfg["silos"]), seed=int(cfg["seed"]))
    return _CACHE[key]


def _dump(emb: dict) -> bytes:
    """entity -> row as bytes (ids as UTF-8 lines, rows as .npy, no pickle)."""
    ids = "\n".join(emb).encode()
    buf = io.BytesIO()
    np.save(buf, np.array([emb[k] for k in emb], dtype=np.float64), allow_pickle=False)
    return len(ids).to_bytes(8, "little") + ids + buf.getvalue()


def _me(context: Context, cfg) -> NodeIdentity:
    """This silo's roster identity (it seals the node's saved state)."""
    return node_identity(context.node_config, cfg, f"client-{_party(context)}")


def _saved(context: Context, key: str, me: NodeIdentity) -> bytes:
    """The bytes an earlier stage saved under ``key``; RuntimeError if none was."""
    data = load_state(context, key, me)
    if data is None:
        raise RuntimeError(f"nothing saved under {key!r} on this node: the train stage must run first")
    return data


def _load(data: bytes) -> dict:
    n = int.from_bytes(data[:8], "little")
    ids = data[8:8 + n].decode().split("\n") if n else []
    rows = np.load(io.BytesIO(data[8 + n:]), allow_pickle=False)
    if rows.shape[0] != len(ids):
        raise ValueError("embedding record: ids and rows differ in number")
    return dict(zip(ids, rows))


def _party(context) -> int:
    nc = context.node_config
    return int(nc["party-id"] if "party-id" in nc else nc["partition-id"])


def _write(cfg, name, obj):
    if cfg["out-dir"]:
        out = Path(str(cfg["out-dir"]))
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(json.dumps(obj, indent=1))


# ----------------------------------------------------------------- cross-silo
def _silo_stage(msg, context: Context, overrides):
    """A silo's ``query.mf`` stages: train, plain (send rows / take the
    averages) and eval."""
    cfg = _cfg(context, overrides)
    silos, n = silos_of(cfg), _party(context)
    c, blobs = unpack(msg.content)
    stage = c["stage"]
    me = _me(context, cfg)
    state = load_state(context, _EMB, me)
    emb = _load(state) if state is not None else silos.init(int(cfg["d"]), int(cfg["seed"]))[n]
    t0 = time.perf_counter()
    reply, out = {"stage": stage}, []
    if stage == "train":
        rnd = int(c["round"])
        local = silos.train_silo(n, emb, epochs=int(cfg["epochs"]), lr=float(cfg["lr"]),
                                 seed=int(cfg["seed"]) * 1_000_003 + rnd * 101 + n)
        save_state(context, _LOCAL, _dump(local), me)
    elif stage == "plain-up":
        out = [_saved(context, _LOCAL, me)]
    elif stage == "plain-down":
        save_state(context, _EMB, blobs[0], me)
    elif stage == "eval":
        hits, nd, cases = silos.eval_silo(n, emb)
        reply.update(hits=float(hits), ndcg=float(nd), cases=int(cases))
    else:
        raise ValueError(f"unknown training stage {stage!r}")
    reply["seconds"] = time.perf_counter() - t0
    return Message(pack(reply, out), reply_to=msg)


def _silo_secea(msg, context: Context, overrides):
    """A silo's SecEA stages: the local embeddings in, the global ones kept."""
    cfg = _cfg(context, overrides)
    me = _me(context, cfg)
    local = _load(_saved(context, _LOCAL, me))
    return fsecea.handle_message(msg, context, local,
                                 on_result=lambda ctx, glob: save_state(ctx, _EMB, _dump(glob), me),
                                 default_name=f"client-{_party(context)}", run_config=cfg)


def _cross_silo_main(grid: Grid, context: Context, overrides):
    cfg = _cfg(context, overrides)
    N = int(cfg["silos"])
    nodes = wait_nodes(grid, N)
    stage = grid_exchange(grid, MESSAGE_TYPE, timeout=float(cfg["stage-timeout"]))
    history, union = [], None
    for rnd in range(1, int(cfg["rounds"]) + 1):
        t0 = time.perf_counter()
        r = stage({x: ({"stage": "train", "round": rnd}, []) for x in nodes})
        _fail(r, "train")
        t1 = time.perf_counter()
        if cfg["aggregation"] == "secea":
            res = fsecea.run_secea(grid, secea_roster(cfg), d=int(cfg["d"]), precision=int(cfg["precision"]),
                                   nodes=nodes,
                                   round_index=rnd, union=union, timeout=float(cfg["stage-timeout"]))
            union = res.union
            if res.failed_blocks or res.dropped:
                raise RuntimeError(f"round {rnd}: SecEA lost nodes or blocks: {res.summary()['dropped']}")
        elif cfg["aggregation"] == "plain":
            r = stage({x: ({"stage": "plain-up"}, []) for x in nodes})
            _fail(r, "plain-up")
            local = {x: _load(r.replies[x][1][0]) for x in nodes}
            glob = dict(zip(nodes, baselines.embavg([local[x] for x in nodes])))
            _fail(stage({x: ({"stage": "plain-down"}, [_dump(glob[x])]) for x in nodes}), "plain-down")
        else:
            raise ValueError(f"aggregation must be secea or plain, got {cfg['aggregation']!r}")
        t2 = time.perf_counter()
        r = stage({x: ({"stage": "eval"}, []) for x in nodes})
        _fail(r, "eval")
        cases = sum(c["cases"] for c, _ in r.replies.values()) or 1
        row = {"round": rnd, "hr": sum(c["hits"] for c, _ in r.replies.values()) / cases,
               "ndcg": sum(c["ndcg"] for c, _ in r.replies.values()) / cases,
               "train_s": t1 - t0, "aggregate_s": t2 - t1}
        history.append(row)
        grid_log(f"round {rnd}: HR@10 {row['hr']:.4f} NDCG@10 {row['ndcg']:.4f} "
                 f"(train {row['train_s']:.1f} s, {cfg['aggregation']} {row['aggregate_s']:.1f} s)")
        _write(cfg, "history.json", {"config": cfg, "rounds": history})


# ----------------------------------------------------------------- cross-device
def _device_data(cfg):
    key = ("device", cfg["ratings-file"], cfg["users"], cfg["items"], cfg["ratings"], cfg["seed"])
    if key not in _CACHE:
        r = dataset(cfg)
        sp = recsys.leave_one_out(r, 99, int(cfg["seed"]))
        _CACHE[key] = (r, sp, [sp.items[sp.users == u] for u in range(r.n_users)])
    return _CACHE[key]


def _device_params(cfg, r):
    from ..protocols import secemb
    return secemb.SecEmbParams(m=r.n_items, d=int(cfg["d"]), m_prime=int(cfg["m-prime"]), frac_bits=20,
                               n_users=r.n_users)


def _device_stage(msg, context: Context, overrides):
    """A cross-device node: server 1 (role server1), or user ``user-id`` /
    ``partition-id - 1``; SecEmb stages and the eval stage."""
    cfg = _cfg(context, overrides)
    from .demo import secemb_role
    role, u, me = secemb_role(context, cfg)
    if msg.metadata.message_type == fsecemb.MESSAGE_TYPE and role == "server1":
        return fsecemb.handle_message(msg, context, "server1", me=me)
    if msg.metadata.message_type == fsecemb.MESSAGE_TYPE and unpack(msg.content)[0].get("stage") == "hello":
        return fsecemb.handle_message(msg, context, "user", me=me)
    assert u is not None
    r, sp, pos = _device_data(cfg)
    state = load_state(context, "secea_fast.train.user", me)
    p_u = (np.frombuffer(state, dtype=np.float64).copy() if state is not None
           else recsys.device_init(r.n_users, r.n_items, int(cfg["d"]), int(cfg["seed"]))[0][u])
    if msg.metadata.message_type == MESSAGE_TYPE:            # eval: Q arrives, the hit goes back
        c, blobs = unpack(msg.content)
        Q = np.load(io.BytesIO(blobs[0]), allow_pickle=False)
        k = np.flatnonzero(sp.test_users == u)
        h, nd, cases = recsys.device_eval(p_u[None, :].repeat(len(k), 0), Q, sp.test_users[k],
                                          sp.test_items[k], sp.negatives[k])
        return Message(pack({"hits": float(h), "ndcg": float(nd), "cases": int(cases)}), reply_to=msg)
    c, _ = unpack(msg.content)
    rnd = int(c["round"])
    items, mask = recsys.device_request(pos[u], r.n_items, int(cfg["m-prime"]), 4, int(cfg["seed"]), rnd, u)

    def step(rows):
        new, grads = recsys.device_step(p_u, rows, mask, lr=float(cfg["device-lr"]), reg=1e-4)
        save_state(context, "secea_fast.train.user", new.tobytes(), me)
        return grads
    return fsecemb.handle_message(msg, context, "user", items, step, me=me)


def _cross_device_main(grid: Grid, context: Context, overrides):
    cfg = _cfg(context, overrides)
    r, _, _ = _device_data(cfg)
    nodes = wait_nodes(grid, r.n_users + 1)
    _, Q = recsys.device_init(r.n_users, r.n_items, int(cfg["d"]), int(cfg["seed"]))
    params = _device_params(cfg, r)
    from .demo import secemb_roster
    runner = fsecemb.SecEmbStageRunner(grid_exchange(grid, fsecemb.MESSAGE_TYPE,
                                                     timeout=float(cfg["stage-timeout"])),
                                       roster=secemb_roster(cfg), run=int(context.run_id),
                                       m_prime=params.m_prime, frac_bits=params.frac_bits,
                                       n_users=params.n_users)
    stage = grid_exchange(grid, MESSAGE_TYPE, timeout=float(cfg["stage-timeout"]))
    history = []
    for rnd in range(1, int(cfg["rounds"]) + 1):
        t0 = time.perf_counter()
        res = runner.run(nodes, Q, round_index=rnd)
        if res.dropouts:
            raise RuntimeError(f"round {rnd}: users lost: {res.dropouts}")
        assert res.aggregate is not None          # run() sets it or raises
        Q = Q - float(cfg["device-lr"]) * res.aggregate
        t1 = time.perf_counter()
        buf = io.BytesIO()
        np.save(buf, Q, allow_pickle=False)
        users = list(res.users)
        ev = stage({x: ({"stage": "eval"}, [buf.getvalue()]) for x in users})
        _fail(ev, "eval")
        cases = sum(c["cases"] for c, _ in ev.replies.values()) or 1
        row = {"round": rnd, "hr": sum(c["hits"] for c, _ in ev.replies.values()) / cases,
               "ndcg": sum(c["ndcg"] for c, _ in ev.replies.values()) / cases, "secemb_s": t1 - t0}
        history.append(row)
        grid_log(f"round {rnd}: HR@10 {row['hr']:.4f} NDCG@10 {row['ndcg']:.4f} (SecEmb round {t1 - t0:.1f} s)")
        _write(cfg, "history.json", {"config": cfg, "rounds": history})


# ----------------------------------------------------------------- apps
def grid_log(text: str) -> None:
    """Progress through Flower's own logger."""
    log.info("secea_fast train: %s", text)


def _fail(r, stage):
    if r.failed:
        raise RuntimeError(f"training stage {stage}: nodes lost: {r.failed}")


def make_train_apps(**overrides: Any) -> tuple[ServerApp, ClientApp]:
    """(ServerApp, ClientApp) of the training example; the run config's
    ``setting`` (cross-silo / cross-device) and ``aggregation`` (secea /
    plain, cross-silo) choose the run.  Nodes: ``silos`` silos, or server 1
    plus ``users`` users (simulation: partition 0 is server 1)."""
    server_app, client_app = ServerApp(), ClientApp()

    def main(grid, context):
        cfg = _cfg(context, overrides)
        if cfg["setting"] == "cross-silo":
            _cross_silo_main(grid, context, overrides)
        elif cfg["setting"] == "cross-device":
            _cross_device_main(grid, context, overrides)
        else:
            raise ValueError(f"setting must be cross-silo or cross-device, got {cfg['setting']!r}")

    def mf(msg, context):
        cfg = _cfg(context, overrides)
        return (_silo_stage if cfg["setting"] == "cross-silo" else _device_stage)(msg, context, overrides)
    server_app.main()(main)
    client_app.query("mf")(mf)
    client_app.query("secea")(lambda msg, context: _silo_secea(msg, context, overrides))
    client_app.query("secemb")(lambda msg, context: _device_stage(msg, context, overrides))
    return server_app, client_app
