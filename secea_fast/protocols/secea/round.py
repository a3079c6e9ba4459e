"""A SecEA round with every party simulated in this process (or in worker
processes): phases separated and timed, bytes counted, queries streamed in
entity blocks, entity parallelism over processes.

A round, for N clients and the server (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 4):

1. ``union``  (once, before training): ``Client.psu_upload`` ->
   ``Server.psu_sum`` -> ``Client.psu_finish``.
2. ``encode``: ``Client.share`` -> relay -> ``Client.receive_shares``.
3. per query block of client n (jobs spread over processes):
   ``offline``: ``Client.queries`` (independent of embeddings);
   ``responses``: ``Client.answer`` at every v (the response products;
   the ``product`` sub-phase includes the query decryption fused into them,
   ``linalg.PackedRight.mul_decrypt``);
   ``noise``: ``Server.noise`` (offline-able, eq. 20);
   ``decode``: ``Client.decode``.

Parallelism: blocks are independent (each uses its own PRG domains), so
they are the shards of an :mod:`secea_fast.executor`: by default a ``fork``
process pool that inherits the parties and the shares y_v copy-on-write
(shared, read-only pages; only block indices and the decoded rows cross
process boundaries), or Ray actors that read them from the object store.
The result is bit-identical for any executor and number of processes.
Each worker's kernels run one thread.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ... import tuning
from ..._checks import check_int
from .._inputs import EntityId, EntityRows, Local, check_local, check_pairs, entity_list, id_bytes, local_ids, \
    local_items
from ...executor import Executor
from .._blocks import apportion_wall, resolve_executor, run_blocks
from ..common.rounds import ProgressFactory, RoundResult
from .messages import Message
from .params import SecEAParams
from ..common.roster import Roster
from .. import _secea_local       # a module, not names: it imports this package's parties
from .loopback import FaultyLoopback, Loopback, Transport, drive_checked
from .session import ClientSession, ServerSession, default_block_size

__all__ = ["SecEARoundResult", "EntityRows", "run_round", "aggregate", "entity_union", "default_block_size",
           "plaintext_sums", "PHASES"]

PHASES = ("offline", "responses", "all")
_BLOCK_PHASES = ("offline", "responses", "noise", "decode")


@dataclass
class SecEARoundResult(RoundResult[SecEAParams]):
    """A SecEA round: the common fields of :class:`RoundResult` (``bytes``
    are the bytes through the server) and, per client n, its entities'
    global embeddings (eq. 5), the quantized sums and the holder counts."""
    params: SecEAParams  # the type argument, named here for the API reference (pdoc)
    embeddings: list = dc_field(default_factory=list)   # per client: id -> global embedding (eq. 5)
    # per client: the same global embeddings as one 2-D float array, a row
    # per entity in the order of the client's input (dict keys or EntityRows ids)
    rows: list = dc_field(default_factory=list)
    sums: list = dc_field(default_factory=list)         # per client: (|E_n|, d) int64 quantized sums
    counts: list = dc_field(default_factory=list)       # per client: (|E_n|,) holders of each entity
    union_size: int = 0
    # the round's entity union (sorted uint64 hashes): pass it as
    # ``run_round(union=...)`` to the next round of the same clients
    union: np.ndarray | None = None
    faulty: list = dc_field(default_factory=list)       # (querier, responder) flagged
    # (querier, block) decoded from exactly k = 2(K+T-1)+1 responses: no
    # redundancy, so a corrupted response there would have gone unnoticed
    # (``DecodeResult``); empty when every block was checked
    unchecked: list = dc_field(default_factory=list)

    PROTOCOL = "secea"
    PHASES = ("union", "encode", "offline", "responses", "product", "noise", "decode")

    @property
    def checked(self) -> bool:
        """Whether every block was decoded with redundancy to spare (a
        corrupted response would have been detected, see ``unchecked``)."""
        return not self.unchecked


def _block_job(S, job):
    """One query block (n, b, members) of client n: its queries to every
    responder, the responses, the server noise and the decoding.  ``S``:
    the round's read-only state (parties, drop/corrupt sets, round); with
    ``S["upto"]`` = "offline" the block stops after generating its queries,
    with "responses" after answering them (throughput of single phases)."""
    n, b, members = job
    clients, server, drop, corrupt = S["clients"], S["server"], S["drop"], S["corrupt"]
    require_checked = S.get("require_checked", False)
    rnd, upto = S["round"], S.get("upto", "all")
    t = {"offline": 0.0, "responses": 0.0, "noise": 0.0, "decode": 0.0}
    prod0 = sum(c.product_seconds for c in clients)
    nbytes = {"offline": 0, "responses": 0}
    resps = []
    queries = clients[n].iter_queries(rnd, b, members)
    for v in range(len(clients)):
        # the block's N queries are built together (iter_queries, pads
        # streamed to memory); each is answered as it is handed out
        t0 = time.process_time()
        q = next(queries)
        t["offline"] += time.process_time() - t0
        if v != n:
            nbytes["offline"] += 2 * q.nbytes      # up to the server and down to v
        if (n, v) in drop or upto == "offline":
            resps.append(None)
            continue
        t0 = time.process_time()
        a = clients[v].answer(q)
        t["responses"] += time.process_time() - t0
        if upto == "responses":
            resps.append(None)
            continue
        if (n, v) in corrupt:
            a = Message(a.kind, a.sender, a.receiver, a.round, a.block,
                        (a.data + np.uint64(1)) % np.uint64(clients[v].params.p))
        t0 = time.process_time()
        y = server.noise(a)
        t["noise"] += time.process_time() - t0
        nbytes["responses"] += a.nbytes + y.nbytes
        resps.append(y)
    t["product"] = sum(c.product_seconds for c in clients) - prod0
    if upto != "all":
        return (n, members, None, None, (), None), t, nbytes
    t0 = time.process_time()
    res = clients[n].decode(resps, members, verify=require_checked)
    t["decode"] += time.process_time() - t0
    return (n, members, res.sums, res.counts, res.faulty, b if not res.checked else None), t, nbytes


def plaintext_sums(local: Local, params: SecEAParams) -> list[tuple[np.ndarray, np.ndarray]]:
    """EmbAvg in the clear on the quantized embeddings: per client, the exact
    (sums, counts) SecEA must reproduce bit for bit."""
    fx = params.fx
    tot: dict[bytes, list[Any]] = {}            # id -> [sum of quantized rows, count]
    for emb in local:
        for key, vec in local_items(emb):
            q = fx.quantize(np.asarray(vec, dtype=np.float64).reshape(1, -1))[0].astype(object)
            k = id_bytes(key)
            if k in tot:
                tot[k][0] += q
                tot[k][1] += 1
            else:
                tot[k] = [q.copy(), 1]
    out = []
    for emb in local:
        keys = [id_bytes(x) for x in local_ids(emb)]
        out.append((np.array([tot[k][0] for k in keys], dtype=np.int64).reshape(len(keys), -1),
                    np.array([tot[k][1] for k in keys], dtype=np.int64)))
    return out


def run_round(local: Local, *, T: int = 1, precision: int = 8, K: int | None = None, bound: float = 100.0,
              block_size: int | None = None, processes: int | None = None,
              drop: Iterable[tuple[int, int]] | None = None, corrupt: Iterable[tuple[int, int]] | None = None,
              progress: ProgressFactory | None = None, verify: bool = False, rnd: int = 1, params: SecEAParams | None = None,
              threads: int | None = None, executor: Executor | None = None, upto: str = "all",
              require_checked: bool = False, authenticate: bool = True,
              union: ArrayLike | None = None) -> SecEARoundResult:
    """One SecEA round for all parties: ``local[n]`` is client n's dict
    entity id -> 1-D float embedding, or the same as arrays,
    :class:`EntityRows` (integer ids and a 2-D row array: no dict is built;
    the result is the same bit for bit, and ``result.rows[n]`` holds the
    global embeddings in the order of its ids).  ``processes``: worker processes for
    the per-block phases (a local fork pool), or ``executor``: any
    :class:`secea_fast.executor.Executor` (e.g. a ``RayExecutor``); the
    result is bit-identical either way.  ``drop`` / ``corrupt``: sets of
    (querier, responder) pairs whose responses are lost / altered (tests of
    the Reed-Solomon path).  ``verify``: compare with the plaintext sums and
    raise AssertionError on any difference.  Blocks decoded from exactly
    k = 2(K+T-1)+1 responses (no redundancy: a corrupted response is
    neither corrected nor detected) are listed in the result's
    ``unchecked``; ``require_checked=True`` refuses them instead
    (``DecodingError``, see ``Client.decode``).  ``threads``: threads of each
    response product (default: the library default with one process, 1 with
    several).  ``upto``: "all" (default), or "offline" / "responses" to stop
    every block after that phase -- throughput measurement of one phase
    (``secea-fast bench throughput``); nothing is decoded then and the
    result's embeddings are empty.  ``wall["blocks"]`` is the wall time of
    the per-block stage.  ``union``: the ``union`` of an earlier round's
    result among the same clients and entity sets: the private union (Sec.
    4.1, one-time in a deployment) is not rerun, so a training loop pays it
    once; a union missing a client's entity is refused.  ``progress``: a
    factory ``(total, label) ->``
    :class:`~secea_fast.protocols.common.rounds.Meter` stepped once per
    block on the executor path; None: no display.

    One process (no ``executor``, ``processes`` 1 or None, ``upto="all"``):
    the round is the protocol's sessions
    (:mod:`~secea_fast.protocols.secea.session`) driven over an in-memory
    :class:`~secea_fast.protocols.secea.loopback.Loopback`, every client
    with a roster identity (a fresh roster of ``client-<n>``) signing its
    key and checking its peers'; ``drop`` / ``corrupt`` are a
    :class:`~secea_fast.protocols.secea.loopback.FaultyLoopback` around it.
    ``authenticate=False`` runs the same sessions without a roster (no
    signatures): only to measure what authentication costs.  Otherwise the
    per-block phases run on the executor, the same parties' block schedule
    (throughput measurements, ``secea-fast bench``)."""
    d = check_local(local, arrays=True)
    if upto not in PHASES:
        raise ValueError(f"upto must be one of {PHASES}, got {upto!r}")
    if verify and upto != "all":
        raise ValueError("verify needs upto='all'")
    N = len(local)
    kept = None if union is None else np.asarray(union)
    if kept is not None and (kept.dtype != np.uint64 or kept.ndim != 1):
        raise TypeError(f"union must be a 1-D uint64 array (a result's union), got dtype {kept.dtype}, "
                        f"shape {kept.shape}")
    if params is None:
        params = SecEAParams(N=N, d=d, T=T, precision=precision, K=K, bound=bound)
    elif params.N != N or params.d != d:
        raise ValueError("params do not match the clients' data (N or d)")
    sessions = executor is None and processes in (None, 1) and upto == "all"
    executor = resolve_executor(executor, processes)
    drop, corrupt = check_pairs(drop, N, "drop"), check_pairs(corrupt, N, "corrupt")
    if sessions:
        return _run_sessions(local, params, block_size=block_size, drop=drop, corrupt=corrupt,
                             verify=verify, rnd=rnd, require_checked=require_checked,
                             authenticate=authenticate, union=kept)
    secs: dict[str, float] = {}
    wall: dict[str, float] = {}
    nbytes: dict[str, int] = {}

    # --- parties and the one-time entity union
    w0 = time.perf_counter()
    clients, server = _secea_local.make_parties([local_ids(emb) for emb in local], params)
    M = _secea_local.union_and_share(clients, server, local, rnd, secs, wall, nbytes, w0, union=kept)
    if upto != "offline":
        # the responders' packed shares, made before the workers fork: one
        # copy, shared by every worker (2 processes x N x 5 MB did not fit in
        # L3 at the MovieLens-1M shape), counted with the sharing
        t0, c0 = time.perf_counter(), time.process_time()
        for c in clients:
            c.prepare_responses()
        secs["encode"] += time.process_time() - c0
        wall["encode"] += time.perf_counter() - t0

    # --- per-block phases
    B = default_block_size(M) if block_size is None else check_int(block_size, "block_size")
    jobs = [(n, b, mem) for n, c in enumerate(clients) for b, mem in enumerate(c.blocks(B))]
    for ph in _BLOCK_PHASES + ("product",):
        secs[ph] = 0.0
    for c in clients:
        c.threads = threads
    nbytes["offline"] = nbytes["responses"] = 0
    sums = [np.zeros((len(c.ids), d), dtype=np.int64) for c in clients]
    counts = [np.zeros(len(c.ids), dtype=np.int64) for c in clients]
    faulty, unchecked = set(), set()
    state = dict(clients=clients, server=server, drop=drop, corrupt=corrupt, round=rnd, upto=upto,
                 require_checked=bool(require_checked))

    def collect(res):
        n, members, s, cnt, bad, blk = res
        if s is not None:
            sums[n][members] = s
            counts[n][members] = cnt
        faulty.update((n, v) for v in bad)
        if blk is not None:
            unchecked.add((n, blk))

    wall["blocks"] = wall_blocks = run_blocks(executor, _block_job, jobs, state, collect,
                                              label="SecEA blocks", progress=progress,
                                              secs=secs, nbytes=nbytes)
    busy = sum(secs[ph] for ph in _BLOCK_PHASES) or 1.0
    wall["product"] = wall_blocks * secs["product"] / busy
    apportion_wall(wall, secs, _BLOCK_PHASES, wall_blocks)
    rows = ([c.finish_rows(s, cnt) for c, s, cnt in zip(clients, sums, counts)]
            if upto == "all" else [])
    embeddings = [dict(zip(c.ids, r)) for c, r in zip(clients, rows)]
    if verify:
        for n, (s_ref, c_ref) in enumerate(plaintext_sums(local, params)):
            if not (np.array_equal(s_ref, sums[n]) and np.array_equal(c_ref, counts[n])):
                raise AssertionError(f"client {n}: SecEA sums differ from the plaintext sums")
    return SecEARoundResult(params=params, seconds=secs, wall=wall, bytes=nbytes,
                            verified=True if verify else None, processes=executor.processes,
                            embeddings=embeddings, rows=rows, sums=sums, counts=counts, union_size=M,
                            union=clients[0].union, faulty=sorted(faulty), unchecked=sorted(unchecked))


def _verify(local, params, sums, counts):
    for n, (s_ref, c_ref) in enumerate(plaintext_sums(local, params)):
        if not (np.array_equal(s_ref, sums[n]) and np.array_equal(c_ref, counts[n])):
            raise AssertionError(f"client {n}: SecEA sums differ from the plaintext sums")


def _run_sessions(local: Local, params: SecEAParams, *, block_size, drop, corrupt, verify, rnd,
                  require_checked, authenticate, union) -> SecEARoundResult:
    """run_round in one process: the sessions over a loopback (see run_round)."""
    N = params.N
    names = [f"client-{n}" for n in range(N)]
    w0 = time.perf_counter()
    roster, ids = Roster.make([(x, "client") for x in names]) if authenticate else (None, {})
    clients = {x: ClientSession(roster, ids.get(x), local[n]) for n, x in enumerate(names)}
    server = ServerSession(roster, names, d=params.d, T=params.T, precision=params.precision, K=params.K,
                           bound=params.bound, block_size=block_size, round_index=rnd,
                           require_checked=require_checked, union=union)
    loop = Loopback(clients)
    transport: Transport = loop if not (drop or corrupt) else FaultyLoopback(
        loop, parties=names, drop=drop, corrupt=corrupt, p=params.p)
    sess = [clients[x] for x in names]
    res, srv, _ = drive_checked(server, transport, sess, "SecEA")
    wall_all = time.perf_counter() - w0
    secs = {ph: 0.0 for ph in SecEARoundResult.PHASES}
    for c in sess:
        for ph, v in c.seconds.items():
            ph = "union" if ph == "keys" else ph
            secs[ph] = secs.get(ph, 0.0) + v
        if c.client is not None:
            secs["product"] += c.client.product_seconds
    for ph, v in srv.items():
        secs[ph] += v
    nbytes: dict[str, int] = {"union": 0, "encode": 0, "offline": 0, "responses": 0}
    where = {"keys": "union", "psu": "union", "psu_sum": "union", "share": "encode", "query": "offline",
             "response": "responses"}
    for st in loop.stages:
        for kind, b in st.kinds.items():
            nbytes[where[kind]] += b
    busy = sum(v for ph, v in secs.items() if ph != "product") or 1.0
    wall = {ph: wall_all * v / busy for ph, v in secs.items()}
    wall["blocks"] = sum(wall[ph] for ph in _BLOCK_PHASES)
    sums, counts, rows = [], [], []
    for c in sess:
        s_, c_ = c.sums, c.counts
        assert s_ is not None and c_ is not None and c.client is not None, "every session decoded"
        sums.append(s_)
        counts.append(c_)
        rows.append(c.client.finish_rows(s_, c_))
    embeddings = [dict(zip(c.ids, r)) for c, r in zip(sess, rows)]
    if verify:
        _verify(local, params, sums, counts)
    return SecEARoundResult(params=params, seconds=secs, wall=wall, bytes=nbytes,
                            verified=True if verify else None, processes=1, embeddings=embeddings,
                            rows=rows, sums=sums, counts=counts, union_size=res.union_size, union=res.union,
                            faulty=sorted({(n, v) for n, c in enumerate(sess) for _, v in c.faulty}),
                            unchecked=sorted((n, b) for n, c in enumerate(sess) for b in c.unchecked))


@dataclass(frozen=True)
class _UnionParams(SecEAParams):
    """Parameters of the private entity union alone (Sec. 4.1, eqs. 3-4): it
    uses only N (the 2Nk masked Laurent terms and the pairwise masks), no
    T, K, evaluation points or embeddings, so any N >= 2 is valid, while
    ``SecEAParams`` needs K = floor((N+1)/2) - T >= 1 (eq. 7), which N = 2
    cannot meet.  Only for ``entity_union``: parties built on it cannot share
    or query: ``K``, ``alphas`` and ``betas`` stay None, ``fx`` is unset."""

    def __post_init__(self):
        N = check_int(self.N, "N")
        if N < 2:
            raise ValueError(f"the entity union needs N >= 2 clients, got N = {N}")
        object.__setattr__(self, "N", N)


def entity_union(sets: Sequence[Iterable[EntityId]], params: SecEAParams | None = None) -> np.ndarray:
    """Run the private entity union (Sec. 4.1) for all parties locally; returns
    the union as sorted Goldilocks hashes (``hash_ids`` of the ids).  Any
    N = len(sets) >= 2 works: the union has no collusion threshold T."""
    if isinstance(sets, (str, bytes, bytearray, memoryview)):
        raise TypeError("sets must be a list of entity collections, one per client")
    sets = [entity_list(s, f"sets[{i}]") for i, s in enumerate(sets)]
    if len(sets) < 2:
        raise ValueError(f"the entity union needs N >= 2 clients, got {len(sets)}")
    if params is None:
        params = _UnionParams(N=len(sets), d=1)
    elif params.N != len(sets):
        raise ValueError(f"params.N = {params.N} but {len(sets)} sets were given")
    clients, server = _secea_local.make_parties(sets, params)
    _secea_local.run_union(clients, server)
    union = clients[0].union
    assert union is not None, "run_union ends with psu_finish, which sets every client's union"
    return union


def aggregate(local: Local, T: int = 1, precision: int = 8, *, d: int | None = None, K: int | None = None,
              bound: float = 100.0, block_size: int | None = None, drop: Iterable[tuple[int, int]] | None = None,
              require_checked: bool = False) -> list[dict[Any, np.ndarray]]:
    """SecEA end to end for all parties locally (union, sharing, queries,
    responses, noise, decoding).  ``local[n]``: client n's dict entity id ->
    1-D float array.  Returns one dict per client with the global embedding
    (eq. 5) of each of its own entities.  ``drop``: optional set of
    (querier, responder) pairs whose responses are lost (tests redundancy).
    ``require_checked``: refuse (``DecodingError``) results decoded without
    redundancy, which no decoder can check (``Client.decode``)."""
    res = run_round(local, T=T, precision=precision, K=K, bound=bound, block_size=block_size,
                    processes=1, drop=drop, require_checked=require_checked)
    return res.embeddings
