"""SecEmb across processes and hosts, on Flower's transport.

SecEmb (Mai et al. 2025, Sec. 4, Algorithm 3) has two non-colluding servers
and many users.  Flower runs one ServerApp per run and every message passes
its SuperLink, so:

* server 0 is the ServerApp (:func:`run_secemb`);
* server 1 is a SuperNode whose ClientApp calls :func:`handle_message` with
  ``role="server1"``;
* each user is a SuperNode whose ClientApp calls :func:`handle_message`
  with ``role="user"``, its item ids and a function from the retrieved rows
  to its gradient rows.

This module only packs messages, keeps each node's session in its
``context.state`` and makes the Flower calls: every protocol rule lives in
the sessions of :mod:`secea_fast.protocols.secemb.session` (authenticated
keys, stage order, round binding, answer once, aggregate once over at least
``min_users``, the sealed channel whose key and nonce never serve twice),
which ``run_round`` drives in process too.  Parties are the federation's
roster (:mod:`secea_fast.protocols.common.roster`): server 1 is the roster
party of role ``server1``, users those of role ``user``.  Everything a user
sends to server 1 and back is sealed end to end, under server 1's key that
server 1 signed with its roster identity and each user checks against its
own roster copy, so server 0 and the SuperLink relay ciphertext of a fixed
length.  No reply carries timings: a node's compute seconds go to its own
log.

Stages (each one Flower message per addressed node and its reply)
-------------------------------------------------------------------
1. ``hello`` (once per runner) to every node
   (:func:`secea_fast.flower.admission.identify_nodes`): each node proves
   its roster name; the runner takes exactly the roster's server 1 and
   users and refuses to start with a stranger or a missing party.  Server
   1 adds its signed key (bound to the run).  Unlike SecEA's, this
   admission stays a stage of its own: the first protocol stage
   (``retrieve``) goes to the users only and carries server 1's signed
   key, which server 0 learns from server 1's answer here, so it cannot
   be sent to every node before the mapping is known.  A runner's later
   rounds keep the mapping and skip it.
2. ``retrieve`` to the users: the round, the public parameters and server
   1's signed key; each user answers with its request to server 0 and its
   signed, sealed request to server 1.
3. ``answer`` to server 1: the public table and the sealed requests; server
   1 answers each user once (eq. 3), sealed.  Server 0 answers its own
   requests.
4. ``upload`` to the users: server 0's answer and server 1's sealed answer;
   each user reconstructs its rows (eq. 4), computes its gradient rows and
   answers with its upload to server 0 and, sealed, to server 1.
5. ``aggregate`` to server 1: the sealed uploads; server 1 aggregates once,
   over the users it answered whose upload opened, if they are at least
   its ``min_users``, and answers with its share and the users it covers.
   Server 0 computes its share over the same users and reconstructs.

Bad nodes: a user whose reply does not parse, verify or fit its stage (an
unopenable sealed part, a flipped bit, a reply with one part, a garbage
request) is a dropout, logged with the reason; a user lost in ``upload`` is
a SecEmb dropout (Appendix L.2).  Past the tolerance -- server 1 lost or
deviating, or fewer than ``min_users`` users left -- the round fails with
one RuntimeError naming the nodes.  Malformed stage config at a handler is a
ValueError naming the field.
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

from ..executor import Executor, LocalExecutor
from ..protocols.common.roster import Roster
from ..protocols.common.wire import Reader, Writer
from ..protocols.secemb import (MIN_USERS, ProtocolError, SecEmbParams, Server0Session, Server1Session,
                                UserSession, encode_table)
from .admission import HELLO, NodeIdentity, hello_reply, identify_nodes, node_identity
from .records import Exchange, grid_exchange, log, pack, unpack, wait_nodes
from .state import load_state, save_state

__all__ = ["MESSAGE_TYPE", "STATE_KEY", "ROLES", "handle", "handle_message", "server1_executor", "SecEmbStageRunner",
           "SecEmbFlowerResult", "run_secemb", "config_int"]


MESSAGE_TYPE = "query.secemb"
STATE_KEY = "secea_fast.secemb"
ROLES = ("user", "server1")
_PARAM_KEYS = {"m": 1, "d": 1, "m_prime": 1, "frac_bits": 0, "n_users": 1, "dense_size": 0, "agg_bits": 32}


def config_int(cfg: dict[str, Any], key: str, minimum: int = 0, what: str = "SecEmb config") -> int:
    """``cfg[key]`` as an int >= ``minimum``; ValueError naming ``what`` and the field."""
    if key not in cfg:
        raise ValueError(f"{what}: field {key!r} is missing")
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{what}: field {key!r} must be an int, got {type(v).__name__}")
    if v < minimum:
        raise ValueError(f"{what}: field {key!r} must be >= {minimum}, got {v}")
    return int(v)


def _params(cfg: dict) -> SecEmbParams:
    vals = {k: config_int(cfg, k, lo) for k, lo in _PARAM_KEYS.items()}
    try:
        return SecEmbParams(**vals)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"SecEmb config: {exc}") from None


def _cfg_bytes(cfg: dict, key: str) -> bytes:
    v = cfg.get(key)
    if not isinstance(v, (bytes, bytearray)):
        raise ValueError(f"SecEmb stage config: field {key!r} is missing or not bytes")
    return bytes(v)


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
def handle(cfg: dict[str, Any], blobs: list[bytes], state: bytes | None, role: str, items: ArrayLike | None = None,
           grads_fn: Callable[[np.ndarray], Any] | None = None, *, me: NodeIdentity, node_id: int,
           run: int | str | bytes, min_users: int = MIN_USERS, noise_sigma: float = 0.0,
           executor: Executor | None = None) -> tuple[dict[str, Any], list[bytes], bytes, np.ndarray | None]:
    """One SecEmb stage at a node, independent of the transport: returns
    ``(reply_cfg, reply_blobs, new_state, retrieved)``.

    ``role``: "user" or "server1" (must be this node's role in ``me``'s
    roster); ``me``: the node's roster and identity; ``node_id``: its
    Flower node id (signed in the hello stage); ``run``: the run id every
    key and signature is bound to; ``min_users``: server 1's least number
    of users in an aggregate and ``noise_sigma`` its Gaussian noise (its
    own node's settings: server 0's ``noise_sigma`` field can only raise
    the noise); ``executor``: server 1's own workers for its answers and
    aggregation (``secemb.sharded``; never server 0's).  A user passes
    ``items`` and ``grads_fn(rows) -> grads`` or ``(grads, dense)``.
    ``retrieved`` is the user's rows at the ``upload`` stage, else None.
    Malformed config: ValueError naming the field; a message that breaks a
    protocol rule: :class:`~secea_fast.protocols.secemb.ProtocolError`."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if me.role != role:
        raise ValueError(f"role: this node is {me.name!r} of role {me.role!r} in the roster, not {role!r}")
    if not isinstance(cfg, dict):
        raise ValueError("SecEmb stage config must be a dict")
    stage = cfg.get("stage")
    t0 = time.perf_counter()
    retrieved = None
    if role == "user":
        user = (UserSession(me.roster, me.identity, run=run) if not state
                else UserSession.import_state(me.roster, me.identity, state))
        if stage == HELLO:
            reply, out = hello_reply(cfg, me, node_id, MESSAGE_TYPE)
        elif items is None or grads_fn is None:
            raise ValueError("a SecEmb user needs items and grads_fn")
        elif stage == "retrieve":
            rnd, params = config_int(cfg, "round", 1), _params(cfg)
            reply, out = {"stage": stage}, list(user.retrieve(rnd, params, items, _cfg_bytes(cfg, "server1_key")))
        elif stage == "upload":
            rnd = config_int(cfg, "round", 1)
            if len(blobs) != 2:
                raise ValueError(f"SecEmb upload stage: {len(blobs)} parts, expected 2 (server 0's and server "
                                 "1's answers)")
            retrieved = user.reconstruct(rnd, blobs[0], blobs[1])
            got = grads_fn(retrieved)
            grads, dense = got if isinstance(got, tuple) else (got, None)
            reply, out = {"stage": stage}, list(user.upload(rnd, grads, dense))
        else:
            raise ValueError(f"SecEmb stage config: field 'stage' is {stage!r}, not a user stage")
        new = user.export_state()
    else:
        s1 = (Server1Session(me.roster, me.identity, run=run, min_users=min_users, noise_sigma=noise_sigma,
                             executor=executor)
              if not state
              else Server1Session.import_state(me.roster, me.identity, state, executor=executor))
        if stage == HELLO:
            reply, out = hello_reply(cfg, me, node_id, MESSAGE_TYPE)
            reply["server1_key"] = s1.key_message()
        elif stage == "answer":
            rnd, params = config_int(cfg, "round", 1), _params(cfg)
            n = config_int(cfg, "count", 0)
            if len(blobs) != n + 1:
                raise ValueError(f"SecEmb answer stage: {len(blobs)} parts for field 'count' = {n} users "
                                 "(the table and one sealed request each)")
            answers, refused = s1.answer(rnd, params, _table_from(blobs[0], params),
                                         {str(i): b for i, b in enumerate(blobs[1:])})
            out = [answers.get(str(i), b"") for i in range(n)]
            reply = {"stage": stage, "refused": [f"{k}: {v}" for k, v in refused.items()]}
        elif stage == "aggregate":
            rnd = config_int(cfg, "round", 1)
            sigma = cfg.get("noise_sigma", 0.0)
            if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not sigma >= 0:
                raise ValueError(f"SecEmb stage config: field 'noise_sigma' must be a number >= 0, got {sigma!r}")
            try:
                share, refused = s1.aggregate(rnd, {str(i): b for i, b in enumerate(blobs)}, float(sigma))
                reply, out = {"stage": stage, "refused": [f"{k}: {v}" for k, v in refused.items()]}, [share]
            except ProtocolError as exc:           # a refusal server 0 must report, not a lost node
                reply, out = {"stage": stage, "error": str(exc)}, []
        else:
            raise ValueError(f"SecEmb stage config: field 'stage' is {stage!r}, not a server 1 stage")
        new = s1.export_state()
    # a node's compute seconds go to its own log, never into a reply (they would tell |I_u|)
    log.info("SecEmb %s %s stage %s: %.4f s", role, me.name, stage, time.perf_counter() - t0)
    return reply, out, new, retrieved


def server1_executor(node_config: dict[str, Any]) -> Executor | None:
    """Server 1's own workers from its node config: a fork pool of
    ``workers`` processes (an int >= 1; 1 or absent: none, server 1
    computes in its ClientApp process).  The pool is server 1's alone:
    server 0's workers come from its own ServerApp (never one pool for
    both, ``secemb.sharded.check_server_executors``)."""
    if "workers" not in node_config:
        return None
    workers = config_int(dict(node_config), "workers", 1, "SecEmb node config")
    return LocalExecutor(workers) if workers > 1 else None


def handle_message(msg: FlowerMessage, context: Context, role: str, items: ArrayLike | None = None,
                   grads_fn: Callable[[np.ndarray], Any] | None = None,
                   on_retrieved: Callable[[Context, np.ndarray], object] | None = None,
                   me: NodeIdentity | None = None, executor: Executor | None = None) -> FlowerMessage:
    """The ClientApp side of a SecEmb stage (``@app.query("secemb")``):
    ``role`` "server1" for SecEmb's second server, "user" for a user, with
    its ``items`` and ``grads_fn`` (see :func:`handle`).  ``me``: the
    node's roster identity (default: from its node config's
    ``roster-file``/``identity-file``, :func:`~.admission.node_identity`);
    server 1's ``min_users`` is its node config's ``min-users`` (default
    :data:`~secea_fast.protocols.secemb.MIN_USERS`) and its Gaussian noise
    its node config's ``noise-sigma`` (default 0; server 0 may ask for
    more, never less).  Server 1 shards its answers and aggregation over
    ``executor`` if given (e.g. a ``RayExecutor`` joined to server 1's own
    cluster), else over a fork pool of its node config's ``workers``
    processes if set (default: in this process).  ``on_retrieved(
    context, rows)`` is called with the user's retrieved rows."""
    cfg, blobs = unpack(msg.content)
    me = me or node_identity(context.node_config, context.run_config)
    nc = dict(context.node_config)
    min_users = config_int(nc, "min-users", 1) if "min-users" in nc else MIN_USERS
    sigma = nc.get("noise-sigma", 0.0)
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not 0 <= sigma < float("inf"):
        raise ValueError(f"SecEmb node config: field 'noise-sigma' must be a finite number >= 0, got {sigma!r}")
    if executor is None and role == "server1":
        executor = server1_executor(nc)
    reply, out, new, rows = handle(cfg, blobs, load_state(context, STATE_KEY, me), role, items, grads_fn, me=me,
                                   node_id=int(context.node_id), run=int(context.run_id), min_users=min_users,
                                   noise_sigma=float(sigma), executor=executor)
    save_state(context, STATE_KEY, new, me)
    if rows is not None and on_retrieved is not None:
        on_retrieved(context, rows)
    return FlowerMessage(pack(reply, out), reply_to=msg)


# ======================================================================= server 0
@dataclass
class SecEmbFlowerResult:
    """Server 0's outcome of a SecEmb round on Flower: the aggregate (m x d
    sum of the summed users' quantized gradient rows) and dense sum,
    ``users`` (node id -> roster name), ``uploaded`` (the nodes summed),
    ``dropouts`` (node id -> (stage, reason)), ``stages`` (per stage: wall,
    server 0's compute, bytes down / up; no node timings: nodes keep them)."""
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
    as :func:`secea_fast.flower.records.grid_exchange`), driving a
    :class:`~secea_fast.protocols.secemb.Server0Session`.  ``roster``: the
    federation (one ``server1``, the ``user`` parties); ``run``: the run id
    (Flower's ``context.run_id``: the nodes bind to theirs);
    ``m_prime``, ``frac_bits``, ``n_users`` (default: the number of users),
    ``dense_size``, ``noise_sigma`` (each server's Gaussian noise, Appendix
    G), ``agg_bits`` (64 or 32: ``SecEmbParams``), ``min_users``;
    ``executor``: server 0's own workers for its answers and aggregation
    (``secemb.sharded``; never server 1's)."""

    def __init__(self, exchange: Exchange, *, roster: Roster, run: int | str | bytes, m_prime: int,
                 frac_bits: int = 16, n_users: int | None = None, dense_size: int = 0, noise_sigma: float = 0.0,
                 threads: int | None = None, agg_bits: int = 64, min_users: int = MIN_USERS,
                 executor: Executor | None = None) -> None:
        self.exchange = exchange
        self.roster = roster
        self.session = Server0Session(roster, run=run, min_users=min_users, noise_sigma=noise_sigma,
                                      threads=threads, executor=executor)
        self.agg_bits, self.min_users = agg_bits, min_users
        self.m_prime, self.frac_bits, self.n_users = m_prime, frac_bits, n_users
        self.dense_size, self.noise_sigma, self.threads = dense_size, float(noise_sigma), threads
        self.names: dict[int, str] = {}
        self.server1: int | None = None
        self.server1_key: bytes | None = None

    def _stage(self, name, outbox, res, work=None):
        r = self.exchange(outbox, work) if work is not None else self.exchange(outbox)
        self._record(name, len(outbox), r, res)
        return r

    @staticmethod
    def _record(name, nodes, r, res):
        res.stages.append({"stage": name, "nodes": nodes, "wall": r.wall, "bytes_down": r.bytes_down,
                           "bytes_up": r.bytes_up, "server_seconds": getattr(r, "work", 0.0)})

    def hello(self, nodes: Sequence[int], res: SecEmbFlowerResult) -> None:
        """The hello stage: map ``nodes`` to exactly the roster's server 1 and
        users (AdmissionError otherwise) and take server 1's signed key."""
        names, r = identify_nodes(self.exchange, self.roster, nodes, MESSAGE_TYPE, roles=ROLES)
        self._record(HELLO, len(list(nodes)), r, res)
        s1 = [x for x, n in names.items() if self.roster.role(n) == "server1"]
        self.names, self.server1 = names, s1[0]
        try:
            self.server1_key = _cfg_bytes(r.replies[self.server1][0], "server1_key")
            self.session.server1_key(self.server1_key)
        except ValueError as exc:
            raise RuntimeError(f"SecEmb: server 1 (node {self.server1}) sent no valid signed key: {exc}") from None

    def _fail(self, res, why):
        raise RuntimeError(f"SecEmb round failed: {why}; dropped users: "
                           + (", ".join(f"node {x} ({self.names.get(x)}) at {s}: {w}"
                                        for x, (s, w) in res.dropouts.items()) or "none"))

    def _drop(self, res, x, stage, why):
        res.dropouts[x] = (stage, why)
        log.warning("SecEmb: user node %d (%s) dropped at stage %s: %s", x, self.names.get(x), stage, why)

    def _check_server1(self, r, stage, res):
        if self.server1 in r.failed:
            self._fail(res, f"server 1 (node {self.server1}) was lost in stage {stage}: {r.failed[self.server1]}; "
                       "no aggregate can be formed without it")
        rcfg, _ = r.replies[self.server1]
        if rcfg.get("error"):
            self._fail(res, f"server 1 (node {self.server1}) refused stage {stage}: {rcfg['error']}")

    def _enough(self, live, res, stage):
        if len(live) < self.min_users:
            self._fail(res, f"after stage {stage} only {len(live)} user(s) are left, below min_users = "
                            f"{self.min_users}")

    def run(self, nodes: Sequence[int], Q: ArrayLike, *, round_index: int = 1) -> SecEmbFlowerResult:
        """One round among ``nodes`` (server 1 and the users, exactly the roster's)."""
        if isinstance(round_index, bool) or not isinstance(round_index, int) or round_index < 1:
            raise ValueError(f"round_index must be an int >= 1, got {round_index!r}")
        res = SecEmbFlowerResult()
        t_start = time.perf_counter()
        nodes = sorted(int(x) for x in nodes)
        if set(nodes) != set(self.names):
            self.hello(nodes, res)
        s0, rnd = self.session, int(round_index)
        users = [x for x in nodes if self.roster.role(self.names[x]) == "user"]
        Q = np.asarray(Q, dtype=np.float64)
        params = SecEmbParams(m=Q.shape[0], d=Q.shape[1], m_prime=self.m_prime, frac_bits=self.frac_bits,
                              n_users=self.n_users or len(users), dense_size=self.dense_size,
                              agg_bits=self.agg_bits)
        table = encode_table(Q, params)
        s0.begin(rnd, params, table)
        base = {"round": rnd, "m": params.m, "d": params.d, "m_prime": params.m_prime,
                "frac_bits": params.frac_bits, "n_users": params.n_users,
                "dense_size": params.dense_size, "agg_bits": params.agg_bits}
        res.users = {x: self.names[x] for x in users}
        # 2. retrieval requests
        r = self._stage("retrieve", {x: (dict(base, stage="retrieve", server1_key=self.server1_key), [])
                                     for x in users}, res)
        answers0, sealed_req = {}, {}
        for x in users:
            try:
                if x in r.failed:
                    raise ProtocolError(r.failed[x])
                parts = r.replies[x][1]
                if len(parts) != 2:
                    raise ProtocolError(f"a retrieve reply with {len(parts)} part(s), expected 2")
                answers0[x] = s0.answer(rnd, self.names[x], parts[0])
                sealed_req[x] = parts[1]
            except ProtocolError as exc:
                self._drop(res, x, "retrieve", str(exc))
        live = list(answers0)
        self._enough(live, res, "retrieve")
        # 3. server 1 answers (sealed)
        r = self._stage("answer", {self.server1: (dict(base, stage="answer", count=len(live)),
                                                  [_table_bytes(table)] + [sealed_req[x] for x in live])}, res)
        self._check_server1(r, "answer", res)
        sealed1 = r.replies[self.server1][1]
        if len(sealed1) != len(live):
            self._fail(res, f"server 1 (node {self.server1}) answered {len(sealed1)} parts for {len(live)} users")
        why = dict(str(w).split(": ", 1) for w in r.replies[self.server1][0].get("refused", []) if ": " in str(w))
        for i, x in enumerate(list(live)):
            if not sealed1[i]:
                self._drop(res, x, "answer", f"server 1 refused its request: {why.get(str(i), 'no reason')}")
                live.remove(x)
        ans1 = {x: sealed1[i] for i, x in enumerate(answers0) if sealed1[i]}
        self._enough(live, res, "answer")
        # 4. users reconstruct and upload
        r = self._stage("upload", {x: (dict(base, stage="upload"), [answers0[x], ans1[x]]) for x in live}, res)
        ups0, ups1 = {}, {}
        for x in live:
            if x in r.failed:
                self._drop(res, x, "upload", r.failed[x])
            elif len(r.replies[x][1]) != 2:
                self._drop(res, x, "upload", f"an upload reply with {len(r.replies[x][1])} part(s), expected 2")
            else:
                ups0[self.names[x]], ups1[x] = r.replies[x][1]
        for name, why0 in s0.aggregate(rnd, ups0).items():
            x = next(x for x in live if self.names[x] == name)
            self._drop(res, x, "upload", why0)
            ups1.pop(x, None)
        up = list(ups1)
        self._enough(up, res, "upload")
        # 5. server 1's share; server 0's own while it waits
        r2 = self._stage("aggregate", {self.server1: (dict(base, stage="aggregate", noise_sigma=self.noise_sigma),
                                                      [ups1[x] for x in up])}, res, s0.precompute)
        self._check_server1(r2, "aggregate", res)
        why = dict(str(w).split(": ", 1) for w in r2.replies[self.server1][0].get("refused", []) if ": " in str(w))
        for k, w in why.items():
            if k.isdigit() and int(k) < len(up):
                self._drop(res, up[int(k)], "aggregate", f"server 1 refused its upload: {w}")
        parts = r2.replies[self.server1][1]
        try:
            if len(parts) != 1:
                raise ProtocolError(f"a share reply with {len(parts)} parts")
            res.aggregate, res.dense, summed = s0.reconstruct(rnd, parts[0])
        except ProtocolError as exc:
            self._fail(res, f"server 1 (node {self.server1}): {exc}")
        res.uploaded = [x for x in up if self.names[x] in summed]
        res.wall = time.perf_counter() - t_start
        return res


def run_secemb(grid: Grid, Q: ArrayLike, *, roster: Roster, run: int | str | bytes, m_prime: int,
               frac_bits: int = 16, n_users: int | None = None, dense_size: int = 0, noise_sigma: float = 0.0,
               min_users: int = MIN_USERS, min_nodes: int = 2, wait_nodes_s: float = 120.0, timeout: float = 300.0,
               poll: float = 0.05, round_index: int = 1,
               runner: SecEmbStageRunner | None = None, executor: Executor | None = None) -> SecEmbFlowerResult:
    """One SecEmb round from the ServerApp (server 0): the SuperNodes
    connected to ``grid`` must be exactly ``roster``'s server 1 and users.
    Pass the previous round's ``runner`` (a :class:`SecEmbStageRunner`) to
    keep the node mapping and server 1's key and skip the hello stage;
    ``executor``: server 0's own workers (see :class:`SecEmbStageRunner`)."""
    nodes = wait_nodes(grid, min_nodes, wait_nodes_s)
    if runner is None:
        runner = SecEmbStageRunner(grid_exchange(grid, MESSAGE_TYPE, timeout=timeout, poll=poll), roster=roster,
                                   run=run, m_prime=m_prime, frac_bits=frac_bits, n_users=n_users,
                                   dense_size=dense_size, noise_sigma=noise_sigma, min_users=min_users,
                                   executor=executor)
    res = runner.run(nodes, Q, round_index=round_index)
    log.info("SecEmb on Flower: %d users (%d summed), %.2f s", len(res.users), len(res.uploaded), res.wall)
    return res
