"""Worker processes for batch Paillier work (``processes=k`` arguments).

One ``ProcessPoolExecutor`` per interpreter, created on first use with the
'forkserver' start method (or 'spawn' where forkserver does not exist), so a
worker never inherits the parent's memory: no pool of precomputed
obfuscators, no CSPRNG state, no lock is copied.  ``processes=k`` means k
processes work on the batch: the calling process and k - 1 workers.  The
batch is cut into about 8k contiguous chunks; the caller computes the first
and then takes back, from the end, every chunk no worker has started yet
(work stealing); results come back in order and a worker on a busy core
holds back at most the two chunks queued to it.

Worker tasks receive plain ints: the modulus, or the factors p and q for
private-key work (decryption, CRT obfuscators).  Factors are therefore sent
over the executor's local pipe to our own child processes, and a worker keeps
the precomputed context of the last few keys in memory until
``shutdown_workers()`` (or interpreter exit).  Obfuscators made in workers
travel back over the same pipe.  Nothing here unpickles data from anyone but
our own workers.

With the 'spawn'/'forkserver' methods a script that uses ``processes=k`` must
guard its entry point with ``if __name__ == "__main__":``.
"""
from __future__ import annotations

import atexit
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache

import gmpy2
from gmpy2 import mpz

from . import _core, _mb

CHUNKS_PER_PROCESS = 8      # small chunks: a worker on a busy core holds back little work
_lock = threading.Lock()
_executor = None
_workers = 0


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _get_executor(workers: int) -> ProcessPoolExecutor:
    global _executor, _workers
    with _lock:
        if _executor is None or _workers < workers:
            old = _executor
            _executor = ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context())
            _workers = workers
            if old is not None:
                old.shutdown(wait=False)       # lets calls still using it finish
        return _executor


def _discard(ex) -> None:
    global _executor, _workers
    with _lock:
        if _executor is ex:
            _executor, _workers = None, 0
    ex.shutdown(wait=False, cancel_futures=True)


def shutdown_workers() -> None:
    """Stop the worker processes (they are restarted on the next ``processes=k``
    call) and drop the key material they and this process cache."""
    global _executor, _workers
    with _lock:
        ex, _executor, _workers = _executor, None, 0
    if ex is not None:
        ex.shutdown(wait=True, cancel_futures=True)
    clear_caches()


atexit.register(shutdown_workers)


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


def run(fn, prefix: tuple, chunks: list, processes: int) -> list:
    """``fn(*prefix, chunk)`` for every chunk, the first in this process and the
    rest in workers (or here, if no worker has started them); results
    concatenated in order."""
    if len(chunks) <= 1:
        return fn(*prefix, chunks[0]) if chunks else []
    ex = _get_executor(max(1, processes - 1))
    try:
        futures = [ex.submit(fn, *prefix, chunk) for chunk in chunks[1:]]
    except BrokenProcessPool:
        _discard(ex)
        raise
    results = [None] * len(chunks)
    try:
        # let gmpy2 drop the GIL during our share, so the executor's feeder and
        # result threads are not held back by it
        with gmpy2.context(gmpy2.get_context(), allow_release_gil=True):
            results[0] = fn(*prefix, chunks[0])
            # steal from the back: the workers take chunks from the front
            for i in range(len(chunks) - 1, 0, -1):
                if not futures[i - 1].cancel():
                    break
                results[i] = fn(*prefix, chunks[i])
        for i in range(1, len(chunks)):
            if results[i] is None:
                results[i] = futures[i - 1].result()
    except BrokenProcessPool:
        _discard(ex)
        raise
    finally:
        for fut in futures:
            fut.cancel()
    out = []
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


def clear_caches() -> None:
    _public.cache_clear()
    _private.cache_clear()


def task_obfuscators_public(n: int, count: int) -> list:
    nn, n2 = _public(n)
    return [int(x) for x in _core.obfuscators_public(nn, n2, count)]


def task_obfuscators_private(p: int, q: int, count: int) -> list:
    return [int(x) for x in _core.obfuscators_private(_private(p, q), count)]


def task_decrypt(p: int, q: int, cts: list) -> list:
    return [int(m) for m in _core.decrypt_list(_private(p, q), [mpz(c) for c in cts])]


def task_powmod_broadcast(n2: int, k: int, cts: list) -> list:
    return [int(x) for x in _core.powmod_broadcast([mpz(c) for c in cts], k, mpz(n2))]


def task_powmod_pairs(n2: int, pairs: list) -> list:
    return [int(x) for x in _core.powmod_pairs([mpz(c) for c, _ in pairs], [k for _, k in pairs],
                                               mpz(n2))]
