"""A SecEA round as a Flower App on built-in data: the ServerApp and
ClientApp behind ``examples/flower_secea`` (deployment: ``flwr run``), the
simulation runtime (``secea-fast flower sim``) and the tests.

Every node builds the same public workload from the run config and keeps
its own part, chosen by its node config: ``party-id`` in deployment
(``flower-supernode --node-config "party-id=0"``), ``partition-id`` in the
simulation engine.  Nodes write their global embeddings to
``<out-dir>/client-<party>.npz`` (and their compute seconds per stage to
``<out-dir>/seconds-<party>.jsonl``: a node's timings never go to the
server) and the server its JSON summary to
``<out-dir>/summary.json`` when ``out-dir`` is set: the demo's way to show
results; a real ClientApp keeps them in memory for its training.

Run config (defaults in ``DEFAULTS``): ``workload`` (a name of
``secea_fast.workloads.SHAPES`` or ``synthetic``), ``entities``
(M of ``synthetic``), ``num-clients``, ``d``, ``T``, ``K`` (0: eq. 7),
``precision``, ``seed``, ``block-size`` (0: default), ``blocks-per-stage``
(0: default), ``stage-bytes`` (coded queries in flight per stage, the
memory knob; 0: ``tuning.FLOWER_STAGE_QUERY_BYTES``), ``count-bound`` (k
of the entity union, a public bound on every client's entity count, so the
round opens with the union upload and needs no ``keys`` stage; 0: the
workload's own public bound, ``entities`` for ``synthetic``, else a
``keys`` stage asks the counts), ``stage-timeout`` (seconds), ``out-dir``,
``roster-file`` (the ServerApp's copy of the federation's roster; SecEA
clients are its parties ``client-<i>`` of role ``client``, each node holding
its own ``identity-file`` in its node config) or, in the simulation engine,
``roster-dir`` (a directory :func:`secea_roster_dir` wrote with every
party's identity).  ``phe = true`` runs SecEA-PHE instead (the Paillier
layer composed into the same sessions: :func:`secea_layer`) with
``key-bits`` (2048), ``stat-bits`` (80), ``insecure-keys`` (only for
test keys below 2048 bits) and ``paillier-variant`` (``"textbook"``, the
default, or ``"short-exponent"``).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Context
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from .. import workloads
from ..executor import LocalExecutor
from ..protocols import secea, secemb
from ..protocols.secea_phe.layer import PaillierLayer
from ..protocols.common.roster import Roster, write_federation
from . import secea as fsecea
from .records import wait_nodes
from . import secemb as fsecemb
from ..protocols.common.roster import Roster
from .admission import NodeIdentity, node_identity

__all__ = ["DEFAULTS", "demo_local", "party_of", "make_apps", "save_embeddings", "load_embeddings",
           "SECEMB_DEFAULTS", "secemb_data", "secemb_role", "secemb_parties", "secemb_roster",
           "make_secemb_apps", "verify_secea",
           "verify_secemb", "make_example_apps", "measure_floor", "FLOOR_TYPE", "secea_roster",
           "secea_roster_dir", "secea_party_name", "secea_layer", "count_bound"]

DEFAULTS = {"workload": "synthetic", "entities": 2000, "num-clients": 5, "d": 64, "T": 1, "K": 0,
            "precision": 8, "seed": 0, "block-size": 0, "blocks-per-stage": 0,
            "stage-bytes": 0, "count-bound": 0,
            "stage-timeout": 300.0, "out-dir": "", "roster-file": "", "roster-dir": "",
            "phe": False, "key-bits": 2048, "stat-bits": 80, "insecure-keys": False}


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


def count_bound(cfg: dict) -> int | None:
    """k of the entity union (Tang et al. 2022, Sec. 4.1, footnote 1: a
    public bound on every client's entity count): run config ``count-bound``,
    or for the ``synthetic`` workload its ``entities`` (no client holds more
    than the whole universe); None (a ``keys`` stage asks the counts) for
    another workload without one."""
    k = int(cfg.get("count-bound", 0) or 0)
    if k < 0:
        raise ValueError(f"run config: field 'count-bound' must be >= 0, got {k}")
    if k:
        return k
    return int(cfg["entities"]) if cfg["workload"] == "synthetic" else None


def party_of(context: Context) -> int:
    """The node's data partition: ``party-id`` of its node config, or the
    simulation engine's ``partition-id``."""
    nc = context.node_config
    for key in ("party-id", "partition-id"):
        if key in nc:
            return int(nc[key])
    raise ValueError("the node config has neither party-id nor partition-id: start the SuperNode "
                     "with --node-config \"party-id=<n>\"")


def save_embeddings(path: str | os.PathLike[str], embeddings: dict[Any, Any]) -> None:
    """A client's result as ``ids`` (str) and ``rows`` (float64) in an npz."""
    ids = list(embeddings)
    rows = np.array([embeddings[k] for k in ids], dtype=np.float64)
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, ids=np.array([str(k) for k in ids]), rows=rows)
    os.replace(tmp, path)


