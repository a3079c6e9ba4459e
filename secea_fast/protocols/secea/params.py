"""SecEA parameters (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 4 and 6): the fields,
the evaluation points alpha, beta (eq. 10), the Lagrange and noise matrices
behind sharing, queries and decoding, and the hashing of entity ids into
the union field."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field as dc_field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ... import poly
from ..._checks import check_int, check_prime
from ...field import EMBEDDING_PRIME, GOLDILOCKS
from ...fixedpoint import FixedPoint
from .._inputs import EntityId, id_bytes

PSU_PRIME = GOLDILOCKS
_HASH_LABEL = b"secea_fast.secea.entity.v1"


def hash_ids(ids: Iterable[EntityId], p: int = PSU_PRIME) -> NDArray[np.uint64]:
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
        b = id_bytes(x)
        h = hashlib.sha256(_HASH_LABEL + len(b).to_bytes(4, "big") + b).digest()
        out[i] = int.from_bytes(h[:16], "big") % p
    if len(np.unique(out)) != len(out):
        seen: dict[int, EntityId] = {}
        for x, hx in zip(ids, out.tolist()):
            if hx in seen:
                if id_bytes(seen[hx]) == id_bytes(x):
                    raise ValueError(f"entity id {x!r} is repeated")
                raise ValueError(f"hash collision between entity ids {seen[hx]!r} and {x!r}")
            seen[hx] = x
    return out



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
    and disjoint.  After construction ``K``, ``alphas`` and ``betas`` are
    always set (an int and tuples of ints)."""
    N: int
    d: int
    T: int = 1
    precision: int = 8
    bound: float = 100.0
    # None selects the default, resolved in __post_init__: the type checker sees the
    # resolved attributes and the constructor below that still accepts None
    if TYPE_CHECKING:
        K: int = dc_field(init=False)
    else:
        K: int | None = None
    p: int = EMBEDDING_PRIME
    if TYPE_CHECKING:
        alphas: tuple[int, ...] = dc_field(init=False)
        betas: tuple[int, ...] = dc_field(init=False)
    else:
        alphas: tuple | None = None
        betas: tuple | None = None
    fx: FixedPoint = dc_field(init=False, repr=False, compare=False)

    if TYPE_CHECKING:
        def __init__(self, N: int, d: int, T: int = 1, precision: int = 8, bound: float = 100.0,
                     K: int | None = None, p: int = EMBEDDING_PRIME, alphas: tuple | None = None,
                     betas: tuple | None = None) -> None: ...

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

# N alphas and K + T >= 2 betas are distinct nonzero elements of F_p (eq. 10)
# and p < 2^64, whose largest prime is 2^64 - 59: no client index reaches this
_MAX_P = (1 << 64) - 59


def max_clients(p: int | None = None) -> int:
    """The most clients a SecEA round over F_p admits: p - 3 (N alphas and at
    least two betas, all distinct and nonzero); for unknown p the bound of the
    largest prime below 2^64.  Client indices on the wire are below it."""
    return (_MAX_P if p is None else int(p)) - 3
