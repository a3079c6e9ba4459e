"""One-shot federated learning with data privacy and objective hiding (seed 004:
Egger, Urbanke, Bitar, "Federated One-Shot Learning with Data Privacy and
Objective-Hiding"): task assignment (Sec. III), McEliece-Sarwate ramp sharing
(Sec. V-b, eq. 1), the graph-based PIR query (eq. 2) answered with dual-GRS
weights (Sec. V-c), reconstruction through A^(theta) and the triangular matrix
P (Sec. V-d), symmetric privacy from the federator (Sec. VI), the Approach 1
baseline (Sec. IV) and the rates of Table I (Sec. VII).

Notation (the paper's, 0-based in code)
---------------------------------------
n clients, T objectives, incidence I (n x T) with column weight rho; client i
labels a public set of s samples with c classes for each objective t in I(i).
z_s: colluding clients the labels are private against; z_q: colluding clients
the objective j is hidden from.  k_C = (rho - z_q + z_s + 1) / 2 is the
dimension of the storage code and K = k_C - z_s the number of labels one share
polynomial carries.  alpha is a generator of F_q and client i (1-based in the
paper) evaluates at alpha_i = alpha^i.

Stages and where the work is
----------------------------
* Sharing (eq. 1): for each t in I(i), client i forms the k_C x (P c)
  coefficient matrix [labels (K rows); fresh uniform randomness (z_s rows)] and
  multiplies it by the rho x k_C Vandermonde matrix of the points of I(e_t):
  one ``linalg.matmul`` per (client, objective), vectorised over all P
  partitions and c classes.  Row a goes to the a-th client of I(e_t).
* Aggregation: each client sums the rho shares it receives per objective,
  F_p^(t)(alpha_i) (Sec. V-b).
* Query (eq. 2): q^(t,j)(x) = delta_{tj} + sum_{tau=1}^{z_q} x^(K+tau-1) k_tau^(t);
  client i in I(e_t) receives q^(t,j)(alpha_i).
* Answer (Sec. V-c): A^i = sum_{t in I(i)} nu_{t,i} q^(t,j)(alpha_i) F^(t)(alpha_i)
  with nu_{t,i} = prod_{i1 in I(e_t), i1 != i} (alpha_i - alpha_i1)^(-1): one
  weighted sum of the client's |I(i)| stored rows (P c elements each).
* Reconstruction (Sec. V-d): A^(theta) = sum_i alpha_i^(-theta) A^i for
  theta = 1..K equals P (ybar_1..ybar_K)^T, P lower triangular Toeplitz with
  P[theta, u] = sum_{i in I(e_j)} nu_{j,i} alpha_i^(-(theta - u + 1)); the
  federator applies the K x n matrix D = P^(-1) H (H[theta, i] = alpha_i^(-theta))
  to the n x (P c) answers: one ``linalg.matmul``.

Every interference term of the answers is sum_{i in I(e_t)} nu_{t,i}
alpha_i^m for 0 <= m <= rho - 2, which is zero (nu is the dual GRS multiplier
of the rho points), because K + (k_C - 1) + (z_q - 1) = rho - 1 (Appendix B).

Deviations from the paper (each pinned by a test in tests/test_osfl.py)
------------------------------------------------------------------------
1. Symmetric privacy (Sec. VI).  The paper adds one shared polynomial
   R_p(x) = sum_{tau=1}^{k_C+z_q-1} x^(K+tau-1) s_{p,tau}, evaluated at alpha_i
   and not weighted by nu, to every answer.  As printed this breaks decoding
   (sum_i alpha_i^(-theta) alpha_i^(K+tau-1) over all n clients is not zero
   in general) and a (k_C + z_q - 1)-dimensional pad cannot hide interference
   that spans up to n - K dimensions.  Implemented instead: the clients add a
   mask m that is uniform on W = {v in F^n : sum_i alpha_i^(-theta) v_i = 0,
   theta = 1..K}, the kernel of the federator's reconstruction functionals.
   The interference of the answers lies in W (that is what makes decoding
   work), so answers = (part fixed by ybar_j) + (interference + m) where the
   second term is uniform on W whatever the labels: the federator's view
   depends on the labels only through the requested sum (Theorem 4).  W is
   spanned by n - K vectors b_f supported on K + 1 consecutive clients
   f..f+K (the dual codeword of an RS code of dimension K on those points:
   b_f[i] = alpha_i / prod_{i1 != i} (alpha_i^(-1) - alpha_i1^(-1))), so each
   client expands at most K + 1 shared streams s_f (one per window containing
   it, P c elements each, from ``Prg(shared_seed, session || f)``) and adds
   sum_f b_f[i] s_f: fewer than the k_C + z_q - 1 coefficients of R_p
   whenever z_s + z_q >= 2.  (Minimum weight of W's vectors is K + 1, so no
   basis is sparser.)
2. Query randomness (eq. 2) is one scalar k_tau^(t) per objective, shared by
   all partitions and classes (the paper draws k_{p,tau}^(t) in F_q^c per
   partition).  delta = 1 times a vector is the same as the all-ones vector
   elementwise, the privacy argument (Appendix A) only uses that any z_q
   evaluations of each q^(t) are uniform and independent across t, and the
   upload per client drops from |I(i)| P c to |I(i)| field elements.
3. Partitions are strided: partition p holds labels u P + p, u = 0..K-1 (the
   paper splits the s labels into P groups of size K in any way; s is padded
   with zero labels to K P).  The coefficient matrix is then a reshape of the
   (s, c) label array, no transpose.
4. Eq. 1 reads "for all tau in [k_C - z_s]" for r_{i,p,tau}: the randomness
   has z_s coefficients (tau in [z_s]); r' sums over I(e_t), not [n]; the
   answer of Sec. VI sums over t in I(i), not [T].
5. Invertibility of P needs only distinct nonzero points: its diagonal is
   sum_{i in I(e_j)} nu_{j,i} alpha_i^(-1) = (-1)^(rho+1) / prod_{i in I(e_j)} alpha_i
   (sum of residues of 1 / (x prod (x - alpha_i))), so the field condition
   q > rho + k_C - z_s - 1 of Lemma 2 is not required; we require
   n <= q - 1 (distinct alpha^i) and, for quantized labels, the capacity check
   q >= (gamma - 1) n of Sec. V-a (which, q being prime, implies that the sum of
   rho <= n labels never wraps).

Measured (bench/test_osfl.py, n = 100, T = 20, rho = 51, z_s = z_q = 5,
s = 10^5, c = 10, EMBEDDING_PRIME, 2-core Zen 5, 2026-11-21; ratios are
matmul seconds on the stage's own product shape over stage seconds, best of
the rounds, alternating in one process): sharing 46 M label elements/s
(2.9 G multiply-adds/s, 0.9-1.1 of matmul); answering 0.66 G elements/s (2.2x
the kernel on the 1-row shape, 0.3 of its 8-row rate), 0.16 G/s with the
symmetric mask; reconstruction 97 M answer elements/s (0.8-0.9 of matmul).

Randomness: shares and queries use ``secea_fast.prg`` (AES-CTR seeded from
``secrets``); an ``rng`` argument must be a ``secea_fast.prg.Prg`` stream, a
``numpy.random`` or ``random`` generator is refused.  ``numpy.random`` is used
only for the simulation data of ``distillation_example``, always through an
explicit Generator.

A shared symmetric-privacy seed must serve one retrieval only: a client
answers at most once per Client object.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field as dc_field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .. import field, linalg, poly
from .._checks import _is_prime, check_elements, check_int, check_prime
from ..field import EMBEDDING_PRIME
from ..prg import Prg, random_seed
from ._jobs import job_options, jsonable
from ._wire import Reader, Writer

__all__ = ["Assignment", "OSFLParams", "Client", "Federator", "ShareMessage", "Query", "Answer",
           "RunReport", "run", "approach1", "rates", "star_product_k", "plot_rates",
           "primitive_root", "encode_shares", "query_values", "symmetric_mask", "quantize",
           "distillation_example", "main_job"]

_U64 = np.uint64
_DOMAIN = b"secea_fast.osfl.v1/"


# ----------------------------------------------------------------- small number theory
def _distinct_prime_factors(m: int) -> list:
    """Distinct prime factors of 1 <= m < 2^64 (trial division, then Pollard-Brent)."""
    out = []
    for f in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if m % f == 0:
            out.append(f)
            while m % f == 0:
                m //= f
    f = 41
    while f * f <= m and f < 1 << 16:
        if m % f == 0:
            out.append(f)
            while m % f == 0:
                m //= f
        f += 2
    stack = [m] if m > 1 else []
    while stack:
        x = stack.pop()
        if _is_prime(x):
            out.append(x)
            continue
        d = _pollard_brent(x)
        stack += [d, x // d]
    return sorted(set(out))


def _pollard_brent(n: int) -> int:
    """A nontrivial factor of the odd composite n (no small factors)."""
    for c in range(1, 200):
        y, r, q, g, m = 2, 1, 1, 1, 128
        x = ys = y
        while g == 1:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and g == 1:
                ys = y
                for _ in range(min(m, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                g = math.gcd(q, n)
                k += m
            r *= 2
        if g == n:
            g = 1
            while g == 1:
                ys = (ys * ys + c) % n
                g = math.gcd(abs(x - ys), n)
        if 1 < g < n:
            return g
    raise ArithmeticError(f"could not factor {n}")   # pragma: no cover


@lru_cache(maxsize=64)
def primitive_root(p) -> int:
    """The smallest generator alpha of F_p^* (Sec. V-b: alpha_i = alpha^i).

    >>> primitive_root(11), primitive_root(2**64 - 2**32 + 1)
    (2, 7)
    """
    p = check_prime(p)
    if p == 2:
        return 1
    factors = _distinct_prime_factors(p - 1)
    for g in range(2, p):
        if all(pow(g, (p - 1) // f, p) != 1 for f in factors):
            return g
    raise ArithmeticError("no generator found")   # pragma: no cover


# ----------------------------------------------------------------- helpers
def _check_rng(rng, purpose: bytes) -> Prg:
    """A CSPRNG stream: a given ``Prg`` or a fresh one seeded from ``secrets``."""
    if rng is None:
        return Prg(random_seed(32), _DOMAIN + purpose)
    if isinstance(rng, Prg):
        return rng
    raise TypeError(f"rng must be None or a secea_fast.prg.Prg (a CSPRNG stream), got "
                    f"{type(rng).__module__}.{type(rng).__name__}: numpy.random and random are not "
                    f"cryptographic and are refused for secrets")


def _powers(x: int, count: int, p: int) -> list:
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


def _lincomb(weights, rows, length: int, p: int) -> np.ndarray:
    """sum_k weights[k] * rows[k] (mod p) for reduced uint64 rows of ``length``.

    The answer is a 1 x |I(i)| by |I(i)| x (P c) product: memory bound, one
    output row.  The matmul kernel runs such single-row products about 3x
    slower than this loop of C field kernels over the rows (1.64 ms vs 0.58 ms
    for 11 x 47,620 mod EMBEDDING_PRIME, best of 20, measured 2026-11-21 on the
    Zen 5 machine of PERFORMANCE.md), so one-row products take this route."""
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

    def __init__(self, incidence):
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
    def cyclic(cls, n, T, rho) -> "Assignment":
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

    def clients(self, t) -> tuple:
        """I(e_t): the clients computing objective t, increasing."""
        return self._clients[t]

    def objectives(self, i) -> tuple:
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
    below p; ``run`` checks it).

    Raises ValueError when k_C = (rho - z_q + z_s + 1) / 2 is not an integer,
    when K = k_C - z_s < 1 (rho < z_s + z_q + 1), when n > p - 1 (the points
    alpha^1..alpha^n must be distinct), or when q >= (gamma - 1) n fails.

    >>> P = OSFLParams(Assignment.cyclic(10, 5, 5), 1, 1, s=7, c=3)
    >>> P.k_C, P.K, P.n_partitions, P.cols
    (3, 2, 4, 12)
    """

    def __init__(self, assignment, z_s, z_q, s, c, *, p=EMBEDDING_PRIME, levels=None):
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
        pts = _powers(self.alpha, asg.n + 1, p)[1:]                 # alpha^1 .. alpha^n
        self.points = np.array(pts, dtype=_U64)
        self.inv_points = field.batch_inv(self.points, p)
        self._vand, self._nu, self._dec = {}, {}, {}
        self._window = None
        self._qpow = None

    def __repr__(self):
        return (f"OSFLParams(n={self.n}, T={self.T}, rho={self.rho}, z_s={self.z_s}, z_q={self.z_q}, "
                f"s={self.s}, c={self.c}, p={self.p}, k_C={self.k_C})")

    # per-objective public data
    def clients(self, t) -> tuple:
        return self.assignment.clients(t)

    def objectives(self, i) -> tuple:
        return self.assignment.objectives(i)

    def vandermonde(self, t) -> np.ndarray:
        """rho x k_C matrix alpha_i^m (i in I(e_t), m < k_C): evaluation of eq. 1."""
        V = self._vand.get(t)
        if V is None:
            V = poly.vandermonde(self.points[list(self.clients(t))], self.k_C, self.p)
            V.setflags(write=False)
            self._vand[t] = V
        return V

    def nu(self, t) -> np.ndarray:
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

    def decoder(self, j) -> np.ndarray:
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
        the reconstruction functionals (deviation 1 in the module docstring)."""
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
    def coefficient_rows(self, labels) -> np.ndarray:
        """K x (P c) matrix of one (client, objective)'s labels (strided partition,
        deviation 3): entry [u, p c + k] is label u P + p, class k (0 if padded)."""
        C = np.zeros((self.K, self.cols), dtype=_U64)
        C.reshape(-1)[: self.s * self.c] = labels.reshape(-1)
        return C

    def labels_from_rows(self, Y) -> np.ndarray:
        """Inverse of ``coefficient_rows``: (s, c) from K x (P c)."""
        return Y.reshape(-1)[: self.s * self.c].reshape(self.s, self.c)


def _check_labels_2d(lab, params: OSFLParams, name: str) -> np.ndarray:
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
def encode_shares(params: OSFLParams, t, labels, randomness, threads=None) -> np.ndarray:
    """Eq. 1 for one (client, objective t): f_p(x) = sum_{u<K} x^u y_{p,u} +
    sum_{tau<z_s} x^(K + tau) r_{p,tau}, evaluated at alpha_i for every i in
    I(e_t).  ``labels``: (s, c) integers; ``randomness``: (z_s, P, c) uniform
    secret field elements.  Returns (rho, P, c): row a is the share sent to the
    a-th client of I(e_t).  (``Client.share`` draws the randomness itself; this
    function exists for tests and audits.)"""
    t = _check_objective(t, params.T)
    labels = _check_labels_2d(labels, params, "labels")
    r = check_elements(randomness, params.p, "randomness", ndim=3)
    if r.shape != (params.z_s, params.n_partitions, params.c):
        raise ValueError(f"randomness must have shape (z_s, P, c) = "
                         f"{(params.z_s, params.n_partitions, params.c)}, got {r.shape}")
    C = np.empty((params.k_C, params.cols), dtype=_U64)
    C[:params.K] = params.coefficient_rows(labels)
    C[params.K:] = r.reshape(params.z_s, params.cols)
    S = linalg.matmul(params.vandermonde(t), C, params.p, threads=threads)
    return S.reshape(params.rho, params.n_partitions, params.c)


def query_values(params: OSFLParams, j, k) -> np.ndarray:
    """Eq. 2 with scalar randomness (deviation 2): Q[t, i] = q^(t,j)(alpha_i) =
    delta_{tj} + sum_{tau<z_q} alpha_i^(K + tau) k[t, tau].  ``k``: (T, z_q)
    uniform secret field elements.  Client i receives Q[t, i] for t in I(i)."""
    j = _check_objective(j, params.T)
    k = check_elements(k, params.p, "k", ndim=2)
    if k.shape != (params.T, params.z_q):
        raise ValueError(f"k must have shape (T, z_q) = {(params.T, params.z_q)}, got {k.shape}")
    if params.z_q:
        Q = linalg.matmul(k, np.ascontiguousarray(params.query_powers().T), params.p)
    else:
        Q = np.zeros((params.T, params.n), dtype=_U64)
    Q[j] = field.add(Q[j], 1 % params.p, params.p)
    return Q


def symmetric_mask(params: OSFLParams, S) -> np.ndarray:
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


def _check_objective(j, T) -> int:
    j = check_int(j, "objective")
    if not 0 <= j < T:
        raise ValueError(f"objective index must be in [0, T = {T}), got {j}")
    return j


# ----------------------------------------------------------------- messages
def _arr_bytes(*shape) -> int:
    return 1 + 8 * len(shape) + 8 * math.prod(shape)


# n <= q - 1 clients (distinct alpha^i, deviation 5) and q < 2^64, whose
# largest prime is 2^64 - 59: client indices on the wire are below this
MAX_CLIENTS = (1 << 64) - 60


def _check_ids(what, params, clients=(), objectives=()):
    """Parsers' party checks: client indices < n (``params`` given, the
    receiver's OSFLParams) or < MAX_CLIENTS; objectives < T with ``params``."""
    if params is not None and not isinstance(params, OSFLParams):
        raise TypeError(f"params must be OSFLParams or None, got {type(params).__name__}")
    n = MAX_CLIENTS if params is None else params.n
    for role, i in clients:
        if i >= n:
            raise ValueError(f"{what}: {role} {i} is not a client index (< {n})")
    if params is not None:
        for t in objectives:
            if t >= params.T:
                raise ValueError(f"{what}: objective {t} is not one of the T = {params.T} objectives")


