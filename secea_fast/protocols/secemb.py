"""SecEmb: two-server private embedding retrieval and sparse secure aggregation
(seed 003, Sec. 4 and Algorithm 3; padding Appendix C; dense updates
Appendix D; DP noise Appendix G; dropout and range limits Appendix L.2).

Parties
-------
* ``User``: pads or truncates its rated items to m' (Algorithm 1), generates
  one DPF path per item (Algorithm 7, ``dpf.path_gen``) and the retrieval keys
  (beta = 1 over Z_2^64), reconstructs its embeddings from the two answers
  (eq. 4); then encodes its gradient rows as vector payloads on the *same*
  paths, sending only CW^{n+1} per row (Sec. 4.3.2, Algorithm 5), and
  additive shares of its dense update (Appendix D).
* ``Server``: answers retrieval with sum_j Eval(reK, j) Q_j (eq. 3, the fused
  ``dpf.eval_full_dot``), and aggregates sum_u sum_i ConvertEval(...) over all
  items j (Algorithm 3) plus the dense shares (eq. 12), optionally adding
  Gaussian noise to its share (Appendix G, eq. 14).  Server 0 reconstructs.

Arithmetic is over Z_2^64 with fixed point: x -> round(x 2^f) as a two's
complement 64-bit word.  ``SecEmbParams`` derives the per-user range
R_u = (R - 1)/n_p of Appendix L.2 (R = 2^63 / 2^f) and users refuse values
outside it, so the sum over n_p users never wraps.

Why reusing the retrieval path for the aggregation is private
-------------------------------------------------------------
The retrieval key and the aggregation upload of a slot share the PathGen
output (s_0^(n), s_1^(n), t_1^(n)) at the slot's item alpha, as Sec. 4.3.2
intends: only CW^{n+1} is uploaded the second time.  Each final correction
word is the payload masked by a conversion of the final seeds,
CW = (-1)^{t_1} (beta - Convert(s_0) + Convert(s_1)), and server b never sees
s_{1-b}^(n) (the path part of its key is one share of a DPF key of Boyle,
Gilboa and Ishai, CCS 2016, which hides alpha and the other share's seeds).
If both correction words used the same conversion output, as Algorithm 5 read
literally does for coordinate 0, server b could subtract them and learn
beta_agg[0] - beta_ret: +-1 on padding slots (so the number of real items,
which PadOrTrunc exists to hide) and the first coordinate of every real
gradient row.  Here the retrieval keys convert in domain 0 (ordinary DPF
keys) and the aggregation in ``AGGREGATION_DOMAIN``: its masks are blocks
H_V(s_{1-b} xor (j + D 2^64)), outputs of the correlation-robust hash on
inputs distinct from the retrieval's H_V(s_{1-b}), so the d + 1 masks of a
slot are independent and uniform to server b, and so is each correction word
whatever the payloads.  ``dpf.convert_gen`` refuses a second payload in one
domain on one path, so the reuse cannot creep back.  tests/test_views_secemb.py
draws each server's whole view for 3 against 8 real items and for two
gradient sets and checks that the views are identically distributed.

Deviations from the paper, each documented where it is implemented:

* Algorithm 5 (ConvertGen) on a reused path: the aggregation converts in its
  own domain (above); one Convert for both payloads would leak them.

* Algorithm 2 (PadOrTruncEmb) samples the kept rows independently of
  Algorithm 1; both must keep the *same* items (the gradient of item i must go
  on item i's path), so the user draws one selection and uses it for both.
* The paper's per-sample clipping reads g max{1, Delta/||g||}; clipping is
  g min{1, Delta/||g||} (Abadi et al. 2016), applied here to each gradient row.
* Servers recompute the leaf states of the retrieval paths in the aggregation
  stage instead of storing them (Algorithm 3 stores m' x m seeds per user:
  18.6 MB per user at the MovieLens-1M shape); the result is identical.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field

import numpy as np

from .. import dpf
from .._checks import check_int
from ..prg import Prg, random_seed
from ._wire import Reader, Writer

__all__ = ["SecEmbParams", "User", "Server", "RetrievalRequest", "RetrievalResponse",
           "AggregationUpload", "AggregateShare", "pad_or_trunc_idx", "simulate_round",
           "reconstruct_aggregate", "gaussian_sigma", "count_shares", "unified_m_prime"]


# Conversion domain of the aggregation payloads on the retrieval paths (the
# retrieval keys use domain 0): module docstring, "Why reusing ... is private".
AGGREGATION_DOMAIN = 1
# AggregationUpload layout version: 2 since the aggregation converts in its own
# domain (a version-1 peer would make the sum wrong, so its uploads are refused).
UPLOAD_VERSION = 2


def _check_real(x, name, *, positive=False):
    """A finite real number, >= 0 (> 0 if positive); TypeError/ValueError naming it."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {x}")
    return x


