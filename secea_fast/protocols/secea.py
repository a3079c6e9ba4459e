"""SecEA: secure embedding aggregation (seed 002, Sec. 4).

Parties
-------
* ``Client`` (one per silo, index n = 0 .. N-1; the paper's n = 1 .. N):
  - private entity union (Sec. 4.1): f_n(x) = prod (x - e) (eq. 3), a random
    r_n of degree <= k-1, the 2Nk high-order terms s_n of the reversed
    Laurent series of r_n/f_n, masked with pairwise PRG streams (eq. 4);
    from the server's sum, rational reconstruction u/L and the roots of L;
  - Lagrange-coded sharing (Sec. 4.2, eqs. 6-12) of its expanded fixed-point
    embeddings (h, 1) / 0 for every entity of the union, with T noise
    sub-vectors, relayed through the server under pairwise one-time pads
    (Remark 1);
  - coded queries (Sec. 4.3, eqs. 13-16) for its own entities, computed
    offline (they do not depend on embeddings), answers
    A_{v,n,e} = <q_{n,v,e}, y_v> on the matmul kernel, and decoding
    (eq. 22) by interpolation, or by Reed-Solomon decoding when
    N > 2(K+T-1)+1 leaves redundancy.
* ``Server``: sums the masked union vectors (eq. 4), relays messages, and
  adds its noise psi_{n,e}(alpha_v) (eqs. 17-20) to every response.

Every message is a ``Message`` (kind, sender, receiver, round, block, one
2-D array) with versioned ``to_bytes`` / ``from_bytes`` and ``nbytes``.

Arithmetic
----------
Embeddings live in F_p for the 50-bit ``EMBEDDING_PRIME`` (one IFMA limb in
the response product) as fixed point with ``precision`` decimal digits
(SecEA(p) of Sec. 6); ``SecEAParams`` checks that the sum of N embeddings
bounded by ``bound`` cannot wrap (p > 2 N bound 10^precision).  Entity
hashes and the union live in the Goldilocks field (``hash_ids``).

Deviations and choices, each pinned by a test:

* Indices are 0-based in the API (client 0 is the paper's client 1).
* The noise polynomial (19) as printed has the factor
  prod_j (x - beta_j)/(alpha_i - beta_j), which makes psi(alpha_i) = z^i and
  psi(beta_j) = 0 only together with the second factor; we build psi as the
  unique polynomial of degree <= 2(K+T-1) with psi(beta_k) = 0 (17) and
  psi(alpha_i) = z^i for i <= K+2T-1 (18), which is what (19) intends.
  The worked example of Sec. 4.4 prints z^i = 3 s_i (Y_1 = A_1 + 3 s_1);
  ``tests/test_secea.py`` checks its query, noise and decoding coefficients.
* The paper leaves the querier's own response implicit: client n answers its
  own query locally, but the server must still add psi_{n,e}(alpha_n), so
  that response goes through the server under a pad only client n knows
  (like every other response: the server adds noise to padded values, which
  commutes with the pad).
* K defaults to eq. (7), floor((N+1)/2) - T; a smaller K may be passed to
  buy redundancy: responses are a Reed-Solomon codeword of length N and
  dimension k = 2(K+T-1)+1 (eq. 21), so s dropped (erased) and e corrupted
  responses are corrected whenever 2e + s <= N - k.  Beyond that bound
  decoding raises ``poly.DecodingError`` when it detects the excess, but a
  received word that lies within the decoding radius of another codeword
  decodes to it (no decoder can tell).  With no redundancy left (N - s = k,
  e.g. odd N with the default K, or exactly k responses received) every
  received word is a codeword: a corrupted response is neither corrected
  nor detected.  ``Client.decode`` therefore reports whether its result
  was checked (``DecodeResult.checked``, ``.redundancy``), and
  ``verify=True`` refuses unchecked results.
* Relay pads (Remark 1): the bulk messages between clients (shares y_{n,v},
  queries q_{n,v,e}) are padded by XOR with an AES-CTR keystream of the pair's
  seed (a one-time pad over 64-bit words, i.e. stream-cipher encryption,
  footnote 3's alternative) instead of adding PRG(a_{n,v}) in F_p: both hide
  the message perfectly given the keystream, and XOR needs no rejection
  sampling (0.4 instead of 1.5 ns per element).  Responses keep an F_p pad,
  because the server adds its noise under the pad (eq. 20), and the union
  vectors keep F_p masks, because they must cancel in the server's sum (eq. 4).
* Queries are sent divided by the public, nonzero c_v = l_{K+1}(alpha_v)
  and responder v multiplies its share by c_v once per round instead: the
  responses are eq. (20)'s exactly, every view is a public bijection of the
  paper's, and for T = 1 building a query needs no field multiplication
  (``Client.iter_queries``).
* Footnote 1's padding (a client with fewer than k entities repeats some of
  its own hashes) gives f_n repeated roots; ``poly.roots`` reports each once.
* Entity hashes are SHA-256 of a domain-separated, type-tagged encoding,
  reduced mod the Goldilocks prime (bias < 2^-64).  Two distinct entities
  of *different* clients colliding would merge them; the probability is at
  most M^2 / 2p: 2.7e-10 for M = 10^5 entities, 2.7e-8 for 10^6.  A
  collision inside one client raises.
"""
from __future__ import annotations

import hashlib
import numbers
import time
from dataclasses import dataclass, field as dc_field
from functools import lru_cache

import numpy as np

from .. import field, linalg, poly, tuning
from .._checks import check_int, check_prime
from ..field import EMBEDDING_PRIME, GOLDILOCKS
from ..executor import party_reduce
from ..fixedpoint import FixedPoint
from ..prg import Prg, X25519KeyPair, copy_stream, pairwise_seed, random_seed, uniform
from ._wire import Reader, Writer

__all__ = ["SecEAParams", "Client", "Server", "Message", "hash_ids", "entity_union",
           "aggregate", "PSU_PRIME", "DecodingError", "DecodeResult"]

PSU_PRIME = GOLDILOCKS
DecodingError = poly.DecodingError
_HASH_LABEL = b"secea_fast.secea.entity.v1"
_SESSION_LABEL = b"secea_fast.secea.pair.v1"