def _check_values(what, params, values):
    if params is not None and values.size and int(values.max()) >= params.p:
        raise ValueError(f"{what}: entry >= p")


class _Msg:
    @property
    def elements(self) -> int:
        """Field elements of payload (the unit of Table I)."""
        return int(self.values.size)


@dataclass
class ShareMessage(_Msg):
    """Client ``sender`` -> client ``receiver``: f_p^(t)(alpha_receiver) for all
    partitions p and classes (eq. 1), shape (P, c)."""
    sender: int
    receiver: int
    objective: int
    values: np.ndarray

    MAGIC = b"OSSH"

    def to_bytes(self) -> bytes:
        return (Writer(self.MAGIC).u64(self.sender).u64(self.receiver).u64(self.objective)
                .array(self.values).bytes())

    @classmethod
    def from_bytes(cls, data, params=None) -> "ShareMessage":
        """Parse and validate: sender and receiver distinct client indices
        (a client keeps its own share); with ``params`` (the receiver's
        OSFLParams) indices < n, objective < T and entries < p."""
        r = Reader(data, cls.MAGIC, "ShareMessage")
        sender, receiver, objective = r.u64(), r.u64(), r.u64()
        values = r.array(2)
        r.done()
        _check_ids("ShareMessage", params, (("sender", sender), ("receiver", receiver)), (objective,))
        if sender == receiver:
            raise ValueError(f"ShareMessage: client {sender} sent a share to itself")
        _check_values("ShareMessage", params, values)
        return cls(sender, receiver, objective, values)

    @property
    def nbytes(self) -> int:
        return 8 + 24 + _arr_bytes(*np.shape(self.values))