def _item_ids(items, name="items") -> np.ndarray:
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
    dense_size: length of the dense update (0 if none)."""

    m: int
    d: int
    m_prime: int
    frac_bits: int = 16
    n_users: int = 1024
    dense_size: int = 0

    def __post_init__(self):
        for name in ("m", "d", "m_prime", "frac_bits", "n_users", "dense_size"):
            check_int(getattr(self, name), name)
        if self.m < 1 or self.d < 1 or self.n_users < 1 or self.dense_size < 0:
            raise ValueError("m, d and n_users must be >= 1 and dense_size >= 0")
        if not 1 <= self.m_prime <= self.m:
            raise ValueError(f"m_prime must be in [1, m = {self.m}], got {self.m_prime}")
        if not 0 <= self.frac_bits <= 40:
            raise ValueError(f"frac_bits must be in [0, 40], got {self.frac_bits}")
        if self.user_bound_fixed < 1:
            raise ValueError("n_users is too large for 64-bit fixed point at this frac_bits")

    @property
    def log_domain(self) -> int:
        return max(1, (self.m - 1).bit_length())

    @property
    def scale(self) -> int:
        return 1 << self.frac_bits

    @property
    def user_bound_fixed(self) -> int:
        """R_u in fixed-point units: n_p R_u <= 2^63 - 1, so no sum wraps."""
        return (2**63 - 1) // self.n_users

    @property
    def user_bound(self) -> float:
        """Largest |value| a user may upload (R_u of Appendix L.2)."""
        return self.user_bound_fixed / self.scale


def encode_fixed(x, params: SecEmbParams, bound_fixed=None) -> np.ndarray:
    """round(x 2^f) as uint64 two's complement; refuses NaN/inf and |.| > bound."""
    x = np.asarray(x, dtype=np.float64)
    if not np.isfinite(x).all():
        raise ValueError("values contain NaN or infinity")
    q = np.rint(x * params.scale)
    lim = params.user_bound_fixed if bound_fixed is None else bound_fixed
    if q.size and np.abs(q).max() > lim:
        raise ValueError(f"a value exceeds the per-user range {lim / params.scale:.6g} "
                         f"(R_u of Appendix L.2 for n_users = {params.n_users})")
    return q.astype(np.int64).view(np.uint64)


def decode_fixed(u, params: SecEmbParams) -> np.ndarray:
    return np.asarray(u, dtype=np.uint64).view(np.int64) / params.scale


def encode_table(Q, params: SecEmbParams) -> np.ndarray:
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


def additive_shares(x, domain: bytes):
    """Two-server additive shares over Z_2^64 of a uint64 array: (x - r, r)
    with r uniform from a fresh CSPRNG seed (wraps mod 2^64 as intended)."""
    x = np.asarray(x, dtype=np.uint64)
    r = Prg(random_seed(), domain).uint64(x.size).reshape(x.shape)
    return x - r, r


def count_shares(count: int):
    """A user's two additive shares (over Z_2^64) of its number of rated items,
    for the secure average of Appendix C."""
    c = check_int(count, "count")
    if c < 0:
        raise ValueError(f"count must be >= 0, got {c}")
    s0, s1 = additive_shares(np.array([c], dtype=np.uint64), b"secemb/count-share")
    return int(s0[0]), int(s1[0])


def unified_m_prime(shares0, shares1, n_users: int, alpha: float, m: int) -> int:
    """Eq. 11: m' = alpha * (1/n) sum_u m'_u, from the two servers' sums of the
    users' count shares (neither server sees an individual count); clipped to
    [1, m]."""
    n = check_int(n_users, "n_users")
    if n < 1 or not alpha > 0:
        raise ValueError("need n_users >= 1 and alpha > 0")
    total = (sum(int(x) for x in shares0) + sum(int(x) for x in shares1)) % 2**64
    return int(min(m, max(1, round(alpha * total / n))))


