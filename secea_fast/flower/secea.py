"""SecEA across processes and hosts, on Flower's transport.

Each SecEA client is a Flower SuperNode (its ClientApp calls
:func:`handle_message` with the entity -> embedding mapping it holds); the
SecEA server is the ServerApp (:func:`run_secea`).  Both ends drive the
protocol's sans-I/O sessions
(:class:`secea_fast.protocols.secea.session.ClientSession` /
``ServerSession``), which own every rule of the round (stage order, round
and attempt binding, signed keys, answer-once, the restart policy, decode
checking, bad nodes as dropouts); this module keeps only packing,
``context.state`` and Flower calls, so a round on Flower computes exactly
what :func:`secea_fast.protocols.secea.run_round` computes in one process.

Stages (one Flower message to every client and its reply each)
---------------------------------------------------------------
The pairwise seeds come from the roster's keys and a fresh per-attempt
salt (:func:`secea_fast.protocols.secea.session.static_pair_seed`), so
no stage exchanges X25519 keys.  Admission rides on the first stage of
attempt 1: the runner sends the same envelope (public parameters, the
roster's client names, the salt), plus a fresh challenge
(:mod:`secea_fast.flower.admission`), to every connected node; each client
finds its index as its name's place in the party set, and its reply
carries its signed answer to the challenge.  The runner takes exactly the
roster's clients and refuses to go on (``AdmissionError``, naming the node
or party) with a stranger, a missing party or two nodes claiming one,
before any other stage.  The envelope holds nothing but public values, so
a stranger gets no more than a stand-alone ``hello`` stage would give it
(``docs/THREAT_MODEL.md``).  A restart (attempt 2, ...) goes to the
admitted nodes only, each with its explicit index ``party``.

1. ``peers``: k, a public bound on the entity counts (``k=``; Sec. 4.1,
   footnote 1); the client derives the pairwise seeds and uploads its
   masked union terms (eq. 4) and its count.  Without a public bound, or
   with a layer that announces keys (SecEA-PHE's Paillier keys), or
   unauthenticated (``roster=None``: fresh X25519 keys), a ``keys`` stage
   comes first (the counts and the layer's signed keys in
   its replies; ``peers`` then relays the keys and the largest count).
2. ``step`` 0, 1, 2, ...: the pipelined rest of the round (Sec. 4.2-4.4).
   Step 0 carries the server's union sum; each client reconstructs the
   union, sends its padded shares (eq. 11) and the padded queries (eq. 16)
   of its first query blocks.  Every later step delivers to a client the
   shares addressed to it (step 1), the queries addressed to it, and the
   noised responses (eq. 20) to its own queries; the client answers the
   queries, decodes the responses (eq. 22) and sends the queries of its next
   blocks.  A block emitted at step j is answered at step j+1 and decoded
   at step j+2, so the round takes 1 + (blocks per client / blocks per
   stage) + 2 stages: 4 when every block fits in one stage (one more with
   a ``keys`` stage).  No two of them can merge: each needs the replies of
   the one before (``secea_fast.protocols.secea.session``, "What cannot
   merge").

Streaming: each step carries at most ``blocks_per_stage`` query blocks per
client (by default as many as fit ``tuning.FLOWER_STAGE_QUERY_BYTES`` of
queries in flight), so the coded queries, which the protocol makes
O(M |E_n|) per client, pass the server in bounded pieces.

State between stages: in deployment every message starts a fresh ClientApp
process, so the client's session (its pairwise seeds, union,
shares y_v, the one-time-pad guard, its stage position) is saved in the
node's ``context.state`` as versioned bytes (``ClientSession.export_state``).
It stays on the client's SuperNode: Flower keeps ``context.state`` in the
node and never sends it to the SuperLink.  A node's compute seconds stay
there too (its log); no reply carries a timing.

Dropouts (the session's restart policy): a client lost or deviating while
no client has answered a query restarts the round without it, keeping the
union already computed; once a client has answered, Reed-Solomon decoding
absorbs the loss (2e + s <= N - k) or the querier's blocks fail (reported
in ``SecEAFlowerResult.failed_blocks``), and every client refuses a later
attempt of the round (a querier would otherwise learn a lost client's
embeddings by difference).  The default K (eq. 7) leaves no redundancy for
odd N: pass a smaller K to tolerate late dropouts.

SecEA-PHE (Tang, Zhu, Li, Sun 2022, Sec. III-B) runs through the same
adapter: pass a :class:`~secea_fast.protocols.secea_phe.layer.PaillierLayer`
to the runner (``layer``) and a factory of fresh ones to every client's
handler; the sessions then carry the Paillier keys in the ``keys`` and
``peers`` stages and the responses as ciphertexts, with every rule above
unchanged, and each client's Paillier key pair stays in its node's
``context.state`` with the rest of its session.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np
from flwr.app import Context, Message as FlowerMessage
from flwr.serverapp import Grid

from .._checks import check_int
from ..protocols.common.roster import Roster
from ..protocols.secea.layer import Layer
from ..protocols.secea.session import ClientSession, SaltLedger, ServerSession
from .admission import (CHALLENGE, NodeIdentity, admission_claim, admit, new_challenge,
                        node_identity, strip_claim)
from .records import Exchange, grid_exchange, log, pack, unpack, wait_nodes
from .state import load_state, save_state

__all__ = ["MESSAGE_TYPE", "STATE_KEY", "SALT_LEDGER_KEY", "handle", "handle_message", "SecEAStageRunner",
           "SecEAFlowerResult", "run_secea", "FileSaltLedger"]


MESSAGE_TYPE = "query.secea"          # Flower message type of every SecEA stage
STATE_KEY = "secea_fast.secea"        # the client's record in context.state
SALT_LEDGER_KEY = "salt-ledger"       # node config: the file of the salts this node has opened attempts with


class FileSaltLedger(SaltLedger):
    """A node's :class:`~secea_fast.protocols.secea.session.SaltLedger` on
    disk (node config ``salt-ledger``): one hex salt per line, appended
    under an exclusive lock and synced before the salt is used, so a salt
    is refused in every later run of this node, whatever its
    ``context.state``.  Salts are public: the file holds no secret."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path)

    def claim(self, salt: bytes) -> None:
        """Record ``salt`` in the file; ValueError naming the file if it is
        there already (or the file cannot be written)."""
        import fcntl
        h = bytes(salt).hex()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "r+") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                f.seek(0)
                if any(line.strip() == h for line in f):
                    raise ValueError(f"salt ledger {self.path}: this salt was claimed before")
                f.write(h + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise ValueError(f"salt ledger {self.path}: {exc}") from None


# ======================================================================= client
def handle(cfg: dict[str, Any], blobs: list[bytes], state: bytes | None, local: dict[Any, Any],
           me: NodeIdentity | None, node_id: int = 0, seconds: dict[str, float] | None = None, *,
           layer: Callable[[], Layer] | None = None, salts: SaltLedger | None = None
           ) -> tuple[dict[str, Any], list[bytes], bytes | None, dict[Any, np.ndarray] | None]:
    """One SecEA stage at a client, independent of the transport.

    ``cfg`` / ``blobs``: the server's message (:mod:`secea_fast.flower.records`);
    ``state``: the bytes this function returned at the previous stage of this
    node (None at the first); ``local``: the client's entity -> embedding
    mapping (NumPy rows or torch tensors); ``me``: this node's roster and
    identity (:func:`~secea_fast.flower.admission.node_identity`; None only
    for an unauthenticated measurement); ``node_id``: Flower's id of this
    node (signed in its answer to the admission challenge, which the first
    ``keys`` stage carries); ``seconds``: a dict this
    function fills with the stage's compute seconds per phase (the node's
    own record: never in the reply).  Returns ``(reply_cfg,
    reply_blobs, new_state, result)``; ``result`` is the dict entity ->
    global embedding (eq. 5) once every block of this client is decoded,
    else None.  ``layer``: makes a fresh session layer (SecEA-PHE:
    ``lambda: PaillierLayer(key_bits, ...)``; the saved state fills it with
    this client's key pair); None for plain SecEA.  ``salts``: the node's
    salt ledger (a salt seen before, in any run, is refused).  A refused stage raises
    ``ProtocolError`` (a ValueError) and leaves the state as it was."""
    if not isinstance(cfg, dict):
        raise ValueError("SecEA stage: cfg must be a dict")
    claim: dict[str, Any] = {}
    if CHALLENGE in cfg:
        # admission folded into the first keys stage: answer the challenge beside the key
        if me is None:
            raise ValueError("SecEA stage: field 'challenge' but this node has no roster identity")
        if cfg.get("stage") not in ("keys", "peers"):
            raise ValueError(f"SecEA stage: field 'challenge' in a {cfg.get('stage')!r} stage (only the first, "
                             "keys or peers, has it)")
        claim = admission_claim(cfg, me, node_id, MESSAGE_TYPE)
        cfg = {k: v for k, v in cfg.items() if k != CHALLENGE}
        parties = cfg.get("parties")
        if not isinstance(parties, (list, tuple)) or me.name not in parties:
            # a roster party this round does not take: the claim alone, so the runner can name it
            return dict(claim, stage=cfg.get("stage")), [], state, None
    roster, ident = (None, None) if me is None else (me.roster, me.identity)
    fresh = None if layer is None else layer()
    if state is None:
        session = ClientSession(roster, ident, local, layer=fresh, salts=salts)
    else:
        session = ClientSession.import_state(state, roster, ident, local, layer=fresh, salts=salts)
    try:
        reply, out = session.receive(cfg, blobs)
    except ValueError as exc:
        if not claim:
            raise
        # refused (e.g. a keys stage of a round this client already answered in): still
        # answer the challenge, so the runner admits this node and drops it as the session's
        # rules say (as a refusal after a stand-alone hello did), or names it if it is a stranger
        log.warning("SecEA client %s: %s stage refused: %s", me.name if me else node_id, cfg.get("stage"), exc)
        return dict(claim, stage=cfg.get("stage"), refused=str(exc)), [], state, None
    if claim:
        reply = dict(reply, **claim)
    if seconds is not None:
        seconds.update(session.seconds)
    if session.seconds:
        # this node's compute seconds: its own log, never the reply
        log.info("SecEA client %s: %s", ident.name if ident else node_id,
                 ", ".join(f"{k} {v:.3f} s" for k, v in sorted(session.seconds.items())))
    return reply, out, session.export_state(), session.result


def handle_message(msg: FlowerMessage, context: Context, local: dict[Any, Any],
                   on_result: Callable[[Context, dict[Any, np.ndarray]], object] | None = None,
                   default_name: str | None = None, run_config: Mapping[str, Any] | None = None,
                   on_seconds: Callable[[Context, dict[str, Any], dict[str, float]], object] | None = None,
                   layer: Callable[[], Layer] | None = None) -> FlowerMessage:
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
    roster identity comes from its node config (``roster-file``,
    ``identity-file``) or, in simulation, the run config's ``roster-dir``
    (``run_config``, default ``context.run_config``) and ``default_name``.
    ``on_seconds(context, cfg, seconds)``: called with the stage's compute
    seconds per phase, for the node's own log or summary file (they are
    never sent to the server).  ``layer``: as :func:`handle` (SecEA-PHE).
    The session lives in ``context.state[STATE_KEY]`` and in its sealed
    journal (:func:`~secea_fast.flower.state.save_state`); with node config
    ``salt-ledger`` (a file path on the node) the salts of every opened
    attempt are kept there across runs and a replayed one is refused
    (:class:`FileSaltLedger`)."""
    cfg, blobs = unpack(msg.content)
    me = node_identity(context.node_config, context.run_config if run_config is None else run_config,
                       default_name)
    state = load_state(context, STATE_KEY, me)
    secs: dict[str, float] = {}
    ledger = context.node_config.get(SALT_LEDGER_KEY)
    reply_cfg, out, new_state, result = handle(cfg, blobs, state, local, me, int(context.node_id), secs,
                                               layer=layer,
                                               salts=FileSaltLedger(str(ledger)) if ledger else None)
    if on_seconds is not None and secs:
        on_seconds(context, cfg, secs)
    if new_state is not None:
        save_state(context, STATE_KEY, new_state, me)
    if result is not None and on_result is not None:
        on_result(context, result)
    return FlowerMessage(pack(reply_cfg, out), reply_to=msg)


# ======================================================================= server
@dataclass
class SecEAFlowerResult:
    """What the server of a SecEA round on Flower knows at its end.

    ``names``: node id -> roster name (admission); ``parties``: node
    id -> client index in the final attempt; ``dropped``: node id ->
    (attempt, stage, reason); ``attempts``; ``failed_blocks``: (node id,
    block) that could not be decoded; ``unchecked``: (node id, block)
    decoded without redundancy (``DecodeResult.checked`` False); ``done``:
    nodes that decoded every block; ``stages``: one dict per stage (name,
    attempt, wall seconds, the server's own seconds, bytes down / up: what
    the server measures itself; no client reports a timing);
    ``union_size``."""
    names: dict = dc_field(default_factory=dict)
    parties: dict = dc_field(default_factory=dict)
    dropped: dict = dc_field(default_factory=dict)
    attempts: int = 0
    failed_blocks: list = dc_field(default_factory=list)
    unchecked: list = dc_field(default_factory=list)
    done: list = dc_field(default_factory=list)
    stages: list = dc_field(default_factory=list)
    union_size: int = 0
    wall: float = 0.0
    union: np.ndarray | None = None        # sorted entity hashes: pass to the next round
    protocol: str = "secea"                # the sessions' layer: "secea" or "secea-phe"

    def phase_table(self) -> dict:
        """Per stage name: wall, the server's compute and bytes."""
        out: dict[str, dict] = {}
        for s in self.stages:
            row = out.setdefault(s["stage"], {"stages": 0, "wall": 0.0, "server_seconds": 0.0,
                                              "bytes_down": 0, "bytes_up": 0})
            row["stages"] += 1
            for k in ("wall", "server_seconds", "bytes_down", "bytes_up"):
                row[k] += s[k]
        return out

    def summary(self) -> dict:
        """JSON-serializable: the round's per-stage times and bytes."""
        return {"protocol": self.protocol, "transport": "flower", "attempts": self.attempts,
                "union_size": self.union_size, "wall_seconds": self.wall,
                "names": {str(k): v for k, v in self.names.items()},
                "parties": {str(k): v for k, v in self.parties.items()},
                "dropped": {str(k): list(v) for k, v in self.dropped.items()},
                "failed_blocks": [list(x) for x in self.failed_blocks],
                "unchecked": [list(x) for x in self.unchecked], "done": list(self.done),
                "stages": self.stages, "phases": self.phase_table()}