@dataclass
class Query(_Msg):
    """Federator -> client: q^(t,j)(alpha_client) for t in I(client) (eq. 2)."""
    client: int
    objectives: np.ndarray
    values: np.ndarray

    MAGIC = b"OSQY"

    def to_bytes(self) -> bytes:
        return (Writer(self.MAGIC).u64(self.client).array(np.asarray(self.objectives, dtype=_U64))
                .array(self.values).bytes())

    @classmethod
    def from_bytes(cls, data, params=None) -> "Query":
        """Parse and validate: ``client`` a client index, as many values as
        objectives; with ``params`` client < n, objectives < T, entries < p."""
        r = Reader(data, cls.MAGIC, "Query")
        client = r.u64()
        objectives, values = r.array(1), r.array(1)
        r.done()
        if objectives.shape != values.shape:
            raise ValueError(f"Query: {objectives.size} objectives but {values.size} values")
        _check_ids("Query", params, (("client", client),), (int(t) for t in objectives))
        _check_values("Query", params, values)
        return cls(client, objectives, values)

    @property
    def nbytes(self) -> int:
        return 8 + 8 + _arr_bytes(len(self.objectives)) + _arr_bytes(len(self.values))


@dataclass
class Answer(_Msg):
    """Client -> federator: A^i for all partitions and classes (Sec. V-c / VI), shape (P, c)."""
    client: int
    values: np.ndarray

    MAGIC = b"OSAN"

    def to_bytes(self) -> bytes:
        return Writer(self.MAGIC).u64(self.client).array(self.values).bytes()

    @classmethod
    def from_bytes(cls, data, params=None) -> "Answer":
        """Parse and validate: ``client`` a client index; with ``params``
        client < n and entries < p."""
        r = Reader(data, cls.MAGIC, "Answer")
        client = r.u64()
        values = r.array(2)
        r.done()
        _check_ids("Answer", params, (("client", client),))
        _check_values("Answer", params, values)
        return cls(client, values)

    @property
    def nbytes(self) -> int:
        return 8 + 8 + _arr_bytes(*np.shape(self.values))


