"""The study framework behind SecEA's experiments (Tang, Zhu, Li, Zhang, Sun
2022, "Fully Privacy-Preserving Federated Representation Learning via Secure
Embedding Aggregation", Sec. 6 and Appendices B-C).

A :class:`Task` is one federated representation-learning problem: N
clients, client n holding the entities ``ids[n]`` (global integer ids, the
paper's E_n) with one embedding row each, a private local training step and
an evaluation.  A round (Sec. 6, "EmbAvg"/"SecEA(p)" settings) is

1. every client trains its rows (and any private parameters) locally;
2. the rows are aggregated: every entity's row is replaced by its average
   over the clients holding it (eq. 5), by one of the :class:`Aggregator`
   s below;
3. the task is evaluated on the aggregated rows.

Aggregators (each returns the new rows, per-phase seconds and bytes):

* :class:`PlainAvg` -- EmbAvg in the clear (no privacy, the reference);
* :class:`FixedAvg` -- EmbAvg of the fixed-point rows (``precision``
  decimal digits): what SecEA computes, the twin it must equal bit for bit;
* :class:`SecEAAvg` -- the SecEA protocol (``secea.run_round``: private
  entity union, Lagrange-coded sharing, coded queries, server noise,
  decoding), every party simulated in this process;
* :class:`PSIAvg` -- the PSI setting of Sec. 6: private set intersection,
  then secure aggregation of the entities every client holds (only those:
  ``protocols.baselines.psi_sa_round``); the others keep their local rows;
* :class:`LDPAvg` -- the local-differential-privacy baseline of Appendix C
  (:mod:`secea_fast.studies.ldp`);
* :class:`Single` -- no aggregation (the paper's "Single" setting).

:func:`run` trains one task under one aggregator; the batches, walks and
negatives a client draws depend only on (seed, round, client), so runs that
differ only in the aggregator see the same randomness.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._checks import check_int

__all__ = ["Task", "Aggregator", "PlainAvg", "FixedAvg", "SecEAAvg", "PSIAvg", "Single", "RoundRecord", "run",
           "client_rng"]


def client_rng(seed: int, rnd: int, n: int, stream: int = 0) -> np.random.Generator:
    """The generator of client n's local randomness in round ``rnd``."""
    return np.random.default_rng([int(seed), int(rnd), int(n), int(stream)])


class Task:
    """A federated representation-learning task (override the methods).

    Attributes set by subclasses: ``name``, ``metrics`` (names, the primary
    one first), ``ids`` (per client: sorted unique int64 global entity ids),
    ``n_entities``, ``width`` (row length), ``bound`` (|entries| SecEA's
    fixed point must hold), ``clip`` (the LDP baseline clips entries to
    [-clip, clip]; sensitivity 2 clip) and ``seed``."""
    name = "task"
    metrics: tuple = ()
    ids: list[np.ndarray]
    n_entities: int
    width: int
    bound = 100.0
    clip = 1.0
    seed = 0

    @property
    def n_clients(self) -> int:
        return len(self.ids)

    def init(self) -> list:
        """Round-0 rows (one (|ids[n]|, width) array per client; an entity
        shared by several clients starts from the same row) and a reset of
        every client's private parameters."""
        raise NotImplementedError

    def train(self, n: int, rows: np.ndarray, rnd: int) -> np.ndarray:
        """Client n's local training in round ``rnd``: its new rows."""
        raise NotImplementedError

    def evaluate(self, rows: list) -> dict:
        """Metric name -> value over all clients' test cases."""
        raise NotImplementedError

    def describe(self) -> dict:
        """Sizes for reports."""
        return {"task": self.name, "clients": self.n_clients, "entities": int(self.n_entities),
                "entities_per_client": [len(x) for x in self.ids], "width": int(self.width)}


class Aggregator:
    """``agg(task, rows) -> (new rows, seconds by phase, bytes)``."""
    label = "?"

    def __call__(self, task: Task, rows: list):
        raise NotImplementedError


class Single(Aggregator):
    """No aggregation: every client keeps its own rows (Sec. 6, "Single")."""
    label = "Single"

    def __call__(self, task, rows):
        return [r.copy() for r in rows], {}, 0


class PlainAvg(Aggregator):
    """EmbAvg in the clear (Sec. 6, "EmbAvg"): each client uploads its ids
    and rows (8-byte floats), the server averages and sends the rows back."""
    label = "EmbAvg"

    def __call__(self, task, rows):
        from ..protocols.baselines import embavg_rows
        t0 = time.perf_counter()
        out = embavg_rows(task.ids, rows, task.n_entities)
        nbytes = 2 * sum(r.shape[0] * (r.shape[1] + 1) * 8 for r in rows)
        return out, {"server": time.perf_counter() - t0}, nbytes


