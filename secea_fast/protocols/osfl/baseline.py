"""The Approach 1 baseline (Sec. IV) of Egger, Urbanke, Bitar (2025),
One-shot federated learning with objective hiding: Shamir sharing of every
label with every client (rho = n), the simple PIR query, answers from
z_s + z_q + 1 clients and Lagrange interpolation at 0; same messages and
result type (``OSFLRoundResult``) as the main scheme, over the same sessions
and loopback driver (``osfl.session``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ... import field, linalg, poly
from ..._checks import check_int, check_prime
from ...field import EMBEDDING_PRIME
from ...nt import primitive_root
from ...prg import random_seed
from .approaches import Scheme
from .messages import Answer, Query
from .params import Assignment, check_objective, evaluate, lincomb, powers
from .round import OSFLRoundResult, check_label_tensor
from .session import ClientSession, FederatorSession, drive

__all__ = ["approach1", "Approach1"]

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
    scheme = Approach1(n, T, s, c, z_s, z_q, p=p, threads=threads)
    rep = OSFLRoundResult(params=None, seconds={}, wall={}, bytes={}, info={"n": n, "T": T, "rho": n, "z_s": z_s, "z_q": z_q, "s": s, "c": c, "p": p,
                          "scheme": "approach1"})
    round_id = random_seed(16)
    clients = [ClientSession(scheme.client(i, {t: labels[i, t] for t in range(T)}), round_id=round_id)
               for i in range(n)]
    out = drive(clients, FederatorSession(scheme.federator(j), round_id=round_id), wire=wire)
    assert out.sums is not None                      # drive returns only with the sums
    rep.seconds.update(out.seconds)
    rep.bytes.update(out.bytes)
    rep.elements.update(out.elements)
    rep.sums = out.sums.astype(np.int64)
    rep.wall = dict(rep.seconds)
    if verify:
        if not (rep.sums.astype(object) == labels[:, j].astype(object).sum(axis=0)).all():
            raise AssertionError(f"Approach 1: the retrieved sums of objective {j} differ from the plaintext sums")
        rep.verified = True
    return rep


class Approach1(Scheme):
    """The public parameters and per-party steps of Approach 1 (Sec. IV), run
    by ``approach1`` over the sessions of ``osfl.session``: Shamir shares
    f(alpha_i) of every label with z_s random coefficients, the query
    delta_tj + sum_tau alpha_i^tau k_tau^(t) to the first N = z_s + z_q + 1
    clients, Lagrange interpolation at 0 of their answers.  No symmetric mode."""

    name = "approach1"

    def __init__(self, n: int, T: int, s: int, c: int, z_s: int, z_q: int, *, p: int = EMBEDDING_PRIME,
                 threads: int | None = None) -> None:
        self.n, self.T, self.s, self.c, self.z_s, self.z_q = n, T, s, c, z_s, z_q
        self.p, self.threads = p, threads
        self.N = z_s + z_q + 1
        self.rho = n
        self.store_cols = s * c
        self.points = np.array(powers(primitive_root(p), n + 1, p)[1:], dtype=_U64)
        self.V = poly.vandermonde(self.points, z_s + 1, p)                  # n x (z_s + 1)
        self.responders = tuple(range(self.N))
        self.answers_shape = (self.N, s * c)

    def members(self, t: int) -> Sequence[int]:
        """Every client holds every objective (rho = n)."""
        return range(self.n)

    def query_len(self, i: int) -> int:
        """One query value per objective."""
        return self.T

    def _share(self, t, labels, rng) -> np.ndarray:
        C = np.empty((self.z_s + 1, self.store_cols), dtype=_U64)
        C[0] = labels.reshape(-1)
        rng.field_into(C[1:], self.p)
        return evaluate(self.V, C, self.p, threads=self.threads)

    def _queries(self, j, rng) -> dict[int, Query]:
        T, N, p, z_q = self.T, self.N, self.p, self.z_q
        k = rng.field(T * z_q, p).reshape(T, z_q)
        E = poly.vandermonde(self.points[:N], z_q + 1, p)[:, 1:]              # N x z_q: alpha_i^tau
        Q = linalg.matmul(k, np.ascontiguousarray(E.T), p) if z_q else np.zeros((T, N), dtype=_U64)
        Q[j] = field.add(Q[j], 1 % p, p)
        return {i: Query(i, np.arange(T, dtype=_U64), np.ascontiguousarray(Q[:, i])) for i in range(N)}

    def _answer(self, i, store, query, mask) -> Answer:
        if mask is not None:
            raise ValueError("Approach 1 has no symmetric mode")
        return Answer(i, lincomb(query.values, store, self.store_cols, self.p).reshape(self.s, self.c))

    def _reconstruct(self, j, A) -> np.ndarray:
        # Lagrange coefficients at 0 over alpha_1..alpha_N: lambda_i = prod_{k != i} alpha_k / (alpha_k - alpha_i)
        p = self.p
        xs = [int(x) for x in self.points[:self.N]]
        lam = []
        for a, xa in enumerate(xs):
            num = den = 1
            for b, xb in enumerate(xs):
                if b != a:
                    num = num * xb % p
                    den = den * (xb - xa) % p
            lam.append(num * pow(den, p - 2, p) % p)
        Y = linalg.matmul(np.array([lam], dtype=_U64), A, p, threads=self.threads)
        return Y.reshape(self.s, self.c)
