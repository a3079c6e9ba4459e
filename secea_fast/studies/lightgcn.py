"""Federated recommendation with LightGCN, the recommendation family of
SecEA's experiments (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 6, Tables 3-4:
LightGCN on MovieLens-1M is its headline timing, Table 4 and Fig. 1).

Data and federation are :mod:`secea_fast.studies.recsys`'s: MovieLens
ratings (``ratings_from_file``) or the ML-1M-shaped synthetic set, items
dealt to N silos (Appendix B, "subgraph-level ... by the items"), users
shared; leave-one-out test cases ranked among 99 of the silo's items,
HR@10 and NDCG@10.  Entities are the users (ids 0 .. U-1) and the items
(ids U .. U+I-1); the aggregated row is an entity's layer-0 embedding.

Model: LightGCN (He, Deng, Wang, Li, Zhang, Wang 2020, "LightGCN:
Simplifying and Powering Graph Convolution Network for Recommendation",
eqs. 3-4): on the silo's user-item graph, normalized adjacency
A = D^-1/2 [[0, R], [R^T, 0]] D^-1/2, final embeddings
F = (E + A E + ... + A^L E) / (L + 1), score f_u . f_i, BPR loss with one
sampled negative item of the silo per positive, L2 on the batch's layer-0
rows, Adam (its moments are the silo's private state).  Propagation is
linear and A symmetric, so the gradient of E is the same propagation of
the gradient of F: every batch is two sparse propagations (SciPy).
"""
from __future__ import annotations

import copy
import os

import numpy as np

from .._checks import check_int
from .framework import Task, client_rng
from .recsys import Ratings, Silos, hr_ndcg, ratings_from_file, synthetic_ratings

__all__ = ["LightGCNTask", "build"]


def _sparse():
    try:
        import scipy.sparse as sp
    except ImportError as exc:                                  # pragma: no cover
        raise ImportError("LightGCN needs scipy: pip install secea_fast[studies]") from exc
    return sp


