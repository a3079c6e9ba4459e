"""One sans-I/O session per SecEmb role: every rule that keeps a SecEmb
deployment private lives here, once, whatever the transport
(:func:`~.round.run_round` in process, :mod:`secea_fast.flower.secemb` on
Flower).

SecEmb (Mai et al. 2025, Sec. 4, Algorithm 3) promises user privacy "as long
as at least one server is honest" for semi-honest servers.  A deployment
meets an *active* server 0 that relays server 1's traffic and may replay,
reorder, drop or substitute messages; these rules keep the promise against
it (following the active-server variant of Bonawitz et al., "Practical
Secure Aggregation for Privacy-Preserving Machine Learning", CCS 2017,
Sec. 6.2: a PKI of long-term keys, every announced key signed):

1. **Authenticated keys.**  Server 1 signs its X25519 sealing key with its
   roster identity, bound to the run (:class:`Server1Session.key_message`);
   a user verifies it against its own roster copy before sealing anything
   (a key server 0 substitutes is refused).  Each user signs its ephemeral
   key bound to (run, round, its name, server 1's key); server 1 counts only
   roster parties of role ``user`` whose signature verifies.
2. **Sealed channel** (:mod:`.channel`): a key and nonce pair is never used
   twice, replay included.
3. **Stage order and round binding.**  Every message carries its round; a
   session refuses a round older than its current one, a stage out of order
   and a second copy of a message it already took.
4. **Answer once, aggregate once.**  Server 1 answers each user's request
   once per round and aggregates once per round, exactly over the users it
   answered whose upload arrived and opened, and only when they are at
   least ``min_users`` (default :data:`MIN_USERS`, set by server 1's own
   operator, never by server 0): below it the round is refused.  With
   answer-once, the replayed answer stage (XOR-PIR is linear in the table,
   so two answers for one request under a chosen table reveal the items)
   gets nothing; with aggregate-once and ``min_users``, server 0 cannot
   isolate one user's gradient rows by asking for a sum over a subset.
   ``min_users`` must exceed the number of users that may collude with a
   server, plus one.  Server 1's Gaussian noise (Appendix G: each server
   adds its own, so the aggregate server 0 reconstructs is differentially
   private whatever server 0 adds) is likewise server 1's own
   ``noise_sigma``: the relay may ask for more, never less.
5. **Constant metadata.**  No reply carries timings; PadOrTrunc does the
   same work whatever the number of rated items (``params.pad_or_trunc_idx``)
   and every message has a length fixed by (m, d, m', b), never by |I_u|.
6. **State.**  ``export_state``/``import_state`` carry the session's keys,
   round and used channel tuples; importing never regenerates a secret.

A message that breaks a rule raises :class:`ProtocolError` (a ValueError)
naming what was wrong; the caller drops that message's sender (within the
protocol's tolerance), never the round.

Length (about 600 lines): the three roles share the message layouts and
the rules above, which are meant to be read together in one place.
"""
from __future__ import annotations

import dataclasses
import struct
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from ..._secrets import SecretHolder
from ...executor import Executor
from ...prg import X25519KeyPair
from ..common.roster import AuthenticationError, Identity, Roster
from ..common.wire import Reader, Writer, check_increasing
from .channel import ProtocolError, SealedChannel, SealError
from .messages import AggregateShare, AggregationUpload, RetrievalRequest, RetrievalResponse
from .params import SecEmbParams, check_real, item_ids
from .parties import Server, User, reconstruct_aggregate

__all__ = ["ProtocolError", "SealError", "UserSession", "Server1Session", "Server0Session", "MIN_USERS",
           "SESSION_VERSION", "run_binding", "saturate", "sealed_sender", "server1_name", "verify_server1_key",
           "params_items_limit"]

MIN_USERS = 2                 # default least number of users in an aggregate
SESSION_VERSION = 1
_MAX_ITEMS = 1 << 24          # rated items a user session keeps across a restart
_KEY, _SQ, _SA, _SU, _S1 = b"SEK1", b"SESQ", b"SESA", b"SESU", b"SES1"
_USER_ST, _S1_ST, _S0_ST = b"SEsu", b"SEs1", b"SEs0"
_P_KEY, _P_REQ = "secemb.server1-key", "secemb.user-request"
_PARAM_FIELDS = ("m", "d", "m_prime", "frac_bits", "n_users", "dense_size", "agg_bits")


def run_binding(run: bytes | str | int) -> bytes:
    """The bytes a run id binds into every signature and channel key."""
    if isinstance(run, bool) or not isinstance(run, (bytes, str, int)):
        raise TypeError(f"run must be bytes, str or int, got {type(run).__name__}")
    if isinstance(run, bytes):
        return b"b:" + run
    return (b"s:" if isinstance(run, str) else b"i:") + str(run).encode()


