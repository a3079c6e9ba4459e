"""SecEA as two sans-I/O sessions, one per role: :class:`ClientSession`
and :class:`ServerSession`.  Every rule that keeps a deployment of SecEA
(Tang, Zhu, Li, Zhang, Sun 2022, "Fully Privacy-Preserving Federated
Representation Learning via Secure Embedding Aggregation", Sec. 4) private
against the server and the network lives here, once; the transports
(:func:`secea_fast.protocols.secea.run_round`'s in-memory loopback, the
Flower adapter :mod:`secea_fast.flower.secea`) only carry what the sessions
emit.  Length (about 1250 lines): both roles' stage machines and their one
set of rules are kept together, so that each rule is stated once, beside
the other role's half of it.

A stage is one envelope ``(cfg, blobs)``: ``cfg`` a dict of small public
values (stage name, round, attempt, step, parameters, block lists),
``blobs`` the protocol's versioned byte messages (``Message.to_bytes``, or
a signed key).  The server session emits one envelope per party and reads
one reply per party; the client session turns one envelope into one reply.

Stages (per attempt of a round)
-------------------------------
Pairwise seeds.  With a roster, a pair's seed a_{n,v} (eq. 4's key
agreement, Sec. 4.1 step 2) needs no exchange: both clients derive it from
the static X25519 secret of their roster keys and the attempt's public
``salt`` (:func:`static_pair_seed`: HKDF bound to the roster, round,
attempt, party set and the pair), so no X25519 key crosses the server and
none can be substituted.  Without a roster (an unauthenticated measurement
run) every client makes a fresh X25519 key per attempt and the ``keys``
stage relays them.

1. ``keys`` -- only when something is to be announced: an unauthenticated
   run's X25519 keys, a layer's keys (SecEA-PHE's Paillier key), or the
   entity counts when the union is to be computed and the server was given
   no public bound k.  Fields: parameters, the client's index ``party``,
   the attempt's party set ``parties`` (roster names in index order) and,
   with a roster, ``salt``.  An authenticated client may be sent it
   without ``party``: its index is then its roster name's place in
   ``parties`` (so one envelope serves every node).  The client answers
   with its entity count and, without a roster, its X25519 public key; a
   layer's key parts follow, signed by its roster identity.
2. ``peers``: k, the largest count or the public bound (Sec. 4.1,
   footnote 1), and every key the ``keys`` stage collected; the client
   checks them (its own unchanged), agrees the pairwise seeds and uploads
   its masked union terms (eq. 4) with its count.  Without a ``keys``
   stage, ``peers`` opens the attempt: it carries the fields of ``keys``
   (``parties``, ``salt``, ``party`` unless it is the shared first
   envelope), and the client runs the checks of an opening stage.
3. ``step`` 0, 1, 2, ...: the union sum (step 0), shares (eq. 11, step 1),
   queries (eq. 16), noised responses (eq. 20) and decoding (eq. 22),
   pipelined as in :mod:`secea_fast.flower.secea`.

What cannot merge.  The union upload needs the pairwise seeds; the shares
and the first queries need the union (their shapes are M x .); answers need
every share (y_v sums them, eq. 12); decoding needs the answers.  So a
round that computes the union takes at least ``peers``, step 0 (shares,
queries), step 1 (answers), step 2 (decoding): four stages, one per
dependency, when every block fits one step; a kept union
(``union=``) still needs ``peers`` for the counts.  Dropping ``keys`` keeps
each client's view as it was: the seeds are as secret (only the pair holds
a private key of the pair) and as fresh (a new salt per attempt, and the
round and attempt bound in), and k is public in the paper (footnote 1).
Unlike fresh X25519 keys, static seeds have no forward secrecy: whoever
later steals a client's identity key can recompute its past seeds, so the
identity file is as sensitive as the embeddings it masked.

Rules (each pinned by ``tests/test_attacks_secea.py``)
------------------------------------------------------
* Stage order and binding.  A client opens an attempt (``keys``, or
  ``peers`` without one) only for a (round, attempt) later than every one
  it has seen: a replayed opening stage is refused and never resets the
  client (its answer-once guard stays); a salt replayed under a later
  round or attempt gives other seeds (both are bound in).  The session
  remembers its (round, attempt) for the run its state lives in; a
  :class:`SaltLedger` (``salts=``, kept by the node across runs) makes it
  refuse a salt seen before in any run, so a server replaying a past run
  cannot make the seeds repeat either.  ``peers`` follows ``keys`` of the same attempt, steps follow ``peers`` in order
  0, 1, 2, ... once each; parameters and the party set may not change
  within an attempt.  Every protocol message must carry the session's round:
  a message of another round is refused, not decoded.
* Answer-once: each (round, querier, block) is answered once (the pad
  guard of :class:`Client`, which is part of the exported state).
* Restart and the difference rule.  A client that has answered a query in
  attempt a of round r refuses every later attempt of round r: a querier
  that decoded a block with client x and again without it would learn x's
  embeddings by the difference.  The server session follows the same point:
  a lost or deviating client restarts the attempt without it only while no
  client has answered a query; after that, Reed-Solomon decoding absorbs
  the loss (2e + s <= N - k) or the querier's blocks fail.  A restart keeps
  the union already computed, and needs N' >= 2T + 1 clients, else the
  round fails with one :class:`RoundFailed` naming every dropped party.
* Decode checking.  A block decoded from exactly k = 2(K+T-1)+1 responses
  cannot be checked (``DecodeResult.checked``); the client reports it in
  its reply (``unchecked``) and keeps it in :attr:`ClientSession.unchecked`,
  or refuses it when the server's ``require-checked`` is set.
* Bad nodes.  The server session checks every reply before relaying any
  part of it: a key that does not verify or is not 32 bytes, a count k
  that is not an integer in [1, ``max_entities``], a missing or malformed
  union upload, a message under another client's index, a blob that does
  not parse or does not fit the stage (kind, receiver, block, shape), a
  missing share, query or response: its sender becomes a dropout (logged
  with its reason in ``ServerResult.dropped``).  A client that finds a
  peer's share or response malformed after unpadding names that peer in its
  reply (``refused``) and the server drops it.  The caller drops the sender
  of a :class:`ProtocolError`, never the round.  (The server cannot check
  a pad it does not hold, so it believes such a report: a deviating client
  can have a peer dropped this way -- a loss of availability, bounded by
  the restart tolerance, not of privacy.)
* Malformed config: every field is checked (:func:`cfg_int`), so a missing
  field, a negative round or block, an out-of-range block index or too few
  blobs is a ``ProtocolError`` (a ``ValueError``) naming the field.
* No timings leave a node: a client's compute seconds stay in
  :attr:`ClientSession.seconds` (its own log or summary file).
* Secrets: :meth:`ClientSession.export_state` holds the X25519 private key
  (unused with a roster) and seeds and :meth:`ClientSession.import_state` restores them; neither
  ever generates a new secret.  The long-term identity is not part of the
  state (it is loaded from the node's identity file).

Composing an encryption step.  Both sessions take a ``layer``
(:class:`~secea_fast.protocols.secea.layer.Layer`; default: plain SecEA,
which adds no field, key part or state, so its bytes are unchanged).  The
layer supplies the parties (whose ``answer``, ``noise`` and ``decode`` the
stages call), extra key material announced in the ``keys`` stage and
checked by the server and every client before use, the parsing of a step's
blobs, which messages are responses and whether one fits its block, the
shape of the decoded totals, and its own secret state (saved by
:meth:`ClientSession.export_state` after SecEA's fields).  The stage
machine and every rule above are written here once, for every layer.
SecEA-PHE is SecEA with the Paillier layer
(:class:`~secea_fast.protocols.secea_phe.layer.PaillierLayer`: responses
encrypted under the querier's roster-signed Paillier key, noised on
ciphertexts, decrypted at decode; the key pair kept in the client's
session).
"""
from __future__ import annotations

import logging
import struct
import time
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np