# ----------------------------------------------------------------- parties
class Client:
    """Client ``index`` (0-based): shares its labels (eq. 1), aggregates the
    shares it receives, answers the federator's query (Sec. V-c), adding the
    symmetric-privacy mask when it holds the clients' shared seed (Sec. VI,
    deviation 1).

    ``labels``: a (T, s, c) integer array (rows of objectives not in I(i) are
    ignored) or a mapping {t: (s, c) array} covering I(i).  ``shared_seed``:
    16-64 secret bytes common to all clients and unknown to the federator, or
    None for the scheme without symmetric privacy.  ``session``: bytes naming
    the retrieval (domain-separates the mask streams); required with a
    shared seed, and one (seed, session) pair serves one retrieval: masks
    reused for a second query let the federator subtract them and read sums
    it did not ask for."""

    def __init__(self, index, params: OSFLParams, labels, *, shared_seed=None, session=b"",
                 threads=None):
        if not isinstance(params, OSFLParams):
            raise TypeError(f"params must be OSFLParams, got {type(params).__name__}")
        i = check_int(index, "index")
        if not 0 <= i < params.n:
            raise ValueError(f"client index must be in [0, n = {params.n}), got {i}")
        self.index, self.params, self.threads = i, params, threads
        self.objectives = params.objectives(i)
        if isinstance(labels, dict):
            missing = [t for t in self.objectives if t not in labels]
            if missing:
                raise ValueError(f"client {i}: labels missing for assigned objectives {missing}")
            lab = {t: labels[t] for t in self.objectives}
        elif isinstance(labels, np.ndarray):
            if labels.ndim != 3 or labels.shape[0] != params.T:
                raise ValueError(f"client {i}: labels must have shape (T, s, c) = "
                                 f"{(params.T, params.s, params.c)}, got {labels.shape}")
            lab = {t: labels[t] for t in self.objectives}
        else:
            raise TypeError(f"labels must be a (T, s, c) numpy array or a dict {{t: (s, c) array}}, "
                            f"got {type(labels).__name__}")
        self._labels = {t: _check_labels_2d(v, params, f"labels of client {i}, objective {t}")
                        for t, v in lab.items()}
        if shared_seed is not None and not isinstance(shared_seed, (bytes, bytearray)):
            raise TypeError(f"shared_seed must be bytes or None, got {type(shared_seed).__name__}")
        if shared_seed is not None and not 16 <= len(shared_seed) <= 64:
            raise ValueError(f"shared_seed must be 16 to 64 bytes, got {len(shared_seed)}")
        if isinstance(session, str):
            session = session.encode()
        if not isinstance(session, (bytes, bytearray)):
            raise TypeError(f"session must be bytes or str, got {type(session).__name__}")
        if shared_seed is not None and not session:
            raise ValueError("session must name this retrieval when shared_seed is given (a fresh "
                             "value per retrieval, e.g. secrets.token_bytes(16)): with one session the "
                             "masks of two retrievals are equal and their difference reveals the labels")
        self._seed = None if shared_seed is None else bytes(shared_seed)
        self._session = bytes(session)
        self._pos = {t: k for k, t in enumerate(self.objectives)}
        self._acc = np.zeros((len(self.objectives), params.cols), dtype=_U64)
        self._got = {t: set() for t in self.objectives}
        self._shared = False
        self._answered = False

    @property
    def symmetric(self) -> bool:
        return self._seed is not None

    def share(self, rng=None) -> list:
        """Eq. 1 for every t in I(i): returns the ShareMessages for the other
        clients of each I(e_t) and keeps its own evaluation.  ``rng``: None
        (fresh CSPRNG stream) or a ``secea_fast.prg.Prg``.  Once per client."""
        g = _check_rng(rng, b"share")
        if self._shared:
            raise ValueError(f"client {self.index} has already shared its labels")
        P = self.params
        out = []
        for t in self.objectives:
            C = np.empty((P.k_C, P.cols), dtype=_U64)
            C[:P.K] = 0
            C[:P.K].reshape(-1)[: P.s * P.c] = self._labels[t].reshape(-1)
            g.field_into(C[P.K:], P.p)
            S = linalg.matmul(P.vandermonde(t), C, P.p, threads=self.threads)
            for a, i1 in enumerate(P.clients(t)):
                if i1 == self.index:
                    self._add(t, self.index, S[a])
                else:
                    out.append(ShareMessage(self.index, i1, t, S[a].reshape(P.n_partitions, P.c)))
        self._shared = True
        return out

    def receive(self, msg: ShareMessage) -> None:
        """Adds a share f_{sender}^(t)(alpha_i) into F^(t)(alpha_i) (Sec. V-b)."""
        if not isinstance(msg, ShareMessage):
            raise TypeError(f"expected a ShareMessage, got {type(msg).__name__}")
        P = self.params
        if msg.receiver != self.index:
            raise ValueError(f"client {self.index} received a share addressed to client {msg.receiver}")
        if msg.objective not in self._pos:
            raise ValueError(f"client {self.index} does not compute objective {msg.objective}")
        if msg.sender not in P.clients(msg.objective) or msg.sender == self.index:
            raise ValueError(f"client {msg.sender} is not another client of objective {msg.objective}")
        v = check_elements(msg.values, P.p, "ShareMessage.values", ndim=2)
        if v.shape != (P.n_partitions, P.c):
            raise ValueError(f"ShareMessage.values must have shape (P, c) = {(P.n_partitions, P.c)}, got {v.shape}")
        self._add(msg.objective, msg.sender, v.reshape(-1))

    def _add(self, t, sender, row):
        got = self._got[t]
        if sender in got:
            raise ValueError(f"client {self.index} already has client {sender}'s share of objective {t}")
        k = self._pos[t]
        self._acc[k] = field.add(self._acc[k], row, self.params.p)
        got.add(sender)

    @property
    def ready(self) -> bool:
        """All rho shares of every assigned objective are in."""
        return all(len(self._got[t]) == self.params.rho for t in self.objectives)

    def answer(self, query: Query) -> Answer:
        """A^i = sum_{t in I(i)} nu_{t,i} q^(t,j)(alpha_i) F^(t)(alpha_i) (Sec. V-c),
        plus the mask m_i in symmetric mode (Sec. VI, deviation 1).  Once per client."""
        P = self.params
        if not isinstance(query, Query):
            raise TypeError(f"expected a Query, got {type(query).__name__}")
        if query.client != self.index:
            raise ValueError(f"client {self.index} received the query of client {query.client}")
        objs = np.asarray(query.objectives)
        if objs.shape != (len(self.objectives),) or [int(t) for t in objs] != list(self.objectives):
            raise ValueError(f"the query must list this client's objectives {list(self.objectives)}, "
                             f"got {[int(t) for t in objs]}")
        q = check_elements(query.values, P.p, "Query.values", ndim=1)
        if q.shape != objs.shape:
            raise ValueError("Query: objectives and values differ in length")
        if not self.ready:
            missing = {t: P.rho - len(self._got[t]) for t in self.objectives if len(self._got[t]) < P.rho}
            raise ValueError(f"client {self.index} cannot answer: shares missing {missing} (objective: count)")
        if self._answered:
            raise ValueError(f"client {self.index} has already answered (a mask seed serves one retrieval)")
        weights = [int(P.nu(t)[P.clients(t).index(self.index)]) * int(q[k]) % P.p
                   for k, t in enumerate(self.objectives)]
        a = _lincomb(weights, self._acc, P.cols, P.p)
        if self._seed is not None:
            # m_i = sum_f b_f[i] s_f over the windows f..f+K that contain i; one
            # reused buffer for the streams (fresh large arrays cost page faults)
            B = P.window_basis()
            buf = np.empty(P.cols, dtype=_U64)
            for f in range(max(0, self.index - P.K), min(self.index, P.n - P.K - 1) + 1):
                Prg(self._seed, _mask_domain(self._session, f)).field_into(buf, P.p)
                a = field.add(a, field.mul(buf, int(B[f, self.index - f]), P.p), P.p)
        self._answered = True
        return Answer(self.index, a.reshape(P.n_partitions, P.c))


def _mask_domain(session: bytes, f: int) -> bytes:
    return _DOMAIN + b"sym-mask/" + len(session).to_bytes(4, "big") + session + f.to_bytes(8, "big")