def pad_or_trunc_idx(items, m, m_prime):
    """Algorithm 1: returns (indices of length m', positions of the kept real
    items in ``items`` (-1 for padding)).  Sampling uses ``secrets``."""
    items = _item_ids(items)
    if items.size and (items.min() < 0 or items.max() >= m):
        raise ValueError(f"item ids must be in [0, {m})")
    if len(np.unique(items)) != len(items):
        raise ValueError("items has duplicates")
    n = len(items)
    sysrand = secrets.SystemRandom()
    if n >= m_prime:
        keep = sorted(sysrand.sample(range(n), m_prime)) if n > m_prime else list(range(n))
        return items[keep].copy(), np.array(keep, dtype=np.int64)
    rated = set(int(i) for i in items)
    pool = [j for j in range(m) if j not in rated] if m <= 1 << 22 else None
    pads = []
    if pool is not None:
        pads = sysrand.sample(pool, m_prime - n)
    else:   # huge catalogue: rejection sampling
        while len(pads) < m_prime - n:
            j = secrets.randbelow(m)
            if j not in rated and j not in pads:
                pads.append(j)
    idx = np.concatenate([items, np.array(pads, dtype=np.int64)])
    pos = np.concatenate([np.arange(n), -np.ones(m_prime - n, dtype=np.int64)])
    perm = sysrand.sample(range(m_prime), m_prime)       # hide which slots are padding
    return idx[perm], pos[perm]


# ----------------------------------------------------------------- messages
def _server_id(party: int, what: str) -> int:
    if party not in (0, 1):
        raise ValueError(f"{what}: party must be server 0 or 1, got {party}")
    return party


class _Msg:
    @property
    def nbytes(self) -> int:
        return len(self.to_bytes())


@dataclass
class RetrievalRequest(_Msg):
    """User -> server b: m' retrieval keys (scalar, beta = 1 over Z_2^64)."""
    party: int
    keys: list

    def to_bytes(self) -> bytes:
        w = Writer(b"SERQ").u64(self.party).u64(len(self.keys))
        for k in self.keys:
            w.blob(k.to_bytes())
        return w.bytes()

    @classmethod
    def from_bytes(cls, data) -> "RetrievalRequest":
        r = Reader(data, b"SERQ", "RetrievalRequest")
        party, count = _server_id(r.u64(), "RetrievalRequest"), r.u64()
        if count > 1 << 24:
            raise ValueError(f"RetrievalRequest: {count} keys is implausible")
        keys = [dpf.Key.from_bytes(r.blob(1 << 20)) for _ in range(count)]
        r.done()
        if any(k.party != party for k in keys):
            raise ValueError("RetrievalRequest: a key belongs to the other server")
        return cls(party, keys)


@dataclass
class RetrievalResponse(_Msg):
    """Server b -> user: m' x d shares of the requested rows (eq. 3)."""
    party: int
    shares: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SERS").u64(self.party).array(self.shares).bytes()

    @classmethod
    def from_bytes(cls, data) -> "RetrievalResponse":
        r = Reader(data, b"SERS", "RetrievalResponse")
        party = _server_id(r.u64(), "RetrievalResponse")
        shares = r.array(2)
        r.done()
        return cls(party, shares)


@dataclass
class AggregationUpload(_Msg):
    """User -> server b: CW^{n+1} per slot (m' x d) and a dense share."""
    party: int
    cws: np.ndarray
    dense: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SEUP", UPLOAD_VERSION).u64(self.party).array(self.cws).array(self.dense).bytes()

    @classmethod
    def from_bytes(cls, data) -> "AggregationUpload":
        r = Reader(data, b"SEUP", "AggregationUpload", UPLOAD_VERSION)
        party = _server_id(r.u64(), "AggregationUpload")
        cws, dense = r.array(2), r.array(1)
        r.done()
        return cls(party, cws, dense)


@dataclass
class AggregateShare(_Msg):
    """Server 1 -> server 0: its share of sum_u g_Q (m x d) and of the dense sum."""
    party: int
    sparse: np.ndarray
    dense: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SEAG").u64(self.party).array(self.sparse).array(self.dense).bytes()

    @classmethod
    def from_bytes(cls, data) -> "AggregateShare":
        r = Reader(data, b"SEAG", "AggregateShare")
        party = _server_id(r.u64(), "AggregateShare")
        sparse, dense = r.array(2), r.array(1)
        r.done()
        return cls(party, sparse, dense)


