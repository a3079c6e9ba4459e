"""The local-differential-privacy baseline of SecEA's Appendix C (Tang, Zhu,
Li, Zhang, Sun 2022, "Fully Privacy-Preserving Federated Representation
Learning via Secure Embedding Aggregation", App. C, Table 7 and Fig. 3).

What the paper does: after the private entity union, instead of SecEA,
"the vanilla Laplace DP mechanism" masks the local embeddings before they
are aggregated, "with the sensitivity set to 2 as the value of components
in an embedding representation ranges from -1 to 1", for TransE on Kinship
at privacy budgets epsilon in {0.5, 1, 5, 10, 30, 50, 100} (MRR, Table 7).

What :class:`LDPAvg` does, per round and client: clip every uploaded
component to [-c, c] (c = ``task.clip``, 1 for TransE's unit-norm entity
rows, so clipping changes nothing there), add i.i.d. Laplace noise of scale
b = 2c / epsilon to every component, and let the server average the noisy
rows of each entity over its holders (EmbAvg, eq. 5) and send the averages
back; each client continues from the averages ("vanilla": it does not
subtract its own noise).

Accounting, as in the paper: epsilon is per component and per round (each
component is one Laplace release of sensitivity 2c).  An entity's d
components in R rounds compose to d R epsilon, so the paper's (and this
baseline's) guarantee per embedding is far weaker than the epsilon label
says -- which only strengthens the paper's point that LDP at useful
epsilons still costs most of the utility.

Randomness: a ``numpy.random.Generator`` seeded from ``secrets`` (fresh,
unpredictable noise) unless a seed is passed (reproducible studies and
tests); never numpy's global generator.
"""
from __future__ import annotations

import secrets
import time

import numpy as np
from numpy.typing import ArrayLike

from .framework import Aggregator

__all__ = ["PAPER_EPSILONS", "PUBLISHED_TABLE7", "LDPAvg", "laplace_mechanism"]

#: the privacy budgets of Table 7 / Fig. 3
PAPER_EPSILONS = (0.5, 1.0, 5.0, 10.0, 30.0, 50.0, 100.0)

#: Table 7 as published: MRR of TransE on Kinship (N = 3 clients) with LDP per
#: epsilon, and without LDP (EmbAvg, also Table 3's EmbAvg entry)
PUBLISHED_TABLE7 = {"with_ldp": {0.5: 0.0464, 1.0: 0.0471, 5.0: 0.0515, 10.0: 0.0543, 30.0: 0.0739,
                                 50.0: 0.1903, 100.0: 0.3039},
                    "without_ldp": 0.4026,
                    "metric": "MRR", "task": "TransE on Kinship"}


def laplace_mechanism(rows: ArrayLike, epsilon: float, clip: float, rng: np.random.Generator) -> np.ndarray:
    """Clip every entry of ``rows`` to [-clip, clip] and add Laplace noise of
    scale 2 clip / epsilon (sensitivity 2 clip per component)."""
    epsilon, clip = float(epsilon), float(clip)
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive number, got {epsilon}")
    if not (np.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be a positive number, got {clip}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    x = np.clip(np.asarray(rows, dtype=np.float64), -clip, clip)
    return x + rng.laplace(0.0, 2.0 * clip / epsilon, size=x.shape)


class LDPAvg(Aggregator):
    """Appendix C's baseline at budget ``epsilon`` (module docstring):
    every client perturbs its rows with :func:`laplace_mechanism`, the
    server averages the noisy rows in the clear."""

    def __init__(self, epsilon: float, seed: int | None = None) -> None:
        self.epsilon = float(epsilon)
        if not (np.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon must be a positive number, got {epsilon}")
        self.seed = secrets.randbits(128) if seed is None else int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.label = f"LDP(eps={self.epsilon:g})"

    def __call__(self, task, rows):
        from ..protocols.baselines import embavg_rows
        t0 = time.perf_counter()
        noisy = [laplace_mechanism(r, self.epsilon, task.clip, self.rng) for r in rows]
        t1 = time.perf_counter()
        out = embavg_rows(task.ids, noisy, task.n_entities)
        nbytes = 2 * sum(r.shape[0] * (r.shape[1] + 1) * 8 for r in rows)
        return out, {"noise": t1 - t0, "server": time.perf_counter() - t1}, nbytes