from ... import tuning
from ..._checks import check_int
from ..._secrets import SecretHolder
from .._inputs import EntityRows, check_local, entity_list, local_ids
from ..common.roster import Identity, Roster, transcript
from ..common.wire import Reader, Writer, check_increasing
from .coding import DecodingError
from .layer import Layer
from .messages import Message
from .params import PSU_PRIME, SecEAParams
from .parties import Client
from ...prg import random_seed
from ..common.errors import ProtocolError as BaseProtocolError

__all__ = ["ClientSession", "ServerSession", "ProtocolError", "RoundFailed", "ServerResult",
           "KEY_PURPOSE", "PROTOCOL", "cfg_int", "block_sizes", "signed_key_bytes", "check_key",
           "default_block_size", "static_pair_seed", "SALT_LEN", "SaltLedger"]

PROTOCOL = "secea"
KEY_PURPOSE = "secea.key"
_STATE_MAGIC = b"SEsc"
_KEY_LEN, _SIG_LEN = 32, 64
SALT_LEN = 32                       # bytes of the per-attempt salt of the static pairwise seeds
_PAIR_LABEL = "secea_fast.secea.static-pair.v1"
_MAX_ROUND = (1 << 63) - 1
# Flower's logger's child (the same logger as secea_fast.flower.records.log),
# so a deployment's dropouts appear in the ServerApp's and ClientApps' logs
_LOG = logging.getLogger("flwr").getChild("secea_fast")


class ProtocolError(BaseProtocolError):
    """A message that does not parse, verify or fit the stage.  ``sender``
    names who sent it (a party index, a roster name, or ``"server"``); the
    caller drops that sender, never the round."""

    def __init__(self, message: str, sender: int | str = "server") -> None:
        super().__init__(message)
        self.sender = sender


class RoundFailed(RuntimeError):
    """The round cannot complete: too many parties were dropped.  The
    message names each dropped party and why."""


# ----------------------------------------------------------------- config
def cfg_int(cfg: Mapping[str, Any], name: str, lo: int = 0, hi: int = _MAX_ROUND) -> int:
    """``cfg[name]`` as an int in [lo, hi]; ProtocolError naming the field otherwise."""
    if name not in cfg:
        raise ProtocolError(f"SecEA stage: field {name!r} is missing")
    v = cfg[name]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ProtocolError(f"SecEA stage: field {name!r} must be an integer, got {v!r}")
    v = int(v)
    if not lo <= v <= hi:
        raise ProtocolError(f"SecEA stage: field {name!r} = {v} is outside [{lo}, {hi}]")
    return v


def _cfg_ints(cfg, name, lo, hi) -> list[int]:
    v = cfg.get(name, [])
    if not isinstance(v, (list, tuple)):
        raise ProtocolError(f"SecEA stage: field {name!r} must be a list of integers")
    out = [cfg_int({name: x}, name, lo, hi) for x in v]
    if len(set(out)) != len(out):
        raise ProtocolError(f"SecEA stage: field {name!r} repeats an entry")
    return out


def _cfg_params(cfg) -> tuple:
    if "bound" not in cfg:
        raise ProtocolError("SecEA stage: field 'bound' is missing")
    bound = cfg["bound"]
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not np.isfinite(bound):
        raise ProtocolError(f"SecEA stage: field 'bound' must be a finite number, got {bound!r}")
    return (cfg_int(cfg, "N", 2, 1 << 20), cfg_int(cfg, "d", 1, 1 << 24), cfg_int(cfg, "T", 1, 1 << 20),
            cfg_int(cfg, "K", 0, 1 << 20), cfg_int(cfg, "precision", 0, 18), float(bound))


def _make_params(t: tuple) -> SecEAParams:
    N, d, T, K, precision, bound = t
    try:
        return SecEAParams(N=N, d=d, T=T, precision=precision, bound=bound, K=K if K > 0 else None)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"SecEA stage: parameters do not make a SecEA round: {exc}") from None


