"""A SecEA-PHE round with every party simulated (Tang, Zhu, Li, Sun 2022, Sec. III-B),
and its result (the ``secea-fast run --protocol secea-phe`` job is
``secea_fast.jobs.secea_phe_job``).

In one process the round is SecEA's sessions with the Paillier layer
(:class:`~secea_fast.protocols.secea_phe.layer.PaillierLayer`) driven over
SecEA's in-memory loopback, as :func:`secea_fast.protocols.secea.run_round`
drives plain SecEA: every rule of a deployment applies.  With worker
processes or an executor (throughput measurements) the per-block phases run
on the parties directly (:func:`_block_job`), as SecEA's executor path does:
the same arithmetic, without the sessions' stage machine."""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np

from ... import paillier
from ..._checks import check_int
from ...executor import Executor
from .._inputs import Local, check_local, check_pairs, local_ids
from ..common.roster import Roster
from .._blocks import apportion_wall, resolve_executor, run_blocks
from ..common.rounds import ProgressFactory, RoundResult
from .. import secea
from .._secea_local import union_and_share
from ..secea import SecEAParams
from ..secea.loopback import FaultyLoopback, Loopback, Transport, drive_checked
from ..secea.session import ClientSession, ServerSession
from .keys import exchange_keys, party_names
from .layer import PaillierLayer
from .messages import CipherMessage
from .params import DEFAULT_BLOCK, DEFAULT_KEY_BITS, DEFAULT_STAT_BITS, PHEParams
from .parties import Client, Server


# ----------------------------------------------------------------- local round
_BLOCK_PHASES = ("offline", "responses", "encrypt", "noise", "decrypt", "decode")


@dataclass
class PHERoundResult(RoundResult[PHEParams]):
    """A SecEA-PHE round: the common fields of :class:`RoundResult`
    (``bytes`` are the bytes through the server) and, per client, the
    global embeddings (eq. 2) as exact fractions: mean = numerator /
    (denominator * scale)."""
    params: PHEParams  # the type argument, named here for the API reference (pdoc)
    embeddings: list = dc_field(default_factory=list)    # per client: id -> global embedding (eq. 2)
    # per client: the same as one 2-D float array, a row per entity in the
    # order of the client's input (dict keys or EntityRows ids)
    rows: list = dc_field(default_factory=list)
    numerators: list = dc_field(default_factory=list)    # per client: (|E_n|, d) int64
    denominators: list = dc_field(default_factory=list)  # per client: (|E_n|, d) int64, 1 <= b <= N
    union_size: int = 0
    ciphertexts: int = 0             # ciphertexts the responders sent
    faulty: list = dc_field(default_factory=list)

    PROTOCOL = "secea-phe"
    PHASES = ("keygen", "union", "encode") + _BLOCK_PHASES

    def as_dict(self) -> dict:
        """JSON-serializable summary (no embeddings)."""
        b = self.params.base
        s = self.summary()
        return {"N": b.N, "T": b.T, "K": b.K, "d": b.d, "precision": b.precision, "p": b.p,
                "key_bits": self.params.key_bits, "stat_bits": self.params.stat_bits,
                "slot_bits": self.params.slot_bits, "slots_per_ciphertext": self.params.slots,
                "ciphertexts_per_response": self.params.cols, "M": int(self.union_size),
                "entities": [len(x) for x in self.numerators], "ciphertexts": int(self.ciphertexts),
                "processes": self.processes, "core_seconds": s["core_seconds"],
                "wall_seconds": s["wall_seconds"], "bytes_via_server": s["bytes"]}

    def matches(self, sums: Sequence[np.ndarray], counts: Sequence[np.ndarray]) -> bool:
        """Whether every mean equals sums / counts exactly (per client, e.g.
        ``secea.plaintext_sums`` or a SecEA round's ``sums`` / ``counts``)."""
        for a, b, s, c in zip(self.numerators, self.denominators, sums, counts):
            s = np.asarray(s, dtype=object)
            c = np.asarray(c, dtype=object).reshape(-1, 1)
            if a.shape != s.shape or not (a.astype(object) * c == s * b.astype(object)).all():
                return False
        return True


