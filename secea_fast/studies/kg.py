"""Knowledge-graph completion with TransE, the knowledge-graph family of
SecEA's experiments (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 6, Tables 2-3;
partition in Appendix B; the LDP comparison of Appendix C, Table 7, is on
TransE / Kinship).

Data: triples (head, relation, tail) in the tab-separated text format of
WN18, FB15k, FB15k-237 and Kinship (one ``head<TAB>relation<TAB>tail`` per
line; :func:`triples_from_file`, a file or a directory with ``train.txt``
and ``test.txt`` such as ``secea-fast data path kinship``), or :func:`synthetic_triples`, Kinship-shaped by default
(104 entities, 25 relations, 10,686 triples) drawn from a translational
model so there is something to learn.  A single file is split 90/10 at
random (Appendix B).

Federation (Appendix B, "subgraph-level"): the relations are dealt
uniformly to the N clients; client n holds the triples of its relations
and the entities they touch (its test triples' entities included), so
entities are shared and relations are private.  The aggregated row of an
entity is its TransE embedding.

Model: TransE (Bordes et al. 2013), score ||h + r - t||_2, margin ranking
loss against one corrupted head or tail per triple, minibatch SGD, entity
rows renormalized to unit length before each batch (so their entries lie in
[-1, 1], which is what the paper's LDP sensitivity 2 assumes).  Evaluation:
filtered ranking of the true tail and head among the client's entities;
MRR and Hits@10 over all clients' test triples.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .._checks import check_int
from .._textfile import check_text_path
from ..datasets import read_triples
from .framework import Task, client_rng

__all__ = ["Triples", "triples_from_file", "synthetic_triples", "TransETask"]


@dataclass
class Triples:
    """Integer triples (h, r, t): ``train`` and ``test`` are (n, 3) int64."""
    train: np.ndarray
    test: np.ndarray
    n_entities: int
    n_relations: int


def triples_from_file(path: str | os.PathLike[str], test_fraction: float = 0.1, seed: int = 0) -> Triples:
    """Triples of a knowledge-graph file (names renumbered 0.. in order of
    first appearance): a directory with ``train.txt`` and ``test.txt`` (the
    WN18 / FB15k-237 layout; ``valid.txt`` is not used), or one file split
    at random, ``test_fraction`` held out."""
    path = check_text_path(path, "triples")
    if os.path.isdir(path):
        parts = [read_triples(os.path.join(path, "train.txt")), read_triples(os.path.join(path, "test.txt"))]
    else:
        rows = read_triples(path)
        perm = np.random.default_rng(seed).permutation(len(rows))
        k = max(1, int(round(len(rows) * test_fraction)))
        parts = [[rows[i] for i in perm[k:]], [rows[i] for i in perm[:k]]]
    ent: dict[str, int] = {}     # name -> index, in order of appearance
    rel: dict[str, int] = {}
    arrs = [np.array([(ent.setdefault(h, len(ent)), rel.setdefault(r, len(rel)), ent.setdefault(t, len(ent)))
                      for h, r, t in p], dtype=np.int64).reshape(-1, 3) for p in parts]
    return Triples(arrs[0], arrs[1], len(ent), len(rel))


def synthetic_triples(n_entities: int = 104, n_relations: int = 25, n_triples: int = 10_686, rank: int = 8,
                      test_fraction: float = 0.1, noise: float = 0.1, seed: int = 0) -> Triples:
    """A knowledge graph of the given shape (Kinship's by default): latent
    entity points x_e and relation shifts s_r in R^rank; for each (head,
    relation) the tails are the entities nearest to x_h + s_r (with Gumbel
    noise of scale ``noise``), about n_triples / (n_entities n_relations) of them."""
    n_entities, n_relations, n_triples = (check_int(v, n) for v, n in ((n_entities, "n_entities"),
                                          (n_relations, "n_relations"), (n_triples, "n_triples")))
    if n_entities < 4 or n_relations < 1 or n_triples < n_relations:
        raise ValueError("need n_entities >= 4, n_relations >= 1 and n_triples >= n_relations")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_entities, rank))
    s = rng.normal(size=(n_relations, rank))
    per = n_triples / (n_entities * n_relations)
    out = []
    for r in range(n_relations):
        dist = ((x[:, None, :] + s[r] - x[None, :, :]) ** 2).sum(-1)         # (head, tail)
        score = -dist / dist.std() + noise * rng.gumbel(size=dist.shape)
        np.fill_diagonal(score, -np.inf)
        k = rng.poisson(per, n_entities).clip(0, n_entities - 1)
        order = np.argsort(-score, axis=1)
        for h in range(n_entities):
            for t in order[h, :k[h]]:
                out.append((h, r, t))
    tri = np.array(out, dtype=np.int64)
    tri = tri[rng.permutation(len(tri))]
    n_test = max(1, int(round(len(tri) * test_fraction)))
    return Triples(tri[n_test:], tri[:n_test], n_entities, n_relations)


class TransETask(Task):
    """TransE across ``N`` clients (module docstring).  ``max_test``: test
    triples evaluated per client (a seeded sample; None: all)."""
    name = "transe"
    metrics = ("MRR", "Hits@10")
    bound = 100.0
    clip = 1.0

    def __init__(self, data: Triples, N: int = 3, *, d: int = 32, lr: float = 0.05, margin: float = 1.0,
                 batch: int = 256, epochs: int = 1, max_test: int | None = None, seed: int = 0) -> None:
        N = check_int(N, "N")
        if N < 2:
            raise ValueError(f"N must be >= 2, got {N}")
        if data.n_relations < N:
            raise ValueError(f"{data.n_relations} relations cannot be dealt to N = {N} clients")
        self.data, self.width, self.d = data, check_int(d, "d"), check_int(d, "d")
        self.lr, self.margin, self.batch, self.epochs, self.seed = lr, margin, batch, epochs, seed
        self.n_entities = data.n_entities
        rng = np.random.default_rng(seed)
        owner = rng.permutation(np.arange(data.n_relations) % N)      # relations dealt uniformly
        self.rels = [np.flatnonzero(owner == n) for n in range(N)]
        self.train_of, self.test_of, self.ids = [], [], []
        for n in range(N):
            tr = data.train[owner[data.train[:, 1]] == n]
            te = data.test[owner[data.test[:, 1]] == n]
            if max_test is not None and len(te) > max_test:
                te = te[rng.choice(len(te), max_test, replace=False)]
            ids = np.unique(np.concatenate([tr[:, [0, 2]].ravel(), te[:, [0, 2]].ravel()]))
            self.train_of.append(tr)
            self.test_of.append(te)
            self.ids.append(ids.astype(np.int64))
        # known true tails / heads of every (h, r) / (r, t), for filtered ranking
        allt = np.concatenate([data.train, data.test])
        self._tails: dict[tuple[int, int], list[int]] = {}
        self._heads: dict[tuple[int, int], list[int]] = {}
        for h, r, t in allt.tolist():
            self._tails.setdefault((h, r), []).append(t)
            self._heads.setdefault((r, t), []).append(h)

    def init(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1])
        E = rng.normal(size=(self.n_entities, self.d))
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        R = rng.normal(size=(self.data.n_relations, self.d)) / np.sqrt(self.d)
        self.R = [R.copy() for _ in range(self.n_clients)]         # each client's private relations
        return [E[i].copy() for i in self.ids]

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        E = rows.copy()
        R = self.R[n]
        ids, tr = self.ids[n], self.train_of[n]
        if len(tr) == 0:
            return E
        h, r, t = np.searchsorted(ids, tr[:, 0]), tr[:, 1], np.searchsorted(ids, tr[:, 2])
        rng = client_rng(self.seed, rnd, n)
        for _ in range(self.epochs):
            order = rng.permutation(len(tr))
            for s in range(0, len(order), self.batch):
                b = order[s:s + self.batch]
                E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
                bh, br, bt = h[b], r[b], t[b]
                corrupt = rng.integers(0, len(ids), len(b))
                tail_side = rng.random(len(b)) < 0.5
                nh = np.where(tail_side, bh, corrupt)
                nt = np.where(tail_side, corrupt, bt)
                vp = E[bh] + R[br] - E[bt]
                vn = E[nh] + R[br] - E[nt]
                dp = np.linalg.norm(vp, axis=1) + 1e-12
                dn = np.linalg.norm(vn, axis=1) + 1e-12
                act = (self.margin + dp - dn) > 0
                gp = (act / dp)[:, None] * vp                # d loss / d (h + r - t), positive
                gn = -(act / dn)[:, None] * vn               # negative
                gE = np.zeros_like(E)
                np.add.at(gE, bh, gp)
                np.add.at(gE, bt, -gp)
                np.add.at(gE, nh, gn)
                np.add.at(gE, nt, -gn)
                gR = np.zeros_like(R)
                np.add.at(gR, br, gp + gn)
                E -= self.lr * gE
                R -= self.lr * gR
        E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
        return E

    def _ranks(self, n, E, chunk=256):
        """Filtered ranks of client n's test triples (tails, then heads),
        ``chunk`` triples at a time (WN18: 40,943 candidates each)."""
        ids, R = self.ids[n], self.R[n]
        sq = (E ** 2).sum(1)
        ranks = []
        for c0 in range(0, len(self.test_of[n]), chunk):
            te = self.test_of[n][c0:c0 + chunk]
            h, r, t = np.searchsorted(ids, te[:, 0]), te[:, 1], np.searchsorted(ids, te[:, 2])
            for side in ("tail", "head"):
                q = E[h] + R[r] if side == "tail" else E[t] - R[r]       # the missing end should be near q
                dist = (q ** 2).sum(1)[:, None] - 2 * q @ E.T + sq[None, :]
                true = t if side == "tail" else h
                own = dist[np.arange(len(te)), true].copy()
                for k, (hh, rr, tt) in enumerate(te.tolist()):             # filtered setting
                    other = np.asarray(self._tails[(hh, rr)] if side == "tail" else self._heads[(rr, tt)])
                    j = np.minimum(np.searchsorted(ids, other), len(ids) - 1)
                    dist[k, j[ids[j] == other]] = np.inf       # the true one too: `own` is saved
                ranks.append(1 + (dist < own[:, None]).sum(1))
        return np.concatenate(ranks) if ranks else np.zeros(0)

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        ranks = np.concatenate([self._ranks(n, rows[n]) for n in range(self.n_clients)])
        if ranks.size == 0:
            return {"MRR": 0.0, "Hits@10": 0.0}
        return {"MRR": float(np.mean(1.0 / ranks)), "Hits@10": float(np.mean(ranks <= 10))}
