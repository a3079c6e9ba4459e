"""A SecEmb round with both servers and every user simulated in this
process, the messages round-tripped through their byte encodings
(Mai et al. 2025, Sec. 4, Algorithm 3), and its check against plaintext."""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from ..common.rounds import RoundResult
from .messages import AggregateShare, AggregationUpload, RetrievalRequest, RetrievalResponse
from .params import SecEmbParams, check_real, encode_table
from .parties import Server, User, reconstruct_aggregate

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
    * ``bytes_up`` / ``bytes_down``: bytes per user and server of the
      retrieval and aggregation stages (the unit of the paper's Table 15)."""
    params: SecEmbParams  # the type argument, named here for the API reference (pdoc)
    retrieved: list = dc_field(default_factory=list)
    aggregate: Optional[np.ndarray] = None
    dense: Optional[np.ndarray] = None
    bytes_up: dict = dc_field(default_factory=dict)
    bytes_down: dict = dc_field(default_factory=dict)

    PROTOCOL = "secemb"
    PHASES = ("user_keygen", "server_retrieval", "user_upload", "server_aggregation")


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
              threads: int | None = None, verify: bool = False, agg_bits: int = 64) -> SecEmbRoundResult:
    """One SecEmb round run locally with real messages (bytes round-tripped).

    ``Q``: m x d float item table; ``items[u]``: user u's rated item ids;
    ``grads[u]``: |items[u]| x d gradient rows; ``dense[u]``: optional dense
    updates; ``dropouts``: users that retrieve but do not upload;
    ``noise_sigma``: the servers' Gaussian noise (Appendix G); ``clip``:
    per-row gradient clipping; ``agg_bits``: the aggregation ring Z_2^b
    (64, or the paper's 32: ``SecEmbParams``).  ``verify``: compare with plaintext
    (:func:`plaintext_check`) and raise AssertionError on any difference
    (needs ``noise_sigma == 0``).  Core and wall seconds are equal: the
    parties run one after another.  A user's seconds include serialising its
    messages; a server's include parsing the ones it receives."""
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
    dense_size = 0 if dense is None else int(np.asarray(dense[0]).size)
    params = SecEmbParams(m=m, d=d, m_prime=m_prime, frac_bits=frac_bits,
                          n_users=n_users or max(1, nu), dense_size=dense_size, agg_bits=agg_bits)
    table = encode_table(Q, params)
    servers = [Server(0, params, table, threads), Server(1, params, table, threads)]
    users = [User(params, it) for it in items]
    secs, nbytes = {}, {}
    up, down = {}, {}
    t = time.perf_counter
    t0 = t()
    reqs = [tuple(r.to_bytes() for r in u.retrieval_request()) for u in users]     # the user serialises
    secs["user_keygen"] = t() - t0
    nbytes["user_keygen"] = sum(len(r) for pair in reqs for r in pair)
    up["retrieval"] = nbytes["user_keygen"] / max(1, nu) / 2
    t0 = t()
    answers = []
    for uid, (r0, r1) in enumerate(reqs):
        a0 = servers[0].answer(uid, RetrievalRequest.from_bytes(r0))
        a1 = servers[1].answer(uid, RetrievalRequest.from_bytes(r1))
        answers.append((a0, a1))
    secs["server_retrieval"] = t() - t0
    nbytes["server_retrieval"] = sum(a.nbytes for pair in answers for a in pair)
    down["retrieval"] = nbytes["server_retrieval"] / max(1, nu) / 2
    retrieved = [u.reconstruct(RetrievalResponse.from_bytes(a0.to_bytes()),
                               RetrievalResponse.from_bytes(a1.to_bytes()))
                 for u, (a0, a1) in zip(users, answers)]
    ups: list[dict[Any, Any]] = [{}, {}]   # bytes, then the parsed uploads
    t0 = t()
    for uid, u in enumerate(users):
        if uid in drop:
            continue
        up0, up1 = u.aggregation_upload(grads[uid], None if dense is None else dense[uid], clip=clip)
        ups[0][uid], ups[1][uid] = up0.to_bytes(), up1.to_bytes()     # the user serialises
    secs["user_upload"] = t() - t0
    nbytes["user_upload"] = sum(len(x) for s in ups for x in s.values())
    up["aggregation"] = nbytes["user_upload"] / max(1, nu - len(drop)) / 2
    t0 = t()
    ups = [{uid: AggregationUpload.from_bytes(x) for uid, x in s.items()} for s in ups]   # the servers parse
    shares = [servers[b].aggregate(ups[b], noise_sigma) for b in (0, 1)]
    secs["server_aggregation"] = t() - t0
    nbytes["server_aggregation"] = shares[1].nbytes        # server 1's share to the reconstructor
    agg, dn = reconstruct_aggregate(shares[0], AggregateShare.from_bytes(shares[1].to_bytes()), params)
    res = SecEmbRoundResult(params=params, seconds=secs, wall=dict(secs), bytes=nbytes,
                            retrieved=retrieved, aggregate=agg, dense=dn, bytes_up=up, bytes_down=down)
    if verify:
        ok, what = plaintext_check(Q, items, grads, params, res, dense=dense, dropouts=drop, clip=clip)
        if not ok:
            raise AssertionError(f"SecEmb: {what}")
        res.verified = True
    return res