# ----------------------------------------------------------------- parties
class User:
    """One user's side of a SecEmb round (Algorithm 3, "User")."""

    def __init__(self, params: SecEmbParams, items):
        if not isinstance(params, SecEmbParams):
            raise TypeError(f"params must be SecEmbParams, got {type(params).__name__}")
        self.params = params
        self.items = _item_ids(items)
        pad_or_trunc_idx(self.items, params.m, params.m_prime)     # range and duplicate checks now
        self._round = None

    def retrieval_request(self):
        """Algorithm 1 + PathGen + retrieval keys: (request to server 0, to server 1)."""
        P = self.params
        idx, pos = pad_or_trunc_idx(self.items, P.m, P.m_prime)
        paths0, paths1, secrets_ = dpf.path_gen_batch(idx, P.log_domain, threads=1)
        cws = dpf.convert_gen_batch(secrets_, np.ones(len(idx), dtype=np.uint64))
        keys0 = [dpf.Key.from_path(p0, cw, vector=False) for p0, cw in zip(paths0, cws)]
        keys1 = [dpf.Key.from_path(p1, cw, vector=False) for p1, cw in zip(paths1, cws)]
        self._round = {"idx": idx, "pos": pos, "paths": secrets_}
        return RetrievalRequest(0, keys0), RetrievalRequest(1, keys1)

    def reconstruct(self, resp0: RetrievalResponse, resp1: RetrievalResponse) -> np.ndarray:
        """Eq. 4: the rows of Q at this user's items (NaN for items dropped by truncation)."""
        st = self._need_round()
        P = self.params
        for r, b in ((resp0, 0), (resp1, 1)):
            if not isinstance(r, RetrievalResponse) or r.party != b:
                raise ValueError(f"expected server {b}'s RetrievalResponse")
            if r.shares.shape != (P.m_prime, P.d):
                raise ValueError(f"a response must have shape ({P.m_prime}, {P.d}), got {r.shares.shape}")
        rows = decode_fixed(resp0.shares + resp1.shares, P)      # wraps mod 2^64 as intended
        out = np.full((len(self.items), P.d), np.nan)
        real = st["pos"] >= 0
        out[st["pos"][real]] = rows[real]
        return out

    def aggregation_upload(self, grads, dense=None, clip=None):
        """PadOrTruncEmb + ConvertGen on the retrieval paths (Sec. 4.3.2) and
        additive shares of the dense update.  ``grads``: one row per item of
        ``self.items`` (rows of truncated items are dropped with them)."""
        st = self._need_round()
        P = self.params
        g = np.asarray(grads, dtype=np.float64)
        if g.shape != (len(self.items), P.d):
            raise ValueError(f"grads must have shape ({len(self.items)}, {P.d}), got {g.shape}")
        if clip is not None:
            clip = _check_real(clip, "clip", positive=True)
            norms = np.linalg.norm(g, axis=1, keepdims=True)
            g = g * np.minimum(1.0, clip / np.maximum(norms, 1e-300))
        rows = np.zeros((P.m_prime, P.d))
        real = st["pos"] >= 0
        rows[real] = g[st["pos"][real]]
        enc = encode_fixed(rows, P)
        cws = dpf.convert_gen_batch(st["paths"], enc, domain=AGGREGATION_DOMAIN)
        dense0, dense1 = self._dense_shares(dense)
        self._round = None                    # one upload per round: the paths are spent
        return AggregationUpload(0, cws, dense0), AggregationUpload(1, cws, dense1)

    def _dense_shares(self, dense):
        P = self.params
        if dense is None:
            dense = np.zeros(P.dense_size)
        x = encode_fixed(np.asarray(dense, dtype=np.float64).reshape(-1), P)
        if x.size != P.dense_size:
            raise ValueError(f"dense must have {P.dense_size} entries, got {x.size}")
        return additive_shares(x, b"secemb/dense-share")

    def _need_round(self):
        if self._round is None:
            raise ValueError("no retrieval in progress: call retrieval_request() first")
        return self._round