def load_embeddings(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The embeddings :func:`save_embeddings` wrote (ids as str)."""
    with np.load(path, allow_pickle=False) as z:
        ids, rows = z["ids"], z["rows"]          # each z[...] reads the array again: once each
    return {str(k): rows[i] for i, k in enumerate(ids)}


def secea_party_name(party: int) -> str:
    """The roster name of SecEA client ``party``: ``client-<party>``."""
    return f"client-{int(party)}"


def secea_roster_dir(num_clients: int, directory: str | os.PathLike[str] | None = None) -> str:
    """A federation of ``num_clients`` SecEA clients (roster and every
    identity, :func:`~secea_fast.protocols.common.roster.write_federation`)
    in ``directory`` (default: a new temporary directory): the simulation
    engine's ``roster-dir``, where every party runs on this host."""
    import tempfile
    d = directory if directory is not None else tempfile.mkdtemp(prefix="secea-roster-")
    write_federation(d, [(secea_party_name(i), "client") for i in range(int(num_clients))])
    return str(d)


def secea_roster(cfg: dict[str, Any]) -> Roster:
    """The ServerApp's roster: run config ``roster-file``, else the
    simulation's ``roster-dir``; ValueError naming both keys if neither is set."""
    if cfg.get("roster-file"):
        return Roster.load(str(cfg["roster-file"]))
    if cfg.get("roster-dir"):
        return Roster.load(os.path.join(str(cfg["roster-dir"]), "roster.json"))
    raise ValueError("run config: neither 'roster-file' nor 'roster-dir' is set: the SecEA ServerApp takes "
                     "exactly the roster's clients (secea_fast.protocols.common.roster.write_federation "
                     "writes one; LocalFederation(roster=...) gives its roster_file)")


def secea_layer(cfg: dict[str, Any]) -> PaillierLayer | None:
    """The sessions' layer the run config asks for: a fresh
    :class:`~secea_fast.protocols.secea_phe.layer.PaillierLayer` when
    ``phe`` is set (``key-bits``, ``stat-bits``, ``insecure-keys``,
    ``paillier-variant``), else
    None (plain SecEA).  ValueError naming the field for a malformed one."""
    phe = cfg.get("phe", False)
    if not isinstance(phe, bool):
        raise ValueError(f"run config: field 'phe' must be true or false, got {phe!r}")
    if not phe:
        return None
    insecure = cfg.get("insecure-keys", False)
    if not isinstance(insecure, bool):
        raise ValueError(f"run config: field 'insecure-keys' must be true or false, got {insecure!r}")
    variant = cfg.get("paillier-variant", "textbook")
    if variant not in ("textbook", "short-exponent"):
        raise ValueError("run config: field 'paillier-variant' must be \"textbook\" or \"short-exponent\", "
                         f"got {variant!r}")
    try:
        return PaillierLayer(int(cfg["key-bits"]), int(cfg["stat-bits"]), insecure_keys=insecure,
                             variant=variant)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"run config: fields 'key-bits' / 'stat-bits': {exc}") from None


