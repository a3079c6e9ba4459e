"""Fixed-base exponentiation for the short-exponent variant: hs^alpha mod n^2
for one public base hs and many secret short exponents alpha, from a table
of the powers hs^(d 2^(W i)) built once per key (csrc/bignum/fb_powm.c:
nwin - 1 Montgomery products per power, no squaring, every table entry of
a window read at every window so that nothing depends on alpha).

Also the exponent length of the variant: twice the modulus's security level
(NIST SP 800-57 Part 1 Rev. 5, Table 2: 2048 bits -> 112, 3072 -> 128,
7680 -> 192, 15360 -> 256).  Generic attacks that recover a b-bit
exponent from hs^alpha (Pollard's kangaroo, baby-step giant-step) take
about 2^(b/2) steps, so 2 lambda bits keep them at the level of the modulus.
"""
from __future__ import annotations

import secrets
from typing import NamedTuple

import gmpy2
import numpy as np
from gmpy2 import mpz

from .._native import ffi, get_backend, lib

MAX_W = 8
_LEVELS = ((15360, 256), (7680, 192), (3072, 128), (2048, 112))
INSECURE_LEVEL = 80            # test keys below 2048 bits


def security_bits(bits: int) -> int:
    """Security level of an RSA-type modulus of ``bits`` bits (NIST SP 800-57
    Part 1, Table 2; the level of the next smaller tabulated size; 80 below
    2048 bits, which only test keys have)."""
    for size, level in _LEVELS:
        if bits >= size:
            return level
    return INSECURE_LEVEL


def default_exponent_bits(bits: int) -> int:
    """2 lambda: 224 for 2048-bit moduli, 256 for 3072-bit ones."""
    return 2 * security_bits(bits)


