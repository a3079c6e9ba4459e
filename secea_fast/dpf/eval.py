"""DPF evaluation: shares at given points, over the full domain, and the
fused full-domain dot product of SecEmb's retrieval (eq. 3).

Party b's share is Eval(k_b, x) = (-1)^b (Convert(s_x) + t_x CW^{n+1})
(Boyle, Gilboa and Ishai, CCS 2016, Fig. 1); the two shares add up to
f(x) = beta [x = alpha] in the key's group.
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._native import lib, resolve_threads
from ._layout import MAX_FULL_LOG_DOMAIN, as_u64_ints, check_log_domain, check_out, check_status, check_table, ptr, wptr
from .keys import Key, KeyBatch, Keys

__all__ = ["eval_points", "eval_full", "eval_full_batch", "eval_full_dot"]


def key_arrays(keys: Keys, *, allow_early: bool = True) -> tuple:
    """Key / KeyBatch / sequence of Keys -> (Params, bodies (count, size) uint8, parties uint8, single)."""
    ref: Key | KeyBatch
    if isinstance(keys, Key):
        bodies = keys.bodies
        parties = np.array([keys.party], dtype=np.uint8)
        ref, single = keys, True
    elif isinstance(keys, KeyBatch):
        bodies = np.ascontiguousarray(keys.bodies)
        parties = np.full(len(keys), keys.party, dtype=np.uint8)
        ref, single = keys, False
    else:
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise TypeError(f"keys must be a Key, a KeyBatch or a sequence of Keys, got {type(keys).__name__}")
        keys = list(keys)
        if not keys:
            raise ValueError("need at least one key")
        for k in keys:
            if not isinstance(k, Key):
                raise TypeError(f"keys must be Key objects, got {type(k).__name__}")
            if k.params != keys[0].params:
                raise ValueError("all keys must share log_domain, group, d and early flag")
        bodies = np.concatenate([k.bodies for k in keys])
        parties = np.array([k.party for k in keys], dtype=np.uint8)
        ref, single = keys[0], False
    if not allow_early and ref.early:
        raise ValueError("early-termination keys have no depth-n path (use early=False keys)")
    return ref.params, bodies, parties, single


def eval_points(key: Keys, xs: int | ArrayLike, *, threads: int | None = None) -> np.uint64 | NDArray[np.uint64]:
    """Party shares Eval(key, x).  key: a Key (xs any shape) or a KeyBatch /
    sequence of keys (xs of shape (count,) or (count, k): row i for key i).
    Returns uint64 of shape xs.shape (+ (d,) for vector payloads)."""
    ref, bodies, parties, single = key_arrays(key)
    threads = resolve_threads(threads)
    n = ref.log_domain
    scalar_x = isinstance(xs, numbers.Integral) and not isinstance(xs, bool)
    x = as_u64_ints([xs] if scalar_x else xs, "xs", 1 << n)
    if not single:
        if x.ndim == 0 or x.shape[0] != bodies.shape[0]:
            raise ValueError(f"xs must have {bodies.shape[0]} rows (one per key), got shape {x.shape}")
    shape = () if scalar_x else x.shape
    npts = x.size
    per_key = npts if single else (npts // bodies.shape[0] if npts else 1)
    tail = ((ref.d,) if ref.vector else ())
    out = np.empty((npts,) + tail, dtype=np.uint64)
    if npts:
        xf = np.ascontiguousarray(x.reshape(-1))
        kshape = ref.shape(bodies.shape[1])
        st = lib.secea_dpf_eval_points(kshape, wptr(out), ptr(bodies), ptr(parties), ptr(xf, "uint64_t[]"),
                                       npts, max(per_key, 1), threads)
        check_status(st, "eval_points")
    out = out.reshape(shape + tail)
    return out[()] if scalar_x and not tail else out


# Below this many outputs a full-domain evaluation runs on one thread
# (measured, Zen 4: 2^16 outputs 0.057 ms on 1 thread, 0.092 ms on 2; 2^20: 0.82 / 0.61 ms).
FULL_PARALLEL_MIN_OUTPUTS = 1 << 18


def _full(ref, bodies, parties, out, threads, single):
    n = check_log_domain(ref.log_domain, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    threads = resolve_threads(threads)
    count = bodies.shape[0]
    m = 1 << n
    if count * m * max(1, ref.ncw if not ref.early else 1) < FULL_PARALLEL_MIN_OUTPUTS:
        threads = 1          # thread start-up outweighs the work (2^16: 0.057 ms on 1, 0.092 on 2)
    shape = ((m,) if single else (count, m)) + ((ref.d,) if ref.vector else ())
    out = check_out(out, shape)
    kshape = ref.shape(bodies.shape[1])
    st = lib.secea_dpf_eval_full(kshape, wptr(out), ptr(bodies), ptr(parties), count, m, threads)
    check_status(st, "eval_full")
    return out


def eval_full(key: Key, *, out: NDArray[np.uint64] | None = None, threads: int | None = None) -> NDArray[np.uint64]:
    """All 2^n shares of one key: shape (2^n,) or (2^n, d).  ``out``: a
    preallocated uint64 array of that shape (no allocation)."""
    if not isinstance(key, Key):
        raise TypeError(f"key must be a Key (use eval_full_batch for batches), got {type(key).__name__}")
    ref, bodies, parties, _ = key_arrays(key)
    return _full(ref, bodies, parties, out, threads, True)


def eval_full_batch(keys: Keys, *, out: NDArray[np.uint64] | None = None, threads: int | None = None) -> NDArray[np.uint64]:
    """Full-domain shares of many keys: shape (count, 2^n[, d])."""
    ref, bodies, parties, _ = key_arrays(keys)
    return _full(ref, bodies, parties, out, threads, False)



def eval_full_dot(keys: Keys, table: NDArray[np.uint64], *, threads: int | None = None) -> NDArray[np.uint64]:
    """Over Z_2^64: sum_j Eval(key, j) * table[j, :] for each key, without
    materialising the 2^n shares (SecEmb retrieval, eq. 3).  Scalar u64 keys
    (default or early); table (m, d) uint64 with m <= 2^n.  Returns (d,) for
    one Key, (count, d) otherwise."""
    ref, bodies, parties, single = key_arrays(keys)
    if ref.g.gid != 0 or ref.vector:
        raise ValueError("eval_full_dot needs scalar keys over group 'u64'")
    check_log_domain(ref.log_domain, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    table, m, d = check_table(table, ref.log_domain)
    threads = resolve_threads(threads)
    count = bodies.shape[0]
    out = np.zeros((count, d), dtype=np.uint64)
    if d and m:
        kshape = ref.shape(bodies.shape[1])
        st = lib.secea_dpf_eval_full_dot(kshape, wptr(out), ptr(bodies), ptr(parties), count,
                                         ptr(table, "uint64_t[]"), m, d, threads)
        check_status(st, "eval_full_dot")
    return out[0] if single else out