class Federator:
    """The federator with hidden objective ``j``: sends the queries of eq. 2 and
    decodes the answers (Sec. V-d)."""

    def __init__(self, params: OSFLParams, j, threads=None):
        if not isinstance(params, OSFLParams):
            raise TypeError(f"params must be OSFLParams, got {type(params).__name__}")
        self.params = params
        self.j = _check_objective(j, params.T)
        self.threads = threads
        self._A = None

    def queries(self, rng=None) -> dict:
        """{i: Query} for every client i in [n] (clients with no objective get an
        empty query and still answer).  Fresh query randomness on every call."""
        P = self.params
        g = _check_rng(rng, b"query")
        k = g.field(P.T * P.z_q, P.p).reshape(P.T, P.z_q)
        Q = query_values(P, self.j, k)
        out = {}
        for i in range(P.n):
            objs = P.objectives(i)
            out[i] = Query(i, np.array(objs, dtype=_U64), np.ascontiguousarray(Q[list(objs), i]))
        return out

    def reconstruct(self, answers) -> np.ndarray:
        """(s, c) uint64 array: sum_{i in I(e_j)} y_i^(j) (Theorem 3), from one
        Answer per client (a mapping or a sequence, any order)."""
        P = self.params
        items = answers.values() if isinstance(answers, dict) else answers
        if self._A is None:                 # kept across calls: a fresh n x (P c) buffer costs page faults
            self._A = np.empty((P.n, P.cols), dtype=_U64)
        A = self._A
        seen = set()
        for ans in items:
            if not isinstance(ans, Answer):
                raise TypeError(f"expected Answer objects, got {type(ans).__name__}")
            i = ans.client
            if not 0 <= i < P.n:
                raise ValueError(f"answer from unknown client {i}")
            if i in seen:
                raise ValueError(f"two answers from client {i}")
            v = check_elements(ans.values, P.p, "Answer.values", ndim=2)
            if v.shape != (P.n_partitions, P.c):
                raise ValueError(f"Answer.values must have shape (P, c) = {(P.n_partitions, P.c)}, got {v.shape}")
            A[i] = v.reshape(-1)
            seen.add(i)
        if len(seen) != P.n:
            raise ValueError(f"need an answer from every client: missing {sorted(set(range(P.n)) - seen)}")
        Y = linalg.matmul(P.decoder(self.j), A, P.p, threads=self.threads)
        return P.labels_from_rows(Y)


# ----------------------------------------------------------------- simulation
@dataclass
class RunReport:
    """Per-phase wall-clock seconds, bytes on the wire and field elements of
    payload (sharing: client-to-client; queries: federator-to-clients; answers:
    clients-to-federator)."""
    seconds: dict = dc_field(default_factory=dict)
    bytes: dict = dc_field(default_factory=dict)
    elements: dict = dc_field(default_factory=dict)
    info: dict = dc_field(default_factory=dict)

    def measured_rates(self) -> dict:
        """R_share and R_PIR of Sec. III from the counted payload (s c useful symbols)."""
        useful = self.info["s"] * self.info["c"]
        return {"sharing_rate": useful / self.elements["sharing"] if self.elements.get("sharing") else math.inf,
                "pir_rate": useful / self.elements["answers"]}


def _check_label_tensor(labels, n, T, p, levels, members) -> np.ndarray:
    if not isinstance(labels, np.ndarray):
        raise TypeError(f"labels must be a numpy integer array of shape (n, T, s, c), got {type(labels).__name__}")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"labels must have an integer dtype (quantize soft labels with osfl.quantize), "
                        f"got {labels.dtype}")
    if labels.ndim != 4 or labels.shape[:2] != (n, T):
        raise ValueError(f"labels must have shape (n, T, s, c) with (n, T) = {(n, T)}, got {labels.shape}")
    if labels.shape[2] < 1 or labels.shape[3] < 1:
        raise ValueError(f"labels need s >= 1 and c >= 1, got shape {labels.shape}")
    hi = 0
    for t, mem in enumerate(members):
        sub = labels[list(mem), t]
        if sub.size:
            if int(sub.min()) < 0:
                raise ValueError(f"labels of objective {t} have a negative entry; labels are non-negative integers")
            hi = max(hi, int(sub.max()))
    if levels is None:
        rho = len(members[0])
        if rho * hi >= p:
            raise ValueError(f"capacity: rho * max label = {rho} * {hi} >= p = {p}; the sum would wrap "
                             f"(use a larger p or quantize to fewer levels)")
    return labels


def run(labels, incidence, j, z_s, z_q, symmetric=False, *, p=EMBEDDING_PRIME, levels=None,
        report=False, wire=False, threads=None):
    """Simulate the whole protocol: sharing, aggregation, query, answers,
    reconstruction.

    ``labels``: (n, T, s, c) integer array (entries for unassigned (i, t) are
    ignored); ``incidence``: an n x T 0/1 array or an ``Assignment``; ``j``:
    the federator's hidden objective; ``symmetric``: Sec. VI (clients draw a
    shared seed the federator never sees).  ``wire=True`` sends every message
    through ``to_bytes``/``from_bytes``.  Returns the (s, c) int64 array
    sum_{i in I(e_j)} labels[i, j]; with ``report=True`` returns
    (sums, RunReport).

    >>> lab = np.arange(4 * 2 * 3 * 2).reshape(4, 2, 3, 2) % 5
    >>> inc = Assignment.cyclic(4, 2, 3)
    >>> run(lab, inc, 1, 1, 1).tolist() == lab[[2, 3, 0], 1].sum(axis=0).tolist()
    True
    """
    asg = incidence if isinstance(incidence, Assignment) else Assignment(incidence)
    p = check_prime(p)
    members = [asg.clients(t) for t in range(asg.T)]
    labels = _check_label_tensor(labels, asg.n, asg.T, p, levels, members)
    if not isinstance(symmetric, bool):
        raise TypeError(f"symmetric must be a bool, got {type(symmetric).__name__}")
    n, T, s, c = labels.shape
    params = OSFLParams(asg, z_s, z_q, s, c, p=p, levels=levels)
    j = _check_objective(j, T)
    rep = RunReport(info={"n": n, "T": T, "rho": asg.rho, "z_s": params.z_s, "z_q": params.z_q, "s": s,
                          "c": c, "p": p, "k_C": params.k_C, "symmetric": symmetric})
    seed = random_seed(32) if symmetric else None
    session = random_seed(16) if symmetric else b""
    clients = [Client(i, params, labels[i], shared_seed=seed, session=session, threads=threads)
               for i in range(n)]
    fed = Federator(params, j, threads=threads)

    t_share = t_agg = 0.0
    nbytes = elems = 0
    for cl in clients:
        t0 = time.perf_counter()
        msgs = cl.share()
        t1 = time.perf_counter()
        for m in msgs:
            nbytes += m.nbytes
            elems += m.elements
            if wire:
                m = ShareMessage.from_bytes(m.to_bytes(), params)
            clients[m.receiver].receive(m)
        t_share += t1 - t0
        t_agg += time.perf_counter() - t1
        del msgs
    rep.seconds.update(share=t_share, aggregate=t_agg)
    rep.bytes["sharing"], rep.elements["sharing"] = nbytes, elems

    t0 = time.perf_counter()
    queries = fed.queries()
    rep.seconds["query"] = time.perf_counter() - t0
    rep.bytes["queries"] = sum(q.nbytes for q in queries.values())
    rep.elements["queries"] = sum(q.elements for q in queries.values())
    if wire:
        queries = {i: Query.from_bytes(q.to_bytes(), params) for i, q in queries.items()}

    t0 = time.perf_counter()
    answers = {i: clients[i].answer(queries[i]) for i in range(n)}
    rep.seconds["answer"] = time.perf_counter() - t0
    rep.bytes["answers"] = sum(a.nbytes for a in answers.values())
    rep.elements["answers"] = sum(a.elements for a in answers.values())
    if wire:
        answers = {i: Answer.from_bytes(a.to_bytes(), params) for i, a in answers.items()}

    t0 = time.perf_counter()
    out = fed.reconstruct(answers)
    rep.seconds["reconstruct"] = time.perf_counter() - t0
    result = out.astype(np.int64)
    return (result, rep) if report else result


