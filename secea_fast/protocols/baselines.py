"""Baselines the protocols are compared with.

``secure_fedrec_round``: "Secure FedRec" of SecEmb's evaluation (seed 003,
Sec. 5.2 and Table 6): every user downloads the whole item table and uploads
two-server additive shares of its full m x d gradient matrix (zeros off its
rated rows) over Z_2^64; each server sums its shares; server 0 adds the two
sums.  Same fixed point and the same (retrieved, aggregate) contract as
``secemb.simulate_round``, with byte counts and per-phase seconds.
"""
from __future__ import annotations

import time

import numpy as np

from .secemb import RoundReport, SecEmbParams, additive_shares, decode_fixed, encode_fixed, encode_table

__all__ = ["secure_fedrec_round"]


def secure_fedrec_round(Q, items, grads, *, frac_bits=16, n_users=None, report=False):
    Q = np.asarray(Q, dtype=np.float64)
    m, d = Q.shape
    nu = len(items)
    params = SecEmbParams(m=m, d=d, m_prime=1, frac_bits=frac_bits, n_users=n_users or max(1, nu))
    table = encode_table(Q, params)
    rep = RoundReport([], None, None)
    rep.bytes_down["retrieval"] = float(table.nbytes)              # the whole table, per user
    rep.retrieved = [decode_fixed(table[np.asarray(it, dtype=np.int64)], params) for it in items]
    t0 = time.perf_counter()
    shares = []
    for it, g in zip(items, grads):
        full = np.zeros((m, d))
        full[np.asarray(it, dtype=np.int64)] = np.asarray(g, dtype=np.float64)
        shares.append(additive_shares(encode_fixed(full, params), b"secure-fedrec/share"))
    rep.seconds["user_upload"] = time.perf_counter() - t0
    rep.bytes_up["aggregation"] = float(m * d * 8)                  # per user, per server
    t0 = time.perf_counter()
    acc = [np.zeros((m, d), dtype=np.uint64), np.zeros((m, d), dtype=np.uint64)]
    for s0, s1 in shares:
        acc[0] += s0
        acc[1] += s1
    rep.seconds["server_aggregation"] = time.perf_counter() - t0
    rep.aggregate = decode_fixed(acc[0] + acc[1], params)
    rep.dense = np.zeros(0)
    if report:
        return rep
    return rep.retrieved, rep.aggregate
