"""The competing approaches of Egger, Urbanke, Bitar, "Federated One-Shot
Learning with Data Privacy and Objective-Hiding" (2025) as exact protocols,
with the inputs and the result type of ``run_round`` / ``approach1``:

* ``approach2`` -- Approach 2 of Sec. IV: McEliece-Sarwate ramp sharing of K
  labels per polynomial among all n clients (rho = n), the query
  q^(t,j)(x) = delta_tj + sum_tau x^(K+tau) k_tau^(t), answers from the first
  2K + z_s + z_q - 1 clients, interpolation of the low K coefficients.
* ``star_product`` -- Approach 3 of Sec. VII-a / Table I row "rho = n":
  the same ramp sharing with storage dimension k_C (default k_C* of Lemma 1),
  answered through the star-product PIR scheme of Freij-Hollanti, Gnilke,
  Hollanti, Karpuk (2017) (query code D = GRS(n, z_q); the desired stored
  symbols are erasures of a C*D codeword).
* ``gxstpir`` -- the "Shamir + GXSTPIR" baseline of Sec. VII-b / Table I on
  an arbitrary task assignment: every label Shamir-shared among the rho
  clients of its objective with the cross-subspace-alignment storage of Jia,
  Sun, Jafar (2019), queried with the graph-based scheme of Jia and Jafar
  (2020) (dual-GRS weights per objective), rate (rho - z_s - z_q) / n.

Each takes ``symmetric=True`` for privacy from the federator (Sec. VI): the
clients add a mask from a seed they share and the federator never sees, drawn
uniformly from the kernel of the federator's decoding map (for Approach 2 this
is exactly the polynomial R_p(x) of Sec. VI; see each class).

The classes (``Approach2``, ``StarProduct``, ``GXSTPIR``) hold an instance's
public parameters and its per-party steps with explicit randomness (``share``,
``queries``, ``answer``, ``reconstruct``): the functions run them over the
messages of the main scheme (``ShareMessage``, ``Query``, ``Answer``; through
``to_bytes``/``from_bytes`` with ``wire=True``), count payload field elements
and serialized bytes per stage, and check the result against plaintext with
``verify``.  Exact element counts per instance: ``osfl.elements``.

Choices where the paper only sketches (each in its class docstring): the
query randomness is one scalar per (objective, coefficient) as in the main
scheme's deviation 2; Approach 2 takes K labels per polynomial (the paper's
pairs are K = 2); the star product's retrieval schedule (b stripes, R
subqueries) and the GXSTPIR evaluation points f_l = alpha^(n+1+l) are ours.

Length (about 800 lines): three protocols and the driver they share, kept
together because they differ only in their codes and share every message,
check and measurement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from ... import field, linalg, poly
from ..._checks import check_elements, check_int, check_prime
from ...field import EMBEDDING_PRIME
from ...nt import primitive_root
from ...prg import Prg, random_seed
from .costs import star_product_k
from ..._secrets import SecretHolder
from ..common.wire import Reader, Writer, check_increasing
from .messages import Answer, Query, ShareMessage
from .params import DOMAIN, Assignment, check_objective, check_rng, evaluate, lincomb, powers
from .round import OSFLRoundResult, check_label_tensor, check_sums
from .session import QUERY, SHARE, ClientSession, FederatorSession, drive

__all__ = ["Scheme", "ApproachResult", "Approach2", "StarProduct", "GXSTPIR", "SchemeClient", "SchemeFederator", "approach2",
           "star_product", "gxstpir"]

_U64 = np.uint64


# ----------------------------------------------------------------- small exact algebra
def _inv(x: int, p: int) -> int:
    return pow(x % p, p - 2, p)


def _dual_weights(xs, p) -> list:
    """nu_a = prod_{b != a} (xs[a] - xs[b])^(-1): sum_a nu_a g(xs[a]) = 0 for deg g <= len(xs) - 2."""
    out = []
    for a, xa in enumerate(xs):
        d = 1
        for b, xb in enumerate(xs):
            if b != a:
                d = d * (xa - xb) % p
        out.append(_inv(d, p))
    return out


def _low_coeff_decoder(xs, K, p) -> np.ndarray:
    """K x len(xs): the coefficients 0..K-1 of the interpolant of values at xs."""
    W = poly.lagrange_matrix(np.array(xs, dtype=_U64), p)       # coefficients = values @ W
    return np.ascontiguousarray(W[:, :K].T)


def _reinterpolate(src, dst, p) -> np.ndarray:
    """len(dst) x len(src): values at dst of the polynomial of degree < len(src) through values at src."""
    W = poly.lagrange_matrix(np.array(src, dtype=_U64), p)
    V = poly.vandermonde(np.array(dst, dtype=_U64), len(src), p)
    return linalg.matmul(V, np.ascontiguousarray(W.T), p)


def _points(n, p) -> list:
    return [int(v) for v in powers(primitive_root(p), n + 1, p)[1:]]     # alpha^1 .. alpha^n


def _pos(v, name, lo):
    v = check_int(v, name)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def _stream(seed, scheme: bytes, session, idx, out, p):
    Prg(bytes(seed), DOMAIN + scheme + b"/mask/" + len(session).to_bytes(4, "big") + bytes(session)
        + idx.to_bytes(8, "big")).field_into(out, p)
    return out


def _strided_rows(labels, K, P, c) -> np.ndarray:
    """K x (P c): label u P + q sits in row u, columns q c .. q c + c - 1 (zero padded)."""
    C = np.zeros((K, P * c), dtype=_U64)
    C.reshape(-1)[: labels.size] = labels.reshape(-1)
    return C


# ----------------------------------------------------------------- the parties' steps, checked
class Scheme:
    """The checked public steps every approach shares; the subclasses
    implement ``_share``, ``_queries``, ``_answer``, ``_reconstruct``,
    ``members(t)``, ``query_len(i)`` (and ``objectives(i)`` when not every
    client holds every objective) and set the attributes below."""
    name: str
    n: int
    T: int
    s: int
    c: int
    p: int
    z_s: int
    z_q: int
    store_cols: int                      # columns of a client's aggregated shares per objective
    responders: tuple[int, ...]          # the clients queried, in the order of the answers
    answers_shape: tuple[int, ...]       # of the stacked answers ``reconstruct`` takes

    def members(self, t: int) -> Sequence[int]:
        """The clients holding shares of objective ``t``."""
        raise NotImplementedError

    def query_len(self, i: int) -> int:
        """Field elements of client ``i``'s query."""
        raise NotImplementedError

    def _share(self, t: int, labels: np.ndarray, rng: Prg) -> np.ndarray:
        raise NotImplementedError

    def _queries(self, j: int, rng: Prg) -> dict[int, Query]:
        raise NotImplementedError

    def _answer(self, i: int, store: np.ndarray, query: Query, mask: tuple[bytes, bytes] | None) -> Answer:
        raise NotImplementedError

    def _reconstruct(self, j: int, A: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def objectives(self, i: int) -> tuple[int, ...]:
        """The objectives client ``i`` stores shares of."""
        return tuple(range(self.T))

    def share(self, t: int, labels: np.ndarray, rng: Prg | None = None) -> np.ndarray:
        """One client's shares of its (s, c) integer ``labels`` of objective
        ``t``: (len(members(t)), store_cols), row a for the a-th member.
        ``rng``: None (fresh CSPRNG stream) or a ``secea_fast.prg.Prg``."""
        t = check_objective(t, self.T)
        if not isinstance(labels, np.ndarray) or labels.dtype.kind not in "iu":
            raise TypeError(f"labels must be a numpy integer array of shape (s, c), got "
                            f"{type(labels).__name__}{'' if not isinstance(labels, np.ndarray) else ' ' + str(labels.dtype)}")
        if labels.shape != (self.s, self.c):
            raise ValueError(f"labels must have shape (s, c) = {(self.s, self.c)}, got {labels.shape}")
        if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= self.p):
            raise ValueError(f"labels must hold non-negative integers below p = {self.p}")
        return self._share(t, labels, check_rng(rng, self.name.encode() + b"/share"))

    def queries(self, j: int, rng: Prg | None = None) -> dict[int, Query]:
        """{client: Query} for the hidden objective ``j`` (fresh randomness
        from ``rng``: None or a ``Prg``)."""
        return self._queries(check_objective(j, self.T), check_rng(rng, self.name.encode() + b"/query"))

    def answer(self, i: int, store: np.ndarray, query: Query,
               mask: tuple[bytes, bytes] | None = None) -> Answer:
        """Client ``i``'s answer from its aggregated shares ``store``
        ((len(objectives(i)), store_cols) uint64, rows in the order of
        objectives(i)) and its ``query``; ``mask``: None or (shared seed,
        session) for symmetric privacy (Sec. VI)."""
        i = check_int(i, "i")
        if i not in self.responders:
            raise ValueError(f"client {i} is not one of the answering clients {self.responders[0]}.."
                             f"{self.responders[-1]}")
        store = check_elements(store, self.p, "store", ndim=2)
        if store.shape != (len(self.objectives(i)), self.store_cols):
            raise ValueError(f"store must have shape {(len(self.objectives(i)), self.store_cols)}, got {store.shape}")
        if not isinstance(query, Query):
            raise TypeError(f"query must be a Query, got {type(query).__name__}")
        if query.client != i:
            raise ValueError(f"query is addressed to client {query.client}, not {i}")
        check_elements(query.values, self.p, "query.values", ndim=1)
        if query.values.shape != (self.query_len(i),):
            raise ValueError(f"query.values must hold {self.query_len(i)} values, got {query.values.shape}")
        if mask is not None:
            if not isinstance(mask, tuple) or len(mask) != 2:
                raise TypeError("mask must be None or a (shared seed, session) tuple")
            seed, session = mask
            if not isinstance(seed, (bytes, bytearray)) or not 16 <= len(seed) <= 64:
                raise ValueError("mask: the shared seed must be 16 to 64 bytes")
            if not isinstance(session, (bytes, bytearray)) or not session:
                raise ValueError("mask: the session must be non-empty bytes, fresh for every retrieval")
        return self._answer(i, store, query, mask)

    def client(self, i: int, labels: Mapping[int, np.ndarray],
               mask: tuple[bytes, bytes] | None = None) -> SchemeClient:
        """Client ``i``'s party (the engine of a ``session.ClientSession``):
        ``labels`` {t: (s, c) integer array} for every t in objectives(i);
        ``mask``: None or (shared seed, session) (Sec. VI)."""
        return SchemeClient(self, i, labels, mask)

    def federator(self, j: int) -> SchemeFederator:
        """The federator with hidden objective ``j`` (a ``FederatorSession``'s engine)."""
        return SchemeFederator(self, j)

    def import_client(self, data: bytes) -> SchemeClient:
        """The client ``SchemeClient.export_state`` wrote."""
        return SchemeClient.import_state(self, data)

    def import_federator(self, data: bytes) -> SchemeFederator:
        """The federator ``SchemeFederator.export_state`` wrote."""
        r = Reader(data, b"OSAF", "approach federator state")
        j = r.u64()
        r.done()
        return SchemeFederator(self, j)

    def reconstruct(self, j: int, A: np.ndarray) -> np.ndarray:
        """The (s, c) label sums of objective ``j`` from the stacked answers
        ``A`` (``answers_shape``, rows in the order of ``responders``)."""
        j = check_objective(j, self.T)
        A = check_elements(A, self.p, "A")
        if A.shape != self.answers_shape:
            raise ValueError(f"A must have shape {self.answers_shape}, got {A.shape}")
        return self._reconstruct(j, A)


