"""SecEmb parameters and encodings (Mai et al. 2025, Sec. 4; Appendix C, L.2):
the fixed point over Z_2^64, additive shares, the padding of item sets to
m' and the DP noise scale."""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..._checks import check_int
from ...prg import Prg, aes128_ctr, priority_subset, random_seed




# Conversion domain of the aggregation payloads on the retrieval paths (domain
# 0 is that of ordinary keys; the XOR retrieval converts nothing): package
# docstring, "Why reusing ... is private".
AGGREGATION_DOMAIN = 1
# AggregationUpload layout version: 2 since the aggregation converts in its own
# domain (a version-1 peer would make the sum wrong, so its uploads are refused).
UPLOAD_VERSION = 3      # 3: the ring width b and b-bit packing (Z_2^32 uploads are half the bytes)
# RetrievalRequest layout version: 3 since the request is the path keys of the
# XOR retrieval as one PathKeyBatch.
REQUEST_VERSION = 3


def check_real(x, name, *, positive=False):
    """A finite real number, >= 0 (> 0 if positive); TypeError/ValueError naming it."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {x}")
    return x


def item_ids(items, name="items") -> np.ndarray:
    """A 1-D sequence of integer item ids as int64 (floats are refused, even
    integral ones, so that 1.9 never becomes item 1)."""
    if isinstance(items, (str, bytes)) or not hasattr(items, "__len__"):
        raise TypeError(f"{name} must be a sequence of integer item ids, got {type(items).__name__}")
    a = np.asarray(items)
    if a.size == 0 and a.dtype.kind == "f":
        a = a.astype(np.int64)                       # [] has dtype float64
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer item ids, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of item ids, got shape {a.shape}")
    if a.dtype.kind == "u" and a.size and int(a.max()) >= 1 << 63:
        raise ValueError(f"{name}: item id {int(a.max())} is out of range")
    return a.astype(np.int64)



# ----------------------------------------------------------------- parameters
@dataclass(frozen=True)
class SecEmbParams:
    """Public parameters of a SecEmb deployment.

    m: number of items; d: embedding size; m_prime: unified number of items per
    user (Appendix C, eq. 11); frac_bits: fixed-point fraction bits;
    n_users: the most users aggregated in one round (n_p of Appendix L.2);
    dense_size: length of the dense update (0 if none); agg_bits: the ring
    Z_2^b of the aggregation (gradients, dense shares, sums): 64 (default)
    or 32, the paper's precision b = 32 (Appendix K.5), which halves the
    upload and the servers' conversion work.  Retrieval is over Z_2^64 either
    way."""

    m: int
    d: int
    m_prime: int
    frac_bits: int = 16
    n_users: int = 1024
    dense_size: int = 0
    agg_bits: int = 64

    def __post_init__(self):
        for name in ("m", "d", "m_prime", "frac_bits", "n_users", "dense_size", "agg_bits"):
            check_int(getattr(self, name), name)
        if self.agg_bits not in (32, 64):
            raise ValueError(f"agg_bits must be 32 or 64, got {self.agg_bits}")
        if self.m < 1 or self.d < 1 or self.n_users < 1 or self.dense_size < 0:
            raise ValueError("m, d and n_users must be >= 1 and dense_size >= 0")
        if not 1 <= self.m_prime <= self.m:
            raise ValueError(f"m_prime must be in [1, m = {self.m}], got {self.m_prime}")
        if not 0 <= self.frac_bits <= 40:
            raise ValueError(f"frac_bits must be in [0, 40], got {self.frac_bits}")
        if self.user_bound_fixed < 1:
            raise ValueError(f"n_users is too large for {self.agg_bits}-bit fixed point")

    @property
    def log_domain(self) -> int:
        return max(1, (self.m - 1).bit_length())

    @property
    def scale(self) -> int:
        return 1 << self.frac_bits

    @property
    def agg_group(self) -> str:
        """The DPF group of the aggregation payloads: 'u64' or 'u32'."""
        return "u64" if self.agg_bits == 64 else "u32"

    @property
    def agg_mask(self) -> np.uint64:
        return np.uint64((1 << self.agg_bits) - 1)

    @property
    def user_bound_fixed(self) -> int:
        """R_u in fixed-point units: n_p R_u <= 2^(b-1) - 1 (b = agg_bits), so no sum wraps."""
        return (2**(self.agg_bits - 1) - 1) // self.n_users

    @property
    def user_bound(self) -> float:
        """Largest |value| a user may upload (R_u of Appendix L.2)."""
        return self.user_bound_fixed / self.scale


def encode_fixed(x: ArrayLike, params: SecEmbParams, bound_fixed: float | None = None) -> NDArray[np.uint64]:
    """round(x 2^f) as uint64 two's complement; refuses NaN/inf and |.| > bound."""
    x = np.asarray(x, dtype=np.float64)
    q = x * float(params.scale)                 # exact: a power of two (one pass, one new array)
    np.rint(q, out=q)
    lim = params.user_bound_fixed if bound_fixed is None else bound_fixed
    if q.size:
        # NaN propagates through min/max and fails both comparisons, inf fails one:
        # one pass each for min and max instead of isfinite, abs and max
        lo, hi = q.min(), q.max()
        if not (lo >= -lim and hi <= lim):
            if not np.isfinite(x).all():
                raise ValueError("values contain NaN or infinity")
            raise ValueError(f"a value exceeds the per-user range {lim / params.scale:.6g} "
                             f"(R_u of Appendix L.2 for n_users = {params.n_users})")
    return q.astype(np.int64).view(np.uint64)


