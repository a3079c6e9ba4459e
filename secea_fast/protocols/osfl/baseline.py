"""The Approach 1 baseline (Sec. IV) of Egger, Urbanke, Bitar (2025),
One-shot federated learning with objective hiding: Shamir sharing of every
label with every client (rho = n), the simple PIR query, answers from
z_s + z_q + 1 clients and Lagrange interpolation at 0; same messages and
result type (``OSFLRoundResult``) as the main scheme.
"""
from __future__ import annotations

import time

import numpy as np
from numpy.typing import ArrayLike

from ... import field, linalg, poly
from ..._checks import check_elements, check_int, check_prime
from ...field import EMBEDDING_PRIME
from ...nt import primitive_root
from .messages import Answer, Query, ShareMessage
from .params import Assignment, check_objective, check_rng, evaluate, lincomb, powers
from .round import OSFLRoundResult, check_label_tensor

__all__ = ["approach1"]

_U64 = np.uint64


# ----------------------------------------------------------------- Approach 1 (Sec. IV)
def approach1(labels: ArrayLike, j: int, z_s: int, z_q: int, *, p: int = EMBEDDING_PRIME, levels: int | None = None,
              wire: bool = False, threads: int | None = None, verify: bool = False) -> OSFLRoundResult[None]:
    """Approach 1 of Sec. IV: Shamir sharing f(x) = y + sum_{tau=1}^{z_s} x^tau r_tau
    of every label (rho = n: every client computes every objective), the simple
    PIR query q^(t,j)(x) = delta_{tj} + sum_{tau=1}^{z_q} x^tau k_tau^(t) (scalar
    randomness, as deviation 2), answers A^i = sum_t F^(t)(alpha_i) q^(t,j)(alpha_i)
    from the first z_s + z_q + 1 clients, and Lagrange interpolation at 0 of the
    degree z_s + z_q answer polynomial.

    ``labels``: (n, T, s, c) non-negative integers.  Returns an
    ``OSFLRoundResult`` whose ``sums`` is the (s, c) int64 sum over all
    clients of labels[:, j] (``verify``: checked against that plaintext sum).
    Sharing costs T n (n - 1) s c field elements, the download (z_s + z_q + 1) s c."""
    p = check_prime(p)
    if not isinstance(labels, np.ndarray) or labels.ndim != 4:
        raise TypeError("labels must be a numpy integer array of shape (n, T, s, c)")
    n, T, s, c = labels.shape
    asg = Assignment(np.ones((n, T), dtype=np.uint8))
    labels = check_label_tensor(labels, n, T, p, levels, [asg.clients(t) for t in range(T)])
    z_s, z_q = check_int(z_s, "z_s"), check_int(z_q, "z_q")
    if z_s < 0 or z_q < 0:
        raise ValueError(f"z_s and z_q must be >= 0, got z_s={z_s}, z_q={z_q}")
    N = z_s + z_q + 1
    if n < N:
        raise ValueError(f"Approach 1 needs n >= z_s + z_q + 1 = {N} clients, got n = {n}")
    if n > p - 1:
        raise ValueError(f"the field is too small: n = {n} clients need n <= p - 1 = {p - 1}")
    if levels is not None:
        levels = check_int(levels, "levels")
        if levels < 2 or p < (levels - 1) * n:
            raise ValueError(f"need levels >= 2 and the capacity check p >= (levels - 1) n, got levels={levels}")
        if int(labels.max()) >= levels:
            raise ValueError(f"labels have an entry >= levels = {levels}")
    j = check_objective(j, T)
    alpha = primitive_root(p)
    pts = np.array(powers(alpha, n + 1, p)[1:], dtype=_U64)
    V = poly.vandermonde(pts, z_s + 1, p)                              # n x (z_s + 1)
    sc = s * c
    rep = OSFLRoundResult(params=None, seconds={}, wall={}, bytes={}, info={"n": n, "T": T, "rho": n, "z_s": z_s, "z_q": z_q, "s": s, "c": c, "p": p,
                          "scheme": "approach1"})
    acc = np.zeros((n, T, sc), dtype=_U64)
    g = check_rng(None, b"approach1/share")
    t_share = t_agg = 0.0
    nbytes = elems = 0
    for i in range(n):
        for t in range(T):
            t0 = time.perf_counter()
            C = np.empty((z_s + 1, sc), dtype=_U64)
            C[0] = labels[i, t].reshape(-1)
            g.field_into(C[1:], p)
            S = evaluate(V, C, p, threads=threads)
            t1 = time.perf_counter()
            for i1 in range(n):
                row = S[i1]
                if i1 != i:
                    m = ShareMessage(i, i1, t, row.reshape(s, c))
                    nbytes += m.nbytes
                    elems += m.elements
                    if wire:
                        m = ShareMessage.from_bytes(m.to_bytes())
                    row = check_elements(m.values, p, "ShareMessage.values", ndim=2).reshape(-1)
                acc[i1, t] = field.add(acc[i1, t], row, p)
            t_share += t1 - t0
            t_agg += time.perf_counter() - t1
    rep.seconds.update(share=t_share, aggregate=t_agg)
    rep.bytes["sharing"], rep.elements["sharing"] = nbytes, elems

    t0 = time.perf_counter()
    k = check_rng(None, b"approach1/query").field(T * z_q, p).reshape(T, z_q)
    E = poly.vandermonde(pts[:N], z_q + 1, p)[:, 1:]                    # N x z_q: alpha_i^tau
    Q = linalg.matmul(k, np.ascontiguousarray(E.T), p) if z_q else np.zeros((T, N), dtype=_U64)
    Q[j] = field.add(Q[j], 1 % p, p)
    queries = [Query(i, np.arange(T, dtype=_U64), np.ascontiguousarray(Q[:, i])) for i in range(N)]
    rep.seconds["query"] = time.perf_counter() - t0
    rep.bytes["queries"] = sum(q.nbytes for q in queries)
    rep.elements["queries"] = sum(q.elements for q in queries)

    t0 = time.perf_counter()
    answers = []
    for i, qu in enumerate(queries):
        if wire:
            qu = Query.from_bytes(qu.to_bytes())
        ai = lincomb(qu.values, acc[i], sc, p)
        answers.append(Answer(i, ai.reshape(s, c)))
    rep.seconds["answer"] = time.perf_counter() - t0
    rep.bytes["answers"] = sum(a.nbytes for a in answers)
    rep.elements["answers"] = sum(a.elements for a in answers)

    t0 = time.perf_counter()
    # Lagrange coefficients at 0 over alpha_1..alpha_N: lambda_i = prod_{k != i} alpha_k / (alpha_k - alpha_i)
    xs = [int(x) for x in pts[:N]]
    lam = []
    for a, xa in enumerate(xs):
        num = den = 1
        for b, xb in enumerate(xs):
            if b != a:
                num = num * xb % p
                den = den * (xb - xa) % p
        lam.append(num * pow(den, p - 2, p) % p)
    A = np.stack([(Answer.from_bytes(a.to_bytes()) if wire else a).values.reshape(-1) for a in answers])
    Y = linalg.matmul(np.array([lam], dtype=_U64), A, p, threads=threads)
    rep.seconds["reconstruct"] = time.perf_counter() - t0
    rep.sums = Y.reshape(s, c).astype(np.int64)
    rep.wall = dict(rep.seconds)
    if verify:
        if not (rep.sums.astype(object) == labels[:, j].astype(object).sum(axis=0)).all():
            raise AssertionError(f"Approach 1: the retrieved sums of objective {j} differ from the plaintext sums")
        rep.verified = True
    return rep
