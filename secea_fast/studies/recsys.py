"""Federated recommendation: the learning task of SecEA's recommendation
experiments and of SecEmb's FedRec setting, in NumPy.

Data: MovieLens-format ratings (the user's file, :func:`ratings_from_file`)
or a built-in MovieLens-1M-shaped synthetic set (:func:`synthetic_ratings`:
Zipf-like item popularity, at least 20 ratings per user, drawn from a
low-rank preference model so there is something to learn).  Evaluation is
leave-one-out with sampled negatives (He, Liao, Zhang, Nie, Hu, Chua 2017,
"Neural Collaborative Filtering", Sec. 4.1): each user's latest rating is
held out and ranked among 99 items the user never rated; HR@10 and NDCG@10.

Model: implicit-feedback matrix factorisation, score p_u . q_i, logistic
loss on the observed pairs and sampled negatives, L2 regularisation,
minibatch SGD (seeded: two runs that differ only in how embeddings are
aggregated see the same batches and negatives).

* Cross-silo (SecEA's setting, Tang, Zhu, Li, Zhang, Sun 2022, Appendix B):
  :class:`Silos` deals the items to N silos; silo n holds the ratings of
  its items, so its entities are those items ("i<id>") and the users who
  rated them ("u<id>"), and users are shared between silos.  Each round
  every silo trains locally, then the embeddings of every entity are
  replaced by their average over the silos holding it (EmbAvg): in the
  clear (``protocols.baselines.embavg``) or by SecEA (``secea.aggregate``,
  which returns ``baselines.embavg(local, precision)``, the average of the
  fixed-point embeddings, bit for bit).  A test
  case belongs to the silo holding its test item and is ranked among 99 of
  that silo's items.
* Cross-device (SecEmb's setting, Mai et al. 2025): users are the clients
  and the item table Q is on the servers; :func:`run_cross_device` trains
  with the SecEmb round (private retrieval of the rows a user needs and
  sparse secure aggregation of its gradient rows) or its plaintext twin
  with the same fixed point, which it equals bit for bit.
"""
from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_int
from ..protocols import baselines, secemb
from . import fedrec
from ..workloads import read_ratings

__all__ = ["Ratings", "ratings_from_file", "synthetic_ratings", "leave_one_out", "hr_ndcg", "Silos",
           "run_cross_silo", "run_cross_device", "device_request", "device_init",
           "device_step", "device_eval"]


@dataclass
class Ratings:
    """Implicit feedback: (user, item, time) triples with dense 0-based ids;
    ``values`` the explicit ratings when the source has them (the explicit
    models, e.g. :class:`~secea_fast.studies.rectasks.SVDTask`, need them)."""
    users: np.ndarray
    items: np.ndarray
    times: np.ndarray
    n_users: int
    n_items: int
    values: np.ndarray | None = None


def ratings_from_file(path: str | os.PathLike[str], max_ratings: int | None = None) -> Ratings:
    """A MovieLens ratings file (``ratings.dat``, ``u.data``, ``ratings.csv``)
    with its ids renumbered 0.. in order of first appearance."""
    u, i, t = read_ratings(path, max_ratings)
    _, uu = np.unique(u, return_inverse=True)
    _, ii = np.unique(i, return_inverse=True)
    return Ratings(uu.astype(np.int64), ii.astype(np.int64), t, int(uu.max()) + 1, int(ii.max()) + 1)


