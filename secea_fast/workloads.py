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
A split that leaves a client without entities (too small a data set for
N) is refused with the sizes, never padded with made-up entities.
"""
from __future__ import annotations

import logging
import math
import os
import re
from typing import Any

import numpy as np

from ._checks import check_int
from ._textfile import check_text_path, excerpt, text_lines
from .datasets import read_inter

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
    _refuse_empty(sets, N, f"workload {name!r}")
    return _embed(sets, d, rng)


_FORMATS = {"::": "ratings.dat (user::item::rating::time)", "\t": "u.data (user<TAB>item<TAB>rating<TAB>time)",
            ",": "ratings.csv (user,item,rating,time)"}
_LOG = logging.getLogger(__name__)
_INTER_HEADER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:[a-z_]+\t")      # RecBole's typed header


def _count(v: str, path: str, k: int, name: str) -> int:
    # ids and times: decimal digits only (int() would also take "+5", "1_000", " 5")
    if not (v.isascii() and v.isdigit()):
        raise ValueError(f"{path}:{k}: cannot parse the {name} {excerpt(v, 20)}: expected a non-negative integer")
    x = int(v)
    if x >= 1 << 63:
        raise ValueError(f"{path}:{k}: the {name} {excerpt(v, 20)} is out of range (must be < 2^63)")
    return x


def read_ratings(path: str | os.PathLike[str],
                 max_ratings: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(users, items, times) int64 arrays of a MovieLens ratings file the
    user supplies: ``ratings.dat`` (ML-1M/10M, ``user::item::rating::time``),
    ``u.data`` (ML-100k, tab separated) or ``ratings.csv`` (ML-latest, comma
    separated) or a RecBole ``ml-100k.inter`` (tab separated under a typed
    header: ``secea_fast.datasets.read_inter``); ``path`` may be a directory
    holding exactly one of these (``secea-fast data path ml-100k``).  The
    separator of the first line is the file's.  Every line
    has the four fields: ids and times non-negative integers below 2^63,
    the rating a finite number.  Only ``ratings.csv`` has a header (its
    first line, when that is not a rating): it is skipped, and a warning
    (logger ``secea_fast.workloads``) says so.  Anything else
    raises ValueError naming the file and line (``secea_fast._textfile``:
    regular text files only, lines bounded)."""
    p = check_text_path(path, "ratings file")
    if max_ratings is not None and check_int(max_ratings, "max_ratings") < 1:
        raise ValueError(f"max_ratings must be >= 1, got {max_ratings}")
    if os.path.isdir(p):
        found = sorted(f for f in os.listdir(p) if f in ("ratings.dat", "u.data", "ratings.csv")
                       or f.endswith(".inter"))
        if len(found) != 1:
            raise ValueError(f"{p}: a directory holding {found or 'no ratings file'}; it must hold exactly one "
                             f"of ratings.dat, u.data, ratings.csv or a .inter file")
        p = os.path.join(p, found[0])
    users: list[int] = []
    items: list[int] = []
    times: list[int] = []
    sep = None
    for k, line in text_lines(p, "ratings file"):
        line = line.strip()
        if not line:
            continue
        if sep is None:
            if _INTER_HEADER.match(line):
                u, i, _, t = read_inter(p, max_ratings)
                return u, i, t
            sep = next((x for x in _FORMATS if x in line), None)
            if sep is None:
                raise ValueError(f"{p}:{k}: cannot parse {excerpt(line)}: no '::', tab or ',' separator; "
                                 f"expected one of {', '.join(_FORMATS.values())}")
            parts = line.split(sep)
            if sep == "," and len(parts) == 4 and not (parts[0].strip().isascii() and parts[0].strip().isdigit()):
                _LOG.warning("%s:%d: skipped the header line of ratings.csv: %s", p, k, excerpt(line))
                continue
        parts = [x.strip() for x in line.split(sep)]
        if len(parts) != 4:
            raise ValueError(f"{p}:{k}: cannot parse {excerpt(line)}: {len(parts)} field(s), a "
                             f"{_FORMATS[sep]} line has 4")
        users.append(_count(parts[0], p, k, "user id"))
        items.append(_count(parts[1], p, k, "item id"))
        try:
            r = float(parts[2])
        except ValueError:
            r = float("nan")
        if not math.isfinite(r):
            raise ValueError(f"{p}:{k}: cannot parse the rating {excerpt(parts[2], 20)}: expected a finite number")
        times.append(_count(parts[3], p, k, "time"))
        if max_ratings is not None and len(users) >= max_ratings:
            break
    if not users:
        raise ValueError(f"{p}: no ratings found")
    return (np.array(users, dtype=np.int64), np.array(items, dtype=np.int64),
            np.array(times, dtype=np.int64))


def _refuse_empty(sets: list[list[str]], N: int, what: str) -> None:
    empty = [n for n, x in enumerate(sets) if not x]
    if empty:
        sizes = [len(x) for x in sets]
        raise ValueError(f"{what} is too small for N = {N} clients: {len(empty)} of them (client "
                         f"{', '.join(map(str, empty[:5]))}{', ...' if len(empty) > 5 else ''}) would hold no "
                         f"entity, the others {min(x for x in sizes if x)}-{max(sizes)} entities; use more "
                         f"data or fewer clients")


def load_movielens(path: str | os.PathLike[str], N: int = 5, d: int = 128, seed: int = 0,
                   max_ratings: int | None = None) -> list[dict[Any, np.ndarray]]:
    """``local`` from a MovieLens ratings file the user supplies
    (:func:`read_ratings`); items are partitioned across the N clients as in
    ``workload``."""
    N, d = check_int(N, "N"), check_int(d, "d")
    if N < 2:
        raise ValueError(f"N must be >= 2, got {N}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    users, items, _ = read_ratings(path, max_ratings)
    rng = np.random.default_rng(seed)
    sets = partition_ratings(users, items, N, rng)
    _refuse_empty(sets, N, f"{os.fspath(path)} ({len(np.unique(users))} users, {len(np.unique(items))} items, "
                           f"{len(users)} ratings)")
    return _embed(sets, d, rng)