# ----------------------------------------------------------------- Approach 1 (Sec. IV)
def approach1(labels, j, z_s, z_q, *, p=EMBEDDING_PRIME, levels=None, report=False, wire=False, threads=None):
    """Approach 1 of Sec. IV: Shamir sharing f(x) = y + sum_{tau=1}^{z_s} x^tau r_tau
    of every label (rho = n: every client computes every objective), the simple
    PIR query q^(t,j)(x) = delta_{tj} + sum_{tau=1}^{z_q} x^tau k_tau^(t) (scalar
    randomness, as deviation 2), answers A^i = sum_t F^(t)(alpha_i) q^(t,j)(alpha_i)
    from the first z_s + z_q + 1 clients, and Lagrange interpolation at 0 of the
    degree z_s + z_q answer polynomial.

    ``labels``: (n, T, s, c) non-negative integers.  Returns the (s, c) int64
    sum over all clients of labels[:, j] (and a RunReport with ``report=True``).
    Sharing costs T n (n - 1) s c field elements, the download (z_s + z_q + 1) s c."""
    p = check_prime(p)
    if not isinstance(labels, np.ndarray) or labels.ndim != 4:
        raise TypeError("labels must be a numpy integer array of shape (n, T, s, c)")
    n, T, s, c = labels.shape
    asg = Assignment(np.ones((n, T), dtype=np.uint8))
    labels = _check_label_tensor(labels, n, T, p, levels, [asg.clients(t) for t in range(T)])
    z_s, z_q = check_int(z_s, "z_s"), check_int(z_q, "z_q")
    if z_s < 0 or z_q < 0:
        raise ValueError(f"z_s and z_q must be >= 0, got z_s={z_s}, z_q={z_q}")
    N = z_s + z_q + 1
    if n < N:
        raise ValueError(f"Approach 1 needs n >= z_s + z_q + 1 = {N} clients, got n = {n}")
    if n > p - 1:
        raise ValueError(f"the field is too small: n = {n} clients need n <= p - 1 = {p - 1}")
    if levels is not None:
        levels = check_int(levels, "levels")
        if levels < 2 or p < (levels - 1) * n:
            raise ValueError(f"need levels >= 2 and the capacity check p >= (levels - 1) n, got levels={levels}")
        if int(labels.max()) >= levels:
            raise ValueError(f"labels have an entry >= levels = {levels}")
    j = _check_objective(j, T)
    alpha = primitive_root(p)
    pts = np.array(_powers(alpha, n + 1, p)[1:], dtype=_U64)
    V = poly.vandermonde(pts, z_s + 1, p)                              # n x (z_s + 1)
    sc = s * c
    rep = RunReport(info={"n": n, "T": T, "rho": n, "z_s": z_s, "z_q": z_q, "s": s, "c": c, "p": p,
                          "scheme": "approach1"})
    acc = np.zeros((n, T, sc), dtype=_U64)
    g = _check_rng(None, b"approach1/share")
    t_share = t_agg = 0.0
    nbytes = elems = 0
    for i in range(n):
        for t in range(T):
            t0 = time.perf_counter()
            C = np.empty((z_s + 1, sc), dtype=_U64)
            C[0] = labels[i, t].reshape(-1)
            g.field_into(C[1:], p)
            S = linalg.matmul(V, C, p, threads=threads)
            t1 = time.perf_counter()
            for i1 in range(n):
                row = S[i1]
                if i1 != i:
                    m = ShareMessage(i, i1, t, row.reshape(s, c))
                    nbytes += m.nbytes
                    elems += m.elements
                    if wire:
                        m = ShareMessage.from_bytes(m.to_bytes())
                    row = check_elements(m.values, p, "ShareMessage.values", ndim=2).reshape(-1)
                acc[i1, t] = field.add(acc[i1, t], row, p)
            t_share += t1 - t0
            t_agg += time.perf_counter() - t1
    rep.seconds.update(share=t_share, aggregate=t_agg)
    rep.bytes["sharing"], rep.elements["sharing"] = nbytes, elems

    t0 = time.perf_counter()
    k = _check_rng(None, b"approach1/query").field(T * z_q, p).reshape(T, z_q)
    E = poly.vandermonde(pts[:N], z_q + 1, p)[:, 1:]                    # N x z_q: alpha_i^tau
    Q = linalg.matmul(k, np.ascontiguousarray(E.T), p) if z_q else np.zeros((T, N), dtype=_U64)
    Q[j] = field.add(Q[j], 1 % p, p)
    queries = [Query(i, np.arange(T, dtype=_U64), np.ascontiguousarray(Q[:, i])) for i in range(N)]
    rep.seconds["query"] = time.perf_counter() - t0
    rep.bytes["queries"] = sum(q.nbytes for q in queries)
    rep.elements["queries"] = sum(q.elements for q in queries)

    t0 = time.perf_counter()
    answers = []
    for i, qu in enumerate(queries):
        if wire:
            qu = Query.from_bytes(qu.to_bytes())
        a = _lincomb(qu.values, acc[i], sc, p)
        answers.append(Answer(i, a.reshape(s, c)))
    rep.seconds["answer"] = time.perf_counter() - t0
    rep.bytes["answers"] = sum(a.nbytes for a in answers)
    rep.elements["answers"] = sum(a.elements for a in answers)

    t0 = time.perf_counter()
    # Lagrange coefficients at 0 over alpha_1..alpha_N: lambda_i = prod_{k != i} alpha_k / (alpha_k - alpha_i)
    xs = [int(x) for x in pts[:N]]
    lam = []
    for a, xa in enumerate(xs):
        num = den = 1
        for b, xb in enumerate(xs):
            if b != a:
                num = num * xb % p
                den = den * (xb - xa) % p
        lam.append(num * pow(den, p - 2, p) % p)
    A = np.stack([(Answer.from_bytes(a.to_bytes()) if wire else a).values.reshape(-1) for a in answers])
    Y = linalg.matmul(np.array([lam], dtype=_U64), A, p, threads=threads)
    rep.seconds["reconstruct"] = time.perf_counter() - t0
    result = Y.reshape(s, c).astype(np.int64)
    return (result, rep) if report else result


# ----------------------------------------------------------------- rates (Table I)
def _pos_int(v, name, lo):
    v = check_int(v, name)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def star_product_k(n, T, z_s, z_q) -> tuple:
    """Lemma 1: (k_C', k_C*) for the star-product scheme (rho = n).  k_C' is the
    stationary point c1 c2 - sqrt(c1^2 c2^2 - (c2 - n)(c1^2 c2 + n c1 z_s)) over
    (c2 - n), c1 = n - z_q + 1, c2 = T n (n - 1); k_C* is floor or ceil of it,
    clipped to the feasible range z_s + 1 <= k_C <= n - z_q, whichever costs
    less.  Returns (nan, None) when the range is empty."""
    n, T = _pos_int(n, "n", 1), _pos_int(T, "T", 1)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    lo, hi = z_s + 1, n - z_q
    if lo > hi:
        return math.nan, None
    c1, c2 = n - z_q + 1, T * n * (n - 1)
    disc = c1 * c1 * c2 * c2 - (c2 - n) * (c1 * c1 * c2 + n * c1 * z_s)
    if c2 != n and disc >= 0:
        kp = (c1 * c2 - math.sqrt(disc)) / (c2 - n)
        cands = {min(hi, max(lo, math.floor(kp))), min(hi, max(lo, math.ceil(kp)))}
    else:                                       # degenerate: scan the (convex) range
        kp = math.nan
        cands = set(range(lo, hi + 1))
    best = min(sorted(cands), key=lambda k: _star_cost(n, T, k, z_s, z_q))
    return kp, best


