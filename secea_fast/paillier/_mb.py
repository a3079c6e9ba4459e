"""Batched modular exponentiation with secret exponents, eight at a time on
AVX-512 IFMA lanes (csrc/bignum/mb8_powm.c), or four on ymm registers when
three or four are left, or one or two (one decryption is two) with each
number spread across the lanes of zmm registers (csrc/bignum/hz_powm.c),
with ``gmpy2.powmod_sec`` as the fallback and the reference twin.

``powmod_sec_batch(bases, exps, mods)`` returns [b^e mod m]: constant time in
the values (fixed windows, every table entry read with lane masks, almost
Montgomery products without data-dependent subtractions); the exponents'
common bit length and the moduli's limb count are public, as they are for
GMP's ``mpz_powm_sec``.  Python's conversions of the results to and from
limbs are not constant time; neither are gmpy2's, which the fallback uses.
"""
from __future__ import annotations

import gmpy2
import numpy as np
from gmpy2 import mpz

from .._native import check_status, ffi, lib

LANES = 8          # zmm kernel; a chunk of at most HALF_LANES runs on the ymm one
HALF_LANES = 4
HZ_MAX = 2         # chunks of at most this many run with each number across the lanes
_M52 = (1 << 52) - 1


def available() -> bool:
    return bool(lib.secea_mb8_available())