def server1_name(roster: Roster) -> str:
    """The roster's one party of role ``server1``; ValueError otherwise."""
    s1 = roster.names("server1")
    if len(s1) != 1:
        raise ValueError(f"roster: SecEmb needs exactly one party of role 'server1', found {len(s1)}")
    return s1[0]


def params_items_limit(params: SecEmbParams) -> int:
    """The most item ids a user's saved session holds: its rated items,
    those at or beyond m included (see :meth:`UserSession.retrieve`)."""
    return max(params.m, _MAX_ITEMS)


def _round(rnd: object) -> int:
    if isinstance(rnd, bool) or not isinstance(rnd, (int, np.integer)) or int(rnd) < 1:
        raise ValueError(f"round must be an int >= 1, got {rnd!r}")
    return int(rnd)


def _parse(fn, data, what: str, sender: str):
    try:
        return fn(data)
    except ProtocolError:
        raise
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"{what} from {sender}: {exc}") from None


def _params_bytes(w: Writer, p: SecEmbParams) -> Writer:
    for f in _PARAM_FIELDS:
        w.u64(getattr(p, f))
    return w


def _params_from(r: Reader) -> SecEmbParams:
    return SecEmbParams(**{f: r.u64() for f in _PARAM_FIELDS})


def _used_bytes(w: Writer, used) -> Writer:
    w.u64(len(used))
    for rnd, stage, a, b in sorted(used):
        w.u64(rnd).blob(stage.encode()).blob(a.encode()).blob(b.encode())
    return w


def _used_from(r: Reader) -> set:
    used = [(r.u64(), r.blob(64).decode(), r.blob(64).decode(), r.blob(64).decode()) for _ in range(r.u64())]
    check_increasing(used, "SecEmb session: the channel's used labels")   # as _used_bytes writes them
    return set(used)


def _named(r: Reader, read_value, what: str) -> list:
    """(name, value) pairs written sorted by name (each name once): refused
    otherwise, so a state re-serialises to itself."""
    pairs = [(r.blob(64).decode(), read_value()) for _ in range(r.u64())]
    check_increasing([n for n, _ in pairs], what)
    return pairs


def _sealed(magic: bytes, rnd: int, name: str, sealed: bytes) -> bytes:
    return Writer(magic, SESSION_VERSION).u64(rnd).blob(name.encode()).blob(sealed).bytes()


def _unsealed(magic: bytes, data: bytes, what: str) -> tuple[int, str, bytes]:
    r = Reader(data, magic, what, SESSION_VERSION)
    rnd, name, sealed = r.u64(), r.blob(64).decode(), r.blob(1 << 34)
    r.done()
    return rnd, name, sealed


def sealed_sender(data: bytes) -> tuple[int, str]:
    """(round, party) a sealed request, answer or upload names (what a relay
    routes by); ProtocolError if it is none of them."""
    for magic in (_SQ, _SA, _SU):
        if isinstance(data, (bytes, bytearray)) and bytes(data[:4]) == magic:
            r = Reader(bytes(data), magic, "sealed part", SESSION_VERSION)
            return r.u64(), r.blob(64).decode()
    raise ProtocolError("not a SecEmb sealed part")


