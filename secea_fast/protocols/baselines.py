"""Baselines the protocols are compared with.

``embavg_rows`` (arrays) and ``embavg`` (one dict per client) are the one
plaintext EmbAvg of the package, in floats or on the fixed-point rows SecEA
sums (its output bit for bit); the studies, the command line and the Flower
training example call them.  ``embavg_round`` and ``psi_sa_round``: the EmbAvg and PSI settings of
SecEA's evaluation (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 6, Tables 3-4).  EmbAvg: every client
sends its embeddings to the server in the clear, the server averages each
entity over its holders (eq. 5) and returns the averages: no privacy, the
reference result.  PSI + secure aggregation: the clients first learn the
intersection of all their entity sets (the PSI step is simulated in the
clear here: it is a one-time cost the paper's PSI column does not include
either), then run pairwise-masked secure aggregation (Bonawitz et al.) over
the quantized embeddings of the intersection only; entities outside the
intersection are not aggregated (each client keeps its own embedding),
which is the utility loss SecEA removes.

``secure_fedrec_round``: "Secure FedRec" of SecEmb's evaluation (Mai et al. 2025,
Sec. 5.2 and Table 6): every user downloads the whole item table and uploads
two-server additive shares of its full m x d gradient matrix (zeros off its
rated rows) over Z_2^64; each server sums its shares; server 0 adds the two
sums.  Same fixed point and the same result type as ``secemb.run_round``
(retrieved rows, aggregate, per-phase seconds and bytes).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_int
from ._inputs import Dicts, check_local, id_bytes
from .secemb import SecEmbParams, SecEmbRoundResult, additive_shares, decode_fixed, encode_fixed, encode_table

__all__ = ["embavg_rows", "embavg", "secure_fedrec_round", "embavg_round", "psi_sa_round"]


def embavg_rows(ids: Sequence[ArrayLike], rows: Sequence[ArrayLike], n_entities: int, *,
                precision: int | None = None) -> list[np.ndarray]:
    """EmbAvg (SecEA eq. 5) on arrays: client n holds the entities
    ``ids[n]`` (distinct ints in [0, n_entities)) with ``rows[n][j]`` the row
    of ``ids[n][j]``; returns, per client, the average of each of its rows
    over the clients holding that entity (clients summed in order, then
    divided by the holder count).  ``precision``: average the fixed-point
    rows instead -- q = rint(row 10^precision) (round half to even), summed
    exactly, then sum / 10^precision / count: SecEA(precision)'s output bit
    for bit.  Raises ValueError/TypeError naming ``ids``, ``rows`` or
    ``n_entities``."""
    n_entities = check_int(n_entities, "n_entities")
    if len(ids) != len(rows) or not rows:
        raise ValueError(f"ids and rows must be one array per client (at least one), got {len(ids)} and "
                         f"{len(rows)}")
    idx = [np.asarray(i) for i in ids]
    mats = [np.asarray(r, dtype=np.float64) for r in rows]
    width = mats[0].shape[1] if mats[0].ndim == 2 else -1
    for n, (i, r) in enumerate(zip(idx, mats)):
        if i.ndim != 1 or (i.size and not np.issubdtype(i.dtype, np.integer)):
            raise TypeError(f"ids[{n}] must be a 1-D integer array, got dtype {i.dtype}, shape {i.shape}")
        if r.ndim != 2 or r.shape != (len(i), width):
            raise ValueError(f"rows[{n}] must have shape ({len(i)}, {width}), got {r.shape}")
        if i.size and (i.min() < 0 or i.max() >= n_entities):
            raise ValueError(f"ids[{n}] must lie in [0, n_entities = {n_entities})")
    if precision is None:
        tot = np.zeros((n_entities, width))
        for i, r in zip(idx, mats):
            tot[i] += r
    else:
        scale = 10.0 ** check_int(precision, "precision")
        tot = np.zeros((n_entities, width), dtype=np.int64)
        for n, (i, r) in enumerate(zip(idx, mats)):
            q = np.rint(r * scale)
            if q.size and not np.all(np.abs(q) < 2.0**53 / len(rows)):
                raise ValueError(f"rows[{n}] times 10^{precision} must be finite and below 2^53 / "
                                 f"{len(rows)} in magnitude (exact int64 sums)")
            tot[i] += q.astype(np.int64)
    cnt = np.zeros(n_entities, dtype=np.int64)
    for i in idx:
        cnt[i] += 1
    if precision is None:
        return [tot[i] / cnt[i][:, None] for i in idx]
    return [tot[i].astype(np.float64) / scale / cnt[i][:, None].astype(np.float64) for i in idx]


def embavg(local: Dicts, precision: int | None = None) -> list[dict[Any, np.ndarray]]:
    """:func:`embavg_rows` on one dict per client (entity id -> 1-D row;
    ids are matched as SecEA matches them, by ``id_bytes``): one dict per
    client with the average of each of its entities."""
    width = check_local(local)
    index: dict[bytes, int] = {}
    ids = [np.array([index.setdefault(id_bytes(k), len(index)) for k in emb], dtype=np.int64) for emb in local]
    rows = [np.array([np.asarray(v, dtype=np.float64) for v in emb.values()]).reshape(len(emb), width)
            for emb in local]
    avg = embavg_rows(ids, rows, len(index), precision=precision)
    return [dict(zip(emb, a)) for emb, a in zip(local, avg)]


def embavg_round(local: Dicts) -> dict[str, Any]:
    """EmbAvg (no privacy) timed and counted: returns {"embeddings": [per
    client dict] (:func:`embavg`), "seconds": {...}, "bytes": {...}}."""
    t0 = time.perf_counter()
    out = embavg(local)
    dt = time.perf_counter() - t0
    nb = sum(8 * len(emb) * (len(next(iter(emb.values()))) + 1) for emb in local)
    return {"embeddings": out, "seconds": {"server": dt}, "bytes": {"up": nb, "down": nb}}


def psi_sa_round(local: Dicts, precision: int = 8, bound: float = 100.0) -> dict[str, Any]:
    """PSI + pairwise-masked secure aggregation over the intersection (see
    the module docstring).  Returns embeddings, seconds, bytes and the
    intersection size."""
    from ..field import EMBEDDING_PRIME as P
    from .. import field as F
    from ..fixedpoint import FixedPoint
    from ..prg import Prg, random_seed
    N = len(local)
    fx = FixedPoint(P, digits=precision, bound=bound, n_summands=N)
    keys = [{id_bytes(k): k for k in emb} for emb in local]
    common = sorted(set.intersection(*(set(k) for k in keys)))
    d = len(np.asarray(next(iter(local[0].values()))).reshape(-1))
    t0 = time.perf_counter()
    seeds = {(a, b): random_seed(32) for a in range(N) for b in range(a + 1, N)}
    uploads = []
    for n, emb in enumerate(local):
        x = fx.encode(np.array([emb[keys[n][k]] for k in common]).reshape(len(common), d)).reshape(-1)
        for (a, b), sd in seeds.items():
            if n in (a, b):
                Prg(sd, f"psi-sa/{a}-{b}").field_into(x, P, base=x, negate=(n == b))
        uploads.append(x)
    t_cli = time.perf_counter() - t0
    t0 = time.perf_counter()
    tot = uploads[0]
    for x in uploads[1:]:
        tot = F.add(tot, x, P)
    t_srv = time.perf_counter() - t0
    avg = fx.decode(tot.reshape(len(common), d), divisor=N) if common else np.zeros((0, d))
    idx = {k: i for i, k in enumerate(common)}
    out = [{key: (avg[idx[kb]] if kb in idx else np.asarray(emb[key], dtype=np.float64))
            for kb, key in keys[n].items()} for n, emb in enumerate(local)]
    nb = 8 * len(common) * d * N
    return {"embeddings": out, "seconds": {"clients": t_cli, "server": t_srv},
            "bytes": {"up": nb, "down": nb}, "intersection": len(common)}


def secure_fedrec_round(Q: ArrayLike, items: Sequence[ArrayLike], grads: Sequence[ArrayLike], *,
                        frac_bits: int = 16, n_users: int | None = None) -> SecEmbRoundResult:
    """One Secure FedRec round (see the module docstring), every party
    simulated; returns a ``secemb.SecEmbRoundResult``."""
    Q = np.asarray(Q, dtype=np.float64)
    m, d = Q.shape
    nu = len(items)
    params = SecEmbParams(m=m, d=d, m_prime=1, frac_bits=frac_bits, n_users=n_users or max(1, nu))
    table = encode_table(Q, params)
    rep = SecEmbRoundResult(params=params, seconds={}, wall={}, bytes={})
    rep.bytes_down["retrieval"] = float(table.nbytes)              # the whole table, per user
    rep.bytes["server_retrieval"] = 2 * nu * table.nbytes           # both servers send it
    rep.retrieved = [decode_fixed(table[np.asarray(it, dtype=np.int64)], params) for it in items]
    t0 = time.perf_counter()
    shares = []
    for it, g in zip(items, grads):
        full = np.zeros((m, d))
        full[np.asarray(it, dtype=np.int64)] = np.asarray(g, dtype=np.float64)
        shares.append(additive_shares(encode_fixed(full, params), b"secure-fedrec/share"))
    rep.seconds["user_upload"] = time.perf_counter() - t0
    rep.bytes_up["aggregation"] = float(m * d * 8)                  # per user, per server
    rep.bytes["user_upload"] = 2 * nu * m * d * 8
    t0 = time.perf_counter()
    acc = [np.zeros((m, d), dtype=np.uint64), np.zeros((m, d), dtype=np.uint64)]
    for s0, s1 in shares:
        acc[0] += s0
        acc[1] += s1
    rep.seconds["server_aggregation"] = time.perf_counter() - t0
    rep.aggregate = decode_fixed(acc[0] + acc[1], params)
    rep.dense = np.zeros(0)
    rep.wall = dict(rep.seconds)
    return rep