class SecEAStageRunner:
    """The server's side of a SecEA round over any transport: a
    :class:`~secea_fast.protocols.secea.session.ServerSession` driven stage
    by stage, its first stage carrying the admission challenge.

    ``exchange(outbox) -> records.StageResult``: sends ``outbox[node] =
    (cfg, blobs)`` to each node and returns their replies and failures
    (:func:`secea_fast.flower.records.grid_exchange` on a Flower Grid).
    ``roster``: the federation's roster; the round takes exactly its
    parties of role ``client``.  ``roster=None`` is an unauthenticated
    measurement run (the benchmarks' baseline): no admission, every node
    given to :meth:`run` a party (named ``node-<id>``), keys neither signed
    nor checked; the nodes must run ``handle`` with ``me=None``.  Never
    for a deployment.  Parameters as
    :class:`~secea_fast.protocols.secea.SecEAParams`; ``block_size``: query
    rows per block (default ``secea.default_block_size(M)``);
    ``blocks_per_stage``: query blocks per client and stage (default:
    ``stage_bytes`` of queries in flight); ``stage_bytes``: the memory knob,
    coded queries in flight per stage (default
    ``tuning.FLOWER_STAGE_QUERY_BYTES``): it sets the blocks per stage and,
    when one block per client is more, shrinks the block.  ``union``: the
    union (sorted hashes, ``SecEAFlowerResult.union``) of an earlier round
    among the same clients (Sec. 4.1: computed once before training).
    ``hello_exchange``: the exchange of the first stage, which carries the
    admission challenge (default ``exchange``): the first message of a run
    also installs the App on every node, so it may need a longer timeout.
    ``layer``: the sessions' layer (a
    :class:`~secea_fast.protocols.secea_phe.layer.PaillierLayer` for
    SecEA-PHE; default plain SecEA)."""

    def __init__(self, exchange: Exchange, roster: Roster | None, *, d: int, T: int = 1, precision: int = 8,
                 K: int | None = None, bound: float = 100.0, block_size: int | None = None,
                 blocks_per_stage: int | None = None, round_index: int = 1, union: np.ndarray | None = None,
                 stage_bytes: int | None = None, require_checked: bool = False,
                 hello_exchange: Exchange | None = None, layer: Layer | None = None, k: int | None = None) -> None:
        if roster is not None and not isinstance(roster, Roster):
            raise TypeError(f"roster must be a Roster (or None: unauthenticated), got {type(roster).__name__}")
        self.exchange, self.roster = exchange, roster
        self.hello_exchange = hello_exchange or exchange
        self.layer = Layer() if layer is None else layer
        self.kw = dict(d=d, T=T, precision=precision, K=K, bound=bound, block_size=block_size,
                       blocks_per_stage=blocks_per_stage, stage_bytes=stage_bytes, round_index=round_index,
                       union=union, require_checked=require_checked, layer=layer, k=k)
        # every argument checked now, before any node is contacted
        ServerSession(roster, roster.names("client") if roster is not None else ["a", "b", "c"],
                      **self.kw)    # type: ignore[arg-type]

    def _admit(self, outbox: dict, nodes: list[int]) -> tuple[dict[int, str], Any]:
        """The first stage with admission folded in: the keys envelope of
        attempt 1, the same for every node (no ``party``: each client finds
        its index in ``parties``), plus a fresh challenge, to every
        connected node; node id -> roster name from the replies (AdmissionError
        for a stranger, a missing party or two nodes claiming one)."""
        assert self.roster is not None
        common = [{k: v for k, v in cfg.items() if k != "party"} for cfg, _ in outbox.values()]
        if any(c != common[0] for c in common) or any(blobs for _, blobs in outbox.values()):
            raise RuntimeError("SecEA: the first stage differs between parties, so it cannot carry the "
                               "admission challenge")
        challenge = new_challenge()
        cfg = dict(common[0], **{CHALLENGE: challenge})
        r = self.hello_exchange({x: (dict(cfg), []) for x in nodes})
        names = admit(r, self.roster, nodes, challenge, MESSAGE_TYPE, roles=("client",))
        r.replies = {x: (strip_claim(c), b) for x, (c, b) in r.replies.items()}
        return names, r

    def run(self, nodes: Sequence[int]) -> SecEAFlowerResult:
        """One round among ``nodes`` (the connected SuperNodes)."""
        res = SecEAFlowerResult()
        res.protocol = self.layer.name
        t_start = time.perf_counter()
        nodes = sorted(int(x) for x in nodes)
        names: dict[int, str] | None = None
        if self.roster is None:
            names = {x: f"node-{x}" for x in nodes}
            parties = list(names.values())
        else:
            parties = self.roster.names("client")
        node: dict[str, int] = {} if names is None else {name: x for x, name in names.items()}
        session = ServerSession(self.roster, parties, **self.kw)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        outbox = session.start()
        first = True
        while outbox:
            server_s = time.perf_counter() - t0
            stage = next(iter(outbox.values()))[0]["stage"]
            step = next(iter(outbox.values()))[0].get("step")
            if names is None:
                names, r = self._admit(outbox, nodes)
                node = {name: x for x, name in names.items()}
                res.names = dict(names)
            elif first:
                r = self.hello_exchange({node[x]: env for x, env in outbox.items()})
                res.names = dict(names)
            else:
                r = self.exchange({node[x]: env for x, env in outbox.items()})
            first = False
            for x, why in r.failed.items():
                log.warning("SecEA: node %s lost in stage %s of attempt %d: %s", x, stage,
                            session.result.attempts, why)
            t0 = time.perf_counter()
            try:
                outbox = session.receive({names[x]: rep for x, rep in r.replies.items() if x in names},
                                         {names[x]: why for x, why in r.failed.items() if x in names})
            finally:
                res.stages.append({"stage": stage, "step": step, "attempt": session.result.attempts,
                                   "nodes": len(r.replies)
                                   + len(r.failed), "wall": r.wall, "server_seconds": server_s,
                                   "bytes_down": r.bytes_down, "bytes_up": r.bytes_up})
        sr = session.result
        res.attempts, res.union_size, res.union = sr.attempts, sr.union_size, sr.union
        res.parties = {node[x]: i for x, i in sr.parties.items()}
        res.dropped = {node[x]: v for x, v in sr.dropped.items()}
        res.failed_blocks = [(node[x], b) for x, b in sr.failed_blocks]
        res.unchecked = [(node[x], b) for x, b in sr.unchecked]
        res.done = [node[x] for x in sr.done]
        res.wall = time.perf_counter() - t_start
        return res


