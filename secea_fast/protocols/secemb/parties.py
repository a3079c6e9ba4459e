"""The SecEmb parties (Mai et al. 2025, Sec. 4, Algorithm 3): ``User``
(retrieval keys, reconstruction, aggregation upload) and ``Server``
(answers, aggregation, noise)."""
from __future__ import annotations


from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ... import dpf
from ..._secrets import SecretHolder
from ...executor import Executor
from ...fixedpoint import encode_rows
from ...prg import Prg, random_seed
from ..common.wire import Reader, Writer
from .messages import AggregateShare, AggregationUpload, RetrievalRequest, RetrievalResponse
from .params import (AGGREGATION_DOMAIN, SecEmbParams, additive_shares, check_real, decode_agg, decode_fixed,
                     encode_agg, item_ids, pad_or_trunc_idx)
from .sharded import sharded_accumulate, sharded_xor_rows


_USER_STATE = b"SEUs"
_SERVER_STATE = b"SESr"


# ----------------------------------------------------------------- parties
class User(SecretHolder):
    """One user's side of a SecEmb round (Algorithm 3, "User")."""

    def __init__(self, params: SecEmbParams, items: ArrayLike) -> None:
        if not isinstance(params, SecEmbParams):
            raise TypeError(f"params must be SecEmbParams, got {type(params).__name__}")
        self.params = params
        self.items = item_ids(items)
        # range and duplicate checks now; the draw is kept for the first
        # retrieval_request (each draw is used once, so this is the same
        # distribution as drawing there, without PadOrTrunc's O(m) work twice)
        self._draw: tuple[np.ndarray, np.ndarray] | None = pad_or_trunc_idx(self.items, params.m, params.m_prime)
        self._round: dict[str, Any] | None = None     # {"idx", "pos", "paths"} of the open round

    def retrieval_request(self) -> tuple[RetrievalRequest, RetrievalRequest]:
        """Algorithm 1 + PathGen: (request to server 0, to server 1), each the
        server's path keys (the XOR retrieval of the package docstring)."""
        P = self.params
        if self._draw is not None:
            (idx, pos), self._draw = self._draw, None
        else:
            idx, pos = pad_or_trunc_idx(self.items, P.m, P.m_prime)
        paths0, paths1, secrets_ = dpf.path_gen_batch(idx.view(np.uint64), P.log_domain, threads=1)   # idx >= 0
        self._round = {"idx": idx, "pos": pos, "paths": secrets_}
        return RetrievalRequest(0, paths0), RetrievalRequest(1, paths1)

    def reconstruct(self, resp0: RetrievalResponse, resp1: RetrievalResponse) -> np.ndarray:
        """Eq. 4 in XOR form: the rows of Q at this user's items (NaN for items
        dropped by truncation)."""
        st = self._need_round()
        P = self.params
        for r, b in ((resp0, 0), (resp1, 1)):
            if not isinstance(r, RetrievalResponse) or r.party != b:
                raise ValueError(f"expected server {b}'s RetrievalResponse")
            if r.shares.shape != (P.m_prime, P.d):
                raise ValueError(f"a response must have shape ({P.m_prime}, {P.d}), got {r.shares.shape}")
        rows = decode_fixed(resp0.shares ^ resp1.shares, P)
        out = np.full((len(self.items), P.d), np.nan)
        real = st["pos"] >= 0
        out[st["pos"][real]] = rows[real]
        return out

    def aggregation_upload(self, grads: ArrayLike, dense: ArrayLike | None = None,
                           clip: float | None = None) -> tuple[AggregationUpload, AggregationUpload]:
        """PadOrTruncEmb + ConvertGen on the retrieval paths (Sec. 4.3.2) and
        additive shares of the dense update.  ``grads``: one row per item of
        ``self.items`` (rows of truncated items are dropped with them)."""
        st = self._need_round()
        P = self.params
        g = np.asarray(grads, dtype=np.float64)
        if g.shape != (len(self.items), P.d):
            raise ValueError(f"grads must have shape ({len(self.items)}, {P.d}), got {g.shape}")
        if clip is not None:
            clip = check_real(clip, "clip", positive=True)
            norms = np.linalg.norm(g, axis=1, keepdims=True)
            g = g * np.minimum(1.0, clip / np.maximum(norms, 1e-300))
        # the kept rows gathered and encoded in one pass, all m' rows with the
        # same work, padding included: the encoding's work must not depend on
        # how many of the user's items are real (as PadOrTrunc's)
        try:
            enc = encode_rows(np.ascontiguousarray(g), st["pos"], P.frac_bits, P.user_bound_fixed, P.agg_bits)
        except ValueError:
            encode_agg(g[st["pos"][st["pos"] >= 0]], P)     # raises in SecEmb's words (NaN, or R_u)
            raise
        cws = dpf.convert_gen_batch(st["paths"], enc, group=P.agg_group, domain=AGGREGATION_DOMAIN)
        dense0, dense1 = self._dense_shares(dense)
        self._round = None                    # one upload per round: the paths are spent
        return (AggregationUpload(0, cws, dense0, P.agg_bits), AggregationUpload(1, cws, dense1, P.agg_bits))

    def _dense_shares(self, dense):
        P = self.params
        if dense is None:
            if not P.dense_size:      # nothing to share: no seed drawn for an empty mask
                return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)
            dense = np.zeros(P.dense_size)
        x = encode_agg(np.asarray(dense, dtype=np.float64).reshape(-1), P)
        if x.size != P.dense_size:
            raise ValueError(f"dense must have {P.dense_size} entries, got {x.size}")
        return additive_shares(x, b"secemb/dense-share", P.agg_bits)

    def export_state(self) -> bytes:
        """This user's round state (the kept item selection and the secret
        PathGen outputs between retrieval and upload) as versioned bytes, for
        a deployment where the two stages run in different processes of the
        user's own device (``secea_fast.flower``); never sent to anyone."""
        w = Writer(_USER_STATE).array(self.items.astype(np.uint64)).u64(self._round is not None)
        if self._round is not None:
            st = self._round
            w.array(st["idx"].astype(np.uint64)).array(st["pos"].astype(np.int64).view(np.uint64))
            w.blob(st["paths"].export_secret())
        return w.bytes()

    @classmethod
    def import_state(cls, params: SecEmbParams, items: ArrayLike, data: bytes) -> User:
        """The user saved by :meth:`export_state`, for the same items."""
        u = cls(params, items)
        r = Reader(data, _USER_STATE, "SecEmb user state")
        saved = r.array(1)
        if not np.array_equal(saved, u.items.astype(np.uint64)):
            raise ValueError("SecEmb user state: saved for other items")
        if r.flag():
            idx = r.array(1).astype(np.int64)
            pos = r.array(1).view(np.int64)
            paths = dpf.PathSecretBatch.import_secret(r.blob(64 + 40 * params.m_prime))
            if not (len(idx) == len(pos) == len(paths) == params.m_prime):
                raise ValueError("SecEmb user state: round state does not fit m'")
            u._round = {"idx": idx, "pos": pos, "paths": paths}
        r.done()
        return u

    def _need_round(self):
        if self._round is None:
            raise ValueError("no retrieval in progress: call retrieval_request() first")
        return self._round