# ----------------------------------------------------------------- hashing
def _id_bytes(x) -> bytes:
    if isinstance(x, str):
        return b"s" + x.encode("utf-8")
    if isinstance(x, (bytes, bytearray, memoryview)):
        return b"b" + bytes(x)
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        v = int(x)
        return b"i" + v.to_bytes((v.bit_length() + 8) // 8 or 1, "big", signed=True)
    raise TypeError(f"entity ids must be str, bytes or int, got {type(x).__name__}")


def hash_ids(ids, p: int = PSU_PRIME) -> np.ndarray:
    """Hash entity ids (str, bytes or int) into F_p (default Goldilocks):
    SHA-256 over a domain-separated, type-tagged encoding (so 1, "1" and b"1"
    differ), the first 16 bytes read as an integer mod p.  Returns uint64 in
    input order.  Raises ValueError if two distinct ids of the input collide
    (or an id repeats)."""
    p = check_prime(p)
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids must be an iterable of ids, not a single str/bytes")
    ids = list(ids)
    out = np.empty(len(ids), dtype=np.uint64)
    for i, x in enumerate(ids):
        b = _id_bytes(x)
        h = hashlib.sha256(_HASH_LABEL + len(b).to_bytes(4, "big") + b).digest()
        out[i] = int.from_bytes(h[:16], "big") % p
    if len(np.unique(out)) != len(out):
        seen = {}
        for x, h in zip(ids, out.tolist()):
            if h in seen:
                if _id_bytes(seen[h]) == _id_bytes(x):
                    raise ValueError(f"entity id {x!r} is repeated")
                raise ValueError(f"hash collision between entity ids {seen[h]!r} and {x!r}")
            seen[h] = x
    return out


def _entity_list(entities, name: str) -> list:
    """``entities`` (any iterable of ids, or a mapping: its keys) as a list.
    A single str / bytes is refused: iterating it would silently turn
    "abc" into the three entities 'a', 'b', 'c'."""
    if isinstance(entities, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be a collection of entity ids (list, set, dict keys...), "
                        f"not a single {type(entities).__name__}: wrap it as [{entities!r}]")
    try:
        return list(entities)
    except TypeError:
        raise TypeError(f"{name} must be a collection of entity ids, got "
                        f"{type(entities).__name__}") from None


def real_vector(vec, name: str) -> np.ndarray:
    """An embedding as a float64 array.  Refuses complex values (NumPy would
    drop the imaginary part with only a ComplexWarning) and non-numeric
    ones (object, str, bytes...) with a TypeError naming ``name``."""
    a = np.asarray(vec)
    if a.dtype.kind not in "biuf":
        what = "complex" if a.dtype.kind == "c" else "non-numeric"
        raise TypeError(f"{name} must hold real numbers, got {what} dtype {a.dtype}")
    return a.astype(np.float64, copy=False)


# ----------------------------------------------------------------- parameters
def _lagrange_at(nodes, xs, p):
    """(len(xs), len(nodes)) matrix W with W[j, i] = l_i(xs[j]), the Lagrange
    basis on ``nodes`` evaluated at ``xs``."""
    basis = poly.lagrange_matrix(np.array(nodes, dtype=np.uint64), p)       # row i: l_i
    return np.ascontiguousarray(poly.eval(basis, np.array(xs, dtype=np.uint64), p).T)


@dataclass(frozen=True)
class SecEAParams:
    """Public parameters: N clients, T colluders (1 <= T, K >= 1), embedding
    size d, ``precision`` decimal digits, entries bounded by ``bound``.

    ``K`` defaults to eq. (7); ``alphas`` (N points) and ``betas`` (K+T
    points) default to betas = 1..K+T, alphas = K+T+1..K+T+N (the example
    of Sec. 4.4 for N = 3, T = 1).  They must be distinct, nonzero, < p,
    and disjoint."""
    N: int
    d: int
    T: int = 1
    precision: int = 8
    bound: float = 100.0
    K: int | None = None
    p: int = EMBEDDING_PRIME
    alphas: tuple | None = None
    betas: tuple | None = None
    fx: FixedPoint = dc_field(init=False, repr=False, compare=False)

    def __post_init__(self):
        N = check_int(self.N, "N")
        T = check_int(self.T, "T")
        d = check_int(self.d, "d")
        p = check_prime(self.p)
        if N < 2:
            raise ValueError(f"SecEA needs N >= 2 clients, got N = {N}")
        if T < 1:
            raise ValueError(f"T must be >= 1, got {T}")
        if d < 1:
            raise ValueError(f"embedding size d must be >= 1, got {d}")
        k_max = (N + 1) // 2 - T
        if k_max < 1:
            raise ValueError(f"T = {T} is too large for N = {N}: eq. (7) needs "
                             f"T <= floor((N+1)/2) - 1 = {(N + 1) // 2 - 1}")
        K = k_max if self.K is None else check_int(self.K, "K")
        if not 1 <= K <= k_max:
            raise ValueError(f"K must be in [1, {k_max}] for N = {N}, T = {T}, got {K}")
        betas = tuple(range(1, K + T + 1)) if self.betas is None else tuple(self.betas)
        alphas = (tuple(range(K + T + 1, K + T + N + 1)) if self.alphas is None
                  else tuple(self.alphas))
        for name, pts, want in (("alphas", alphas, N), ("betas", betas, K + T)):
            if len(pts) != want:
                raise ValueError(f"need {want} {name}, got {len(pts)}")
            for x in pts:
                check_int(x, name)
                if not 0 < int(x) < p:
                    raise ValueError(f"{name} must be nonzero elements of F_p, got {x}")
        alphas = tuple(int(x) for x in alphas)
        betas = tuple(int(x) for x in betas)
        if len(set(alphas)) != N or len(set(betas)) != K + T:
            raise ValueError("evaluation points must be distinct")
        if set(alphas) & set(betas):
            raise ValueError(f"alphas and betas must be disjoint, both contain "
                             f"{sorted(set(alphas) & set(betas))}")
        prec = check_int(self.precision, "precision")
        fx = FixedPoint(p, digits=prec, bound=float(self.bound), n_summands=N)
        for name, v in (("N", N), ("T", T), ("d", d), ("p", p), ("K", K), ("alphas", alphas),
                        ("betas", betas), ("precision", prec), ("fx", fx)):
            object.__setattr__(self, name, v)

    # derived sizes
    @property
    def D(self) -> int:
        """d + 1: the embedding with its count entry (eq. 6)."""
        return self.d + 1

    @property
    def sub(self) -> int:
        """Sub-vector length ceil((d+1)/K) (the last one zero-padded)."""
        return -(-self.D // self.K)

    @property
    def response_len(self) -> int:
        """Coefficients of the response polynomial Y_{n,e}: 2(K+T-1) + 1 (eq. 21)."""
        return 2 * (self.K + self.T - 1) + 1

    @property
    def redundancy(self) -> int:
        return self.N - self.response_len

    # public coefficient matrices (cached per instance)
    def _cache(self, name, make):
        c = self.__dict__.setdefault("_mats", {})
        if name not in c:
            c[name] = make()
        return c[name]

    @property
    def share_matrix(self) -> np.ndarray:
        """(N, K+T): l_i(alpha_v) for the Lagrange basis on the betas (eq. 10)."""
        return self._cache("share", lambda: _lagrange_at(self.betas, self.alphas, self.p))

    @property
    def query_onehot(self) -> np.ndarray:
        """(N,): sum_{i<=K} l_i(alpha_v), the coefficient of the selected
        entity in q_{n,v,e} (eq. 15)."""
        return self._cache("onehot", lambda: np.array(
            [sum(int(x) for x in row[:self.K]) % self.p for row in self.share_matrix],
            dtype=np.uint64))

    @property
    def query_scale(self) -> np.ndarray:
        """(N,): l_{K+1}(alpha_v), the coefficient of z^{.,1} in q_{n,v,e}
        (eq. 15); nonzero because alpha_v is not a beta.  Queries are sent
        divided by it and responder v multiplies its share y_v by it instead
        (see ``Client.iter_queries``)."""
        return np.ascontiguousarray(self.share_matrix[:, self.K])

    @property
    def query_sent(self) -> tuple:
        """(coefs (N, T), onehot (N,)): eq. (15)'s coefficients of z^{.,1..T}
        and of the selected entity at alpha_v, divided by ``query_scale[v]``
        (so coefs[:, 0] = 1): the query actually sent to v."""
        def make():
            p = self.p
            inv = [pow(int(c), -1, p) for c in self.query_scale]
            coefs = np.array([[int(x) * inv[v] % p for x in self.share_matrix[v, self.K:]]
                              for v in range(self.N)], dtype=np.uint64).reshape(self.N, self.T)
            onehot = np.array([int(self.query_onehot[v]) * inv[v] % p for v in range(self.N)],
                              dtype=np.uint64)
            return coefs, onehot
        return self._cache("sent", make)

    @property
    def noise_matrix(self) -> np.ndarray:
        """(N, K+2T-1): psi_{n,e}(alpha_v) = sum_i W[v, i] z^i with psi = 0 at
        beta_1..beta_K (17) and psi(alpha_i) = z^i, i <= K+2T-1 (18)."""
        def make():
            m = self.K + 2 * self.T - 1
            nodes = list(self.betas[:self.K]) + list(self.alphas[:m])
            return np.ascontiguousarray(_lagrange_at(nodes, self.alphas, self.p)[:, self.K:])
        return self._cache("noise", make)

    @property
    def decode_matrix(self) -> np.ndarray:
        """(K, N): Y(beta_k) from Y(alpha_1..alpha_N) (eq. 22)."""
        return self._cache("decode", lambda: _lagrange_at(self.alphas, self.betas[:self.K], self.p))

    @property
    def parity_matrix(self) -> np.ndarray:
        """(N - response_len, N) checks: zero on every codeword of degree
        < response_len (consistency of the N responses)."""
        def make():
            k = self.response_len
            W = _lagrange_at(self.alphas[:k], self.alphas[k:], self.p)   # (N-k, k)
            H = np.zeros((self.N - k, self.N), dtype=np.uint64)
            H[:, :k] = W
            for j in range(self.N - k):
                H[j, k + j] = self.p - 1
            return H
        return self._cache("parity", make)


# ----------------------------------------------------------------- messages
_KINDS = {"psu": 1, "psu_sum": 2, "share": 3, "query": 4, "response": 5}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_SERVER = (1 << 64) - 1
# who sends and who receives each kind: "c" a client, "s" the server
# (psu_sum is the server's broadcast, addressed to the server id or to one client)
_ROLES = {"psu": ("c", "s"), "psu_sum": ("s", "cs"), "share": ("c", "c"), "query": ("c", "c"),
          "response": ("c", "c")}
# N alphas and K + T >= 2 betas are distinct nonzero elements of F_p (eq. 10)
# and p < 2^64, whose largest prime is 2^64 - 59: no client index reaches this
_MAX_P = (1 << 64) - 59


def max_clients(p: int | None = None) -> int:
    """The most clients a SecEA round over F_p admits: p - 3 (N alphas and at
    least two betas, all distinct and nonzero); for unknown p the bound of the
    largest prime below 2^64.  Client indices on the wire are below it."""
    return (_MAX_P if p is None else int(p)) - 3


@dataclass
class Message:
    """One protocol message: ``kind`` in psu, psu_sum, share, query,
    response; ``sender`` / ``receiver`` client indices (``Message.SERVER``
    for the server); ``round``, ``block`` (entity block of a query /
    response); ``data`` a 2-D uint64 array (padded with one-time pads when
    relayed between clients)."""
    kind: str
    sender: int
    receiver: int
    round: int
    block: int
    data: np.ndarray

    SERVER = _SERVER

    def to_bytes(self) -> bytes:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown message kind {self.kind!r}")
        return (Writer(b"SEEA").u64(_KINDS[self.kind]).u64(self.sender).u64(self.receiver)
                .u64(self.round).u64(self.block).array(self.data).bytes())

    @classmethod
    def from_bytes(cls, data, p: int | None = None, N: int | None = None) -> "Message":
        """Parse and validate; with ``p``, also check every entry is < p.
        The sender and receiver must fit the kind (a client index or
        ``SERVER``, see ``_ROLES``); client indices must be < ``N`` when it
        is given (the receiving party passes its ``params.N``), otherwise
        below ``max_clients(p)``, the protocol's own limit."""
        r = Reader(data, b"SEEA", "SecEA message")
        kind = r.u64()
        if kind not in _KIND_NAMES:
            raise ValueError(f"SecEA message: unknown kind {kind}")
        sender, receiver, rnd, block = r.u64(), r.u64(), r.u64(), r.u64()
        arr = r.array(2)
        r.done()
        name = _KIND_NAMES[kind]
        if N is not None:
            N = check_int(N, "N")
            if not 2 <= N <= max_clients(p):
                raise ValueError(f"SecEA message: N = {N} is not a valid number of clients")
        limit = max_clients(p) if N is None else N
        for role, who, allowed in (("sender", sender, _ROLES[name][0]),
                                   ("receiver", receiver, _ROLES[name][1])):
            if who == _SERVER and "s" in allowed:
                continue
            if "c" not in allowed:
                raise ValueError(f"SecEA message: the {role} of a {name} message is the server, "
                                 f"got {who}")
            if who >= limit:
                raise ValueError(f"SecEA message: {role} {who} is not a client index "
                                 f"(< {limit}){' or the server' if 's' in allowed else ''}")
        if p is not None and arr.size and int(arr.max()) >= p:
            raise ValueError("SecEA message: entry >= p")
        return cls(name, sender, receiver, rnd, block, arr)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire (header + array)."""
        return 8 + 5 * 8 + 1 + 8 * self.data.ndim + 8 * self.data.size


def _u64(a) -> np.ndarray:
    """A message array as C-contiguous uint64 (no copy when it already is)."""
    if not isinstance(a, np.ndarray) or a.dtype != np.uint64:
        raise TypeError("message data must be a uint64 NumPy array")
    return np.ascontiguousarray(a)


def _domain(rnd, purpose, a, b, block=0):
    return f"secea/r{rnd}/{purpose}/{a}->{b}/b{block}"


# ----------------------------------------------------------------- union math
@lru_cache(maxsize=4)
def _union_from_sum(total_bytes: bytes, p: int):
    """u/L from the 2Nk-term sum, and the roots of L (Sec. 4.1, step 3).
    A pure function of the public sum, so simulated clients share one
    evaluation (each real client runs it on its own machine)."""
    total = np.frombuffer(total_bytes, dtype=np.uint64)
    _, L = poly.rational_reconstruct(total, p, laurent=True)
    return poly.roots(L, p), len(L) - 1


# ----------------------------------------------------------------- decoding
def decode_values(prm: SecEAParams, Y: np.ndarray, present: np.ndarray, B: int, *,
                  verify: bool = False, who: str = "decode"):
    """Y(beta_1..beta_K) from the unpadded responses ``Y`` (N, B*sub) of one
    block (eq. 22): interpolation when every response is present and they
    are consistent (parity checks zero), Reed-Solomon decoding otherwise.
    Returns ((B, K*sub) values, positions of faulty present responses,
    redundancy = responses present beyond k = ``prm.response_len``).
    Corrects e faulty and s missing responses when 2e + s <= N - k; with
    N - s = k nothing can be checked and the values are returned as
    interpolated, unless ``verify`` (then DecodingError; see ``Client.decode``)."""
    redundancy = int(present.sum()) - prm.response_len
    if verify and redundancy == 0:
        raise DecodingError(
            f"{who}: {int(present.sum())} responses = k = 2(K+T-1)+1 = {prm.response_len} leave no "
            f"redundancy, so the result cannot be checked (a corrupted response would go unnoticed); "
            f"verify=True refuses it: choose a smaller K, or accept unchecked results with verify=False")
    faulty = []
    if present.all() and (prm.redundancy == 0 or not linalg.matmul(prm.parity_matrix, Y, prm.p).any()):
        S = linalg.matmul(prm.decode_matrix, Y, prm.p)              # (K, B*sub)
    else:
        if prm.redundancy == 0:
            raise DecodingError(
                f"response(s) of client(s) {np.flatnonzero(~present).tolist()} missing and "
                f"N = {prm.N} = 2(K+T-1)+1 leaves no redundancy (choose a smaller K)")
        coeffs, faulty = poly.rs_decode(np.array(prm.alphas, dtype=np.uint64),
                                        np.ascontiguousarray(Y.T), prm.response_len, prm.p,
                                        erasures=~present)
        S = poly.eval(coeffs, np.array(prm.betas[:prm.K], dtype=np.uint64), prm.p).T
        faulty = [int(x) for x in faulty if present[x]]
    return S.reshape(prm.K, B, prm.sub).transpose(1, 0, 2).reshape(B, prm.K * prm.sub), faulty, redundancy


class DecodeResult(tuple):
    """``Client.decode``'s result: the tuple (sums, counts, faulty) as before,
    plus how far it was checked.  (SecEA-PHE's decode returns one too, its
    first two entries being the numerators and denominators of the means.)

    * ``redundancy``: responses received beyond the k = 2(K+T-1)+1 that
      determine the response polynomial (eq. 21), i.e. N - s - k for s
      dropped responses;
    * ``checked``: ``redundancy > 0``.  Only then is a corrupted response
      detected (and, within 2e + s <= N - k, corrected and named in
      ``faulty``); an unchecked result is right only if every response was.
    """

    def __new__(cls, sums, counts, faulty, redundancy):
        self = super().__new__(cls, (sums, counts, faulty))
        self.redundancy = int(redundancy)
        return self

    @property
    def sums(self):
        return self[0]

    @property
    def counts(self):
        return self[1]

    @property
    def faulty(self):
        return self[2]

    @property
    def checked(self) -> bool:
        return self.redundancy > 0

    def __getnewargs__(self):
        return tuple(self) + (self.redundancy,)


# ----------------------------------------------------------------- client
class Client:
    """Client ``index`` (0-based) holding ``entities`` (ids: str, bytes, int).

    Secrets (X25519 key, pairwise seeds, union and query randomness) come
    from ``secrets`` and AES-CTR streams seeded from it."""

    def __init__(self, index: int, params: SecEAParams, entities):
        if not isinstance(params, SecEAParams):
            raise TypeError("params must be SecEAParams")
        self.params = params
        self.index = check_int(index, "index")
        if not 0 <= self.index < params.N:
            raise ValueError(f"client index must be in [0, {params.N}), got {index}")
        self.ids = _entity_list(entities, "entities")
        if not self.ids:
            raise ValueError(f"client {index} has no entities")
        self.hashes = hash_ids(self.ids)
        self._keypair = X25519KeyPair()
        self._seeds = {}
        self._self_seed = random_seed(32)
        self._query_seed = random_seed(32)
        self.union = None          # sorted uint64 hashes once known
        self.positions = None      # union position of each own entity (ids order)
        self._y = None             # y_v (M x sub), this client's aggregated shares
        self._y_round = None
        self._y_resp = None        # c_v y_v, the responses' right operand (per round)
        self._y_packed = None      # c_v y_v packed for the response products (per round)
        self._used = set()         # (round, purpose, block) already used for pads
        self.threads = None        # threads of the response product (None: library default)
        self.product_seconds = 0.0   # time spent in response products (for reports)

    def __reduce__(self):
        # refused except while an Executor ships the parties to its own
        # workers; the copy keeps the derived seeds, not the X25519 key
        return party_reduce(self, drop=("_keypair", "_y_packed", "_y_resp"))

    # --- keys
    @property
    def public_key(self) -> bytes:
        return self._own_keypair().public_bytes

    def _own_keypair(self) -> X25519KeyPair:
        if self._keypair is None:
            raise RuntimeError("this is a worker copy of the client: it has no X25519 key")
        return self._keypair

    def set_peer_keys(self, public_keys, session: bytes = b""):
        """Agree pairwise seeds a_{n,v} with every other client from their
        X25519 public keys (relayed by the server)."""
        if len(public_keys) != self.params.N:
            raise ValueError(f"need {self.params.N} public keys, got {len(public_keys)}")
        keypair = self._own_keypair()
        n = self.index
        for v, pk in enumerate(public_keys):
            if v == n:
                continue
            lo, hi = min(n, v), max(n, v)
            ctx = _SESSION_LABEL + session + f"/{lo}-{hi}".encode()
            self._seeds[v] = pairwise_seed(keypair, pk, ctx)

    def _pad(self, v, domain):
        if v == self.index:
            return Prg(self._self_seed, domain)
        try:
            return Prg(self._seeds[v], domain)
        except KeyError:
            raise RuntimeError("call set_peer_keys() before exchanging messages") from None

    def _once(self, key):
        if key in self._used:
            raise ValueError(f"round {key[0]} {key[1]} block {key[2]} was already used: "
                             "one-time pads are never reused; start a new round")
        self._used.add(key)

    # --- private entity union (Sec. 4.1)
    def psu_upload(self, k: int, rnd: int = 0) -> Message:
        """s~_n: the 2Nk Laurent terms of r_n/f_n plus the pairwise masks (eq. 4).
        ``k`` is the public largest set size (footnote 1)."""
        P = PSU_PRIME
        N, n = self.params.N, self.index
        k = check_int(k, "k")
        if k < len(self.hashes):
            raise ValueError(f"k = {k} is below this client's {len(self.hashes)} entities")
        self._once((rnd, "psu", 0))
        roots = self.hashes
        if k > len(roots):       # footnote 1: repeat own hashes, chosen at random
            import secrets as _s
            extra = [roots[_s.randbelow(len(roots))] for _ in range(k - len(roots))]
            roots = np.concatenate([roots, np.array(extra, dtype=np.uint64)])
        f = poly.from_roots(roots, P)
        r = uniform(k, P)                          # deg r_n <= k - 1
        s = poly.laurent_tail(r, f, 2 * N * k, P)
        for v in range(N):
            if v == n:
                continue
            g = self._pad(v, _domain(rnd, "psu", min(n, v), max(n, v)))
            g.field_into(s, P, base=s, negate=v < n)   # + PRG(a_{n,v}) for n < v, - for n > v
        return Message("psu", n, _SERVER, rnd, 0, s.reshape(1, -1))

    def psu_finish(self, msg: Message) -> np.ndarray:
        """From the server's sum: u/L by rational reconstruction, the union as
        the roots of L (sorted hashes); also fixes this client's positions."""
        if msg.kind != "psu_sum":
            raise ValueError(f"expected a psu_sum message, got {msg.kind}")
        total = np.ascontiguousarray(msg.data.reshape(-1))
        if total.size % (2 * self.params.N) or total.size < 2 * self.params.N * len(self.hashes):
            raise ValueError("psu_sum has the wrong length")
        union, deg = _union_from_sum(total.tobytes(), PSU_PRIME)
        pos = np.searchsorted(union, self.hashes)
        if (pos >= len(union)).any() or (union[np.minimum(pos, len(union) - 1)] != self.hashes).any():
            raise ValueError("entity union does not contain this client's entities: "
                             "the sum was corrupted or a client deviated")
        self.union, self.positions = union, pos
        return union

    @property
    def M(self) -> int:
        if self.union is None:
            raise RuntimeError("run the entity union first")
        return len(self.union)

    # --- private embedding sharing (Sec. 4.2)
    def encode_embeddings(self, embeddings) -> np.ndarray:
        """(M, K*sub) expanded fixed-point embeddings (eq. 6): (h, 1) at own
        entities, 0 elsewhere, zero-padded to K sub-vectors."""
        prm = self.params
        M = self.M
        if not isinstance(embeddings, dict):
            raise TypeError("embeddings must be a dict entity id -> 1-D float array")
        H = np.zeros((M, prm.K * prm.sub), dtype=np.uint64)
        idx = {}
        for i, x in enumerate(self.ids):
            idx[_id_bytes(x)] = i
        if len(embeddings) != len(self.ids):
            raise ValueError(f"client {self.index}: need one embedding per entity "
                             f"({len(self.ids)}), got {len(embeddings)}")
        rows = np.empty((len(self.ids), prm.d), dtype=np.float64)
        seen = np.zeros(len(self.ids), dtype=bool)
        for key, vec in embeddings.items():
            i = idx.get(_id_bytes(key))
            if i is None:
                raise ValueError(f"client {self.index}: embedding for unknown entity {key!r}")
            a = real_vector(vec, f"embeddings[{key!r}]")
            if a.shape != (prm.d,):
                raise ValueError(f"embedding of {key!r} must have shape ({prm.d},), got {a.shape}")
            rows[i] = a
            seen[i] = True
        if not seen.all():
            raise ValueError(f"client {self.index}: missing embeddings")
        H[self.positions, :prm.d] = prm.fx.encode(rows)
        H[self.positions, prm.d] = 1
        return H

    def share(self, embeddings, rnd: int) -> list:
        """y_{n,v} = (phi_{n,e_m}(alpha_v))_m for every v (eq. 11), each padded
        for its receiver (Remark 1); the share for v = n stays local."""
        prm = self.params
        H = self.encode_embeddings(embeddings)
        self._once((rnd, "share", 0))
        M, K, T, sub = self.M, prm.K, prm.T, prm.sub
        # the Lagrange form (10) for all m at once, as the tall product
        # X^T (M*sub x (K+T)) @ share_matrix^T ((K+T) x N): K data
        # sub-vectors then T noise ones per (m, coordinate); the tall
        # orientation runs the matmul kernel on 16-row panels (the wide one,
        # N = 5 rows, was 20x slower)
        XT = np.empty((M * sub, K + T), dtype=np.uint64)
        XT[:, :K] = H.reshape(M, K, sub).transpose(0, 2, 1).reshape(M * sub, K)
        XT[:, K:] = uniform(T * M * sub, prm.p).reshape(M * sub, T)
        YT = linalg._matmul_reduced(XT, np.ascontiguousarray(prm.share_matrix.T), prm.p)
        out = []
        for v in range(prm.N):
            y = np.ascontiguousarray(YT[:, v])
            if v != self.index:
                self._pad(v, _domain(rnd, "share", self.index, v)).xor_into(y, y)
            out.append(Message("share", self.index, v, rnd, 0, y.reshape(M, sub)))
        return out

    def receive_shares(self, msgs) -> None:
        """y_v = sum_n y_{n,v} (eq. 12), removing the pads."""
        prm = self.params
        msgs = list(msgs)
        if sorted(m.sender for m in msgs) != list(range(prm.N)):
            raise ValueError("need exactly one share from every client")
        rnds = {m.round for m in msgs}
        if len(rnds) != 1:
            raise ValueError("shares from different rounds")
        rnd = rnds.pop()
        acc = np.zeros((self.M, prm.sub), dtype=np.uint64)
        for m in msgs:
            if m.kind != "share" or m.receiver != self.index:
                raise ValueError("not a share for this client")
            if m.data.shape != acc.shape:
                raise ValueError(f"share has shape {m.data.shape}, expected {acc.shape}")
            y = _u64(m.data)
            if m.sender != self.index:
                y = self._pad(m.sender, _domain(rnd, "share", m.sender, self.index)).xor_into(
                    np.empty_like(y), y, prm.p, check=True)
            acc = field.add(acc, y, prm.p)
        self._y, self._y_round, self._y_resp, self._y_packed = acc, rnd, None, None

    # --- coded queries (Sec. 4.3)
    def blocks(self, block_size: int) -> list:
        """Own entities (indices into ``ids``) in query blocks."""
        b = check_int(block_size, "block_size")
        if b < 1:
            raise ValueError("block_size must be >= 1")
        n = len(self.ids)
        return [np.arange(i, min(i + b, n)) for i in range(0, n, b)]

    def queries(self, rnd: int, block: int, members) -> list:
        """q_{n,v,e} for the entities ``members`` (indices into ``ids``) and
        every v (eq. 16), padded for their receivers; rows follow ``members``.

        rho_{n,e}^m(alpha_v) = [e_m = e] sum_{i<=K} l_i(alpha_v)
        + sum_{i>K} z^{m,i} l_i(alpha_v) (eq. 15), the z from this client's
        secret stream.  Independent of embeddings: computable offline.

        Deviation (pinned by ``tests/test_secea.py``): the query sent to v is
        eq. (16)'s divided by c_v = l_{K+1}(alpha_v) (``query_scale``, public
        and nonzero), and v answers with c_v y_v in place of y_v (its share is
        scaled once per round), so A_{v,n,e} = <q / c_v, c_v y_v> is exactly
        eq. (20)'s.  Any coalition's view is a public bijection of its view in
        the paper's protocol, so privacy is unchanged; for T = 1 the query is
        z + (onehot / c_v) e_e, with no multiplication per query entry."""
        return list(self.iter_queries(rnd, block, members))

    def iter_queries(self, rnd: int, block: int, members):
        """``queries`` one receiver at a time (v = 0 .. N-1).

        The queries of all receivers are built together, a tile of
        ``tuning.SECEA_QUERY_TILE_ELEMS`` entries at a time, so the random
        rows z (eq. 15) are drawn into cache-sized tiles and read from cache
        by every receiver's pad instead of from memory (peak memory: the N
        queries of the block).  z^{.,t} is the stream of domain "query-z"
        (t = 0) or "query-z<t>" (t >= 1) of this client's query seed."""
        prm = self.params
        members = np.asarray(members, dtype=np.int64)
        B, M, T, N, p = len(members), self.M, prm.T, prm.N, prm.p
        if B == 0 or members.min() < 0 or members.max() >= len(self.ids):
            raise ValueError(f"members must be indices of this client's {len(self.ids)} entities")
        self._once((rnd, "query", block))
        gens = [Prg(self._query_seed, _domain(rnd, "query-z" + (str(t) if t else ""),
                                              self.index, self.index, block)) for t in range(T)]
        sent_coefs, sent_onehot = prm.query_sent
        coefs = [[int(x) for x in sent_coefs[v]] for v in range(N)]
        pads = {v: self._pad(v, _domain(rnd, "query", self.index, v, block))
                for v in range(N) if v != self.index}
        flat_pos = np.arange(B) * M + self.positions[members]
        qs = [np.empty(B * M, dtype=np.uint64) for _ in range(N)]
        zsel = np.empty((T, B), dtype=np.uint64)           # z at the one-hot entries
        rows = max(1, tuning.SECEA_QUERY_TILE_ELEMS // M)
        Z = np.empty((T, min(B, rows) * M), dtype=np.uint64)
        for r0 in range(0, B, rows):
            r1 = min(B, r0 + rows)
            lo, hi = r0 * M, r1 * M
            Zt = Z[:, :hi - lo]
            for t in range(T):
                gens[t].field_into(Zt[t], p)
            zsel[:, r0:r1] = Zt[:, flat_pos[r0:r1] - lo]
            for v in range(N):
                # streaming stores: the queries go to memory, not read back here
                base = self._query_base(Zt, coefs[v])
                if v != self.index:
                    pads[v].xor_into(qs[v][lo:hi], base, stream=True)
                else:
                    copy_stream(qs[v][lo:hi], base)
        for v in range(N):
            # the B one-hot entries, fixed up through the same keystream words
            val = np.ascontiguousarray(self._query_base(zsel, coefs[v]))
            one = np.full(B, sent_onehot[v], dtype=np.uint64)
            q = qs[v]
            if v != self.index:
                ks = q[flat_pos] ^ val
                q[flat_pos] = field.add(val, one, p) ^ ks
            else:
                q[flat_pos] = field.add(val, one, p)
            qs[v] = None                       # the caller owns it from here
            yield Message("query", self.index, v, rnd, block, q.reshape(B, M))

    def _query_base(self, Z, c):
        """sum_t c_t Z_t: eq. (15)'s random part at one alpha_v, divided by
        c_v (``SecEAParams.query_sent``, so c[0] = 1: for T = 1 it is Z[0]
        itself, and no query entry is multiplied)."""
        p = self.params.p
        base = Z[0]
        for t in range(1, len(c)):
            base = field.add(base, field.mul(Z[t], c[t], p), p)
        return base

    def response_share(self) -> np.ndarray:
        """c_v y_v (M x sub), c_v = ``params.query_scale[v]``: the right
        operand of this client's response products, since queries arrive
        divided by c_v (``iter_queries``).  Computed once per round."""
        if self._y is None:
            raise ValueError("no shares received yet")
        if self._y_resp is None:
            self._y_resp = field.mul(self._y, int(self.params.query_scale[self.index]), self.params.p)
        return self._y_resp

    def prepare_responses(self) -> None:
        """Pack c_v y_v for this round's response products now rather than
        at the first answer.  Called before worker processes fork, the packed
        operand is then one copy in memory that every worker reads (and
        shares the L3 cache for), instead of one copy packed per worker."""
        if self._y_packed is None:
            self._y_packed = linalg.PackedRight(self.response_share(), self.params.p)

    def answer(self, msg: Message) -> Message:
        """A_{v,n,e} = <q_{n,v,e}, y_v> for every row of a query (the response
        product on the matmul kernel), padded for the querier.  Each
        (round, querier, block) is answered once; a repeat raises ValueError."""
        prm = self.params
        if msg.kind != "query" or msg.receiver != self.index:
            raise ValueError("not a query for this client")
        if self._y is None or msg.round != self._y_round:
            raise ValueError(f"no shares for round {msg.round}")
        Q = msg.data
        if Q.ndim != 2 or Q.shape[1] != self.M:
            raise ValueError(f"query must have {self.M} columns, got shape {Q.shape}")
        n = msg.sender
        if not 0 <= n < prm.N:
            raise ValueError(f"query from unknown client {n} (N = {prm.N})")
        # one answer per (round, querier, block): a second one would carry the
        # same response pad, and two answers to queries the relay altered
        # (the query pad is an XOR stream) would differ by y_v times the change
        self._once((msg.round, f"response to {n}", msg.block))
        Q = _u64(Q)
        self.prepare_responses()         # packed once per round for every query block
        t0 = time.perf_counter()
        if n != self.index:
            # decrypted 16 rows at a time into cache and multiplied from there
            # (entries checked < p): the plaintext query never goes to memory
            try:
                A = self._y_packed.mul_decrypt(
                    Q, self._pad(n, _domain(msg.round, "query", n, self.index, msg.block)),
                    threads=self.threads)
            except linalg.DecryptedRangeError:
                raise ValueError("query entries must be < p") from None
        else:
            if Q.size and int(Q.max()) >= prm.p:
                raise ValueError("query entries must be < p")
            A = self._y_packed.mul(Q, threads=self.threads, check=False)
        self.product_seconds += time.perf_counter() - t0
        self._pad(n, _domain(msg.round, "response", self.index, n, msg.block)).field_into(
            A, prm.p, base=A)
        return Message("response", self.index, n, msg.round, msg.block, A)

    def decode(self, responses, members, *, verify: bool = False) -> DecodeResult:
        """From the N noised responses of one block (``None`` for a dropped
        one): the sums sum_v h^_{v,e} (eq. 22) as (sums: (B, d) int64
        quantized, counts: (B,) int64) and the positions of faulty responses,
        as a ``DecodeResult`` (that tuple, plus ``checked`` / ``redundancy``).

        The responses of one entity are evaluations of a polynomial with
        k = 2(K+T-1)+1 coefficients (eq. 21): interpolation when every
        response is present and consistent, Reed-Solomon decoding otherwise,
        which corrects e corrupted and s dropped responses when
        2e + s <= N - k and names the corrupted ones in ``faulty``.  With
        exactly k responses (N - s = k: no redundancy, e.g. odd N with the
        default K) any values interpolate: a corrupted response is neither
        corrected nor detected, unless it happens to push a decoded count
        outside [1, N].  Such a result has ``checked = False``;
        ``verify=True`` refuses it with ``DecodingError`` (a ValueError).
        Fewer than k responses raise ``DecodingError``."""
        prm = self.params
        responses = list(responses)
        if len(responses) != prm.N:
            raise ValueError(f"need N = {prm.N} response slots (None for missing)")
        B = len(members)
        Y = np.zeros((prm.N, B * prm.sub), dtype=np.uint64)
        present = np.ones(prm.N, dtype=bool)
        for v, m in enumerate(responses):
            if m is None:
                present[v] = False
                continue
            if m.kind != "response" or m.receiver != self.index or m.sender != v:
                raise ValueError(f"slot {v}: not client {v}'s response to client {self.index}")
            if m.data.shape != (B, prm.sub):
                raise ValueError(f"response of client {v} has shape {m.data.shape}, "
                                 f"expected {(B, prm.sub)}")
            try:
                self._pad(v, _domain(m.round, "response", v, self.index, m.block)).field_into(
                    Y[v].reshape(B, prm.sub), prm.p, base=_u64(m.data), negate=True)
            except ValueError:
                raise ValueError(f"response of client {v} has entries >= p") from None
        full, faulty, redundancy = decode_values(prm, Y, present, B, verify=verify,
                                                 who=f"client {self.index}")
        sums = prm.fx.decode_int(np.ascontiguousarray(full[:, :prm.d]))
        counts = full[:, prm.d].astype(np.int64)
        if ((counts < 1) | (counts > prm.N)).any():
            raise DecodingError("decoded entity counts outside [1, N]: responses were corrupted "
                                "beyond what could be corrected")
        return DecodeResult(sums, counts, faulty, redundancy)

    def finish(self, sums, counts) -> dict:
        """Global embeddings (eq. 5) for this client's own entities."""
        prm = self.params
        avg = sums.astype(np.float64) / prm.fx.scale / counts[:, None]
        return {x: avg[i] for i, x in enumerate(self.ids)}


# ----------------------------------------------------------------- server
class Server:
    """The honest-but-curious server: sums (eq. 4), relays, noises (eq. 20)."""

    def __init__(self, params: SecEAParams):
        if not isinstance(params, SecEAParams):
            raise TypeError("params must be SecEAParams")
        self.params = params
        self._noise_seed = random_seed(32)
        self.union = None
        self._psi = None          # (round, n, block, size), psi evaluations of that block

    def __reduce__(self):
        return party_reduce(self)

    def psu_sum(self, uploads) -> Message:
        uploads = list(uploads)
        N = self.params.N
        if sorted(m.sender for m in uploads) != list(range(N)):
            raise ValueError("need exactly one union upload from every client")
        L = uploads[0].data.size
        if L == 0 or L % (2 * N):
            raise ValueError("union uploads must have 2Nk entries")
        tot = np.zeros(L, dtype=np.uint64)
        for m in uploads:
            if m.kind != "psu" or m.data.size != L:
                raise ValueError("union uploads differ in kind or length")
            v = np.ascontiguousarray(m.data.reshape(-1))
            if int(v.max()) >= PSU_PRIME:
                raise ValueError("union upload entries must be < p")
            tot = field.add(tot, v, PSU_PRIME)
        self.union = _union_from_sum(tot.tobytes(), PSU_PRIME)[0]
        return Message("psu_sum", _SERVER, _SERVER, uploads[0].round, 0, tot.reshape(1, -1))

    def noise(self, msg: Message) -> Message:
        """Y_{v,n,e} = A_{v,n,e} + psi_{n,e}(alpha_v) (eq. 20), added to the
        padded response (the pad commutes with the addition)."""
        prm = self.params
        if msg.kind != "response":
            raise ValueError("the server noises responses only")
        n, v = msg.receiver, msg.sender
        if not (0 <= n < prm.N and 0 <= v < prm.N):
            raise ValueError("response between unknown clients")
        A = np.array(msg.data, dtype=np.uint64, order="C")
        if A.ndim != 2 or A.shape[1] != prm.sub:
            raise ValueError(f"response must have {prm.sub} columns")
        if A.size and int(A.max()) >= prm.p:
            raise ValueError("response entries must be < p")
        key = (msg.round, n, msg.block, A.size)
        if self._psi is None or self._psi[0] != key:
            # psi_{n,e}(alpha_v) for every responder v at once: the K+2T-1
            # random streams of (round, n, block) are drawn once and the
            # evaluations are one N-row product; kept until the next block
            m = prm.K + 2 * prm.T - 1
            g = Prg(self._noise_seed, _domain(msg.round, "psi", n, n, msg.block))
            Z = np.empty((m, A.size), dtype=np.uint64)
            for i in range(m):
                g.field_into(Z[i], prm.p)
            self._psi = (key, linalg._matmul_reduced(prm.noise_matrix, Z, prm.p))
        psi = self._psi[1][v].reshape(A.shape)
        return Message("response", v, n, msg.round, msg.block, field.add(A, psi, prm.p))


# ----------------------------------------------------------------- local drivers
def _make_parties(sets, params):
    clients = [Client(i, params, s) for i, s in enumerate(sets)]
    keys = [c.public_key for c in clients]
    for c in clients:
        c.set_peer_keys(keys)
    return clients, Server(params)


def _run_union(clients, server, rnd=0):
    k = max(len(c.ids) for c in clients)
    total = server.psu_sum([c.psu_upload(k, rnd) for c in clients])
    for c in clients:
        c.psu_finish(total)
    return total


@dataclass(frozen=True)
class _UnionParams(SecEAParams):
    """Parameters of the private entity union alone (Tang, Zhu, Li, Zhang and
    Sun, "Fully Privacy-Preserving Federated Representation Learning via
    Secure Embedding Aggregation", arXiv 2022, Sec. 4.1, eqs. 3-4): it uses only N (the 2Nk masked Laurent terms and the pairwise masks), no
    T, K, evaluation points or embeddings, so any N >= 2 is valid, while
    ``SecEAParams`` needs K = floor((N+1)/2) - T >= 1 (eq. 7), which N = 2
    cannot meet.  Only for ``entity_union``: parties built on it cannot share
    or query."""

    def __post_init__(self):
        N = check_int(self.N, "N")
        if N < 2:
            raise ValueError(f"the entity union needs N >= 2 clients, got N = {N}")
        object.__setattr__(self, "N", N)


def entity_union(sets, params: SecEAParams | None = None) -> np.ndarray:
    """Run the private entity union (Sec. 4.1) for all parties locally; returns
    the union as sorted Goldilocks hashes (``hash_ids`` of the ids).  Any
    N = len(sets) >= 2 works: the union has no collusion threshold T."""
    if isinstance(sets, (str, bytes, bytearray, memoryview)):
        raise TypeError("sets must be a list of entity collections, one per client")
    sets = [_entity_list(s, f"sets[{i}]") for i, s in enumerate(sets)]
    if len(sets) < 2:
        raise ValueError(f"the entity union needs N >= 2 clients, got {len(sets)}")
    if params is None:
        params = _UnionParams(N=len(sets), d=1)
    elif params.N != len(sets):
        raise ValueError(f"params.N = {params.N} but {len(sets)} sets were given")
    clients, server = _make_parties(sets, params)
    _run_union(clients, server)
    return clients[0].union


def aggregate(local, T: int = 1, precision: int = 8, *, d=None, K=None, bound: float = 100.0,
              block_size=None, drop=None, require_checked: bool = False) -> list:
    """SecEA end to end for all parties locally (union, sharing, queries,
    responses, noise, decoding).  ``local[n]``: client n's dict entity id ->
    1-D float array.  Returns one dict per client with the global embedding
    (eq. 5) of each of its own entities.  ``drop``: optional set of
    (querier, responder) pairs whose responses are lost (tests redundancy).
    ``require_checked``: refuse (``DecodingError``) results decoded without
    redundancy, which no decoder can check (``Client.decode``)."""
    from .runner import run_round   # local import: runner imports this module
    res = run_round(local, T=T, precision=precision, K=K, bound=bound, block_size=block_size,
                    processes=1, drop=drop, require_checked=require_checked)
    return res.embeddings
