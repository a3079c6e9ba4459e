"""A SecEmb round with both servers and every user simulated in this
process, the messages round-tripped through their byte encodings
(Mai et al. 2025, Sec. 4, Algorithm 3), and its check against plaintext.

The round drives the sessions of :mod:`.session` (the rules live there,
once) over the in-memory transport of :mod:`.transport`; fault injection is
a wrapper around that transport."""
from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from ...executor import Executor
from ..common.rounds import RoundResult
from ..common.roster import Roster
from .params import SecEmbParams, check_real, encode_table
from .sharded import check_server_executors
from .session import MIN_USERS, ProtocolError, Server0Session, Server1Session, UserSession
from .transport import Envelope, Faults, Loopback

__all__ = ["SecEmbRoundResult", "run_round", "plaintext_check"]


@dataclass
class SecEmbRoundResult(RoundResult[SecEmbParams]):
    """A SecEmb round: the common fields of :class:`RoundResult` (``bytes``:
    phase -> bytes of all users' messages to or from both servers), and

    * ``retrieved[u]``: the rows of Q at items[u] (NaN for items truncated
      away when |items[u]| > m');
    * ``aggregate``: the m x d sum of the users' quantized gradient rows
      (users in ``dropouts`` retrieved but did not upload), ``dense`` the sum
      of their dense updates;
    * ``dropped``: user name -> (stage, reason) of users a session refused
      (``summed``: the users in the aggregate); ``refused``: (stage, party,
      reason) of refused duplicates;
    * ``bytes_up`` / ``bytes_down``: bytes per user and server of the
      retrieval and aggregation stages (the unit of the paper's Table 15)."""
    params: SecEmbParams  # the type argument, named here for the API reference (pdoc)
    retrieved: list = dc_field(default_factory=list)
    aggregate: Optional[np.ndarray] = None
    dense: Optional[np.ndarray] = None
    bytes_up: dict = dc_field(default_factory=dict)
    bytes_down: dict = dc_field(default_factory=dict)
    dropped: dict = dc_field(default_factory=dict)
    refused: list = dc_field(default_factory=list)
    summed: list = dc_field(default_factory=list)

    PROTOCOL = "secemb"
    # user_reconstruct (opening the two answers, Eq. 4) is timed apart from
    # user_upload, so that user_keygen + user_upload is the user's secret
    # generation with the session layer (signatures, sealing) and nothing else
    PHASES = ("user_keygen", "server_retrieval", "user_reconstruct", "user_upload", "server_aggregation")


def plaintext_check(Q: ArrayLike, items: Sequence[ArrayLike], grads: Sequence[ArrayLike], params: SecEmbParams,
                    res: SecEmbRoundResult, *, dense: Sequence[ArrayLike] | None = None,
                    dropouts: Iterable[int] = (), clip: float | None = None) -> tuple[bool, str]:
    """Compare a round with plaintext: every user got min(|items|, m') rows
    (the others NaN, truncated away), each equal to its row of Q in fixed
    point; the aggregate equals the sum over the uploading users of their
    kept (clipped) gradient rows in fixed point (round(x 2^f) as int64,
    summed in two's complement: bit for bit), and likewise the dense sum.
    Returns (ok, message).  Only meaningful without server noise."""
    scale = float(params.scale)
    Q = np.asarray(Q, dtype=np.float64)
    m, d = Q.shape
    q_fixed = np.rint(Q * scale).astype(np.int64) / scale
    want = np.zeros((m, d), dtype=np.uint64)
    for u, (it, g, got) in enumerate(zip(items, grads, res.retrieved)):
        it = np.asarray(it, dtype=np.int64)
        got = np.asarray(got)
        if got.shape != (len(it), d):
            return False, f"user {u}: retrieved shape {got.shape}, expected {(len(it), d)}"
        kept = ~np.isnan(got).any(axis=1)
        if int(kept.sum()) != min(len(it), params.m_prime):
            return False, f"user {u}: {int(kept.sum())} items retrieved, expected {min(len(it), params.m_prime)}"
        if not np.array_equal(got[kept], q_fixed[it[kept]]):
            return False, f"user {u}: a retrieved row differs from Q in fixed point"
        if u in dropouts:
            continue
        g = np.asarray(g, dtype=np.float64)
        if clip is not None:
            g = g * np.minimum(1.0, clip / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300))
        want[it[kept]] += np.rint(g[kept] * scale).astype(np.int64).view(np.uint64)
    if not np.array_equal(np.asarray(res.aggregate), want.view(np.int64) / scale):
        return False, "the aggregate differs from the plaintext sum of the quantized gradient rows"
    if dense is not None:
        dsum = np.zeros(np.asarray(dense[0]).size, dtype=np.uint64)
        for u, x in enumerate(dense):
            if u not in dropouts:
                dsum += np.rint(np.asarray(x, dtype=np.float64).ravel() * scale).astype(np.int64).view(np.uint64)
        if not np.array_equal(np.asarray(res.dense), dsum.view(np.int64) / scale):
            return False, "the dense sum differs from the plaintext sum of the quantized dense updates"
    return True, "retrieval and aggregate bit for bit against plaintext fixed point"