# ======================================================================== user
class UserSession(SecretHolder):
    """A user's side of SecEmb rounds in one run: ``retrieve`` ->
    ``reconstruct`` -> ``upload`` per round, rounds increasing."""

    def __init__(self, roster: Roster, identity: Identity, *, run: bytes | str | int) -> None:
        if roster.role(identity.name) != "user":
            raise ValueError(f"identity {identity.name!r} has role {roster.role(identity.name)!r}, not 'user'")
        self.roster, self.identity = roster, identity
        self.run = run_binding(run)
        self.server1 = server1_name(roster)
        self.channel = SealedChannel(identity.name, self.run)
        self.round, self.stage = 0, "idle"
        self._params: SecEmbParams | None = None
        self._user: User | None = None
        self._items = np.zeros(0, dtype=np.int64)      # this round's rated items, all of them
        self._eph: X25519KeyPair | None = None
        self._s1key = b""

    def _at(self, rnd: int, stage: str) -> int:
        rnd = _round(rnd)
        if rnd != self.round or self.stage != stage:
            raise ProtocolError(f"user {self.identity.name}: a {stage!r}-stage message of round {rnd} "
                                f"arrived while at stage {self.stage!r} of round {self.round}")
        return rnd

    def retrieve(self, rnd: int, params: SecEmbParams, items: ArrayLike,
                 server1_key: bytes) -> tuple[bytes, bytes]:
        """PadOrTrunc + PathGen (Algorithm 1) for this round's rated
        ``items``: (request to server 0, sealed request to server 1).
        ``server1_key``: server 1's signed key message, checked against the
        roster.

        Items at or beyond ``params.m`` (server 0's choice) are treated as
        truncated away (NaN rows, gradient rows dropped), never refused: a
        user that failed exactly when its largest item id reached m would
        tell server 0 that id, one comparison per round."""
        rnd = _round(rnd)
        if rnd <= self.round:
            raise ProtocolError(f"user {self.identity.name}: retrieval of round {rnd}, but round "
                                f"{self.round} was already started")
        key = self.check_server1_key(server1_key)
        if not isinstance(params, SecEmbParams):
            raise TypeError(f"params must be SecEmbParams, got {type(params).__name__}")
        every = item_ids(items)
        if every.size > _MAX_ITEMS:
            raise ValueError(f"items: {every.size} rated items, more than {_MAX_ITEMS}")
        if np.unique(every).size != every.size or (every.size and every.min() < 0):
            raise ValueError("items: duplicate or negative item ids")     # whatever m is
        user = User(params, every[every < params.m])
        r0, r1 = user.retrieval_request()
        eph = X25519KeyPair()
        sig = self.roster.sign(self.identity, _P_REQ, self.run, rnd, self.identity.name, eph.public_bytes, key)
        self.round, self.stage, self._params, self._user, self._eph, self._s1key = (
            rnd, "retrieved", params, user, eph, key)
        self._items = every
        self.channel.forget_before(rnd)                 # earlier rounds are refused above
        sealed = self.channel.seal(eph, key, rnd, "request", self.server1, r1.to_bytes())
        inner = (Writer(_SQ, SESSION_VERSION).u64(rnd).blob(self.identity.name.encode()).blob(eph.public_bytes)
                 .blob(sig).blob(sealed).bytes())
        return r0.to_bytes(), inner

    def check_server1_key(self, data: bytes) -> bytes:
        """Server 1's key from its signed key message, verified against this
        user's roster copy for this run (rule 1)."""
        return verify_server1_key(self.roster, self.run, data)

    def reconstruct(self, rnd: int, answer0: bytes, answer1: bytes) -> np.ndarray:
        """Eq. 4 (XOR form) from server 0's answer and server 1's sealed
        answer: this user's rows (NaN for items truncated away)."""
        rnd = self._at(rnd, "retrieved")
        assert self._user is not None and self._eph is not None
        a0 = _parse(RetrievalResponse.from_bytes, answer0, "retrieval answer", "server 0")
        srnd, name, sealed = _parse(lambda b: _unsealed(_SA, b, "sealed answer"), answer1, "sealed answer",
                                    "server 1")
        if srnd != rnd or name != self.identity.name:
            raise ProtocolError(f"sealed answer for ({name}, round {srnd}) reached {self.identity.name} in "
                                f"round {rnd}")
        a1 = _parse(RetrievalResponse.from_bytes,
                    self.channel.open(self._eph, self._s1key, rnd, "answer", self.server1, sealed),
                    "retrieval answer", "server 1")
        kept = _parse(lambda _: self._user.reconstruct(a0, a1), None, "retrieval answers", "the servers")
        assert self._params is not None
        rows = np.full((self._items.size, kept.shape[1]), np.nan)
        rows[self._items < self._params.m] = kept
        self.stage = "reconstructed"
        return rows

    def upload(self, rnd: int, grads: ArrayLike, dense: ArrayLike | None = None,
               clip: float | None = None) -> tuple[bytes, bytes]:
        """ConvertGen on the retrieval paths (Sec. 4.3.2) and dense shares:
        (upload to server 0, sealed upload to server 1).  Once per round.

        Values are clipped (``clip``, per row) and then saturated to the
        per-user range R_u (:func:`saturate`), never refused: R_u follows
        from server 0's n_users and frac_bits and the rows from its table,
        so a user that failed on a large gradient would tell server 0 one
        bit of its data per round."""
        rnd = self._at(rnd, "reconstructed")
        assert self._user is not None and self._eph is not None and self._params is not None
        g = np.asarray(grads, dtype=np.float64)
        if g.shape != (self._items.size, self._params.d):
            raise ValueError(f"grads must have shape ({self._items.size}, {self._params.d}), got {g.shape}")
        if clip is not None:
            clip = check_real(clip, "clip", positive=True)
            g = g * np.minimum(1.0, clip / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300))
        if dense is not None:
            dense = saturate(dense, self._params)
        up0, up1 = self._user.aggregation_upload(saturate(g[self._items < self._params.m], self._params), dense)
        sealed = self.channel.seal(self._eph, self._s1key, rnd, "upload", self.server1, up1.to_bytes())
        self.stage, self._user, self._eph = "done", None, None      # the paths and key are spent
        return up0.to_bytes(), _sealed(_SU, rnd, self.identity.name, sealed)

    def export_state(self) -> bytes:
        """This session as versioned bytes (the user's own state; never sent)."""
        w = Writer(_USER_ST, SESSION_VERSION).blob(self.run).u64(self.round).blob(self.stage.encode())
        live = self._user is not None
        w.u64(live)
        if live:
            assert self._params is not None and self._eph is not None and self._user is not None
            _params_bytes(w, self._params).blob(self._eph.private_bytes()).blob(self._s1key)
            w.array(self._items.astype(np.uint64)).blob(self._user.export_state())
        return _used_bytes(w, self.channel.used).bytes()

    @classmethod
    def import_state(cls, roster: Roster, identity: Identity, data: bytes) -> UserSession:
        """The session :meth:`export_state` saved (same roster and identity)."""
        r = Reader(data, _USER_ST, "SecEmb user session", SESSION_VERSION)
        run = r.blob(1 << 10)
        s = cls.__new__(cls)
        UserSession.__init__(s, roster, identity, run=b"")
        s.run = run
        s.round, s.stage = r.u64(), r.blob(32).decode()
        if r.flag():
            s._params = _params_from(r)
            s._eph = X25519KeyPair.from_private_bytes(r.blob(32))
            s._s1key = r.blob(32)
            items = r.array(1, params_items_limit(s._params)).astype(np.int64)
            s._user = User.import_state(s._params, items[items < s._params.m], r.blob())
            s._items = items
        s.channel = SealedChannel(identity.name, run, _used_from(r))
        r.done()
        return s