def synthetic_ratings(n_users: int = 6040, n_items: int = 3706, n_ratings: int = 1_000_209, rank: int = 8,
                      seed: int = 0) -> Ratings:
    """MovieLens-1M-shaped implicit feedback (the default sizes are ML-1M's):
    per-user counts heavy-tailed with at least min(20, n_items // 2), item
    popularity Zipf-like, and each user's items the best of a popularity
    sample under a random rank-``rank`` preference model plus noise."""
    n_users, n_items, n_ratings = (check_int(x, n) for x, n in
                                   ((n_users, "n_users"), (n_items, "n_items"), (n_ratings, "n_ratings")))
    if n_users < 1 or n_items < 4 or n_ratings < n_users:
        raise ValueError("need n_users >= 1, n_items >= 4 and n_ratings >= n_users")
    rng = np.random.default_rng(seed)
    floor = min(20, n_items // 2)
    raw = rng.pareto(1.3, n_users) + 1.0
    counts = np.clip(np.round(raw / raw.sum() * n_ratings), floor, n_items // 2).astype(np.int64)
    pop = 1.0 / np.arange(1, n_items + 1) ** 0.9
    rng.shuffle(pop)
    pop /= pop.sum()
    U = rng.normal(size=(n_users, rank))
    V = rng.normal(size=(n_items, rank))
    users, items = [], []
    for u in range(n_users):
        k = int(counts[u])
        cand = np.unique(rng.choice(n_items, size=min(n_items, 4 * k), p=pop))
        if len(cand) < k:
            cand = np.union1d(cand, rng.choice(n_items, size=k, replace=False))
        score = V[cand] @ U[u] + rng.gumbel(size=len(cand))
        users.append(np.full(k, u))
        items.append(cand[np.argpartition(-score, k - 1)[:k]])
    all_users, all_items = np.concatenate(users), np.concatenate(items)
    times = rng.permutation(len(all_users)).astype(np.int64)
    return Ratings(all_users.astype(np.int64), all_items.astype(np.int64), times, n_users, n_items)


@dataclass
class Split:
    """Leave-one-out: training pairs, one test item per user, and for each
    user ``negatives`` it never rated (-1 where fewer exist)."""
    users: np.ndarray
    items: np.ndarray
    test_users: np.ndarray
    test_items: np.ndarray
    negatives: np.ndarray


def leave_one_out(r: Ratings, n_neg: int = 99, seed: int = 0,
                  candidates: Sequence[np.ndarray] | None = None) -> Split:
    """Hold out each user's latest rating (users with one rating keep it for
    training); ``negatives[k]`` are ``n_neg`` items user ``test_users[k]``
    never rated, drawn from ``candidates[k]`` (default: every item)."""
    rng = np.random.default_rng(seed)
    order = np.lexsort((r.times, r.users))
    u, i = r.users[order], r.items[order]
    last = np.r_[np.flatnonzero(np.diff(u)), len(u) - 1]
    first = np.r_[0, last[:-1] + 1]
    keep = np.ones(len(u), dtype=bool)
    test = last[last > first]                         # users with at least two ratings
    keep[test] = False
    rated = {}
    for a, b in zip(first, last + 1):
        rated[int(u[a])] = set(i[a:b].tolist())
    negs = np.full((len(test), n_neg), -1, dtype=np.int64)
    for k, t in enumerate(test):
        user = int(u[t])
        pool = np.arange(r.n_items) if candidates is None else np.asarray(candidates[k])
        pool = pool[~np.isin(pool, list(rated[user]))]
        take = min(n_neg, len(pool))
        negs[k, :take] = rng.choice(pool, size=take, replace=False)
    return Split(u[keep], i[keep], u[test], i[test], negs)


def hr_ndcg(pos: np.ndarray, neg: np.ndarray, k: int = 10) -> tuple[float, float]:
    """HR@k and NDCG@k of positives ``pos`` (B,) ranked among ``neg`` (B, n)
    (NaN entries of ``neg`` are ignored; ties count against the positive):
    rank = number of negatives scoring >= the positive; a hit when rank < k,
    NDCG = 1 / log2(rank + 2) for a hit.

    >>> hr_ndcg(np.array([3.0, 0.0]), np.array([[1.0, 2.0], [1.0, 2.0]]), k=1)
    (0.5, 0.5)
    """
    pos = np.asarray(pos, dtype=np.float64)
    neg = np.asarray(neg, dtype=np.float64)
    if neg.ndim != 2 or neg.shape[0] != pos.shape[0]:
        raise ValueError(f"neg must have shape ({pos.shape[0]}, n), got {neg.shape}")
    if pos.size == 0:
        return 0.0, 0.0
    rank = np.sum(np.where(np.isnan(neg), False, neg >= pos[:, None]), axis=1)
    hit = rank < k
    return float(hit.mean()), float(np.where(hit, 1.0 / np.log2(rank + 2.0), 0.0).mean())


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _sgd_epoch(P, Q, users, items, neg_pool, *, lr, reg, n_neg, rng, batch=1024):
    """One epoch of logistic MF over the positive pairs (row indices into P
    and Q) with ``n_neg`` negatives per positive drawn from ``neg_pool``."""
    order = rng.permutation(len(users))
    for s in range(0, len(order), batch):
        b = order[s:s + batch]
        bu = np.repeat(users[b], 1 + n_neg)
        bi = np.concatenate([items[b][:, None], rng.choice(neg_pool, size=(len(b), n_neg))], axis=1).ravel()
        y = np.tile(np.r_[1.0, np.zeros(n_neg)], len(b))
        pu, qi = P[bu], Q[bi]
        g = _sigmoid(np.einsum("ij,ij->i", pu, qi)) - y
        gp = g[:, None] * qi + reg * pu
        gq = g[:, None] * pu + reg * qi
        np.add.at(P, bu, -lr * gp)
        np.add.at(Q, bi, -lr * gq)


class Silos:
    """The cross-silo federation of the module docstring: ``N`` silos, the
    items dealt at random (seeded), the split's training pairs and test
    cases of each silo."""

    def __init__(self, r: Ratings, N: int = 5, *, n_neg_eval: int = 99, seed: int = 0) -> None:
        N = check_int(N, "N")
        if N < 2:
            raise ValueError(f"N must be >= 2, got {N}")
        rng = np.random.default_rng(seed)
        self.N, self.n_users, self.n_items = N, r.n_users, r.n_items
        self.owner = rng.integers(0, N, r.n_items)
        self.items_of = [np.flatnonzero(self.owner == n) for n in range(N)]
        if min(len(x) for x in self.items_of) < 2:
            raise ValueError(f"{r.n_items} items are too few for N = {N} silos: the random deal leaves silo "
                             f"{int(np.argmin([len(x) for x in self.items_of]))} with "
                             f"{min(len(x) for x in self.items_of)} item(s), each needs 2; use more data or fewer "
                             f"clients")
        # the test item is each user's latest; its negatives come from the silo holding it
        order = np.lexsort((r.times, r.users))
        u, i = r.users[order], r.items[order]
        last = np.r_[np.flatnonzero(np.diff(u)), len(u) - 1]
        cands = [self.items_of[self.owner[i[t]]] for t in last]
        sp = leave_one_out(r, n_neg_eval, seed, candidates=cands)
        self.train, self.test = [], []
        for n in range(N):
            m = self.owner[sp.items] == n
            self.train.append((sp.users[m], sp.items[m]))
            t = self.owner[sp.test_items] == n
            self.test.append((sp.test_users[t], sp.test_items[t], sp.negatives[t]))
        # a silo holds the users of its training ratings and of its test cases
        # (a held-out rating is still the silo's: the user is one of its entities)
        self.users_of = [np.union1d(self.train[n][0], self.test[n][0]) for n in range(N)]

    def merged(self) -> Silos:
        """The centralized twin (SecEA's "Entire" setting, Sec. 6): one silo
        holding every silo's training pairs, users and items, with the same
        test cases (each still ranked among the negatives drawn from its
        own silo, ``owner`` unchanged), so Entire and the federated settings
        are scored on the same candidates."""
        m = copy.copy(self)
        m.N = 1
        m.items_of = [np.sort(np.concatenate(self.items_of))]
        m.train = [(np.concatenate([t[0] for t in self.train]), np.concatenate([t[1] for t in self.train]))]
        m.test = [(np.concatenate([t[0] for t in self.test]), np.concatenate([t[1] for t in self.test]),
                   np.concatenate([t[2] for t in self.test]))]
        m.users_of = [np.union1d(m.train[0][0], m.test[0][0])]
        return m

    def entities(self, n: int) -> list:
        return [f"u{u}" for u in self.users_of[n]] + [f"i{i}" for i in self.items_of[n]]

    def init(self, d: int, seed: int = 0) -> list:
        """Every silo's entity -> row at round 0; an entity shared by several
        silos starts from the same row (the federation's common init)."""
        rng = np.random.default_rng(seed)
        P = rng.normal(scale=0.1, size=(self.n_users, d))
        Q = rng.normal(scale=0.1, size=(self.n_items, d))
        return [{**{f"u{u}": P[u].copy() for u in self.users_of[n]},
                 **{f"i{i}": Q[i].copy() for i in self.items_of[n]}} for n in range(self.N)]

    def _arrays(self, n, emb):
        us, its = self.users_of[n], self.items_of[n]
        P = np.array([emb[f"u{u}"] for u in us], dtype=np.float64)
        Q = np.array([emb[f"i{i}"] for i in its], dtype=np.float64)
        return us, its, P, Q

    def train_silo(self, n: int, emb: dict[Any, Any], *, epochs: int = 1, lr: float = 0.05, reg: float = 1e-4,
                   n_neg: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
        """Silo n's local training on its ratings: a new entity -> row dict."""
        us, its, P, Q = self._arrays(n, emb)
        tu, ti = self.train[n]
        ru, ri = np.searchsorted(us, tu), np.searchsorted(its, ti)
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            _sgd_epoch(P, Q, ru, ri, np.arange(len(its)), lr=lr, reg=reg, n_neg=n_neg, rng=rng)
        return {**{f"u{u}": P[k] for k, u in enumerate(us)}, **{f"i{i}": Q[k] for k, i in enumerate(its)}}

    def eval_silo(self, n: int, emb: dict) -> tuple:
        """(hits, ndcg sum, cases) of silo n's test cases under its rows."""
        tu, ti, negs = self.test[n]
        if len(tu) == 0:
            return 0.0, 0.0, 0
        pu = np.array([emb[f"u{u}"] for u in tu])
        pos = np.einsum("ij,ij->i", pu, np.array([emb[f"i{i}"] for i in ti]))
        neg = np.full(negs.shape, np.nan)
        for k in range(len(tu)):
            ok = negs[k] >= 0
            neg[k, ok] = np.array([emb[f"i{i}"] for i in negs[k, ok]]) @ pu[k]
        hr, nd = hr_ndcg(pos, neg)
        return hr * len(tu), nd * len(tu), len(tu)

    def evaluate(self, embs: list) -> tuple:
        """(HR@10, NDCG@10) over every silo's test cases."""
        parts = [self.eval_silo(n, embs[n]) for n in range(self.N)]
        cases = sum(p[2] for p in parts) or 1
        return sum(p[0] for p in parts) / cases, sum(p[1] for p in parts) / cases


def run_cross_silo(silos: Silos, *, rounds: int = 10, d: int = 32,
                   aggregate: Callable[[list[dict[Any, Any]]], list[dict[Any, Any]]] | None = None,
                   epochs: int = 1, lr: float = 0.05, reg: float = 1e-4, n_neg: int = 4, seed: int = 0,
                   on_round: Callable[[dict[str, Any]], object] | None = None) -> list[dict[str, Any]]:
    """Federated training over ``silos``: per round, local training then
    ``aggregate(local) -> global`` (default :func:`embavg`), then HR/NDCG.
    Returns one dict per round (round, hr, ndcg, train_s, aggregate_s)."""
    aggregate = baselines.embavg if aggregate is None else aggregate
    embs = silos.init(d, seed)
    out = []
    for rnd in range(1, check_int(rounds, "rounds") + 1):
        t0 = time.perf_counter()
        local = [silos.train_silo(n, embs[n], epochs=epochs, lr=lr, reg=reg, n_neg=n_neg,
                                  seed=seed * 1_000_003 + rnd * 101 + n) for n in range(silos.N)]
        t1 = time.perf_counter()
        embs = aggregate(local)
        t2 = time.perf_counter()
        hr, nd = silos.evaluate(embs)
        row = {"round": rnd, "hr": hr, "ndcg": nd, "train_s": t1 - t0, "aggregate_s": t2 - t1}
        out.append(row)
        if on_round is not None:
            on_round(row)
    return out


# ----------------------------------------------------------------- cross-device
def _quant(x, params):
    return secemb.decode_fixed(secemb.encode_fixed(x, params, bound_fixed=2**62), params)


def device_step(p_u: np.ndarray, rows: np.ndarray, pos_mask: np.ndarray, *, lr: float,
                reg: float) -> tuple[np.ndarray, np.ndarray]:
    """One user's logistic step on its retrieved rows (positives where
    ``pos_mask``, sampled negatives elsewhere; NaN rows were truncated away):
    returns (new p_u, gradient rows to upload, NaN rows as 0)."""
    ok = ~np.isnan(rows).any(axis=1)
    q = np.where(ok[:, None], rows, 0.0)
    g = np.where(ok, _sigmoid(q @ p_u) - pos_mask.astype(np.float64), 0.0)
    gq = g[:, None] * p_u[None, :] + reg * q
    gp = g @ q + reg * p_u
    return p_u - lr * gp, np.where(ok[:, None], gq, 0.0)


def device_request(pos_u: np.ndarray, n_items: int, m_prime: int, n_neg: int, seed: int, rnd: int,
                   u: int) -> tuple[np.ndarray, np.ndarray]:
    """A user's items for one round: up to m' / (1 + n_neg) of its training
    positives and ``n_neg`` unrated items per positive, drawn from a stream
    of its own (seed, round, user), so a user on its own device draws the
    same request as the simulation.  Returns (items, positive mask)."""
    rng = np.random.default_rng([seed, rnd, u])
    k = max(1, min(len(pos_u), m_prime // (1 + n_neg)))
    ps = rng.choice(pos_u, size=k, replace=False) if len(pos_u) else np.zeros(0, np.int64)
    pool = np.setdiff1d(np.arange(n_items), pos_u)
    ns = rng.choice(pool, size=min(len(pool), n_neg * len(ps)), replace=False)
    return np.concatenate([ps, ns]).astype(np.int64), np.r_[np.ones(len(ps)), np.zeros(len(ns))]


def device_init(n_users: int, n_items: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) at round 0: user rows (each kept by its device) and the item table."""
    rng = np.random.default_rng([seed, 7])
    return rng.normal(scale=0.1, size=(n_users, d)), rng.normal(scale=0.1, size=(n_items, d))


def device_eval(P_rows: np.ndarray, Q: np.ndarray, test_users: np.ndarray, test_items: np.ndarray,
                negatives: np.ndarray) -> tuple[float, float, int]:
    """(hits, ndcg sum, cases) of the given test users under the item table Q."""
    if len(test_users) == 0:
        return 0.0, 0.0, 0
    pos = np.einsum("ij,ij->i", P_rows, Q[test_items])
    neg = np.einsum("kd,knd->kn", P_rows, Q[negatives])
    hr, nd = hr_ndcg(pos, neg)
    return hr * len(test_users), nd * len(test_users), len(test_users)


def run_cross_device(r: Ratings, *, rounds: int = 10, d: int = 32, m_prime: int = 64, n_neg: int = 4,
                     lr: float = 0.1, reg: float = 1e-4, frac_bits: int = 20, secure: bool = True, seed: int = 0,
                     on_round: Callable[[dict[str, Any]], object] | None = None) -> list[dict[str, Any]]:
    """FedRec with SecEmb, every user in every round (``secure=True``: each
    retrieval and aggregation through ``secemb.User`` / ``secemb.Server``
    with their byte messages) or its plaintext twin (the same fixed point on
    the retrieved rows and the uploaded gradients), which it equals bit for
    bit: every request fits m' (:func:`device_request`).  The servers step
    Q by the sum of the gradient rows.  Evaluation is leave-one-out over all
    items.  Returns per-round dicts (round, hr, ndcg, seconds, bytes)."""
    sp = leave_one_out(r, 99, seed)
    P, Q = device_init(r.n_users, r.n_items, d, seed)
    pos = [sp.items[sp.users == u] for u in range(r.n_users)]
    params = secemb.SecEmbParams(m=r.n_items, d=d, m_prime=m_prime, frac_bits=frac_bits, n_users=r.n_users)
    out = []
    for rnd in range(1, check_int(rounds, "rounds") + 1):
        t0, nbytes = time.perf_counter(), 0
        reqs = {u: device_request(pos[u], r.n_items, m_prime, n_neg, seed, rnd, u) for u in range(r.n_users)}
        if secure:
            servers, users, rows, nbytes = fedrec.secemb_retrieve(Q, params, {u: reqs[u][0] for u in reqs})
        else:
            rows = {u: _quant(Q[reqs[u][0]], params) for u in reqs}
        grads: dict[Any, ArrayLike] = {}     # as fedrec.secemb_aggregate takes them
        for u in reqs:
            P[u], grads[u] = device_step(P[u], rows[u], reqs[u][1], lr=lr, reg=reg)
        if secure:
            agg, nb = fedrec.secemb_aggregate(servers, users, grads, params)
            nbytes += nb
        else:
            acc = np.zeros((r.n_items, d), dtype=np.uint64)
            for u in reqs:
                np.add.at(acc, reqs[u][0], secemb.encode_fixed(grads[u], params))
            agg = secemb.decode_fixed(acc, params)
        Q -= lr * agg
        secs = time.perf_counter() - t0
        h, n_, c = device_eval(P[sp.test_users], Q, sp.test_users, sp.test_items, sp.negatives)
        row = {"round": rnd, "hr": h / max(c, 1), "ndcg": n_ / max(c, 1), "seconds": secs, "bytes": nbytes}
        out.append(row)
        if on_round is not None:
            on_round(row)
    return out