def default_block_size(M: int) -> int:
    """Query rows per block: about ``tuning.SECEA_QUERY_BLOCK_ELEMS`` query
    entries per (block, responder), a multiple of 16 (the matmul row panel)."""
    b = tuning.SECEA_QUERY_BLOCK_ELEMS // max(M, 1)
    return int(min(tuning.SECEA_QUERY_BLOCK_MAX, max(16, b // 16 * 16)))


def _parties_str(parties: Sequence[str]) -> str:
    return ",".join(parties)


def block_sizes(count: int, B: int) -> list[int]:
    """Rows of each query block of a client with ``count`` entities."""
    return [min(B, count - i) for i in range(0, count, B)]


def signed_key_bytes(roster: Roster | None, identity: Identity | None, rnd: int, attempt: int, index: int,
                     parties: Sequence[str], public: bytes) -> bytes:
    """The ``keys`` reply: the X25519 public key, then its roster signature
    (nothing when the session runs unauthenticated)."""
    if roster is None or identity is None:
        return bytes(public)
    return bytes(public) + roster.sign(identity, KEY_PURPOSE, PROTOCOL, rnd, attempt, index,
                                       _parties_str(parties), bytes(public))


def check_key(roster: Roster | None, blob: bytes, rnd: int, attempt: int, index: int,
               parties: Sequence[str]) -> bytes:
    """The X25519 key of party ``index`` from its signed ``keys`` blob;
    ProtocolError naming the party if it does not verify."""
    who = parties[index]
    want = _KEY_LEN + (0 if roster is None else _SIG_LEN)
    if not isinstance(blob, (bytes, bytearray)) or len(blob) != want:
        raise ProtocolError(f"key of client {index} ({who}): {len(blob) if isinstance(blob, (bytes, bytearray)) else 'no'}"
                            f" bytes, expected {want}", index)
    pub = bytes(blob[:_KEY_LEN])
    if roster is not None:
        try:
            roster.verify(who, bytes(blob[_KEY_LEN:]), KEY_PURPOSE, PROTOCOL, rnd, attempt, index,
                          _parties_str(parties), pub)
        except ValueError as exc:
            raise ProtocolError(f"key of client {index} ({who}) does not verify against the roster "
                                f"(a substituted key?): {exc}", index) from None
    return pub


def static_pair_seed(roster: Roster, identity: Identity, salt: bytes, rnd: int, attempt: int, index: int,
                     peer: int, parties: Sequence[str]) -> bytes:
    """The pairwise seed a_{n,v} (32 bytes) of client ``index`` (this
    ``identity``) and client ``peer`` for one attempt, from their roster keys
    alone: HKDF-SHA256 (RFC 5869) with ``salt`` (the attempt's public salt,
    :data:`SALT_LEN` bytes), input the static X25519 secret of the two
    parties' long-term keys (:meth:`Identity.static_exchange`) and ``info``
    the canonical transcript of (label, the roster's digest, protocol,
    round, attempt, the party set, the pair's names and indices in order).
    Only the two parties can compute it (the secret needs one of their
    private keys); a salt, round, attempt, party set or pair other than this
    one gives an unrelated seed.  ValueError if a party is not in the roster
    or ``salt`` is not :data:`SALT_LEN` bytes."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    if not isinstance(salt, (bytes, bytearray)) or len(salt) != SALT_LEN:
        raise ValueError(f"salt must be {SALT_LEN} bytes")
    if parties[index] != identity.name:
        raise ValueError(f"index {index} is {parties[index]!r}, not {identity.name!r}")
    lo, hi = min(index, peer), max(index, peer)
    if lo == hi:
        raise ValueError("a pairwise seed needs two different parties")
    if parties[peer] not in roster:
        raise ValueError(f"party {parties[peer]!r} is not in the roster")
    shared = identity.static_exchange(roster.entries[parties[peer]].public)
    info = transcript(_PAIR_LABEL, roster.digest, PROTOCOL, rnd, attempt, _parties_str(parties),
                      parties[lo], parties[hi], lo, hi)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=bytes(salt), info=info).derive(shared)


class SaltLedger:
    """The salts a client has opened attempts with, kept beyond one run
    (a session's own record lasts as long as its run's state).  With a
    ledger a client refuses a salt it has seen, in any run: a server
    replaying a past run (same round numbers, same salt) would otherwise
    make its pairwise seeds, hence its one-time pads, repeat.  This
    in-memory ledger serves one process; a deployment keeps one per node
    on disk (:class:`secea_fast.flower.secea.FileSaltLedger`)."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()

    def claim(self, salt: bytes) -> None:
        """Record ``salt``; ValueError if it was recorded before."""
        if bytes(salt) in self._seen:
            raise ValueError("this salt was claimed before")
        self._seen.add(bytes(salt))


def _local_rows(local) -> dict | EntityRows:
    if isinstance(local, EntityRows):       # checked when it was made
        return local
    if not hasattr(local, "items") or not hasattr(local, "keys"):
        raise TypeError(f"local must be a mapping entity id -> embedding row, got {type(local).__name__}")
    rows = {k: _as_numpy(v) for k, v in local.items()}
    check_local([rows])
    return rows


def _as_numpy(v):
    """A NumPy view of a row: torch tensors (detached, on the CPU) included."""
    if hasattr(v, "detach") and hasattr(v, "cpu"):
        v = v.detach().cpu().numpy()
    return np.asarray(v)


# ======================================================================= client
class ClientSession(SecretHolder):
    """One SecEA client's stage machine (holds the client's secrets: not
    picklable; :meth:`export_state` is its one transfer, to its own node).  ``roster`` / ``identity``: the
    federation's roster and this party's identity (both None only for an
    unauthenticated measurement run: keys are then neither signed nor
    checked); ``local``: entity id -> 1-D embedding row (NumPy or torch),
    or the same as arrays (:class:`~secea_fast.protocols.secea.EntityRows`;
    then :attr:`rows` holds the result in the order of its ids);
    ``layer``: this client's :class:`~secea_fast.protocols.secea.layer.Layer`
    (default plain SecEA; SecEA-PHE: its own ``PaillierLayer``, which holds
    its Paillier key pair).

    :meth:`receive` takes the server's envelope and returns the reply;
    :attr:`result` is this client's global embeddings (eq. 5) once its
    last block is decoded; :attr:`seconds` its compute seconds per phase
    (never sent)."""

    def __init__(self, roster: Roster | None, identity: Identity | None, local: Mapping[Any, Any] | EntityRows, *,
                 layer: Layer | None = None, salts: SaltLedger | None = None) -> None:
        if salts is not None and not callable(getattr(salts, "claim", None)):
            raise TypeError(f"salts must have a claim(salt) method, got {type(salts).__name__}")
        self.salts = salts
        if (roster is None) != (identity is None):
            raise ValueError("roster and identity go together (both None: unauthenticated)")
        if identity is not None and identity.name not in roster:      # type: ignore[operator]
            raise ValueError(f"identity {identity.name!r} is not in the roster")
        self.roster, self.identity, self.local = roster, identity, local
        self.layer = Layer() if layer is None else layer
        if not isinstance(self.layer, Layer):
            raise TypeError(f"layer must be a secea Layer, got {type(layer).__name__}")
        self.ids = local_ids(local) if isinstance(local, EntityRows) else entity_list(local, "local")
        self.round = -1
        self.attempt = 0
        self.stage = ""                      # last stage taken: "", keys, peers, step
        self.step = -1
        self.answered_round = -1             # a round in which this client answered a query
        self.params_t: tuple | None = None
        self.parties: list[str] = []
        self.B = 0
        self.client: Client | None = None
        self.own_share = b""
        self.own_queries: dict[int, bytes] = {}
        self.awaiting: dict[int, int] = {}   # own block -> the step that emitted it (decoded two steps later)
        self.sums: np.ndarray | None = None
        self.counts: np.ndarray | None = None
        self.decoded: set[int] = set()
        self.failed: set[int] = set()
        self.unchecked: set[int] = set()
        self.result: dict[Any, np.ndarray] | None = None
        self.rows: np.ndarray | None = None    # the result as one array, a row per entity of ``ids``
        self.seconds: dict[str, float] = {}
        # this process's own record (never sent, not in the state): why a
        # block failed, which responders the decoder found faulty
        self.errors: dict[int, Exception] = {}
        self.faulty: set[tuple[int, int]] = set()          # (block, responder)

    # ------------------------------------------------------------ stages
    def receive(self, cfg: Mapping[str, Any], blobs: Sequence[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """One stage: the server's envelope in, this client's reply out.
        ProtocolError (a ValueError) for an envelope that is replayed,
        reordered, of another round or attempt, malformed, or carries a key
        that does not verify; the session's state is unchanged then."""
        if not isinstance(cfg, Mapping):
            raise ProtocolError("SecEA stage: cfg must be a mapping")
        blobs = list(blobs)
        stage = cfg.get("stage")
        rnd = cfg_int(cfg, "round")
        attempt = cfg_int(cfg, "attempt", 1)
        try:
            self.layer.check_fields(cfg)
        except (ValueError, TypeError) as exc:
            raise ProtocolError(f"SecEA {stage!r} stage: {exc}") from None
        self.result = self.rows = None
        if stage == "keys":
            return self._keys(cfg, rnd, attempt)
        if stage == "peers" and self.roster is not None and (rnd, attempt) != (self.round, self.attempt):
            # an attempt that opens with peers: the pairwise seeds come from the roster keys,
            # so there is no keys stage (unless the layer announces keys or k is not public)
            return self._open_with_peers(cfg, blobs, rnd, attempt)
        if (rnd, attempt) != (self.round, self.attempt):
            raise ProtocolError(f"SecEA {stage!r} stage of round {rnd} attempt {attempt}, but this client is in "
                                f"round {self.round} attempt {self.attempt}: refused")
        if _cfg_params(cfg) != self.params_t:
            raise ProtocolError(f"SecEA {stage!r} stage: the parameters changed within the attempt")
        if stage == "peers":
            if self.stage != "keys":
                raise ProtocolError(f"SecEA peers stage after {self.stage!r}: refused (replayed or reordered)")
            return self._peers(cfg, blobs)
        if stage == "step":
            step = cfg_int(cfg, "step")
            if self.stage not in ("peers", "step") or step != self.step + 1:
                raise ProtocolError(f"SecEA step {step} after {self.stage!r} {self.step}: refused "
                                    "(replayed or reordered)")
            return self._step(cfg, blobs, step)
        raise ProtocolError(f"SecEA stage: unknown stage {stage!r}")

    def _begin(self, cfg, rnd, attempt, stage):
        """The checks that open an attempt (the keys stage, or peers when
        it opens the attempt), and its new party; the session unchanged."""
        if (rnd, attempt) <= (self.round, self.attempt):
            raise ProtocolError(f"SecEA {stage} stage of round {rnd} attempt {attempt}: this client is already in "
                                f"round {self.round} attempt {self.attempt} (a replayed {stage} stage is refused)")
        if rnd == self.answered_round:
            raise ProtocolError(f"SecEA {stage} stage of round {rnd} attempt {attempt}: this client answered queries "
                                f"in an earlier attempt of round {rnd}; a restart now would let a querier learn a "
                                "lost client's embeddings by difference: refused")
        pt = _cfg_params(cfg)
        params = _make_params(pt)
        parties = cfg.get("parties")
        if (not isinstance(parties, (list, tuple)) or len(parties) != params.N
                or not all(isinstance(x, str) for x in parties) or len(set(parties)) != params.N):
            raise ProtocolError(f"SecEA {stage} stage: field 'parties' must be N = {params.N} distinct names")
        if "party" in cfg or self.identity is None:
            party = cfg_int(cfg, "party", 0, params.N - 1)
        elif self.identity.name in parties:
            # the same envelope to every node (the Flower runner's first stage, which
            # carries the admission challenge): the index is this client's place in the party set
            party = list(parties).index(self.identity.name)
        else:
            raise ProtocolError(f"SecEA {stage} stage: this client ({self.identity.name!r}) is not in field "
                                "'parties'")
        if self.roster is not None:
            assert self.identity is not None
            stranger = [x for x in parties if x not in self.roster or self.roster.role(x) != "client"]
            if stranger:
                raise ProtocolError(f"SecEA {stage} stage: parties {stranger} are not roster clients")
            if parties[party] != self.identity.name:
                raise ProtocolError(f"SecEA {stage} stage: index {party} is {parties[party]!r}, not this client "
                                    f"({self.identity.name!r})")
        try:
            c = self.layer.client(party, params, self.ids)
        except ValueError as exc:
            raise ProtocolError(f"SecEA {stage} stage: parameters do not fit the {self.layer.name} layer: {exc}") from None
        if self.roster is not None:
            salt = cfg.get("salt")
            if not isinstance(salt, bytes) or len(salt) != SALT_LEN:
                raise ProtocolError(f"SecEA {stage} stage: field 'salt' must be {SALT_LEN} bytes")
            if self.salts is not None:
                try:
                    self.salts.claim(salt)
                except ValueError as exc:
                    raise ProtocolError(f"SecEA {stage} stage: field 'salt' was used before (a replayed run?): "
                                        f"{exc}") from None
            c.set_pair_seeds({v: self._pair_seed(salt, rnd, attempt, party, v, list(parties))
                              for v in range(params.N) if v != party})
        return c, pt, list(parties), party

    def _pair_seed(self, salt: bytes, rnd: int, attempt: int, index: int, peer: int, parties: list[str]) -> bytes:
        """a_{n,v} from the roster keys (:func:`static_pair_seed`)."""
        assert self.roster is not None and self.identity is not None
        return static_pair_seed(self.roster, self.identity, salt, rnd, attempt, index, peer, parties)

    def _keys(self, cfg, rnd, attempt):
        t0 = time.process_time()
        c, pt, parties, party = self._begin(cfg, rnd, attempt, "keys")
        extra = self.layer.key_material(c, self.roster, self.identity, rnd, attempt, party, parties)
        # with a roster the pairwise seeds are already agreed: the reply has no X25519 key
        key = [] if self.roster is not None else [signed_key_bytes(None, None, rnd, attempt, party, parties,
                                                                   c.public_key)]
        # the new attempt starts here (nothing above changed the session)
        self.__init_attempt(rnd, attempt, pt, parties)
        self.client = c
        self.stage = "keys"
        self._time("keys", t0)
        return {"stage": "keys", "k": len(c.ids)}, key + extra

    def _open_with_peers(self, cfg, blobs, rnd, attempt):
        if self.layer.key_parts != 1:
            raise ProtocolError(f"SecEA peers stage of round {rnd} attempt {attempt} without a keys stage: the "
                                f"{self.layer.name} layer announces keys in it: refused")
        if blobs:
            raise ProtocolError(f"SecEA peers stage: field 'blobs' has {len(blobs)} parts, expected none when it "
                                "opens the attempt")
        t0 = time.process_time()
        c, pt, parties, _ = self._begin(cfg, rnd, attempt, "peers")
        psu = cfg.get("psu", True)
        if psu is True:         # the fields _peers reads, checked before the session changes
            cfg_int(cfg, "k", len(c.ids), 1 << 24)
        elif psu is not False:
            raise ProtocolError("SecEA peers stage: field 'psu' must be a bool")
        self._time("keys", t0)
        self.__init_attempt(rnd, attempt, pt, parties)
        self.client, self.stage = c, "keys"
        return self._peers(cfg, [])

    def __init_attempt(self, rnd, attempt, pt, parties):
        self.round, self.attempt, self.params_t, self.parties = rnd, attempt, pt, parties
        self.step, self.B = -1, 0
        self.own_share, self.own_queries, self.awaiting = b"", {}, {}
        self.sums = self.counts = None
        self.decoded, self.failed, self.unchecked = set(), set(), set()

    def _peers(self, cfg, blobs):
        c = self._client()
        N = c.params.N
        parts = self.layer.key_parts
        static = self.roster is not None         # seeds from the roster keys: no X25519 key is relayed
        nkeys = 0 if static else N
        if len(blobs) != nkeys + N * (parts - 1):
            raise ProtocolError(f"SecEA peers stage: field 'blobs' has {len(blobs)} keys, expected "
                                + (f"N = {N}" if parts == 1 else f"{parts} N = {parts * N}") if not static
                                else f"SecEA peers stage: field 'blobs' has {len(blobs)} parts, expected "
                                f"{N * (parts - 1)}")
        if not static:
            keys = [check_key(None, b, self.round, self.attempt, v, self.parties) for v, b in enumerate(blobs[:N])]
            if keys[c.index] != c.public_key:
                raise ProtocolError("SecEA peers stage: this client's own key was replaced", "server")
        material = []
        for v in range(N):
            try:
                material.append(self.layer.check_key_material(
                    self.roster, blobs[nkeys + v * (parts - 1):nkeys + (v + 1) * (parts - 1)], self.round,
                    self.attempt, v, self.parties, c.params))
            except ProtocolError:
                raise
            except (ValueError, TypeError) as exc:
                raise ProtocolError(f"SecEA peers stage: key material of client {v}: {exc}", v) from None
        try:
            self.layer.set_peer_material(c, material)
        except ValueError as exc:
            raise ProtocolError(f"SecEA peers stage: {exc} (this client's own key was replaced?)", "server") from None
        psu = cfg.get("psu", True)
        if not isinstance(psu, bool):
            raise ProtocolError("SecEA peers stage: field 'psu' must be a bool")
        k = cfg_int(cfg, "k", len(c.ids), 1 << 24) if psu else 0
        t0 = time.process_time()
        if not static:
            c.set_peer_keys(keys, session=f"round {self.round} attempt {self.attempt}".encode())
        out = [c.psu_upload(k, self.round).to_bytes()] if psu else []
        self.stage = "peers"
        self._time("union", t0)
        return {"stage": "peers", "k": len(c.ids)}, out

    def _parse(self, blobs):
        c = self._client()
        msgs = []
        for i, b in enumerate(blobs):
            try:
                m = self.layer.parse(b, c, to_client=True)
            except (ValueError, TypeError) as exc:
                raise ProtocolError(f"SecEA step: part {i} does not parse: {exc}") from None
            if m.round != self.round:
                raise ProtocolError(f"SecEA step: a {m.kind} of round {m.round} in round {self.round}: refused")
            if m.kind == "psu" or (m.kind != "psu_sum" and m.receiver != c.index):
                raise ProtocolError(f"SecEA step: a {m.kind} for client {m.receiver} delivered to client {c.index}")
            msgs.append(m)
        return msgs

    def _step(self, cfg, blobs, step):
        c = self._client()
        prm = c.params
        N, n = prm.N, c.index
        B = cfg_int(cfg, "B", 1, 1 << 24)
        if step > 0 and B != self.B:
            raise ProtocolError("SecEA step: field 'B' changed within the attempt")
        nblocks = -(-len(c.ids) // B)
        emit = _cfg_ints(cfg, "emit", 0, nblocks - 1)
        decode = _cfg_ints(cfg, "decode", 0, nblocks - 1)
        require = cfg.get("require-checked", False)
        if not isinstance(require, bool):
            raise ProtocolError("SecEA step: field 'require-checked' must be a bool")
        msgs = self._parse(blobs)
        kinds = {m.kind for m in msgs}
        union = cfg.get("union")
        if step == 0:
            sums = [m for m in msgs if m.kind == "psu_sum"]
            if len(sums) + (union is not None) != 1 or kinds - {"psu_sum"}:
                raise ProtocolError("SecEA step 0: needs exactly one union sum or kept union, and nothing else")
        elif "psu_sum" in kinds or union is not None:
            raise ProtocolError(f"SecEA step {step}: a union after step 0")
        if step != 1 and "share" in kinds:
            raise ProtocolError(f"SecEA step {step}: shares outside step 1")
        due = {b for b, s in self.awaiting.items() if s == step - 2}
        if not set(decode) <= due:
            raise ProtocolError(f"SecEA step {step}: field 'decode' names blocks {sorted(decode)}, this client "
                                f"awaits {sorted(due)} now")
        if set(emit) & (self.decoded | self.failed | set(self.awaiting) | set(self.own_queries)):
            raise ProtocolError(f"SecEA step {step}: field 'emit' names a block already emitted")
        refused: dict[int, str] = {}
        out: list[bytes] = []
        t = time.process_time
        if step == 0:
            t0 = t()
            if union is not None:
                if not isinstance(union, bytes) or len(union) % 8:
                    raise ProtocolError("SecEA step 0: field 'union' must be bytes of uint64 hashes")
                try:
                    c.set_union(np.frombuffer(union, dtype="<u8").astype(np.uint64))
                except ValueError as exc:
                    raise ProtocolError(f"SecEA step 0: field 'union': {exc}") from None
            else:
                try:
                    c.psu_finish(msgs[0])
                except (ValueError, ArithmeticError) as exc:
                    raise ProtocolError(f"SecEA step 0: the union sum does not reconstruct: {exc}") from None
            self._time("union", t0)
            t0 = t()
            for m in c.share(_local_rows(self.local), self.round):
                if m.receiver == n:
                    self.own_share = m.to_bytes()
                else:
                    out.append(m.to_bytes())
            self.sums, self.counts = self.layer.totals(len(c.ids), prm.d)
            self.B = B
            self._time("encode", t0)
        if step == 1:
            t0 = t()
            shares = {m.sender: m for m in msgs if m.kind == "share"}
            if len(shares) != sum(m.kind == "share" for m in msgs) or n in shares:
                raise ProtocolError("SecEA step 1: a repeated share, or a share under this client's index")
            missing = sorted(set(range(N)) - {n} - set(shares))
            for v in missing:
                refused[v] = "no share"
            for v, m in shares.items():
                if m.data.shape != (c.M, prm.sub):
                    refused[v] = f"a share of shape {m.data.shape}"
            if not refused:
                try:
                    c.receive_shares(list(shares.values()) + [Message.from_bytes(self.own_share, N=N)])
                except ValueError as exc:
                    # which share does not unpad (entries >= p): check them one at a time
                    for v, m in shares.items():
                        if not c.share_unpads(m):
                            refused[v] = f"malformed share: {exc}"
                    if not refused:
                        raise ProtocolError(f"SecEA step 1: shares refused: {exc}") from None
                self.own_share = b""
            self._time("encode", t0)
        responses: dict[int, dict[int, Message]] = {}
        queries = []
        for m in msgs:
            if self.layer.is_response(m):
                if m.block not in decode:
                    raise ProtocolError(f"SecEA step {step}: a response for block {m.block}, which this client "
                                        "does not await")
                if m.sender in responses.setdefault(m.block, {}):
                    raise ProtocolError(f"SecEA step {step}: two responses of client {m.sender} for block {m.block}")
                responses[m.block][m.sender] = m
            elif m.kind == "query":
                if m.sender == n:
                    raise ProtocolError(f"SecEA step {step}: a query under this client's own index")
                queries.append(m)
        if refused:
            # a share is missing or malformed: answer nothing (so a restart
            # without the offender stays possible) and name the offenders;
            # the server restarts the attempt or (after release) drops this
            # client too, so this session stops here
            self.step, self.stage = step, "refused"
            return {"stage": "step", "refused": sorted(refused), "reasons": [refused[v] for v in sorted(refused)],
                    "decoded": [], "failed": [], "unchecked": [], "done": False}, []
        # answers: the queries delivered now, then this client's own queries of the last step
        t0 = t()
        own = [Message.from_bytes(q, N=N) for _, q in sorted(self.own_queries.items())]
        self.own_queries = {}
        for q in queries + own:
            try:
                out.append(c.answer(q).to_bytes())
            except ValueError as exc:
                refused[q.sender] = f"malformed query: {exc}"
                continue
            self.answered_round = self.round
        self._time("responses", t0)
        # decoding of the awaited blocks
        t0 = t()
        blocks = c.blocks(B)
        sums, counts = self._totals()
        for b in decode:
            slots: list[Message | None] = [responses.get(b, {}).get(v) for v in range(N)]
            try:
                res = c.decode(slots, blocks[b], verify=require)
            except DecodingError as exc:
                self.failed.add(b)
                self.errors[b] = exc
                self._log(f"block {b} could not be decoded: {exc}")
                continue
            except ValueError as exc:
                # a malformed response: name its sender (the slot the message said)
                bad = [v for v, m in enumerate(slots) if m is not None
                       and not c.response_unpads(m, len(blocks[b]))]
                for v in bad or [n]:
                    refused[v] = f"malformed response: {exc}"
                slots = [None if v in bad else m for v, m in enumerate(slots)]
                try:
                    res = c.decode(slots, blocks[b], verify=require)
                except ValueError as exc2:
                    self.failed.add(b)
                    self.errors[b] = exc2
                    self._log(f"block {b} could not be decoded: {exc2}")
                    continue
            sums[blocks[b]] = res.sums
            counts[blocks[b]] = res.counts
            self.decoded.add(b)
            self.faulty.update((b, int(v)) for v in res.faulty)
            if not res.checked:
                self.unchecked.add(b)
        for b in due:
            self.awaiting.pop(b)          # decoded, failed, or given up by the server (its failed blocks)
        self._time("decode", t0)
        # the queries of the next blocks (offline: independent of the embeddings)
        t0 = t()
        for b in emit:
            for q in c.iter_queries(self.round, b, blocks[b]):
                if q.receiver == n:
                    self.own_queries[b] = q.to_bytes()
                else:
                    out.append(q.to_bytes())
            self.awaiting[b] = step
        self._time("offline", t0)
        self.step, self.stage = step, "step"
        done = len(self.decoded) == len(blocks)
        if done:
            self.rows = c.finish_rows(sums, counts)
            self.result = dict(zip(c.ids, self.rows))
        reply = {"stage": "step", "decoded": sorted(self.decoded), "failed": sorted(self.failed),
                 "unchecked": sorted(self.unchecked), "done": done}
        if refused:
            reply.update(refused=sorted(refused), reasons=[refused[v] for v in sorted(refused)])
        return reply, out

    def _totals(self) -> tuple[np.ndarray, np.ndarray]:
        if self.sums is None or self.counts is None:
            raise ProtocolError("SecEA step: no union yet")
        return self.sums, self.counts

    def _client(self) -> Client:
        if self.client is None:
            raise ProtocolError("SecEA stage before the keys stage: this client has no SecEA state")
        return self.client

    def _time(self, phase, t0):
        self.seconds[phase] = self.seconds.get(phase, 0.0) + time.process_time() - t0

    def _log(self, text):
        _LOG.warning("SecEA client %s: %s", self.identity.name if self.identity else "?", text)

    # ------------------------------------------------------------ state
    def export_state(self) -> bytes:
        """The session as versioned bytes (no pickle): stage position,
        round / attempt / answered round, parameters, party set, the
        :class:`Client`'s state (its X25519 private key, seeds, pad guard),
        its own share and queries, partial results.  Holds secrets: it never
        leaves this party's host.  :meth:`import_state` restores it."""
        w = Writer(_STATE_MAGIC).u64(self.round + 1).u64(self.attempt).blob(self.stage.encode())
        w.u64(self.step + 1).u64(self.answered_round + 1).u64(self.B)
        w.u64(self.params_t is not None)
        if self.params_t is not None:
            for v in self.params_t[:5]:
                w.u64(v)
            w.blob(struct.pack("<d", self.params_t[5]))
        w.blob("\n".join(self.parties).encode())
        w.blob(b"" if self.client is None else self.client.export_state()).blob(self.own_share)
        w.u64(len(self.own_queries))
        for b in sorted(self.own_queries):
            w.u64(b).blob(self.own_queries[b])
        w.u64(self.sums is not None)
        if self.sums is not None:
            sums, counts = self._totals()
            w.array(sums.view(np.uint64)).array(counts.view(np.uint64))
        w.array(np.array(sorted(self.awaiting.items()), dtype=np.uint64).reshape(-1, 2))
        for s in (self.decoded, self.failed, self.unchecked):
            w.array(np.array(sorted(s), dtype=np.uint64))
        if self.layer.stateful:
            w.blob(self.layer.name.encode()).blob(self.layer.export_state())
        return w.bytes()

    @classmethod
    def import_state(cls, data: bytes, roster: Roster | None, identity: Identity | None,
                     local: Mapping[Any, Any] | EntityRows, *, layer: Layer | None = None,
                     salts: SaltLedger | None = None) -> ClientSession:
        """The session saved by :meth:`export_state`, for the same entities
        (ValueError otherwise).  Restores the saved secrets; generates none.
        ``layer``: a fresh layer of the kind the session was made with (it
        receives the saved layer state, e.g. SecEA-PHE's Paillier key pair)."""
        s = cls(roster, identity, local, layer=layer, salts=salts)
        r = Reader(data, _STATE_MAGIC, "SecEA session state")
        s.round, s.attempt = r.u64() - 1, r.u64()
        s.stage = r.blob().decode()
        if s.stage not in ("", "keys", "peers", "step", "refused"):
            raise ValueError("SecEA session state: unknown stage")
        s.step, s.answered_round, s.B = r.u64() - 1, r.u64() - 1, r.u64()
        if r.flag():
            ints = [r.u64() for _ in range(5)]
            bound = r.blob(8)
            if len(bound) != 8:
                raise ValueError("SecEA session state: malformed parameters")
            # the same bounds as a stage's config (a huge N would exhaust memory building the points)
            s.params_t = _cfg_params(dict(zip(("N", "d", "T", "K", "precision"), ints),
                                          bound=struct.unpack("<d", bound)[0]))
        names = r.blob().decode()
        s.parties = names.split("\n") if names else []
        cstate = r.blob()
        s.own_share = r.blob()
        blocks = []
        for _ in range(r.u64()):
            blocks.append(r.u64())
            s.own_queries[blocks[-1]] = r.blob()
        check_increasing(blocks, "SecEA session state: own query blocks")
        if r.flag():
            s.sums = r.array(2).view(np.int64)
            _, zc = s.layer.totals(s.sums.shape[0], s.sums.shape[1])
            s.counts = r.array(zc.ndim).view(np.int64)
            if s.counts.shape != zc.shape:
                raise ValueError("SecEA session state: sums and counts do not match")
        aw = r.array(2)
        if aw.shape[1:] != (2,):
            raise ValueError("SecEA session state: malformed awaited blocks")
        s.awaiting = {int(b): int(t) for b, t in aw}
        sets = []
        for what in ("decoded", "failed", "unchecked"):
            a = r.array(1)
            check_increasing(a, f"SecEA session state: {what} blocks")
            sets.append({int(x) for x in a})
        if s.layer.stateful:
            name = r.blob(64)
            if name != s.layer.name.encode():
                raise ValueError(f"SecEA session state: saved by layer {name!r}, not {s.layer.name!r}")
            s.layer.import_state(r.blob())
        r.done()
        s.decoded, s.failed, s.unchecked = sets[0], sets[1], sets[2]
        if cstate:
            if s.params_t is None:
                raise ValueError("SecEA session state: a client without parameters")
            s.client = s.layer.import_client(_make_params(s.params_t), s.ids, cstate)
        return s


# ======================================================================= server
@dataclass
class ServerResult:
    """What the server session knows at the end of a round.  ``parties``:
    roster name -> client index in the final attempt; ``dropped``: name ->
    (attempt, stage, reason); ``failed_blocks``: (name, block) not decoded;
    ``unchecked``: (name, block) decoded without redundancy; ``done``:
    clients that decoded every block; ``union``: sorted entity hashes (pass
    to the next round)."""
    parties: dict = dc_field(default_factory=dict)
    dropped: dict = dc_field(default_factory=dict)
    attempts: int = 0
    failed_blocks: list = dc_field(default_factory=list)
    unchecked: list = dc_field(default_factory=list)
    done: list = dc_field(default_factory=list)
    union_size: int = 0
    union: np.ndarray | None = None


class _Restart(Exception):
    pass


Envelope = tuple[dict[str, Any], list[bytes]]
Outbox = dict[str, Envelope]


class ServerSession:
    """The SecEA server's stage machine over ``parties`` (roster names of
    the clients, in index order).  :meth:`start` returns the first outbox
    (name -> envelope); :meth:`receive` takes the replies and failures of
    that outbox and returns the next one, empty when the round is over
    (:attr:`result`).  Raises :class:`RoundFailed` when too few clients
    remain.  Arguments as :class:`~secea_fast.flower.secea.SecEAStageRunner`;
    ``max_entities``: the largest entity count a client may announce;
    ``require_checked``: clients refuse blocks decoded without redundancy;
    ``layer``: the round's :class:`~secea_fast.protocols.secea.layer.Layer`
    (default plain SecEA; SecEA-PHE: a ``PaillierLayer`` with the clients'
    settings, which every client checks against its own)."""

    def __init__(self, roster: Roster | None, parties: Sequence[str], *, d: int, T: int = 1, precision: int = 8,
                 K: int | None = None, bound: float = 100.0, block_size: int | None = None,
                 blocks_per_stage: int | None = None, stage_bytes: int | None = None, round_index: int = 1,
                 union: np.ndarray | None = None, max_entities: int = 1 << 18,
                 require_checked: bool = False, layer: Layer | None = None, k: int | None = None) -> None:
        self.roster = roster
        self.parties = [str(x) for x in parties]
        if len(set(self.parties)) != len(self.parties):
            raise ValueError("parties: a name appears twice")
        if roster is not None:
            for x in self.parties:
                if x not in roster or roster.role(x) != "client":
                    raise ValueError(f"parties: {x!r} is not a roster client")
        self.d, self.T, self.precision, self.K, self.bound = d, T, precision, K, bound
        SecEAParams(N=2 * T + 1, d=d, T=T, precision=precision, bound=bound)  # arguments checked now
        self.layer = Layer() if layer is None else layer
        if not isinstance(self.layer, Layer):
            raise TypeError(f"layer must be a secea Layer, got {type(layer).__name__}")
        if len(self.parties) >= 2 * T + 1:
            try:
                self.layer.check(SecEAParams(N=len(self.parties), d=d, T=T, precision=precision, bound=bound,
                                             K=K))
            except ValueError as exc:
                raise ValueError(f"layer: {exc}") from None
        for name, v in (("block_size", block_size), ("blocks_per_stage", blocks_per_stage),
                        ("stage_bytes", stage_bytes)):
            if v is not None and check_int(v, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        self.block_size, self.blocks_per_stage = block_size, blocks_per_stage
        self.stage_bytes = stage_bytes or tuning.FLOWER_STAGE_QUERY_BYTES
        self.round = check_int(round_index, "round_index")
        if not 0 <= self.round <= _MAX_ROUND:
            raise ValueError("round_index must be in [0, 2^63)")
        self.max_entities = check_int(max_entities, "max_entities")
        if k is not None and not 1 <= check_int(k, "k") <= self.max_entities:
            raise ValueError(f"k must be in [1, max_entities = {self.max_entities}], got {k}")
        self.k = None if k is None else int(k)
        self.require_checked = bool(require_checked)
        self.union = None if union is None else np.ascontiguousarray(union, dtype=np.uint64)
        self.result = ServerResult()
        self.stage_name = ""
        self._srv: Any = None               # the attempt's server party (the layer's)
        self._gen: Generator[Outbox, tuple[dict, dict], None] | None = None

    @property
    def party(self) -> Any:
        """The current attempt's server party (made by the layer: its
        ``noise`` and counters), None before the ``peers`` stage."""
        return self._srv

    def start(self) -> Outbox:
        """The first outbox (the ``keys`` stage of attempt 1)."""
        if self._gen is not None:
            raise ValueError("the session has already started")
        self._gen = self._run()
        return self._next(None)

    def receive(self, replies: Mapping[str, Envelope], failed: Mapping[str, str] | None = None) -> Outbox:
        """The replies (name -> (cfg, blobs)) and failures (name -> reason)
        of the last outbox; returns the next outbox ({} once done)."""
        if self._gen is None:
            raise ValueError("call start() first")
        return self._next((dict(replies), dict(failed or {})))

    @property
    def done(self) -> bool:
        return self._gen is not None and self.stage_name == "done"

    def _next(self, value) -> Outbox:
        assert self._gen is not None
        try:
            out = self._gen.send(value) if value is not None else next(self._gen)
        except StopIteration:
            self.stage_name = "done"
            return {}
        self.stage_name = next(iter(out.values()))[0]["stage"] if out else "done"
        return out

    # ------------------------------------------------------------ the round
    def _run(self):
        alive = list(self.parties)
        res = self.result
        self._union = self.union
        while True:
            res.attempts += 1
            try:
                yield from self._attempt(alive, res)
                break
            except _Restart as exc:
                lost = exc.args[0]
                alive = [x for x in alive if x not in lost]
                self._log(f"restarting the round without {sorted(lost)} (attempt {res.attempts}); "
                          f"{len(alive)} clients remain")
        res.union = self._union

    def _drop(self, res, attempt, stage, bad: Mapping[str, str]):
        for x, why in bad.items():
            res.dropped[x] = (attempt, stage, why)
            self._log(f"client {x} dropped in stage {stage} of attempt {attempt}: {why}")

    def _params(self, alive):
        N = len(alive)
        if N < 2 * self.T + 1:
            dropped = "; ".join(f"{x} ({s} of attempt {a}: {w})" for x, (a, s, w) in sorted(self.result.dropped.items()))
            raise RoundFailed(f"SecEA cannot run: {N} clients remain, T = {self.T} needs at least "
                              f"{2 * self.T + 1}; dropped: {dropped or 'none'}")
        k_max = (N + 1) // 2 - self.T
        K = None if self.K is None else min(int(self.K), k_max)
        return SecEAParams(N=N, d=self.d, T=self.T, precision=self.precision, bound=self.bound, K=K)

    def _exchange(self, outbox, res, attempt, stage):
        replies, failed = yield outbox
        bad = {x: str(failed[x]) for x in outbox if x in failed}
        for x in outbox:
            if x not in replies and x not in bad:
                bad[x] = "no reply"
        for x, (cfg, _) in replies.items():
            if x in outbox and x not in bad and (not isinstance(cfg, Mapping) or cfg.get("stage") != stage):
                bad[x] = f"a reply that is not of stage {stage}"
        return {x: replies[x] for x in outbox if x not in bad}, bad

    def _attempt(self, alive, res):
        attempt = res.attempts
        params = self._params(alive)
        N, rnd = params.N, self.round
        party = {x: i for i, x in enumerate(alive)}
        res.parties = dict(party)
        base = {"attempt": attempt, "round": rnd, "N": N, "d": params.d, "T": params.T,
                "K": params.K, "precision": params.precision, "bound": float(params.bound)}
        base.update(self.layer.stage_fields())
        opening = {"parties": list(alive)}          # the fields of the stage that opens the attempt
        static = self.roster is not None
        if static:
            opening["salt"] = random_seed(SALT_LEN)
        psu = self._union is None
        parts = self.layer.key_parts
        kn, keys, extra, material = {}, {}, {}, {}
        # 1. keys: only for what the roster does not give (an unauthenticated run's X25519
        # keys, a layer's keys) or when the union needs k and no public bound was given
        if not static or parts != 1 or (psu and self.k is None):
            out = {x: (dict(base, stage="keys", party=party[x], **opening), []) for x in alive}
            opening = {}
            replies, bad = yield from self._exchange(out, res, attempt, "keys")
            want = parts - (1 if static else 0)
            for x, (cfg, blobs) in replies.items():
                try:
                    kn[x] = cfg_int(cfg, "k", 1, self.max_entities)
                    if len(blobs) != want:
                        raise ProtocolError(f"{len(blobs)} parts, expected " + (
                            f"{want}" if static else "its signed key" + ("" if parts == 1 else f" and {parts - 1} more")))
                    if not static:
                        keys[x] = bytes(blobs[0])
                        check_key(None, keys[x], rnd, attempt, party[x], alive)
                    extra[x] = [bytes(b) for b in blobs[want - (parts - 1):]]       # after the X25519 key, if any
                    material[x] = self.layer.check_key_material(self.roster, extra[x], rnd, attempt, party[x],
                                                                alive, params)
                except (ValueError, TypeError) as exc:
                    bad[x] = str(exc)
            if bad:
                self._drop(res, attempt, "keys", bad)
                raise _Restart(set(bad))
        else:
            material = {x: None for x in alive}
            extra = {x: [] for x in alive}
        k = max(kn.values()) if kn else (self.k if psu else 0)
        server = self._srv = self.layer.server(params, [material[x] for x in alive])
        # 2. peers (and the union upload, unless a union was already revealed); it opens the
        # attempt when there was no keys stage (then with party, parties and salt)
        key_list = [keys[x] for x in alive if x in keys] + [b for x in alive for b in extra[x]]
        out = {x: (dict(base, stage="peers", k=k, psu=psu, **(dict(opening, party=party[x]) if opening else {})),
                   key_list) for x in alive}
        replies, bad = yield from self._exchange(out, res, attempt, "peers")
        ups = []
        for x, (cfg, blobs) in replies.items():
            if x not in kn:
                try:
                    kn[x] = cfg_int(cfg, "k", 1, k if psu else self.max_entities)
                except ValueError as exc:
                    bad[x] = str(exc)
                    continue
            if not psu:
                if blobs:
                    bad[x] = "a union upload when none was asked for"
                continue
            try:
                if len(blobs) != 1:
                    raise ValueError("no union upload" if not blobs else f"{len(blobs)} parts")
                m = Message.from_bytes(blobs[0], PSU_PRIME, N)
                if m.kind != "psu" or m.sender != party[x] or m.round != rnd:
                    raise ValueError(f"a {m.kind} of client {m.sender}, round {m.round}, not its union upload")
                if m.data.size != 2 * N * k:
                    raise ValueError(f"a union upload of {m.data.size} terms, expected 2Nk = {2 * N * k}")
                ups.append(m)
            except ValueError as exc:
                bad[x] = str(exc)
        if bad:
            self._drop(res, attempt, "peers", bad)
            raise _Restart(set(bad))
        first: dict[str, list[bytes]] = {}
        union_cfg: dict[str, Any] = {}
        if psu:
            try:
                total = server.psu_sum(ups)
            except (ValueError, ArithmeticError) as exc:
                raise RoundFailed(f"SecEA: the union uploads do not reconstruct a union ({exc}); "
                                  "a client deviated in a way the server cannot attribute") from None
            if server.union is None or len(server.union) < max(kn.values()):
                # e.g. a client whose pairwise seeds match no peer's (a key the roster does not hold)
                raise RoundFailed(f"SecEA: the union uploads do not reconstruct a union (it has "
                                  f"{0 if server.union is None else len(server.union)} entities, a client announced "
                                  f"{max(kn.values())}); a client deviated in a way the server cannot attribute")
            self._union = server.union
            first = {x: [total.to_bytes()] for x in alive}
        else:
            union_cfg = {"union": np.ascontiguousarray(self._union, dtype="<u8").tobytes()}
        assert self._union is not None
        M = len(self._union)
        res.union_size = M
        per_row = N * (N - 1) * M * 8
        B = self.block_size or min(default_block_size(M), max(1, self.stage_bytes // per_row))
        nblocks = {x: -(-kn[x] // B) for x in alive}
        bps = self.blocks_per_stage or max(1, self.stage_bytes // (per_row * B))
        yield from self._steps(alive, party, params, server, base, B, bps, nblocks, kn, first, union_cfg,
                               res, attempt, M)

    def _check_step(self, x, blobs, step, party, node_of, live, params, M, B, kn, emitted_now, expect_resp,
                    excused):
        """The messages of client x's step reply, checked against the stage;
        ValueError naming what does not fit."""
        N, n = params.N, party[x]
        msgs = []
        shares, queries, resps = set(), set(), set()
        sizes = block_sizes(kn[x], B)
        for blob in blobs:
            m = self.layer.parse(blob, self._srv, to_client=False)
            if m.sender != n:
                raise ValueError(f"a {m.kind} under client {m.sender}'s index (client {x} is {n})")
            if m.round != self.round:
                raise ValueError(f"a {m.kind} of round {m.round}")
            if m.receiver == n and not self.layer.is_response(m):
                raise ValueError(f"a {m.kind} to itself")
            if m.kind == "share":
                if step != 0 or m.data.shape != (M, params.sub) or m.receiver in shares:
                    raise ValueError(f"a share that does not fit step {step} (shape {m.data.shape})")
                shares.add(m.receiver)
            elif m.kind == "query":
                if m.block not in emitted_now or m.data.shape != (sizes[m.block], M) \
                        or (m.block, m.receiver) in queries:
                    raise ValueError(f"a query for block {m.block} that does not fit step {step}")
                queries.add((m.block, m.receiver))
            elif self.layer.is_response(m):
                if (m.receiver, m.block) not in expect_resp or (m.receiver, m.block) in resps:
                    raise ValueError(f"a response to client {m.receiver} block {m.block} that was not asked for")
                rows = block_sizes(kn[node_of[m.receiver]], B)[m.block]
                if not self.layer.response_fits(m, rows, params):
                    raise ValueError(f"a response that does not fit block {m.block} of client {m.receiver} "
                                     f"({rows} rows)")
                resps.add((m.receiver, m.block))
            else:
                raise ValueError(f"a {m.kind} message in a step")
            msgs.append(m)
        if step == 0 and shares != set(range(N)) - {n}:
            raise ValueError("not one share for every other client")
        others = {party[y] for y in live} - {n}
        want_q = {(b, v) for b in emitted_now for v in range(N) if v != n}
        if {(b, v) for b, v in queries if v in others} != {(b, v) for b, v in want_q if v in others}:
            raise ValueError("the queries of its emitted blocks are incomplete")
        missing = {(q, b) for q, b in expect_resp if q in {party[y] for y in live} and q not in excused} - resps
        if missing:
            raise ValueError(f"no response to {sorted(missing)}")
        return msgs

    def _steps(self, alive, party, params, server, base, B, bps, nblocks, kn, first, union_cfg, res, attempt, M):
        N, k = params.N, params.response_len
        node_of = {i: x for x, i in party.items()}
        live = set(alive)
        nxt = {x: 0 for x in alive}
        shares_to: dict[str, list[bytes]] = {x: [] for x in alive}
        queries_to: dict[str, list[bytes]] = {x: [] for x in alive}
        responses_to: dict[str, list[bytes]] = {x: [] for x in alive}
        expect_resp = {x: set() for x in alive}      # (querier index, block) x must answer next step
        answered: dict[tuple[str, int], set[int]] = {}
        emitted: dict[str, list[int]] = {x: [] for x in alive}
        to_decode: dict[str, list[int]] = {x: [] for x in alive}
        released = False            # a client has answered a query: no restart from here on
        step = 0
        while True:
            outbox = {}
            for x in sorted(live):
                cfg = dict(base, stage="step", step=step, B=B)
                if self.require_checked:
                    cfg["require-checked"] = True
                blobs = list(first.get(x, [])) if step == 0 else []
                if step == 0:
                    cfg.update(union_cfg)
                blobs += shares_to[x] + queries_to[x] + responses_to[x]
                emit = list(range(nxt[x], min(nblocks[x], nxt[x] + bps)))
                nxt[x] += len(emit)
                cfg.update(emit=emit, decode=to_decode[x])
                outbox[x] = (cfg, blobs)
            if all(not c["emit"] and not c["decode"] and not b and step > 0 for c, b in outbox.values()):
                break
            replies, bad = yield from self._exchange(outbox, res, attempt, "step")
            checked: dict[str, list[Message]] = {}
            victims = set()             # clients that refused a share: they answered nothing
            for x, (cfg, blobs) in replies.items():
                emitted_now = [int(b) for b in outbox[x][0]["emit"]]
                try:
                    refused = [cfg_int({"refused": v}, "refused", 0, N - 1) for v in cfg.get("refused", []) or []]
                    for v in refused:
                        y = node_of[v]
                        if y in live and y != x:
                            bad.setdefault(y, f"refused by client {x}: {(cfg.get('reasons') or ['?'])[0]}")
                    if step == 1 and refused and not blobs:
                        victims.add(x)
                        continue
                    checked[x] = self._check_step(x, blobs, step, party, node_of, live, params, M, B, kn,
                                                  emitted_now, expect_resp[x], set(refused))
                except (ValueError, TypeError) as exc:
                    bad[x] = str(exc)
            if any(self.layer.is_response(m) for y, ms in checked.items() if y not in bad for m in ms):
                released = True
            if released:
                # a client without its shares cannot answer: after release it is lost too
                for x in victims - set(bad):
                    bad[x] = "its shares were refused (a deviating peer) after responses were released"
            if bad:
                self._drop(res, attempt, "step", {x: f"step {step}: {why}" for x, why in bad.items()})
                if not released:
                    raise _Restart(set(bad))
            live -= set(bad)
            for x in bad:
                res.failed_blocks.extend((x, b) for b in range(nblocks[x]) if (x, b) not in res.failed_blocks)
            shares_to = {x: [] for x in live}
            queries_to = {x: [] for x in live}
            responses_to = {x: [] for x in live}
            expect_resp = {x: set() for x in live}
            noised: dict[tuple[str, int], list[bytes]] = {}
            for x in sorted(live):
                cfg = replies[x][0]
                if cfg.get("done"):
                    res.done.append(x)
                for key, out in (("failed", res.failed_blocks), ("unchecked", res.unchecked)):
                    for b in cfg.get(key, []) or []:
                        if (x, int(b)) not in out:
                            out.append((x, int(b)))
                for m in checked[x]:
                    dst = node_of[m.receiver]
                    if dst not in live:
                        continue
                    if m.kind == "share":
                        shares_to[dst].append(m.to_bytes())
                    elif m.kind == "query":
                        queries_to[dst].append(m.to_bytes())
                        expect_resp[dst].add((party[x], m.block))
                    else:
                        noised.setdefault((dst, m.block), []).append(server.noise(m).to_bytes())
                        answered.setdefault((dst, m.block), set()).add(party[x])
                for b in outbox[x][0]["emit"]:
                    expect_resp[x].add((party[x], int(b)))      # its own query, answered next step
            to_decode = {x: [] for x in live}
            for x in live:
                for b in emitted[x]:
                    got = len(answered.get((x, b), ()))
                    if got >= k:
                        to_decode[x].append(b)
                    else:
                        self._log(f"client {x} block {b} has {got} responses, fewer than k = {k}: not decodable")
                        if (x, b) not in res.failed_blocks:
                            res.failed_blocks.append((x, b))
                emitted[x] = [int(b) for b in outbox[x][0]["emit"]]
                for b in to_decode[x]:
                    responses_to[x] += noised.get((x, b), [])
            step += 1

    def _log(self, text):
        _LOG.warning("SecEA server: %s", text)
