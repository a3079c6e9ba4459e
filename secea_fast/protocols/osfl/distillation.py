"""The knowledge-distillation example (Sec. III, "Non-linear training
processes"; label quantization of Sec. V-a) of Egger, Urbanke, Bitar (2025),
One-shot federated learning with objective hiding.  The
``secea-fast run --protocol osfl`` job built on it is a driver's:
``secea_fast.jobs.osfl_job``.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..._checks import check_int
from ...field import EMBEDDING_PRIME
from .params import Assignment
from .costs import rates
from .round import run_round

__all__ = ["quantize", "distillation_example"]


# ----------------------------------------------------------------- knowledge distillation example
def quantize(probs: ArrayLike, levels: int) -> NDArray[np.int64]:
    """Soft labels (probabilities in [0, 1]) to integers in [0, levels - 1]:
    round(prob (levels - 1)) (Sec. V-a, gamma = levels quantization steps)."""
    levels = check_int(levels, "levels")
    if levels < 2:
        raise ValueError(f"levels must be >= 2, got {levels}")
    x = np.asarray(probs, dtype=np.float64)
    if not np.isfinite(x).all() or (x < 0).any() or (x > 1).any():
        raise ValueError("probabilities must be finite and in [0, 1]")
    return np.rint(x * (levels - 1)).astype(np.int64)


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _train_softmax(X, Y, *, iters=300, lr=0.5, l2=1e-3):
    """Multinomial logistic regression by gradient descent; Y: one-hot or soft targets."""
    n, d = X.shape
    Xb = np.hstack([X, np.ones((n, 1))])
    W = np.zeros((d + 1, Y.shape[1]))
    for _ in range(iters):
        G = Xb.T @ (_softmax(Xb @ W) - Y) / n + l2 * W
        W -= lr * G
    return W


def _predict(W, X):
    return _softmax(np.hstack([X, np.ones((len(X), 1))]) @ W)


def distillation_example(*, n: int = 20, T: int = 5, rho: int = 11, z_s: int = 2, z_q: int = 2, s: int = 5000,
                         classes: int = 5, dim: int = 20, levels: int = 17, n_train: int = 60, n_test: int = 2000,
                         j: int = 0, symmetric: bool = True, noise: float = 1.0, seed: int = 0,
                         p: int = EMBEDDING_PRIME, on_stage: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One-shot knowledge distillation on generated data (Sec. III "Non-linear
    training processes").

    Objective t is a c-class problem over R^dim: the label of x is drawn from
    softmax(W_t x / noise) for a random W_t (each objective its own labeller).
    Client i holds ``n_train`` private samples per assigned objective, drawn
    around a client-specific mean (heterogeneous clients), trains a softmax
    regression for each t in I(i) (cyclic assignment) and labels a public set
    of ``s`` samples with its predicted probabilities quantized to ``levels``
    levels.  The federator retrieves the aggregated labels of its hidden
    objective ``j`` with ``run_round`` and trains a student on the public set with
    the normalized sums as soft targets.  ``on_stage(name)`` is called as
    each of these three parts starts (progress for a command).  Reported: test accuracy (against
    argmax W_j x) of the student, of a model trained on the pooled private data
    of the clients of I(e_j), the teachers' mean, plus protocol seconds,
    bytes and whether the retrieved sum is exact.  ``numpy.random`` draws the
    simulation data only (Generator seeded with ``seed``)."""
    stage = on_stage if on_stage is not None else (lambda name: None)
    rng = np.random.default_rng(seed)   # simulation data only
    asg = Assignment.cyclic(n, T, rho)
    Ws = rng.normal(size=(T, dim, classes))
    shifts = rng.normal(scale=0.8, size=(n, dim))

    def draw_labels(X, t):
        P_ = _softmax(X @ Ws[t] / noise)
        u = rng.random((len(X), 1))
        return np.minimum((P_.cumsum(axis=1) < u).sum(axis=1), classes - 1)

    X_pub = rng.normal(size=(s, dim))
    X_test = rng.normal(size=(n_test, dim))
    labels = np.zeros((n, T, s, classes), dtype=np.int64)
    pooled_X, pooled_y, teacher_acc = [], [], []
    y_test = (X_test @ Ws[j]).argmax(axis=1)
    stage("local training (every client's teachers)")
    t0 = time.perf_counter()
    for i in range(n):
        for t in asg.objectives(i):
            X = rng.normal(size=(n_train, dim)) + shifts[i]
            y = draw_labels(X, t)
            W = _train_softmax(X, np.eye(classes)[y])
            labels[i, t] = quantize(_predict(W, X_pub), levels)
            if t == j:
                pooled_X.append(X)
                pooled_y.append(y)
                teacher_acc.append(float((_predict(W, X_test).argmax(axis=1) == y_test).mean()))
    t_local = time.perf_counter() - t0
    stage("the round (share, aggregate, query, answer, reconstruct)")
    rep = run_round(labels, asg, j, z_s, z_q, symmetric, p=p, levels=levels)
    sums = rep.sums
    assert sums is not None, "run_round reconstructs the sums"
    exact = bool((sums == labels[list(asg.clients(j)), j].sum(axis=0)).all())
    stage("student training on the retrieved labels")
    t0 = time.perf_counter()
    tot = sums.sum(axis=1, keepdims=True).astype(np.float64)
    soft = np.where(tot > 0, sums / np.maximum(tot, 1), 1.0 / classes)
    W_student = _train_softmax(X_pub, soft)
    student = float((_predict(W_student, X_test).argmax(axis=1) == y_test).mean())
    Xp, yp = np.vstack(pooled_X), np.concatenate(pooled_y)
    W_pool = _train_softmax(Xp, np.eye(classes)[yp])
    pooled = float((_predict(W_pool, X_test).argmax(axis=1) == y_test).mean())
    t_student = time.perf_counter() - t0
    table = rates(n, T, rho, z_s, z_q)["ours"]
    return {
        "params": {"n": n, "T": T, "rho": rho, "z_s": z_s, "z_q": z_q, "s": s, "classes": classes,
                   "dim": dim, "levels": levels, "n_train": n_train, "j": j, "symmetric": symmetric,
                   "k_C": (rho - z_q + z_s + 1) // 2, "p": p},
        "accuracy": {"student": student, "pooled": pooled, "teacher_mean": float(np.mean(teacher_acc)),
                     "teacher_max": float(np.max(teacher_acc))},
        "exact_sum": exact,
        "seconds": {"local_training": t_local, **{k: float(v) for k, v in rep.seconds.items()},
                    "student_training": t_student},
        "wall_seconds": {k: float(v) for k, v in rep.wall.items()},
        "bytes": {k: int(v) for k, v in rep.bytes.items()},
        "field_elements": {k: int(v) for k, v in rep.elements.items()},
        "rates": {"measured": rep.measured_rates(),
                  "table_I": {"sharing_rate": table["sharing_rate"], "pir_rate": table["pir_rate"]}},
        "_labels": labels,
        "_assignment": asg,
    }