class Server:
    """Server b of SecEmb (Algorithm 3, "Server").  ``table``: the public item
    table Q as Z_2^64 fixed point (``encode_table``)."""

    def __init__(self, party: int, params: SecEmbParams, table: np.ndarray, threads=None):
        if party not in (0, 1):
            raise ValueError(f"party must be 0 or 1, got {party}")
        if not isinstance(table, np.ndarray) or table.dtype != np.uint64 or table.shape != (params.m, params.d):
            raise ValueError(f"table must be a uint64 array of shape ({params.m}, {params.d})")
        self.party = party
        self.params = params
        self.table = np.ascontiguousarray(table)
        self.threads = threads
        self._requests = {}

    def answer(self, user_id, request: RetrievalRequest) -> RetrievalResponse:
        """Eq. 3 for every key of the request; remembers the paths for aggregation."""
        P = self.params
        if not isinstance(request, RetrievalRequest) or request.party != self.party:
            raise ValueError(f"expected a RetrievalRequest for server {self.party}")
        if len(request.keys) != P.m_prime:
            raise ValueError(f"a request must hold m' = {P.m_prime} keys, got {len(request.keys)}")
        for k in request.keys:
            if k.log_domain != P.log_domain or k.vector or k.early:
                raise ValueError("retrieval keys must be scalar, non-early, of the deployment's log_domain")
        shares = dpf.eval_full_dot(request.keys, self.table, threads=self.threads)
        self._requests[user_id] = [k.path_key() for k in request.keys]
        return RetrievalResponse(self.party, shares)

    def aggregate(self, uploads: dict, noise_sigma=0.0) -> AggregateShare:
        """Server b's share of sum over the uploading users (Algorithm 3).  Users
        who retrieved but did not upload (dropouts, Appendix L.2) are left out;
        an upload without a retrieval is refused.  ``noise_sigma``: standard
        deviation of the Gaussian noise this server adds (Appendix G)."""
        P = self.params
        noise_sigma = _check_real(noise_sigma, "noise_sigma")
        acc = np.zeros((P.m, P.d), dtype=np.uint64)
        dense = np.zeros(P.dense_size, dtype=np.uint64)
        for uid, up in uploads.items():
            paths = self._requests.get(uid)
            if paths is None:
                raise ValueError(f"user {uid!r} uploaded without a retrieval this round")
            if not isinstance(up, AggregationUpload) or up.party != self.party:
                raise ValueError(f"user {uid!r}: expected an AggregationUpload for server {self.party}")
            if up.cws.shape != (P.m_prime, P.d) or up.dense.shape != (P.dense_size,):
                raise ValueError(f"user {uid!r}: upload shapes {up.cws.shape}, {up.dense.shape} do not match "
                                 f"({P.m_prime}, {P.d}) and ({P.dense_size},)")
            states = dpf.path_eval_full(paths, P.m, threads=self.threads)
            dpf.convert_accumulate(acc, states, self.party, up.cws, domain=AGGREGATION_DOMAIN,
                                   threads=self.threads)
            dense += up.dense
        self._requests = {}
        if noise_sigma:
            acc += _gaussian_fixed(acc.shape, noise_sigma, P)
            dense += _gaussian_fixed(dense.shape, noise_sigma, P)
        return AggregateShare(self.party, acc, dense)


def _gaussian_fixed(shape, sigma, params):
    """N(0, sigma^2) noise in fixed point from a CSPRNG (Box-Muller on 53-bit uniforms)."""
    n = int(np.prod(shape))
    words = Prg(random_seed(), b"secemb/dp-noise").uint64(2 * n)
    u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)
    z = np.sqrt(-2.0 * np.log(u[:n])) * np.cos(2.0 * np.pi * u[n:])
    return np.rint(z * sigma * params.scale).astype(np.int64).view(np.uint64).reshape(shape)


def reconstruct_aggregate(share0: AggregateShare, share1: AggregateShare, params: SecEmbParams):
    """Server 0's reconstruction: (sum of sparse updates m x d, dense sum) as floats."""
    if share0.party != 0 or share1.party != 1:
        raise ValueError("need server 0's and server 1's shares")
    return decode_fixed(share0.sparse + share1.sparse, params), decode_fixed(share0.dense + share1.dense, params)


# ----------------------------------------------------------------- local simulator
@dataclass
class RoundReport:
    retrieved: list
    aggregate: np.ndarray
    dense: np.ndarray
    bytes_up: dict = field(default_factory=dict)
    bytes_down: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)


