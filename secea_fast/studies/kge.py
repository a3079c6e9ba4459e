"""TransE and RotatE with self-adversarial negative sampling and Adam, the
knowledge-graph models of SecEA's Table 3 on real data (Tang, Zhu, Li,
Zhang, Sun 2022, "Fully Privacy-Preserving Federated Representation
Learning via Secure Embedding Aggregation", Sec. 6.1, Table 3; partition
and hyperparameters in Appendix B).

Why a second knowledge-graph task beside :class:`~secea_fast.studies.kg.TransETask`:
that one (margin loss, one negative, plain SGD) is the fast synthetic-data
workhorse of the ``kg`` and ``ldp`` studies; on the real Kinship graph it
reaches only about 0.18 MRR.  This module trains both of the paper's
translational models the way their authors do (Sun, Deng, Nie, Tang 2019,
"RotatE: Knowledge Graph Embedding by Relational Rotation in Complex
Space", Sec. 3.3, eqs. 4-5): score f(h, r, t) = gamma - dist(h, r, t),
loss -log sigmoid(f(pos)) - sum_i p_i log sigmoid(-f(neg_i)) with the
self-adversarial weights p_i = softmax(alpha f(neg_i)) (treated as
constants), ``negatives`` corrupted heads or tails per positive, Adam
(Kingma & Ba 2015).

* TransE (Bordes et al. 2013): dist = ||h + r - t||_p over d real entries.
* RotatE (Sun et al. 2019): h, t in C^(d/2) (a row stores the real parts,
  then the imaginary parts: width d), r a phase vector theta in R^(d/2);
  dist = ||h o e^(i theta) - t|| (o: entrywise product).

``norm``: 2 scores every positive against every entity by one matrix
product; 1 is the norm of the models' papers (TransE's L1 dissimilarity,
RotatE's sum of the moduli of the d/2 complex differences), computed by
broadcasting over (batch, entities, d) in float32, 4-6x slower than one L2
product at d = 128.  On real Kinship the norm is what matters for TransE: L2 with any
margin we tried stays below 0.2 MRR and fits its own training triples
little better (training-set MRR 0.15), L1 with gamma 12 reaches 0.35
(docs/STUDIES.md, "Real data").  ``filter_negatives`` leaves out of a
positive's negatives the other answers its query has among the client's
training triples (Kinship's training (h, r) pairs have 5.6 tails on average,
and the self-adversarial weights put the most weight on exactly those).

Entity rows are the aggregated embeddings; relation parameters and each
client's Adam state stay private.  Rows are clipped to [-1, 1] after every
step, so the LDP baseline's sensitivity 2 (Appendix C) holds without its
clipping doing anything.

Federation (Appendix B, "subgraph-level"): relations dealt uniformly to the
N clients; client n holds its relations' training triples and the entities
they touch.  ``N = 1`` is the paper's "Entire" setting (one party, all the
training data).  Evaluation: filtered ranking (Bordes et al. 2013: the
other known true answers among train and test are removed before ranking)
of the true head and tail of each of client n's test triples among client
n's entities; ``MRR`` and ``Hits@10`` are the means over clients of each
client's mean over its test cases (the paper's Table 3 averages "over the
execution trials and the clients").
"""
from __future__ import annotations

import numpy as np

from .._checks import check_int
from .framework import Task, client_rng
from .kg import Triples

__all__ = ["KGETask", "MODELS"]

#: the models this module trains
MODELS = ("transe", "rotate")


