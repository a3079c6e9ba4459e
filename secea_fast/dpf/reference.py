"""Pure-Python twin of the DPF kernels (csrc/dpf/): slow, written for
reading and for bit-for-bit tests against the C code.

AES comes from ``cryptography`` (OpenSSL); everything else is plain integer
arithmetic on 128-bit blocks read as little-endian integers.  Function
arguments mirror the raw C API: ``levels`` is the tree depth (log_domain - e),
``gid`` the group id (0 = Z_2^64, 1 = Z_2^32, 2 = F_p), ``p`` the prime for
F_p, ``ncw`` the number of group elements per leaf (d, or 2^e for early keys).
Bodies use the key body layout of csrc/include/secea.h.
"""
from __future__ import annotations

import hashlib

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["FIXED_KEY_LABELS", "FIXED_KEYS", "sigma", "H", "G", "convert", "gen", "path_eval",
           "eval_point", "convert_gen", "convert_eval"]

M64 = (1 << 64) - 1
FIXED_KEY_LABELS = (b"secea_fast.dpf.v1/prg-left", b"secea_fast.dpf.v1/prg-right",
                    b"secea_fast.dpf.v1/convert")
# SHA-256(label)[:16]: public, nothing up the sleeve (the C file hard-codes them)
FIXED_KEYS = tuple(hashlib.sha256(lbl).digest()[:16] for lbl in FIXED_KEY_LABELS)
_ECB = [Cipher(algorithms.AES(k), modes.ECB()) for k in FIXED_KEYS]


def _modulus(gid: int, p: int) -> int:
    return (1 << 64) if gid == 0 else (1 << 32) if gid == 1 else p


def sigma(x: int) -> int:
    """sigma(lo, hi) = (hi, hi ^ lo): the orthomorphism of Guo et al."""
    lo, hi = x & M64, x >> 64
    return hi | ((hi ^ lo) << 64)


def H(which: int, x: int) -> int:
    """Fixed-key hash H_k(x) = AES_k(sigma(x)) ^ sigma(x), k = FIXED_KEYS[which]."""
    s = sigma(x)
    enc = _ECB[which].encryptor()
    c = enc.update(s.to_bytes(16, "little")) + enc.finalize()
    return int.from_bytes(c, "little") ^ s


def G(seed: int) -> tuple[int, int]:
    """Length-doubling PRG: (s^L | t^L, s^R | t^R) as two blocks (t in bit 0)."""
    seed &= ~1
    return H(0, seed), H(1, seed)


def _per_block(gid: int) -> int:
    return 2 if gid == 0 else 4 if gid == 1 else 1


def convert(state: int, gid: int, p: int, ncw: int, domain: int = 0) -> list:
    """Convert_D(s): ncw group elements from the blocks H_V(s ^ (j + D 2^64)),
    D = ``domain`` (0 for keys; a second payload on one path uses another)."""
    s = (state & ~1) ^ (domain << 64)
    per = _per_block(gid)
    nb = (ncw + per - 1) // per
    stream = [H(2, s ^ j) for j in range(nb)]
    if gid == 2:
        return [stream[k] % p for k in range(ncw)]
    width = 64 if gid == 0 else 32
    mask = (1 << width) - 1
    return [(stream[k // per] >> (width * (k % per))) & mask for k in range(ncw)]


def _elem_bytes(gid: int) -> int:
    return 4 if gid == 1 else 8


def convert_gen(x0: int, x1: int, beta: list, gid: int, p: int, domain: int = 0) -> list:
    """Algorithm 5: CW = (-1)^{t_1} (beta - Convert_D(s_0) + Convert_D(s_1))."""
    M = _modulus(gid, p)
    c0 = convert(x0, gid, p, len(beta), domain)
    c1 = convert(x1, gid, p, len(beta), domain)
    cw = [(b - u + v) % M for b, u, v in zip(beta, c0, c1)]
    if x1 & 1:
        cw = [(-c) % M for c in cw]
    return cw


def convert_eval(party: int, state: int, cw: list, gid: int, p: int, domain: int = 0) -> list:
    """Algorithm 4: (-1)^b (Convert_D(s) + t * CW)."""
    M = _modulus(gid, p)
    t = state & 1
    vals = [(c + t * w) % M for c, w in zip(convert(state, gid, p, len(cw), domain), cw)]
    return [(-v) % M for v in vals] if party else vals


def gen(alpha: int, beta: list, levels: int, gid: int, p: int,
        rand: bytes) -> tuple[bytes, bytes, tuple[int, int]]:
    """Algorithms 7 + 5 with the C kernel's packing.  alpha is the path index
    (< 2^levels), beta the list of ncw elements (empty: path bodies only),
    rand 32 bytes.  Returns (body0, body1, (x0, x1)) with x_b the final states."""
    x0 = int.from_bytes(rand[:16], "little")
    x1 = int.from_bytes(rand[16:32], "little")
    x1 = (x1 & ~1) | ((x0 & 1) ^ 1)          # t_1^(0) = 1 - t_0^(0)
    roots = (x0, x1)
    scws, tl, tr = [], 0, 0
    for i in range(levels):
        a = (alpha >> (levels - 1 - i)) & 1   # most significant bit first
        L0, R0 = G(x0)
        L1, R1 = G(x1)
        lose0, lose1 = (L0, L1) if a else (R0, R1)
        keep0, keep1 = (R0, R1) if a else (L0, L1)
        scw = (lose0 ^ lose1) & ~1
        tlc = (L0 ^ L1 ^ a ^ 1) & 1
        trc = (R0 ^ R1 ^ a) & 1
        ckeep = scw | (trc if a else tlc)
        x0 = keep0 ^ (ckeep if x0 & 1 else 0)
        x1 = keep1 ^ (ckeep if x1 & 1 else 0)
        scws.append(scw)
        tl |= tlc << i
        tr |= trc << i
    common = b"".join(s.to_bytes(16, "little") for s in scws)
    common += tl.to_bytes(8, "little") + tr.to_bytes(8, "little")
    if beta:
        w = _elem_bytes(gid)
        common += b"".join(c.to_bytes(w, "little") for c in convert_gen(x0, x1, list(beta), gid, p))
    return roots[0].to_bytes(16, "little") + common, roots[1].to_bytes(16, "little") + common, (x0, x1)


def path_eval(body: bytes, path_index: int, levels: int) -> int:
    """Algorithm 6 (with the right-branch seed s^R): the final state (seed | t)."""
    st = int.from_bytes(body[:16], "little")
    off = 16 + 16 * levels
    tl = int.from_bytes(body[off:off + 8], "little")
    tr = int.from_bytes(body[off + 8:off + 16], "little")
    for i in range(levels):
        bit = (path_index >> (levels - 1 - i)) & 1
        h = G(st)[bit]
        scw = int.from_bytes(body[16 + 16 * i:32 + 16 * i], "little") & ~1
        cw = scw | (((tr if bit else tl) >> i) & 1)
        st = h ^ (cw if st & 1 else 0)
    return st


def eval_point(body: bytes, party: int, x: int, levels: int, e: int, gid: int, p: int, ncw: int) -> list:
    """Party's share at x: ncw values for default keys, one value for early keys."""
    st = path_eval(body, x >> e, levels)
    off = 32 + 16 * levels
    w = _elem_bytes(gid)
    cw = [int.from_bytes(body[off + w * k:off + w * (k + 1)], "little") for k in range(ncw)]
    vals = convert_eval(party, st, cw, gid, p)
    return [vals[x & ((1 << e) - 1)]] if e else vals
