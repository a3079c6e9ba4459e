"""SecEmb across processes and hosts, on Flower's transport.

SecEmb (Mai et al. 2025, Sec. 4, Algorithm 3) has two non-colluding servers
and many users.  Flower runs one ServerApp per run and every message passes
its SuperLink, so:

* server 0 is the ServerApp (:func:`run_secemb`);
* server 1 is a SuperNode whose ClientApp calls :func:`handle_message` with
  ``role="server1"`` (its node config says so, e.g. ``role=server1``);
* each user is a SuperNode whose ClientApp calls :func:`handle_message`
  with ``role="user"``, its item ids and a function from the retrieved rows
  to its gradient rows.

Why neither server's process ever holds the other's keys: everything a user
sends to server 1 (its retrieval keys, its aggregation upload) and
everything server 1 sends back to a user (its retrieval answer) is sealed
end to end (:mod:`secea_fast.flower.sealed`: the user's ephemeral X25519
key with server 1's key, AES-256-GCM) before it reaches Flower, so server 0
and the SuperLink relay ciphertext of a fixed length.  Server 1's X25519
private key is made in server 1's node and stays in its ``context.state``.
The only plaintext server 1 sends to server 0 is its share of the
aggregate, which SecEmb gives server 0 to reconstruct the sum.
``tests/test_flower_secemb.py`` checks that server 0's whole view holds no
byte string of server 1's keys, answers or uploads.

Stages (each one Flower message per addressed node and its reply)
-------------------------------------------------------------------
1. ``hello`` (once per runner) to every node: its role; server 1 answers
   with its public key.
2. ``retrieve`` to the users: the public parameters and server 1's key;
   each user answers with its request to server 0 and its sealed request to
   server 1 (PadOrTrunc to m', PathGen, retrieval keys).
3. ``answer`` to server 1: the public table and the sealed requests; server
   1 answers every user (eq. 3), sealed.  Server 0 answers its own requests
   while it waits.
4. ``upload`` to the users: server 0's answer and server 1's sealed answer;
   each user reconstructs its rows (eq. 4), computes its gradient rows and
   answers with its aggregation upload to server 0 and, sealed, to server 1.
5. ``aggregate`` to server 1: the sealed uploads; server 1 answers with its
   share of the aggregate.  Server 0 computes its share while it waits and
   reconstructs the sum.

Dropouts: a user lost in ``retrieve`` is left out of the round; a user lost
in ``upload`` is a SecEmb dropout (it retrieved but does not upload,
Appendix L.2): the aggregate is the sum over the users that uploaded.
Losing server 1 ends the round with a RuntimeError: no aggregate can be
formed without both servers.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np
from flwr.app import Context, Message as FlowerMessage
from flwr.serverapp import Grid
from numpy.typing import ArrayLike

from ..prg import X25519KeyPair
from ..protocols.common.wire import Reader, Writer
from ..protocols.secemb import (AggregateShare, AggregationUpload, RetrievalRequest,
                                RetrievalResponse, SecEmbParams, Server, User, encode_table,
                                reconstruct_aggregate)
from .records import Exchange, StageResult, grid_exchange, load_state, log, pack, save_state, unpack, wait_nodes
from .sealed import open_sealed, seal

__all__ = ["MESSAGE_TYPE", "STATE_KEY", "handle", "handle_message", "SecEmbStageRunner",
           "SecEmbFlowerResult", "run_secemb"]


MESSAGE_TYPE = "query.secemb"
STATE_KEY = "secea_fast.secemb"
_NODE_MAGIC = b"SEFe"
ROLES = ("user", "server1")


def _params(cfg: dict) -> SecEmbParams:
    return SecEmbParams(m=int(cfg["m"]), d=int(cfg["d"]), m_prime=int(cfg["m_prime"]),
                        frac_bits=int(cfg["frac_bits"]), n_users=int(cfg["n_users"]),
                        dense_size=int(cfg["dense_size"]), agg_bits=int(cfg.get("agg_bits", 64)))


def _table_bytes(table: np.ndarray) -> bytes:
    return Writer(b"SETb").array(table).bytes()


def _table_from(data, params: SecEmbParams) -> np.ndarray:
    r = Reader(data, b"SETb", "SecEmb table")
    t = r.array(2)
    r.done()
    if t.shape != (params.m, params.d):
        raise ValueError(f"SecEmb table: shape {t.shape}, expected ({params.m}, {params.d})")
    return t


# ======================================================================= nodes
def _node_state(data):
    """(key pair or None, round, party state bytes) of a saved node state."""
    if data is None:
        return None, 0, b""
    r = Reader(data, _NODE_MAGIC, "SecEmb node state")
    sk, rnd, party = r.blob(32), r.u64(), r.blob()
    r.done()
    return (X25519KeyPair.from_private_bytes(sk) if sk else None), rnd, party


def node_keypair(state):
    """The X25519 key pair saved in a node's SecEmb state (server 1's: for
    its operator's audits and the tests)."""
    return _node_state(state)[0]


