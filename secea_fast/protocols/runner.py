"""Local simulation of a SecEA round with every party in this process (or
in worker processes): phases separated and timed, bytes counted, queries
streamed in entity blocks, entity parallelism over processes.

A round, for N clients and the server (seed 002, Sec. 4):

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

import numbers
import sys
import time
from dataclasses import dataclass, field as dc_field

import numpy as np

from .. import tuning
from .._checks import check_int
from ..executor import Executor, LocalExecutor
from .secea import Client, Message, SecEAParams, Server, real_vector

__all__ = ["RoundResult", "run_round", "default_block_size", "plaintext_sums"]


def default_block_size(M: int) -> int:
    """Query rows per block: about ``tuning.SECEA_QUERY_BLOCK_ELEMS`` query
    entries per (block, responder), a multiple of 16 (the matmul row panel)."""
    b = tuning.SECEA_QUERY_BLOCK_ELEMS // max(M, 1)
    return int(min(tuning.SECEA_QUERY_BLOCK_MAX, max(16, b // 16 * 16)))


@dataclass
class RoundResult:
    """Outcome of one simulated round."""
    params: SecEAParams
    embeddings: list                 # per client: id -> global embedding (eq. 5)
    sums: list                       # per client: (|E_n|, d) int64 quantized sums
    counts: list                     # per client: (|E_n|,) holders of each entity
    union_size: int
    seconds: dict                    # phase -> core-seconds (summed over parties)
    wall: dict                       # phase -> wall-clock seconds
    bytes: dict                      # phase -> bytes through the server
    faulty: list = dc_field(default_factory=list)   # (querier, responder) flagged
    processes: int = 1
    # (querier, block) decoded from exactly k = 2(K+T-1)+1 responses: no
    # redundancy, so a corrupted response there would have gone unnoticed
    # (``secea.DecodeResult``); empty when every block was checked
    unchecked: list = dc_field(default_factory=list)

    @property
    def checked(self) -> bool:
        """Whether every block was decoded with redundancy to spare (a
        corrupted response would have been detected, see ``unchecked``)."""
        return not self.unchecked

    def table(self) -> str:
        rows = [("phase", "core-s", "wall-s", "protocol MB")]
        for ph in ("union", "encode", "offline", "responses", "product", "noise", "decode"):
            rows.append((ph, f"{self.seconds.get(ph, 0.0):.3f}", f"{self.wall.get(ph, 0.0):.3f}",
                         f"{self.bytes.get(ph, 0) / 1e6:.2f}"))
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
                                   for i, c in enumerate(r)) for r in rows)


class _Progress:
    """A one-line progress bar on stderr with an ETA from the rate so far."""

    def __init__(self, total, label, enabled):
        self.total, self.label, self.enabled = total, label, enabled and total > 0
        self.done, self.t0, self.last = 0, time.perf_counter(), -1.0
        self.tty = sys.stderr.isatty()

    def step(self, k=1):
        self.done += k
        if not self.enabled:
            return
        el = time.perf_counter() - self.t0
        # redraw at most 5 times a second on a terminal; elsewhere (logs,
        # CI) print one line per 10% so the output stays readable
        if self.done < self.total:
            if self.tty and el - self.last < 0.2:
                return
            if not self.tty and (10 * self.done) // self.total == (10 * (self.done - k)) // self.total:
                return
        self.last = el
        eta = el / self.done * (self.total - self.done) if self.done else 0.0
        bar = "#" * int(30 * self.done / self.total)
        sys.stderr.write(f"{chr(13) if self.tty else ''}{self.label} [{bar:<30}] "
                         f"{self.done}/{self.total} {el:6.1f}s elapsed, ETA {eta:6.1f}s")
        if self.done >= self.total or not self.tty:
            sys.stderr.write("\n")
        sys.stderr.flush()


PHASES = ("offline", "responses", "all")


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
        t0 = time.perf_counter()
        q = next(queries)
        t["offline"] += time.perf_counter() - t0
        if v != n:
            nbytes["offline"] += 2 * q.nbytes      # up to the server and down to v
        if (n, v) in drop or upto == "offline":
            resps.append(None)
            continue
        t0 = time.perf_counter()
        a = clients[v].answer(q)
        t["responses"] += time.perf_counter() - t0
        if upto == "responses":
            resps.append(None)
            continue
        if (n, v) in corrupt:
            a = Message(a.kind, a.sender, a.receiver, a.round, a.block,
                        (a.data + np.uint64(1)) % np.uint64(clients[v].params.p))
        t0 = time.perf_counter()
        y = server.noise(a)
        t["noise"] += time.perf_counter() - t0
        nbytes["responses"] += a.nbytes + y.nbytes
        resps.append(y)
    t["product"] = sum(c.product_seconds for c in clients) - prod0
    if upto != "all":
        return n, members, None, None, (), t, nbytes, None
    t0 = time.perf_counter()
    res = clients[n].decode(resps, members, verify=require_checked)
    t["decode"] += time.perf_counter() - t0
    return n, members, res.sums, res.counts, res.faulty, t, nbytes, (b if not res.checked else None)


def union_and_share(clients, server, local, rnd, secs, wall, nbytes, w0=None) -> int:
    """The one-time entity union then the round's sharing, for all parties,
    timed into ``secs`` / ``wall`` / ``nbytes`` (phases "union", "encode").
    Returns M, the size of the union."""
    N = len(clients)
    w0 = time.perf_counter() if w0 is None else w0
    k = max(len(c.ids) for c in clients)
    t_cli = 0.0
    ups = []
    for c in clients:
        t0 = time.perf_counter()
        ups.append(c.psu_upload(k, rnd))
        t_cli += time.perf_counter() - t0
    t0 = time.perf_counter()
    total = server.psu_sum(ups)
    t_srv = time.perf_counter() - t0
    for c in clients:
        t0 = time.perf_counter()
        c.psu_finish(total)
        t_cli += time.perf_counter() - t0
    # psu_finish is a pure function of the public sum, evaluated once here
    # and memoised; each real client pays the server's reconstruction time
    secs["union"] = t_cli + t_srv * (N + 1)
    wall["union"] = time.perf_counter() - w0
    nbytes["union"] = sum(u.nbytes for u in ups) + N * total.nbytes

    w0 = time.perf_counter()
    t_enc = 0.0
    outbox = []
    for n, c in enumerate(clients):
        t0 = time.perf_counter()
        outbox.append(c.share(local[n], rnd))
        t_enc += time.perf_counter() - t0
    nbytes["encode"] = sum(2 * m.nbytes for msgs in outbox for m in msgs if m.sender != m.receiver)
    for v, c in enumerate(clients):
        t0 = time.perf_counter()
        c.receive_shares([outbox[n][v] for n in range(N)])
        t_enc += time.perf_counter() - t0
    secs["encode"], wall["encode"] = t_enc, time.perf_counter() - w0
    return clients[0].M


def plaintext_sums(local, params: SecEAParams):
    """EmbAvg in the clear on the quantized embeddings: per client, the exact
    (sums, counts) SecEA must reproduce bit for bit."""
    fx = params.fx
    tot = {}
    for emb in local:
        for key, vec in emb.items():
            q = fx.quantize(np.asarray(vec, dtype=np.float64).reshape(1, -1))[0].astype(object)
            k = _key(key)
            if k in tot:
                tot[k][0] += q
                tot[k][1] += 1
            else:
                tot[k] = [q.copy(), 1]
    out = []
    for emb in local:
        keys = [_key(x) for x in emb]
        out.append((np.array([tot[k][0] for k in keys], dtype=np.int64).reshape(len(keys), -1),
                    np.array([tot[k][1] for k in keys], dtype=np.int64)))
    return out


def _key(x):
    from .secea import _id_bytes
    return _id_bytes(x)


def check_pairs(pairs, N: int, name: str) -> set:
    """``drop`` / ``corrupt``: an iterable of (querier, responder) pairs of
    client indices in [0, N), as a set.  A pair naming an unknown client
    (out of range, or an entity id instead of an index) would otherwise
    never match and be ignored silently."""
    if pairs is None:
        return set()
    if isinstance(pairs, (str, bytes, bytearray, memoryview, dict)):
        raise TypeError(f"{name} must be a set of (querier, responder) pairs, "
                        f"got {type(pairs).__name__}")
    try:
        items = list(pairs)
    except TypeError:
        raise TypeError(f"{name} must be a set of (querier, responder) pairs, "
                        f"got {type(pairs).__name__}") from None
    out = set()
    for pair in items:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{name}: {pair!r} is not a (querier, responder) pair of client indices")
        for role, x in zip(("querier", "responder"), pair):
            if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not 0 <= int(x) < N:
                raise ValueError(f"{name}: pair {tuple(pair)!r} names unknown client {x!r} as "
                                 f"{role}; clients are the indices 0..{N - 1}")
        out.add((int(pair[0]), int(pair[1])))
    return out


def resolve_executor(executor, processes):
    """The executor of a round: ``executor`` if given (``processes``, if
    also given, must match it), else a :class:`LocalExecutor` of
    ``processes`` (default 1)."""
    if executor is None:
        return LocalExecutor(1 if processes is None else processes)
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be a secea_fast.executor.Executor, got {type(executor).__name__}")
    if processes is not None and check_int(processes, "processes") != executor.processes:
        raise ValueError(f"processes={processes} contradicts the executor's {executor.processes}")
    return executor


def run_round(local, *, T=1, precision=8, K=None, bound=100.0, block_size=None, processes=None,
              drop=None, corrupt=None, progress=False, verify=False, rnd=1, params=None,
              threads=None, executor=None, upto="all", require_checked=False) -> RoundResult:
    """One SecEA round for all parties: ``local[n]`` is client n's dict
    entity id -> 1-D float embedding.  ``processes``: worker processes for
    the per-block phases (a local fork pool), or ``executor``: any
    :class:`secea_fast.executor.Executor` (e.g. a ``RayExecutor``); the
    result is bit-identical either way.  ``drop`` / ``corrupt``: sets of
    (querier, responder) pairs whose responses are lost / altered (tests of
    the Reed-Solomon path).  ``verify``: compare with the plaintext sums and
    raise AssertionError on any difference.  Blocks decoded from exactly
    k = 2(K+T-1)+1 responses (no redundancy: a corrupted response is
    neither corrected nor detected) are listed in the result's
    ``unchecked``; ``require_checked=True`` refuses them instead
    (``secea.DecodingError``, see ``secea.Client.decode``).  ``threads``: threads of each
    response product (default: the library default with one process, 1 with
    several).  ``upto``: "all" (default), or "offline" / "responses" to stop
    every block after that phase -- throughput measurement of one phase
    (``secea-fast bench throughput``); nothing is decoded then and the
    result's embeddings are empty.  ``wall["blocks"]`` is the wall time of
    the per-block stage."""
    if not isinstance(local, (list, tuple)) or not local:
        raise TypeError("local must be a non-empty list of dicts (one per client)")
    for n, emb in enumerate(local):
        if not isinstance(emb, dict) or not emb:
            raise ValueError(f"client {n}: expected a non-empty dict entity id -> embedding")
        for key, vec in emb.items():
            if not (isinstance(vec, np.ndarray) and vec.dtype.kind in "biuf"):
                real_vector(vec, f"local[{n}][{key!r}]")
    if upto not in PHASES:
        raise ValueError(f"upto must be one of {PHASES}, got {upto!r}")
    if verify and upto != "all":
        raise ValueError("verify needs upto='all'")
    N = len(local)
    d = len(np.asarray(next(iter(local[0].values()))).reshape(-1))
    if params is None:
        params = SecEAParams(N=N, d=d, T=T, precision=precision, K=K, bound=bound)
    elif params.N != N or params.d != d:
        raise ValueError("params do not match the clients' data (N or d)")
    executor = resolve_executor(executor, processes)
    drop, corrupt = check_pairs(drop, N, "drop"), check_pairs(corrupt, N, "corrupt")
    secs, wall, nbytes = {}, {}, {}

    # --- parties and the one-time entity union
    w0 = time.perf_counter()
    clients = [Client(n, params, list(emb.keys())) for n, emb in enumerate(local)]
    server = Server(params)
    keys = [c.public_key for c in clients]
    for c in clients:
        c.set_peer_keys(keys)
    M = union_and_share(clients, server, local, rnd, secs, wall, nbytes, w0)
    if upto != "offline":
        # the responders' packed shares, made before the workers fork: one
        # copy, shared by every worker (2 processes x N x 5 MB did not fit in
        # L3 at the MovieLens-1M shape), counted with the sharing
        t0 = time.perf_counter()
        for c in clients:
            c.prepare_responses()
        dt = time.perf_counter() - t0
        secs["encode"] += dt
        wall["encode"] += dt

    # --- per-block phases
    B = default_block_size(M) if block_size is None else check_int(block_size, "block_size")
    jobs = [(n, b, mem) for n, c in enumerate(clients) for b, mem in enumerate(c.blocks(B))]
    for ph in ("offline", "responses", "noise", "decode", "product"):
        secs[ph] = 0.0
    for c in clients:
        c.threads = threads
    nbytes["offline"] = nbytes["responses"] = 0
    sums = [np.zeros((len(c.ids), d), dtype=np.int64) for c in clients]
    counts = [np.zeros(len(c.ids), dtype=np.int64) for c in clients]
    faulty, unchecked = set(), set()
    bar = _Progress(len(jobs), "SecEA blocks", progress)
    state = dict(clients=clients, server=server, drop=drop, corrupt=corrupt, round=rnd, upto=upto,
                 require_checked=bool(require_checked))
    w0 = time.perf_counter()

    def collect(res):
        n, members, s, cnt, bad, t, nb, blk = res
        if s is not None:
            sums[n][members] = s
            counts[n][members] = cnt
        faulty.update((n, v) for v in bad)
        if blk is not None:
            unchecked.add((n, blk))
        for ph, x in t.items():
            secs[ph] += x
        for ph, x in nb.items():
            nbytes[ph] += x
        bar.step()

    executor.map(_block_job, jobs, state, collect)
    wall["blocks"] = wall_blocks = time.perf_counter() - w0
    busy = sum(secs[ph] for ph in ("offline", "responses", "noise", "decode")) or 1.0
    wall["product"] = wall_blocks * secs["product"] / busy
    for ph in ("offline", "responses", "noise", "decode"):
        wall[ph] = wall_blocks * secs[ph] / busy      # wall time apportioned by work
    embeddings = ([c.finish(s, cnt) for c, s, cnt in zip(clients, sums, counts)]
                  if upto == "all" else [])
    res = RoundResult(params, embeddings, sums, counts, M, secs, wall, nbytes,
                      sorted(faulty), executor.processes, sorted(unchecked))
    if verify:
        for n, (s_ref, c_ref) in enumerate(plaintext_sums(local, params)):
            if not (np.array_equal(s_ref, sums[n]) and np.array_equal(c_ref, counts[n])):
                raise AssertionError(f"client {n}: SecEA sums differ from the plaintext sums")
    return res