def _block_job(S, job):
    """One query block of client n (an executor shard; ``S``: the round's
    parties and settings).  A worker whose copy of client n has no Paillier
    private key (a serialising executor: ``secea_fast._secrets.TRANSFER``)
    returns the noised ciphertexts, and :func:`_finish_block` decrypts and
    decodes them in the calling process."""
    n, b, members = job
    clients, server, drop, rnd = S["clients"], S["server"], S["drop"], S["round"]
    here = clients[n].can_decrypt
    t = {ph: 0.0 for ph in ("offline", "responses", "encrypt", "noise", "decrypt", "decode")}
    nbytes = {"offline": 0, "responses": 0}
    B = len(members)
    t0 = time.process_time()
    server.prepare(n, rnd, b, B)                 # offline: r and Enc(psi + p u), eq. (12)
    t["offline"] += time.process_time() - t0
    queries = clients[n].iter_queries(rnd, b, members)
    vals = []
    cts = 0
    for v in range(len(clients)):
        t0 = time.process_time()
        q = next(queries)
        t["offline"] += time.process_time() - t0
        if v != n:
            nbytes["offline"] += 2 * q.nbytes
        if (n, v) in drop:
            vals.append(None)
            continue
        t0 = time.process_time()
        A = clients[v].answer_plain(q)
        t1 = time.process_time()
        c = clients[v].encrypt_response(A, q)
        t2 = time.process_time()
        y = server.noise(c)
        t3 = time.process_time()
        vals.append(clients[n].decrypt(y, B) if here else y)
        t4 = time.process_time()
        t["responses"] += t1 - t0
        t["encrypt"] += t2 - t1
        t["noise"] += t3 - t2
        t["decrypt"] += t4 - t3
        nbytes["responses"] += c.nbytes + y.nbytes
        cts += len(c.cts)
    server._prepared.pop((rnd, n, b), None)      # dropped responders' noise is never used
    if not here:
        return (n, members, vals, cts), t, nbytes
    t0 = time.process_time()
    num, den, faulty = clients[n].decode_values(vals, members)
    t["decode"] += time.process_time() - t0
    return (n, members, num, den, faulty, cts), t, nbytes


def _finish_block(client, members, cipher, secs):
    """Decrypt (with the client's own private key, in the calling
    process) and decode a block a worker returned as ciphertexts."""
    t0 = time.process_time()
    vals = [None if y is None else client.decrypt(y, len(members)) for y in cipher]
    t1 = time.process_time()
    num, den, faulty = client.decode_values(vals, members)
    secs["decrypt"] += t1 - t0
    secs["decode"] += time.process_time() - t1
    return num, den, faulty