def _save(keypair, rnd, party=b"") -> bytes:
    return (Writer(_NODE_MAGIC).blob(keypair.private_bytes() if keypair else b"")
            .u64(rnd).blob(party).bytes())


def handle(cfg: dict[str, Any], blobs: list[bytes], state: bytes | None, role: str, items: ArrayLike | None = None,
           grads_fn: Callable[[np.ndarray], Any] | None = None
           ) -> tuple[dict[str, Any], list[bytes], bytes, np.ndarray | None]:
    """One SecEmb stage at a node, independent of the transport: returns
    ``(reply_cfg, reply_blobs, new_state, retrieved)``.

    ``role``: "user" or "server1".  A user passes ``items`` (its rated item
    ids) and ``grads_fn(rows) -> grads`` or ``(grads, dense)``: from the
    retrieved rows (|items| x d, NaN for items truncated away) to its
    gradient rows (|items| x d) and optional dense update.  ``retrieved``
    is the user's rows at the ``upload`` stage, else None."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    stage = cfg.get("stage")
    keypair, srnd, party = _node_state(state)
    t0 = time.perf_counter()
    if stage == "hello":
        if role == "server1":
            keypair = keypair or X25519KeyPair()        # one key per run, kept in the node
            out = [keypair.public_bytes]
        else:
            out = []
        return {"stage": stage, "role": role}, out, _save(keypair, srnd, party), None
    rnd, uid = int(cfg["round"]), int(cfg.get("uid", 0))
    params = _params(cfg)
    reply = {"stage": stage}
    retrieved = None
    if role == "user":
        if items is None or grads_fn is None:
            raise ValueError("a SecEmb user needs items and grads_fn")
        if stage == "retrieve":
            s1 = bytes(cfg["server1_key"])
            user = User(params, items)
            eph = X25519KeyPair()
            r0, r1 = user.retrieval_request()
            out = [r0.to_bytes(), seal(eph, s1, r1.to_bytes(), "request", rnd, uid)]
            new = _save(eph, rnd, Writer(b"SEUk").blob(s1).blob(user.export_state()).bytes())
        elif stage == "upload":
            if srnd != rnd or keypair is None:
                raise ValueError(f"upload of round {rnd} without this user's retrieval of that round")
            r = Reader(party, b"SEUk", "SecEmb user keys")
            s1, ustate = r.blob(32), r.blob()
            r.done()
            user = User.import_state(params, items, ustate)
            a0 = RetrievalResponse.from_bytes(blobs[0])
            a1 = RetrievalResponse.from_bytes(open_sealed(keypair, blobs[1], "response", rnd, uid, s1)[0])
            retrieved = user.reconstruct(a0, a1)
            got = grads_fn(retrieved)
            grads, dense = got if isinstance(got, tuple) else (got, None)
            up0, up1 = user.aggregation_upload(grads, dense)
            out = [up0.to_bytes(), seal(keypair, s1, up1.to_bytes(), "upload", rnd, uid)]
            new = _save(None, rnd)                       # the paths are spent: nothing to keep
        else:
            raise ValueError(f"unknown SecEmb user stage {stage!r}")
    else:
        if keypair is None:
            raise ValueError("server 1 has no key: the hello stage did not reach it")
        uids = [int(u) for u in cfg["uids"]]
        if len(blobs) != len(uids) + (stage == "answer"):
            raise ValueError(f"server 1 stage {stage!r}: {len(blobs)} parts for {len(uids)} users")
        # the aggregation reads no table: a zero table of the right shape
        table = (_table_from(blobs[0], params) if stage == "answer"
                 else np.zeros((params.m, params.d), dtype=np.uint64))
        server = Server(1, params, table)
        if stage == "answer":
            out = []
            for u, sealed in zip(uids, blobs[1:]):
                req, eph = open_sealed(keypair, sealed, "request", rnd, u)
                ans = server.answer(u, RetrievalRequest.from_bytes(req))
                out.append(seal(keypair, eph, ans.to_bytes(), "response", rnd, u))
            new = _save(keypair, rnd, server.export_requests())
        elif stage == "aggregate":
            if srnd != rnd:
                raise ValueError(f"aggregate of round {rnd}, but server 1 answered round {srnd}")
            server.import_requests(party)
            ups = {}
            for u, sealed in zip(uids, blobs):
                ups[u] = AggregationUpload.from_bytes(open_sealed(keypair, sealed, "upload", rnd, u)[0])
            share = server.aggregate(ups, float(cfg.get("noise_sigma", 0.0)))
            out = [share.to_bytes()]
            new = _save(keypair, rnd)
        else:
            raise ValueError(f"unknown SecEmb server stage {stage!r}")
    reply["seconds"] = time.perf_counter() - t0
    return reply, out, new, retrieved


def handle_message(msg: FlowerMessage, context: Context, role: str, items: ArrayLike | None = None,
                   grads_fn: Callable[[np.ndarray], Any] | None = None,
                   on_retrieved: Callable[[Context, np.ndarray], object] | None = None) -> FlowerMessage:
    """The ClientApp side of a SecEmb stage (``@app.query("secemb")``):
    ``role`` "server1" for SecEmb's second server, "user" for a user, with
    its ``items`` and ``grads_fn`` (see :func:`handle`).  ``on_retrieved(
    context, rows)`` is called with the user's retrieved rows."""
    cfg, blobs = unpack(msg.content)
    reply, out, new, rows = handle(cfg, blobs, load_state(context, STATE_KEY), role, items, grads_fn)
    save_state(context, STATE_KEY, new)
    if rows is not None and on_retrieved is not None:
        on_retrieved(context, rows)
    return FlowerMessage(pack(reply, out), reply_to=msg)


