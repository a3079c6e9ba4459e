"""Workloads for SecEA runs: generators shaped like the datasets of SecEA (Tang, Zhu, Li, Zhang, Sun 2022)
(Table 2, partitioned as in Appendix B) and a MovieLens ratings loader.

Each generator returns ``local``: a list of N dicts entity id -> float
embedding in [-1, 1)^d, the input of ``secea.aggregate`` and
``secea.run_round``.  The data are simulation data drawn from a seeded
``numpy.random.Generator`` (never used for protocol secrets).

Partitioning (Appendix B):

* ``items`` (recommendation, subgraph level): items are dealt to clients at
  random; a client holds its items and every user who rated one of them.
  Entities are users and items ("u<id>", "i<id>"), so the MovieLens-1M
  shape has M = 6,040 + 3,706 = 9,746 entities.
* ``relations`` (knowledge graphs, subgraph level): relations are dealt to
  clients; a client holds every entity of a triple of its relations.
* ``edges`` (social networks, sample level): edges are dealt to clients; a
  client holds both ends of its edges.
* ``samples`` (multi-view clustering, sample level): each data point goes to
  one client.

Sizes are Table 2's; ratings/triples/edges per entity follow a Zipf-like
popularity so that the overlap between clients resembles the real data.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._checks import check_int

__all__ = ["SHAPES", "workload", "load_movielens", "partition_ratings", "read_ratings"]

# name: (partition, sizes, default d)   (SecEA Table 2; d from Appendix B)
SHAPES = {
    "movielens-1m": ("items", dict(users=6040, items=3706, ratings=1_000_209), 128),
    "movielens-100k": ("items", dict(users=943, items=1682, ratings=100_000), 128),
    "lastfm": ("items", dict(users=1892, items=17632, ratings=92_834), 128),
    "kinship": ("relations", dict(entities=104, relations=25, triples=10_686), 128),
    "wn18": ("relations", dict(entities=40943, relations=18, triples=151_442), 128),
    "fb15k": ("relations", dict(entities=14951, relations=1345, triples=592_213), 128),
    "citeseer": ("edges", dict(nodes=3312, edges=4732), 128),
    "cora": ("edges", dict(nodes=2708, edges=5429), 128),
    "wiki": ("edges", dict(nodes=2405, edges=17981), 128),
    "spect": ("samples", dict(samples=267), 4),
    "soybean": ("samples", dict(samples=307), 4),
    "census-income": ("samples", dict(samples=48842), 4),
    "tiny": ("items", dict(users=60, items=40, ratings=600), 8),
}


def _zipf_weights(n, rng, s=0.8):
    w = 1.0 / np.arange(1, n + 1) ** s
    rng.shuffle(w)
    return w / w.sum()


def _embed(sets, d, rng):
    return [{e: rng.uniform(-1.0, 1.0, d) for e in s} for s in sets]


def partition_ratings(users: np.ndarray, items: np.ndarray, N: int,
                      rng: np.random.Generator) -> list[list[str]]:
    """Deal items to N clients at random (Appendix B, recommendation): client n
    holds its items and the users who rated them.  ``users``/``items``: the
    two columns of the ratings.  Returns N lists of entity ids."""
    uniq_items = np.unique(items)
    owner = dict(zip(uniq_items.tolist(), rng.integers(0, N, len(uniq_items)).tolist()))
    own = np.fromiter((owner[i] for i in items.tolist()), dtype=np.int64, count=len(items))
    sets = []
    for n in range(N):
        mask = own == n
        us = np.unique(users[mask])
        its = np.unique(items[mask])
        sets.append([f"u{u}" for u in us.tolist()] + [f"i{i}" for i in its.tolist()])
    return sets


def workload(name: str = "movielens-1m", N: int = 5, d: int | None = None,
             seed: int = 0) -> list[dict[Any, np.ndarray]]:
    """``local`` for the named shape (``SHAPES``) split over N clients."""
    if name not in SHAPES:
        raise ValueError(f"unknown workload {name!r}; choose one of {sorted(SHAPES)} "
                         "or load a MovieLens file with load_movielens(path)")
    N = check_int(N, "N")
    if N < 2:
        raise ValueError("N must be >= 2")
    kind, sz, d0 = SHAPES[name]
    d = d0 if d is None else check_int(d, "d")
    if d < 1:
        raise ValueError("d must be >= 1")
    rng = np.random.default_rng(seed)
    if kind == "items":
        U, I, R = sz["users"], sz["items"], sz["ratings"]
        # every user rates at least a handful of items (MovieLens keeps users with >= 20)
        per_user = np.maximum(rng.zipf(1.6, U), 1)
        per_user = np.maximum(np.round(per_user / per_user.sum() * R), min(20, R // U)).astype(np.int64)
        users = np.repeat(np.arange(U), per_user)
        items = rng.choice(I, size=len(users), p=_zipf_weights(I, rng))
        sets = partition_ratings(users, items, N, rng)
    elif kind == "relations":
        E, Rn, Tn = sz["entities"], sz["relations"], sz["triples"]
        w = _zipf_weights(E, rng)
        heads, tails = rng.choice(E, Tn, p=w), rng.choice(E, Tn, p=w)
        rel = rng.integers(0, Rn, Tn)
        owner = rng.integers(0, N, Rn)[rel]
        sets = [[f"e{x}" for x in np.unique(np.concatenate([heads[owner == n], tails[owner == n]]))]
                for n in range(N)]
    elif kind == "edges":
        V, Ed = sz["nodes"], sz["edges"]
        w = _zipf_weights(V, rng)
        a, b = rng.choice(V, Ed, p=w), rng.choice(V, Ed, p=w)
        owner = rng.integers(0, N, Ed)
        sets = [[f"v{x}" for x in np.unique(np.concatenate([a[owner == n], b[owner == n]]))]
                for n in range(N)]
    else:
        S = sz["samples"]
        owner = rng.integers(0, N, S)
        sets = [[f"s{x}" for x in np.flatnonzero(owner == n)] for n in range(N)]
    sets = [s if s else [f"pad-{n}"] for n, s in enumerate(sets)]
    return _embed(sets, d, rng)


def read_ratings(path: str | os.PathLike[str],
                 max_ratings: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(users, items, times) int64 arrays of a MovieLens ratings file the
    user supplies: ``ratings.dat`` (ML-1M/10M, ``user::item::rating::time``),
    ``u.data`` (ML-100k, tab separated) or ``ratings.csv`` (ML-latest, with a
    header).  A file without times numbers the ratings in file order.
    Malformed lines raise ValueError naming the file and line."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise ValueError(f"no such ratings file: {path}")
    users: list[int] = []
    items: list[int] = []
    times: list[int] = []
    with open(path, "r", encoding="latin-1") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            if "::" in line:
                parts = line.split("::")
            elif "\t" in line:
                parts = line.split("\t")
            else:
                parts = line.split(",")
            try:
                u, i = int(parts[0]), int(parts[1])
                t = int(float(parts[3])) if len(parts) > 3 else len(users)
            except (ValueError, IndexError):
                if lineno == 1:
                    continue            # csv header
                raise ValueError(f"{path}:{lineno}: cannot parse user, item and time from {line!r}")
            users.append(u)
            items.append(i)
            times.append(t)
            if max_ratings is not None and len(users) >= max_ratings:
                break
    if not users:
        raise ValueError(f"{path}: no ratings found")
    return (np.array(users, dtype=np.int64), np.array(items, dtype=np.int64),
            np.array(times, dtype=np.int64))


def load_movielens(path: str | os.PathLike[str], N: int = 5, d: int = 128, seed: int = 0,
                   max_ratings: int | None = None) -> list[dict[Any, np.ndarray]]:
    """``local`` from a MovieLens ratings file the user supplies
    (:func:`read_ratings`); items are partitioned across the N clients as in
    ``workload``."""
    users, items, _ = read_ratings(path, max_ratings)
    rng = np.random.default_rng(seed)
    sets = partition_ratings(users, items, check_int(N, "N"), rng)
    sets = [s if s else [f"pad-{n}"] for n, s in enumerate(sets)]
    return _embed(sets, check_int(d, "d"), rng)