def saturate(x: ArrayLike, params: SecEmbParams) -> np.ndarray:
    """``x`` as floats within the per-user range R_u of ``params``
    (Appendix L.2; ``SecEmbParams.user_bound``), NaN as 0 and infinities at
    the bounds: what a user uploads whatever its data and server 0's
    parameters (fixed-point rounding stays within R_u)."""
    lim = params.user_bound_fixed
    b = float(lim)
    while int(b) > lim:                     # the largest double <= R_u in fixed-point units
        b = float(np.nextafter(b, 0.0))
    bound = b / params.scale                # exact: scale is a power of two
    return np.clip(np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=bound, neginf=-bound),
                   -bound, bound)


def verify_server1_key(roster: Roster, run: bytes, data: bytes) -> bytes:
    """Server 1's X25519 public key from its signed key message, verified
    against ``roster`` for this run; ProtocolError naming what failed."""
    try:
        r = Reader(data, _KEY, "server 1 key", SESSION_VERSION)
        krun, name, key, sig = r.blob(1 << 10), r.blob(64).decode(), r.blob(32), r.blob(64)
        r.done()
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"server 1's key message: {exc}") from None
    if name != server1_name(roster):
        raise ProtocolError(f"server 1's key message is signed by {name!r}, not the roster's server 1")
    if krun != run:
        raise ProtocolError("server 1's key message was made for another run")
    try:
        roster.verify(name, sig, _P_KEY, run, key)
    except AuthenticationError as exc:
        raise ProtocolError(f"server 1's key does not verify against the roster: {exc}") from None
    if len(key) != 32:
        raise ProtocolError("server 1's key is not 32 bytes")
    return key


# ===================================================================== server 1
@dataclasses.dataclass
class _Round1:
    rnd: int
    params: SecEmbParams
    eph: dict[str, bytes]            # answered user -> its ephemeral key
    paths: bytes = b""               # Server.export_requests of the answered users
    closed: bool = False


