"""Public parameters and pure encoders of objective-hiding one-shot FL
(Egger, Urbanke, Bitar (2025), One-shot federated learning with objective
hiding): the task assignment (Sec. III), ``OSFLParams`` (Sec. V-a/V-b: field,
k_C, K, partitions, evaluation points alpha^i, the dual-GRS weights nu of
Sec. V-c, the decoder of Sec. V-d, the window basis of the symmetric-privacy
mask of Sec. VI), the encoders with explicit randomness (eq. 1, eq. 2, the
Sec. VI mask) and the small helpers and checks the other modules of the
package share.  Deviations 1-5 are described in the package docstring.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ... import field, linalg, poly, tuning
from ..._checks import check_elements, check_int, check_prime
from ...field import EMBEDDING_PRIME
from ...nt import primitive_root
from ...prg import Prg, random_seed

__all__ = ["Assignment", "OSFLParams", "encode_shares", "query_values", "symmetric_mask"]

_U64 = np.uint64
DOMAIN = b"secea_fast.osfl.v1/"          # domain-separation prefix of every OSFL Prg stream


# ----------------------------------------------------------------- helpers
def check_rng(rng, purpose: bytes) -> Prg:
    """A CSPRNG stream: a given ``Prg`` or a fresh one seeded from ``secrets``."""
    if rng is None:
        return Prg(random_seed(32), DOMAIN + purpose)
    if isinstance(rng, Prg):
        return rng
    raise TypeError(f"rng must be None or a secea_fast.prg.Prg (a CSPRNG stream), got "
                    f"{type(rng).__module__}.{type(rng).__name__}: numpy.random and random are not "
                    f"cryptographic and are refused for secrets")


def powers(x: int, count: int, p: int) -> list:
    out, v = [], 1 % p
    for _ in range(count):
        out.append(v)
        v = v * x % p
    return out


def _inv_prod_diffs(X: np.ndarray, p: int) -> np.ndarray:
    """For each row of X (r x m, distinct entries): 1 / prod_{b != a} (X[a] - X[b])."""
    r, m = X.shape
    prod = np.ones((r, m), dtype=_U64)
    one = np.ones((r, m), dtype=_U64)
    for b in range(m):
        d = field.sub(X, np.ascontiguousarray(np.repeat(X[:, b:b + 1], m, axis=1)), p)
        d[:, b] = one[:, b]
        prod = field.mul(prod, d, p)
    return field.batch_inv(prod, p)


def lincomb(weights, rows, length: int, p: int) -> np.ndarray:
    """sum_k weights[k] * rows[k] (mod p) for reduced uint64 rows of ``length``.

    The answer is a 1 x |I(i)| by |I(i)| x (P c) product: memory bound, one
    output row.  The matmul kernel runs such single-row products about 3x
    slower than this loop of C field kernels over the rows (1.64 ms vs 0.58 ms
    for 11 x 47,620 mod EMBEDDING_PRIME, best of 20, measured 2026-11-21 on the
    Zen 5 machine of docs/PERFORMANCE.md), so one-row products take this route."""
    out = None
    for w, r in zip(weights, rows):
        w = int(w)
        if w == 0:
            continue
        term = field.mul(r, w, p) if w != 1 else r
        if out is None:
            out = term.copy() if term is r else term
        else:
            out = field.add(out, term, p)
    return np.zeros(length, dtype=_U64) if out is None else out


def evaluate(V, C, p, threads=None) -> np.ndarray:
    """V @ C (mod p) for the evaluation of share polynomials: V (receivers x
    k) Vandermonde rows, C (k x columns) coefficients.  Up to
    ``tuning.OSFL_ROWS_MAX_COEFFS`` coefficients one ``lincomb`` per
    receiver, else ``linalg.matmul``: with 2-3 coefficients the vector field
    kernels over whole rows beat the product's reduction of every output
    (docs/PERFORMANCE.md, "One-shot FL: the competing approaches")."""
    rows, k = V.shape
    if k > tuning.OSFL_ROWS_MAX_COEFFS:
        return linalg.matmul(V, C, p, threads=threads)
    out = np.empty((rows, C.shape[1]), dtype=_U64)
    for a in range(rows):
        out[a] = lincomb(V[a], C, C.shape[1], p)
    return out


# ----------------------------------------------------------------- task assignment
class Assignment:
    """Task assignment (Sec. III): binary incidence matrix I (n x T), I[i, t] = 1
    iff client i computes objective t; every column has the same weight rho.

    ``Assignment(incidence)`` validates an arbitrary assignment (clients with no
    objective are allowed: they still answer, so that the federator's download
    pattern does not depend on j); ``Assignment.cyclic(n, T, rho)`` is the
    default: objective t goes to clients floor(t n / T), ..., + rho - 1 (mod n),
    which balances the load (every client gets floor or ceil of rho T / n).

    >>> Assignment.cyclic(4, 2, 3).incidence.astype(int).tolist()
    [[1, 1], [1, 0], [1, 1], [0, 1]]
    """

    __slots__ = ("incidence", "n", "T", "rho", "_clients", "_objectives")

    def __init__(self, incidence: ArrayLike) -> None:
        if isinstance(incidence, Assignment):
            incidence = incidence.incidence
        if not isinstance(incidence, (np.ndarray, list, tuple)):
            raise TypeError(f"incidence must be an n x T 0/1 array, got {type(incidence).__name__}")
        a = np.asarray(incidence)
        if a.dtype.kind not in "biu":
            raise TypeError(f"incidence must hold integers or booleans (0/1), got dtype {a.dtype}")
        if a.ndim != 2:
            raise ValueError(f"incidence must be a 2-D n x T array, got shape {a.shape}")
        n, T = a.shape
        if n < 1 or T < 1:
            raise ValueError(f"incidence must have n >= 1 rows and T >= 1 columns, got shape {a.shape}")
        if a.size and not np.isin(a, (0, 1)).all():
            raise ValueError("incidence entries must be 0 or 1")
        a = a.astype(bool)
        weights = a.sum(axis=0)
        if (weights != weights[0]).any():
            raise ValueError(f"every objective must be assigned to the same number rho of clients "
                             f"(constant column weight, Sec. III); column weights are {weights.tolist()}")
        if weights[0] < 1:
            raise ValueError("rho (the column weight) must be >= 1: every objective needs a client")
        a.setflags(write=False)
        self.incidence = a
        self.n, self.T, self.rho = int(n), int(T), int(weights[0])
        self._clients = tuple(tuple(int(i) for i in np.flatnonzero(a[:, t])) for t in range(T))
        self._objectives = tuple(tuple(int(t) for t in np.flatnonzero(a[i])) for i in range(n))

    @classmethod
    def cyclic(cls, n: int, T: int, rho: int) -> Assignment:
        n, T, rho = check_int(n, "n"), check_int(T, "T"), check_int(rho, "rho")
        if n < 1 or T < 1:
            raise ValueError(f"need n >= 1 and T >= 1, got n={n}, T={T}")
        if not 1 <= rho <= n:
            raise ValueError(f"rho must satisfy 1 <= rho <= n = {n}, got {rho}")
        inc = np.zeros((n, T), dtype=np.uint8)
        for t in range(T):
            start = t * n // T
            inc[[(start + a) % n for a in range(rho)], t] = 1
        return cls(inc)

    def clients(self, t: int) -> tuple[int, ...]:
        """I(e_t): the clients computing objective t, increasing."""
        return self._clients[t]

    def objectives(self, i: int) -> tuple[int, ...]:
        """I(i): the objectives client i computes, increasing."""
        return self._objectives[i]

    def __eq__(self, other):
        return isinstance(other, Assignment) and np.array_equal(self.incidence, other.incidence)

    def __hash__(self):
        return hash((self.n, self.T, self.incidence.tobytes()))

    def __repr__(self):
        return f"Assignment(n={self.n}, T={self.T}, rho={self.rho})"


# ----------------------------------------------------------------- parameters
class OSFLParams:
    """Public parameters of one retrieval: assignment, collusion bounds, label
    shape, field.

    ``assignment``: an ``Assignment`` or an n x T 0/1 incidence array;
    ``z_s``, ``z_q`` >= 0; ``s`` labels of ``c`` classes per (client, objective);
    ``p``: the prime q of the paper (default ``EMBEDDING_PRIME``, the matmul
    kernel's fastest field); ``levels``: gamma, the number of quantization
    levels of a label entry (entries in [0, gamma - 1]), or None for raw
    non-negative integer labels (then the caller guarantees that sums stay
    below p; ``run_round`` checks it).

    Raises ValueError when k_C = (rho - z_q + z_s + 1) / 2 is not an integer,
    when K = k_C - z_s < 1 (rho < z_s + z_q + 1), when n > p - 1 (the points
    alpha^1..alpha^n must be distinct), or when q >= (gamma - 1) n fails.

    >>> P = OSFLParams(Assignment.cyclic(10, 5, 5), 1, 1, s=7, c=3)
    >>> P.k_C, P.K, P.n_partitions, P.cols
    (3, 2, 4, 12)
    """

    def __init__(self, assignment: Assignment | ArrayLike, z_s: int, z_q: int, s: int, c: int, *,
                 p: int = EMBEDDING_PRIME, levels: int | None = None) -> None:
        asg = assignment if isinstance(assignment, Assignment) else Assignment(assignment)
        z_s, z_q = check_int(z_s, "z_s"), check_int(z_q, "z_q")
        s, c = check_int(s, "s"), check_int(c, "c")
        p = check_prime(p)
        if z_s < 0 or z_q < 0:
            raise ValueError(f"z_s and z_q must be >= 0, got z_s={z_s}, z_q={z_q}")
        if s < 1 or c < 1:
            raise ValueError(f"need s >= 1 labels and c >= 1 classes, got s={s}, c={c}")
        rho = asg.rho
        if (rho - z_q + z_s + 1) % 2:
            raise ValueError(f"k_C = (rho - z_q + z_s + 1)/2 must be an integer (Sec. V-b): "
                             f"rho - z_q + z_s must be odd, got rho={rho}, z_s={z_s}, z_q={z_q}")
        k_C = (rho - z_q + z_s + 1) // 2
        K = k_C - z_s
        if K < 1:
            raise ValueError(f"k_C - z_s = (rho - z_s - z_q + 1)/2 must be >= 1: need rho >= z_s + z_q + 1, "
                             f"got rho={rho}, z_s={z_s}, z_q={z_q}")
        if asg.n > p - 1:
            raise ValueError(f"the field is too small: n = {asg.n} clients need n <= p - 1 = {p - 1} "
                             f"distinct points alpha^i")
        if levels is not None:
            levels = check_int(levels, "levels")
            if levels < 2:
                raise ValueError(f"levels (gamma) must be >= 2, got {levels}")
            if p < (levels - 1) * asg.n:
                raise ValueError(f"capacity check q >= (gamma - 1) n failed (Sec. V-a): p = {p} < "
                                 f"({levels} - 1) * {asg.n} = {(levels - 1) * asg.n}; sums of labels would wrap")
        self.assignment = asg
        self.n, self.T, self.rho = asg.n, asg.T, rho
        self.z_s, self.z_q, self.s, self.c, self.p, self.levels = z_s, z_q, s, c, p, levels
        self.k_C, self.K = k_C, K
        self.n_partitions = -(-s // K)          # P of Sec. V-b (s padded to K P)
        self.cols = self.n_partitions * c       # columns of every coefficient matrix
        self.alpha = primitive_root(p)
        pts = powers(self.alpha, asg.n + 1, p)[1:]                 # alpha^1 .. alpha^n
        self.points = np.array(pts, dtype=_U64)
        self.inv_points = field.batch_inv(self.points, p)
        # caches (read-only arrays): per objective t / j, and the two fixed matrices
        self._vand: dict[int, np.ndarray] = {}
        self._nu: dict[int, np.ndarray] = {}
        self._dec: dict[int, np.ndarray] = {}
        self._window: np.ndarray | None = None
        self._qpow: np.ndarray | None = None

    def __repr__(self):
        return (f"OSFLParams(n={self.n}, T={self.T}, rho={self.rho}, z_s={self.z_s}, z_q={self.z_q}, "
                f"s={self.s}, c={self.c}, p={self.p}, k_C={self.k_C})")

    # per-objective public data
    def clients(self, t: int) -> tuple[int, ...]:
        """I(e_t) of the assignment."""
        return self.assignment.clients(t)

    def objectives(self, i: int) -> tuple[int, ...]:
        """I(i) of the assignment."""
        return self.assignment.objectives(i)

    def vandermonde(self, t: int) -> np.ndarray:
        """rho x k_C matrix alpha_i^m (i in I(e_t), m < k_C): evaluation of eq. 1."""
        V = self._vand.get(t)
        if V is None:
            V = poly.vandermonde(self.points[list(self.clients(t))], self.k_C, self.p)
            V.setflags(write=False)
            self._vand[t] = V
        return V

    def nu(self, t: int) -> np.ndarray:
        """nu_{t,i} = prod_{i1 in I(e_t), i1 != i} (alpha_i - alpha_i1)^(-1), for I(e_t) in order."""
        v = self._nu.get(t)
        if v is None:
            X = self.points[list(self.clients(t))][None, :]
            v = _inv_prod_diffs(np.ascontiguousarray(X), self.p)[0]
            v.setflags(write=False)
            self._nu[t] = v
        return v

    def query_powers(self) -> np.ndarray:
        """n x z_q matrix alpha_i^(K + tau - 1), tau = 1..z_q (eq. 2)."""
        if self._qpow is None:
            V = poly.vandermonde(self.points, self.K + self.z_q, self.p)
            self._qpow = np.ascontiguousarray(V[:, self.K:])
            self._qpow.setflags(write=False)
        return self._qpow

    def decoder(self, j: int) -> np.ndarray:
        """D = P^(-1) H (K x n), H[theta - 1, i] = alpha_i^(-theta) (Sec. V-d)."""
        D = self._dec.get(j)
        if D is not None:
            return D
        p, K = self.p, self.K
        members = list(self.clients(j))
        nu = [int(v) for v in self.nu(j)]
        inv = [int(v) for v in self.inv_points]
        # d_m = sum_{i in I(e_j)} nu_{j,i} alpha_i^(-m), m = 1..K: P[theta, u] = d_(theta - u + 1)
        d = [0] * (K + 1)
        for a, i in enumerate(members):
            x = nu[a]
            for m in range(1, K + 1):
                x = x * inv[i] % p
                d[m] = (d[m] + x) % p
        if d[1] == 0:   # pragma: no cover - impossible for distinct nonzero points (deviation 5)
            raise ArithmeticError("P is singular")
        # P^(-1) is lower triangular Toeplitz with the power series inverse of sum_m d_m x^(m-1)
        e = [0] * K
        d1inv = pow(d[1], p - 2, p)
        for k in range(K):
            acc = (1 if k == 0 else 0) - sum(d[m + 1] * e[k - m] for m in range(1, k + 1))
            e[k] = acc % p * d1inv % p
        Pinv = np.zeros((K, K), dtype=_U64)
        for th in range(K):
            for u in range(th + 1):
                Pinv[th, u] = e[th - u]
        H = np.empty((K, self.n), dtype=_U64)
        H[0] = self.inv_points
        for th in range(1, K):
            H[th] = field.mul(H[th - 1], self.inv_points, p)
        D = linalg.matmul(Pinv, H, p)
        D.setflags(write=False)
        self._dec[j] = D
        return D

    def window_basis(self) -> np.ndarray:
        """(n - K) x (K + 1) array B: b_f[f + a] = B[f, a] spans the kernel W of
        the reconstruction functionals (deviation 1 in the package docstring)."""
        if self._window is None:
            K, n, p = self.K, self.n, self.p
            if n - K <= 0:
                B = np.zeros((0, K + 1), dtype=_U64)
            else:
                X = np.stack([self.inv_points[f:f + K + 1] for f in range(n - K)])
                lam = _inv_prod_diffs(np.ascontiguousarray(X), p)
                P = np.stack([self.points[f:f + K + 1] for f in range(n - K)])
                B = field.mul(lam, np.ascontiguousarray(P), p)
            B.setflags(write=False)
            self._window = B
        return self._window

    # label layout
    def coefficient_rows(self, labels: np.ndarray) -> np.ndarray:
        """K x (P c) matrix of one (client, objective)'s labels (strided partition,
        deviation 3): entry [u, p c + k] is label u P + p, class k (0 if padded)."""
        C = np.zeros((self.K, self.cols), dtype=_U64)
        C.reshape(-1)[: self.s * self.c] = labels.reshape(-1)
        return C

    def labels_from_rows(self, Y: np.ndarray) -> np.ndarray:
        """Inverse of ``coefficient_rows``: (s, c) from K x (P c)."""
        return Y.reshape(-1)[: self.s * self.c].reshape(self.s, self.c)


def check_labels_2d(lab, params: OSFLParams, name: str) -> np.ndarray:
    if not isinstance(lab, np.ndarray):
        raise TypeError(f"{name} must be a numpy integer array, got {type(lab).__name__}")
    if lab.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype (quantize soft labels with osfl.quantize), "
                        f"got {lab.dtype}")
    if lab.shape != (params.s, params.c):
        raise ValueError(f"{name} must have shape (s, c) = {(params.s, params.c)}, got {lab.shape}")
    if lab.size:
        lo, hi = int(lab.min()), int(lab.max())
        if lo < 0:
            raise ValueError(f"{name} has a negative entry ({lo}); labels are non-negative integers")
        if hi >= params.p:
            raise ValueError(f"{name} has an entry {hi} >= p = {params.p}")
        if params.levels is not None and hi >= params.levels:
            raise ValueError(f"{name} has an entry {hi} >= levels = {params.levels} (entries must be "
                             f"in [0, gamma - 1])")
    return lab


# ----------------------------------------------------------------- pure encoders (explicit randomness)
def encode_shares(params: OSFLParams, t: int, labels: ArrayLike, randomness: np.ndarray,
                  threads: int | None = None) -> np.ndarray:
    """Eq. 1 for one (client, objective t): f_p(x) = sum_{u<K} x^u y_{p,u} +
    sum_{tau<z_s} x^(K + tau) r_{p,tau}, evaluated at alpha_i for every i in
    I(e_t).  ``labels``: (s, c) integers; ``randomness``: (z_s, P, c) uniform
    secret field elements.  Returns (rho, P, c): row a is the share sent to the
    a-th client of I(e_t).  (``Client.share`` draws the randomness itself; this
    function exists for tests and audits.)"""
    t = check_objective(t, params.T)
    labels = check_labels_2d(labels, params, "labels")
    r = check_elements(randomness, params.p, "randomness", ndim=3)
    if r.shape != (params.z_s, params.n_partitions, params.c):
        raise ValueError(f"randomness must have shape (z_s, P, c) = "
                         f"{(params.z_s, params.n_partitions, params.c)}, got {r.shape}")
    C = np.empty((params.k_C, params.cols), dtype=_U64)
    C[:params.K] = params.coefficient_rows(labels)
    C[params.K:] = r.reshape(params.z_s, params.cols)
    S = evaluate(params.vandermonde(t), C, params.p, threads=threads)
    return S.reshape(params.rho, params.n_partitions, params.c)


def query_values(params: OSFLParams, j: int, k: np.ndarray) -> np.ndarray:
    """Eq. 2 with scalar randomness (deviation 2): Q[t, i] = q^(t,j)(alpha_i) =
    delta_{tj} + sum_{tau<z_q} alpha_i^(K + tau) k[t, tau].  ``k``: (T, z_q)
    uniform secret field elements.  Client i receives Q[t, i] for t in I(i)."""
    j = check_objective(j, params.T)
    k = check_elements(k, params.p, "k", ndim=2)
    if k.shape != (params.T, params.z_q):
        raise ValueError(f"k must have shape (T, z_q) = {(params.T, params.z_q)}, got {k.shape}")
    if params.z_q:
        Q = linalg.matmul(k, np.ascontiguousarray(params.query_powers().T), params.p)
    else:
        Q = np.zeros((params.T, params.n), dtype=_U64)
    Q[j] = field.add(Q[j], 1 % params.p, params.p)
    return Q


def symmetric_mask(params: OSFLParams, S: np.ndarray) -> np.ndarray:
    """The symmetric-privacy mask (deviation 1): m_i = sum_f b_f[i] S[f] for the
    window basis b_f of W.  ``S``: (n - K, P, c) shared uniform randomness.
    Returns (n, P, c); sum_i alpha_i^(-theta) m_i = 0 for theta = 1..K."""
    S = check_elements(S, params.p, "S", ndim=3)
    nK = max(params.n - params.K, 0)
    if S.shape != (nK, params.n_partitions, params.c):
        raise ValueError(f"S must have shape (n - K, P, c) = {(nK, params.n_partitions, params.c)}, got {S.shape}")
    B = params.window_basis()
    Bfull = np.zeros((params.n, nK), dtype=_U64)
    for f in range(nK):
        Bfull[f:f + params.K + 1, f] = B[f]
    if nK == 0:
        return np.zeros((params.n, params.n_partitions, params.c), dtype=_U64)
    M = linalg.matmul(Bfull, S.reshape(nK, params.cols), params.p)
    return M.reshape(params.n, params.n_partitions, params.c)


def check_objective(j, T) -> int:
    j = check_int(j, "objective")
    if not 0 <= j < T:
        raise ValueError(f"objective index must be in [0, T = {T}), got {j}")
    return j
