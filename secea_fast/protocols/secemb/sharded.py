"""A SecEmb server's retrieval and aggregation sharded over the workers of
an executor (:mod:`secea_fast.executor`: a local process pool or a Ray
cluster), for servers whose users outgrow one host.

Both server computations are per user and combine linearly (SecEmb, Mai et
al. 2025, Sec. 4, Algorithm 3):

* retrieval: each path key's answer is the XOR of the table rows its leaves
  select; a user's answer depends on its keys and the public table only, so
  shards of users are answered independently and the answers concatenated;
* aggregation: the server's share is sum over users of the converted leaf
  values in the ring Z_2^b; each shard of users gives a partial accumulator
  (m x d in Z_2^b) and the server adds the partials in the ring.  Ring
  addition is associative and commutative, so the sum is bit for bit the
  one-process sum whatever the number of shards or the order they finish
  (tested for b = 64 and b = 32).

Users are split into contiguous shards of near-equal size
(:func:`shard_bounds`): ``tuning.SECEMB_SHARDS_PER_WORKER`` per worker (a
slow worker on a shared host then leaves a short tail), more when a shard
would exceed ``tuning.SECEMB_USERS_PER_SHARD`` users.  A shard's work is
that of one user times its users (about 20 ms per user at the MovieLens-1M
shape), far above an executor's per-shard cost.  A worker computes one shard
at a time and holds its path keys (32 + 16 n bytes per key, n = log2 of
the padded catalogue), for the aggregation its correction words (m' d words
of 8 bytes per user) and one accumulator (m d words); the table (m d words,
public) is the state every worker reads once per call.  At the
MovieLens-1M shape that is 221 KB per user, 57 MB for a shard of 250 users,
plus 2 MB of accumulator and 2 MB of table, whatever the number of users (a
Ray actor may have the next ``inflight`` shards' arguments waiting in its
node's object store).  Inside a worker the kernels run on one thread: the
workers are the parallelism.

Trust.  An executor's workers see everything the server sees (its path keys
and upload shares); a cluster is one trust domain.  SecEmb's privacy rests
on the two servers not colluding, so each server needs its own executor,
and on Ray its own cluster (:func:`check_server_executors`); docs/FLOWER.md,
"SecEmb servers on a cluster each", has the multi-host recipe.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ... import dpf
from ..._checks import check_int
from ...executor import Executor, RayExecutor

__all__ = ["shard_bounds", "sharded_xor_rows", "sharded_accumulate", "check_server_executors"]


def shard_bounds(users: int, shards: int, users_per_shard: int | None = None) -> list[tuple[int, int]]:
    """Contiguous [lo, hi) user ranges: ``shards`` of near-equal size (the
    first ``users % shards`` one larger), more if ``users_per_shard`` caps
    them, never an empty one (fewer shards than ``shards`` when there are
    fewer users)."""
    users = check_int(users, "users")
    shards = check_int(shards, "shards")
    if users < 0:
        raise ValueError(f"users must be >= 0, got {users}")
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    if users_per_shard is not None:
        users_per_shard = check_int(users_per_shard, "users_per_shard")
        if users_per_shard < 1:
            raise ValueError(f"users_per_shard must be >= 1, got {users_per_shard}")
        shards = max(shards, math.ceil(users / users_per_shard))
    shards = min(shards, users)
    if shards == 0:
        return []
    q, r = divmod(users, shards)
    out, lo = [], 0
    for s in range(shards):
        hi = lo + q + (s < r)
        out.append((lo, hi))
        lo = hi
    return out


def _split(keys: dpf.PathKeyBatch, per_user: int, executor: Executor, users_per_shard: int | None):
    from ... import tuning
    if not isinstance(keys, dpf.PathKeyBatch):
        raise TypeError(f"keys must be a dpf.PathKeyBatch, got {type(keys).__name__}")
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be a secea_fast.executor.Executor, got {type(executor).__name__}")
    per_user = check_int(per_user, "keys_per_user")
    if per_user < 1 or len(keys) % per_user:
        raise ValueError(f"keys: {len(keys)} keys is not a whole number of users of {per_user} keys each")
    cap = tuning.SECEMB_USERS_PER_SHARD if users_per_shard is None else users_per_shard
    shards = executor.processes * tuning.SECEMB_SHARDS_PER_WORKER
    return [(lo * per_user, hi * per_user) for lo, hi in shard_bounds(len(keys) // per_user, shards, cap)]


def _threads(executor: Executor, threads: int | None) -> int | None:
    # one thread per worker when the executor runs several; inline, the caller's choice
    return 1 if executor.processes > 1 or executor.name != "local" else threads


def _xor_shard(state: Any, job: Any) -> NDArray[np.uint64]:
    table, threads = state
    return dpf.path_xor_rows(dpf.PathKeyBatch.from_bytes(job), table, threads=threads)


def sharded_xor_rows(keys: dpf.PathKeyBatch, table: NDArray[np.uint64], executor: Executor, *,
                     keys_per_user: int, users_per_shard: int | None = None,
                     threads: int | None = None) -> NDArray[np.uint64]:
    """``dpf.path_xor_rows(keys, table)`` (count x d) with the users (each
    ``keys_per_user`` consecutive keys) split into shards over ``executor``'s
    workers; bit for bit the one-process answer."""
    bounds = _split(keys, keys_per_user, executor, users_per_shard)
    if not bounds:
        return np.zeros((0, table.shape[1]), dtype=np.uint64)
    jobs = [keys[lo:hi].to_bytes() for lo, hi in bounds]      # the wire form: it pickles
    parts = executor.map(_xor_shard, jobs, (table, _threads(executor, threads)))
    return np.concatenate(parts)


def _acc_shard(state: Any, job: Any) -> NDArray[Any]:
    m, d, dtype, party, domain, threads = state
    keys, cws = job
    acc = np.zeros((m, d), dtype=dtype)
    return dpf.path_convert_accumulate(acc, dpf.PathKeyBatch.from_bytes(keys), party, cws,
                                       domain=domain, threads=threads)


def sharded_accumulate(acc: NDArray[Any], keys: dpf.PathKeyBatch, party: int, cws: NDArray[np.uint64],
                       executor: Executor, *, keys_per_user: int, domain: int = 0,
                       users_per_shard: int | None = None, threads: int | None = None) -> NDArray[Any]:
    """``dpf.path_convert_accumulate(acc, keys, party, cws)`` with the users
    split into shards over ``executor``'s workers: each worker returns its
    shard's partial accumulator, added here into ``acc`` in the ring of its
    dtype (uint64: Z_2^64, uint32: Z_2^32; NumPy's unsigned addition wraps).
    Bit for bit the one-process result."""
    if not isinstance(acc, np.ndarray) or acc.dtype not in (np.uint64, np.uint32) or acc.ndim != 2:
        raise TypeError("acc must be an (m, d) numpy.ndarray of dtype uint64 or uint32")
    cws = np.asarray(cws)
    if cws.dtype != np.uint64 or cws.shape != (len(keys), acc.shape[1]):
        raise ValueError(f"cws must be uint64 of shape ({len(keys)}, {acc.shape[1]}), got {cws.dtype} {cws.shape}")
    bounds = _split(keys, keys_per_user, executor, users_per_shard)
    jobs = [(keys[lo:hi].to_bytes(), cws[lo:hi]) for lo, hi in bounds]
    state = (acc.shape[0], acc.shape[1], acc.dtype, check_int(party, "party"), domain,
             _threads(executor, threads))

    def add(part: NDArray[Any]) -> None:
        np.add(acc, part, out=acc)
    executor.map(_acc_shard, jobs, state, add)
    return acc


def check_server_executors(executors: Any) -> tuple[Executor | None, Executor | None]:
    """``executors`` as (server 0's, server 1's), each an Executor or None
    (the server computes in its own process).  The two servers must not share
    a trust domain: ValueError if both are the same executor object, or both
    Ray executors in this process (``ray.init`` is per process: they would be
    one Ray instance; run each server in its own process, joined to its own
    cluster)."""
    if not isinstance(executors, (tuple, list)) or len(executors) != 2:
        raise TypeError("executors must be a pair (server 0's executor, server 1's executor)")
    ex0, ex1 = executors
    for b, ex in enumerate((ex0, ex1)):
        if ex is not None and not isinstance(ex, Executor):
            raise TypeError(f"executors[{b}] must be a secea_fast.executor.Executor or None, "
                            f"got {type(ex).__name__}")
    if ex0 is not None and ex0 is ex1:
        raise ValueError("executors: the two servers must not share an executor (one trust domain); "
                         "give each server its own")
    if isinstance(ex0, RayExecutor) and isinstance(ex1, RayExecutor):
        raise ValueError("executors: two Ray executors in one process share one Ray instance (one trust "
                         "domain); run each server in its own process joined to its own cluster, or give "
                         "one server a LocalExecutor")
    return ex0, ex1