class Server1Session(SecretHolder):
    """Server 1's side of SecEmb rounds in one run: its signed key, then per
    round ``answer`` (any number of calls, each user once) and ``aggregate``
    (once).  ``min_users``: the least number of users an aggregate may
    cover (server 1's own setting)."""

    def __init__(self, roster: Roster, identity: Identity, *, run: bytes | str | int, min_users: int = MIN_USERS,
                 threads: int | None = None, keypair: X25519KeyPair | None = None,
                 noise_sigma: float = 0.0, executor: Executor | None = None) -> None:
        if roster.role(identity.name) != "server1":
            raise ValueError(f"identity {identity.name!r} has role {roster.role(identity.name)!r}, not 'server1'")
        if isinstance(min_users, bool) or not isinstance(min_users, int) or min_users < 1:
            raise ValueError(f"min_users must be an int >= 1, got {min_users!r}")
        self.roster, self.identity, self.min_users, self.threads = roster, identity, min_users, threads
        self.executor = executor          # server 1's own workers (never server 0's: .sharded)
        self.noise_sigma = check_real(noise_sigma, "noise_sigma")
        self.run = run_binding(run)
        self.keypair = keypair or X25519KeyPair()
        self.channel = SealedChannel(identity.name, self.run)
        self.users = roster.names("user")
        self.current: _Round1 | None = None

    def key_message(self) -> bytes:
        """Server 1's X25519 key signed with its roster identity for this run."""
        sig = self.roster.sign(self.identity, _P_KEY, self.run, self.keypair.public_bytes)
        return (Writer(_KEY, SESSION_VERSION).blob(self.run).blob(self.identity.name.encode())
                .blob(self.keypair.public_bytes).blob(sig).bytes())

    def _round_for(self, rnd: int, params: SecEmbParams | None) -> _Round1:
        rnd = _round(rnd)
        cur = self.current
        if cur is not None and rnd < cur.rnd:
            raise ProtocolError(f"server 1: round {rnd} is older than the current round {cur.rnd}")
        if cur is not None and rnd == cur.rnd:
            if cur.closed:
                raise ProtocolError(f"server 1: round {rnd} is already aggregated (aggregate once per round)")
            if params is not None and params != cur.params:
                raise ProtocolError(f"server 1: round {rnd}'s parameters changed within the round")
            return cur
        if params is None:
            raise ProtocolError(f"server 1: aggregate of round {rnd}, which it answered nothing of")
        self.current = _Round1(rnd, params, {})
        self.channel.forget_before(rnd)                 # earlier rounds are refused above
        return self.current

    def answer(self, rnd: int, params: SecEmbParams, table: np.ndarray,
               requests: Mapping[str, bytes]) -> tuple[dict[str, bytes], dict[str, str]]:
        """Answer each user's sealed request once (eq. 3, XOR form), sealed
        back.  ``requests``: relay label -> sealed request; returns (label
        -> sealed answer, label -> why refused)."""
        rd = self._round_for(rnd, params)
        srv = Server(1, rd.params, table, self.threads, self.executor)
        if rd.paths:
            srv.import_requests(rd.paths)
        out, refused = {}, {}
        opened: dict[str, tuple[str, bytes, RetrievalRequest]] = {}
        taken: set[str] = set()
        for label, data in requests.items():
            try:
                name, eph, req = self._open_request(rd, data)
                if name in taken:
                    raise ProtocolError(f"{name} was already answered in round {rd.rnd} (answer once per round)")
                _parse(srv.check_request, req, "retrieval request", name)
                opened[label] = (name, eph, req)
                taken.add(name)
            except ProtocolError as exc:
                refused[label] = str(exc)
        # every checked request answered in one batch (sharded over server 1's executor, if any)
        resps = srv.answer_many({self.users.index(n): q for n, _, q in opened.values()})
        for label, (name, eph, _) in opened.items():
            resp = resps[self.users.index(name)]
            sealed = self.channel.seal(self.keypair, eph, rd.rnd, "answer", name, resp.to_bytes())
            rd.eph[name] = eph
            out[label] = _sealed(_SA, rd.rnd, name, sealed)
        rd.paths = srv.export_requests()
        return out, refused

    def _open_request(self, rd: _Round1, data: bytes) -> tuple[str, bytes, RetrievalRequest]:
        def parse(b):
            r = Reader(b, _SQ, "sealed request", SESSION_VERSION)
            out = (r.u64(), r.blob(64).decode(), r.blob(32), r.blob(64), r.blob(1 << 34))
            r.done()
            return out
        qrnd, name, eph, sig, sealed = _parse(parse, data, "sealed request", "a user")
        if name not in self.roster or self.roster.role(name) != "user":
            raise ProtocolError(f"sealed request from {name!r}, which is not a roster party of role 'user'")
        if qrnd != rd.rnd:
            raise ProtocolError(f"sealed request of {name} is for round {qrnd}, not {rd.rnd}")
        if name in rd.eph:
            raise ProtocolError(f"{name} was already answered in round {rd.rnd} (answer once per round)")
        try:
            self.roster.verify(name, sig, _P_REQ, self.run, rd.rnd, name, eph, self.keypair.public_bytes)
        except AuthenticationError as exc:
            raise ProtocolError(f"sealed request of {name}: {exc}") from None
        req = _parse(RetrievalRequest.from_bytes,
                     self.channel.open(self.keypair, eph, rd.rnd, "request", name, sealed), "retrieval request", name)
        if req.party != 1:
            raise ProtocolError(f"{name}'s sealed request holds server {req.party}'s keys")
        return name, eph, req

    def aggregate(self, rnd: int, uploads: Mapping[str, bytes],
                  noise_sigma: float | None = None) -> tuple[bytes, dict[str, str]]:
        """Server 1's share (Algorithm 3) over exactly the users it answered
        this round whose sealed upload arrived and opened: (share message,
        label -> why refused).  Once per round; ProtocolError if fewer than
        ``min_users`` remain.  The Gaussian noise (Appendix G) is server 1's
        own ``noise_sigma``; ``noise_sigma`` here is what the relay asks
        for, honoured only upward (more noise, never less)."""
        asked = 0.0 if noise_sigma is None else check_real(noise_sigma, "noise_sigma")
        rd = self._round_for(rnd, None)
        rd.closed = True                                # once, refused or not
        noise_sigma = max(self.noise_sigma, asked)
        P = rd.params
        ups: dict[int, AggregationUpload] = {}
        names: list[str] = []
        refused: dict[str, str] = {}
        for label, data in uploads.items():
            try:
                urnd, name, sealed = _parse(lambda b: _unsealed(_SU, b, "sealed upload"), data, "sealed upload",
                                            "a user")
                if urnd != rd.rnd:
                    raise ProtocolError(f"sealed upload of {name!r} is for round {urnd}, not {rd.rnd}")
                if name not in rd.eph:
                    raise ProtocolError(f"{name!r} uploaded without an answer this round")
                if name in names:
                    raise ProtocolError(f"{name} uploaded twice in round {rd.rnd}")
                up = _parse(AggregationUpload.from_bytes,
                            self.channel.open(self.keypair, rd.eph[name], rd.rnd, "upload", name, sealed),
                            "aggregation upload", name)
                if (up.party != 1 or up.bits != P.agg_bits or up.cws.shape != (P.m_prime, P.d)
                        or up.dense.shape != (P.dense_size,)):
                    raise ProtocolError(f"{name}'s upload does not fit the round's parameters")
                ups[self.users.index(name)] = up
                names.append(name)
            except ProtocolError as exc:
                refused[label] = str(exc)
        if len(names) < self.min_users:
            raise ProtocolError(f"server 1 refuses to aggregate round {rd.rnd}: {len(names)} user(s) "
                                f"({', '.join(names) or 'none'}) is below min_users = {self.min_users}"
                                + (f"; refused: {refused}" if refused else ""))
        srv = Server(1, P, np.zeros((P.m, P.d), dtype=np.uint64), self.threads, self.executor)
        srv.import_requests(rd.paths)
        share = srv.aggregate(ups, noise_sigma)
        rd.paths = b""
        w = Writer(_S1, SESSION_VERSION).u64(rd.rnd).u64(len(names))
        for n in names:
            w.blob(n.encode())
        return w.blob(share.to_bytes()).bytes(), refused

    def export_state(self) -> bytes:
        """This session as versioned bytes (server 1's own state; never sent)."""
        w = (Writer(_S1_ST, SESSION_VERSION).blob(self.run).blob(self.keypair.private_bytes())
             .u64(self.min_users).blob(struct.pack("<d", self.noise_sigma)).u64(self.current is not None))
        if self.current is not None:
            rd = self.current
            _params_bytes(w.u64(rd.rnd).u64(rd.closed), rd.params).blob(rd.paths).u64(len(rd.eph))
            for n, k in sorted(rd.eph.items()):
                w.blob(n.encode()).blob(k)
        return _used_bytes(w, self.channel.used).bytes()

    @classmethod
    def import_state(cls, roster: Roster, identity: Identity, data: bytes,
                     threads: int | None = None, executor: Executor | None = None) -> Server1Session:
        """The session :meth:`export_state` saved: its key is restored, never made anew.
        ``executor``: server 1's own workers for this process (an executor is
        never part of the saved state)."""
        r = Reader(data, _S1_ST, "SecEmb server 1 session", SESSION_VERSION)
        run, sk, min_users, sigma = r.blob(1 << 10), r.blob(32), r.u64(), r.blob(8)
        if len(sigma) != 8:
            raise ValueError("SecEmb server 1 session: noise_sigma is not 8 bytes")
        s = cls(roster, identity, run=b"", min_users=min_users, threads=threads,
                keypair=X25519KeyPair.from_private_bytes(sk), noise_sigma=struct.unpack("<d", sigma)[0],
                executor=executor)
        s.run = run
        if r.flag():
            rnd, closed = r.u64(), r.flag()
            params, paths = _params_from(r), r.blob()
            eph = dict(_named(r, lambda: r.blob(32), "SecEmb server 1 session: answered users"))
            s.current = _Round1(rnd, params, eph, paths, closed)
        s.channel = SealedChannel(identity.name, run, _used_from(r))
        r.done()
        return s