def secea_server_main(grid: Grid, context: Context, overrides: dict) -> None:
    """The demo's ServerApp body: one SecEA round among the roster's
    clients, summary to ``out-dir``."""
    cfg = _cfg(context, overrides)
    res = fsecea.run_secea(grid, secea_roster(cfg), d=int(cfg["d"]), T=int(cfg["T"]), K=int(cfg["K"]) or None,
                           precision=int(cfg["precision"]), block_size=int(cfg["block-size"]) or None,
                           blocks_per_stage=int(cfg["blocks-per-stage"]) or None,
                           stage_bytes=int(cfg["stage-bytes"]) or None,
                           timeout=float(cfg["stage-timeout"]), layer=secea_layer(cfg), k=count_bound(cfg))
    _write(cfg, "summary.json", json.dumps(res.summary(), indent=1))


def secea_client_stage(msg, context: Context, overrides: dict):
    """The demo's ClientApp handler of SecEA stages: this node's part of the
    workload in, its global embeddings to ``out-dir``."""
    cfg = _cfg(context, overrides)
    party = party_of(context)
    if cfg["out-dir"]:
        # progress, one line per stage: how an operator (or a test) follows a node
        from .records import unpack
        stage = unpack(msg.content)[0]
        with open(_out(cfg) / f"progress-{party}.log", "a") as f:
            f.write(f"{stage.get('stage')} {stage.get('step', '')} attempt {stage.get('attempt')}\n")

    def keep(ctx, embeddings):
        if cfg["out-dir"]:
            save_embeddings(_out(cfg) / f"client-{party}.npz", embeddings)
    def seconds(ctx, stage, secs):
        # this node's compute seconds: its own file, never the server's reply
        if cfg["out-dir"]:
            with open(_out(cfg) / f"seconds-{party}.jsonl", "a") as f:
                f.write(json.dumps({"stage": stage.get("stage"), "step": stage.get("step"),
                                    "attempt": stage.get("attempt"), "seconds": secs}) + "\n")
    def fresh_layer() -> PaillierLayer:
        lay = secea_layer(cfg)
        assert lay is not None, "phe is set"
        return lay
    # the run config checked once, before any stage
    phe = secea_layer(cfg) is not None
    return fsecea.handle_message(msg, context, demo_local(cfg)[party], on_result=keep,
                                 default_name=secea_party_name(party), run_config=cfg, on_seconds=seconds,
                                 layer=fresh_layer if phe else None)


def _out(cfg) -> Path:
    out = Path(str(cfg["out-dir"]))
    out.mkdir(parents=True, exist_ok=True)
    return out


def _write(cfg, name, text):
    if cfg["out-dir"]:
        (_out(cfg) / name).write_text(text)


def make_apps(**overrides: Any) -> tuple[ServerApp, ClientApp]:
    """(ServerApp, ClientApp) of the SecEA demo; ``overrides`` replace defaults
    of the run config (the run config itself wins, as ``flwr run
    --run-config`` sets it)."""
    server_app, client_app = ServerApp(), ClientApp()
    server_app.main()(lambda grid, context: secea_server_main(grid, context, overrides))
    client_app.query("secea")(lambda msg, context: secea_client_stage(msg, context, overrides))
    return server_app, client_app


# ----------------------------------------------------------------- SecEmb
SECEMB_DEFAULTS = {"users": 5, "items": 3883, "d": 64, "m-prime": 300, "frac-bits": 16, "seed": 0,
                   "min-users": 2, "roster-file": "", "roster-dir": "",
                   "stage-timeout": 300.0, "out-dir": "", "server0-workers": 1}


def secemb_data(cfg: dict[str, Any]) -> tuple[np.ndarray, list[list[int]], list[np.ndarray]]:
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


def secemb_parties(users: int) -> list[tuple[str, str]]:
    """The SecEmb demo's roster: ("server1", "server1") and ("user-<u>", "user")."""
    return [("server1", "server1")] + [(f"user-{u}", "user") for u in range(int(users))]


def secemb_roster(cfg: dict[str, Any]) -> Roster:
    """Server 0's copy of the federation roster: run config ``roster-file``
    (deployment), else ``roster-dir``/roster.json (the simulation's
    :func:`~secea_fast.protocols.common.roster.write_federation` directory)."""
    if cfg.get("roster-file"):
        return Roster.load(str(cfg["roster-file"]))
    if cfg.get("roster-dir"):
        return Roster.load(Path(str(cfg["roster-dir"])) / "roster.json")
    raise ValueError("run config: 'roster-file' (or, in simulation, 'roster-dir') is missing: SecEmb takes "
                     "exactly the roster's parties")