def limbs_for(bits: int) -> int:
    """Limbs of 52 bits with 4 m < 2^(52 L) for an m of ``bits`` bits."""
    return -(-(bits + 2) // 52)


def _to_limbs(values, L):
    """(L, len(values)) uint64 array of 52-bit limbs (limb-major)."""
    nbytes = (52 * L + 63) // 64 * 8 + 8
    raw = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    words = np.frombuffer(raw, dtype="<u8").reshape(len(values), nbytes // 8)
    j = np.arange(L)
    w, s = (52 * j) // 64, ((52 * j) % 64).astype(np.uint64)
    lo = words[:, w] >> s
    hi = np.where(s > 0, words[:, w + 1] << ((np.uint64(64) - s) % np.uint64(64)), np.uint64(0))
    return np.ascontiguousarray(((lo | hi) & np.uint64(_M52)).T)


def _from_limbs(arr):
    """Integers from an (L, lanes) limb array: two 52-bit limbs are exactly
    13 bytes, so the lanes' byte strings are assembled with array operations."""
    L, lanes = arr.shape
    if L % 2:
        arr = np.concatenate([arr, np.zeros((1, lanes), dtype=np.uint64)])
    l0, l1 = arr[0::2].T, arr[1::2].T                       # (lanes, pairs)
    lo = np.ascontiguousarray(l0 | (l1 << np.uint64(52)), dtype="<u8")
    hi = np.ascontiguousarray(l1 >> np.uint64(12), dtype="<u8")
    buf = np.empty(lo.shape + (13,), dtype=np.uint8)
    buf[..., :8] = lo.view(np.uint8).reshape(lo.shape + (8,))
    buf[..., 8:] = hi.view(np.uint8).reshape(hi.shape + (8,))[..., :5]
    return [mpz(int.from_bytes(buf[i].tobytes(), "little")) for i in range(lanes)]


def _modulus(m: int, L: int):
    """Per-modulus constants: limbs, rr = 2^(104 L) mod m (one division),
    k0 = -m^-1 mod 2^52.  Not cached across calls: moduli such as p^2 are
    secret and should not outlive the key in a module-level cache."""
    rr = (1 << (104 * L)) % m
    m52 = m & _M52
    inv = m52                                    # Newton: m^-1 mod 2^52 (m odd), 3 -> 96 bits
    for _ in range(6):
        inv = inv * (2 - m52 * inv) & _M52
    k0 = (-inv) & _M52
    limbs = _to_limbs([m, rr], L)
    return limbs[:, 0], limbs[:, 1], k0


def _run(bases, exps, mods, L, ebits, consts, across: bool):
    """One C call.  ``across``: each number across the zmm lanes
    (csrc/bignum/hz_powm.c; one or two numbers, number-major arrays), else
    one number per lane (mb8_powm.c; 4 or 8 lanes, limb-major arrays, padded
    with copies of lane 0)."""
    n = len(bases)
    width = n if across else HALF_LANES if n <= HALF_LANES else LANES
    idx = list(range(n)) + [0] * (width - n)
    cs = [consts[int(mods[i])] for i in idx]
    base = _to_limbs([bases[i] for i in idx], L)                  # (L, width)
    mod = np.stack([c[0] for c in cs], axis=1)
    rr = np.stack([c[1] for c in cs], axis=1)
    k0 = np.array([c[2] for c in cs], dtype=np.uint64)
    ewords = max(1, -(-ebits // 64))
    raw = b"".join(int(exps[i]).to_bytes(8 * ewords, "little") for i in idx)
    exp = np.frombuffer(raw, dtype="<u8").reshape(width, ewords)   # number-major
    if across:
        base, mod, rr = (np.ascontiguousarray(a.T) for a in (base, mod, rr))
        exp = exp.copy()
    else:
        mod, rr = np.ascontiguousarray(mod), np.ascontiguousarray(rr)
        exp = exp.T.copy()                                         # word-major, writable
    out = np.empty((width, L) if across else (L, width), dtype=np.uint64)
    p = lambda a: ffi.cast("uint64_t *", a.ctypes.data)   # noqa: E731
    if across and n == 1:
        rc = lib.secea_hz_powm(p(out), p(base), p(rr), p(mod), int(k0[0]), p(exp), ewords, ebits, L)
    else:
        powm = lib.secea_hz2_powm if across else lib.secea_mb8_powm if width == LANES else lib.secea_mb4_powm
        rc = powm(p(out), p(base), p(rr), p(mod), p(k0), p(exp), ewords, ebits, L)
    for a in (exp, mod, rr, base):                      # secret exponents, moduli and bases
        a.fill(0)
    if rc:
        out.fill(0)
    check_status(rc, "modular exponentiation kernel", "unavailable on this CPU, or limbs out of range")
    res = _from_limbs(np.ascontiguousarray(out.T) if across else out)[:n]
    out.fill(0)
    return res


def _run_chunk(bases, exps, mods, L, ebits, consts):
    """Up to eight exponentiations, one per lane."""
    return _run(bases, exps, mods, L, ebits, consts, across=False)


def _run_hz(bases, exps, mods, L, ebits, consts):
    """One or two exponentiations with each number across the zmm lanes: the
    chunk sizes where most lanes of the lane-parallel kernel would be empty."""
    return _run(bases, exps, mods, L, ebits, consts, across=True)


def powmod_sec_batch(bases, exps, mods, *, cache: dict | None = None) -> list:
    """[bases[i]^exps[i] mod mods[i]] for odd moduli, 0 <= bases[i] < mods[i],
    exps[i] >= 0; eight lanes per C call where IFMA is available,
    ``gmpy2.powmod_sec`` otherwise (and for moduli too large for the kernel).

    ``cache``: a dict owned by the caller that keeps the moduli's Montgomery
    constants between calls (a private key keeps those of p^2 and q^2 for
    its lifetime, as it keeps p and q); without it they are computed for the
    call and wiped after it."""
    n = len(bases)
    if n == 0:
        return []
    if any(e < 0 for e in exps):
        raise ValueError("exponents must be >= 0")
    bits = max(int(m).bit_length() for m in mods)
    L = limbs_for(bits)
    if not available() or L > 128 or any(not m & 1 for m in mods):
        # powmod_sec needs e > 0 and m odd (even moduli: no constant-time path)
        return [gmpy2.powmod_sec(mpz(b), mpz(e), mpz(m)) if e and m & 1 else gmpy2.powmod(b, e, m)
                for b, e, m in zip(bases, exps, mods)]
    bases = [b if 0 <= b < m else b % m for b, m in zip(bases, mods)]
    consts = {}
    for m in mods:
        m = int(m)
        if m not in consts:
            held = cache.get((m, L)) if cache is not None else None
            consts[m] = held if held is not None else _modulus(m, L)
            if cache is not None:
                cache[(m, L)] = consts[m]
    # chunks of similar exponent length: a call costs its longest exponent in
    # every lane (one 4096-bit exponent among short ones would slow them all)
    lengths = [int(e).bit_length() for e in exps]
    order = sorted(range(n), key=lengths.__getitem__)
    out = [None] * n
    for s in range(0, n, LANES):
        idx = order[s:s + LANES]
        ebits = max(lengths[i] for i in idx)
        run = _run_hz if len(idx) <= HZ_MAX else _run_chunk
        res = run([bases[i] for i in idx], [exps[i] for i in idx], [mods[i] for i in idx], L, ebits, consts)
        for i, r in zip(idx, res):
            out[i] = r
    if cache is None:
        for c in consts.values():
            c[0].fill(0)
            c[1].fill(0)
    consts.clear()
    return out
