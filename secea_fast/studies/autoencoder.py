"""Multi-view clustering with a federated autoencoder on Census-Income rows,
the second model of SecEA's categorical-clustering rows (Tang, Zhu, Li,
Zhang, Sun 2022, Sec. 6, Table 3: "PCA and Autoencoder", metric NMI;
Appendix B: embedding dimension 32, "3 layers in Autoencoder" of sizes
{32, 32, 32}), in NumPy with hand-written gradients.

Data and federation are :mod:`secea_fast.studies.tabular`'s
(:func:`~secea_fast.studies.tabular.multiview_partition`: the fields dealt
into N views, each client holding its view of a random subset of the rows;
a row is an entity shared by the clients holding it).

Model (our reading: the paper gives no more than the layer sizes): client
n has a private encoder (its view -> 32 -> 32 -> code, tanh) and decoder
(code -> 32 -> 32 -> its view, tanh hidden, linear output); the entity's
row is its code, the encoder's output.  A round of local training minimizes
the reconstruction error plus ``consensus`` times the squared distance of
the code to the row the client received (the aggregate of every view's
code after the previous round: the term through which the other views'
information reaches the encoder), by Adam over minibatches; the client then
uploads its new codes.  Metrics: NMI (arithmetic normalization) of k-means
(k = classes) on each client's rows against the labels, as for PCA, and the
reconstruction error of each view decoded from the aggregated rows,
averaged over the clients by rows.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._checks import check_int
from .framework import Task, client_rng
from .tabular import PCATask, Table, centralized_view, kmeans, multiview_partition, nmi

__all__ = ["AutoencoderTask", "build", "table3_task", "ROUNDS"]


def _init_mlp(sizes: tuple, rng: np.random.Generator) -> list:
    out = []
    for a, b in zip(sizes[:-1], sizes[1:]):                  # Glorot uniform, zero bias
        lim = np.sqrt(6.0 / (a + b))
        out += [rng.uniform(-lim, lim, (a, b)), np.zeros(b)]
    return out


def _forward(p: list, x: np.ndarray, linear_last: bool) -> list:
    """Activations of the MLP with parameters ``p`` (W, b, W, b, ...): the
    input first, the output last; tanh, the last layer linear if asked."""
    acts = [x]
    L = len(p) // 2
    for k in range(L):
        a = acts[-1] @ p[2 * k] + p[2 * k + 1]
        acts.append(a if (linear_last and k == L - 1) else np.tanh(a))
    return acts


def _backward(p: list, acts: list, dout: np.ndarray, linear_last: bool) -> tuple:
    """(parameter gradients, input gradient) of the MLP given the gradient
    of the loss at its output."""
    L = len(p) // 2
    grads = [np.empty(0)] * len(p)
    d = dout
    for k in range(L - 1, -1, -1):
        if not (linear_last and k == L - 1):
            d = d * (1.0 - acts[k + 1] ** 2)
        grads[2 * k], grads[2 * k + 1] = acts[k].T @ d, d.sum(0)
        d = d @ p[2 * k].T
    return grads, d


class AutoencoderTask(Task):
    """Federated multi-view autoencoder (module docstring)."""
    name = "autoencoder"
    metrics = ("NMI", "MSE")
    bound = 100.0
    clip = 1.0            # codes are tanh outputs, in [-1, 1]

    def __init__(self, table: Table, N: int = 3, *, d: int = 32, hidden: tuple = (32, 32), hold: float = 0.7,
                 lr: float = 0.005, batch: int = 256, epochs: int = 1, consensus: float = 1.0,
                 seed: int = 0) -> None:
        self.t, self.seed = table, seed
        self.d = self.width = check_int(d, "d")
        self.hidden = tuple(check_int(h, "hidden") for h in hidden)
        if min(self.hidden, default=1) < 1 or self.d < 1:
            raise ValueError(f"d and hidden must be positive, got d = {d}, hidden = {hidden!r}")
        self.lr, self.batch, self.epochs = float(lr), check_int(batch, "batch"), check_int(epochs, "epochs")
        self.consensus = float(consensus)
        if not (self.consensus >= 0.0 and np.isfinite(self.consensus)):
            raise ValueError(f"consensus must be a finite number >= 0, got {consensus}")
        self.n_entities = len(table.y)
        self.ids, self.cols = multiview_partition(table, N, hold, seed)

    def centralized(self) -> AutoencoderTask:
        """The "Entire" setting's task: one client, every row, every column."""
        return centralized_view(self)  # type: ignore[return-value]

    def _view(self, n: int) -> np.ndarray:
        return self.t.X[np.ix_(self.ids[n], self.cols[n])]

    def init(self) -> list[np.ndarray]:
        self.enc, self.dec, self.opt = [], [], []
        for n in range(self.n_clients):
            g = np.random.default_rng([self.seed, 3, n])
            c = len(self.cols[n])
            self.enc.append(_init_mlp((c, *self.hidden, self.d), g))
            self.dec.append(_init_mlp((self.d, *self.hidden[::-1], c), g))
            ps = self.enc[-1] + self.dec[-1]
            self.opt.append(([np.zeros_like(p) for p in ps], [np.zeros_like(p) for p in ps], [0]))
        self.loss = [np.nan] * self.n_clients          # mean reconstruction error of the last epoch
        return [np.zeros((len(i), self.d)) for i in self.ids]

    def _adam(self, n: int, params: list, grads: list) -> None:
        m, v, t = self.opt[n]
        t[0] += 1
        c1, c2 = 1 - 0.9 ** t[0], 1 - 0.999 ** t[0]
        for p, g, mm, vv in zip(params, grads, m, v):
            mm *= 0.9
            mm += 0.1 * g
            vv *= 0.999
            vv += 0.001 * g * g
            p -= self.lr * (mm / c1) / (np.sqrt(vv / c2) + 1e-8)

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        X, enc, dec = self._view(n), self.enc[n], self.dec[n]
        rng = client_rng(self.seed, rnd, n)
        for _ in range(self.epochs):
            order, sq = rng.permutation(len(X)), 0.0
            for s in range(0, len(order), self.batch):
                b = order[s:s + self.batch]
                x, h = X[b], rows[b]
                ea = _forward(enc, x, linear_last=False)
                da = _forward(dec, ea[-1], linear_last=True)
                r = da[-1] - x
                sq += float((r * r).sum())
                B = len(b)
                gdec, dz = _backward(dec, da, 2.0 * r / (B * x.shape[1]), linear_last=True)
                dz = dz + self.consensus * 2.0 * (ea[-1] - h) / (B * self.d)
                genc, _ = _backward(enc, ea, dz, linear_last=False)
                self._adam(n, enc + dec, genc + gdec)
            self.loss[n] = sq / max(X.size, 1)
        return _forward(enc, X, linear_last=False)[-1]

    def evaluate(self, rows: list[np.ndarray]) -> dict[str, float]:
        k = len(self.t.classes)
        num = err = tot = 0.0
        for n in range(self.n_clients):
            H = rows[n]
            lab = kmeans(H, k, np.random.default_rng([self.seed, 2, n]))
            num += nmi(lab, self.t.y[self.ids[n]]) * len(H)
            fit = _forward(self.dec[n], H, linear_last=True)[-1]
            err += float(((self._view(n) - fit) ** 2).mean()) * len(H)
            tot += len(H)
        return {"NMI": num / tot, "MSE": err / tot}