def limbs64(bits: int) -> int:
    return -(-bits // 64)


def window_for(ebits: int, L: int) -> int:
    """The window W (1..8) with the least work: ceil(ebits / W) windows, each a
    product (about 2 L^2 word products) and a read of the window's 2^W
    entries of L words (cheap word operations, counted at a quarter of a
    word product), with one window's entries at most 40 KB so that they stay
    in the first-level cache while a batch reads them (measured,
    2048-bit n, 224-bit exponents, microseconds per power: W = 4: 699,
    5: 548, 6: 482, 7: 471, 8: 660; 1024-bit: W = 4: 4016, 5: 3710, 6:
    3361, 7: 3549, 8: 3973)."""
    def cost(w):
        return -(-ebits // w) * (8 * L * L + (1 << w) * L)
    ok = [w for w in range(1, MAX_W + 1) if (1 << w) * L * 8 <= 40 << 10]
    return min(ok or [1], key=cost)


class FixedBase(NamedTuple):
    """The table of one base mod one modulus (public values)."""
    W: int
    nwin: int
    ebits: int
    L: int                  # limbs of `radix` bits per number
    table: np.ndarray       # nwin * 2^W * L uint64 limbs, Montgomery form (R = 2^(radix L))
    mod: np.ndarray         # L uint64 limbs
    k0: int                 # -mod^-1 mod 2^radix
    radix: int = 64         # 64: portable kernel; 26: four AVX2 lanes
    L64: int = 0            # 64-bit words of a result


def _limbs(values, L: int) -> np.ndarray:
    return np.frombuffer(b"".join(int(v).to_bytes(8 * L, "little") for v in values), dtype="<u8").copy()


def _limbs26(values, L: int) -> np.ndarray:
    """26-bit limbs (one per uint64), number-major, flattened."""
    nw = -(-26 * L // 64) + 1
    words = _limbs(values, nw).reshape(len(values), nw)
    j = np.arange(L)
    w, s = (26 * j) // 64, ((26 * j) % 64).astype(np.uint64)
    lo = words[:, w] >> s
    hi = np.where(s > 38, words[:, np.minimum(w + 1, nw - 1)] << ((np.uint64(64) - s) % np.uint64(64)),
                  np.uint64(0))
    return np.ascontiguousarray((lo | hi) & np.uint64((1 << 26) - 1)).ravel()


def lanes_available() -> bool:
    """The four-lane AVX2 kernel runs here (else the portable one): the CPU
    has AVX2 and the backend is not ``"portable"`` (``set_backend``)."""
    return bool(lib.secea_fb4_available()) and get_backend() != "portable"


def build(h: mpz, m: mpz, ebits: int, *, portable: bool = False) -> FixedBase:
    """The table of h mod m for exponents below 2^ebits, for the four-lane
    AVX2 kernel where it runs (``portable``: for the portable one)."""
    L64 = limbs64(int(m).bit_length())
    L26 = -(-(int(m).bit_length() + 2) // 26)
    radix = 26 if (not portable and lanes_available() and L26 <= 512) else 64
    L = L26 if radix == 26 else L64
    W = window_for(ebits, L)
    nwin = -(-ebits // W)
    R = mpz(1) << (radix * L)
    rows = []
    base = mpz(h)
    one = R % m
    for _ in range(nwin):
        e = one
        for _ in range(1 << W):
            rows.append(e)
            e = e * base % m
        base = gmpy2.powmod(base, 1 << W, m)
    k0 = (-pow(int(m), -1, 1 << radix)) % (1 << radix)
    pack = _limbs26 if radix == 26 else _limbs
    return FixedBase(W, nwin, ebits, L, pack(rows, L), pack([m], L), k0, radix, L64)


def powers(fb: FixedBase, exps: list) -> list:
    """[h^e mod m] for exponents 0 <= e < 2^fb.ebits (secret: constant time)."""
    count = len(exps)
    if count == 0:
        return []
    ew = max(1, -(-fb.ebits // 64))
    exp = _limbs(exps, ew)
    p = lambda a: ffi.cast("uint64_t *", a.ctypes.data)   # noqa: E731
    if fb.radix == 26:
        L64 = fb.L64
        out = np.empty(count * L64, dtype=np.uint64)
        rc = lib.secea_fb4_powm(p(out), p(fb.table), fb.W, fb.nwin, p(fb.mod), fb.k0, p(exp), ew, count,
                                fb.L, L64)
    else:
        L64 = fb.L
        out = np.empty(count * L64, dtype=np.uint64)
        rc = lib.secea_fb_powm(p(out), p(fb.table), fb.W, fb.nwin, p(fb.mod), fb.k0, p(exp), ew, count, fb.L)
    exp.fill(0)
    if rc == -1:
        raise MemoryError("fixed-base exponentiation kernel: out of memory")
    if rc:
        raise RuntimeError(f"fixed-base exponentiation kernel refused its arguments (code {rc})")
    raw = out.tobytes()
    out.fill(0)
    w = 8 * L64
    return [mpz(int.from_bytes(raw[i * w:(i + 1) * w], "little")) for i in range(count)]


def randomizers(fb: FixedBase, count: int) -> list:
    """``count`` values hs^alpha mod n^2, alpha uniform in [0, 2^ebits) from
    ``secrets``."""
    if count <= 0:
        return []
    rb = secrets.randbits
    return powers(fb, [rb(fb.ebits) for _ in range(count)])


def product_rate(fb: FixedBase, reps: int) -> int:
    """Run ``reps`` chained Montgomery products of ``fb``'s size on its kernel
    (four lanes: ``reps`` products of four numbers each), timed by the
    caller; returns a limb of the result."""
    if fb.radix == 26:
        return int(lib.secea_fb4_mul_bench(fb.L, reps))
    return int(lib.secea_fb_mul_bench(fb.L, reps))



def powmod_lanes(bases: list, e: mpz, m: mpz) -> list:
    """[b^e mod m] for bases 0 <= b < m, one odd modulus and one secret
    exponent e >= 0, four per call on the AVX2 lanes (csrc/bignum/fb_powm.c,
    ``secea_vb4_powm``), constant time in the bases and e.  Callers check
    ``lanes_available()`` first."""
    count = len(bases)
    if count == 0:
        return []
    mbits = int(m).bit_length()
    L = -(-(mbits + 2) // 26)
    L64 = limbs64(mbits)
    ebits = max(1, int(e).bit_length())
    ew = -(-ebits // 64)
    R = mpz(1) << (26 * L)
    k0 = (-pow(int(m), -1, 1 << 26)) % (1 << 26)
    b = _limbs26([int(x) for x in bases], L)
    consts = _limbs26([int(m), int(R * R % m)], L)
    mod, rr = consts[:L].copy(), consts[L:].copy()
    exp = _limbs([int(e)], ew)
    out = np.empty(count * L64, dtype=np.uint64)
    p = lambda a: ffi.cast("uint64_t *", a.ctypes.data)   # noqa: E731
    rc = lib.secea_vb4_powm(p(out), p(b), count, p(mod), p(rr), k0, p(exp), ew, ebits, L, L64)
    for a in (b, mod, rr, exp):                 # secret bases, moduli (p^2) and exponents
        a.fill(0)
    if rc == -1:
        raise MemoryError("four-lane exponentiation kernel: out of memory")
    if rc:
        raise RuntimeError(f"four-lane exponentiation kernel refused its arguments (code {rc})")
    raw = out.tobytes()
    out.fill(0)
    w = 8 * L64
    return [mpz(int.from_bytes(raw[i * w:(i + 1) * w], "little")) for i in range(count)]