class Server(SecretHolder):
    """Server b of SecEmb (Algorithm 3, "Server").  ``table``: the public item
    table Q as Z_2^64 fixed point (``encode_table``)."""

    def __init__(self, party: int, params: SecEmbParams, table: np.ndarray, threads: int | None = None,
                 executor: Executor | None = None) -> None:
        if party not in (0, 1):
            raise ValueError(f"party must be 0 or 1, got {party}")
        if not isinstance(table, np.ndarray) or table.dtype != np.uint64 or table.shape != (params.m, params.d):
            raise ValueError(f"table must be a uint64 array of shape ({params.m}, {params.d})")
        self.party = party
        self.params = params
        self.table = np.ascontiguousarray(table)
        self.threads = threads
        if executor is not None and not isinstance(executor, Executor):
            raise TypeError(f"executor must be a secea_fast.executor.Executor or None, got {type(executor).__name__}")
        self.executor = executor        # None: this process; else users sharded over its workers (.sharded)
        self._requests: dict[Any, dpf.PathKeyBatch] = {}      # user id (any hashable) -> its paths

    def check_request(self, request: RetrievalRequest) -> dpf.PathKeyBatch:
        """The request's path keys if it fits this server and round (its
        party, m' keys, the deployment's log_domain); ValueError otherwise."""
        P = self.params
        if not isinstance(request, RetrievalRequest) or request.party != self.party:
            raise ValueError(f"expected a RetrievalRequest for server {self.party}")
        keys = request.keys
        if len(keys) != P.m_prime:
            raise ValueError(f"a request must hold m' = {P.m_prime} keys, got {len(keys)}")
        if keys.log_domain != P.log_domain:
            raise ValueError(f"retrieval paths must have the deployment's log_domain {P.log_domain}, "
                             f"got {keys.log_domain}")
        return keys

    def answer(self, user_id: Hashable, request: RetrievalRequest) -> RetrievalResponse:
        """The XOR retrieval (eq. 3's deviation in the package docstring) for
        every path key of the request; remembers the paths for aggregation."""
        keys = self.check_request(request)
        shares = dpf.path_xor_rows(keys, self.table, threads=self.threads)
        self._requests[user_id] = keys
        return RetrievalResponse(self.party, shares)

    def answer_many(self, requests: Mapping[Hashable, RetrievalRequest]) -> dict[Hashable, RetrievalResponse]:
        """:meth:`answer` for several users at once: every request is checked
        first (ValueError naming the first user whose request does not fit,
        nothing answered), then all are answered in one batch, sharded over
        the server's executor when it has one (bit for bit the answers of
        :meth:`answer`)."""
        checked = {}
        for uid, req in requests.items():
            try:
                checked[uid] = self.check_request(req)
            except ValueError as exc:
                raise ValueError(f"user {uid!r}: {exc}") from None
        if not checked:
            return {}
        keys = dpf.PathKeyBatch.concat(checked.values())
        if self.executor is None:
            rows = dpf.path_xor_rows(keys, self.table, threads=self.threads)
        else:
            rows = sharded_xor_rows(keys, self.table, self.executor, keys_per_user=self.params.m_prime,
                                    threads=self.threads)
        mp = self.params.m_prime
        out = {}
        for k, (uid, paths) in enumerate(checked.items()):
            self._requests[uid] = paths
            out[uid] = RetrievalResponse(self.party, np.ascontiguousarray(rows[k * mp:(k + 1) * mp]))
        return out

    def export_requests(self) -> bytes:
        """The retrieval paths this server remembers for the aggregation
        (user id -> path keys), as versioned bytes: the server's state
        between the two stages of a deployment.  User ids must be ints."""
        w = Writer(_SERVER_STATE).u64(self.party).u64(len(self._requests))
        for uid in sorted(self._requests):
            if isinstance(uid, bool) or not isinstance(uid, (int, np.integer)) or uid < 0:
                raise TypeError(f"export_requests needs non-negative int user ids, got {uid!r}")
            w.u64(int(uid)).blob(self._requests[uid].to_bytes())
        return w.bytes()

    def import_requests(self, data: bytes) -> None:
        """Restore what :meth:`export_requests` saved (the same server)."""
        r = Reader(data, _SERVER_STATE, "SecEmb server state")
        if r.u64() != self.party:
            raise ValueError(f"SecEmb server state: saved by the other server, not server {self.party}")
        req: dict[int, dpf.PathKeyBatch] = {}
        for _ in range(r.u64()):
            uid = r.u64()
            if req and uid <= max(req):
                raise ValueError("SecEmb server state: user ids must be strictly increasing")
            paths = dpf.PathKeyBatch.from_bytes(r.blob(64 + (32 + 16 * 64) * self.params.m_prime))
            if len(paths) != self.params.m_prime or paths.party != self.party:
                raise ValueError(f"SecEmb server state: user {uid} has {len(paths)} paths of server "
                                 f"{paths.party}, m' = {self.params.m_prime}")
            req[uid] = paths
        r.done()
        self._requests = req

    def aggregate(self, uploads: dict[Any, AggregationUpload], noise_sigma: float = 0.0) -> AggregateShare:
        """Server b's share of sum over the uploading users (Algorithm 3).  Users
        who retrieved but did not upload (dropouts, Appendix L.2) are left out;
        an upload without a retrieval is refused.  ``noise_sigma``: standard
        deviation of the Gaussian noise this server adds (Appendix G)."""
        P = self.params
        noise_sigma = check_real(noise_sigma, "noise_sigma")
        acc = np.zeros((P.m, P.d), dtype=np.uint64 if P.agg_bits == 64 else np.uint32)
        dense = np.zeros(P.dense_size, dtype=np.uint64)
        paths_all, cws_all = [], []
        for uid, up in uploads.items():
            paths = self._requests.get(uid)
            if paths is None:
                raise ValueError(f"user {uid!r} uploaded without a retrieval this round")
            if not isinstance(up, AggregationUpload) or up.party != self.party:
                raise ValueError(f"user {uid!r}: expected an AggregationUpload for server {self.party}")
            if up.bits != P.agg_bits:
                raise ValueError(f"user {uid!r}: upload over Z_2^{up.bits}, the deployment aggregates over "
                                 f"Z_2^{P.agg_bits}")
            if up.cws.shape != (P.m_prime, P.d) or up.dense.shape != (P.dense_size,):
                raise ValueError(f"user {uid!r}: upload shapes {up.cws.shape}, {up.dense.shape} do not match "
                                 f"({P.m_prime}, {P.d}) and ({P.dense_size},)")
            paths_all.append(paths)
            cws_all.append(up.cws)
            dense += up.dense
        if paths_all:
            # one fused walk + conversion over every upload: no leaf states in memory
            keys, cws = dpf.PathKeyBatch.concat(paths_all), np.concatenate(cws_all)
            if self.executor is None:
                dpf.path_convert_accumulate(acc, keys, self.party, cws, domain=AGGREGATION_DOMAIN,
                                            threads=self.threads)
            else:       # partial sums of user shards, added in the ring (.sharded)
                sharded_accumulate(acc, keys, self.party, cws, self.executor, keys_per_user=P.m_prime,
                                   domain=AGGREGATION_DOMAIN, threads=self.threads)
        self._requests = {}
        acc = acc.astype(np.uint64, copy=False)       # Z_2^32 sums widen to the share's uint64
        if noise_sigma:
            acc += _gaussian_fixed(acc.shape, noise_sigma, P)
            dense += _gaussian_fixed(dense.shape, noise_sigma, P)
        return AggregateShare(self.party, acc & P.agg_mask, dense & P.agg_mask)


def _gaussian_fixed(shape, sigma, params):
    """N(0, sigma^2) noise in fixed point from a CSPRNG (Box-Muller on 53-bit uniforms)."""
    n = int(np.prod(shape))
    words = Prg(random_seed(), b"secemb/dp-noise").uint64(2 * n)
    u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)
    z = np.sqrt(-2.0 * np.log(u[:n])) * np.cos(2.0 * np.pi * u[n:])
    return np.rint(z * sigma * params.scale).astype(np.int64).view(np.uint64).reshape(shape)


def reconstruct_aggregate(share0: AggregateShare, share1: AggregateShare,
                          params: SecEmbParams) -> tuple[np.ndarray, np.ndarray]:
    """Server 0's reconstruction: (sum of sparse updates m x d, dense sum) as floats."""
    if share0.party != 0 or share1.party != 1:
        raise ValueError("need server 0's and server 1's shares")
    return decode_agg(share0.sparse + share1.sparse, params), decode_agg(share0.dense + share1.dense, params)