ROUNDS = {"quick": 2, "full": 5}         # rounds of build()'s two configurations


def build(table: Table, quick: bool, seed: int, N: int = 3) -> AutoencoderTask:
    """Table 3's autoencoder row: ``quick`` the first 2,000 rows, code 8,
    one hidden layer of 16 (a test-sized run); otherwise every row, code 32
    and hidden layers (32, 32) (Appendix B's sizes), Adam at 0.005."""
    if quick:
        n = min(2000, len(table.y))
        _, y = np.unique(table.y[:n], return_inverse=True)
        small = Table(table.X[:n], y.astype(np.int64), table.field_of, table.classes)
        return AutoencoderTask(small, N, d=8, hidden=(16,), lr=0.01, seed=seed)
    return AutoencoderTask(table, N, d=32, hidden=(32, 32), lr=0.005, seed=seed)


def table3_task(model: str) -> Callable[[Table, int, int, bool], Task]:
    """A task factory ``(table, N, seed, quick) -> Task`` for Table 3's
    Census-Income rows (``model`` "pca" or "autoencoder"): N >= 2 the
    multi-view federation, N = 1 the Entire twin (every row, every column)
    of the 3-client task of the same seed.  PCA: d = 4 (Appendix B), the
    first 2,000 rows quick."""
    if model not in ("pca", "autoencoder"):
        raise ValueError(f"model must be 'pca' or 'autoencoder', got {model!r}")

    def make(table: Table, N: int, seed: int, quick: bool) -> Task:
        n = 3 if N == 1 else N
        t: Any
        if model == "autoencoder":
            t = build(table, quick, seed, n)
        else:
            m = min(2000, len(table.y)) if quick else len(table.y)
            _, y = np.unique(table.y[:m], return_inverse=True)
            t = PCATask(Table(table.X[:m], y.astype(np.int64), table.field_of, table.classes), n, d=4, seed=seed)
        return t.centralized() if N == 1 else t
    return make