def secemb_role(context: Context, cfg: dict[str, Any] | None = None) -> tuple[str, int | None, NodeIdentity]:
    """("server1", None, identity) or ("user", data index, identity) of a
    node: its roster identity from its node config's ``roster-file`` and
    ``identity-file`` (deployment) or, in the simulation engine, the run
    config's ``roster-dir`` with partition 0 as "server1" and partition
    u + 1 as "user-<u>".  A user's data index is u of its name "user-<u>"."""
    nc = context.node_config
    default = None
    if "partition-id" in nc:
        p = int(nc["partition-id"])
        default = "server1" if p == 0 else f"user-{p - 1}"
    me = node_identity(nc, cfg if cfg is not None else dict(context.run_config), default)
    if me.role == "server1":
        return "server1", None, me
    try:
        return me.role, int(me.name.rsplit("-", 1)[1]), me
    except (IndexError, ValueError):
        raise ValueError(f"SecEmb demo: user {me.name!r} is not named user-<index>") from None


def secemb_server_main(grid: Grid, context: Context, overrides: dict) -> None:
    """The SecEmb demo's ServerApp body (server 0): one round among exactly
    the roster's parties; the aggregate and the summary to ``out-dir``."""
    cfg = _cfg(context, overrides, SECEMB_DEFAULTS)
    Q, _, _ = secemb_data(cfg)
    # server 0's own fork pool (run config server0-workers); server 1's is its
    # node config's workers (fsecemb.handle_message): never one for both
    workers = fsecemb.config_int(cfg, "server0-workers", 1)
    res = fsecemb.run_secemb(grid, Q, roster=secemb_roster(cfg), run=int(context.run_id),
                             m_prime=int(cfg["m-prime"]), frac_bits=int(cfg["frac-bits"]),
                             min_users=int(cfg["min-users"]), min_nodes=int(cfg["users"]) + 1,
                             timeout=float(cfg["stage-timeout"]),
                             executor=LocalExecutor(workers) if workers > 1 else None)
    assert res.aggregate is not None          # run_secemb sets it or raises
    if cfg["out-dir"]:
        np.save(_out(cfg) / "aggregate.npy", res.aggregate)
    _write(cfg, "summary.json", json.dumps(res.summary(), indent=1))


def secemb_client_stage(msg, context: Context, overrides: dict):
    """The SecEmb demo's ClientApp handler: server 1 or a user
    (:func:`secemb_role`); a user's retrieved rows go to ``out-dir``."""
    cfg = _cfg(context, overrides, SECEMB_DEFAULTS)
    role, u, me = secemb_role(context, cfg)
    if cfg["out-dir"]:
        # progress, one line per stage, as SecEA's nodes write it
        from .records import unpack
        stage = unpack(msg.content)[0]
        with open(_out(cfg) / f"progress-{me.name}.log", "a") as f:
            f.write(f"{stage.get('stage')} {stage.get('step', '')} attempt {stage.get('attempt')}\n")
    if role == "server1":
        return fsecemb.handle_message(msg, context, "server1", me=me)
    assert u is not None                      # secemb_role gives every user its index
    _, items, grads = secemb_data(cfg)

    def keep(ctx, rows):
        if cfg["out-dir"]:
            np.save(_out(cfg) / f"rows-{u}.npy", rows)
    return fsecemb.handle_message(msg, context, "user", items[u], lambda rows: grads[u],
                                  on_retrieved=keep, me=me)


def make_secemb_apps(**overrides: Any) -> tuple[ServerApp, ClientApp]:
    """(ServerApp, ClientApp) of a SecEmb round on the demo data: server 0 is
    the ServerApp; server 1 and the users are SuperNodes (:func:`secemb_role`)."""
    server_app, client_app = ServerApp(), ClientApp()
    server_app.main()(lambda grid, context: secemb_server_main(grid, context, overrides))
    client_app.query("secemb")(lambda msg, context: secemb_client_stage(msg, context, overrides))
    return server_app, client_app