def decode_fixed(u: ArrayLike, params: SecEmbParams) -> NDArray[np.float64]:
    """The floats of Z_2^64 fixed-point values (two's complement, f fractional bits)."""
    return np.asarray(u, dtype=np.uint64).view(np.int64) / params.scale


def encode_agg(x, params: SecEmbParams) -> np.ndarray:
    """Fixed point in the aggregation ring Z_2^b: ``encode_fixed`` reduced
    mod 2^b, as uint64 values < 2^b."""
    u = encode_fixed(x, params)
    if params.agg_bits < 64:
        u &= params.agg_mask                    # in place: encode_fixed's array is our own
    return u


def decode_agg(u, params: SecEmbParams) -> np.ndarray:
    """Values of Z_2^b (any uint64 representatives) as signed fixed point."""
    u = np.asarray(u, dtype=np.uint64)
    if params.agg_bits == 32:
        return (u & params.agg_mask).astype(np.uint32).view(np.int32) / params.scale
    return u.view(np.int64) / params.scale


def encode_table(Q: ArrayLike, params: SecEmbParams) -> NDArray[np.uint64]:
    """The public item table as Z_2^64 fixed point (|Q| < 2^63 / 2^f)."""
    Q = np.asarray(Q, dtype=np.float64)
    if Q.shape != (params.m, params.d):
        raise ValueError(f"Q must have shape ({params.m}, {params.d}), got {Q.shape}")
    return encode_fixed(Q, params, bound_fixed=2**62)


def gaussian_sigma(epsilon: float, delta: float, clip: float) -> float:
    """sigma = sqrt(ln(1.25/delta)) Delta_2 / epsilon (Appendix G, eq. 14).
    (The Gaussian mechanism's constant is sqrt(2 ln(1.25/delta)); the paper's
    eq. 14 omits the 2.  Each server adds its own noise, so the released sum
    carries two independent draws; callers wanting the textbook guarantee can
    pass sqrt(2) * this value.)"""
    if not (epsilon > 0 and 0 < delta < 1 and clip > 0):
        raise ValueError("need epsilon > 0, 0 < delta < 1, clip > 0")
    return math.sqrt(math.log(1.25 / delta)) * clip / epsilon


def additive_shares(x: NDArray[np.uint64], domain: bytes, bits: int = 64) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Two-server additive shares over Z_2^bits (64 or 32) of a uint64 array:
    (x - r, r) mod 2^bits with r uniform from a fresh CSPRNG seed."""
    x = np.asarray(x, dtype=np.uint64)
    r = Prg(random_seed(), domain).uint64(x.size).reshape(x.shape)
    if bits == 64:
        return x - r, r
    mask = np.uint64((1 << bits) - 1)
    r &= mask
    return (x - r) & mask, r


def count_shares(count: int) -> tuple[int, int]:
    """A user's two additive shares (over Z_2^64) of its number of rated items,
    for the secure average of Appendix C."""
    c = check_int(count, "count")
    if c < 0:
        raise ValueError(f"count must be >= 0, got {c}")
    s0, s1 = additive_shares(np.array([c], dtype=np.uint64), b"secemb/count-share")
    return int(s0[0]), int(s1[0])


def unified_m_prime(shares0: Iterable[int], shares1: Iterable[int], n_users: int, alpha: float, m: int) -> int:
    """Eq. 11: m' = alpha * (1/n) sum_u m'_u, from the two servers' sums of the
    users' count shares (neither server sees an individual count); clipped to
    [1, m]."""
    n = check_int(n_users, "n_users")
    if n < 1 or not alpha > 0:
        raise ValueError("need n_users >= 1 and alpha > 0")
    total = (sum(int(x) for x in shares0) + sum(int(x) for x in shares1)) % 2**64
    return int(min(m, max(1, round(alpha * total / n))))


def pad_or_trunc_idx(items: NDArray[np.int64], m: int, m_prime: int, *,
                     impl: Literal["c", "numpy"] = "c") -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Algorithm 1 (PadOrTrunc): returns (indices of length m', positions
    of the kept real items in ``items`` (-1 for padding)).  Sampling uses
    ``secrets``: m + m' words of AES-128-CTR under a fresh 16-byte key.

    Constant work: the same operations on arrays of the same sizes whatever
    |items| (work that depended on the count made the user's retrieve time
    tell |I_u| < m' from |I_u| = m'; figures in docs/PERFORMANCE.md).
    Every one of the m items gets a fresh secret 63-bit key, rated items in
    the lower half of the key range and unrated ones in the upper half; the
    m' smallest keys are then a uniform m'-subset of the rated items if
    there are at least m' of them, else all rated items and a uniform subset
    of the unrated ones, as Algorithm 1 asks; a secret permutation hides
    which slots are padding (``prg.priority_subset``, whose C kernel does
    O(m) work whatever |items|, apart from sorting the few keys that share
    the top bits of the m'-th smallest; ``impl="numpy"``: its twin, the
    same output for the same words).  The range and duplicate checks are
    O(|items|)."""
    items = item_ids(items)
    if m > 1 << 31:
        raise ValueError(f"m = {m}: PadOrTrunc draws one key per item and supports m <= 2^31")
    # m item keys, m' slot keys: AES-128-CTR under a fresh key used for this draw only
    words = np.frombuffer(aes128_ctr(random_seed(16), bytes(16), 8 * (m + m_prime)), dtype="<u8")
    return priority_subset(items, m, m_prime, words, impl=impl)
