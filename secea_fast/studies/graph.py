"""Graph embedding with DeepWalk, the social-network family of SecEA's
experiments (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 6, Tables 2-3: LINE,
DeepWalk, node2vec on Citeseer, Cora, Wiki, node classification, Micro-F1).

Data: an edge list (two node ids per line, separated by whitespace, tabs
or commas; ``#`` / ``%`` comment lines; Cora's ``cora.cites``, SNAP files:
:func:`edges_from_file`) and optionally node labels (``node label`` per
line, or Cora's ``cora.content``: id, features, label -- first and last
field: :func:`labels_from_file`); or :func:`synthetic_graph`, a stochastic
block model of Cora's shape (2,708 nodes, 5,429 edges, 7 classes).

Federation (Appendix B, "sample-level"): 10% of the edges are held out for
link prediction; the other edges are dealt uniformly to N clients, and a
client's entities are the nodes its edges touch.  The aggregated row of a
node is its input and output skip-gram vectors side by side (2d entries).

Model: DeepWalk (Perozzi, Al-Rfou, Skiena 2014): per round, truncated
uniform random walks from every node of the client's subgraph, skip-gram
with negative sampling over a window (Mikolov et al. 2013; negatives from
the degree^0.75 distribution), minibatch SGD, all vectorized.

Metrics, over all clients' cases: Micro-F1 of node classification (the
paper's metric; softmax regression on each client's aggregated input
vectors, trained on half of its labeled nodes and tested on the other
half; for single-label classes Micro-F1 is the accuracy), and the AUC of
link prediction (held-out edges whose ends a client holds against as many
random pairs of its nodes, scored by the cosine of the input vectors).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_int
from .._textfile import check_text_path, excerpt, text_lines
from .framework import Task, client_rng

__all__ = ["Graph", "edges_from_file", "labels_from_file", "synthetic_graph", "DeepWalkTask", "auc", "build"]


@dataclass
class Graph:
    """Undirected edges (m, 2) int64 (u < v, no repeats), node count, labels
    (int64 per node, -1 unknown, or None) and the node names."""
    edges: np.ndarray
    n_nodes: int
    labels: np.ndarray | None = None
    names: list | None = None


def _check_path(path):
    check_text_path(path, "graph")


def _tokens(line):
    return line.replace(",", " ").split()


def edges_from_file(path: str | os.PathLike[str]) -> Graph:
    """An edge list (module docstring); names renumbered 0.. in order of
    first appearance, self-loops and repeated edges dropped."""
    _check_path(path)
    idx: dict[str, int] = {}      # name -> node, in order of first appearance
    pairs = []
    for k, line in text_lines(path, "edge list"):
        s = line.strip()
        if not s or s[0] in "#%":
            continue
        t = _tokens(s)
        if len(t) < 2:
            raise ValueError(f"{os.fspath(path)}:{k}: expected two node ids, got {excerpt(s)}")
        pairs.append((idx.setdefault(t[0], len(idx)), idx.setdefault(t[1], len(idx))))
    if not pairs:
        raise ValueError(f"{path}: no edges")
    e = np.sort(np.array(pairs, dtype=np.int64), axis=1)
    e = np.unique(e[e[:, 0] != e[:, 1]], axis=0)
    return Graph(e, len(idx), None, list(idx))


def labels_from_file(path: str | os.PathLike[str], graph: Graph) -> Graph:
    """``graph`` with labels from ``path`` (first field the node, last the
    label; nodes absent from the file get -1, unknown nodes are skipped)."""
    _check_path(path)
    pos = {name: i for i, name in enumerate(graph.names or [])}
    lab = np.full(graph.n_nodes, -1, dtype=np.int64)
    classes: dict[str, int] = {}      # label -> class, in order of first appearance
    for k, line in text_lines(path, "labels file"):
        s = line.strip()
        if not s or s[0] in "#%":
            continue
        t = _tokens(s) if "\t" not in s else s.split("\t")
        if len(t) < 2:
            raise ValueError(f"{os.fspath(path)}:{k}: expected a node and a label, got {excerpt(s)}")
        if t[0].strip() in pos:
            lab[pos[t[0].strip()]] = classes.setdefault(t[-1].strip(), len(classes))
    return Graph(graph.edges, graph.n_nodes, lab, graph.names)


def synthetic_graph(n_nodes: int = 2708, n_edges: int = 5429, n_classes: int = 7, p_in: float = 0.8,
                    seed: int = 0) -> Graph:
    """A stochastic block model: ``n_classes`` equal classes, each edge
    inside a class with probability ``p_in``, endpoints uniform."""
    n_nodes, n_edges, n_classes = (check_int(v, n) for v, n in
                                   ((n_nodes, "n_nodes"), (n_edges, "n_edges"), (n_classes, "n_classes")))
    if n_nodes < 2 * n_classes or n_edges < n_nodes // 2:
        raise ValueError("need n_nodes >= 2 n_classes and n_edges >= n_nodes / 2")
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, n_classes, n_nodes)
    members = [np.flatnonzero(lab == c) for c in range(n_classes)]
    edges: set[tuple[int, int]] = set()
    # a random spanning path first, so every node has an edge
    perm = rng.permutation(n_nodes)
    for a, b in zip(perm[:-1], perm[1:]):
        if len(edges) >= n_edges // 3:
            break
        edges.add((min(a, b), max(a, b)))
    while len(edges) < n_edges:
        u = int(rng.integers(n_nodes))
        pool = members[lab[u]] if rng.random() < p_in else np.arange(n_nodes)
        v = int(pool[rng.integers(len(pool))])
        if u != v:
            edges.add((min(u, v), max(u, v)))
    e = np.array(sorted(edges), dtype=np.int64)
    return Graph(e, n_nodes, lab.astype(np.int64), [str(i) for i in range(n_nodes)])


def auc(pos: ArrayLike, neg: ArrayLike) -> float:
    """Area under the ROC curve of scores ``pos`` against ``neg`` (ties
    count one half): the Mann-Whitney statistic.

    >>> auc([3.0, 1.0], [2.0, 0.0])
    0.75
    """
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    if pos.size == 0 or neg.size == 0:
        return 0.5
    allv = np.concatenate([pos, neg])
    order = np.argsort(allv, kind="mergesort")
    ranks = np.empty(len(allv))
    sv = allv[order]
    # average ranks of ties
    start = np.r_[0, np.flatnonzero(np.diff(sv)) + 1]
    end = np.r_[start[1:], len(sv)]
    avg = (start + end - 1) / 2.0 + 1
    ranks[order] = np.repeat(avg, end - start)
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _softmax_fit_predict(Xtr, ytr, Xte, n_classes, iters=200, lr=0.5, reg=1e-3):
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-9
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    W = np.zeros((Xtr.shape[1], n_classes))
    b = np.zeros(n_classes)
    Y = np.eye(n_classes)[ytr]
    for _ in range(iters):
        z = Xtr @ W + b
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        g = (p - Y) / len(ytr)
        W -= lr * (Xtr.T @ g + reg * W)
        b -= lr * g.sum(0)
    return np.argmax(Xte @ W + b, axis=1)


class DeepWalkTask(Task):
    """DeepWalk across ``N`` clients (module docstring)."""
    name = "deepwalk"
    bound = 100.0
    clip = 1.0

    def __init__(self, g: Graph, N: int = 3, *, d: int = 32, walks: int = 4, length: int = 10, window: int = 5,
                 negatives: int = 5, lr: float = 0.05, batch: int = 4096, max_pairs: int = 200_000,
                 seed: int = 0) -> None:
        N = check_int(N, "N")
        if N < 2:
            raise ValueError(f"N must be >= 2, got {N}")
        self.g, self.d, self.width = g, check_int(d, "d"), 2 * check_int(d, "d")
        self.walks, self.length, self.window, self.neg = walks, length, window, negatives
        self.lr, self.batch, self.max_pairs, self.seed = lr, batch, max_pairs, seed
        self.n_entities = g.n_nodes
        self.metrics = ("Micro-F1", "AUC") if g.labels is not None else ("AUC",)
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(g.edges))
        k = max(1, len(perm) // 10)
        test, train = g.edges[perm[:k]], g.edges[perm[k:]]
        owner = rng.integers(0, N, len(train))
        self.ids, self.csr, self.cases, self.lp = [], [], [], []
        if g.labels is not None:
            labeled = np.flatnonzero(g.labels >= 0)
            is_train = np.zeros(g.n_nodes, dtype=bool)
            is_train[rng.choice(labeled, len(labeled) // 2, replace=False)] = True
            self.n_classes = int(g.labels.max()) + 1
        for n in range(N):
            e = train[owner == n]
            ids = np.unique(e)
            if len(ids) < 2:
                raise ValueError(f"client {n} holds fewer than two nodes: too few edges for N = {N}")
            loc = np.searchsorted(ids, e)
            src = np.concatenate([loc[:, 0], loc[:, 1]])
            dst = np.concatenate([loc[:, 1], loc[:, 0]])
            o = np.argsort(src, kind="stable")
            indptr = np.r_[0, np.cumsum(np.bincount(src, minlength=len(ids)))]
            deg = np.diff(indptr).astype(np.float64)
            self.ids.append(ids.astype(np.int64))
            self.csr.append((indptr, dst[o], deg ** 0.75 / (deg ** 0.75).sum()))
            # link prediction: held-out edges with both ends here, as many random pairs
            both = np.isin(test[:, 0], ids) & np.isin(test[:, 1], ids)
            te = np.searchsorted(ids, test[both])
            ng = rng.integers(0, len(ids), size=(len(te), 2))
            self.lp.append((te, ng))
            if g.labels is not None:
                lab = g.labels[ids]
                tr = np.flatnonzero((lab >= 0) & is_train[ids])
                ts = np.flatnonzero((lab >= 0) & ~is_train[ids])
                self.cases.append((tr, ts, lab))

    def init(self) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, 1])
        W = np.concatenate([rng.uniform(-0.5, 0.5, (self.n_entities, self.d)) / self.d,
                            np.zeros((self.n_entities, self.d))], axis=1)
        return [W[i].copy() for i in self.ids]

    def _walk_pairs(self, n, rng):
        indptr, nbr, _ = self.csr[n]
        deg = np.diff(indptr)
        cur = np.tile(np.flatnonzero(deg > 0), self.walks)
        walk = [cur]
        for _ in range(self.length - 1):
            cur = nbr[indptr[cur] + (rng.random(len(cur)) * deg[cur]).astype(np.int64)]
            walk.append(cur)
        walk = np.stack(walk, axis=1)
        c, x = [], []
        for off in range(1, self.window + 1):
            c += [walk[:, :-off].ravel(), walk[:, off:].ravel()]
            x += [walk[:, off:].ravel(), walk[:, :-off].ravel()]
        c, x = np.concatenate(c), np.concatenate(x)
        if len(c) > self.max_pairs:
            keep = rng.choice(len(c), self.max_pairs, replace=False)
            c, x = c[keep], x[keep]
        return c, x

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        W = rows.copy()
        win, wout = W[:, :self.d], W[:, self.d:]                # views into W
        rng = client_rng(self.seed, rnd, n)
        center, ctx = self._walk_pairs(n, rng)
        noise = self.csr[n][2]
        order = rng.permutation(len(center))
        for s in range(0, len(order), self.batch):
            b = order[s:s + self.batch]
            c = center[b]
            tgt = np.concatenate([ctx[b][:, None], rng.choice(len(noise), size=(len(b), self.neg), p=noise)], 1)
            y = np.zeros(tgt.shape)
            y[:, 0] = 1.0
            vc = win[c]                                          # (B, d)
            vo = wout[tgt]                                       # (B, 1+k, d)
            g = 0.5 * (1.0 + np.tanh(0.5 * np.einsum("bd,bkd->bk", vc, vo))) - y
            gc = np.einsum("bk,bkd->bd", g, vo)
            go = g[:, :, None] * vc[:, None, :]
            np.add.at(win, c, -self.lr * gc)
            np.add.at(wout, tgt.ravel(), -self.lr * go.reshape(-1, self.d))
        return W

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        out = {}
        if self.g.labels is not None:
            right = total = 0
            for n, (tr, ts, lab) in enumerate(self.cases):
                if len(ts) == 0 or len(np.unique(lab[tr])) < 2:
                    continue
                X = rows[n][:, :self.d]
                pred = _softmax_fit_predict(X[tr], lab[tr], X[ts], self.n_classes)
                right += int((pred == lab[ts]).sum())
                total += len(ts)
            out["Micro-F1"] = right / max(total, 1)
        num = den = 0.0
        for n, (te, ng) in enumerate(self.lp):
            if len(te) == 0:
                continue
            X = rows[n][:, :self.d]
            X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
            a = auc(np.einsum("ij,ij->i", X[te[:, 0]], X[te[:, 1]]), np.einsum("ij,ij->i", X[ng[:, 0]], X[ng[:, 1]]))
            num += a * len(te)
            den += len(te)
        out["AUC"] = num / den if den else 0.5
        return out


def build(data: str | os.PathLike[str] | None, quick: bool, seed: int, labels: str | os.PathLike[str] | None = None,
          N: int = 3) -> DeepWalkTask:
    """The study's task: ``data`` an edge list (``labels`` optional) or
    None (synthetic: 800 nodes quick, Cora's shape otherwise)."""
    if data is not None:
        g = edges_from_file(data)
        if labels is not None:
            g = labels_from_file(labels, g)
    elif labels is not None:
        raise ValueError("labels needs data (the edge list they belong to)")
    else:
        g = synthetic_graph(800, 2400, 7, seed=seed) if quick else synthetic_graph(seed=seed)
    return DeepWalkTask(g, N, d=32, walks=4 if quick else 10, max_pairs=50_000 if quick else 200_000, seed=seed)