def run_round(local: Local, T: int = 1, precision: int = 8, key_bits: int = DEFAULT_KEY_BITS,
              processes: int | None = None, *, K: int | None = None, bound: float = 100.0,
              stat_bits: int = DEFAULT_STAT_BITS, insecure_keys: bool = False,
              keys: Sequence[tuple[paillier.PublicKey, paillier.PrivateKey]] | None = None,
              block_size: int | None = None, drop: Iterable[tuple[int, int]] | None = None,
              progress: ProgressFactory | None = None, verify: bool = False, rnd: int = 1, params: PHEParams | None = None,
              threads: int | None = None, executor: Executor | None = None,
              authenticate: bool = True, variant: str = paillier.TEXTBOOK) -> PHERoundResult:
    """One SecEA-PHE round for all parties: ``local[n]`` is client n's dict
    entity id -> 1-D float embedding, or the same as arrays,
    :class:`~secea_fast.protocols.secea.EntityRows` (the same result bit for
    bit; ``result.rows[n]`` in the order of its ids).

    ``key_bits``: Paillier modulus size of every client (keys below 2048 bits
    need ``insecure_keys=True``); ``keys``: optional list of N (pk, sk) pairs
    to reuse instead of generating fresh ones; ``processes``: worker
    processes (fork) for the per-block phases, or ``executor``: any
    ``secea_fast.executor.Executor`` (one that serialises its state, such as
    Ray, gets no Paillier private key: its workers return each block's
    noised responses and this process decrypts them); ``block_size``: query rows
    per block (default 16); ``drop``: (querier, responder) pairs whose
    responses are lost; ``verify``: compare with ``secea.plaintext_sums``
    and raise AssertionError on any difference; ``params``: a ``PHEParams``
    (overrides T, precision, K, bound, key_bits, stat_bits, variant);
    ``variant``: the clients' Paillier variant (``"textbook"``, or
    ``"short-exponent"`` for faster encryption under an extra assumption:
    :class:`~secea_fast.paillier.ShortExponentPublicKey`); ``authenticate``:
    every client gets a roster identity (a fresh roster of ``client-<n>``)
    and signs its X25519 and Paillier public keys, which the server and
    every client verify before use; ``False`` passes the keys unsigned
    (only to measure what authentication costs).

    One process (no ``executor``, ``processes`` 1 or None) and parameters
    the sessions rebuild from their public fields (default evaluation
    points and prime): the round is SecEA's sessions
    (:mod:`~secea_fast.protocols.secea.session`) with the Paillier layer
    (:class:`~secea_fast.protocols.secea_phe.layer.PaillierLayer`, each
    client's key pair in its own session) over SecEA's
    :class:`~secea_fast.protocols.secea.loopback.Loopback`; ``drop`` loses
    the noised responses on their way to the querier (a
    :class:`~secea_fast.protocols.secea.loopback.FaultyLoopback`); a block
    that does not decode raises its ``DecodingError``, a dropped client
    :class:`~secea_fast.protocols.secea.session.RoundFailed`.  Otherwise
    (worker processes, an executor, custom evaluation points) the parties
    run directly, their keys exchanged by
    :func:`~secea_fast.protocols.secea_phe.keys.exchange_keys` (throughput
    measurements; ``threads`` and ``progress`` apply there only)."""
    d = check_local(local, arrays=True)
    N = len(local)
    if params is None:
        params = PHEParams(SecEAParams(N=N, d=d, T=T, precision=precision, K=K, bound=bound),
                           key_bits=key_bits, stat_bits=stat_bits, insecure_keys=insecure_keys,
                           variant=variant)
    elif not isinstance(params, PHEParams):
        raise TypeError("params must be PHEParams")
    elif params.N != N or params.base.d != d:
        raise ValueError("params do not match the clients' data (N or d)")
    B = DEFAULT_BLOCK if block_size is None else check_int(block_size, "block_size")
    drop = check_pairs(drop, N, "drop")
    if keys is not None:
        keys = list(keys)
        if len(keys) != N:
            raise ValueError(f"need {N} key pairs, got {len(keys)}")
    prm = params.base
    secs, wall, nbytes = {}, {}, {}
    sessions = executor is None and processes in (None, 1) and _rebuilt(prm)
    executor = resolve_executor(executor, processes) if not sessions else None

    # --- Paillier keys (one-time)
    w0, c0 = time.perf_counter(), time.process_time()
    if keys is None:
        keys = [paillier.keygen(params.key_bits, insecure=params.insecure_keys, variant=params.variant)
                for _ in range(N)]
    secs["keygen"], wall["keygen"] = time.process_time() - c0, time.perf_counter() - w0
    if sessions:
        return _run_sessions(local, params, keys, B, drop, verify, rnd, authenticate, secs, wall)
    assert executor is not None
    clients = [Client(n, params, local_ids(emb), keys[n]) for n, emb in enumerate(local)]
    server = Server(params)
    pks = [c.paillier_public_key for c in clients]
    roster, ids = Roster.make([(x, "client") for x in party_names(N)]) if authenticate else (None, {})
    signed = exchange_keys(clients, server, roster, ids, rnd)
    nbytes["keygen"] = N * sum(len(b) for b in signed)     # each key up, then to the N - 1 others

    # --- the one-time entity union and the sharing (as secea.run_round)
    M = union_and_share(clients, server, local, rnd, secs, wall, nbytes)

    # --- retrieval, per query block
    jobs = [(n, b, mem) for n, c in enumerate(clients) for b, mem in enumerate(c.blocks(B))]
    for ph in _BLOCK_PHASES:
        secs[ph] = 0.0
    nbytes["offline"] = nbytes["responses"] = 0
    for c in clients:
        c.threads = threads
    nums = [np.zeros((len(c.ids), d), dtype=np.int64) for c in clients]
    dens = [np.zeros((len(c.ids), d), dtype=np.int64) for c in clients]
    faulty = set()
    counter = [0]

    def collect(res):
        if len(res) == 4:                   # ciphertexts from a worker copy without the key
            n, members, cipher, cts = res
            a, b_, bad = _finish_block(clients[n], members, cipher, secs)
        else:
            n, members, a, b_, bad, cts = res
        nums[n][members] = a
        dens[n][members] = b_
        faulty.update((n, v) for v in bad)
        counter[0] += cts

    for pk in pks:      # no precomputed obfuscators may be copied into forked workers
        pk.clear_pool()
    state = dict(clients=clients, server=server, drop=drop, round=rnd)
    wall_blocks = run_blocks(executor, _block_job, jobs, state, collect, label="SecEA-PHE blocks",
                             progress=progress, secs=secs, nbytes=nbytes)
    apportion_wall(wall, secs, _BLOCK_PHASES, wall_blocks)
    rows = [c.finish_rows(a, b_) for c, a, b_ in zip(clients, nums, dens)]
    embeddings = [dict(zip(c.ids, r)) for c, r in zip(clients, rows)]
    res = PHERoundResult(params=params, seconds=secs, wall=wall, bytes=nbytes,
                         processes=executor.processes, embeddings=embeddings, rows=rows, numerators=nums,
                         denominators=dens, union_size=M, ciphertexts=counter[0],
                         faulty=sorted(faulty))
    if verify:
        ref = secea.plaintext_sums(local, prm)
        if not res.matches([s for s, _ in ref], [c for _, c in ref]):
            raise AssertionError("SecEA-PHE means differ from the plaintext sums / counts")
        res.verified = True
    return res