def _star_cost(n, T, k, z_s, z_q):
    return Fraction(T * n * (n - 1), k - z_s) + Fraction(k * n, (k - z_s) * (n - k - z_q + 1))


def rates(n, T, rho, z_s, z_q, *, s=1, c=1) -> dict:
    """Sharing rate, PIR rate and total communication (field elements, s c
    symbols per objective) of Table I for our scheme, GXSTPIR [19] and the
    star-product scheme [17] (rho = n only, k_C* of Lemma 1):

    * ours: (rho - z_s - z_q + 1) / (2 T rho (rho - 1)); (rho - z_q - z_s + 1) / (2 n);
      2 T s c rho (rho - 1) / (rho - z_s - z_q + 1) + 2 s c n / (rho - z_q - z_s + 1)
    * gxstpir: 1 / (T rho (rho - 1)); (rho - z_q - z_s) / n;
      T s c rho (rho - 1) + s c n / (rho - z_s - z_q)
    * star_product: (k* - z_s) / (T n (n - 1)); (k* - z_s)(n - k* - z_q + 1) / (n k*);
      T s c n (n - 1) / (k* - z_s) + s c k* n / ((k* - z_s)(n - k* - z_q + 1))

    Feasibility (refused with ValueError naming the failing constraint):
    rho <= n, and rho >= z_s + z_q + 1.  The latter is where the schemes
    exist at all: ours needs k_C - z_s = (rho - z_s - z_q + 1)/2 >= 1 labels
    per partition of eq. (1) (k_C = (rho - z_q + z_s + 1)/2, Sec. V-b), and
    GXSTPIR a PIR rate (rho - z_s - z_q)/n > 0 (Table I); it also gives the
    star product's range z_s + 1 <= k_C <= n - z_q of Lemma 1 a member
    (Egger, Urbanke and Bitar, "Federated One-Shot Learning with Data
    Privacy and Objective-Hiding", 2025, Table I and Sec. VII).  Below it
    the formulas gave rates 0 / communication inf, which read as numbers.
    The formulas are evaluated for every feasible rho (as in Figs. 3-6),
    also where k_C is not an integer.  The star-product scheme exists for
    rho = n only (Sec. VII-a): for rho < n its entries are nan (not
    applicable) and ``k_star`` is None.

    >>> r = rates(10, 10, 10, 1, 1)
    >>> round(r["ours"]["communication"], 3), r["star_product"]["k_star"]
    (202.222, 9)
    """
    n, T = _pos_int(n, "n", 1), _pos_int(T, "T", 1)
    rho = _pos_int(rho, "rho", 2)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    s, c = _pos_int(s, "s", 1), _pos_int(c, "c", 1)
    if rho > n:
        raise ValueError(f"rho must be <= n = {n}, got {rho}")
    if rho < z_s + z_q + 1:
        raise ValueError(
            f"infeasible: need rho >= z_s + z_q + 1 = {z_s + z_q + 1}, got rho = {rho} "
            f"(z_s = {z_s}, z_q = {z_q}): k_C - z_s = (rho - z_s - z_q + 1)/2 = "
            f"{(rho - z_s - z_q + 1) / 2:g} < 1 label per partition (eq. 1) and GXSTPIR's "
            f"PIR rate (rho - z_s - z_q)/n = {(rho - z_s - z_q) / n:g} <= 0 (Table I)")
    sc = s * c
    out = {}
    g = rho - z_s - z_q + 1                       # >= 2
    out["ours"] = {"sharing_rate": g / (2 * T * rho * (rho - 1)), "pir_rate": g / (2 * n),
                   "communication": 2 * T * sc * rho * (rho - 1) / g + 2 * sc * n / g,
                   "k_C": (rho - z_q + z_s + 1) / 2}
    g2 = rho - z_s - z_q                          # >= 1
    out["gxstpir"] = {"sharing_rate": 1 / (T * rho * (rho - 1)), "pir_rate": g2 / n,
                      "communication": T * sc * rho * (rho - 1) + sc * n / g2}
    kp, ks = star_product_k(n, T, z_s, z_q)      # ks exists: z_s + 1 <= n - z_q
    if rho != n:
        out["star_product"] = {"sharing_rate": math.nan, "pir_rate": math.nan, "communication": math.nan,
                               "k_prime": kp, "k_star": None}
    else:
        out["star_product"] = {"sharing_rate": (ks - z_s) / (T * n * (n - 1)),
                               "pir_rate": (ks - z_s) * (n - ks - z_q + 1) / (n * ks),
                               "communication": float(sc * _star_cost(n, T, ks, z_s, z_q)),
                               "k_prime": kp, "k_star": ks}
    return out


