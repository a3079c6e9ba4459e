"""SecEA across processes and hosts, on Flower's transport.

Each SecEA client is a Flower SuperNode (its ClientApp calls
:func:`handle_message` with the entity -> embedding mapping it holds); the
SecEA server is the ServerApp (:func:`run_secea`).  The parties are the
package's own (:class:`secea_fast.protocols.secea.Client` / ``Server``), and
every protocol message is their versioned byte encoding, so a round on
Flower computes exactly what :func:`secea_fast.protocols.secea.run_round`
computes in one process.

Stages (one Flower message to every client and its reply each)
---------------------------------------------------------------
1. ``keys``: the public parameters and the client's index; the client makes
   its X25519 key pair and answers with the public key and its entity count.
2. ``peers``: every client's public key and k = the largest entity count
   (footnote 1); the client agrees the pairwise seeds and uploads its masked
   union terms (eq. 4).
3. ``step`` 0, 1, 2, ...: the pipelined rest of the round (Sec. 4.2-4.4).
   Step 0 carries the server's union sum; each client reconstructs the
   union, sends its padded shares (eq. 11) and the padded queries (eq. 16)
   of its first query blocks.  Every later step delivers to a client the
   shares addressed to it (step 1), the queries addressed to it, and the
   noised responses (eq. 20) to its own queries; the client answers the
   queries, decodes the responses (eq. 22) and sends the queries of its next
   blocks.  A block emitted at step j is answered at step j+1 and decoded
   at step j+2, so the round takes 2 + (blocks per client / blocks per
   stage) + 2 stages: 5 when every block fits in one stage.

Streaming: each step carries at most ``blocks_per_stage`` query blocks per
client (by default as many as fit ``tuning.FLOWER_STAGE_QUERY_BYTES`` of
queries in flight), so the coded queries, which the protocol makes
O(M |E_n|) per client, pass the server in bounded pieces.

State between stages: in deployment every message starts a fresh ClientApp
process, so the client's protocol state (its X25519 private key, seeds,
union, shares y_v, the one-time-pad guard, its own queries of the last
step, its partial results) is saved in the node's ``context.state`` as
versioned bytes (``Client.export_state``).  It stays on the client's
SuperNode: Flower keeps ``context.state`` in the node and never sends it to
the SuperLink.

Dropouts (what each phase tolerates)
-----------------------------------
* A client lost (error reply, or no reply within ``timeout``) before any
  response was released to a querier -- in ``keys``, ``peers``, step 0 or
  step 1 -- restarts the round without it, with fresh keys and shares.  If
  the union was already computed it is kept (sent to the remaining clients
  in place of a new union sum), so the union of the remaining clients,
  which beside the first would reveal the lost client's exclusive entities,
  is never computed.  A restart needs N' >= 2T + 1 remaining clients.
* A client lost after responses started reaching queriers is absorbed by
  the Reed-Solomon decoder: each block decodes from the responses that
  arrived when they are at least k = 2(K+T-1)+1 (with e corrupted and s
  lost correctable when 2e + s <= N - k).  The round does not restart then:
  a querier that had decoded a block from N clients and decoded it again
  without the lost one would learn the lost client's embeddings by the
  difference.  Blocks left with fewer than k responses are reported in
  ``SecEAFlowerResult.failed_blocks``; the default K (eq. 7) leaves no
  redundancy for odd N, so pass a smaller K to tolerate late dropouts.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np
from flwr.app import Context, Message as FlowerMessage
from flwr.serverapp import Grid

from .. import tuning
from .._checks import check_int
from ..protocols.common.inputs import check_local, entity_list
from ..protocols.common.wire import Reader, Writer, check_increasing
from ..protocols.secea import (Client, DecodingError, Message, SecEAParams, Server,
                               default_block_size)
from ..protocols.secea.params import PSU_PRIME
from .records import Exchange, grid_exchange, load_state, log, pack, save_state, unpack, wait_nodes

__all__ = ["MESSAGE_TYPE", "STATE_KEY", "handle", "handle_message", "SecEAStageRunner",
           "SecEAFlowerResult", "run_secea"]


MESSAGE_TYPE = "query.secea"          # Flower message type of every SecEA stage
STATE_KEY = "secea_fast.secea"        # the client's record in context.state
_NODE_MAGIC = b"SEFn"


# ======================================================================= client
def _params(cfg: dict) -> SecEAParams:
    K = int(cfg["K"])
    return SecEAParams(N=int(cfg["N"]), d=int(cfg["d"]), T=int(cfg["T"]),
                       precision=int(cfg["precision"]), bound=float(cfg["bound"]),
                       K=K if K > 0 else None)


@dataclass
class _NodeState:
    """A client's state between stages (saved as bytes in its node)."""
    attempt: int
    client: bytes = b""
    own_share: bytes = b""                             # y_{n,n}, until the shares arrive
    own_queries: dict = dc_field(default_factory=dict)  # block -> q_{n,n,block} bytes
    sums: np.ndarray | None = None
    counts: np.ndarray | None = None
    decoded: set = dc_field(default_factory=set)
    failed: set = dc_field(default_factory=set)

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(sums, counts), which the union step allocates together; ValueError before it."""
        if self.sums is None or self.counts is None:
            raise ValueError("SecEA node state: no sums yet (the union step has not run)")
        return self.sums, self.counts

    def to_bytes(self) -> bytes:
        w = Writer(_NODE_MAGIC).u64(self.attempt).blob(self.client).blob(self.own_share)
        w.u64(len(self.own_queries))
        for b in sorted(self.own_queries):
            w.u64(b).blob(self.own_queries[b])
        w.u64(self.sums is not None)
        if self.sums is not None:
            sums, counts = self.totals()
            w.array(sums.view(np.uint64)).array(counts.view(np.uint64))
        w.array(np.array(sorted(self.decoded), dtype=np.uint64))
        return w.array(np.array(sorted(self.failed), dtype=np.uint64)).bytes()

    @classmethod
    def from_bytes(cls, data) -> "_NodeState":
        """Parse the node's saved state; only the form ``to_bytes`` writes is
        accepted (ValueError otherwise)."""
        r = Reader(data, _NODE_MAGIC, "SecEA node state")
        st = cls(attempt=r.u64(), client=r.blob(), own_share=r.blob())
        blocks = []
        for _ in range(r.u64()):
            blocks.append(r.u64())
            st.own_queries[blocks[-1]] = r.blob()
        check_increasing(blocks, "SecEA node state: own query blocks")
        if r.flag():
            st.sums = r.array(2).view(np.int64)
            st.counts = r.array(1).view(np.int64)
            if st.counts.shape != st.sums.shape[:1]:
                raise ValueError("SecEA node state: sums and counts do not match")
        decoded, failed = r.array(1), r.array(1)
        r.done()
        check_increasing(decoded, "SecEA node state: decoded blocks")
        check_increasing(failed, "SecEA node state: failed blocks")
        st.decoded = {int(x) for x in decoded}
        st.failed = {int(x) for x in failed}
        return st


def _local_rows(local) -> dict:
    if not hasattr(local, "items") or not hasattr(local, "keys"):
        raise TypeError(f"local must be a mapping entity id -> embedding row, got {type(local).__name__}")
    rows = {k: _as_numpy(v) for k, v in local.items()}
    check_local([rows])
    return rows


def _as_numpy(v):
    """A NumPy view of a row: torch tensors (detached, on the CPU) included."""
    if hasattr(v, "detach") and hasattr(v, "cpu"):
        v = v.detach().cpu().numpy()
    return np.asarray(v)


def handle(cfg: dict[str, Any], blobs: list[bytes], state: bytes | None,
           local: dict[Any, Any]) -> tuple[dict[str, Any], list[bytes], bytes, dict[Any, np.ndarray] | None]:
    """One SecEA stage at a client, independent of the transport.

    ``cfg`` / ``blobs``: the server's message (:mod:`secea_fast.flower.records`);
    ``state``: the bytes this function returned at the previous stage of this
    node (None at the first); ``local``: the client's entity -> embedding
    mapping (NumPy rows or torch tensors).  Returns ``(reply_cfg,
    reply_blobs, new_state, result)``; ``result`` is the dict entity ->
    global embedding (eq. 5) once every block of this client is decoded,
    else None."""
    stage = cfg.get("stage")
    params = _params(cfg)
    attempt, rnd = int(cfg["attempt"]), int(cfg["round"])
    ids = entity_list(local, "local")
    secs = {}
    t0 = time.perf_counter()
    if stage == "keys":
        c = Client(int(cfg["party"]), params, ids)
        st = _NodeState(attempt=attempt, client=c.export_state())
        secs["keys"] = time.perf_counter() - t0
        return ({"stage": "keys", "k": len(c.ids), "seconds": secs["keys"]}, [c.public_key],
                st.to_bytes(), None)
    if state is None:
        raise ValueError(f"stage {stage!r} before the keys stage: this node has no SecEA state")
    st = _NodeState.from_bytes(state)
    if st.attempt != attempt:
        raise ValueError(f"stage {stage!r} of attempt {attempt}, but this node is in attempt {st.attempt}")
    c = Client.import_state(params, ids, st.client)
    out = []
    reply = {"stage": stage}
    if stage == "peers":
        c.set_peer_keys(blobs, session=f"attempt {attempt}".encode())
        if cfg.get("psu", True):
            out.append(c.psu_upload(int(cfg["k"]), rnd).to_bytes())
        secs["union"] = time.perf_counter() - t0
    elif stage == "step":
        out, secs, result = _step(c, st, cfg, blobs, local, rnd)
        reply.update(decoded=sorted(st.decoded), failed=sorted(st.failed), done=result is not None)
        st.client = c.export_state()
        reply.update({f"t_{k}": float(v) for k, v in secs.items()})
        return reply, out, st.to_bytes(), result
    else:
        raise ValueError(f"unknown SecEA stage {stage!r}")
    st.client = c.export_state()
    reply.update({f"t_{k}": float(v) for k, v in secs.items()})
    return reply, out, st.to_bytes(), None


def _step(c: Client, st: _NodeState, cfg: dict, blobs: list, local, rnd: int):
    prm = c.params
    N, n = prm.N, c.index
    B = int(cfg["B"])
    secs = {"union": 0.0, "encode": 0.0, "offline": 0.0, "responses": 0.0, "decode": 0.0}
    t = time.perf_counter
    msgs = []
    for b in blobs:
        msgs.append(Message.from_bytes(b, N=N))
    out = []
    # step 0: the union (its sum, or the union kept from an earlier attempt), then the shares
    head = [m for m in msgs if m.kind == "psu_sum"]
    if cfg.get("union") is not None or head:
        t0 = t()
        if head:
            c.psu_finish(head[0])
        else:
            c.set_union(np.frombuffer(cfg["union"], dtype="<u8").astype(np.uint64))
        secs["union"] += t() - t0
        t0 = t()
        for m in c.share(_local_rows(local), rnd):
            if m.receiver == n:
                st.own_share = m.to_bytes()
            else:
                out.append(m.to_bytes())
        secs["encode"] += t() - t0
        st.sums = np.zeros((len(c.ids), prm.d), dtype=np.int64)
        st.counts = np.zeros(len(c.ids), dtype=np.int64)
    shares = [m for m in msgs if m.kind == "share"]
    if shares:
        t0 = t()
        c.receive_shares(shares + [Message.from_bytes(st.own_share, N=N)])
        st.own_share = b""
        secs["encode"] += t() - t0
    # answers: the queries delivered now, then this client's own queries of the last step
    queries = [m for m in msgs if m.kind == "query"]
    queries += [Message.from_bytes(q, N=N) for _, q in sorted(st.own_queries.items())]
    st.own_queries = {}
    t0 = t()
    for q in queries:
        out.append(c.answer(q).to_bytes())
    secs["responses"] += t() - t0
    # decoding of the blocks whose responses are all here
    blocks = c.blocks(B)
    responses: dict[int, dict[int, Message]] = {}     # block -> sender -> response
    for m in msgs:
        if m.kind == "response":
            if m.receiver != n:
                raise ValueError(f"a response for client {m.receiver} was delivered to client {n}")
            responses.setdefault(m.block, {})[m.sender] = m
    t0 = t()
    for b in cfg.get("decode", []):
        b = int(b)
        slots = [responses.get(b, {}).get(v) for v in range(N)]
        try:
            res = c.decode(slots, blocks[b])
        except DecodingError as exc:
            log.warning("client %d: block %d could not be decoded: %s", n, b, exc)
            st.failed.add(b)
            continue
        sums, counts = st.totals()
        sums[blocks[b]] = res.sums
        counts[blocks[b]] = res.counts
        st.decoded.add(b)
    secs["decode"] += t() - t0
    # the queries of the next blocks (offline: independent of the embeddings)
    t0 = t()
    for b in cfg.get("emit", []):
        b = int(b)
        for q in c.iter_queries(rnd, b, blocks[b]):
            if q.receiver == n:
                st.own_queries[b] = q.to_bytes()
            else:
                out.append(q.to_bytes())
    secs["offline"] += t() - t0
    result = None
    if st.sums is not None and len(st.decoded) == len(blocks):
        result = c.finish(*st.totals())
    return out, secs, result


def handle_message(msg: FlowerMessage, context: Context, local: dict[Any, Any],
                   on_result: Callable[[Context, dict[Any, np.ndarray]], object] | None = None) -> FlowerMessage:
    """The ClientApp side of a SecEA stage: call it from the ClientApp's
    handler of ``MESSAGE_TYPE`` messages (``@app.query("secea")``) with the
    embeddings this node holds, and return what it returns::

        @app.query("secea")
        def secea_stage(msg, context):
            return secea_flower.handle_message(msg, context, my_embeddings(context),
                                               on_result=store_global_embeddings)

    ``local``: entity id -> 1-D row (NumPy or torch).  ``on_result(context,
    embeddings)`` is called once, at the stage where this client's last block
    is decoded, with its entities' global embeddings (eq. 5).  The node's
    protocol state lives in ``context.state[STATE_KEY]``."""
    t0 = time.perf_counter()
    cfg, blobs = unpack(msg.content)
    state = None if cfg.get("stage") == "keys" else load_state(context, STATE_KEY)
    reply_cfg, out, new_state, result = handle(cfg, blobs, state, local)
    save_state(context, STATE_KEY, new_state)
    if result is not None and on_result is not None:
        on_result(context, result)
    # the whole handler (parsing, state, protocol work): beside the protocol's own t_* seconds
    reply_cfg["handler_seconds"] = time.perf_counter() - t0
    return FlowerMessage(pack(reply_cfg, out), reply_to=msg)


# ======================================================================= server
@dataclass
class SecEAFlowerResult:
    """What the server of a SecEA round on Flower knows at its end.

    ``parties``: node id -> client index in the final attempt; ``dropped``:
    node id -> (attempt, stage, reason); ``attempts``; ``failed_blocks``:
    (node id, block) that could not be decoded; ``done``: nodes that decoded
    every block; ``stages``: one dict per stage (name, attempt, wall seconds,
    the largest client compute seconds, server seconds, bytes down / up);
    ``union_size``."""
    parties: dict = dc_field(default_factory=dict)
    dropped: dict = dc_field(default_factory=dict)
    attempts: int = 0
    failed_blocks: list = dc_field(default_factory=list)
    done: list = dc_field(default_factory=list)
    stages: list = dc_field(default_factory=list)
    union_size: int = 0
    wall: float = 0.0
    union: np.ndarray | None = None        # sorted entity hashes: pass to the next round

    def phase_table(self) -> dict:
        """Per stage name: wall, compute (largest client + server) and bytes."""
        out: dict[str, dict] = {}
        for s in self.stages:
            row = out.setdefault(s["stage"], {"stages": 0, "wall": 0.0, "client_seconds": 0.0,
                                              "server_seconds": 0.0, "bytes_down": 0, "bytes_up": 0})
            row["stages"] += 1
            for k in ("wall", "client_seconds", "server_seconds", "bytes_down", "bytes_up"):
                row[k] += s[k]
        return out

    def summary(self) -> dict:
        """JSON-serializable: the round's per-stage times and bytes."""
        return {"protocol": "secea", "transport": "flower", "attempts": self.attempts,
                "union_size": self.union_size, "wall_seconds": self.wall,
                "parties": {str(k): v for k, v in self.parties.items()},
                "dropped": {str(k): list(v) for k, v in self.dropped.items()},
                "failed_blocks": [list(x) for x in self.failed_blocks], "done": list(self.done),
                "stages": self.stages, "phases": self.phase_table()}


