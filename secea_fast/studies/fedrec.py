"""Federated matrix factorisation on SecEmb, and the plaintext run it must equal.

SecEmb's "lossless" claim (Mai et al. 2025, Sec. 5.3): the secure protocol changes
nothing but the fixed-point rounding.  ``train_mf(..., secure=True)`` runs
every round through ``secemb.User`` / ``secemb.Server`` with real messages;
``secure=False`` runs plain FedRec with the same quantization (the retrieved
rows and the uploaded gradients rounded to 2^-f).  The two return identical
models, bit for bit, when m' covers every user's items (no truncation).

Model: r_ui ~ p_u . q_i; user factors P stay on the devices, item factors Q
on the servers; loss (r - p.q)^2 / 2 + reg (|p|^2 + |q|^2) / 2; each active
user takes one gradient step on p_u and uploads its q-gradients; the server
steps Q with the sum.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..protocols.secemb import (AggregationUpload, SecEmbParams, Server, User, decode_fixed, encode_fixed, encode_table,
                     reconstruct_aggregate)

__all__ = ["make_ratings", "train_mf", "secemb_retrieve", "secemb_aggregate"]


def make_ratings(n_users: int, m: int, rank: int = 4, density: float = 0.05,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A generated low-rank rating matrix and its observation mask (simulation data)."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n_users, rank)) / np.sqrt(rank)
    V = rng.normal(size=(m, rank))
    R = U @ V.T + 0.1 * rng.normal(size=(n_users, m))
    mask = rng.random((n_users, m)) < density
    for u in range(n_users):                 # every user rates at least one item
        if not mask[u].any():
            mask[u, rng.integers(m)] = True
    return R, mask


def secemb_retrieve(Q: ArrayLike, params: SecEmbParams, requests: dict[Any, ArrayLike],
                    threads: int | None = None) -> tuple[list[Server], dict[Any, User], dict[Any, np.ndarray], int]:
    """One SecEmb retrieval for every user of ``requests`` (user id -> its
    item ids), with real messages: (servers, users, rows, bytes) where
    ``rows[u]`` are the rows of Q at u's items as u reconstructs them."""
    table = encode_table(Q, params)
    servers = [Server(0, params, table, threads), Server(1, params, table, threads)]
    users = {u: User(params, it) for u, it in requests.items()}
    rows, nbytes = {}, 0
    for u, usr in users.items():
        r0, r1 = usr.retrieval_request()
        a0, a1 = servers[0].answer(u, r0), servers[1].answer(u, r1)
        nbytes += r0.nbytes + r1.nbytes + a0.nbytes + a1.nbytes
        rows[u] = usr.reconstruct(a0, a1)
    return servers, users, rows, nbytes


def secemb_aggregate(servers: Sequence[Server], users: dict[Any, User], grads: Mapping[Any, ArrayLike],
                     params: SecEmbParams) -> tuple[np.ndarray, int]:
    """The SecEmb aggregation of ``grads[u]`` (one row per item of user u's
    retrieval) after :func:`secemb_retrieve`: (m x d sum, bytes)."""
    ups: tuple[dict[Any, AggregationUpload], dict[Any, AggregationUpload]] = ({}, {})
    nbytes = 0
    for u, usr in users.items():
        up0, up1 = usr.aggregation_upload(grads[u])
        ups[0][u], ups[1][u] = up0, up1
        nbytes += up0.nbytes + up1.nbytes
    sh = [servers[b].aggregate(ups[b]) for b in (0, 1)]
    return reconstruct_aggregate(sh[0], sh[1], params)[0], nbytes


def _quant(x, params):
    return decode_fixed(encode_fixed(x, params, bound_fixed=2**62), params)


def train_mf(R: np.ndarray, mask: np.ndarray, *, d: int = 8, rounds: int = 10, users_per_round: int = 16,
             lr: float = 0.05, reg: float = 0.01, m_prime: int | None = None, secure: bool = True,
             frac_bits: int = 16, seed: int = 0, threads: int | None = None) -> dict[str, Any]:
    """Returns {"P", "Q", "loss" (per round, observed entries), "seconds", "bytes"}."""
    R = np.asarray(R, dtype=np.float64)
    n_users, m = R.shape
    rng = np.random.default_rng(seed)                     # model init and user sampling: not secrets
    P = rng.normal(scale=0.1, size=(n_users, d))
    Q = rng.normal(scale=0.1, size=(m, d))
    items = [np.flatnonzero(mask[u]) for u in range(n_users)]
    mp = m_prime or max(len(it) for it in items)
    params = SecEmbParams(m=m, d=d, m_prime=mp, frac_bits=frac_bits, n_users=users_per_round)
    losses, t_total, nbytes = [], 0.0, 0
    for _ in range(rounds):
        active = rng.choice(n_users, size=min(users_per_round, n_users), replace=False)
        t0 = time.perf_counter()
        if secure:
            servers, users, rows, nb = secemb_retrieve(Q, params, {int(u): items[u] for u in active}, threads)
            nbytes += nb
        else:
            rows = {int(u): _quant(Q[items[u]], params) for u in active}
        grads = {}
        for u in rows:
            q = rows[u]                                   # retrieved (quantized) item rows
            err = R[u, items[u]] - q @ P[u]
            gq = -np.outer(err, P[u]) + reg * q
            gp = -(err @ q) + reg * P[u]
            P[u] -= lr * gp
            grads[u] = gq
        if secure:
            agg, nb = secemb_aggregate(servers, users, grads, params)
            nbytes += nb
        else:
            agg = np.zeros((m, d))
            for u, g in grads.items():
                np.add.at(agg, items[u], _quant(g, params))
        Q -= lr * agg
        t_total += time.perf_counter() - t0
        pred = (P @ Q.T)[mask]
        losses.append(float(np.mean((R[mask] - pred) ** 2)))
    return {"P": P, "Q": Q, "loss": losses, "seconds": t_total, "bytes": nbytes}