def simulate_round(Q, items, grads, m_prime, *, dense=None, frac_bits=16, n_users=None,
                   dropouts=(), noise_sigma=0.0, clip=None, threads=None, report=False):
    """One SecEmb round run locally with real messages (bytes round-tripped).

    ``Q``: m x d float item table; ``items[u]``: user u's rated item ids;
    ``grads[u]``: |items[u]| x d gradient rows; ``dense[u]``: optional dense
    updates.  Returns ``(retrieved, aggregate)``: ``retrieved[u]`` the rows of Q
    at items[u] (NaN for items truncated away when |items[u]| > m'), and the
    m x d sum of the users' (fixed-point quantized) gradient rows, users in
    ``dropouts`` having retrieved but not uploaded.  ``report=True`` returns a
    ``RoundReport`` with byte counts and per-phase seconds instead."""
    import time
    Q = np.asarray(Q, dtype=np.float64)
    if Q.ndim != 2:
        raise ValueError(f"Q must be 2-D (m, d), got shape {Q.shape}")
    m, d = Q.shape
    nu = len(items)
    if len(grads) != nu:
        raise ValueError(f"{nu} item lists but {len(grads)} gradient arrays")
    # every argument is checked before any party computes anything
    noise_sigma = _check_real(noise_sigma, "noise_sigma")
    if clip is not None:
        clip = _check_real(clip, "clip", positive=True)
    if isinstance(dropouts, (str, bytes)) or not hasattr(dropouts, "__iter__"):
        raise TypeError(f"dropouts must be a collection of user indices, got {type(dropouts).__name__}")
    drop = set()
    for uid in dropouts:
        if isinstance(uid, bool) or not isinstance(uid, (int, np.integer)):
            raise TypeError(f"dropouts must hold integer user indices, got {uid!r}")
        if not 0 <= int(uid) < nu:
            raise ValueError(f"dropouts names user {uid}, but the users are 0..{nu - 1}")
        drop.add(int(uid))
    dense_size = 0 if dense is None else int(np.asarray(dense[0]).size)
    params = SecEmbParams(m=m, d=d, m_prime=m_prime, frac_bits=frac_bits,
                          n_users=n_users or max(1, nu), dense_size=dense_size)
    table = encode_table(Q, params)
    servers = [Server(0, params, table, threads), Server(1, params, table, threads)]
    users = [User(params, it) for it in items]
    rep = RoundReport([], None, None)
    t = time.perf_counter
    t0 = t()
    reqs = [u.retrieval_request() for u in users]
    rep.seconds["user_keygen"] = t() - t0
    rep.bytes_up["retrieval"] = sum(r.nbytes for pair in reqs for r in pair) / max(1, nu) / 2
    t0 = t()
    answers = []
    for uid, (r0, r1) in enumerate(reqs):
        a0 = servers[0].answer(uid, RetrievalRequest.from_bytes(r0.to_bytes()))
        a1 = servers[1].answer(uid, RetrievalRequest.from_bytes(r1.to_bytes()))
        answers.append((a0, a1))
    rep.seconds["server_retrieval"] = t() - t0
    rep.bytes_down["retrieval"] = sum(a.nbytes for pair in answers for a in pair) / max(1, nu) / 2
    rep.retrieved = [u.reconstruct(RetrievalResponse.from_bytes(a0.to_bytes()),
                                   RetrievalResponse.from_bytes(a1.to_bytes()))
                     for u, (a0, a1) in zip(users, answers)]
    ups = [{}, {}]
    t0 = t()
    for uid, u in enumerate(users):
        if uid in drop:
            continue
        up0, up1 = u.aggregation_upload(grads[uid], None if dense is None else dense[uid], clip=clip)
        ups[0][uid] = AggregationUpload.from_bytes(up0.to_bytes())
        ups[1][uid] = AggregationUpload.from_bytes(up1.to_bytes())
    rep.seconds["user_upload"] = t() - t0
    rep.bytes_up["aggregation"] = sum(x.nbytes for s in ups for x in s.values()) / max(1, nu - len(drop)) / 2
    t0 = t()
    shares = [servers[b].aggregate(ups[b], noise_sigma) for b in (0, 1)]
    rep.seconds["server_aggregation"] = t() - t0
    agg, dn = reconstruct_aggregate(shares[0], AggregateShare.from_bytes(shares[1].to_bytes()), params)
    rep.aggregate, rep.dense = agg, dn
    if report:
        return rep
    return rep.retrieved, rep.aggregate