class LightGCNTask(Task):
    """LightGCN across the silos of :class:`~secea_fast.studies.recsys.Silos`."""
    name = "lightgcn"
    metrics = ("NDCG@10", "HR@10")
    bound = 100.0
    clip = 1.0

    def __init__(self, ratings: Ratings, N: int = 3, *, d: int = 32, layers: int = 2, lr: float = 0.02,
                 reg: float = 1e-4, batch: int = 2048, epochs: int = 1, seed: int = 0,
                 silos: Silos | None = None) -> None:
        self.ratings = ratings
        self.silos = silos if silos is not None else Silos(ratings, N, seed=seed)
        self.width = self.d = check_int(d, "d")
        self.layers, self.lr, self.reg, self.batch, self.epochs, self.seed = layers, lr, reg, batch, epochs, seed
        self._setup()

    def centralized(self) -> LightGCNTask:
        """The "Entire" setting's task (Sec. 6): one client holding every
        silo's ratings (one graph), scored on the same test cases against
        the same candidates (:meth:`~secea_fast.studies.recsys.Silos.merged`)."""
        c = copy.copy(self)
        c.silos = self.silos.merged()
        c._setup()
        return c

    def _setup(self):
        sp, S = _sparse(), self.silos
        self.U = S.n_users
        self.n_entities = S.n_users + S.n_items
        self.ids, self.adj, self.pairs = [], [], []
        for n in range(S.N):
            us, its = S.users_of[n], S.items_of[n]
            self.ids.append(np.concatenate([us, self.U + its]).astype(np.int64))
            tu, ti = S.train[n]
            ru, ri = np.searchsorted(us, tu), len(us) + np.searchsorted(its, ti)
            m = len(us) + len(its)
            R = sp.coo_matrix((np.ones(len(ru)), (ru, ri)), shape=(m, m)).tocsr()
            R = R + R.T
            deg = np.asarray(R.sum(1)).ravel()
            dinv = np.where(deg > 0, 1.0 / np.sqrt(np.maximum(deg, 1e-12)), 0.0)
            self.adj.append((sp.diags(dinv) @ R @ sp.diags(dinv)).tocsr())
            self.pairs.append((ru, ri, len(us), len(its)))

    def _prop(self, n, E):
        A, acc, cur = self.adj[n], E.copy(), E
        for _ in range(self.layers):
            cur = A @ cur
            acc += cur
        return acc / (self.layers + 1)

    def init(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1])
        E = rng.normal(scale=0.1, size=(self.n_entities, self.d))
        # per client, Adam's state: first and second moments (updated in place), step count
        self.adam: list[tuple[np.ndarray, np.ndarray, int]] = [
            (np.zeros((len(i), self.d)), np.zeros((len(i), self.d)), 0) for i in self.ids]
        return [E[i].copy() for i in self.ids]

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        E = rows.copy()
        ru, ri, nu, ni = self.pairs[n]
        if len(ru) == 0:
            return E
        m1, m2, t = self.adam[n]
        rng = client_rng(self.seed, rnd, n)
        for _ in range(self.epochs):
            order = rng.permutation(len(ru))
            for s in range(0, len(order), self.batch):
                b = order[s:s + self.batch]
                u, i = ru[b], ri[b]
                j = nu + rng.integers(0, ni, len(b))
                F = self._prop(n, E)
                x = np.einsum("ij,ij->i", F[u], F[i] - F[j])
                c = (0.5 * (1.0 + np.tanh(0.5 * x)) - 1.0) / len(b)          # d(-log sigmoid x)/dx / B
                G = np.zeros_like(E)
                np.add.at(G, u, c[:, None] * (F[i] - F[j]))
                np.add.at(G, i, c[:, None] * F[u])
                np.add.at(G, j, -c[:, None] * F[u])
                G = self._prop(n, G)
                rows_b = np.unique(np.concatenate([u, i, j]))
                G[rows_b] += self.reg * E[rows_b] / len(b)
                t += 1
                m1 *= 0.9
                m1 += 0.1 * G
                m2 *= 0.999
                m2 += 0.001 * G * G
                E -= self.lr * (m1 / (1 - 0.9 ** t)) / (np.sqrt(m2 / (1 - 0.999 ** t)) + 1e-8)
        self.adam[n] = (m1, m2, t)
        return E

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        S, hits, nd, cases = self.silos, 0.0, 0.0, 0
        for n in range(S.N):
            tu, ti, negs = S.test[n]
            if len(tu) == 0:
                continue
            F = self._prop(n, rows[n])
            us, its = S.users_of[n], S.items_of[n]
            nu = len(us)
            fu = F[np.searchsorted(us, tu)]
            pos = np.einsum("ij,ij->i", fu, F[nu + np.searchsorted(its, ti)])
            ok = negs >= 0
            fn = F[nu + np.searchsorted(its, np.where(ok, negs, its[0]))]
            neg = np.where(ok, np.einsum("kd,knd->kn", fu, fn), np.nan)
            h, g = hr_ndcg(pos, neg)
            hits += h * len(tu)
            nd += g * len(tu)
            cases += len(tu)
        cases = max(cases, 1)
        return {"NDCG@10": nd / cases, "HR@10": hits / cases}


def build(data: str | os.PathLike[str] | None, quick: bool, seed: int, N: int = 3) -> LightGCNTask:
    """The study's task: ``data`` a MovieLens ratings file (``quick``: its
    first 400 users) or None (synthetic: MovieLens-100k's shape quick,
    MovieLens-1M's otherwise)."""
    if data is not None:
        r = ratings_from_file(data)
        if quick:
            keep = r.users < 400
            from .recsys import Ratings
            _, ii = np.unique(r.items[keep], return_inverse=True)
            r = Ratings(r.users[keep], ii.astype(np.int64), r.times[keep], int(r.users[keep].max()) + 1,
                        int(ii.max()) + 1)
    elif quick:
        r = synthetic_ratings(943, 1682, 100_000, seed=seed)
    else:
        r = synthetic_ratings(seed=seed)
    return LightGCNTask(r, N, d=32 if quick else 64, seed=seed)
