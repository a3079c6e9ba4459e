"""SVD and NCF across item silos: the recommendation rows of SecEA's Table 3
(Tang, Zhu, Li, Zhang, Sun 2022, Sec. 6: "In recommendation system, we use
SVD, NCF and LightGCN", metric NDCG; LightGCN is
:mod:`secea_fast.studies.lightgcn`), in NumPy with hand-written gradients.

Federation (Appendix B, "partitioned to subgraphs by the items, which are
then randomly distributed to the clients"): :class:`~secea_fast.studies.
recsys.Silos` deals the items to N silos; silo n holds the ratings of its
items, so its entities are those items and the users who rated them, and
users are shared.  Entity ids are the users (0 .. U-1) then the items
(U .. U+I-1), as in LightGCN; a row is an entity's embedding (and, for
SVD, its bias).  Everything else (SVD's global mean, NCF's MLP and output
layer, the optimizers' moments) is the silo's private state.

Evaluation: each user's latest rating is its test case, scored by the silo
holding the item, ``ranking="sampled"`` among 99 of that silo's items the
user never rated (He et al. 2017, Sec. 4.1: the protocol LightGCN's study
uses), ``ranking="full"`` among every item of that silo the user did not
rate in training, or ``ranking="all"`` among every item of every silo the
user did not rate in training (each candidate scored by the silo holding
it, with that silo's row of the user; a silo not holding the user scores
none of its items; for the Entire twin, one model over all items).  NDCG@k and HR@k (k = 10 by default) over the test
cases of every silo; ties count against the positive (:func:`~secea_fast.
studies.recsys.hr_ndcg`).

Models:

* :class:`SVDTask` -- "SVD" as in recommender libraries (Funk SVD; Koren,
  Bell, Volinsky 2009, "Matrix Factorization Techniques for Recommender
  Systems", eq. 5): the explicit rating r_ui ~ mu + b_u + b_i + p_u . q_i,
  squared error with L2 on the batch's factors and biases, minibatch SGD;
  a row is [p (d), b].  Items are ranked by predicted rating.
* :class:`NCFTask` -- NeuMF (He, Liao, Zhang, Nie, Hu, Chua 2017, "Neural
  Collaborative Filtering", Sec. 3.4, eq. 12): a GMF part (g_u * g_i) and
  an MLP tower on [m_u, m_i] with ReLU layers (16, 8, 4) as SecEA's
  Appendix B gives, concatenated into a logistic output; log loss on the
  observed pairs and ``n_neg`` sampled items of the silo per pair (He et
  al.'s Sec. 3.1.1), Adam; a row is [g (d), m (d)].

Each task's :meth:`centralized` is its "Entire" twin (Sec. 6): one client
trained on every silo's data, scored on the same test cases.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from .._checks import check_int
from .framework import Task, client_rng
from .recsys import Ratings, Silos, hr_ndcg

__all__ = ["SiloTask", "SVDTask", "NCFTask", "ndcg_at_k", "build_svd", "build_ncf", "ROUNDS",
           "table3_task"]

_CHUNK = 64            # test cases scored together (full ranking: chunk x items x width floats)


def ndcg_at_k(rank: np.ndarray, k: int = 10) -> float:
    """Mean NDCG@k of test cases with one relevant item each, at 0-based
    ``rank`` (the number of candidates scored at least as high): 1 /
    log2(rank + 2) when rank < k, else 0.

    >>> round(ndcg_at_k(np.array([0, 1, 10]), k=10), 6)     # (1 + 1/log2(3) + 0) / 3
    0.543643
    """
    rank = np.asarray(rank)
    if rank.size == 0:
        return 0.0
    return float(np.where(rank < k, 1.0 / np.log2(rank + 2.0), 0.0).mean())


class _Adam:
    """Adam (Kingma, Ba 2015) over a list of arrays, updated in place."""

    def __init__(self, params: list, lr: float) -> None:
        self.lr, self.t = lr, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, params: list, grads: list) -> None:
        self.t += 1
        c1, c2 = 1 - 0.9 ** self.t, 1 - 0.999 ** self.t
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + 1e-8)


class SiloTask(Task):
    """The shared part of the item-silo tasks (module docstring): entity
    ids, each silo's training pairs and test cases in its local row
    indices, the evaluation and the Entire twin.  Subclasses define
    ``width``, :meth:`init`, :meth:`train` and ``_scores``."""
    metrics = ("NDCG@10", "HR@10")

    def __init__(self, ratings: Ratings, N: int = 3, *, silos: Silos | None = None, ranking: str = "sampled",
                 k: int = 10, seed: int = 0) -> None:
        if ranking not in ("sampled", "full", "all"):
            raise ValueError(f"ranking must be 'sampled', 'full' or 'all', got {ranking!r}")
        self.ratings, self.ranking, self.k, self.seed = ratings, ranking, check_int(k, "k"), seed
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.metrics = (f"NDCG@{self.k}", f"HR@{self.k}")
        self.silos = silos if silos is not None else Silos(ratings, N, seed=seed)
        self._setup()

    def _setup(self) -> None:
        S = self.silos
        self.U, self.n_entities = S.n_users, S.n_users + S.n_items
        self.ids, self.pairs, self.cases = [], [], []
        for n in range(S.N):
            us, its = S.users_of[n], S.items_of[n]
            nu = len(us)
            self.ids.append(np.concatenate([us, self.U + its]).astype(np.int64))
            tu, ti = S.train[n]
            self.pairs.append((np.searchsorted(us, tu), nu + np.searchsorted(its, ti), tu, ti))
            xu, xi, negs = S.test[n]
            ok = negs >= 0
            lneg = np.where(ok, np.searchsorted(its, np.where(ok, negs, its[0])), 0)
            self.cases.append((np.searchsorted(us, xu), np.searchsorted(its, xi), lneg, ok, xu, xi))

    def centralized(self) -> SiloTask:
        """The "Entire" setting's task (Sec. 6): one client holding every
        silo's ratings, scored on the same test cases against the same
        candidates (:meth:`~secea_fast.studies.recsys.Silos.merged`)."""
        c = copy.copy(self)
        c.silos = self.silos.merged()
        c._setup()
        return c

    def _scores(self, n: int, rows: np.ndarray, u: np.ndarray, i: np.ndarray) -> np.ndarray:
        """Scores of (local user row u[b], local item i[b, j]) pairs."""
        raise NotImplementedError

    def _rated(self, n: int) -> np.ndarray:
        """Silo n's training pairs as sorted unique keys user * n_items + item."""
        _, _, tu, ti = self.pairs[n]
        return np.unique(tu.astype(np.int64) * self.silos.n_items + ti)

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        if self.ranking == "all":
            rank = self._ranks_all(rows)
        else:
            rank = self._ranks_silo(rows)
        return {f"NDCG@{self.k}": ndcg_at_k(rank, self.k), f"HR@{self.k}": float(np.mean(rank < self.k))
                if rank.size else 0.0}

    def _ranks_all(self, rows: list[np.ndarray]) -> np.ndarray:
        """0-based ranks under ``ranking="all"`` (module docstring)."""
        S, ranks = self.silos, []
        rated = np.unique(np.concatenate([self._rated(m) for m in range(S.N)]))
        for n in range(S.N):
            lu, lpos, _, _, xu, xi = self.cases[n]
            nu = len(S.users_of[n])
            for s in range(0, len(lu), _CHUNK):
                sl = slice(s, s + _CHUNK)
                pos = self._scores(n, rows[n], lu[sl], nu + lpos[sl, None])[:, 0]
                higher = np.zeros(len(pos), np.int64)
                for m in range(S.N):
                    us, its = S.users_of[m], S.items_of[m]
                    p = np.minimum(np.searchsorted(us, xu[sl]), len(us) - 1)
                    held = us[p] == xu[sl]
                    if not held.any() or len(its) == 0:
                        continue
                    um = p[held]
                    cand = np.broadcast_to(np.arange(len(its)), (len(um), len(its)))
                    sc = self._scores(m, rows[m], um, len(us) + cand)
                    keys = xu[sl][held, None].astype(np.int64) * S.n_items + its[None, :]
                    q = np.minimum(np.searchsorted(rated, keys), max(len(rated) - 1, 0))
                    was = rated[q] == keys if len(rated) else np.zeros(keys.shape, bool)
                    keep = ~was & (its[None, :] != xi[sl][held, None])
                    higher[held] += np.sum(keep & (sc >= pos[held, None]), axis=1)
                ranks.append(higher)
        return np.concatenate(ranks) if ranks else np.zeros(0, np.int64)

    def _ranks_silo(self, rows: list[np.ndarray]) -> np.ndarray:
        """0-based ranks under ``ranking="sampled"`` or ``"full"``."""
        S, ranks = self.silos, []
        for n in range(S.N):
            lu, lpos, lneg, ok, xu, xi = self.cases[n]
            if len(lu) == 0:
                continue
            its = S.items_of[n]
            nu, ni = len(S.users_of[n]), len(its)
            rated = self._rated(n) if self.ranking == "full" else np.zeros(0, np.int64)
            for s in range(0, len(lu), _CHUNK):
                sl = slice(s, s + _CHUNK)
                u = lu[sl]
                if self.ranking == "sampled":
                    cand = np.concatenate([lpos[sl, None], lneg[sl]], axis=1)
                    sc = self._scores(n, rows[n], u, nu + cand)
                    pos, neg = sc[:, 0], np.where(ok[sl], sc[:, 1:], np.nan)
                else:
                    cand = np.broadcast_to(np.arange(ni), (len(u), ni))
                    sc = self._scores(n, rows[n], u, nu + cand)
                    pos = sc[np.arange(len(u)), lpos[sl]]
                    keys = xu[sl, None].astype(np.int64) * S.n_items + its[None, :]
                    p = np.searchsorted(rated, keys)
                    was = rated[np.minimum(p, len(rated) - 1)] == keys if len(rated) else np.zeros(keys.shape, bool)
                    same = S.owner[its][None, :] == S.owner[xi[sl]][:, None]
                    keep = same & ~was
                    keep[np.arange(len(u)), lpos[sl]] = False
                    neg = np.where(keep, sc, np.nan)
                ranks.append(np.sum(np.where(np.isnan(neg), False, neg >= pos[:, None]), axis=1))
        return np.concatenate(ranks) if ranks else np.zeros(0, np.int64)