def plot_rates(n, T, z_s, z_q, path):
    """Figs. 3-6: total communication (in s c symbols), sharing rate and PIR rate
    against the feasible rho = max(2, z_s + z_q + 1)..n for our scheme and GXSTPIR, with the star-product point
    at rho = n; one PNG/PDF/SVG (by ``path``'s suffix) with three panels.
    Needs matplotlib (imported here only).  Returns ``path``."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("osfl.plot_rates needs matplotlib, which is not installed: "
                          "pip install matplotlib") from exc
    n, T = _pos_int(n, "n", 2), _pos_int(T, "T", 1)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    rhos = list(range(max(2, z_s + z_q + 1), n + 1))     # the feasible rho (see ``rates``)
    if not rhos:
        raise ValueError(f"infeasible: need n >= z_s + z_q + 1 = {z_s + z_q + 1} for some "
                         f"rho <= n to exist, got n = {n}")
    table = [rates(n, T, r, z_s, z_q) for r in rhos]

    def series(key, field_name):
        ys = [row[key][field_name] for row in table]
        return [y if (isinstance(y, float) and math.isfinite(y) and y > 0) else math.nan for y in ys]

    fig = Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    titles = [("communication", "communication cost [s c symbols in F_q]", True),
              ("sharing_rate", "sharing rate", True), ("pir_rate", "PIR rate", False)]
    for ax, (key, label, logy) in zip(axes, titles):
        ax.plot(rhos, series("ours", key), "-o", ms=3, label="ours (ramp sharing + graph PIR)")
        ax.plot(rhos, series("gxstpir", key), "-s", ms=3, label="Shamir + GXSTPIR [19]")
        sp = table[-1]["star_product"][key]
        if isinstance(sp, float) and math.isfinite(sp) and sp > 0:
            ax.plot([n], [sp], "*", ms=12, label=f"star product [17], k* = {table[-1]['star_product']['k_star']}")
        ax.set_xlabel("rho (clients per objective)")
        ax.set_ylabel(label)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"n = {n}, T = {T}, z_s = {z_s}, z_q = {z_q}")
    fig.tight_layout()
    fig.savefig(path)
    return path


# ----------------------------------------------------------------- knowledge distillation example
def quantize(probs, levels) -> np.ndarray:
    """Soft labels (probabilities in [0, 1]) to integers in [0, levels - 1]:
    round(prob (levels - 1)) (Sec. V-a, gamma = levels quantization steps)."""
    levels = check_int(levels, "levels")
    if levels < 2:
        raise ValueError(f"levels must be >= 2, got {levels}")
    x = np.asarray(probs, dtype=np.float64)
    if not np.isfinite(x).all() or (x < 0).any() or (x > 1).any():
        raise ValueError("probabilities must be finite and in [0, 1]")
    return np.rint(x * (levels - 1)).astype(np.int64)


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _train_softmax(X, Y, *, iters=300, lr=0.5, l2=1e-3):
    """Multinomial logistic regression by gradient descent; Y: one-hot or soft targets."""
    n, d = X.shape
    Xb = np.hstack([X, np.ones((n, 1))])
    W = np.zeros((d + 1, Y.shape[1]))
    for _ in range(iters):
        G = Xb.T @ (_softmax(Xb @ W) - Y) / n + l2 * W
        W -= lr * G
    return W


def _predict(W, X):
    return _softmax(np.hstack([X, np.ones((len(X), 1))]) @ W)


def distillation_example(*, n=20, T=5, rho=11, z_s=2, z_q=2, s=5000, classes=5, dim=20, levels=17,
                         n_train=60, n_test=2000, j=0, symmetric=True, noise=1.0, seed=0,
                         p=EMBEDDING_PRIME) -> dict:
    """One-shot knowledge distillation on generated data (Sec. III "Non-linear
    training processes").

    Objective t is a c-class problem over R^dim: the label of x is drawn from
    softmax(W_t x / noise) for a random W_t (each objective its own labeller).
    Client i holds ``n_train`` private samples per assigned objective, drawn
    around a client-specific mean (heterogeneous clients), trains a softmax
    regression for each t in I(i) (cyclic assignment) and labels a public set
    of ``s`` samples with its predicted probabilities quantized to ``levels``
    levels.  The federator retrieves the aggregated labels of its hidden
    objective ``j`` with ``run`` and trains a student on the public set with
    the normalized sums as soft targets.  Reported: test accuracy (against
    argmax W_j x) of the student, of a model trained on the pooled private data
    of the clients of I(e_j), the teachers' mean, plus protocol seconds,
    bytes and whether the retrieved sum is exact.  ``numpy.random`` draws the
    simulation data only (Generator seeded with ``seed``)."""
    rng = np.random.default_rng(seed)   # simulation data only
    asg = Assignment.cyclic(n, T, rho)
    Ws = rng.normal(size=(T, dim, classes))
    shifts = rng.normal(scale=0.8, size=(n, dim))

    def draw_labels(X, t):
        P_ = _softmax(X @ Ws[t] / noise)
        u = rng.random((len(X), 1))
        return np.minimum((P_.cumsum(axis=1) < u).sum(axis=1), classes - 1)

    X_pub = rng.normal(size=(s, dim))
    X_test = rng.normal(size=(n_test, dim))
    labels = np.zeros((n, T, s, classes), dtype=np.int64)
    pooled_X, pooled_y, teacher_acc = [], [], []
    y_test = (X_test @ Ws[j]).argmax(axis=1)
    t0 = time.perf_counter()
    for i in range(n):
        for t in asg.objectives(i):
            X = rng.normal(size=(n_train, dim)) + shifts[i]
            y = draw_labels(X, t)
            W = _train_softmax(X, np.eye(classes)[y])
            labels[i, t] = quantize(_predict(W, X_pub), levels)
            if t == j:
                pooled_X.append(X)
                pooled_y.append(y)
                teacher_acc.append(float((_predict(W, X_test).argmax(axis=1) == y_test).mean()))
    t_local = time.perf_counter() - t0
    sums, rep = run(labels, asg, j, z_s, z_q, symmetric, p=p, levels=levels, report=True)
    exact = bool((sums == labels[list(asg.clients(j)), j].sum(axis=0)).all())
    t0 = time.perf_counter()
    tot = sums.sum(axis=1, keepdims=True).astype(np.float64)
    soft = np.where(tot > 0, sums / np.maximum(tot, 1), 1.0 / classes)
    W_student = _train_softmax(X_pub, soft)
    student = float((_predict(W_student, X_test).argmax(axis=1) == y_test).mean())
    Xp, yp = np.vstack(pooled_X), np.concatenate(pooled_y)
    W_pool = _train_softmax(Xp, np.eye(classes)[yp])
    pooled = float((_predict(W_pool, X_test).argmax(axis=1) == y_test).mean())
    t_student = time.perf_counter() - t0
    table = rates(n, T, rho, z_s, z_q)["ours"]
    return {
        "params": {"n": n, "T": T, "rho": rho, "z_s": z_s, "z_q": z_q, "s": s, "classes": classes,
                   "dim": dim, "levels": levels, "n_train": n_train, "j": j, "symmetric": symmetric,
                   "k_C": (rho - z_q + z_s + 1) // 2, "p": p},
        "accuracy": {"student": student, "pooled": pooled, "teacher_mean": float(np.mean(teacher_acc)),
                     "teacher_max": float(np.max(teacher_acc))},
        "exact_sum": exact,
        "seconds": {"local_training": t_local, **{k: float(v) for k, v in rep.seconds.items()},
                    "student_training": t_student},
        "bytes": {k: int(v) for k, v in rep.bytes.items()},
        "field_elements": {k: int(v) for k, v in rep.elements.items()},
        "rates": {"measured": rep.measured_rates(),
                  "table_I": {"sharing_rate": table["sharing_rate"], "pir_rate": table["pir_rate"]}},
        "_labels": labels,
        "_assignment": asg,
    }


_JOB_DEFAULTS = {"n": 20, "T": 5, "rho": 11, "z_s": 2, "z_q": 2, "s": 5000, "classes": 5, "dim": 20,
                 "levels": 17, "n_train": 60, "n_test": 2000, "j": 0, "symmetric": True, "noise": 1.0,
                 "seed": 0, "p": EMBEDDING_PRIME, "approach1": True}


def main_job(args=None, **kwargs) -> dict:
    """The ``secea-fast run --protocol osfl`` job: the distillation example
    (defaults: n = 20, T = 5, rho = 11, z_s = z_q = 2, s = 5000 public samples,
    5 classes, 17 levels, symmetric privacy; about a second) plus, on the same
    labels, Approach 1 (Sec. IV) and the Table I rates.  ``args``: a dict of the
    options (keys as in ``distillation_example``, '-' or '_'; extra key
    ``approach1``: bool) and/or keyword arguments.  Returns a JSON-serializable
    dict of per-phase seconds, bytes, field elements, rates and accuracies."""
    opts = job_options(_JOB_DEFAULTS, args, kwargs, "osfl", ("symmetric", "approach1"))
    do_a1 = opts.pop("approach1")
    t0 = time.perf_counter()
    res = distillation_example(**opts)
    labels, asg = res.pop("_labels"), res.pop("_assignment")
    out = {"protocol": "osfl", **res}
    if do_a1:
        lab = labels * asg.incidence[:, :, None, None]          # unassigned objectives contribute 0
        s1, rep1 = approach1(lab, opts["j"], opts["z_s"], opts["z_q"], p=opts["p"], report=True)
        out["approach1"] = {
            "exact_sum": bool((s1 == labels[list(asg.clients(opts["j"])), opts["j"]].sum(axis=0)).all()),
            "seconds": {k: float(v) for k, v in rep1.seconds.items()},
            "bytes": {k: int(v) for k, v in rep1.bytes.items()},
            "field_elements": {k: int(v) for k, v in rep1.elements.items()}}
    out["seconds"]["total"] = time.perf_counter() - t0
    out["table_I"] = jsonable(rates(opts["n"], opts["T"], opts["rho"], opts["z_s"], opts["z_q"],
                                     s=opts["s"], c=opts["classes"]))
    return jsonable(out)