class _Adam:
    """Adam on one array, with sparse rows: only rows touched get updated."""

    def __init__(self, shape, lr):
        self.m, self.v, self.t, self.lr = np.zeros(shape), np.zeros(shape), np.zeros(shape[0]), lr

    def step(self, x, rows, grad, b1=0.9, b2=0.999, eps=1e-8):
        self.t[rows] += 1
        t = self.t[rows][:, None]
        self.m[rows] = b1 * self.m[rows] + (1 - b1) * grad
        self.v[rows] = b2 * self.v[rows] + (1 - b2) * grad * grad
        x[rows] -= self.lr * (self.m[rows] / (1 - b1 ** t)) / (np.sqrt(self.v[rows] / (1 - b2 ** t)) + eps)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class KGETask(Task):
    """``model`` ("transe" or "rotate") across ``N`` clients (module
    docstring); N = 1 is the Entire setting.  ``epochs`` local epochs per
    round, minibatches of ``batch`` positives with ``negatives`` corrupted
    triples each; margin ``gamma``, adversarial temperature ``alpha``, Adam
    step ``lr``; entity rows of width ``d`` (RotatE: d/2 complex entries)."""
    metrics = ("MRR", "Hits@10")
    bound = 100.0
    clip = 1.0

    def __init__(self, data: Triples, N: int = 3, *, model: str = "transe", d: int = 128, gamma: float = 6.0,
                 alpha: float = 1.0, lr: float = 0.01, batch: int = 512, negatives: int = 64, epochs: int = 1,
                 norm: int = 2, filter_negatives: bool = False, seed: int = 0) -> None:
        if model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {model!r}")
        N, d = check_int(N, "N"), check_int(d, "d")
        if N < 1:
            raise ValueError(f"N must be >= 1, got {N}")
        if data.n_relations < N:
            raise ValueError(f"{data.n_relations} relations cannot be dealt to N = {N} clients")
        if d < 2 or (model == "rotate" and d % 2):
            raise ValueError(f"d must be >= 2 (and even for RotatE), got {d}")
        if norm not in (1, 2):
            raise ValueError(f"norm must be 1 or 2, got {norm!r}")
        self.model, self.name, self.norm = model, model, norm
        self.filter_negatives = bool(filter_negatives)
        self._l1_dtype: type = np.float32          # the L1 norm's (B, M, d) differences (float64 in the gradient test)
        self.data, self.width, self.d = data, d, d
        self.gamma, self.alpha, self.lr = float(gamma), float(alpha), float(lr)
        self.batch, self.negatives = check_int(batch, "batch"), check_int(negatives, "negatives")
        self.epochs, self.seed = check_int(epochs, "epochs"), check_int(seed, "seed")
        self.n_entities = data.n_entities
        rng = np.random.default_rng([self.seed, 0])
        owner = rng.permutation(np.arange(data.n_relations) % N)      # relations dealt uniformly
        self.rels = [np.flatnonzero(owner == n) for n in range(N)]
        self.train_of, self.test_of, self.ids = [], [], []
        for n in range(N):
            tr = data.train[owner[data.train[:, 1]] == n]
            te = data.test[owner[data.test[:, 1]] == n]
            self.train_of.append(tr)
            self.test_of.append(te)
            self.ids.append(np.unique(np.concatenate([tr[:, [0, 2]].ravel(), te[:, [0, 2]].ravel()])
                                      ).astype(np.int64))
        # known true tails / heads of every (h, r) / (r, t), for the filtered ranking
        self._known: dict[tuple[str, int, int], list[int]] = {}
        for h, r, t in np.concatenate([data.train, data.test]).tolist():
            self._known.setdefault(("t", h, r), []).append(t)
            self._known.setdefault(("h", r, t), []).append(h)

    # -------------------------------------------------------------- scoring
    def _query(self, src, rel, side):
        """The point every candidate entity is compared with: the tail of
        (h, r, ?) is scored by dist(q, e) with q = h + r (TransE) or
        h e^(i theta) (RotatE); the head of (?, r, t) with q = t - r or
        t e^(-i theta) (|h e^(i theta) - t| = |h - t e^(-i theta)|)."""
        if self.model == "transe":
            return src + rel if side == "t" else src - rel
        k = self.d // 2
        th = rel if side == "t" else -rel
        c, s = np.cos(th), np.sin(th)
        return np.concatenate([src[:, :k] * c - src[:, k:] * s, src[:, :k] * s + src[:, k:] * c], axis=1)

    def _query_grads(self, src, rel, side, dq):
        """(d src, d rel) from d q."""
        if self.model == "transe":
            return dq, (dq if side == "t" else -dq)
        k = self.d // 2
        sign = 1.0 if side == "t" else -1.0
        th = sign * rel
        c, s = np.cos(th), np.sin(th)
        gre, gim = dq[:, :k], dq[:, k:]
        dsrc = np.concatenate([gre * c + gim * s, -gre * s + gim * c], axis=1)
        dth = gre * (-src[:, :k] * s - src[:, k:] * c) + gim * (src[:, :k] * c - src[:, k:] * s)
        return dsrc, sign * dth

    def _dist_all(self, q, E):
        """dist(q_b, e_m) for every query b and entity m, (B, M): the L2
        norm by one matrix product; the L1 norm (TransE: sum of |entries|;
        RotatE: sum of the moduli of the complex entries) by broadcasting
        over (B, M, d) in float32 (the differences are kept for
        :meth:`_dist_grads`)."""
        if self.norm == 2:
            d2 = (q * q).sum(1)[:, None] - 2.0 * q @ E.T + (E * E).sum(1)[None, :]
            return np.sqrt(np.maximum(d2, 0.0) + 1e-12)
        diff = q.astype(self._l1_dtype)[:, None, :] - E.astype(self._l1_dtype)[None, :, :]
        if self.model == "transe":
            self._diff = diff
            return np.abs(diff).sum(2, dtype=np.float64)
        k = self.d // 2
        mod = np.sqrt(diff[:, :, :k] ** 2 + diff[:, :, k:] ** 2 + 1e-12)
        self._diff, self._mod = diff, mod
        return mod.sum(2, dtype=np.float64)

    def _dist_grads(self, q, E, dist, w):
        """(d loss / d q, d loss / d E) from w = d loss / d dist, (B, M)
        (the L1 norm: from the differences the last :meth:`_dist_all`
        kept)."""
        if self.norm == 2:
            u = w / dist                    # d dist_bm / d q_b = (q_b - e_m) / dist_bm
            return q * u.sum(1)[:, None] - u @ E, E * u.sum(0)[:, None] - u.T @ q
        diff, w32 = self._diff, w.astype(self._l1_dtype)[:, :, None]
        if self.model == "transe":
            g = np.sign(diff)
            g *= w32
        else:
            k = self.d // 2
            wm = w32 / self._mod
            g = np.concatenate([diff[:, :, :k] * wm, diff[:, :, k:] * wm], axis=2)
        self._diff = self._mod = None
        return g.sum(1, dtype=np.float64), -g.sum(0, dtype=np.float64)

    # ------------------------------------------------------------ the Task
    def init(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1])
        a = (self.gamma + 2.0) / self.d                     # RotatE's uniform init range
        E = rng.uniform(-a, a, size=(self.n_entities, self.d))
        if self.model == "transe":
            R = rng.uniform(-a, a, size=(self.data.n_relations, self.d))
        else:
            R = rng.uniform(-np.pi, np.pi, size=(self.data.n_relations, self.d // 2))
        self.R = [R.copy() for _ in range(self.n_clients)]      # each client's private relations
        self._optE = [_Adam((len(i), self.d), self.lr) for i in self.ids]
        self._optR = [_Adam(R.shape, self.lr) for _ in range(self.n_clients)]
        return [E[i].copy() for i in self.ids]

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        """One round of client n: ``epochs`` passes over its triples; each
        positive is scored against every one of the client's entities on
        the corrupted side (the true one aside: self-adversarial weights
        over all negatives, Kinship's 104 entities making sampling moot)."""
        E, R = rows.copy(), self.R[n]
        ids, tr = self.ids[n], self.train_of[n]
        if len(tr) == 0:
            return E
        h, r, t = np.searchsorted(ids, tr[:, 0]), tr[:, 1], np.searchsorted(ids, tr[:, 2])
        rng = client_rng(self.seed, rnd, n)
        M = len(ids)
        for _ in range(self.epochs):
            order = rng.permutation(len(tr))
            tail_side = rng.random(len(tr)) < 0.5
            for s0 in range(0, len(order), self.batch):
                b = order[s0:s0 + self.batch]
                gE = np.zeros_like(E)
                gR = np.zeros_like(R)
                for side in ("t", "h"):
                    bb = b[tail_side[b] == (side == "t")]
                    if len(bb) == 0:
                        continue
                    src, true = (h[bb], t[bb]) if side == "t" else (t[bb], h[bb])
                    rel = R[r[bb]]
                    q = self._query(E[src], rel, side)
                    dist = self._dist_all(q, E)
                    f = self.gamma - dist
                    pos = np.zeros((len(bb), M), dtype=bool)
                    pos[np.arange(len(bb)), true] = True
                    known = self._train_known(n, side)[bb] if self.filter_negatives else pos
                    z = np.where(known, -np.inf, self.alpha * f)
                    p = np.exp(z - z.max(1, keepdims=True))
                    p /= p.sum(1, keepdims=True)
                    # d loss / d dist: (1 - sig(f)) on the positive, -p sig(f) on the negatives
                    w = np.where(pos, 1.0 - _sigmoid(f), np.where(known, 0.0, -p * _sigmoid(f))) / (2 * len(b))
                    dq, dE = self._dist_grads(q, E, dist, w)
                    gE += dE
                    dsrc, drel = self._query_grads(E[src], rel, side, dq)
                    np.add.at(gE, src, dsrc)
                    np.add.at(gR, r[bb], drel)
                self._optE[n].step(E, np.arange(M), gE)
                ur = np.unique(r[b])
                self._optR[n].step(R, ur, gR[ur])
                np.clip(E, -1.0, 1.0, out=E)
        return E

    def _train_known(self, n, side):
        """(training triple, entity) mask of client n: on the tail side the
        tails t' with (h, r, t') among its training triples, on the head
        side the heads (the triple's own answer included): the negatives
        left out when ``filter_negatives``."""
        if not hasattr(self, "_tmask"):
            self._tmask = {}
        if (n, side) not in self._tmask:
            ids, tr = self.ids[n], self.train_of[n]
            loc = np.searchsorted(ids, tr[:, [0, 2]])
            key = tr[:, 1] * len(ids) + (loc[:, 0] if side == "t" else loc[:, 1])
            ans = loc[:, 1] if side == "t" else loc[:, 0]
            grp, inv = np.unique(key, return_inverse=True)
            g = np.zeros((len(grp), len(ids)), dtype=bool)
            g[inv, ans] = True
            self._tmask[(n, side)] = g[inv]
        return self._tmask[(n, side)]

    def _filters(self, n):
        """Per side, the (test, entity) mask of the other known answers."""
        if not hasattr(self, "_mask"):
            self._mask = {}
        if n not in self._mask:
            ids, te = self.ids[n], self.test_of[n]
            out = {}
            for side in ("t", "h"):
                m = np.zeros((len(te), len(ids)), dtype=bool)
                for k, (hh, rr, tt) in enumerate(te.tolist()):
                    other = np.asarray(self._known[("t", hh, rr)] if side == "t" else self._known[("h", rr, tt)])
                    j = np.minimum(np.searchsorted(ids, other), len(ids) - 1)
                    m[k, j[ids[j] == other]] = True
                out[side] = m
            self._mask[n] = out
        return self._mask[n]

    def _ranks(self, n, E, chunk=256):
        ids, R, te = self.ids[n], self.R[n], self.test_of[n]
        if len(te) == 0:
            return np.zeros(0)
        mask = self._filters(n)
        out = []
        for side in ("t", "h"):
            for c0 in range(0, len(te), chunk):
                c = te[c0:c0 + chunk]
                src = np.searchsorted(ids, c[:, 0] if side == "t" else c[:, 2])
                true = np.searchsorted(ids, c[:, 2] if side == "t" else c[:, 0])
                dist = self._dist_all(self._query(E[src], R[c[:, 1]], side), E)
                own = dist[np.arange(len(c)), true].copy()
                dist[mask[side][c0:c0 + chunk]] = np.inf        # the filtered setting (the true one too)
                out.append(1 + (dist < own[:, None]).sum(1))
        return np.concatenate(out)

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        mrr, hits = [], []
        for n in range(self.n_clients):
            rk = self._ranks(n, rows[n])
            if rk.size:
                mrr.append(float(np.mean(1.0 / rk)))
                hits.append(float(np.mean(rk <= 10)))
        return {"MRR": float(np.mean(mrr)) if mrr else 0.0, "Hits@10": float(np.mean(hits)) if hits else 0.0}
