"""Worker processes for batch Paillier work (``processes=k`` arguments).

Batches run on the package's one process-pool mechanism,
``secea_fast._workers.run_shards``: for each call, k - 1 workers are forked;
they and the calling process take contiguous chunks (about 8k of them) from
a shared counter, so a process on a busy core holds back at most the chunk
it is working on, and results come back in order.  Forked workers import
nothing, so batches work when the main program has no importable file (a
script read from stdin, ``python - < script.py``, notebooks and embedded
interpreters), where the 'spawn'/'forkserver' pool this module used to keep
died with ``BrokenProcessPool``; they need no ``if __name__ ==
"__main__":`` guard either.  A worker that dies costs only its chunk, which
is computed again (see ``secea_fast._workers``); without ``fork`` the whole
batch runs in the calling process.

Workers live for one call: the key material they inherit (the modulus, or
the factors p and q for private-key work) is never sent anywhere and leaves
with them.  They never touch the pool of precomputed obfuscators (tasks make
fresh ones from the OS CSPRNG, which forking does not duplicate); only
results (plain ints) travel back over each worker's own pipe, and nothing
here unpickles data from anyone but our own workers.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from gmpy2 import mpz

from .._workers import run_shards
from . import _core, _fixedbase, _mb

CHUNKS_PER_PROCESS = 8      # small chunks: a process on a busy core holds back little work


def shutdown_workers() -> None:
    """Drop the key contexts this process caches for batch work.  (Workers
    are forked per call and gone when it returns; kept for compatibility:
    it used to stop a persistent pool.)"""
    clear_caches()


def _split_count(count: int, parts: int) -> list:
    """Chunk sizes summing to count, at most ``parts`` of them, each a multiple
    of the exponentiation kernel's lane count (8 with IFMA) except the last:
    a chunk of 4 would pay for 8 lanes."""
    unit = _mb.LANES if _mb.available() else 1
    groups = -(-count // unit)
    parts = max(1, min(parts, groups))
    size, rem = divmod(groups, parts)
    sizes = [(size + (i < rem)) * unit for i in range(parts)]
    sizes[-1] -= sum(sizes) - count
    return [s for s in sizes if s > 0]


def _split(seq, parts: int) -> list:
    out, start = [], 0
    for size in _split_count(len(seq), parts):
        out.append(seq[start:start + size])
        start += size
    return out


def _chunk(state, job):
    fn, prefix = state
    i, chunk = job
    return i, fn(*prefix, chunk)


def run(fn, prefix: tuple, chunks: list, processes: int) -> list:
    """``fn(*prefix, chunk)`` for every chunk, on the calling process and
    ``processes - 1`` forked workers; results concatenated in order."""
    if len(chunks) <= 1:
        return fn(*prefix, chunks[0]) if chunks else []
    results: list[Any] = [None] * len(chunks)

    def put(res):
        results[res[0]] = res[1]
    run_shards(_chunk, list(enumerate(chunks)), (fn, prefix), put, max(0, processes - 1),
               caller_works=True)
    out: list[Any] = []
    for r in results:
        out.extend(r)
    return out


def run_items(fn, prefix: tuple, items: list, processes: int, cheap: bool = False) -> list:
    """``cheap``: items of well under a millisecond each (short-exponent
    powmods), cut into fewer chunks so that per-chunk messaging stays small."""
    per = 2 if cheap else CHUNKS_PER_PROCESS
    return run(fn, prefix, _split(items, per * processes), processes)


def run_count(fn, prefix: tuple, count: int, processes: int) -> list:
    return run(fn, prefix, _split_count(count, CHUNKS_PER_PROCESS * processes), processes)


# --------------------------------------------------------------------------------------
# tasks (plain ints in, plain ints out; also called in the parent for its share)


@lru_cache(maxsize=8)
def _public(n: int):
    n = mpz(n)
    return n, n * n


@lru_cache(maxsize=4)
def _private(p: int, q: int) -> _core.PrivateContext:
    return _core.private_context(p, q)


@lru_cache(maxsize=4)
def _short_table(n: int, hs: int, ebits: int) -> _fixedbase.FixedBase:
    return _fixedbase.build(mpz(hs), mpz(n) * n, ebits)


def clear_caches() -> None:
    _public.cache_clear()
    _private.cache_clear()
    _short_table.cache_clear()


def task_obfuscators_public(n: int, count: int) -> list:
    nn, n2 = _public(n)
    return [int(x) for x in _core.obfuscators_public(nn, n2, count)]


def task_obfuscators_short(n: int, hs: int, ebits: int, count: int) -> list:
    return [int(x) for x in _fixedbase.randomizers(_short_table(n, hs, ebits), count)]


def task_obfuscators_private(p: int, q: int, count: int) -> list:
    return [int(x) for x in _core.obfuscators_private(_private(p, q), count)]


def task_decrypt(p: int, q: int, cts: list) -> list:
    return [int(m) for m in _core.decrypt_list(_private(p, q), [mpz(c) for c in cts])]


def task_powmod_broadcast(n2: int, k: int, cts: list) -> list:
    return [int(x) for x in _core.powmod_broadcast([mpz(c) for c in cts], k, mpz(n2))]


def task_powmod_pairs(n2: int, pairs: list) -> list:
    return [int(x) for x in _core.powmod_pairs([mpz(c) for c, _ in pairs], [k for _, k in pairs],
                                               mpz(n2))]