# ======================================================================= server 0
@dataclass
class SecEmbFlowerResult:
    """Server 0's outcome of a SecEmb round on Flower: the aggregate (m x d
    sum of the uploading users' quantized gradient rows) and dense sum,
    ``users`` (node id -> user id), ``dropouts`` (node id -> (stage,
    reason)), ``stages`` (per stage: wall, largest node compute, server 0's
    compute, bytes down / up)."""
    aggregate: np.ndarray | None = None
    dense: np.ndarray | None = None
    users: dict = dc_field(default_factory=dict)
    uploaded: list = dc_field(default_factory=list)
    dropouts: dict = dc_field(default_factory=dict)
    stages: list = dc_field(default_factory=list)
    wall: float = 0.0

    def summary(self) -> dict:
        return {"protocol": "secemb", "transport": "flower", "wall_seconds": self.wall,
                "users": len(self.users), "uploaded": len(self.uploaded),
                "dropouts": {str(k): list(v) for k, v in self.dropouts.items()},
                "stages": self.stages}


class SecEmbStageRunner:
    """Server 0 of SecEmb over any transport (``exchange(outbox, work=None)``,
    as :func:`secea_fast.flower.records.grid_exchange`).  ``Q``: the m x d
    float item table (public to both servers); ``m_prime``, ``frac_bits``,
    ``n_users`` (default: the number of users), ``dense_size``,
    ``noise_sigma`` (each server's Gaussian noise, Appendix G), ``agg_bits``
    (the aggregation ring Z_2^b, 64 or 32: ``SecEmbParams``)."""

    def __init__(self, exchange: Exchange, *, m_prime: int, frac_bits: int = 16, n_users: int | None = None,
                 dense_size: int = 0, noise_sigma: float = 0.0, threads: int | None = None,
                 agg_bits: int = 64) -> None:
        self.exchange = exchange
        self.agg_bits = agg_bits
        self.m_prime, self.frac_bits, self.n_users = m_prime, frac_bits, n_users
        self.dense_size, self.noise_sigma, self.threads = dense_size, float(noise_sigma), threads
        self.server1: int | None = None
        self.server1_key: bytes | None = None
        self.roles: dict[int, str] = {}

    def _stage(self, name, outbox, res, work=None):
        r = self.exchange(outbox, work) if work is not None else self.exchange(outbox)
        res.stages.append({"stage": name, "nodes": len(outbox), "wall": r.wall, "bytes_down": r.bytes_down,
                           "bytes_up": r.bytes_up, "server_seconds": getattr(r, "work", 0.0),
                           "client_seconds": max((float(c.get("seconds", 0.0)) for c, _ in r.replies.values()),
                                                 default=0.0)})
        return r

    def hello(self, nodes: Sequence[int], res: SecEmbFlowerResult) -> None:
        """The hello stage: find server 1 among ``nodes`` and take its public key."""
        r = self._stage("hello", {x: ({"stage": "hello"}, []) for x in nodes}, res)
        self.roles = {x: c["role"] for x, (c, _) in r.replies.items()}
        s1 = [x for x, role in self.roles.items() if role == "server1"]
        if len(s1) != 1:
            raise RuntimeError(f"SecEmb needs exactly one node with role server1, found {len(s1)}")
        self.server1 = s1[0]
        self.server1_key = bytes(r.replies[self.server1][1][0])
        if len(self.server1_key) != 32:
            raise ValueError("server 1's public key must be 32 bytes")

    def run(self, nodes: Sequence[int], Q: ArrayLike, *, round_index: int = 1) -> SecEmbFlowerResult:
        """One round among ``nodes`` (server 1 and the users)."""
        if isinstance(round_index, bool) or not isinstance(round_index, int) or round_index < 1:
            raise ValueError(f"round_index must be an int >= 1, got {round_index!r}")
        res = SecEmbFlowerResult()
        t_start = time.perf_counter()
        nodes = sorted(int(x) for x in nodes)
        if self.server1 is None or self.server1 not in nodes:
            self.hello(nodes, res)
        users = [x for x in nodes if self.roles.get(x) == "user"]
        if not users:
            raise RuntimeError("SecEmb needs at least one user node")
        Q = np.asarray(Q, dtype=np.float64)
        params = SecEmbParams(m=Q.shape[0], d=Q.shape[1], m_prime=self.m_prime, frac_bits=self.frac_bits,
                              n_users=self.n_users or len(users), dense_size=self.dense_size,
                              agg_bits=self.agg_bits)
        table = encode_table(Q, params)
        base = {"round": int(round_index), "m": params.m, "d": params.d, "m_prime": params.m_prime,
                "frac_bits": params.frac_bits, "n_users": params.n_users,
                "dense_size": params.dense_size, "agg_bits": params.agg_bits}
        uid = {x: i for i, x in enumerate(users)}
        res.users = dict(uid)
        # 2. retrieval requests
        r = self._stage("retrieve", {x: (dict(base, stage="retrieve", uid=uid[x],
                                                 server1_key=self.server1_key), []) for x in users}, res)
        for x, why in r.failed.items():
            res.dropouts[x] = ("retrieve", why)
        live = [x for x in users if x in r.replies]
        reqs = {x: r.replies[x][1] for x in live}
        # 3. server 1 answers (sealed); server 0 answers while it waits
        server0 = Server(0, params, table, self.threads)
        answers0 = {}

        def answer0():
            for x in live:
                answers0[x] = server0.answer(uid[x], RetrievalRequest.from_bytes(reqs[x][0])).to_bytes()
        s1cfg = dict(base, stage="answer", uids=[uid[x] for x in live])
        r = self._stage("answer", {self.server1: (s1cfg, [_table_bytes(table)] + [reqs[x][1] for x in live])},
                        res, answer0)
        self._check_server1(r, "answer")
        if len(r.replies[self.server1][1]) != len(live):
            raise ValueError("server 1 answered a different number of users than it was sent")
        sealed1 = dict(zip(live, r.replies[self.server1][1]))
        # 4. users reconstruct and upload
        r = self._stage("upload", {x: (dict(base, stage="upload", uid=uid[x]),
                                       [answers0[x], sealed1[x]]) for x in live}, res)
        for x, why in r.failed.items():
            res.dropouts[x] = ("upload", why)
        up = [x for x in live if x in r.replies]
        res.uploaded = up
        # 5. server 1's share; server 0's own while it waits
        shares = {}

        def aggregate0():
            ups = {uid[x]: AggregationUpload.from_bytes(r.replies[x][1][0]) for x in up}
            shares[0] = server0.aggregate(ups, self.noise_sigma)
        r2 = self._stage("aggregate", {self.server1: (dict(base, stage="aggregate", uids=[uid[x] for x in up],
                                                            noise_sigma=self.noise_sigma),
                                                       [r.replies[x][1][1] for x in up])}, res, aggregate0)
        self._check_server1(r2, "aggregate")
        share1 = AggregateShare.from_bytes(r2.replies[self.server1][1][0])
        res.aggregate, res.dense = reconstruct_aggregate(shares[0], share1, params)
        res.wall = time.perf_counter() - t_start
        return res

    def _check_server1(self, r, stage):
        if self.server1 in r.failed:
            raise RuntimeError(f"SecEmb: server 1 (node {self.server1}) was lost in stage {stage}: "
                               f"{r.failed[self.server1]}; no aggregate can be formed without it")