def run_round(Q: ArrayLike, items: Sequence[ArrayLike], grads: Sequence[ArrayLike], m_prime: int, *,
              dense: Sequence[ArrayLike] | None = None, frac_bits: int = 16, n_users: int | None = None,
              dropouts: Iterable[int] = (), noise_sigma: float = 0.0, clip: float | None = None,
              threads: int | None = None, verify: bool = False, agg_bits: int = 64,
              min_users: int = MIN_USERS, transport: Loopback | Faults | None = None,
              round_index: int = 1,
              executors: tuple[Executor | None, Executor | None] = (None, None)) -> SecEmbRoundResult:
    """One SecEmb round run locally: the three sessions (:mod:`.session`:
    every user, server 1, server 0 as the relay) exchange their byte
    messages over ``transport`` (default a fresh :class:`~.transport.Loopback`;
    pass a :class:`~.transport.Faults` to drop, corrupt, delay, replay or
    reorder), with a fresh roster of "server1" and "user-<u>".

    ``Q``: m x d float item table; ``items[u]``: user u's rated item ids;
    ``grads[u]``: |items[u]| x d gradient rows; ``dense[u]``: optional dense
    updates; ``dropouts``: users that retrieve but do not upload;
    ``noise_sigma``: the servers' Gaussian noise (Appendix G); ``clip``:
    per-row gradient clipping; ``agg_bits``: the aggregation ring Z_2^b
    (64, or the paper's 32: ``SecEmbParams``); ``min_users``: the least
    number of users both servers aggregate (``session.MIN_USERS``).
    ``verify``: compare with plaintext (:func:`plaintext_check`) and raise
    AssertionError on any difference (needs ``noise_sigma == 0``).  Users a
    session refuses (a fault) are in ``res.dropped`` with the stage and
    reason, their rows NaN.  ``seconds`` are CPU seconds (user + sys of
    this process, every thread of the DPF kernels), ``wall`` wall-clock
    seconds; the parties run one after another.  ``executors``: (server
    0's, server 1's) executor over whose workers each server shards its
    users' retrieval and aggregation (:mod:`.sharded`; None: in this
    process), never one object for both (ValueError: the servers must not
    share a trust domain); bit for bit the same round."""
    Q = np.asarray(Q, dtype=np.float64)
    if Q.ndim != 2:
        raise ValueError(f"Q must be 2-D (m, d), got shape {Q.shape}")
    m, d = Q.shape
    nu = len(items)
    if len(grads) != nu:
        raise ValueError(f"{nu} item lists but {len(grads)} gradient arrays")
    # every argument is checked before any party computes anything
    noise_sigma = check_real(noise_sigma, "noise_sigma")
    if clip is not None:
        clip = check_real(clip, "clip", positive=True)
    if verify and noise_sigma != 0:
        raise ValueError("verify needs noise_sigma = 0 (a noised aggregate cannot equal the plaintext sum)")
    if isinstance(dropouts, (str, bytes)) or not hasattr(dropouts, "__iter__"):
        raise TypeError(f"dropouts must be a collection of user indices, got {type(dropouts).__name__}")
    drop = set()
    for uid in dropouts:
        if isinstance(uid, bool) or not isinstance(uid, (int, np.integer)):
            raise TypeError(f"dropouts must hold integer user indices, got {uid!r}")
        if not 0 <= int(uid) < nu:
            raise ValueError(f"dropouts names user {uid}, but the users are 0..{nu - 1}")
        drop.add(int(uid))
    ex0, ex1 = check_server_executors(executors)
    dense_size = 0 if dense is None else int(np.asarray(dense[0]).size)
    params = SecEmbParams(m=m, d=d, m_prime=m_prime, frac_bits=frac_bits,
                          n_users=n_users or max(1, nu), dense_size=dense_size, agg_bits=agg_bits)
    table = encode_table(Q, params)
    names = [f"user-{u}" for u in range(nu)]
    roster, ids = Roster.make([("server1", "server1")] + [(n, "user") for n in names])
    run = secrets.token_bytes(16)
    s1 = Server1Session(roster, ids["server1"], run=run, min_users=min_users, threads=threads, noise_sigma=noise_sigma,
                        executor=ex1)
    s0 = Server0Session(roster, run=run, min_users=min_users, noise_sigma=noise_sigma, threads=threads,
                        executor=ex0)
    users = {n: UserSession(roster, ids[n], run=run) for n in names}
    net = Loopback() if transport is None else transport
    rnd = round_index
    dropped: dict[str, tuple[str, str]] = {}
    refused: list[tuple[str, str, str]] = []
    secs, nbytes, up, down = {}, {}, {}, {}
    t, c = time.perf_counter, time.process_time      # wall, CPU
    wall: dict[str, float] = {}

    def hop(env: Envelope) -> None:
        net.post(env)

    def fail(stage: str, who: str, why: str) -> None:
        if who in dropped or who not in users:
            refused.append((stage, who, why))
        else:
            dropped[who] = (stage, why)

    def settle(stage: str, batch: dict[str, Envelope], ref: dict[str, str]) -> None:
        # a refused copy of a message whose sender had another copy taken is a refused
        # duplicate (a replay), not a reason to drop that sender
        taken = {e.about for k, e in batch.items() if k not in ref}
        for k, why in ref.items():
            if batch[k].about in taken:
                refused.append((stage, batch[k].about, why))
            else:
                fail(stage, batch[k].about, why)

    # server 1's signed key, relayed by server 0 to every user
    hop(Envelope("key", "server1", "server0", "server1", (s1.key_message(),)))
    key = [e.parts[0] for e in net.deliver() if e.stage == "key" and e.sender == "server1"]
    if not key:
        raise RuntimeError("SecEmb: server 1's key did not arrive; no round without server 1")
    s0.server1_key(key[0])
    s0.begin(rnd, params, table)
    t0, c0 = t(), c()
    for n in names:
        try:
            hop(Envelope("request", n, "server0", n, users[n].retrieve(rnd, params, items[names.index(n)], key[0])))
        except ProtocolError as exc:
            fail("request", n, str(exc))
    secs["user_keygen"], wall["user_keygen"] = c() - c0, t() - t0
    # server 0 answers and relays the sealed requests to server 1
    t0, c0 = t(), c()
    answers0: dict[str, bytes] = {}
    firsts: dict[str, Envelope] = {}
    later: list[Envelope] = []
    for e in net.deliver():
        if e.stage != "request" or len(e.parts) != 2 or e.sender not in users or e.sender in dropped:
            fail("request", e.sender, f"a {e.stage!r} message with {len(e.parts)} part(s) at the request stage")
        elif e.sender in firsts:
            later.append(e)
        else:
            firsts[e.sender] = e
    # the first request of each user in one batch (sharded over server 0's executor, if any)
    answered0, bad = s0.answer_many(rnd, {n: e.parts[0] for n, e in firsts.items()})
    for n, why in bad.items():
        fail("request", n, why)
    for n, e in firsts.items():
        if n in answered0:
            answers0[n] = answered0[n]
            hop(Envelope("answer", "server0", "server1", n, (e.parts[1],)))
    for e in later:                                 # copies: refused unless the first was
        try:
            answers0[e.sender] = s0.answer(rnd, e.sender, e.parts[0])
            hop(Envelope("answer", "server0", "server1", e.sender, (e.parts[1],)))
        except ProtocolError as exc:
            fail("request", e.sender, str(exc))
    nbytes["user_keygen"] = sum(len(p) for e in net.log if e.stage == "request" for p in e.parts)
    up["retrieval"] = nbytes["user_keygen"] / max(1, nu) / 2
    batch = {f"{e.about}#{i}": e for i, e in enumerate(net.deliver()) if e.stage == "answer"}
    out, ref = s1.answer(rnd, params, table, {k: e.parts[0] for k, e in batch.items()})
    settle("answer", batch, ref)
    for k, sealed in out.items():
        hop(Envelope("answered", "server1", "server0", batch[k].about, (sealed,)))
    for e in net.deliver():
        if e.about in answers0 and e.about not in dropped:
            hop(Envelope("reply", "server0", e.about, e.about, (answers0[e.about], e.parts[0])))
    secs["server_retrieval"], wall["server_retrieval"] = c() - c0, t() - t0
    retrieved = {n: np.full((len(np.asarray(items[u])), d), np.nan) for u, n in enumerate(names)}
    t0, c0 = t(), c()
    replies = net.deliver()
    nbytes["server_retrieval"] = sum(len(p) for e in replies if e.stage == "reply" for p in e.parts)
    down["retrieval"] = nbytes["server_retrieval"] / max(1, nu) / 2
    rec_cpu = rec_wall = 0.0
    for e in replies:
        n = e.receiver
        try:
            if e.stage != "reply" or n not in users or len(e.parts) != 2:
                raise ProtocolError(f"a {e.stage!r} message with {len(e.parts)} part(s) at the reply stage")
            r0, w0 = c(), t()
            try:
                retrieved[n] = users[n].reconstruct(rnd, e.parts[0], e.parts[1])
            finally:
                rec_cpu, rec_wall = rec_cpu + c() - r0, rec_wall + t() - w0
            u = names.index(n)
            if u in drop:
                continue
            hop(Envelope("upload", n, "server0", n, users[n].upload(
                rnd, grads[u], None if dense is None else dense[u], clip=clip)))
        except ProtocolError as exc:
            fail("reply", n, str(exc))
    secs["user_reconstruct"], wall["user_reconstruct"] = rec_cpu, rec_wall
    secs["user_upload"], wall["user_upload"] = c() - c0 - rec_cpu, t() - t0 - rec_wall
    t0, c0 = t(), c()
    uploads = [e for e in net.deliver() if e.stage == "upload" and len(e.parts) == 2 and e.sender in users]
    nbytes["user_upload"] = sum(len(p) for e in uploads for p in e.parts)
    up["aggregation"] = nbytes["user_upload"] / max(1, nu - len(drop)) / 2
    first: dict[str, Envelope] = {}
    for e in uploads:
        if e.sender in first:
            refused.append(("upload", e.sender, "a second upload this round"))
        else:
            first[e.sender] = e
    for n, why in s0.aggregate(rnd, {n: e.parts[0] for n, e in first.items()}).items():
        fail("upload", n, why)
    s0.precompute()
    for n, e in first.items():
        hop(Envelope("aggregate", "server0", "server1", n, (e.parts[1],)))
    batch = {f"{e.about}#{i}": e for i, e in enumerate(net.deliver()) if e.stage == "aggregate"}
    try:
        share, ref = s1.aggregate(rnd, {k: e.parts[0] for k, e in batch.items()})
    except ProtocolError as exc:
        raise RuntimeError(f"SecEmb round {rnd} failed: {exc}; dropped: {dropped}") from None
    settle("aggregate", batch, ref)
    hop(Envelope("share", "server1", "server0", "server1", (share,)))
    got = [e for e in net.deliver() if e.stage == "share" and e.sender == "server1"]
    if not got:
        raise RuntimeError(f"SecEmb round {rnd} failed: server 1's share did not arrive")
    try:
        agg, dn, summed = s0.reconstruct(rnd, got[0].parts[0])
    except ProtocolError as exc:
        raise RuntimeError(f"SecEmb round {rnd} failed: {exc}") from None
    secs["server_aggregation"], wall["server_aggregation"] = c() - c0, t() - t0
    nbytes["server_aggregation"] = len(share)
    res = SecEmbRoundResult(params=params, seconds=secs, wall=wall, bytes=nbytes,
                            retrieved=[retrieved[n] for n in names], aggregate=agg, dense=dn, bytes_up=up,
                            bytes_down=down, dropped=dropped, refused=refused, summed=summed)
    if verify:
        ok, what = plaintext_check(Q, items, grads, params, res, dense=dense, dropouts=drop, clip=clip)
        if not ok:
            raise AssertionError(f"SecEmb: {what}")
        res.verified = True
    return res