class _Restart(Exception):
    pass


class SecEAStageRunner:
    """The server's side of a SecEA round over any transport.

    ``exchange(outbox) -> records.StageResult``: sends ``outbox[node] =
    (cfg, blobs)`` to each node and returns their replies and failures
    (:func:`secea_fast.flower.records.grid_exchange` on a Flower Grid).  Parameters as
    :class:`~secea_fast.protocols.secea.SecEAParams` (N is the number of
    nodes); ``block_size``: query rows per block (default
    ``secea.default_block_size(M)``); ``blocks_per_stage``: query blocks per
    client and stage (default: ``tuning.FLOWER_STAGE_QUERY_BYTES`` of queries
    in flight).  ``stage_bytes``: the memory knob, coded queries in flight
    per stage (default ``tuning.FLOWER_STAGE_QUERY_BYTES``): it sets the
    blocks per stage and, when one block per client is more, shrinks the
    block (every process's peak memory follows a stage's bytes; a smaller
    stage costs more stages).  ``union``: the union (sorted hashes, ``SecEAFlowerResult.union``)
    of an earlier round among the same clients: the union is computed once
    before training (Sec. 4.1), so later rounds skip it."""

    def __init__(self, exchange: Exchange, *, d: int, T: int = 1, precision: int = 8, K: int | None = None,
                 bound: float = 100.0, block_size: int | None = None, blocks_per_stage: int | None = None,
                 round_index: int = 1, union: np.ndarray | None = None, stage_bytes: int | None = None) -> None:
        self.exchange = exchange
        self.union = None if union is None else np.ascontiguousarray(union, dtype=np.uint64)
        self.d, self.T, self.precision, self.K, self.bound = d, T, precision, K, bound
        self.block_size, self.blocks_per_stage, self.round = block_size, blocks_per_stage, round_index
        SecEAParams(N=2 * T + 1, d=d, T=T, precision=precision, bound=bound)  # arguments checked now
        if block_size is not None and check_int(block_size, "block_size") < 1:
            raise ValueError("block_size must be >= 1")
        if blocks_per_stage is not None and check_int(blocks_per_stage, "blocks_per_stage") < 1:
            raise ValueError("blocks_per_stage must be >= 1")
        if stage_bytes is not None and check_int(stage_bytes, "stage_bytes") < 1:
            raise ValueError("stage_bytes must be >= 1")
        self.stage_bytes = stage_bytes or tuning.FLOWER_STAGE_QUERY_BYTES

    # ------------------------------------------------------------------
    def run(self, nodes: Sequence[int]) -> SecEAFlowerResult:
        """One round among ``nodes`` (the clients, in party order)."""
        alive = sorted(int(x) for x in nodes)
        res = SecEAFlowerResult()
        t_start = time.perf_counter()
        self._union = self.union
        while True:
            res.attempts += 1
            try:
                self._attempt(alive, res)
                break
            except _Restart as exc:
                lost = exc.args[0]
                alive = [x for x in alive if x not in lost]
                log.warning("SecEA: restarting the round without node(s) %s (attempt %d lost them); "
                            "%d clients remain", sorted(lost), res.attempts, len(alive))
        res.wall = time.perf_counter() - t_start
        res.union = self._union
        return res

    def _params(self, N):
        if N < 2 * self.T + 1:
            raise RuntimeError(f"SecEA cannot run: {N} clients remain, T = {self.T} needs at least "
                               f"{2 * self.T + 1}")
        k_max = (N + 1) // 2 - self.T
        K = None if self.K is None else min(int(self.K), k_max)
        return SecEAParams(N=N, d=self.d, T=self.T, precision=self.precision, bound=self.bound, K=K)

    def _stage(self, name, outbox, res, attempt, server_seconds=0.0):
        r = self.exchange(outbox)
        client = max((float(sum(v for k, v in cfg.items() if k.startswith("t_") or k == "seconds"))
                      for cfg, _ in r.replies.values()), default=0.0)
        handler = max((float(cfg.get("handler_seconds", 0.0)) for cfg, _ in r.replies.values()),
                      default=0.0)
        res.stages.append({"stage": name, "attempt": attempt, "nodes": len(outbox), "wall": r.wall,
                           "client_seconds": client, "client_handler_seconds": handler,
                           "server_route_seconds": 0.0,
                           "server_seconds": server_seconds, "bytes_down": r.bytes_down,
                           "bytes_up": r.bytes_up})
        for node, why in r.failed.items():
            res.dropped[node] = (attempt, name, why)
            log.warning("SecEA: node %s lost in stage %s of attempt %d: %s", node, name, attempt, why)
        return r

    def _attempt(self, alive, res):
        attempt = res.attempts
        params = self._params(len(alive))
        N, rnd = params.N, self.round
        party = {node: i for i, node in enumerate(alive)}
        res.parties = dict(party)
        base = {"attempt": attempt, "round": rnd, "N": N, "d": params.d, "T": params.T,
                "K": params.K, "precision": params.precision, "bound": float(params.bound)}
        # 1. keys
        r = self._stage("keys", {x: (dict(base, stage="keys", party=party[x]), []) for x in alive},
                        res, attempt)
        if r.failed:
            raise _Restart(set(r.failed))
        keys = [r.replies[x][1][0] for x in alive]
        kn = {x: int(r.replies[x][0]["k"]) for x in alive}
        k = max(kn.values())
        server = Server(params)
        # 2. peers (and the union upload, unless a union was already revealed)
        psu = self._union is None
        r = self._stage("peers", {x: (dict(base, stage="peers", k=k, psu=psu), keys) for x in alive},
                        res, attempt)
        if r.failed:
            raise _Restart(set(r.failed))
        first = {}
        if psu:
            t0 = time.perf_counter()
            ups = []
            for x in alive:
                m = Message.from_bytes(r.replies[x][1][0], PSU_PRIME, N)
                if m.kind != "psu" or m.sender != party[x]:
                    raise ValueError(f"node {x}: expected its union upload")
                ups.append(m)
            total = server.psu_sum(ups)
            self._union = server.union
            res.stages[-1]["server_seconds"] += time.perf_counter() - t0
            first = {x: [total.to_bytes()] for x in alive}
            union_cfg = {}
        else:
            union_cfg = {"union": np.ascontiguousarray(self._union, dtype="<u8").tobytes()}
        M = len(self._union)
        res.union_size = M
        # each client's block sends N - 1 padded queries of B x M words; one block per
        # client and stage must fit the stage budget, else the block shrinks
        per_row = N * (N - 1) * M * 8
        B = self.block_size or min(default_block_size(M), max(1, self.stage_bytes // per_row))
        nblocks = {x: -(-kn[x] // B) for x in alive}
        bps = self.blocks_per_stage or max(1, self.stage_bytes // (per_row * B))
        self._steps(alive, party, params, server, base, B, bps, nblocks, first, union_cfg, res, attempt)

    def _steps(self, alive, party, params, server, base, B, bps, nblocks, first, union_cfg, res, attempt):
        N, k = params.N, params.response_len
        node_of = {i: x for x, i in party.items()}
        live = set(alive)
        nxt = {x: 0 for x in alive}
        shares_to = {x: [] for x in alive}
        queries_to = {x: [] for x in alive}
        responses_to = {x: [] for x in alive}
        answered = {}                 # (querier node, block) -> responders that answered
        emitted = {x: [] for x in alive}   # blocks emitted at the last step
        to_decode = {x: [] for x in alive}
        released = False
        step = 0
        while True:
            outbox = {}
            for x in sorted(live):
                cfg = dict(base, stage="step", step=step, B=B)
                blobs = list(first.get(x, [])) if step == 0 else []
                if step == 0:
                    cfg.update(union_cfg)
                blobs += shares_to[x] + queries_to[x] + responses_to[x]
                emit = list(range(nxt[x], min(nblocks[x], nxt[x] + bps)))
                nxt[x] += len(emit)
                cfg.update(emit=emit, decode=to_decode[x])
                if blobs or emit or to_decode[x] or step == 0:
                    outbox[x] = (cfg, blobs)
            if not outbox:
                break
            if any(to_decode[x] for x in outbox):
                released = True
            r = self._stage("step", outbox, res, attempt)
            lost = set(r.failed)
            if lost and not released:
                raise _Restart(lost)
            live -= lost
            for x in lost:
                res.failed_blocks.extend((x, b) for b in range(nblocks[x]) if (x, b) not in res.failed_blocks)
            t_route = time.perf_counter()
            shares_to = {x: [] for x in live}
            queries_to = {x: [] for x in live}
            responses_to = {x: [] for x in live}
            t_server = 0.0
            for x, (cfg, blobs) in sorted(r.replies.items()):
                if x not in live:
                    continue
                if cfg.get("done"):
                    res.done.append(x)
                res.failed_blocks.extend((x, int(b)) for b in cfg.get("failed", [])
                                         if (x, int(b)) not in res.failed_blocks)
                for blob in blobs:
                    m = Message.from_bytes(blob, N=N)
                    if m.sender != party[x]:
                        raise ValueError(f"node {x} sent a message as client {m.sender}")
                    dst = node_of.get(m.receiver)
                    if m.kind == "share" and step == 0:
                        if dst in live:
                            shares_to[dst].append(blob)
                    elif m.kind == "query":
                        if dst in live:
                            queries_to[dst].append(blob)
                    elif m.kind == "response":
                        t0 = time.perf_counter()
                        y = server.noise(m)
                        t_server += time.perf_counter() - t0
                        answered.setdefault((dst, m.block), set()).add(party[x])
                        if dst in live:
                            responses_to[dst].append(y.to_bytes())
                    else:
                        raise ValueError(f"node {x} sent an unexpected {m.kind} message at step {step}")
            res.stages[-1]["server_seconds"] += t_server
            res.stages[-1]["server_route_seconds"] = time.perf_counter() - t_route - t_server
            # blocks emitted at the last step were answered now: decode them next step
            to_decode = {x: [] for x in live}
            for x in live:
                for b in emitted[x]:
                    got = len(answered.get((x, b), ()))
                    if got >= k:
                        to_decode[x].append(b)
                    elif not released and lost:
                        raise _Restart(lost)
                    elif not released:
                        raise RuntimeError(f"node {x} block {b}: {got} responses, fewer than k = {k}, "
                                           "and no node was lost")
                    else:
                        log.warning("SecEA: node %s block %d has %d responses, fewer than k = %d: "
                                    "not decodable", x, b, got, k)
                        res.failed_blocks.append((x, b))
                emitted[x] = [int(b) for b in outbox[x][0]["emit"]] if x in outbox else []
            step += 1


def run_secea(grid: Grid, *, d: int, T: int = 1, precision: int = 8, K: int | None = None, bound: float = 100.0,
              block_size: int | None = None, blocks_per_stage: int | None = None, stage_bytes: int | None = None,
              nodes: Sequence[int] | None = None, min_nodes: int | None = None, timeout: float = 300.0,
              poll: float = 0.05, wait_nodes_s: float = 120.0, round_index: int = 1,
              union: np.ndarray | None = None) -> SecEAFlowerResult:
    """One SecEA round from a ServerApp: the SuperNodes connected to
    ``grid`` (or ``nodes``) are the clients.  Waits up to ``wait_nodes_s``
    seconds for ``min_nodes`` nodes to connect (default: 2T + 1).
    ``timeout``: seconds a stage may wait for a node before counting it as
    lost; ``poll``: the pull interval.  Every client's global embeddings stay
    at the client (``handle_message``'s ``on_result``).  ``union``: the
    previous round's ``result.union`` to skip the entity union; give every
    round its own ``round_index``."""
    if nodes is None:
        nodes = wait_nodes(grid, 2 * T + 1 if min_nodes is None else check_int(min_nodes, "min_nodes"),
                           wait_nodes_s)
    runner = SecEAStageRunner(grid_exchange(grid, MESSAGE_TYPE, timeout=timeout, poll=poll), d=d, T=T,
                              precision=precision, K=K, bound=bound, block_size=block_size,
                              blocks_per_stage=blocks_per_stage, stage_bytes=stage_bytes,
                              round_index=round_index,
                              union=union)
    log.info("SecEA on Flower: %d clients, d = %d, T = %d", len(nodes), d, T)
    res = runner.run(nodes)
    log.info("SecEA on Flower: done in %.2f s, %d stages, %d attempt(s)", res.wall, len(res.stages),
             res.attempts)
    return res
