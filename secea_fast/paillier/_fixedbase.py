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

from .._native import ffi, lib

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
    L: int
    table: np.ndarray       # nwin * 2^W * L uint64 limbs, Montgomery form
    mod: np.ndarray         # L uint64 limbs
    k0: int                 # -mod^-1 mod 2^64


def _limbs(values, L: int) -> np.ndarray:
    return np.frombuffer(b"".join(int(v).to_bytes(8 * L, "little") for v in values), dtype="<u8").copy()


def build(h: mpz, m: mpz, ebits: int) -> FixedBase:
    """The table of h mod m for exponents below 2^ebits."""
    L = limbs64(int(m).bit_length())
    W = window_for(ebits, L)
    nwin = -(-ebits // W)
    R = mpz(1) << (64 * L)
    rows = []
    base = mpz(h)
    one = R % m
    for _ in range(nwin):
        e = one
        for _ in range(1 << W):
            rows.append(e)
            e = e * base % m
        base = gmpy2.powmod(base, 1 << W, m)
    k0 = (-pow(int(m), -1, 1 << 64)) % (1 << 64)
    return FixedBase(W, nwin, ebits, L, _limbs(rows, L), _limbs([m], L), k0)


def powers(fb: FixedBase, exps: list) -> list:
    """[h^e mod m] for exponents 0 <= e < 2^fb.ebits (secret: constant time)."""
    count = len(exps)
    if count == 0:
        return []
    ew = max(1, -(-fb.ebits // 64))
    exp = _limbs(exps, ew)
    out = np.empty(count * fb.L, dtype=np.uint64)
    p = lambda a: ffi.cast("uint64_t *", a.ctypes.data)   # noqa: E731
    rc = lib.secea_fb_powm(p(out), p(fb.table), fb.W, fb.nwin, p(fb.mod), fb.k0, p(exp), ew, count, fb.L)
    exp.fill(0)
    if rc == -1:
        raise MemoryError("fixed-base exponentiation kernel: out of memory")
    if rc:
        raise RuntimeError(f"fixed-base exponentiation kernel refused its arguments (code {rc})")
    raw = out.tobytes()
    out.fill(0)
    w = 8 * fb.L
    return [mpz(int.from_bytes(raw[i * w:(i + 1) * w], "little")) for i in range(count)]


def randomizers(fb: FixedBase, count: int) -> list:
    """``count`` values hs^alpha mod n^2, alpha uniform in [0, 2^ebits) from
    ``secrets``."""
    if count <= 0:
        return []
    rb = secrets.randbits
    return powers(fb, [rb(fb.ebits) for _ in range(count)])


def product_rate(L: int, reps: int) -> int:
    """Run ``reps`` chained Montgomery products of L limbs in C (timed by the
    caller); returns a limb of the result."""
    return int(lib.secea_fb_mul_bench(L, reps))