class SchemeClient(SecretHolder):
    """Client ``index`` of an approach: shares its labels with the scheme's
    ``share``, aggregates the shares it receives into its store, answers
    with the scheme's ``answer`` (the sessions of ``osfl.session`` drive
    it).  Holds secrets (labels, stored shares, mask seed): not picklable."""

    wire_params = None                       # messages are parsed without OSFLParams

    def __init__(self, scheme: Scheme, index: int, labels: Mapping[int, np.ndarray],
                 mask: tuple[bytes, bytes] | None = None) -> None:
        self.scheme, self.index = scheme, check_int(index, "index")
        if not 0 <= self.index < scheme.n:
            raise ValueError(f"client index must be in [0, n = {scheme.n}), got {self.index}")
        self.objectives = tuple(scheme.objectives(self.index))
        missing = [t for t in self.objectives if t not in labels]
        if missing:
            raise ValueError(f"client {self.index}: labels missing for objectives {missing}")
        self._labels = {t: labels[t] for t in self.objectives}
        self._mask = mask
        self._pos = {t: a for a, t in enumerate(self.objectives)}
        self._store = np.zeros((len(self.objectives), scheme.store_cols), dtype=_U64)
        self._got: dict[int, set[int]] = {t: set() for t in self.objectives}
        self._shape = (scheme.store_cols // scheme.c, scheme.c)
        self._shared = False

    def share(self, rng: Prg | None = None) -> list[ShareMessage]:
        """The share messages to the other members of each objective (one
        ``rng`` stream for all of them; None: fresh).  Once."""
        if self._shared:
            raise ValueError(f"client {self.index} has already shared its labels")
        S, i = self.scheme, self.index
        g = check_rng(rng, S.name.encode() + b"/share")
        out = []
        for t in self.objectives:
            shares = S.share(t, self._labels[t], g)
            for a, i1 in enumerate(S.members(t)):
                if i1 == i:
                    self._add(t, i, shares[a])
                else:
                    out.append(ShareMessage(i, i1, t, shares[a].reshape(self._shape)))
        self._shared = True
        return out

    def receive(self, msg: ShareMessage) -> None:
        """Adds another member's share into the store."""
        if not isinstance(msg, ShareMessage):
            raise TypeError(f"expected a ShareMessage, got {type(msg).__name__}")
        if msg.receiver != self.index:
            raise ValueError(f"client {self.index} received a share addressed to client {msg.receiver}")
        if msg.objective not in self._pos:
            raise ValueError(f"client {self.index} does not store objective {msg.objective}")
        if msg.sender == self.index or msg.sender not in self.scheme.members(msg.objective):
            raise ValueError(f"client {msg.sender} is not another member of objective {msg.objective}")
        v = check_elements(msg.values, self.scheme.p, "ShareMessage.values", ndim=2)
        if v.shape != self._shape:
            raise ValueError(f"ShareMessage.values must have shape {self._shape}, got {v.shape}")
        self._add(msg.objective, msg.sender, v.reshape(-1))

    def _add(self, t, sender, row):
        if sender in self._got[t]:
            raise ValueError(f"client {self.index} already has client {sender}'s share of objective {t}")
        k = self._pos[t]
        self._store[k] = field.add(self._store[k], row, self.scheme.p)
        self._got[t].add(sender)

    @property
    def ready(self) -> bool:
        """Every member's share of every stored objective is in."""
        return all(len(self._got[t]) == len(self.scheme.members(t)) for t in self.objectives)

    def answer(self, query: Query) -> Answer:
        """The scheme's answer from the store (with the mask in symmetric mode)."""
        return self.scheme.answer(self.index, self._store, query, self._mask)

    def export_state(self) -> bytes:
        """The client's state as bytes (labels, store, senders, mask seed: its own storage only)."""
        seed, session = self._mask if self._mask is not None else (b"", b"")
        w = (Writer(b"OSAC").u64(self.index).u64(self._shared).blob(bytes(seed)).blob(bytes(session))
             .array(self._store))
        for t in self.objectives:
            w.array(np.ascontiguousarray(self._labels[t], dtype=_U64))
            w.array(np.array(sorted(self._got[t]), dtype=_U64))
        return w.bytes()

    @classmethod
    def import_state(cls, scheme: Scheme, data: bytes) -> SchemeClient:
        """The client ``export_state`` wrote, exactly (nothing drawn afresh)."""
        r = Reader(data, b"OSAC", "approach client state")
        index, shared = r.u64(), r.flag()
        seed, session = r.blob(64), r.blob(1 << 20)
        store = r.array(2)
        if not 0 <= index < scheme.n:
            raise ValueError(f"approach client state: index {index} is not a client (n = {scheme.n})")
        labels, got = {}, {}
        for t in scheme.objectives(index):
            labels[t] = r.array(2)
            g = [int(v) for v in r.array(1)]
            check_increasing(g, f"approach client state: senders of objective {t}")
            if not set(g) <= set(scheme.members(t)):
                raise ValueError(f"approach client state: senders {g} are not members of objective {t}")
            got[t] = set(g)
        r.done()
        if bool(seed) != bool(session) or (seed and not 16 <= len(seed) <= 64):
            raise ValueError("approach client state: a mask is a 16-64 byte seed and a non-empty session, or neither")
        cl = cls(scheme, index, labels, (seed, session) if seed else None)
        if store.shape != cl._store.shape:
            raise ValueError(f"approach client state: store of shape {store.shape}, expected {cl._store.shape}")
        cl._store = check_elements(store, scheme.p, "approach client state: store", ndim=2)
        cl._got, cl._shared = got, shared
        return cl


class SchemeFederator:
    """The federator of an approach with hidden objective ``j``."""

    wire_params = None

    def __init__(self, scheme: Scheme, j: int) -> None:
        self.scheme, self.j = scheme, check_objective(j, scheme.T)

    @property
    def responders(self) -> tuple[int, ...]:
        """The clients queried (the decoder needs an answer from each)."""
        return tuple(self.scheme.responders)

    def queries(self, rng: Prg | None = None) -> dict[int, Query]:
        """The scheme's queries for ``j``."""
        return self.scheme.queries(self.j, check_rng(rng, self.scheme.name.encode() + b"/query"))

    def reconstruct(self, answers: Mapping[int, Answer]) -> np.ndarray:
        """The (s, c) sums from one answer per responder."""
        S = self.scheme
        A = np.stack([check_elements(answers[i].values, S.p, "Answer.values", ndim=2) for i in S.responders])
        return S.reconstruct(self.j, np.ascontiguousarray(A.reshape(S.answers_shape)))

    def export_state(self) -> bytes:
        """The federator's state: its hidden objective."""
        return Writer(b"OSAF").u64(self.j).bytes()


# ----------------------------------------------------------------- Approach 2 (Sec. IV)
class _RampStorage(Scheme):
    """The ramp-shared storage of Approach 2 and the star product: every
    client holds every objective, K labels per polynomial padded with
    z_s random coefficients, evaluated at the n points (``V``: n x k_C)."""
    k_C: int                             # storage code dimension: K labels + z_s random coefficients
    K: int
    P: int                               # partitions of the s labels
    cols: int                            # P c
    V: np.ndarray                        # n x k_C evaluation matrix

    def members(self, t: int) -> Sequence[int]:
        """The clients holding shares of objective ``t``."""
        return range(self.n)

    def _share(self, t, labels, rng) -> np.ndarray:
        """Shares of one client's (s, c) labels of objective t: (n, P c), row i1 to client i1."""
        C = np.empty((self.k_C, self.cols), dtype=_U64)
        C[:self.K] = _strided_rows(labels, self.K, self.P, self.c)
        rng.field_into(C[self.K:], self.p)
        return evaluate(self.V, C, self.p)


class Approach2(_RampStorage):
    """Approach 2 of Sec. IV (Egger, Urbanke, Bitar 2025), generalized from
    label pairs (K = 2, z = 1, the paper's text) to K labels per polynomial
    and any z_s, z_q, as its footnote 2 allows.  Every client computes every
    objective (rho = n).

    * Sharing: for objective t, client i splits its s labels into
      P = ceil(s / K) strided partitions (label u P + q is coefficient u of
      partition q, zero padded) and shares
      f(x) = sum_{u<K} x^u y_u + sum_{tau<z_s} x^(K+tau) r_tau
      (the Sec. IV polynomial y_l + x y_(l+1) + x^2 r for K = 2, z_s = 1),
      sending f(alpha_i1) to every other client i1.
    * Query: q^(t,j)(x) = delta_tj + sum_{tau<z_q} x^(K+tau) k_tau^(t) (the
      paper's delta + x^2 k), one scalar k per (t, tau) shared by all
      partitions and classes (as deviation 2 of the main scheme), sent to
      the N = 2K + z_s + z_q - 1 clients 0..N-1 (a set independent of j).
    * Answer: A^i = sum_t q^(t,j)(alpha_i) F^(t)(alpha_i), an evaluation of
      a polynomial of degree 2K + z_s + z_q - 2 = N - 1 whose coefficients
      0..K-1 are the label sums of objective j (the k-terms start at x^K).
      The federator interpolates them from the N answers (the paper's "any 5
      answers" for K = 2, z = 1).
    * Symmetric privacy (Sec. VI): the clients add R(alpha_i) with
      R(x) = sum_{m=K}^{N-1} x^m s_m from their shared seed; that is the
      paper's R_p(x) = sum_{tau=1}^{k_C+z_q-1} x^(k_C-z_s+tau-1) s_tau with
      k_C = K + z_s, and here it is exactly right: the N answers then
      determine the K sums and nothing else (coefficients K..N-1 uniform).

    Cost: T n (n - 1) P c elements shared (T s n (n - 1) / K for K | s; the
    paper's T (s/2) n (n - 1)), N P c downloaded ((2K + z_s + z_q - 1) s c / K;
    the paper's 5s/2), T N query scalars."""

    name = "approach2"

    def __init__(self, n: int, T: int, s: int, c: int, z_s: int, z_q: int, *, K: int = 2,
                 p: int = EMBEDDING_PRIME) -> None:
        self.n, self.T = _pos(n, "n", 1), _pos(T, "T", 1)
        self.s, self.c = _pos(s, "s", 1), _pos(c, "c", 1)
        self.z_s, self.z_q = _pos(z_s, "z_s", 0), _pos(z_q, "z_q", 0)
        self.K = _pos(K, "K", 1)
        self.p = p = check_prime(p)
        self.N = 2 * self.K + self.z_s + self.z_q - 1
        if self.N > self.n:
            raise ValueError(f"Approach 2 needs n >= 2K + z_s + z_q - 1 = {self.N} clients (answers), got n = {n}")
        if self.n > p - 1:
            raise ValueError(f"the field is too small: n = {n} clients need n <= p - 1 = {p - 1}")
        self.k_C = self.K + self.z_s
        self.P = -(-self.s // self.K)
        self.cols = self.store_cols = self.P * self.c
        self.rho = self.n
        pts = _points(self.n, p)
        self.points = np.array(pts, dtype=_U64)
        self.V = poly.vandermonde(self.points, self.k_C, p)                       # n x k_C
        self.responders = tuple(range(self.N))
        full = poly.vandermonde(self.points[:self.N], self.N, p)                   # N x N
        self.qpow = np.ascontiguousarray(full[:, self.K:self.K + self.z_q])
        self.mpow = np.ascontiguousarray(full[:, self.K:])                         # the Sec. VI R(x)
        self.decoder = _low_coeff_decoder(pts[:self.N], self.K, p)                # K x N
        self.answers_shape = (self.N, self.cols)

    def query_len(self, i: int) -> int:
        """Field elements of client ``i``'s query."""
        return self.T

    def _queries(self, j, rng) -> dict:
        k = rng.field(self.T * self.z_q, self.p).reshape(self.T, self.z_q)
        Q = (linalg.matmul(k, np.ascontiguousarray(self.qpow.T), self.p) if self.z_q
             else np.zeros((self.T, self.N), dtype=_U64))
        Q[j] = field.add(Q[j], 1 % self.p, self.p)
        objs = np.arange(self.T, dtype=_U64)
        return {i: Query(i, objs.copy(), np.ascontiguousarray(Q[:, i])) for i in self.responders}

    def _answer(self, i, store, query, mask) -> Answer:
        a = lincomb(query.values, store, self.cols, self.p)
        if mask is not None:            # R(alpha_i): the N - K shared coefficients from one stream
            seed, session = mask
            S = _stream(seed, b"approach2", session, 0, np.empty((self.N - self.K, self.cols), dtype=_U64), self.p)
            a = field.add(a, lincomb(self.mpow[i], S, self.cols, self.p), self.p)
        return Answer(i, a.reshape(self.P, self.c))

    def _reconstruct(self, j, A) -> np.ndarray:
        """A: (N, P c) answers of the responders in order; returns (s, c)."""
        Y = linalg.matmul(self.decoder, A, self.p)
        return Y.reshape(-1)[: self.s * self.c].reshape(self.s, self.c)


# ----------------------------------------------------------------- Approach 3: star-product PIR (Sec. VII-a)
class StarProduct(_RampStorage):
    """Approach 3 / the Table I row "rho = n": ramp-shared storage with a
    storage code C = GRS(n, k_C) (Sec. VII-a; k_C* of Lemma 1 by default),
    queried with the star-product PIR scheme of Freij-Hollanti, Gnilke,
    Hollanti, Karpuk (2017) with query code D = GRS(n, z_q) on the same
    locators, so C*D = GRS(n, k_C + z_q - 1) with d(C*D) - 1 = n - k_C - z_q + 1.

    * Sharing: as Approach 2 with K = k_C - z_s labels and z_s random
      coefficients per polynomial (Sec. V-b, eq. 1 with rho = n; the example
      of Approach 3 for k_C = 3, z = 1).  P = ceil(s / K) partitions, padded to
      a multiple of b (below), so every client stores per objective a b x W
      array: b stripes of W = P c / b columns.
    * Schedule: each subquery retrieves d = n - k_C - z_q + 1 stored symbols
      of objective j (one stripe of W columns from each of d distinct
      clients), and each stripe needs k_C of them; with b = d / gcd(k_C, d)
      stripes, R = k_C / gcd(k_C, d) subqueries retrieve exactly b k_C
      symbols.  Pair g = 0..b k_C - 1 is (stripe g // k_C, client g mod n);
      subquery r takes pairs r d .. r d + d - 1 (distinct clients, and k_C
      distinct clients per stripe).
    * Query (to every client, for every subquery r, objective t, stripe
      beta): q_i = d_i^(r,t,beta) + [t = j and (beta, i) in subquery r], with
      d^(r,t,beta) an independent uniform codeword of D:
      d_i = sum_{tau<z_q} alpha_i^tau k_tau.  Any z_q clients' queries are
      uniform (d(D^perp) = z_q + 1).
    * Answer: sum_{t,beta} q_i^(r,t,beta) F^(t)_beta(alpha_i): a C*D codeword
      plus, at the d clients of the subquery, their stored stripe of
      objective j.  The federator interpolates the codeword from the other
      n - d = k_C + z_q - 1 answers, subtracts it at the d erasures, and,
      once a stripe has k_C stored symbols, interpolates its k_C coefficients
      (K label sums and z_s aggregated random coefficients, the by-product
      that costs the factor (k_C - z_s) / k_C of Sec. VII-a).
    * Symmetric privacy: the clients add R_r(alpha_i), R_r a shared uniform
      polynomial of degree < k_C + z_q - 1 (a uniform C*D codeword) per
      subquery, so the codeword part the federator interpolates is uniform.

    Cost: T n (n - 1) P c shared, R n W = k_C n P c / d downloaded (Table I:
    s c k_C n / ((k_C - z_s)(n - k_C - z_q + 1)) when K b | s), R n T b query
    scalars.  (The example in Sec. VII-a states a download of 5s/2, "the same
    as for Approach 2"; the scheme, and Table I's formula, give 15s/4 at
    n = 5, k_C = 3, z = 1: the stored randomness is retrieved too.)"""

    name = "star_product"

    def __init__(self, n: int, T: int, s: int, c: int, z_s: int, z_q: int, *, k_C: int | None = None,
                 p: int = EMBEDDING_PRIME) -> None:
        self.n, self.T = _pos(n, "n", 1), _pos(T, "T", 1)
        self.s, self.c = _pos(s, "s", 1), _pos(c, "c", 1)
        self.z_s, self.z_q = _pos(z_s, "z_s", 0), _pos(z_q, "z_q", 0)
        self.p = p = check_prime(p)
        if k_C is None:
            k_C = star_product_k(self.n, self.T, self.z_s, self.z_q)[1]
            if k_C is None:
                raise ValueError(f"no storage dimension: need n >= z_s + z_q + 1 = {self.z_s + self.z_q + 1}, "
                                 f"got n = {n}")
        self.k_C = k_C = check_int(k_C, "k_C")
        self.K = k_C - self.z_s
        self.d = self.n - k_C - self.z_q + 1
        if self.K < 1 or self.d < 1:
            raise ValueError(f"k_C must satisfy z_s + 1 <= k_C <= n - z_q ({self.z_s + 1} <= k_C <= "
                             f"{self.n - self.z_q}), got k_C = {k_C}")
        if self.n > p - 1:
            raise ValueError(f"the field is too small: n = {n} clients need n <= p - 1 = {p - 1}")
        g = math.gcd(k_C, self.d)
        self.b, self.R = self.d // g, k_C // g
        P = -(-self.s // self.K)
        self.P = -(-P // self.b) * self.b
        self.cols = self.store_cols = self.P * self.c
        self.W = self.cols // self.b
        self.rho = self.n
        pts = _points(self.n, p)
        self.points = np.array(pts, dtype=_U64)
        self.V = poly.vandermonde(self.points, k_C, p)
        self.responders = tuple(range(self.n))
        pairs = [(gi // k_C, gi % self.n) for gi in range(self.b * k_C)]
        self.rounds = [pairs[r * self.d:(r + 1) * self.d] for r in range(self.R)]
        self.qpow = poly.vandermonde(self.points, self.z_q, p) if self.z_q else None   # n x z_q
        self.mpow = poly.vandermonde(self.points, k_C + self.z_q - 1, p)            # C*D codewords
        # decoding: per subquery, the codeword at the d erasures from the other answers
        self._erase = []
        for rnd in self.rounds:
            J = [i for _, i in rnd]
            rest = [i for i in range(self.n) if i not in J]
            self._erase.append((J, rest, _reinterpolate([pts[i] for i in rest], [pts[i] for i in J], p)))
        self._stripe_src: dict[int, list[tuple[int, int, int]]] = {}   # stripe -> (subquery, slot, client)
        for r, rnd in enumerate(self.rounds):
            for a, (beta, i) in enumerate(rnd):
                self._stripe_src.setdefault(beta, []).append((r, a, i))
        self._stripe_dec = {beta: _low_coeff_decoder([pts[i] for _, _, i in src], self.K, p)
                            for beta, src in self._stripe_src.items()}
        self.answers_shape = (self.n, self.R, self.W)

    def query_len(self, i: int) -> int:
        """Field elements of client ``i``'s query."""
        return self.R * self.T * self.b

    def _queries(self, j, rng) -> dict:
        """{i: Query}: values (R, T, b) flattened; objectives lists t per value."""
        n, T, b, R, p = self.n, self.T, self.b, self.R, self.p
        if self.qpow is not None:                      # z_q > 0
            k = rng.field(R * T * b * self.z_q, p).reshape(R * T * b, self.z_q)
            Q = linalg.matmul(self.qpow, np.ascontiguousarray(k.T), p).reshape(n, R, T, b)
        else:
            Q = np.zeros((n, R, T, b), dtype=_U64)
        one = 1 % p
        for r, rnd in enumerate(self.rounds):
            for beta, i in rnd:
                Q[i, r, j, beta] = (int(Q[i, r, j, beta]) + one) % p
        objs = np.tile(np.repeat(np.arange(T, dtype=_U64), b), R)
        return {i: Query(i, objs.copy(), np.ascontiguousarray(Q[i].reshape(-1))) for i in range(n)}

    def _answer(self, i, store, query, mask) -> Answer:
        """store: (T, P c) aggregated shares; returns (R, W)."""
        Qm = np.ascontiguousarray(query.values.reshape(self.R, self.T * self.b))
        A = linalg.matmul(Qm, store.reshape(self.T * self.b, self.W), self.p)
        if mask is not None:            # R_r(alpha_i) for every subquery: coefficients (k_C + z_q - 1, R W), one stream
            seed, session = mask
            kz, RW = self.k_C + self.z_q - 1, self.R * self.W
            S = _stream(seed, b"star_product", session, 0, np.empty((kz, RW), dtype=_U64), self.p)
            A = field.add(A.reshape(-1), lincomb(self.mpow[i], S, RW, self.p), self.p).reshape(self.R, self.W)
        return Answer(i, A)

    def _reconstruct(self, j, A) -> np.ndarray:
        """A: (n, R, W) answers; returns (s, c)."""
        p = self.p
        got = []
        for r, (J, rest, E) in enumerate(self._erase):
            cw = linalg.matmul(E, np.ascontiguousarray(A[rest, r]), p)
            got.append(field.sub(np.ascontiguousarray(A[J, r]), cw, p))
        Y = np.empty((self.K, self.b, self.W), dtype=_U64)
        for beta, src in self._stripe_src.items():
            vals = np.stack([got[r][a] for r, a, _ in src])
            Y[:, beta] = linalg.matmul(self._stripe_dec[beta], vals, p)
        return Y.reshape(-1)[: self.s * self.c].reshape(self.s, self.c)


# ----------------------------------------------------------------- GXSTPIR (Sec. VII-b)
class GXSTPIR(Scheme):
    """The "Shamir + GXSTPIR" baseline of Sec. VII-b and Table I on any task
    assignment (column weight rho): L = rho - z_s - z_q labels are retrieved
    per downloaded symbol of each of the n clients.

    * Storage (cross-subspace alignment, Jia, Sun, Jafar 2019): the s labels
      of an objective are split into L rows (label l B + b is row l,
      B = ceil(s / L) columns of c classes) and every label is Shamir-shared
      with its secret at f_l = alpha^(n+1+l) instead of 0:
      S_l(x) = y_l + (f_l - x) sum_{m<z_s} x^m Z_{l,m}, a degree-z_s
      polynomial with S_l(f_l) = y_l, evaluated at the rho clients of the
      objective (rho - 1 messages of s c elements per client and objective:
      Table I's sharing rate 1 / (T rho (rho - 1))).  Aggregation is linear.
    * Query: client i of I(e_t) receives, for l < L,
      Q_{t,l}(alpha_i) = delta_tj / (f_l - alpha_i) + sum_{tau<z_q} alpha_i^tau k_{t,l,tau}
      (any z_q of them uniform).
    * Answer (the graph-based combination of Jia and Jafar 2020): client i
      returns A^i = sum_{t in I(i)} nu_{t,i} sum_l Q_{t,l}(alpha_i) S^(t)_l(alpha_i),
      nu_{t,i} the dual-GRS weights of I(e_t) (as nu of Sec. V-c).  For
      objective j this is nu_{j,i} (sum_l ybar_l / (f_l - alpha_i) + a
      polynomial of degree <= z_s + z_q - 1), for t != j only the polynomial.
    * Reconstruction: with h_l the Lagrange basis on f_0..f_(L-1) (degree
      L - 1), sum_i h_l(alpha_i) A^i = ybar_l / prod_{k in I(e_j)} (f_l - alpha_k):
      every polynomial term has degree <= L - 1 + z_s + z_q - 1 = rho - 2 and
      vanishes under the dual weights, and sum_i nu_i h(alpha_i) / (f - alpha_i)
      = h(f) / prod_k (f - alpha_k) by partial fractions.
    * Symmetric privacy: the answers' dependence on anything but ybar lies
      in the kernel of those L functionals, spanned by n - L vectors on
      windows of L + 1 consecutive clients (dual weights of the window's
      points); each client adds sum_f b_f[i] s_f over the <= L + 1 windows
      containing it, s_f shared uniform streams.

    Cost: T rho (rho - 1) s' c shared, n B c downloaded (s' = L B; Table I:
    s c n / (rho - z_s - z_q) when L | s), T rho L query scalars.  Needs
    n + L <= p - 1 (the f_l distinct from the alpha_i)."""

    name = "gxstpir"

    def __init__(self, assignment: Assignment | ArrayLike, s: int, c: int, z_s: int, z_q: int, *,
                 p: int = EMBEDDING_PRIME) -> None:
        asg = assignment if isinstance(assignment, Assignment) else Assignment(assignment)
        self.assignment = asg
        self.n, self.T, self.rho = asg.n, asg.T, asg.rho
        self.s, self.c = _pos(s, "s", 1), _pos(c, "c", 1)
        self.z_s, self.z_q = _pos(z_s, "z_s", 0), _pos(z_q, "z_q", 0)
        self.p = p = check_prime(p)
        self.L = self.rho - self.z_s - self.z_q
        if self.L < 1:
            raise ValueError(f"GXSTPIR needs rho >= z_s + z_q + 1 = {self.z_s + self.z_q + 1}, got rho = {self.rho}")
        if self.n + self.L > p - 1:
            raise ValueError(f"the field is too small: n + L = {self.n + self.L} distinct points alpha^i, f_l "
                             f"need n + L <= p - 1 = {p - 1}")
        self.B = -(-self.s // self.L)
        self.cols = self.B * self.c
        self.store_cols = self.L * self.cols
        pts = _points(self.n + self.L, p)
        self.alphas, self.fs = pts[:self.n], pts[self.n:]
        self.points = np.array(self.alphas, dtype=_U64)
        self.responders = tuple(range(self.n))
        self._nu = {t: _dual_weights([self.alphas[i] for i in asg.clients(t)], p) for t in range(self.T)}
        self._V: dict[int, np.ndarray] = {}       # objective -> Vandermonde of its members
        self._fvec = np.repeat(np.array(self.fs, dtype=_U64), self.cols)          # f_l per storage entry
        nL = self.n - self.L
        self.window = [_dual_weights(self.alphas[f:f + self.L + 1], p) for f in range(nL)]
        self.answers_shape = (self.n, self.cols)

    def objectives(self, i: int) -> tuple[int, ...]:
        """I(i) of the assignment."""
        return self.assignment.objectives(i)

    def query_len(self, i: int) -> int:
        """Field elements of client ``i``'s query."""
        return len(self.assignment.objectives(i)) * self.L

    def members(self, t: int) -> Sequence[int]:
        """I(e_t) of the assignment."""
        return self.assignment.clients(t)

    def _share(self, t, labels, rng) -> np.ndarray:
        """(rho, L B c): row a to the a-th client of I(e_t)."""
        p, zs, Lc = self.p, self.z_s, self.L * self.cols
        Z = np.empty((zs, Lc), dtype=_U64)
        rng.field_into(Z, p)
        C = np.empty((zs + 1, Lc), dtype=_U64)
        C[0] = _strided_rows(labels, self.L, self.B, self.c).reshape(-1)
        if zs:
            # y + (f - x) sum_m x^m Z_m: coefficients y + f Z_0, f Z_m - Z_(m-1), -Z_(zs-1)
            C[0] = field.add(C[0], field.mul(Z[0], self._fvec, p), p)
            for m in range(1, zs):
                C[m] = field.sub(field.mul(Z[m], self._fvec, p), Z[m - 1], p)
            C[zs] = field.neg(Z[zs - 1], p)
        V = self._V.get(t)
        if V is None:
            V = self._V[t] = poly.vandermonde(self.points[list(self.members(t))], zs + 1, p)
        return evaluate(V, C, p)

    def _queries(self, j, rng) -> dict:
        n, T, L, p = self.n, self.T, self.L, self.p
        k = rng.field(T * L * self.z_q, p).reshape(T * L, self.z_q)
        Q = (linalg.matmul(k, np.ascontiguousarray(poly.vandermonde(self.points, self.z_q, p).T), p)
             if self.z_q else np.zeros((T * L, n), dtype=_U64)).reshape(T, L, n)
        for l, f in enumerate(self.fs):
            for i in self.members(j):
                Q[j, l, i] = (int(Q[j, l, i]) + _inv(f - self.alphas[i], p)) % p
        out = {}
        for i in range(n):
            objs = self.assignment.objectives(i)
            out[i] = Query(i, np.repeat(np.array(objs, dtype=_U64), L),
                           np.ascontiguousarray(Q[list(objs)][:, :, i].reshape(-1)))
        return out

    def _answer(self, i, store, query, mask) -> Answer:
        """store: (|I(i)|, L B c) aggregated shares, in the order of I(i)."""
        p, L = self.p, self.L
        objs = self.assignment.objectives(i)
        weights = []
        for u, t in enumerate(objs):
            nu = self._nu[t][self.members(t).index(i)]
            weights += [nu * int(query.values[u * L + l]) % p for l in range(L)]
        a = lincomb(weights, store.reshape(len(objs) * L, self.cols), self.cols, p)
        if mask is not None:
            seed, session = mask
            buf = np.empty(self.cols, dtype=_U64)
            for f in range(max(0, i - L), min(i, self.n - L - 1) + 1):
                _stream(seed, b"gxstpir", session, f, buf, p)
                a = field.add(a, field.mul(buf, self.window[f][i - f], p), p)
        return Answer(i, a.reshape(self.B, self.c))

    def decoder(self, j: int) -> np.ndarray:
        """L x n: row l = h_l(alpha_i) prod_{k in I(e_j)} (f_l - alpha_k)."""
        p, fs = self.p, self.fs
        D = np.empty((self.L, self.n), dtype=_U64)
        for l, fl in enumerate(fs):
            den = 1
            for m, fm in enumerate(fs):
                if m != l:
                    den = den * (fl - fm) % p
            scale = _inv(den, p)
            for i in self.members(j):
                scale = scale * (fl - self.alphas[i]) % p
            for i, x in enumerate(self.alphas):
                v = scale
                for m, fm in enumerate(fs):
                    if m != l:
                        v = v * (x - fm) % p
                D[l, i] = v
        return D

    def _reconstruct(self, j, A) -> np.ndarray:
        Y = linalg.matmul(self.decoder(j), A, self.p)
        return Y.reshape(-1)[: self.s * self.c].reshape(self.s, self.c)


# ----------------------------------------------------------------- the shared driver
@dataclass
class ApproachResult(OSFLRoundResult[Scheme]):
    """``OSFLRoundResult`` of one of the approaches (``info["scheme"]`` names
    it), with ``transcript`` (when asked for): {"shares": [ShareMessage],
    "queries": {i: Query}, "answers": {i: Answer}} as the parties received them."""
    params: Scheme  # the type argument, named here for the API reference (pdoc)
    transcript: Optional[dict] = None


def _labels_rho_n(labels, p, levels) -> tuple[Assignment, np.ndarray]:
    if not isinstance(labels, np.ndarray):
        raise TypeError(f"labels must be a numpy integer array of shape (n, T, s, c), got {type(labels).__name__}")
    if labels.ndim != 4:
        raise ValueError(f"labels must have shape (n, T, s, c), got {labels.shape}")
    n, T = labels.shape[:2]
    if n < 1 or T < 1:
        raise ValueError(f"labels need n >= 1 clients and T >= 1 objectives, got shape {labels.shape}")
    asg = Assignment(np.ones((n, T), dtype=np.uint8))
    return asg, check_label_tensor(labels, n, T, p, levels, [asg.clients(t) for t in range(T)])


def _check_levels(levels, labels, asg, p):
    if levels is None:
        return None
    levels = check_int(levels, "levels")
    if levels < 2:
        raise ValueError(f"levels (gamma) must be >= 2, got {levels}")
    if p < (levels - 1) * asg.n:
        raise ValueError(f"capacity check q >= (gamma - 1) n failed: p = {p} < ({levels} - 1) * {asg.n}")
    for t in range(asg.T):
        sub = labels[list(asg.clients(t)), t]
        if sub.size and int(sub.max()) >= levels:
            raise ValueError(f"labels of objective {t} have an entry >= levels = {levels}")
    return levels


def _drive(scheme, labels, asg, j, symmetric, *, wire, verify, transcript, query_rng, share_rng=None):
    if not isinstance(symmetric, bool):
        raise TypeError(f"symmetric must be a bool, got {type(symmetric).__name__}")
    for name, v in (("wire", wire), ("verify", verify), ("transcript", transcript)):
        if not isinstance(v, bool):
            raise TypeError(f"{name} must be a bool, got {type(v).__name__}")
    j = check_objective(j, asg.T)
    p, n, T = scheme.p, asg.n, asg.T
    s, c = scheme.s, scheme.c
    info = {"scheme": scheme.name, "n": n, "T": T, "rho": asg.rho, "z_s": scheme.z_s, "z_q": scheme.z_q,
            "s": s, "c": c, "p": p, "symmetric": symmetric}
    for key in ("K", "k_C", "L", "N", "b", "R"):
        if hasattr(scheme, key):
            info[key] = getattr(scheme, key)
    rep = ApproachResult(params=scheme, seconds={}, wall={}, bytes={}, info=info)
    tr: dict | None = {"shares": [], "queries": {}, "answers": {}} if transcript else None
    mask = (random_seed(32), random_seed(16)) if symmetric else None
    if share_rng is not None and not callable(share_rng):
        raise TypeError(f"share_rng must be None or a callable client index -> Prg, got {type(share_rng).__name__}")
    query_rng = check_rng(query_rng, scheme.name.encode() + b"/query")
    round_id = random_seed(16)
    clients = [ClientSession(scheme.client(i, {t: labels[i, t] for t in asg.objectives(i)}, mask),
                             round_id=round_id) for i in range(n)]
    fed = FederatorSession(scheme.federator(j), round_id=round_id)

    def record(f):
        if f.stage == SHARE:
            tr["shares"].append(f.body)
        elif f.stage == QUERY:
            tr["queries"][f.receiver] = f.body
        else:
            tr["answers"][f.sender] = f.body

    out = drive(clients, fed, wire=wire, on_deliver=record if tr is not None else None,
                share_rng=share_rng, query_rng=query_rng)
    assert out.sums is not None                      # drive returns only with the sums
    rep.seconds.update(out.seconds)
    rep.bytes.update(out.bytes)
    rep.elements.update(out.elements)
    rep.sums = out.sums.astype(np.int64)
    rep.wall = dict(rep.seconds)
    rep.transcript = tr
    if verify:
        check_sums(rep, labels, asg, j, scheme.name)
    return rep


def approach2(labels: ArrayLike, j: int, z_s: int, z_q: int, symmetric: bool = False, *, K: int = 2,
              p: int = EMBEDDING_PRIME, levels: int | None = None, wire: bool = False, verify: bool = False,
              transcript: bool = False, query_rng: Prg | None = None,
              share_rng: Callable[[int], Prg] | None = None) -> ApproachResult:
    """Approach 2 of Sec. IV (see ``Approach2``) on an (n, T, s, c) label
    tensor (every client computes every objective).  Returns an
    ``ApproachResult`` whose ``sums`` is the (s, c) int64 sum over all
    clients of labels[:, j].  ``K``: labels per share polynomial (the paper's
    2); ``symmetric``: Sec. VI privacy from the federator; ``wire``: every
    message through ``to_bytes``/``from_bytes``; ``verify``: compare with the
    plaintext sum; ``transcript``: keep the messages; ``query_rng`` (a
    ``Prg``): the federator's query randomness (fresh when None);
    ``share_rng``: None or a callable client index -> ``Prg`` (tests)."""
    p = check_prime(p)
    asg, labels = _labels_rho_n(labels, p, levels)
    levels = _check_levels(levels, labels, asg, p)
    n, T, s, c = labels.shape
    scheme = Approach2(n, T, s, c, z_s, z_q, K=K, p=p)
    return _drive(scheme, labels, asg, j, symmetric, wire=wire, verify=verify, transcript=transcript,
                  query_rng=query_rng, share_rng=share_rng)


def star_product(labels: ArrayLike, j: int, z_s: int, z_q: int, symmetric: bool = False, *, k_C: int | None = None,
                 p: int = EMBEDDING_PRIME, levels: int | None = None, wire: bool = False, verify: bool = False,
                 transcript: bool = False, query_rng: Prg | None = None,
                 share_rng: Callable[[int], Prg] | None = None) -> ApproachResult:
    """Approach 3 / star-product PIR over the ramp-shared storage (Sec. VII-a,
    Table I; see ``StarProduct``) on an (n, T, s, c) label tensor (rho = n).
    ``k_C``: the storage code dimension (default k_C* of Lemma 1).  Other
    arguments and the result as for ``approach2``."""
    p = check_prime(p)
    asg, labels = _labels_rho_n(labels, p, levels)
    levels = _check_levels(levels, labels, asg, p)
    n, T, s, c = labels.shape
    scheme = StarProduct(n, T, s, c, z_s, z_q, k_C=k_C, p=p)
    return _drive(scheme, labels, asg, j, symmetric, wire=wire, verify=verify, transcript=transcript,
                  query_rng=query_rng, share_rng=share_rng)


def gxstpir(labels: ArrayLike, incidence: Assignment | ArrayLike, j: int, z_s: int, z_q: int, symmetric: bool = False,
            *, p: int = EMBEDDING_PRIME, levels: int | None = None, wire: bool = False, verify: bool = False,
            transcript: bool = False, query_rng: Prg | None = None,
            share_rng: Callable[[int], Prg] | None = None) -> ApproachResult:
    """Shamir sharing + GXSTPIR (Sec. VII-b, Table I; see ``GXSTPIR``) with the
    inputs of ``run_round``: (n, T, s, c) labels (entries of unassigned
    (i, t) ignored), an incidence array or ``Assignment``, the hidden
    objective j.  Other arguments and the result as for ``approach2``."""
    p = check_prime(p)
    asg = incidence if isinstance(incidence, Assignment) else Assignment(incidence)
    labels = check_label_tensor(labels, asg.n, asg.T, p, levels, [asg.clients(t) for t in range(asg.T)])
    levels = _check_levels(levels, labels, asg, p)
    n, T, s, c = labels.shape
    scheme = GXSTPIR(asg, s, c, z_s, z_q, p=p)
    return _drive(scheme, labels, asg, j, symmetric, wire=wire, verify=verify, transcript=transcript,
                  query_rng=query_rng, share_rng=share_rng)