def verify_secea(out_dir: str | os.PathLike[str], cfg: dict[str, Any], parties: Iterable[int] | None = None,
                 without: Iterable[int] = ()) -> tuple[bool, str]:
    """(ok, message): the global embeddings in ``out_dir`` of the clients
    ``parties`` (default: all) equal ``secea.aggregate`` on the same data,
    bit for bit; ``without``: parties left out of the round (a restart
    without them), so the expected sums are the others'.  With ``phe``
    (SecEA-PHE) the expected rows are the correctly rounded quantized means
    S / (c scale), what SecEA-PHE computes (SecEA rounds twice, so the two
    may differ in the last bit)."""
    cfg = dict(DEFAULTS, **cfg)
    local = demo_local(cfg)
    kept = [n for n in range(len(local)) if n not in set(without)]
    if cfg.get("phe"):
        from fractions import Fraction
        prm = secea.SecEAParams(N=len(kept), d=int(cfg["d"]), T=int(cfg["T"]), precision=int(cfg["precision"]),
                                K=int(cfg["K"]) or None)
        sums = secea.plaintext_sums([local[n] for n in kept], prm)
        scale = prm.fx.scale
        agg = [{k: np.array([float(Fraction(int(x), int(cnt[i]) * scale)) for x in s[i]])
                for i, k in enumerate(local[n])} for n, (s, cnt) in zip(kept, sums)]
    else:
        agg = secea.aggregate([local[n] for n in kept], T=int(cfg["T"]), precision=int(cfg["precision"]),
                              K=int(cfg["K"]) or None)
    expect = dict(zip(kept, agg))
    parties = kept if parties is None else list(parties)       # iterated, then counted
    for party in parties:
        want = expect[party]
        path = Path(out_dir) / f"client-{party}.npz"
        if not path.exists():
            return False, f"client {party} wrote no result"
        got = load_embeddings(path)
        if set(got) != {str(k) for k in want}:
            return False, f"client {party}: entities differ"
        for key, row in want.items():
            if not np.array_equal(got[str(key)], row):
                return False, f"client {party}: the global embedding of {key!r} differs"
    return True, f"{len(parties)} clients' global embeddings equal secea.aggregate bit for bit"


def verify_secemb(out_dir: str | os.PathLike[str], cfg: dict[str, Any]) -> tuple[bool, str]:
    """(ok, message): the aggregate and every user's retrieved rows in
    ``out_dir`` pass ``secemb.plaintext_check`` (users with more than m'
    items keep a random m' of them: the rows say which)."""
    cfg = dict(SECEMB_DEFAULTS, **cfg)
    Q, items, grads = secemb_data(cfg)
    out = Path(out_dir)
    params = secemb.SecEmbParams(m=Q.shape[0], d=Q.shape[1], m_prime=int(cfg["m-prime"]),
                                 frac_bits=int(cfg["frac-bits"]), n_users=len(items))
    try:
        rows = [np.load(out / f"rows-{u}.npy") for u in range(len(items))]
        agg = np.load(out / "aggregate.npy")
    except FileNotFoundError as exc:
        return False, f"missing result: {exc.filename}"
    res = secemb.SecEmbRoundResult(params=params, seconds={}, wall={}, bytes={}, retrieved=rows,
                                   aggregate=agg)
    return secemb.plaintext_check(Q, items, grads, params, res)


FLOOR_TYPE = "query.floor"


