"""The SecEA parties (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 4): ``Client`` (union
upload, sharing, queries, answers, decoding) and ``Server`` (sum, relay,
noise)."""
from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ... import field, linalg, poly, tuning
from ...field import raw as fp
from ..._checks import check_int
from ..._secrets import SecretHolder
from ...prg import Prg, X25519KeyPair, copy_stream, pairwise_seed, random_seed, uniform
from .._inputs import EntityId, EntityRows, entity_list, id_bytes, real_vector, rows_in_order
from ..common.wire import Reader, Writer, canonical_int, check_increasing
from .coding import DecodeResult, DecodingError, decode_values, gather_responses, union_from_sum
from .._secea_wire import as_u64, pad_domain
from .messages import Message
from .params import PSU_PRIME, SecEAParams, hash_ids

_SESSION_LABEL = b"secea_fast.secea.pair.v1"
_STATE_MAGIC = b"SEEs"


def _seed(r: Reader) -> bytes:
    seed = r.blob(32)
    if len(seed) != 32:
        raise ValueError(f"SecEA client state: a seed has {len(seed)} bytes, not 32")
    return seed


# ----------------------------------------------------------------- client
class Client(SecretHolder):
    """Client ``index`` (0-based) holding ``entities`` (ids: str, bytes, int).

    Secrets (X25519 key, pairwise seeds, union and query randomness) come
    from ``secrets`` and AES-CTR streams seeded from it."""

    def __init__(self, index: int, params: SecEAParams, entities: Iterable[EntityId]) -> None:
        if not isinstance(params, SecEAParams):
            raise TypeError("params must be SecEAParams")
        self.params = params
        self.index = check_int(index, "index")
        if not 0 <= self.index < params.N:
            raise ValueError(f"client index must be in [0, {params.N}), got {index}")
        self.ids = entity_list(entities, "entities")
        if not self.ids:
            raise ValueError(f"client {index} has no entities")
        self.hashes = hash_ids(self.ids)
        self._keypair = X25519KeyPair()
        self._seeds: dict[int, bytes] = {}
        self._self_seed = random_seed(32)
        self._query_seed = random_seed(32)
        self.union: NDArray[np.uint64] | None = None          # sorted uint64 hashes once known
        self.positions: np.ndarray | None = None      # union position of each own entity (ids order)
        self._y: NDArray[np.uint64] | None = None             # y_v (M x sub), this client's aggregated shares
        self._y_round: int | None = None
        self._y_resp: NDArray[np.uint64] | None = None        # c_v y_v, the responses' right operand (per round)
        self._y_packed: linalg.PackedRight | None = None      # c_v y_v packed for the response products (per round)
        self._used: set[tuple[int, str, int]] = set()         # (round, purpose, block) already used for pads
        self.threads: int | None = None        # threads of the response product (None: library default)
        self.product_seconds = 0.0   # time spent in response products (for reports)

    # --- state kept between the processes of a deployment
    def export_state(self) -> bytes:
        """This client's whole protocol state as versioned bytes (no pickle):
        its X25519 private key, pairwise / self / query seeds, the union and
        its positions, its aggregated shares y_v and the one-time-pad guard
        (which (round, purpose, block) were used).  For a deployment where
        each protocol stage runs in a fresh process of the same party
        (``secea_fast.flower``): the bytes hold secrets and never leave the
        party's host.  :meth:`import_state` restores it."""
        w = Writer(_STATE_MAGIC).u64(self.index).u64(self.params.N).blob(self._entity_digest())
        w.blob(self._own_keypair().private_bytes()).blob(self._self_seed).blob(self._query_seed)
        w.u64(len(self._seeds))
        for v in sorted(self._seeds):
            w.u64(v).blob(self._seeds[v])
        w.u64(self.union is not None)
        if self.union is not None:
            # (positions are non-negative indices: written as uint64)
            w.array(self.union).array(self._positions().astype(np.uint64))
        w.u64(self._y is not None)
        if self._y is not None:
            w.u64(self._y_round).array(self._y)
        used = sorted(f"{r}\t{purpose}\t{b}" for r, purpose, b in self._used)
        return w.blob("\n".join(used).encode()).bytes()

    @classmethod
    def import_state(cls, params: SecEAParams, entities: Iterable[EntityId], data: bytes) -> Client:
        """The client saved by :meth:`export_state`, for the same ``params``
        and the same entities (refused otherwise: ValueError)."""
        r = Reader(data, _STATE_MAGIC, "SecEA client state")
        index, N, digest = r.u64(), r.u64(), r.blob(64)
        if N != params.N:
            raise ValueError(f"SecEA client state: saved for N = {N}, params have N = {params.N}")
        c = cls(index, params, entities)
        if c._entity_digest() != digest:
            raise ValueError("SecEA client state: saved for a different entity set")
        c._keypair = X25519KeyPair.from_private_bytes(r.blob(32))
        c._self_seed, c._query_seed = _seed(r), _seed(r)
        peers = []
        for _ in range(r.u64()):
            v = r.u64()
            if not 0 <= v < N or v == index:
                raise ValueError(f"SecEA client state: pairwise seed for client {v}")
            peers.append(v)
            c._seeds[v] = _seed(r)
        check_increasing(peers, "SecEA client state: peers")
        if r.flag():
            c.union = r.array(1)
            pos = r.array(1)
            if pos.shape != c.hashes.shape or (pos >= len(c.union)).any():
                raise ValueError("SecEA client state: union positions do not fit the entities")
            c.positions = pos.astype(np.int64)
        if r.flag():
            c._y_round = r.u64()
            c._y = r.array(2)
        try:
            used = r.blob().decode()
        except UnicodeDecodeError:
            raise ValueError("SecEA client state: the pad guard is not text") from None
        r.done()
        lines = used.split("\n") if used else []
        check_increasing(lines, "SecEA client state: pad guard")
        for line in lines:
            parts = line.split("\t")
            if len(parts) != 3:
                raise ValueError("SecEA client state: malformed pad guard entry")
            c._used.add((canonical_int(parts[0], "pad guard round"), parts[1],
                         canonical_int(parts[2], "pad guard block")))
        return c

    def _entity_digest(self) -> bytes:
        return hashlib.sha256(np.ascontiguousarray(self.hashes, dtype="<u8").tobytes()).digest()

    # --- keys
    @property
    def public_key(self) -> bytes:
        return self._own_keypair().public_bytes

    def _own_keypair(self) -> X25519KeyPair:
        if self._keypair is None:
            raise RuntimeError("this is a worker copy of the client: it has no X25519 key")
        return self._keypair

    def set_peer_keys(self, public_keys: Sequence[bytes], session: bytes = b"") -> None:
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

    def set_pair_seeds(self, seeds: Mapping[int, bytes]) -> None:
        """Take the pairwise seeds a_{n,v} (32 bytes each, one per other
        client v) agreed without an exchange, e.g. from the parties' roster
        keys (:func:`secea_fast.protocols.secea.session.static_pair_seed`)."""
        want = set(range(self.params.N)) - {self.index}
        if set(seeds) != want:
            raise ValueError(f"need a seed for each of clients {sorted(want)}, got {sorted(seeds)}")
        for v, seed in seeds.items():
            if not isinstance(seed, (bytes, bytearray)) or len(seed) != 32:
                raise ValueError(f"the seed with client {v} must be 32 bytes")
        self._seeds = {int(v): bytes(seed) for v, seed in seeds.items()}

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
            g = self._pad(v, pad_domain(rnd, "psu", min(n, v), max(n, v)))
            g.field_into(s, P, base=s, negate=v < n)   # + PRG(a_{n,v}) for n < v, - for n > v
        return Message("psu", n, Message.SERVER, rnd, 0, s.reshape(1, -1))

    def psu_finish(self, msg: Message) -> np.ndarray:
        """From the server's sum: u/L by rational reconstruction, the union as
        the roots of L (sorted hashes); also fixes this client's positions."""
        if msg.kind != "psu_sum":
            raise ValueError(f"expected a psu_sum message, got {msg.kind}")
        total = np.ascontiguousarray(msg.data.reshape(-1))
        if total.size % (2 * self.params.N) or total.size < 2 * self.params.N * len(self.hashes):
            raise ValueError("psu_sum has the wrong length")
        union, deg = union_from_sum(total.tobytes(), PSU_PRIME)
        return self.set_union(union)

    def set_union(self, union: ArrayLike) -> NDArray[np.uint64]:
        """Take ``union`` (sorted uint64 entity hashes) as this round's union
        and fix this client's positions in it: the end of :meth:`psu_finish`,
        or a union already computed among more clients (a deployment that
        restarts a round without a lost client keeps the union it revealed,
        so the union of the remaining clients is never revealed beside it)."""
        union = np.asarray(union)
        if union.dtype != np.uint64 or union.ndim != 1 or (union.size > 1 and (np.diff(union) == 0).any()):
            raise ValueError("union must be a 1-D uint64 array of distinct hashes")
        if union.size > 1 and not (union[1:] > union[:-1]).all():
            raise ValueError("union must be sorted")
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

    def _positions(self) -> np.ndarray:
        if self.positions is None:
            raise RuntimeError("run the entity union first")
        return self.positions

    # --- private embedding sharing (Sec. 4.2)
    def encode_embeddings(self, embeddings: dict[Any, Any] | EntityRows) -> NDArray[np.uint64]:
        """(M, K*sub) expanded fixed-point embeddings (eq. 6): (h, 1) at own
        entities, 0 elsewhere, zero-padded to K sub-vectors.  ``embeddings``:
        a dict entity id -> 1-D float array, or :class:`EntityRows`."""
        prm = self.params
        if isinstance(embeddings, EntityRows):
            return self._expand(rows_in_order(embeddings, self.ids, self.params.d, f"client {self.index}"))
        if not isinstance(embeddings, dict):
            raise TypeError("embeddings must be a dict entity id -> 1-D float array, or EntityRows")
        idx = {}
        for i, x in enumerate(self.ids):
            idx[id_bytes(x)] = i
        if len(embeddings) != len(self.ids):
            raise ValueError(f"client {self.index}: need one embedding per entity "
                             f"({len(self.ids)}), got {len(embeddings)}")
        rows = np.empty((len(self.ids), prm.d), dtype=np.float64)
        seen = np.zeros(len(self.ids), dtype=bool)
        for key, vec in embeddings.items():
            row = idx.get(id_bytes(key))
            if row is None:
                raise ValueError(f"client {self.index}: embedding for unknown entity {key!r}")
            a = real_vector(vec, f"embeddings[{key!r}]")
            if a.shape != (prm.d,):
                raise ValueError(f"embedding of {key!r} must have shape ({prm.d},), got {a.shape}")
            rows[row] = a
            seen[row] = True
        if not seen.all():
            raise ValueError(f"client {self.index}: missing embeddings")
        return self._expand(rows)

    def _expand(self, rows: np.ndarray) -> NDArray[np.uint64]:
        prm = self.params
        H = np.zeros((self.M, prm.K * prm.sub), dtype=np.uint64)
        pos = self._positions()
        H[pos, :prm.d] = prm.fx.encode(rows)
        H[pos, prm.d] = 1
        return H

    def share(self, embeddings: dict[Any, Any] | EntityRows, rnd: int) -> list[Message]:
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
        YT = linalg.raw.matmul(XT, np.ascontiguousarray(prm.share_matrix.T), prm.p)
        out = []
        for v in range(prm.N):
            y = np.ascontiguousarray(YT[:, v])
            if v != self.index:
                self._pad(v, pad_domain(rnd, "share", self.index, v)).xor_into(y, y)
            out.append(Message("share", self.index, v, rnd, 0, y.reshape(M, sub)))
        return out

    def receive_shares(self, msgs: Iterable[Message]) -> None:
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
            y = as_u64(m.data)
            if m.sender != self.index:
                # decrypted and range-checked (check=True): raw from here
                y = self._pad(m.sender, pad_domain(rnd, "share", m.sender, self.index)).xor_into(
                    np.empty_like(y), y, prm.p, check=True)
                fp.add(acc, y, prm.p, out=acc)
            else:
                acc = field.add(acc, y, prm.p)        # the managed call checks it
        self._y, self._y_round, self._y_resp, self._y_packed = acc, rnd, None, None

    def share_unpads(self, msg: Message) -> bool:
        """Whether a peer's share to this client unpads to entries < p (a
        share that does not was not made by ``share``): how a session names
        the peer whose share ``receive_shares`` refused."""
        if msg.sender == self.index or msg.data.shape != (self.M, self.params.sub):
            return False
        y = as_u64(msg.data)
        try:
            self._pad(msg.sender, pad_domain(msg.round, "share", msg.sender, self.index)).xor_into(
                np.empty_like(y), y, self.params.p, check=True)
        except ValueError:
            return False
        return True

    def response_unpads(self, msg: Message, rows: int) -> bool:
        """Whether a (noised) response to this client has ``rows`` x sub
        entries that unpad to values < p: how a session names the responder
        whose response ``decode`` refused."""
        if msg.data.shape != (rows, self.params.sub) or not 0 <= msg.sender < self.params.N:
            return False
        out = np.empty((rows, self.params.sub), dtype=np.uint64)
        try:
            self._pad(msg.sender, pad_domain(msg.round, "response", msg.sender, self.index, msg.block)).field_into(
                out, self.params.p, base=as_u64(msg.data), negate=True)
        except ValueError:
            return False
        return True

    # --- coded queries (Sec. 4.3)
    def blocks(self, block_size: int) -> list:
        """Own entities (indices into ``ids``) in query blocks."""
        b = check_int(block_size, "block_size")
        if b < 1:
            raise ValueError("block_size must be >= 1")
        n = len(self.ids)
        return [np.arange(i, min(i + b, n)) for i in range(0, n, b)]

    def queries(self, rnd: int, block: int, members: ArrayLike) -> list[Message]:
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

    def iter_queries(self, rnd: int, block: int, members: ArrayLike) -> Iterator[Message]:
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
        gens = [Prg(self._query_seed, pad_domain(rnd, "query-z" + (str(t) if t else ""),
                                              self.index, self.index, block)) for t in range(T)]
        sent_coefs, sent_onehot = prm.query_sent
        coefs = [[int(x) for x in sent_coefs[v]] for v in range(N)]
        pads = {v: self._pad(v, pad_domain(rnd, "query", self.index, v, block))
                for v in range(N) if v != self.index}
        flat_pos = np.arange(B) * M + self._positions()[members]
        qs = {v: np.empty(B * M, dtype=np.uint64) for v in range(N)}
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
            q = qs.pop(v)                      # the caller owns it from here
            if v != self.index:
                ks = q[flat_pos] ^ val
                q[flat_pos] = fp.add(val, one, p) ^ ks
            else:
                q[flat_pos] = fp.add(val, one, p)
            yield Message("query", self.index, v, rnd, block, q.reshape(B, M))

    def _query_base(self, Z, c):
        """sum_t c_t Z_t: eq. (15)'s random part at one alpha_v, divided by
        c_v (``SecEAParams.query_sent``, so c[0] = 1: for T = 1 it is Z[0]
        itself, and no query entry is multiplied)."""
        p = self.params.p
        base = Z[0]
        for t in range(1, len(c)):
            base = fp.add(base, fp.scale(Z[t], int(c[t]), p), p)
        return base

    def response_share(self) -> np.ndarray:
        """c_v y_v (M x sub), c_v = ``params.query_scale[v]``: the right
        operand of this client's response products, since queries arrive
        divided by c_v (``iter_queries``).  Computed once per round."""
        if self._y is None:
            raise ValueError("no shares received yet")
        if self._y_resp is None:
            self._y_resp = fp.scale(self._y, int(self.params.query_scale[self.index]), self.params.p)
        return self._y_resp

    def prepare_responses(self) -> None:
        """Pack c_v y_v for this round's response products now rather than
        at the first answer.  Called before worker processes fork, the packed
        operand is then one copy in memory that every worker reads (and
        shares the L3 cache for), instead of one copy packed per worker."""
        self._packed_share()

    def _packed_share(self) -> linalg.PackedRight:
        if self._y_packed is None:
            self._y_packed = linalg.PackedRight(self.response_share(), self.params.p)
        return self._y_packed

    def _check_query(self, msg) -> tuple:
        """(querier n, query data as uint64) of a query this client can
        answer: addressed to it, for the round of its shares, M columns, from
        a client of the round."""
        if not isinstance(msg, Message) or msg.kind != "query" or msg.receiver != self.index:
            raise ValueError("not a query for this client")
        if self._y is None or msg.round != self._y_round:
            raise ValueError(f"no shares for round {msg.round}")
        Q = msg.data
        if Q.ndim != 2 or Q.shape[1] != self.M:
            raise ValueError(f"query must have {self.M} columns, got shape {Q.shape}")
        n = msg.sender
        if not 0 <= n < self.params.N:
            raise ValueError(f"query from unknown client {n} (N = {self.params.N})")
        return n, as_u64(Q)

    def answer(self, msg: Message) -> Message:
        """A_{v,n,e} = <q_{n,v,e}, y_v> for every row of a query (the response
        product on the matmul kernel), padded for the querier.  Each
        (round, querier, block) is answered once; a repeat raises ValueError."""
        prm = self.params
        n, Q = self._check_query(msg)
        # one answer per (round, querier, block): a second one would carry the
        # same response pad, and two answers to queries the relay altered
        # (the query pad is an XOR stream) would differ by y_v times the change
        self._once((msg.round, f"response to {n}", msg.block))
        packed = self._packed_share()    # packed once per round for every query block
        t0 = time.process_time()
        if n != self.index:
            # decrypted 16 rows at a time into cache and multiplied from there
            # (entries checked < p): the plaintext query never goes to memory
            try:
                A = packed.mul_decrypt(
                    Q, self._pad(n, pad_domain(msg.round, "query", n, self.index, msg.block)),
                    threads=self.threads)
            except linalg.DecryptedRangeError:
                raise ValueError("query entries must be < p") from None
        else:
            if Q.size and int(Q.max()) >= prm.p:
                raise ValueError("query entries must be < p")
            A = linalg.raw.mul_packed(Q, packed, threads=self.threads)
        self.product_seconds += time.process_time() - t0
        self._pad(n, pad_domain(msg.round, "response", self.index, n, msg.block)).field_into(
            A, prm.p, base=A)
        return Message("response", self.index, n, msg.round, msg.block, A)

    def decode(self, responses: Iterable[Message | None], members: Sequence[int] | np.ndarray, *,
               verify: bool = False) -> DecodeResult:
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
        B = len(members)

        def fill(v, m, out):
            if m.kind != "response" or m.receiver != self.index or m.sender != v:
                raise ValueError(f"slot {v}: not client {v}'s response to client {self.index}")
            if m.data.shape != (B, prm.sub):
                raise ValueError(f"response of client {v} has shape {m.data.shape}, "
                                 f"expected {(B, prm.sub)}")
            try:
                self._pad(v, pad_domain(m.round, "response", v, self.index, m.block)).field_into(
                    out, prm.p, base=as_u64(m.data), negate=True)
            except ValueError:
                raise ValueError(f"response of client {v} has entries >= p") from None

        Y, present = gather_responses(responses, prm.N, B, prm.sub, fill)
        full, faulty, redundancy = decode_values(prm, Y, present, B, verify=verify,
                                                 who=f"client {self.index}")
        sums = prm.fx.decode_int(np.ascontiguousarray(full[:, :prm.d]))
        counts = full[:, prm.d].astype(np.int64)
        if ((counts < 1) | (counts > prm.N)).any():
            raise DecodingError("decoded entity counts outside [1, N]: responses were corrupted "
                                "beyond what could be corrected")
        return DecodeResult(sums, counts, faulty, redundancy)

    def finish(self, sums: np.ndarray, counts: np.ndarray) -> dict[Any, np.ndarray]:
        """Global embeddings (eq. 5) for this client's own entities."""
        avg = self.finish_rows(sums, counts)
        return {x: avg[i] for i, x in enumerate(self.ids)}

    def finish_rows(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """:meth:`finish` as one 2-D array, a row per own entity in this
        client's entity order (the values of :meth:`finish`, bit for bit)."""
        return sums.astype(np.float64) / self.params.fx.scale / counts[:, None]


# ----------------------------------------------------------------- server
class Server(SecretHolder):
    """The honest-but-curious server: sums (eq. 4), relays, noises (eq. 20)."""

    def __init__(self, params: SecEAParams) -> None:
        if not isinstance(params, SecEAParams):
            raise TypeError("params must be SecEAParams")
        self.params = params
        self._noise_seed = random_seed(32)
        self.union: np.ndarray | None = None
        self._psi: tuple[Any, ...] | None = None          # (round, n, block, size), psi evaluations of that block

    def psu_sum(self, uploads: Iterable[Message]) -> Message:
        """The server's broadcast: the sum of the clients' union uploads (eq. 4)."""
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
            fp.add(tot, v, PSU_PRIME, out=tot)
        self.union = union_from_sum(tot.tobytes(), PSU_PRIME)[0]
        return Message("psu_sum", Message.SERVER, Message.SERVER, uploads[0].round, 0, tot.reshape(1, -1))

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
            g = Prg(self._noise_seed, pad_domain(msg.round, "psi", n, n, msg.block))
            Z = np.empty((m, A.size), dtype=np.uint64)
            for i in range(m):
                g.field_into(Z[i], prm.p)
            self._psi = (key, linalg.raw.matmul(prm.noise_matrix, Z, prm.p))
        psi = self._psi[1][v].reshape(A.shape)
        return Message("response", v, n, msg.round, msg.block, fp.add(A, psi, prm.p))
