"""The parties of objective-hiding one-shot FL (Egger, Urbanke, Bitar (2025),
One-shot federated learning with objective hiding): ``Client`` (sharing,
eq. 1; aggregation, Sec. V-b; answer, Sec. V-c; symmetric-privacy mask,
Sec. VI) and ``Federator`` (query, eq. 2; reconstruction, Sec. V-d).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from ... import field, linalg
from ...field import raw as fp
from ..._checks import check_elements, check_int
from ..._secrets import SecretHolder
from ...prg import Prg
from ..common.wire import Reader, Writer, check_increasing
from .messages import Answer, Query, ShareMessage
from .params import (DOMAIN, OSFLParams, check_labels_2d, check_objective, check_rng, evaluate, lincomb,
                     query_values)

__all__ = ["Client", "Federator"]

_U64 = np.uint64


# ----------------------------------------------------------------- parties
class Client(SecretHolder):
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

    def __init__(self, index: int, params: OSFLParams, labels: ArrayLike | dict[int, np.ndarray], *, shared_seed: bytes | None = None,
                 session: bytes = b"", threads: int | None = None) -> None:
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
        self._labels = {t: check_labels_2d(v, params, f"labels of client {i}, objective {t}")
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
        self._got: dict[int, set[int]] = {t: set() for t in self.objectives}   # t -> senders so far
        self._shared = False
        self._answered = False

    @property
    def symmetric(self) -> bool:
        return self._seed is not None

    def share(self, rng: Prg | None = None) -> list[ShareMessage]:
        """Eq. 1 for every t in I(i): returns the ShareMessages for the other
        clients of each I(e_t) and keeps its own evaluation.  ``rng``: None
        (fresh CSPRNG stream) or a ``secea_fast.prg.Prg``.  Once per client."""
        g = check_rng(rng, b"share")
        if self._shared:
            raise ValueError(f"client {self.index} has already shared its labels")
        P = self.params
        out = []
        for t in self.objectives:
            C = np.empty((P.k_C, P.cols), dtype=_U64)
            C[:P.K] = 0
            C[:P.K].reshape(-1)[: P.s * P.c] = self._labels[t].reshape(-1)
            g.field_into(C[P.K:], P.p)
            S = evaluate(P.vandermonde(t), C, P.p, threads=self.threads)
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
        self._acc[k] = fp.add(self._acc[k], row, self.params.p)   # rows checked on arrival
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
        a = lincomb(weights, self._acc, P.cols, P.p)
        if self._seed is not None:
            # m_i = sum_f b_f[i] s_f over the windows f..f+K that contain i; one
            # reused buffer for the streams (fresh large arrays cost page faults)
            B = P.window_basis()
            buf = np.empty(P.cols, dtype=_U64)
            for f in range(max(0, self.index - P.K), min(self.index, P.n - P.K - 1) + 1):
                Prg(self._seed, _mask_domain(self._session, f)).field_into(buf, P.p)
                a = fp.add(a, fp.scale(buf, int(B[f, self.index - f]), P.p), P.p)
        self._answered = True
        return Answer(self.index, a.reshape(P.n_partitions, P.c))

    @property
    def wire_params(self) -> OSFLParams:
        """The parameters messages to this client are parsed with."""
        return self.params

    STATE_MAGIC = b"OSCL"

    def export_state(self) -> bytes:
        """This client's whole state as bytes: its labels, aggregated shares,
        the senders counted, its flags and its symmetric-privacy seed and
        session (secrets: for its own storage only)."""
        w = (Writer(self.STATE_MAGIC).u64(self.index).u64(self._shared).u64(self._answered)
             .blob(self._seed or b"").blob(self._session).array(self._acc))
        for t in self.objectives:
            w.array(np.ascontiguousarray(self._labels[t], dtype=_U64))
            w.array(np.array(sorted(self._got[t]), dtype=_U64))
        return w.bytes()

    @classmethod
    def import_state(cls, data: bytes, params: OSFLParams, threads: int | None = None) -> Client:
        """The client ``export_state`` wrote, exactly (no share, seed or mask
        drawn afresh)."""
        r = Reader(data, cls.STATE_MAGIC, "Client state")
        index = r.u64()
        shared, answered = r.flag(), r.flag()
        seed, session = r.blob(64), r.blob(1 << 20)
        acc = r.array(2)
        if not 0 <= index < params.n:
            raise ValueError(f"Client state: index {index} is not a client of these params (n = {params.n})")
        objs = params.objectives(index)
        labels, got = {}, {}
        for t in objs:
            labels[t] = r.array(2)
            g = [int(v) for v in r.array(1)]
            check_increasing(g, f"Client state: senders of objective {t}")
            got[t] = set(g)
        r.done()
        cl = cls(index, params, labels, shared_seed=seed or None, session=session, threads=threads)
        if acc.shape != cl._acc.shape:
            raise ValueError(f"Client state: aggregated shares of shape {acc.shape}, expected {cl._acc.shape}")
        if acc.size and int(acc.max()) >= params.p:
            raise ValueError("Client state: aggregated share entry >= p")
        for t, senders in got.items():
            if not senders <= set(params.clients(t)):
                raise ValueError(f"Client state: senders {sorted(senders)} are not clients of objective {t}")
        cl._acc, cl._got, cl._shared, cl._answered = acc, got, shared, answered
        return cl


def _mask_domain(session: bytes, f: int) -> bytes:
    return DOMAIN + b"sym-mask/" + len(session).to_bytes(4, "big") + session + f.to_bytes(8, "big")


class Federator(SecretHolder):
    """The federator with hidden objective ``j``: sends the queries of eq. 2 and
    decodes the answers (Sec. V-d)."""

    def __init__(self, params: OSFLParams, j: int, threads: int | None = None) -> None:
        if not isinstance(params, OSFLParams):
            raise TypeError(f"params must be OSFLParams, got {type(params).__name__}")
        self.params = params
        self.j = check_objective(j, params.T)
        self.threads = threads
        self._A: np.ndarray | None = None

    @property
    def responders(self) -> tuple[int, ...]:
        """The clients queried: all n (the decoder of Sec. V-d needs every answer)."""
        return tuple(range(self.params.n))

    @property
    def wire_params(self) -> OSFLParams:
        """The parameters answers are parsed with."""
        return self.params

    def export_state(self) -> bytes:
        """The federator's state: its hidden objective."""
        return Writer(b"OSFD").u64(self.j).bytes()

    @classmethod
    def import_state(cls, data: bytes, params: OSFLParams, threads: int | None = None) -> Federator:
        """The federator ``export_state`` wrote."""
        r = Reader(data, b"OSFD", "Federator state")
        j = r.u64()
        r.done()
        return cls(params, j, threads=threads)

    def queries(self, rng: Prg | None = None) -> dict[int, Query]:
        """{i: Query} for every client i in [n] (clients with no objective get an
        empty query and still answer).  Fresh query randomness on every call."""
        P = self.params
        g = check_rng(rng, b"query")
        k = g.field(P.T * P.z_q, P.p).reshape(P.T, P.z_q)
        Q = query_values(P, self.j, k)
        out = {}
        for i in range(P.n):
            objs = P.objectives(i)
            out[i] = Query(i, np.array(objs, dtype=_U64), np.ascontiguousarray(Q[list(objs), i]))
        return out

    def reconstruct(self, answers: Mapping[int, Answer] | Iterable[Answer]) -> np.ndarray:
        """(s, c) uint64 array: sum_{i in I(e_j)} y_i^(j) (Theorem 3), from one
        Answer per client (a mapping or a sequence, any order)."""
        P = self.params
        items = answers.values() if isinstance(answers, Mapping) else answers
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