def measure_floor(grid: Grid, nodes: Sequence[int], *, repeats: int = 5, payload: int = 64 << 20,
                  timeout: float = 300.0) -> dict[str, Any]:
    """Flower's own cost of a stage, measured on ``grid`` with this App:
    the wall time of an empty stage (a tiny message and its reply: Flower's
    polling and a fresh ClientApp process per message) addressed to every
    node and to one node (a stage waits for its slowest node, so more nodes
    cost more), and of a stage moving ``payload`` bytes down and up in total
    (split over the nodes, as opaque bytes in the records the protocols
    use; random both ways, and different for every node: Flower stores
    message parts by content hash, so equal parts would be pushed to the
    SuperLink once and the floor would count bytes that never moved), then
    the same bytes down only and up only (the two directions cost
    differently: a stage's floor is its bytes down at the down rate plus its
    bytes up at the up rate).  Size ``payload`` like the round's largest
    stage: Flower's cost per byte grows with the message size.  Returns
    {"empty_s" (all nodes), "empty_one_s", "payload_s", "payload_bytes",
    "bytes_per_s", "down_bytes_per_s", "up_bytes_per_s"} (medians of
    ``repeats`` empty stages, of repeats // 2 + 1 payload stages each)."""
    from .records import grid_exchange
    ex = grid_exchange(grid, FLOOR_TYPE, timeout=timeout)
    nodes = list(nodes)
    empty = [ex({x: ({"echo": 0}, []) for x in nodes}).wall for _ in range(repeats)]
    one = [ex({nodes[k % len(nodes)]: ({"echo": 0}, [])}).wall for k in range(repeats)]
    each = max(1, payload // (2 * len(nodes)))
    rng = np.random.default_rng()

    def stage(down: bool, up: bool) -> float:
        walls = []
        for _ in range(max(1, repeats // 2 + 1)):
            walls.append(ex({x: ({"echo": each if up else 0}, [rng.bytes(each)] if down else [])
                             for x in nodes}).wall)
        return float(np.median(walls))

    e = float(np.median(empty))
    f, fd, fu = stage(True, True), stage(True, False), stage(False, True)
    one_way = each * len(nodes)

    # the bytes' own cost is what a payload stage takes beyond an empty one;
    # None when it is lost in the noise of the empty stage (simulation engine)
    def rate(moved, wall):
        return moved / (wall - e) if wall - e > 0.05 * wall else None
    return {"empty_s": e, "empty_one_s": float(np.median(one)), "payload_s": f,
            "payload_bytes": 2 * one_way, "bytes_per_s": rate(2 * one_way, f),
            "down_s": fd, "down_bytes_per_s": rate(one_way, fd),
            "up_s": fu, "up_bytes_per_s": rate(one_way, fu),
            "repeats": repeats, "empty_all": empty, "empty_single": one}


def _floor_stage(msg, context: Context):
    """A node's side of :func:`measure_floor`: an empty reply, or as many
    bytes back as it was asked for."""
    from flwr.app import Message as FlowerMessage
    from .records import pack, unpack
    cfg, _ = unpack(msg.content)
    n = int(cfg.get("echo", 0))
    # random bytes, as the protocols' padded messages are: nothing on the way can compress them
    return FlowerMessage(pack({"echo": n}, [np.random.default_rng().bytes(n)] if n else []), reply_to=msg)


def make_example_apps(**overrides: Any) -> tuple[ServerApp, ClientApp]:
    """One (ServerApp, ClientApp) for both demos, the App of
    ``examples/flower_secea``: the run config's ``protocol`` (``secea`` or
    ``secemb``) picks the round; every other key is the demo's."""
    server_app, client_app = ServerApp(), ClientApp()

    def main(grid: Grid, context: Context) -> None:
        rc = dict(overrides, **dict(context.run_config))
        protocol = str(rc.get("protocol", "secea"))
        if protocol not in ("secea", "secemb"):
            raise ValueError(f"run config protocol must be secea or secemb, got {protocol!r}")
        floor_bytes = int(rc.get("floor-bytes", 0))
        if floor_bytes:
            # the transport floor first, on the same nodes, in the same run
            need = int(rc.get("num-clients", DEFAULTS["num-clients"])) if protocol == "secea" \
                else int(rc.get("users", SECEMB_DEFAULTS["users"])) + 1
            nodes = wait_nodes(grid, need)
            _write(dict(DEFAULTS, **rc), "floor.json", json.dumps(measure_floor(grid, nodes,
                                                                               payload=floor_bytes)))
        (secea_server_main if protocol == "secea" else secemb_server_main)(grid, context, overrides)
    server_app.main()(main)
    client_app.query("floor")(_floor_stage)
    client_app.query("secea")(lambda msg, context: secea_client_stage(msg, context, overrides))
    client_app.query("secemb")(lambda msg, context: secemb_client_stage(msg, context, overrides))
    return server_app, client_app