# ===================================================================== server 0
class Server0Session:
    """Server 0's side (the relay, which also answers, aggregates its share
    and reconstructs): per round ``begin``, ``answer`` (each user once),
    ``aggregate`` (once) and ``reconstruct`` from server 1's share, over
    exactly the users server 1 aggregated."""

    def __init__(self, roster: Roster, *, run: bytes | str | int, min_users: int = MIN_USERS,
                 noise_sigma: float = 0.0, threads: int | None = None, executor: Executor | None = None) -> None:
        if isinstance(min_users, bool) or not isinstance(min_users, int) or min_users < 1:
            raise ValueError(f"min_users must be an int >= 1, got {min_users!r}")
        self.roster, self.min_users, self.threads = roster, min_users, threads
        self.executor = executor          # server 0's own workers (never server 1's: .sharded)
        self.noise_sigma = check_real(noise_sigma, "noise_sigma")
        self.run = run_binding(run)
        self.server1 = server1_name(roster)
        self.users = roster.names("user")
        self.round, self.stage = 0, "idle"
        self._server: Server | None = None
        self._answered: set[str] = set()
        self._uploads: dict[str, AggregationUpload] = {}
        self._share: tuple[tuple[str, ...], AggregateShare] | None = None

    def server1_key(self, data: bytes) -> bytes:
        """Check server 1's key message as a user will (server 0 forwards it)."""
        return verify_server1_key(self.roster, self.run, data)

    def begin(self, rnd: int, params: SecEmbParams, table: np.ndarray) -> None:
        """Start round ``rnd`` (greater than every earlier round)."""
        rnd = _round(rnd)
        if rnd <= self.round:
            raise ProtocolError(f"server 0: round {rnd} does not follow round {self.round}")
        self.round, self.stage = rnd, "answer"
        self._server = Server(0, params, table, self.threads, self.executor)
        self._answered, self._uploads, self._share = set(), {}, None

    def _at(self, rnd: int, stage: str) -> None:
        if _round(rnd) != self.round or self.stage != stage:
            raise ProtocolError(f"server 0: {stage!r} of round {rnd} while at {self.stage!r} of round {self.round}")

    def answer(self, rnd: int, user: str, request: bytes) -> bytes:
        """Server 0's retrieval answer to roster user ``user``, once per round
        (:meth:`answer_many` for one user: its rules, raised)."""
        out, refused = self.answer_many(rnd, {user: request})
        if user in refused:
            raise ProtocolError(refused[user])
        return out[user]

    def answer_many(self, rnd: int, requests: Mapping[str, bytes]) -> tuple[dict[str, bytes], dict[str, str]]:
        """:meth:`answer` for several users at once, in one batch (sharded
        over server 0's executor, if any): (user -> answer, user -> why
        refused).  The same rules and the same bytes as one call per user."""
        self._at(rnd, "answer")
        assert self._server is not None
        srv = self._server
        checked: dict[str, RetrievalRequest] = {}
        refused = {}
        for user, request in requests.items():
            try:
                if user not in self.users:
                    raise ProtocolError(f"server 0: {user!r} is not a roster user")
                if user in self._answered or user in checked:
                    raise ProtocolError(f"server 0: {user} was already answered in round {rnd}")
                req = _parse(RetrievalRequest.from_bytes, request, "retrieval request", user)
                _parse(srv.check_request, req, "retrieval request", user)
                checked[user] = req
            except ProtocolError as exc:
                refused[user] = str(exc)
        resps = srv.answer_many({self.users.index(u): q for u, q in checked.items()})
        self._answered.update(checked)
        return {u: resps[self.users.index(u)].to_bytes() for u in checked}, refused

    def aggregate(self, rnd: int, uploads: Mapping[str, bytes]) -> dict[str, str]:
        """Take the users' uploads to server 0 (once per round); returns
        user -> why refused.  Server 0's share is computed by
        :meth:`precompute` (while server 1 works) or by :meth:`reconstruct`."""
        if self.stage == "answer":
            self.stage = "aggregate"
        self._at(rnd, "aggregate")
        assert self._server is not None
        P = self._server.params
        refused = {}
        for user, data in uploads.items():
            try:
                if user not in self._answered:
                    raise ProtocolError(f"server 0: {user!r} uploaded without an answer this round")
                up = _parse(AggregationUpload.from_bytes, data, "aggregation upload", user)
                if (up.party != 0 or up.bits != P.agg_bits or up.cws.shape != (P.m_prime, P.d)
                        or up.dense.shape != (P.dense_size,)):
                    raise ProtocolError(f"{user}'s upload to server 0 does not fit the round's parameters")
                self._uploads[user] = up
            except ProtocolError as exc:
                refused[user] = str(exc)
        self.stage = "reconstruct"
        return refused

    def precompute(self) -> None:
        """Server 0's share over every upload it took (server 1 usually
        aggregates the same users; :meth:`reconstruct` redoes it if not)."""
        if self.stage != "reconstruct":
            raise ProtocolError(f"server 0: precompute at stage {self.stage!r}")
        self._share = self._share_over(tuple(sorted(self._uploads)))

    def _share_over(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], AggregateShare]:
        assert self._server is not None
        srv = Server(0, self._server.params, self._server.table, self.threads, self.executor)
        srv.import_requests(self._server.export_requests())
        return names, srv.aggregate({self.users.index(n): self._uploads[n] for n in names}, self.noise_sigma)

    def reconstruct(self, rnd: int, share1: bytes) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(sum of sparse updates m x d, dense sum, users summed) from server
        1's share message, over exactly its users (each must have an upload
        here); ProtocolError naming server 1 if its share does not fit."""
        self._at(rnd, "reconstruct")
        assert self._server is not None
        P = self._server.params

        def parse(b):
            r = Reader(b, _S1, "server 1 share", SESSION_VERSION)
            srnd, names = r.u64(), [r.blob(64).decode() for _ in range(r.u64())]
            share = AggregateShare.from_bytes(r.blob())
            r.done()
            return srnd, names, share
        srnd, names, share1_ = _parse(parse, share1, "aggregate share", self.server1)
        if srnd != self.round:
            raise ProtocolError(f"server 1's share is for round {srnd}, not {self.round}")
        if len(set(names)) != len(names) or not set(names) <= set(self._uploads):
            raise ProtocolError(f"server 1's share covers users without an upload here: "
                                f"{sorted(set(names) - set(self._uploads))}")
        if len(names) < self.min_users:
            raise ProtocolError(f"server 1's share covers {len(names)} user(s), below min_users = {self.min_users}")
        if share1_.party != 1 or share1_.sparse.shape != (P.m, P.d) or share1_.dense.shape != (P.dense_size,):
            raise ProtocolError("server 1's share does not fit the round's parameters")
        want = tuple(sorted(names))
        mine = self._share if self._share is not None and self._share[0] == want else self._share_over(want)
        self.stage = "done"
        agg, dense = reconstruct_aggregate(mine[1], share1_, P)
        return agg, dense, sorted(names)

    def export_state(self) -> bytes:
        """This session as versioned bytes (server 0's own state: the round,
        stage, public table, the retrieval paths and uploads it holds)."""
        w = (Writer(_S0_ST, SESSION_VERSION).blob(self.run).u64(self.min_users)
             .blob(struct.pack("<d", self.noise_sigma)).u64(self.round).blob(self.stage.encode()))
        w.u64(self._server is not None)
        if self._server is not None:
            _params_bytes(w, self._server.params).array(self._server.table).blob(self._server.export_requests())
            w.u64(len(self._answered))
            for n in sorted(self._answered):
                w.blob(n.encode())
            w.u64(len(self._uploads))
            for n, up in sorted(self._uploads.items()):
                w.blob(n.encode()).blob(up.to_bytes())
        return w.bytes()

    @classmethod
    def import_state(cls, roster: Roster, data: bytes, threads: int | None = None,
                     executor: Executor | None = None) -> Server0Session:
        """The session :meth:`export_state` saved (same roster); ``executor``:
        server 0's own workers for this process."""
        r = Reader(data, _S0_ST, "SecEmb server 0 session", SESSION_VERSION)
        run, min_users = r.blob(1 << 10), r.u64()
        sigma = r.blob(8)
        if len(sigma) != 8:
            raise ValueError("SecEmb server 0 session: noise_sigma is not 8 bytes")
        s = cls(roster, run=b"", min_users=min_users, noise_sigma=struct.unpack("<d", sigma)[0], threads=threads,
                executor=executor)
        s.run, s.round, s.stage = run, r.u64(), r.blob(32).decode()
        if r.flag():
            params = _params_from(r)
            s._server = Server(0, params, r.array(2), threads, executor)
            s._server.import_requests(r.blob())
            answered = [r.blob(64).decode() for _ in range(r.u64())]
            check_increasing(answered, "SecEmb server 0 session: answered users")
            s._answered = set(answered)
            s._uploads = dict(_named(r, lambda: AggregationUpload.from_bytes(r.blob()),
                                     "SecEmb server 0 session: uploads"))
        r.done()
        return s