def _rebuilt(prm: SecEAParams) -> bool:
    """Whether the sessions' parameters (rebuilt from the public fields of
    a stage) are ``prm``: default evaluation points and prime."""
    return SecEAParams(N=prm.N, d=prm.d, T=prm.T, precision=prm.precision, bound=prm.bound, K=prm.K) == prm


def _dropper(drop: set[tuple[int, int]], names: list[str]) -> Any:
    """A FaultyLoopback tamper that loses the noised responses of the
    (querier, responder) pairs ``drop`` on their way to the querier."""
    lost: dict[str, set[int]] = {}
    for n, v in drop:
        lost.setdefault(names[n], set()).add(v)

    def tamper(name, cfg, blobs):
        if name not in lost:
            return cfg, blobs
        out = []
        for b in blobs:
            if bytes(b[:4]) == b"SEPH":
                kind, sender, _ = CipherMessage.header(b)
                if kind == "noised_response" and sender in lost[name]:
                    continue
            out.append(b)
        return cfg, out
    return tamper


def _run_sessions(local, params: PHEParams, keys, B, drop, verify, rnd, authenticate, secs, wall) -> PHERoundResult:
    """run_round in one process: SecEA's sessions with the Paillier layer
    over the loopback (see run_round)."""
    prm = params.base
    N = prm.N
    names = party_names(N)
    w0 = time.perf_counter()
    roster, ids = Roster.make([(x, "client") for x in names]) if authenticate else (None, {})
    def layer_of(keypair=None) -> PaillierLayer:
        return PaillierLayer(params.key_bits, params.stat_bits, insecure_keys=params.insecure_keys,
                             variant=params.variant, keypair=keypair)
    clients = {x: ClientSession(roster, ids.get(x), local[n], layer=layer_of(keys[n])) for n, x in enumerate(names)}
    layer = layer_of()
    server = ServerSession(roster, names, d=prm.d, T=prm.T, precision=prm.precision, K=prm.K, bound=prm.bound,
                           block_size=B, round_index=rnd, layer=layer)
    loop = Loopback(clients, kind_of=layer.kind_of)
    transport: Transport = loop if not drop else FaultyLoopback(loop, tamper=_dropper(drop, names))
    sess = [clients[x] for x in names]
    res, srv, _ = drive_checked(server, transport, sess, "SecEA-PHE")
    wall_all = time.perf_counter() - w0
    parties: list[Client] = []
    nums: list[np.ndarray] = []
    dens: list[np.ndarray] = []
    for c in sess:
        assert isinstance(c.client, Client) and c.sums is not None and c.counts is not None, "every session decoded"
        parties.append(c.client)
        nums.append(c.sums)
        dens.append(c.counts)
    for ph in PHERoundResult.PHASES[1:]:
        secs[ph] = 0.0
    for c, p in zip(sess, parties):
        for ph, v in c.seconds.items():
            secs["keygen" if ph == "keys" else ph] = secs.get("keygen" if ph == "keys" else ph, 0.0) + v
        secs["encrypt"] += p.encrypt_seconds
        secs["responses"] -= p.encrypt_seconds
        secs["decrypt"] += p.decrypt_seconds
        secs["decode"] -= p.decrypt_seconds
    prep = server.party.encrypt_seconds                 # the server's offline Enc(psi + p u)
    secs["union"] += srv["union"]
    secs["offline"] += prep
    secs["noise"] += srv["noise"] - prep
    nbytes: dict[str, int] = {"keygen": 0, "union": 0, "encode": 0, "offline": 0, "responses": 0}
    where = {"keys": "keygen", "psu": "union", "psu_sum": "union", "share": "encode", "query": "offline",
             "response": "responses"}
    for st in loop.stages:
        for kind, b in st.kinds.items():
            nbytes[where[kind]] += b
    busy = sum(v for ph, v in secs.items() if ph != "keygen") or 1.0
    wall.update({ph: wall_all * v / busy for ph, v in secs.items() if ph != "keygen"})
    rows = [p.finish_rows(a, b) for p, a, b in zip(parties, nums, dens)]
    embeddings = [dict(zip(p.ids, r)) for p, r in zip(parties, rows)]
    out = PHERoundResult(params=params, seconds=secs, wall=wall, bytes=nbytes, processes=1,
                         embeddings=embeddings, rows=rows, numerators=nums, denominators=dens, union_size=res.union_size,
                         ciphertexts=sum(p.ciphertexts for p in parties),
                         faulty=sorted({(n, v) for n, c in enumerate(sess) for _, v in c.faulty}))
    if verify:
        ref = secea.plaintext_sums(local, prm)
        if not out.matches([s for s, _ in ref], [c for _, c in ref]):
            raise AssertionError("SecEA-PHE means differ from the plaintext sums / counts")
        out.verified = True
    return out


def aggregate(local: Local, T: int = 1, precision: int = 8, *, key_bits: int = DEFAULT_KEY_BITS,
              insecure_keys: bool = False, K: int | None = None, bound: float = 100.0,
              block_size: int | None = None, drop: Iterable[tuple[int, int]] | None = None,
              processes: int = 1) -> list[dict[Any, np.ndarray]]:
    """SecEA-PHE end to end for all parties locally.  ``local[n]``: client
    n's dict entity id -> 1-D float array.  Returns one dict per client with
    the global embedding (eq. 2) of each of its entities."""
    return run_round(local, T=T, precision=precision, key_bits=key_bits, insecure_keys=insecure_keys,
                     K=K, bound=bound, block_size=block_size, drop=drop,
                     processes=processes).embeddings
