"""Multi-view clustering with federated PCA on Census-Income rows, the
categorical-clustering family of SecEA's experiments (Tang, Zhu, Li, Zhang,
Sun 2022, Sec. 6, Tables 2-3: PCA and an autoencoder on SPECT, Soybean and
Census Income; metric NMI; embedding dimension 4 for PCA, Appendix B).

Data: Census-Income rows as comma-separated text with the class label in
the last field -- UCI Adult (``adult.data`` / ``adult.test``, 15 fields,
"<=50K" / ">50K") or the KDD census-income file (42 fields, "- 50000." /
"50000+."): :func:`census_from_file`; fields whose values all parse as
numbers are standardized, the others one-hot encoded (the 20 most frequent
values per field, "?" a value of its own).  Or :func:`synthetic_census`:
Adult's layout (6 numeric and 8 categorical fields, 24% positive) with rows
drawn from a low-dimensional latent model the class depends on.

Federation (our reading of Appendix B's "multi-view" setting, where the
entities are the samples): the fields are dealt round-robin into N views,
client n holds view n of a random subset of the rows (each row with
probability ``hold``; every row is held at least once), so a row is an
entity shared by the clients holding it, each seeing different features.

Model: a rank-d factorization X_n ~ H_n W_n^T per client (PCA by
alternating ridge least squares): each round, client n fits its private
loadings W_n to the aggregated row embeddings H_n, then refits H_n to its
view; the rows H are what is aggregated.  Metrics: NMI (arithmetic
normalization) between k-means clusters (k = classes) of each client's
rows and the labels, and the mean squared reconstruction error of the
clients' views, averaged over the clients by rows.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_int
from .._textfile import check_text_path
from ..datasets import read_census_rows
from .framework import Task

__all__ = ["Table", "census_from_file", "synthetic_census", "kmeans", "nmi", "PCATask", "build"]


@dataclass
class Table:
    """Encoded rows: X (rows, columns) float64, y int64 class per row, and
    ``field_of`` (the source field of each column)."""
    X: np.ndarray
    y: np.ndarray
    field_of: np.ndarray
    classes: list


def _encode(fields, labels, max_levels=20):
    cols, owner = [], []
    for f, vals in enumerate(fields):
        vals = np.array(vals, dtype=object)
        present = vals != "?"
        try:
            num = np.array([float(v) if p else np.nan for v, p in zip(vals, present)])
            isnum = True
        except ValueError:
            isnum = False
        if isnum:
            mu, sd = np.nanmean(num), np.nanstd(num) or 1.0
            cols.append(np.nan_to_num((num - mu) / sd)[:, None])
            owner.append(f)
        else:
            lev, cnt = np.unique(vals.astype(str), return_counts=True)
            top = lev[np.argsort(-cnt, kind="stable")[:max_levels]]
            cols.append((vals.astype(str)[:, None] == top[None, :]).astype(np.float64))
            owner += [f] * len(top)
    classes, y = np.unique(np.array(labels, dtype=str), return_inverse=True)
    return Table(np.concatenate(cols, axis=1), y.astype(np.int64), np.array(owner), classes.tolist())


def census_from_file(path: str | os.PathLike[str], max_rows: int | None = None) -> Table:
    """Census-Income rows (module docstring) of a file
    (``secea_fast.datasets.read_census_rows``: adult.test's "|" first line
    skipped with a warning, every error naming the file and line), or of a
    directory holding ``adult.data`` and/or ``adult.test`` (the fetched
    ``census-income``: both, 48,842 rows) or ``census-income.data`` /
    ``census-income.test``.  A trailing "." of the label is dropped
    (adult.test writes ">50K."); "?" is a value of its own."""
    path = check_text_path(path, "census file")
    if os.path.isdir(path):
        files = [os.path.join(path, f) for f in ("adult.data", "adult.test", "census-income.data",
                                                   "census-income.test") if os.path.isfile(os.path.join(path, f))]
        if not files:
            raise ValueError(f"{path}: a directory without adult.data, adult.test, census-income.data or "
                             f"census-income.test")
    else:
        files = [path]
    rows: list[list[str]] = []
    for f in files:
        more = read_census_rows(f, None if max_rows is None else max_rows - len(rows))
        if rows and len(more[0]) != len(rows[0]):
            raise ValueError(f"{f}: {len(more[0])} fields per row, {files[0]} has {len(rows[0])}")
        rows += more
        if max_rows is not None and len(rows) >= max_rows:
            break
    width = len(rows[0])
    labels = [r[-1].rstrip(".").strip() for r in rows]
    fields = [[r[j] for r in rows] for j in range(width - 1)]
    return _encode(fields, labels)


def synthetic_census(n_rows: int = 48_842, rank: int = 3, seed: int = 0) -> Table:
    """Adult-shaped rows (module docstring) from a rank-``rank`` latent
    model; the class is a noisy threshold of one latent direction."""
    n_rows = check_int(n_rows, "n_rows")
    if n_rows < 10:
        raise ValueError(f"n_rows must be >= 10, got {n_rows}")
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_rows, rank))
    score = z @ rng.normal(size=rank) + rng.normal(scale=1.5, size=n_rows)
    labels = np.where(score > np.quantile(score, 0.76), ">50K", "<=50K")
    fields = []
    for _ in range(6):                                      # numeric fields
        fields.append([f"{v:.3f}" for v in z @ rng.normal(size=rank) + rng.normal(size=n_rows)])
    for card in (9, 16, 7, 14, 6, 5, 2, 41):                # categorical fields, Adult's cardinalities
        logits = z @ rng.normal(size=(rank, card)) + rng.gumbel(size=(n_rows, card)) * 1.5
        fields.append([f"c{v}" for v in np.argmax(logits, axis=1)])
    return _encode(fields, labels.tolist())


def kmeans(X: np.ndarray, k: int, rng: np.random.Generator, iters: int = 25, n_init: int = 3) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding, best of ``n_init``."""
    best: np.ndarray | None = None
    best_in = np.inf
    for _ in range(n_init):
        seeds = [X[rng.integers(len(X))]]
        for _ in range(1, k):
            d2 = np.min(((X[:, None, :] - np.array(seeds)[None]) ** 2).sum(-1), axis=1)
            seeds.append(X[rng.choice(len(X), p=d2 / d2.sum())] if d2.sum() > 0 else X[rng.integers(len(X))])
        C = np.array(seeds)
        for _ in range(iters):
            lab = np.argmin(((X[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
            C = np.array([X[lab == j].mean(0) if (lab == j).any() else C[j] for j in range(k)])
        inertia = ((X - C[lab]) ** 2).sum()
        if inertia < best_in:
            best, best_in = lab, inertia
    if best is None:            # no run, or every inertia NaN
        raise ValueError(f"kmeans needs n_init >= 1 (got {n_init}) and finite X")
    return best


def nmi(a: ArrayLike, b: ArrayLike) -> float:
    """Normalized mutual information (arithmetic mean of the entropies).

    >>> round(nmi([0, 0, 1, 1], [1, 1, 0, 0]), 6)
    1.0
    """
    _, a = np.unique(np.asarray(a), return_inverse=True)
    _, b = np.unique(np.asarray(b), return_inverse=True)
    c = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(c, (a, b), 1.0)
    p = c / c.sum()
    pa, pb = p.sum(1), p.sum(0)
    nz = p > 0
    mi = float((p[nz] * np.log(p[nz] / np.outer(pa, pb)[nz])).sum())
    ha, hb = -float((pa[pa > 0] * np.log(pa[pa > 0])).sum()), -float((pb[pb > 0] * np.log(pb[pb > 0])).sum())
    return 0.0 if ha + hb == 0 else 2.0 * mi / (ha + hb)


class PCATask(Task):
    """Federated multi-view PCA (module docstring)."""
    name = "pca"
    metrics = ("NMI", "MSE")
    bound = 100.0
    clip = 4.0            # LDP clip (sensitivity 8): rows of standardized data rarely exceed 4

    def __init__(self, table: Table, N: int = 3, *, d: int = 4, hold: float = 0.7, ridge: float = 1e-2,
                 seed: int = 0) -> None:
        N = check_int(N, "N")
        if N < 2:
            raise ValueError(f"N must be >= 2, got {N}")
        nf = int(table.field_of.max()) + 1
        if nf < N:
            raise ValueError(f"{nf} fields cannot be dealt to N = {N} clients")
        self.t, self.d, self.width, self.ridge, self.seed = table, check_int(d, "d"), check_int(d, "d"), ridge, seed
        self.n_entities = len(table.y)
        rng = np.random.default_rng(seed)
        held = rng.random((N, self.n_entities)) < hold
        nobody = ~held.any(0)
        held[rng.integers(0, N, nobody.sum()), np.flatnonzero(nobody)] = True
        self.ids = [np.flatnonzero(held[n]).astype(np.int64) for n in range(N)]
        self.cols = [np.flatnonzero(table.field_of % N == n) for n in range(N)]

    def _view(self, n):
        return self.t.X[np.ix_(self.ids[n], self.cols[n])]

    def init(self) -> list[np.ndarray]:
        H = np.random.default_rng([self.seed, 1]).normal(scale=0.1, size=(self.n_entities, self.d))
        self.W: list[np.ndarray | None] = [None] * self.n_clients     # per client, set by train
        return [H[i].copy() for i in self.ids]

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        X, H, I = self._view(n), rows, np.eye(self.d)
        W = np.linalg.solve(H.T @ H + self.ridge * I, H.T @ X).T            # (cols, d)
        self.W[n] = W
        return np.linalg.solve(W.T @ W + self.ridge * I, W.T @ X.T).T        # (rows, d)

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        k = len(self.t.classes)
        num = err = tot = 0.0
        for n in range(self.n_clients):
            H = rows[n]
            lab = kmeans(H, k, np.random.default_rng([self.seed, 2, n]))
            num += nmi(lab, self.t.y[self.ids[n]]) * len(H)
            X = self._view(n)
            W = self.W[n]
            fit = 0.0 if W is None else H @ W.T          # before training: nothing fitted
            err += float(((X - fit) ** 2).mean()) * len(H)
            tot += len(H)
        return {"NMI": num / tot, "MSE": err / tot}


def build(data: str | os.PathLike[str] | None, quick: bool, seed: int, N: int = 3) -> PCATask:
    """The study's task: ``data`` a Census-Income file (``quick``: its first
    3,000 rows) or None (synthetic: 3,000 rows quick, Census-Income's
    48,842 otherwise)."""
    if data is not None:
        t = census_from_file(data, max_rows=3000 if quick else None)
    else:
        t = synthetic_census(3000 if quick else 48_842, seed=seed)
    return PCATask(t, N, d=4, seed=seed)