class SVDTask(SiloTask):
    """Funk SVD on explicit ratings across the silos (module docstring):
    ``epochs`` passes of minibatch SGD (``batch`` ratings, learning rate
    ``lr`` on the summed gradient, L2 ``reg``) per round."""
    name = "svd"
    bound = 100.0
    clip = 1.0

    def __init__(self, ratings: Ratings, N: int = 3, *, d: int = 32, lr: float = 0.01, reg: float = 0.02,
                 batch: int = 256, epochs: int = 1, silos: Silos | None = None, ranking: str = "sampled",
                 k: int = 10, seed: int = 0) -> None:
        if ratings.values is None:
            raise ValueError("ratings.values is None: SVD trains on explicit ratings (a file with ratings)")
        self.d = check_int(d, "d")
        self.width = self.d + 1
        self.lr, self.reg, self.batch, self.epochs = float(lr), float(reg), check_int(batch, "batch"), epochs
        super().__init__(ratings, N, silos=silos, ranking=ranking, k=k, seed=seed)

    def _setup(self) -> None:
        super()._setup()
        r = self.ratings
        keys = r.users.astype(np.int64) * r.n_items + r.items
        order = np.argsort(keys, kind="stable")
        self._keys, self._vals = keys[order], np.asarray(r.values, dtype=np.float64)[order]
        self.values = []
        for _, _, tu, ti in self.pairs:
            self.values.append(self._vals[np.searchsorted(self._keys, tu.astype(np.int64) * r.n_items + ti)])
        self.mu = [float(v.mean()) if len(v) else 0.0 for v in self.values]

    def init(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1])
        E = np.concatenate([rng.normal(scale=0.1, size=(self.n_entities, self.d)),
                            np.zeros((self.n_entities, 1))], axis=1)
        self.loss = [np.nan] * self.n_clients           # mean squared error of the last epoch, per client
        return [E[i].copy() for i in self.ids]

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        E, d = rows.copy(), self.d
        ru, ri, _, _ = self.pairs[n]
        r, mu = self.values[n], self.mu[n]
        rng = client_rng(self.seed, rnd, n)
        for _ in range(self.epochs):
            order, sq = rng.permutation(len(ru)), 0.0
            for s in range(0, len(order), self.batch):
                b = order[s:s + self.batch]
                u, i = ru[b], ri[b]
                pu, qi = E[u], E[i]
                e = mu + pu[:, d] + qi[:, d] + np.einsum("ij,ij->i", pu[:, :d], qi[:, :d]) - r[b]
                sq += float(e @ e)
                gu = np.concatenate([e[:, None] * qi[:, :d], e[:, None]], axis=1) + self.reg * pu
                gi = np.concatenate([e[:, None] * pu[:, :d], e[:, None]], axis=1) + self.reg * qi
                np.add.at(E, u, -self.lr * gu)
                np.add.at(E, i, -self.lr * gi)
            self.loss[n] = sq / max(len(ru), 1)
        return E

    def _scores(self, n: int, rows: np.ndarray, u: np.ndarray, i: np.ndarray) -> np.ndarray:
        d, pu, qi = self.d, rows[u], rows[i]
        return self.mu[n] + pu[:, None, d] + qi[:, :, d] + np.einsum("bd,bjd->bj", pu[:, :d], qi[:, :, :d])


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