class FixedAvg(Aggregator):
    """EmbAvg of the rows quantized to ``precision`` decimal digits (round
    half to even): the exact sum of the quantized rows over the holders,
    divided by their number -- SecEA's output, bit for bit."""

    def __init__(self, precision: int = 8) -> None:
        self.precision = check_int(precision, "precision")
        self.label = f"EmbAvg-fixed({self.precision})"

    def __call__(self, task, rows):
        from ..protocols.baselines import embavg_rows
        t0 = time.perf_counter()
        out = embavg_rows(task.ids, rows, task.n_entities, precision=self.precision)
        return out, {"server": time.perf_counter() - t0}, 0


class SecEAAvg(Aggregator):
    """The SecEA protocol (Sec. 4) with ``precision`` decimal digits
    (SecEA(p) of Sec. 6), T colluding clients tolerated.  Phases are the
    round's wall-clock seconds (``union`` is the private entity union of
    Sec. 4.1, one-time in a deployment and here: run in the first round of
    a training run and kept while the clients' entity sets stay the same,
    so later rounds' ``union`` is only the key exchange;
    ``responses:product`` is the share of ``responses`` spent in the
    response products, not a phase of its own); bytes are the protocol's
    messages through the server."""

    def __init__(self, precision: int = 8, T: int = 1, processes: int | None = None) -> None:
        self.precision, self.T = check_int(precision, "precision"), check_int(T, "T")
        self.processes = processes
        self.label = f"SecEA({self.precision})"
        self._kept: tuple[list, object] | None = None     # (the clients' id arrays, their union)

    def __call__(self, task, rows):
        from ..protocols import secea
        local = [secea.EntityRows(i, r) for i, r in zip(task.ids, rows)]
        kept = self._kept
        union = (kept[1] if kept is not None and len(kept[0]) == len(task.ids)
                 and all(np.array_equal(a, b) for a, b in zip(kept[0], task.ids)) else None)
        res = secea.run_round(local, T=self.T, precision=self.precision, bound=task.bound,
                              processes=self.processes, union=union)
        self._kept = ([np.array(i, copy=True) for i in task.ids], res.union)
        out = list(res.rows)
        # "product" is the part of "responses" spent in the response products:
        # kept as "responses:product", outside the sum of the phases
        secs = {("responses:product" if k == "product" else k): float(v) for k, v in res.wall.items()
                if k != "blocks"}
        return out, secs, int(sum(res.bytes.values()))


class PSIAvg(Aggregator):
    """The PSI setting (Sec. 6, setting 4): "the server only aggregates
    embeddings of the entities that belong to the intersection of all
    clients' entity sets via secure aggregation" -- pairwise-masked sums of
    the rows quantized to ``precision`` decimal digits
    (``protocols.baselines.psi_sa_round``); an entity some client lacks
    keeps each holder's own row, as in Single.  Phases: the clients'
    masking and the server's sum; bytes: the masked uploads and the sums
    sent back."""

    def __init__(self, precision: int = 8) -> None:
        self.precision = check_int(precision, "precision")
        self.label = "PSI"

    def __call__(self, task, rows):
        from ..protocols.baselines import psi_sa_round
        local = [dict(zip(i.tolist(), r)) for i, r in zip(task.ids, rows)]
        res = psi_sa_round(local, precision=self.precision, bound=task.bound)
        out = [np.array([emb[k] for k in i.tolist()]).reshape(len(i), -1)
               for emb, i in zip(res["embeddings"], task.ids)]
        return out, {k: float(v) for k, v in res["seconds"].items()}, int(sum(res["bytes"].values()))


@dataclass
class RoundRecord:
    """One round: metrics, seconds by phase ("train" and the aggregator's),
    protocol bytes."""
    round: int
    metrics: dict
    seconds: dict = field(default_factory=dict)
    bytes: int = 0

    def as_dict(self) -> dict:
        return {"round": self.round, **self.metrics, "seconds": self.seconds, "bytes": self.bytes}


def run(task: Task, aggregator: Aggregator, rounds: int, *,
        on_round: Callable[[RoundRecord], object] | None = None,
        evaluate_init: bool = False) -> list[RoundRecord]:
    """Train ``task`` for ``rounds`` rounds, aggregating with ``aggregator``;
    returns one :class:`RoundRecord` per round (round 0 first, before any
    training, when ``evaluate_init``)."""
    rounds = check_int(rounds, "rounds")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not isinstance(aggregator, Aggregator):
        raise TypeError(f"aggregator must be an Aggregator, got {type(aggregator).__name__}")
    rows = task.init()
    out = []
    if evaluate_init:
        out.append(RoundRecord(0, task.evaluate(rows)))
    for rnd in range(1, rounds + 1):
        t0 = time.perf_counter()
        rows = [task.train(n, rows[n], rnd) for n in range(task.n_clients)]
        t_train = time.perf_counter() - t0
        rows, secs, nbytes = aggregator(task, rows)
        t0 = time.perf_counter()
        metrics = task.evaluate(rows)
        rec = RoundRecord(rnd, metrics, {"train": t_train, **secs, "eval": time.perf_counter() - t0}, nbytes)
        out.append(rec)
        if on_round is not None:
            on_round(rec)
    return out
