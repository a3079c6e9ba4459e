"""One whole retrieval of objective-hiding one-shot FL simulated locally
(Egger, Urbanke, Bitar (2025), One-shot federated learning with objective
hiding): sharing and aggregation (eq. 1, Sec. V-b), query (eq. 2), answers
(Sec. V-c, Sec. VI) and reconstruction (Sec. V-d), timed per phase, with the
bytes and field elements counted for the rates of Sec. III
(``OSFLRoundResult``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field as dc_field
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from ..._checks import check_prime
from ..common.rounds import ParamsT, RoundResult
from ...field import EMBEDDING_PRIME
from ...prg import random_seed
from .params import Assignment, OSFLParams, check_objective
from .parties import Client, Federator
from .session import ClientSession, FederatorSession, drive

__all__ = ["OSFLRoundResult", "run_round", "check_label_tensor", "check_sums"]


# ----------------------------------------------------------------- simulation
@dataclass
class OSFLRoundResult(RoundResult[ParamsT]):
    """One retrieval: the common fields of :class:`RoundResult` (``bytes``
    keyed by stage: "sharing" client-to-client, "queries" federator-to-
    clients, "answers" clients-to-federator), ``sums`` (the (s, c) int64
    label sums of the federator's objective), ``elements`` (field elements
    of payload per stage, the unit of the rates) and ``info`` (the
    parameters as plain values).  ``params``: the ``OSFLParams`` of
    :func:`run_round` (None for the baseline, the scheme for the approaches).
    ``sums`` is None until the round has reconstructed them."""
    sums: Optional[np.ndarray] = None
    elements: dict = dc_field(default_factory=dict)
    info: dict = dc_field(default_factory=dict)

    PROTOCOL = "osfl"
    PHASES = ("share", "aggregate", "query", "answer", "reconstruct")
    BYTES_OF = {"share": "sharing", "query": "queries", "answer": "answers"}

    def measured_rates(self) -> dict:
        """R_share and R_PIR of Sec. III from the counted payload (s c useful symbols)."""
        useful = self.info["s"] * self.info["c"]
        return {"sharing_rate": useful / self.elements["sharing"] if self.elements.get("sharing") else math.inf,
                "pir_rate": useful / self.elements["answers"]}


def check_label_tensor(labels: ArrayLike, n: int, T: int, p: int, levels: int | None,
                       members: Sequence[Sequence[int]]) -> np.ndarray:
    """``labels`` as an (n, T, s, c) int64 array of entries in [0, levels) (or
    [0, p)) at every client ``members[t]`` of each objective t."""
    if not isinstance(labels, np.ndarray):
        raise TypeError(f"labels must be a numpy integer array of shape (n, T, s, c), got {type(labels).__name__}")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"labels must have an integer dtype (quantize soft labels with osfl.quantize), "
                        f"got {labels.dtype}")
    if labels.ndim != 4 or labels.shape[:2] != (n, T):
        raise ValueError(f"labels must have shape (n, T, s, c) with (n, T) = {(n, T)}, got {labels.shape}")
    if labels.shape[2] < 1 or labels.shape[3] < 1:
        raise ValueError(f"labels need s >= 1 and c >= 1, got shape {labels.shape}")
    hi = 0
    for t, mem in enumerate(members):
        sub = labels[list(mem), t]
        if sub.size:
            if int(sub.min()) < 0:
                raise ValueError(f"labels of objective {t} have a negative entry; labels are non-negative integers")
            hi = max(hi, int(sub.max()))
    if levels is None:
        rho = len(members[0])
        if rho * hi >= p:
            raise ValueError(f"capacity: rho * max label = {rho} * {hi} >= p = {p}; the sum would wrap "
                             f"(use a larger p or quantize to fewer levels)")
    return labels


def run_round(labels: ArrayLike, incidence: Assignment | ArrayLike, j: int, z_s: int, z_q: int,
              symmetric: bool = False, *, p: int = EMBEDDING_PRIME, levels: int | None = None,
              wire: bool = False, threads: int | None = None, verify: bool = False) -> OSFLRoundResult[OSFLParams]:
    """Simulate the whole protocol: sharing, aggregation, query, answers,
    reconstruction: one ``ClientSession`` per client and a
    ``FederatorSession`` driven over the in-memory loopback of ``drive``
    (the sessions own stage order, round binding, replay refusal and
    answer-once).

    ``labels``: (n, T, s, c) integer array (entries for unassigned (i, t) are
    ignored); ``incidence``: an n x T 0/1 array or an ``Assignment``; ``j``:
    the federator's hidden objective; ``symmetric``: Sec. VI (clients draw a
    shared seed the federator never sees).  ``wire=True`` sends every message
    through ``to_bytes``/``from_bytes`` (framed; without it the frames
    cross as objects).  Returns an :class:`OSFLRoundResult`
    whose ``sums`` is the (s, c) int64 array sum_{i in I(e_j)} labels[i, j];
    ``verify``: compare it with that plaintext sum and raise AssertionError
    on a difference.  ``seconds`` are CPU seconds (user + sys of this
    process), ``wall`` wall-clock seconds (parties run one after another).

    >>> lab = np.arange(4 * 2 * 3 * 2).reshape(4, 2, 3, 2) % 5
    >>> inc = Assignment.cyclic(4, 2, 3)
    >>> run_round(lab, inc, 1, 1, 1).sums.tolist() == lab[[2, 3, 0], 1].sum(axis=0).tolist()
    True
    """
    asg = incidence if isinstance(incidence, Assignment) else Assignment(incidence)
    p = check_prime(p)
    members = [asg.clients(t) for t in range(asg.T)]
    labels = check_label_tensor(labels, asg.n, asg.T, p, levels, members)
    if not isinstance(symmetric, bool):
        raise TypeError(f"symmetric must be a bool, got {type(symmetric).__name__}")
    n, T, s, c = labels.shape
    params = OSFLParams(asg, z_s, z_q, s, c, p=p, levels=levels)
    j = check_objective(j, T)
    rep = OSFLRoundResult(params=params, seconds={}, wall={}, bytes={}, info={"n": n, "T": T, "rho": asg.rho, "z_s": params.z_s, "z_q": params.z_q, "s": s,
                          "c": c, "p": p, "k_C": params.k_C, "symmetric": symmetric})
    seed = random_seed(32) if symmetric else None
    session = random_seed(16) if symmetric else b""
    round_id = random_seed(16)
    clients = [ClientSession(Client(i, params, labels[i], shared_seed=seed, session=session, threads=threads),
                             round_id=round_id) for i in range(n)]
    fed = FederatorSession(Federator(params, j, threads=threads), round_id=round_id)
    out = drive(clients, fed, wire=wire)
    assert out.sums is not None                      # drive returns only with the sums
    rep.seconds.update(out.seconds)
    rep.bytes.update(out.bytes)
    rep.elements.update(out.elements)
    rep.sums = out.sums.astype(np.int64)
    rep.wall.update(out.wall)
    if verify:
        check_sums(rep, labels, asg, j, "OSFL")
    return rep


def check_sums(rep: OSFLRoundResult, labels: np.ndarray, asg: Assignment, j: int, what: str) -> None:
    """``verify=True``: the retrieved sums equal the plaintext sums of objective
    j over its clients, exactly (AssertionError naming ``what`` otherwise)."""
    if rep.sums is None:
        raise ValueError(f"rep: the {what} round has no sums to check (it did not reconstruct them)")
    want = labels[list(asg.clients(j)), j].astype(object).sum(axis=0)
    if not (rep.sums.astype(object) == want).all():
        raise AssertionError(f"{what}: the retrieved sums of objective {j} differ from the plaintext sums")
    rep.verified = True