class NCFTask(SiloTask):
    """NeuMF across the silos (module docstring): GMF and MLP embeddings of
    ``d`` each (the row is both, width 2d), an MLP tower ``layers``, Adam
    at ``lr``, ``batch`` observed pairs (each with ``n_neg`` negatives) per
    step, ``epochs`` passes per round, L2 ``reg`` on the batch's rows."""
    name = "ncf"
    bound = 100.0
    clip = 1.0

    def __init__(self, ratings: Ratings, N: int = 3, *, d: int = 16, layers: tuple = (16, 8, 4),
                 lr: float = 0.001, reg: float = 1e-5, batch: int = 256, n_neg: int = 4, epochs: int = 1,
                 silos: Silos | None = None, ranking: str = "sampled", k: int = 10, seed: int = 0) -> None:
        self.d = check_int(d, "d")
        self.width = 2 * self.d
        self.layers = tuple(check_int(x, "layers") for x in layers)
        if not self.layers or min(self.layers) < 1:
            raise ValueError(f"layers must be positive sizes, got {layers!r}")
        self.lr, self.reg, self.batch = float(lr), float(reg), check_int(batch, "batch")
        self.n_neg, self.epochs = check_int(n_neg, "n_neg"), check_int(epochs, "epochs")
        super().__init__(ratings, N, silos=silos, ranking=ranking, k=k, seed=seed)

    def init(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1])
        E = rng.normal(scale=0.01, size=(self.n_entities, self.width))     # He et al.: N(0, 0.01)
        self.net, self.opt = [], []
        sizes = (2 * self.d, *self.layers)
        for n in range(self.n_clients):
            g = np.random.default_rng([self.seed, 3, n])
            p = []
            for a, b in zip(sizes[:-1], sizes[1:]):                       # Glorot uniform, zero bias
                lim = np.sqrt(6.0 / (a + b))
                p += [g.uniform(-lim, lim, (a, b)), np.zeros(b)]
            h = self.d + self.layers[-1]
            p += [g.uniform(-np.sqrt(3.0 / h), np.sqrt(3.0 / h), h), np.zeros(1)]
            self.net.append(p)
            self.opt.append(_Adam([np.zeros((len(self.ids[n]), self.width)), *p], self.lr))
        self.loss = [np.nan] * self.n_clients           # mean log loss of the last epoch, per client
        return [E[i].copy() for i in self.ids]

    def _forward(self, net: list, eu: np.ndarray, ei: np.ndarray) -> tuple:
        d = self.d
        z = [np.concatenate([eu[:, d:], ei[:, d:]], axis=1)]
        for k in range(len(self.layers)):
            z.append(_relu(z[-1] @ net[2 * k] + net[2 * k + 1]))
        phi = np.concatenate([eu[:, :d] * ei[:, :d], z[-1]], axis=1)
        return phi @ net[-2] + net[-1][0], phi, z

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        E, d, net, opt = rows.copy(), self.d, self.net[n], self.opt[n]
        ru, ri, _, _ = self.pairs[n]
        nu, ni = len(self.silos.users_of[n]), len(self.silos.items_of[n])
        rng = client_rng(self.seed, rnd, n)
        y0 = np.r_[1.0, np.zeros(self.n_neg)]
        for _ in range(self.epochs):
            order, tot, cnt = rng.permutation(len(ru)), 0.0, 0
            for s in range(0, len(order), self.batch):
                b = order[s:s + self.batch]
                u = np.repeat(ru[b], 1 + self.n_neg)
                i = np.concatenate([ri[b][:, None], nu + rng.integers(0, ni, (len(b), self.n_neg))], axis=1).ravel()
                y = np.tile(y0, len(b))
                eu, ei = E[u], E[i]
                logit, phi, z = self._forward(net, eu, ei)
                p = 0.5 * (1.0 + np.tanh(0.5 * logit))
                tot += float(np.sum(np.logaddexp(0.0, logit) - y * logit))
                cnt += len(y)
                g = (p - y) / len(y)                                          # d loss / d logit
                grads: list[np.ndarray] = [np.empty(0)] * len(net)
                grads[-2], grads[-1] = phi.T @ g, np.array([g.sum()])
                dphi = g[:, None] * net[-2][None, :]
                dz = dphi[:, d:]
                for k in range(len(self.layers) - 1, -1, -1):
                    da = dz * (z[k + 1] > 0)
                    grads[2 * k], grads[2 * k + 1] = z[k].T @ da, da.sum(0)
                    dz = da @ net[2 * k].T
                gu = np.concatenate([dphi[:, :d] * ei[:, :d], dz[:, :d]], axis=1)
                gi = np.concatenate([dphi[:, :d] * eu[:, :d], dz[:, d:]], axis=1)
                G = np.zeros_like(E)
                np.add.at(G, u, gu)
                np.add.at(G, i, gi)
                touched = np.unique(np.concatenate([u, i]))
                G[touched] += self.reg * E[touched]
                opt.step([E, *net], [G, *grads])
            self.loss[n] = tot / max(cnt, 1)
        return E

    def _scores(self, n: int, rows: np.ndarray, u: np.ndarray, i: np.ndarray) -> np.ndarray:
        B, m = i.shape
        logit, _, _ = self._forward(self.net[n], rows[np.repeat(u, m)], rows[i.ravel()])
        return logit.reshape(B, m)