def run_secea(grid: Grid, roster: Roster, *, d: int, T: int = 1, precision: int = 8, K: int | None = None,
              bound: float = 100.0, block_size: int | None = None, blocks_per_stage: int | None = None,
              stage_bytes: int | None = None, nodes: Sequence[int] | None = None, timeout: float = 300.0,
              poll: float = 0.05, wait_nodes_s: float = 120.0, round_index: int = 1,
              union: np.ndarray | None = None, require_checked: bool = False,
              layer: Layer | None = None, k: int | None = None) -> SecEAFlowerResult:
    """One SecEA round from a ServerApp among the ``roster``'s clients:
    waits up to ``wait_nodes_s`` seconds for as many SuperNodes as the
    roster has clients to connect to ``grid`` (or takes ``nodes``), then
    runs the round; its first stage carries the admission challenge (a
    stranger or a missing party refuses the round before any other stage).
    ``timeout``: seconds a stage may wait for a node before counting it as
    lost (the first stage, which also installs the App on the nodes, waits
    up to ``max(timeout, wait_nodes_s)``); ``poll``:
    the pull interval.  Every
    client's global embeddings stay at the client (``handle_message``'s
    ``on_result``).  ``union``: the previous round's ``result.union`` to
    skip the entity union; give every round its own ``round_index``.
    ``layer``: the sessions' layer (SecEA-PHE: a ``PaillierLayer``, and the
    clients' handlers a factory of the same settings)."""
    if not isinstance(roster, Roster):
        raise TypeError(f"roster must be a Roster, got {type(roster).__name__}")
    if nodes is None:
        nodes = wait_nodes(grid, len(roster.names("client")), wait_nodes_s)
    runner = SecEAStageRunner(grid_exchange(grid, MESSAGE_TYPE, timeout=timeout, poll=poll), roster, d=d, T=T,
                              precision=precision, K=K, bound=bound, block_size=block_size,
                              blocks_per_stage=blocks_per_stage, stage_bytes=stage_bytes,
                              round_index=check_int(round_index, "round_index"), union=union,
                              require_checked=require_checked, layer=layer, k=k,
                              hello_exchange=grid_exchange(grid, MESSAGE_TYPE, timeout=max(timeout, wait_nodes_s),
                                                           poll=poll))
    log.info("%s on Flower: %d nodes, d = %d, T = %d", "SecEA" if layer is None else layer.name, len(nodes), d, T)
    res = runner.run(nodes)
    log.info("SecEA on Flower: done in %.2f s, %d stages, %d attempt(s)", res.wall, len(res.stages),
             res.attempts)
    return res