def run_secemb(grid: Grid, Q: ArrayLike, *, m_prime: int, frac_bits: int = 16, n_users: int | None = None,
               dense_size: int = 0, noise_sigma: float = 0.0, min_nodes: int = 2, wait_nodes_s: float = 120.0,
               timeout: float = 300.0, poll: float = 0.05, round_index: int = 1,
               runner: SecEmbStageRunner | None = None) -> SecEmbFlowerResult:
    """One SecEmb round from the ServerApp (server 0): the SuperNodes
    connected to ``grid`` are server 1 and the users.  Pass the previous
    round's ``runner`` (a :class:`SecEmbStageRunner`) to keep server 1's
    key and skip the hello stage."""
    nodes = wait_nodes(grid, min_nodes, wait_nodes_s)
    if runner is None:
        runner = SecEmbStageRunner(grid_exchange(grid, MESSAGE_TYPE, timeout=timeout, poll=poll),
                                   m_prime=m_prime, frac_bits=frac_bits, n_users=n_users,
                                   dense_size=dense_size, noise_sigma=noise_sigma)
    res = runner.run(nodes, Q, round_index=round_index)
    log.info("SecEmb on Flower: %d users (%d uploaded), %.2f s", len(res.users), len(res.uploaded), res.wall)
    return res