# rounds of the two configurations of build_svd / build_ncf / table3_task
ROUNDS = {"svd": {"quick": 2, "full": 3}, "ncf": {"quick": 2, "full": 5}, "lightgcn": {"quick": 2, "full": 5}}


def _first_users(r: Ratings, n: int) -> Ratings:
    keep = r.users < n
    _, ii = np.unique(r.items[keep], return_inverse=True)
    return Ratings(r.users[keep], ii.astype(np.int64), r.times[keep], int(r.users[keep].max()) + 1,
                   int(ii.max()) + 1, None if r.values is None else r.values[keep])


def build_svd(ratings: Ratings, quick: bool, seed: int, N: int = 3) -> SVDTask:
    """Table 3's SVD row: ``quick`` the first 200 users, d = 8 (a test-sized
    run); otherwise every rating, d = 32 (``ROUNDS["svd"]`` rounds: the
    held-out NDCG peaks within a few epochs, then the explicit model
    overfits).  Full ranking over the silo's items (module docstring)."""
    if quick:
        return SVDTask(_first_users(ratings, 200), N, d=8, lr=0.01, reg=0.05, ranking="full", seed=seed)
    return SVDTask(ratings, N, d=32, lr=0.01, reg=0.05, ranking="full", seed=seed)


def build_ncf(ratings: Ratings, quick: bool, seed: int, N: int = 3) -> NCFTask:
    """Table 3's NCF row: ``quick`` the first 200 users, d = 4; otherwise
    every rating, d = 16 (a row of 32), the tower (16, 8, 4) and the
    learning rate 0.001 of SecEA's Appendix B, batches of 256 pairs with 4
    negatives each.  Ranking among 99 sampled items."""
    if quick:
        return NCFTask(_first_users(ratings, 200), N, d=4, lr=0.005, batch=256, seed=seed)
    return NCFTask(ratings, N, d=16, lr=0.001, batch=256, seed=seed)


def table3_task(model: str) -> Callable[[Ratings, int, int, bool], Task]:
    """A task factory ``(ratings, N, seed, quick) -> Task`` for Table 3's
    MovieLens rows (``model`` "svd", "ncf" or "lightgcn"): N >= 2 the item
    silos of the module docstring, N = 1 the Entire twin of the 3-silo task
    of the same seed (:meth:`SiloTask.centralized`: the same test cases).
    LightGCN's configurations: the first 400 users and d = 32 quick, every
    rating and d = 64 otherwise."""
    if model not in ("svd", "ncf", "lightgcn"):
        raise ValueError(f"model must be 'svd', 'ncf' or 'lightgcn', got {model!r}")

    def build(ratings: Ratings, N: int, seed: int, quick: bool) -> Task:
        n = 3 if N == 1 else N
        if model == "svd":
            t: Any = build_svd(ratings, quick, seed, n)
        elif model == "ncf":
            t = build_ncf(ratings, quick, seed, n)
        else:
            from .lightgcn import LightGCNTask
            r = _first_users(ratings, 400) if quick else ratings
            t = LightGCNTask(r, n, d=32 if quick else 64, lr=0.02, seed=seed)
        return t.centralized() if N == 1 else t
    return build
