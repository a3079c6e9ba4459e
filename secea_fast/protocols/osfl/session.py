"""Sans-I/O sessions of objective-hiding one-shot FL (Egger, Urbanke, Bitar
(2025), One-shot federated learning with objective hiding) and the one
loopback driver that runs the paper's scheme (``run_round``) and the
competing approaches (``approach2``, ``star_product``, ``gxstpir``).

A session never touches a transport: ``start()`` returns the messages a
party sends first, ``receive(data)`` takes one message (bytes, or a
:class:`Frame` handed over in-process) and returns the messages to send in
reply.  Every rule a deployment relies on lives here, once:

* the stage table: ``share`` client -> client, ``query`` federator ->
  client, ``answer`` client -> federator; anything else is refused;
* round binding: a frame names its round; one from another round is refused;
* sender binding: the frame's sender is the sender the message names (a
  share's sender, an answer's client), and with a roster the frame is
  signed by that party (``Roster.sign`` over the protocol, round, stage,
  sender, receiver and the SHA-256 of the body), so a relabelled message
  does not verify;
* replay: a share is taken once per (sender, objective), an answer once per
  client; a query once per round (answer-once: a curious federator that
  asks a second time, for another objective, gets a refusal, not a second
  linear combination of the client's stored shares);
* order: a query before all of a client's shares arrived is refused (a
  client answers only from complete shares);
* the minimum set: the federator reconstructs only from an answer of every
  responder the scheme's decoder needs; with fewer, :meth:`FederatorSession.result`
  refuses (never a wrong result);
* state export/import carries the secrets (labels, aggregated shares, the
  symmetric-privacy seed) as they are: nothing is regenerated on import.

Refusals raise :class:`ProtocolError` (a ValueError) naming what was wrong;
a transport drops that sender's message, never the round.

A frame crosses the in-process loopback as an object (the body already
parsed; ``wire=False``, as the package's direct path always did) or as
bytes (``wire=True``, a roster, or a :class:`FaultyLoopback`); the checks
are the same.  The Table I rates count the protocol's messages
(``ShareMessage``, ``Query``, ``Answer``) as before; the frame adds a fixed
header of :data:`FRAME_OVERHEAD` bytes plus the round id and, with a roster,
a 64-byte signature per message.

Cost: the unsigned driver adds a few percent to a round with the parties
called directly; signing is per message (Ed25519 through ``cryptography``)
and optional, and costs several times the unsigned round
(``bench/test_osfl.py``; figures in docs/PERFORMANCE.md, "Cost of the
deployment rules").

Length (about 650 lines): the frame, both sessions with their state export,
and the driver with its fault wrapper are kept together because every rule
above is checked in one of them and they share the stage table.

The parties' arithmetic stays in ``parties`` (the scheme) and in the scheme
classes of ``approaches``: a session holds one *engine* with ``share``,
``receive``, ``ready``, ``answer`` (client) or ``queries``, ``responders``,
``reconstruct`` (federator).
"""
from __future__ import annotations

import hashlib
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field as dc_field
from typing import Any, Optional, Union

import numpy as np

from ..._secrets import SecretHolder
from ..common.roster import AuthenticationError, Identity, Roster
from ..common.wire import Reader, Writer
from .messages import Answer, Query, ShareMessage
from .params import OSFLParams
from ..common.errors import ProtocolError

__all__ = ["ProtocolError", "Frame", "ClientSession", "FederatorSession", "Loopback", "FaultyLoopback",
           "DriveReport", "drive", "FEDERATOR", "SHARE", "QUERY", "ANSWER", "STAGES", "FRAME_OVERHEAD",
           "party_name"]

#: the federator's party id in frames (client ids are 0 .. n-1)
FEDERATOR = (1 << 64) - 1
SHARE, QUERY, ANSWER = 1, 2, 3
#: stage -> (name, body type, sender role, receiver role)
STAGES: dict[int, tuple[str, Any, str, str]] = {
    SHARE: ("share", ShareMessage, "client", "client"),
    QUERY: ("query", Query, "federator", "client"),
    ANSWER: ("answer", Answer, "client", "federator"),
}
# stage -> (name, body type, sent by the federator, sent to the federator)
_SPEC = {k: (v[0], v[1], v[2] == "federator", v[3] == "federator") for k, v in STAGES.items()}
_MAGIC = b"OSFR"
_VERSION = 1
_HEAD = struct.Struct("<4sBB2sQQQ")            # magic, version, stage, reserved, sender, receiver, round length
#: bytes a frame adds to its body, besides the round id and the signature
FRAME_OVERHEAD = _HEAD.size + 16
_PURPOSE = "osfl/frame"


def party_name(party: int) -> str:
    """The roster name of a party id: ``client-<i>`` or ``federator``."""
    return "federator" if party == FEDERATOR else f"client-{party}"


class Frame:
    """One message between two parties: ``stage`` (SHARE, QUERY, ANSWER),
    ``round_id``, ``sender`` and ``receiver`` (client index or FEDERATOR),
    ``body`` (the protocol message) and ``signature`` (b"" without a
    roster).  ``to_bytes``/``from_bytes``: the versioned layout
    ``OSFR | version | stage | sender | receiver | round | body | signature``."""

    __slots__ = ("stage", "round_id", "sender", "receiver", "body", "signature", "_raw")

    def __init__(self, stage: int, round_id: bytes, sender: int, receiver: int, body: Any,
                 signature: bytes = b"", raw: bytes | None = None) -> None:
        self.stage, self.round_id, self.sender, self.receiver = stage, round_id, sender, receiver
        self.body, self.signature, self._raw = body, signature, raw

    def body_bytes(self) -> bytes:
        """The body's serialized bytes (computed once)."""
        if self._raw is None:
            self._raw = self.body.to_bytes()
        return self._raw

    def to_bytes(self) -> bytes:
        body = self.body_bytes()
        return b"".join([_HEAD.pack(_MAGIC, _VERSION, self.stage, b"\0\0", self.sender, self.receiver,
                                    len(self.round_id)),
                         self.round_id, struct.pack("<Q", len(body)), body,
                         struct.pack("<Q", len(self.signature)), self.signature])

    @staticmethod
    def peek(data: bytes) -> tuple[int, int, int]:
        """(stage, sender, receiver) of a serialized frame, from its header only
        (routing); ProtocolError if the header is not a frame's."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a frame is bytes, got {type(data).__name__}")
        if len(data) < _HEAD.size:
            raise ProtocolError(f"frame: truncated header ({len(data)} bytes)")
        magic, version, stage, reserved, sender, receiver, _ = _HEAD.unpack_from(data)
        if magic != _MAGIC or version != _VERSION:
            raise ProtocolError(f"frame: bad magic {magic!r} or version {version}")
        if reserved != b"\0\0":
            raise ProtocolError(f"frame: reserved header bytes {reserved.hex()} are not zero")
        return stage, sender, receiver

    @classmethod
    def from_bytes(cls, data: bytes, params: OSFLParams | None = None) -> Frame:
        """Parse a frame and its body (the body's own parser checks it, with
        ``params`` when given)."""
        stage, sender, receiver = cls.peek(data)
        if stage not in STAGES:
            raise ProtocolError(f"frame: unknown stage {stage}")
        mv = memoryview(data)
        rl = _HEAD.unpack_from(mv)[6]
        off = _HEAD.size
        if rl > 64 or off + rl > len(mv):
            raise ProtocolError(f"frame: round id length {rl} is implausible or truncated")
        fields = [bytes(mv[off:off + rl])]
        off += rl
        for what in ("body", "signature"):
            if off + 8 > len(mv):
                raise ProtocolError(f"frame: truncated before its {what}")
            k = struct.unpack_from("<Q", mv, off)[0]
            off += 8
            if off + k > len(mv) or (what == "signature" and k > 64):
                raise ProtocolError(f"frame: {what} length {k} is implausible or truncated")
            fields.append(bytes(mv[off:off + k]))
            off += k
        if off != len(mv):
            raise ProtocolError(f"frame: {len(mv) - off} trailing bytes")
        round_id, raw, sig = fields
        try:
            body = STAGES[stage][1].from_bytes(raw, params)
        except ValueError as e:
            raise ProtocolError(f"frame ({STAGES[stage][0]} from {party_name(sender)}): {e}") from None
        return cls(stage, round_id, sender, receiver, body, sig, raw)


class _Session(SecretHolder):
    party: int
    _wire_params: OSFLParams | None

    def __init__(self, round_id: bytes, roster: Roster | None, identity: Identity | None) -> None:
        if isinstance(round_id, str):
            round_id = round_id.encode()
        if not isinstance(round_id, (bytes, bytearray)) or not 1 <= len(round_id) <= 64:
            raise ValueError("round_id must be 1 to 64 bytes naming the round (fresh per round)")
        if (roster is None) != (identity is None):
            raise ValueError("roster and identity go together: give both (authenticated) or neither")
        if roster is not None:
            if not isinstance(roster, Roster):
                raise TypeError(f"roster must be a Roster, got {type(roster).__name__}")
            if not isinstance(identity, Identity):
                raise TypeError(f"identity must be an Identity, got {type(identity).__name__}")
            if identity.name != party_name(self.party):
                raise ValueError(f"identity {identity.name!r} is not this party's ({party_name(self.party)!r})")
        self.round_id = bytes(round_id)
        self.roster, self.identity = roster, identity
        #: per stage name: [bytes, field elements] of the protocol messages sent
        self.sent: dict[str, list[int]] = {}

    @property
    def authenticated(self) -> bool:
        return self.roster is not None

    def _fields(self, f: Frame) -> tuple:
        return (b"osfl", f.round_id, f.stage, party_name(f.sender), party_name(f.receiver),
                hashlib.sha256(f.body_bytes()).digest())

    def _emit(self, stage: int, bodies: Sequence[tuple[int, Any]]) -> list[Frame | bytes]:
        """Frames of ``stage`` carrying (receiver, body) pairs (signed with a
        roster); counts their bytes and field elements in ``sent``."""
        st = self.sent.setdefault(STAGES[stage][0], [0, 0])
        rid, me = self.round_id, self.party
        frames = [Frame(stage, rid, me, r, b) for r, b in bodies]
        st[0] += sum(b.nbytes for _, b in bodies)
        st[1] += sum(b.elements for _, b in bodies)
        if self.roster is not None and self.identity is not None:
            for f in frames:
                f.signature = self.roster.sign(self.identity, _PURPOSE, *self._fields(f))
            return [f.to_bytes() for f in frames]
        out: list[Frame | bytes] = list(frames)
        return out

    def parse(self, data: bytes | Frame) -> Frame:
        """``data`` as a Frame (bytes parsed with this party's parameters)."""
        if isinstance(data, Frame):
            return data
        return Frame.from_bytes(data, self._wire_params)

    def _check(self, f: Frame) -> None:
        """The checks every frame passes before it touches the state."""
        spec = _SPEC.get(f.stage)
        if spec is None:
            raise ProtocolError(f"unknown stage {f.stage}")
        name, kind, from_fed, to_fed = spec
        if f.round_id != self.round_id:
            raise ProtocolError(f"{name} from round {f.round_id.hex()}: this session is round {self.round_id.hex()}")
        if f.receiver != self.party:
            raise ProtocolError(f"{name} addressed to {party_name(f.receiver)} reached {party_name(self.party)}")
        if (f.sender == FEDERATOR) != from_fed or (self.party == FEDERATOR) != to_fed:
            raise ProtocolError(f"stage {name} goes {STAGES[f.stage][2]} -> {STAGES[f.stage][3]}, not "
                                f"{party_name(f.sender)} -> {party_name(self.party)}")
        if type(f.body) is not kind:
            raise ProtocolError(f"stage {name} carries a {kind.__name__}, got {type(f.body).__name__}")
        if self.roster is not None:
            try:
                self.roster.verify(party_name(f.sender), bytes(f.signature), _PURPOSE, *self._fields(f))
            except ValueError as e:            # AuthenticationError, or a sender not in the roster
                raise ProtocolError(f"{name} from {party_name(f.sender)}: {e}") from None


# ----------------------------------------------------------------- client
class ClientSession(_Session):
    """Client ``engine.index`` of one round: ``start()`` shares (eq. 1),
    ``receive`` aggregates shares and answers the one query of the round.

    ``engine``: a ``parties.Client`` (the scheme) or an approach's client
    (``Approach2.client`` etc.); ``round_id``: 1-64 bytes naming the round;
    ``roster``/``identity``: optional, both or neither (then frames are
    signed and checked)."""

    def __init__(self, engine: Any, *, round_id: bytes, roster: Roster | None = None,
                 identity: Identity | None = None) -> None:
        self.engine = engine
        self.party = int(engine.index)
        self._wire_params = getattr(engine, "wire_params", None)
        super().__init__(round_id, roster, identity)
        self._shares: set[tuple[int, int]] = set()     # (sender, objective) taken
        self._shared = False
        self._answered = False

    @property
    def index(self) -> int:
        return self.party

    @property
    def answered(self) -> bool:
        """The client has answered this round's query."""
        return self._answered

    def start(self, rng: Any = None) -> list[Frame | bytes]:
        """The share messages of eq. 1 (once per round); ``rng``: the engine's
        share randomness (None: its own, fresh)."""
        if self._shared:
            raise ProtocolError(f"client {self.party} has already shared in round {self.round_id.hex()}")
        self._shared = True
        return self._emit(SHARE, [(m.receiver, m) for m in self.engine.share(rng)])

    def receive(self, data: bytes | Frame) -> list[Frame | bytes]:
        """One message: a share (returns []) or the round's query (returns the
        answer).  ProtocolError on anything the stage table, round, sender,
        replay or order rules refuse."""
        f = data if type(data) is Frame else self.parse(data)
        self._check(f)
        body = f.body
        if f.stage == SHARE:
            sender = f.sender
            if body.sender != sender or body.receiver != self.party:
                raise ProtocolError(f"share relabelled: the frame says {party_name(sender)} -> "
                                    f"{party_name(f.receiver)}, the share {body.sender} -> {body.receiver}")
            key = (sender, body.objective)
            taken = self._shares
            if key in taken:
                raise ProtocolError(f"replayed share: client {self.party} already has client {sender}'s "
                                    f"share of objective {body.objective}")
            if self._answered:
                raise ProtocolError(f"share after the answer of client {self.party}")
            try:
                self.engine.receive(body)
            except (ValueError, TypeError) as e:
                raise ProtocolError(f"share from client {sender}: {e}") from None
            taken.add(key)
            return []
        # QUERY
        if self._answered:
            raise ProtocolError(f"second query to client {self.party} in round {self.round_id.hex()}: a client "
                                f"answers one query per round")
        if body.client != self.party:
            raise ProtocolError(f"query relabelled: addressed to client {self.party}, names client {body.client}")
        if not self.engine.ready:
            raise ProtocolError(f"query to client {self.party} before all its shares arrived (reordered)")
        self._answered = True                         # burnt even if the answer fails: never a second try
        try:
            ans = self.engine.answer(body)
        except (ValueError, TypeError) as e:
            raise ProtocolError(f"query to client {self.party}: {e}") from None
        return self._emit(ANSWER, [(FEDERATOR, ans)])

    # ------------------------------------------------------------ state
    MAGIC = b"OSCS"

    def export_state(self) -> bytes:
        """The session and its engine as bytes (the client's own state, its
        secrets included: it goes only to this client's own storage)."""
        sh = np.array(sorted(self._shares), dtype=np.uint64).reshape(-1, 2)
        return (Writer(self.MAGIC).blob(self.round_id).u64(self._shared).u64(self._answered)
                .array(sh).blob(self.engine.export_state()).bytes())

    @classmethod
    def import_state(cls, data: bytes, params: Any, *, roster: Roster | None = None,
                     identity: Identity | None = None) -> ClientSession:
        """The session ``export_state`` wrote, with its engine rebuilt from the
        saved labels, shares and seed (``params``: the ``OSFLParams`` or the
        approach's scheme object); nothing is drawn afresh."""
        r = Reader(data, cls.MAGIC, "ClientSession state")
        round_id = r.blob(64)
        shared, answered = r.flag(), r.flag()
        sh = r.array(2)
        blob = r.blob()
        r.done()
        if sh.shape[1:] != (2,):
            raise ValueError(f"ClientSession state: share pairs of shape {sh.shape}, expected (k, 2)")
        pairs = [(int(a), int(b)) for a, b in sh]
        if any(x >= y for x, y in zip(pairs, pairs[1:])):
            raise ValueError("ClientSession state: share pairs must be strictly increasing")
        if isinstance(params, OSFLParams):
            from .parties import Client
            engine = Client.import_state(blob, params)
        elif hasattr(params, "import_client"):
            engine = params.import_client(blob)
        else:
            raise TypeError(f"params must be OSFLParams or an approach's scheme, got {type(params).__name__}")
        s = cls(engine, round_id=round_id, roster=roster, identity=identity)
        s._shared, s._answered = shared, answered
        s._shares = set(pairs)
        return s


# ----------------------------------------------------------------- federator
class FederatorSession(_Session):
    """The federator of one round: ``start()`` sends the queries (eq. 2) to
    the engine's responders, ``receive`` takes one answer per responder,
    ``result()`` reconstructs (Sec. V-d) from all of them or refuses.

    ``engine``: a ``parties.Federator`` or an approach's federator."""

    def __init__(self, engine: Any, *, round_id: bytes, roster: Roster | None = None,
                 identity: Identity | None = None) -> None:
        self.engine = engine
        self.party = FEDERATOR
        self._wire_params = getattr(engine, "wire_params", None)
        super().__init__(round_id, roster, identity)
        self.responders = tuple(int(i) for i in engine.responders)
        self._need = frozenset(self.responders)
        self._queried = False
        self.answers: dict[int, Answer] = {}

    def start(self, rng: Any = None) -> list[Frame | bytes]:
        """The queries, one per responder (once per round)."""
        if self._queried:
            raise ProtocolError(f"the federator has already queried in round {self.round_id.hex()}")
        self._queried = True
        qs = self.engine.queries(rng)
        return self._emit(QUERY, [(i, qs[i]) for i in self.responders])

    def receive(self, data: bytes | Frame) -> list[Frame | bytes]:
        """One answer (returns [])."""
        f = data if type(data) is Frame else self.parse(data)
        self._check(f)
        i = f.sender
        if f.body.client != i:
            raise ProtocolError(f"answer relabelled: sent by client {i}, names client {f.body.client}")
        if not self._queried:
            raise ProtocolError(f"answer from client {i} before any query")
        if i not in self._need:
            raise ProtocolError(f"answer from client {i}, which was not queried")
        if i in self.answers:
            raise ProtocolError(f"replayed answer: client {i} has already answered in round {self.round_id.hex()}")
        self.answers[i] = f.body
        return []

    @property
    def missing(self) -> list[int]:
        """Responders whose answer has not arrived."""
        return sorted(self._need - set(self.answers))

    def result(self) -> np.ndarray:
        """The (s, c) label sums of the hidden objective, from an answer of
        every responder; ProtocolError naming the missing clients otherwise
        (the decoder needs all of them: fewer gives no result, never a wrong one)."""
        miss = self.missing
        if miss:
            raise ProtocolError(f"reconstruction needs the answers of all {len(self._need)} queried clients; "
                                f"missing {miss}: refused")
        try:
            return self.engine.reconstruct({i: self.answers[i] for i in self.responders})
        except (ValueError, TypeError) as e:
            raise ProtocolError(f"reconstruction: {e}") from None

    MAGIC = b"OSFS"

    def export_state(self) -> bytes:
        """The federator's round state (its hidden objective and the answers so far)."""
        ids = sorted(self.answers)
        w = (Writer(self.MAGIC).blob(self.round_id).u64(self._queried).blob(self.engine.export_state())
             .u64(len(ids)))
        for i in ids:
            w.u64(i).blob(self.answers[i].to_bytes())
        return w.bytes()

    @classmethod
    def import_state(cls, data: bytes, params: Any, *, roster: Roster | None = None,
                     identity: Identity | None = None) -> FederatorSession:
        """The session ``export_state`` wrote (``params`` as for ClientSession)."""
        r = Reader(data, cls.MAGIC, "FederatorSession state")
        round_id = r.blob(64)
        queried = r.flag()
        blob = r.blob()
        if isinstance(params, OSFLParams):
            from .parties import Federator
            engine = Federator.import_state(blob, params)
        elif hasattr(params, "import_federator"):
            engine = params.import_federator(blob)
        else:
            raise TypeError(f"params must be OSFLParams or an approach's scheme, got {type(params).__name__}")
        s = cls(engine, round_id=round_id, roster=roster, identity=identity)
        s._queried = queried
        last = -1
        for _ in range(r.u64()):
            i = r.u64()
            if i <= last:
                raise ValueError("FederatorSession state: answers must be in increasing client order")
            last = i
            a = Answer.from_bytes(r.blob(), s._wire_params)
            if a.client != i or i not in s._need:
                raise ValueError(f"FederatorSession state: answer of client {a.client} stored under {i}")
            s.answers[i] = a
        r.done()
        return s


# ----------------------------------------------------------------- the loopback driver
Message = Union[Frame, bytes]


class Loopback:
    """In-memory transport: hands each message to its receiver's session, in
    order (FIFO), replies included.  ``wire``: serialize every frame to bytes
    (always when a session signs).  ``on_deliver(frame)``: called with every
    frame a session accepted (transcripts).  A refusal propagates unless
    ``keep_going`` (then it is recorded in ``refused`` as (stage, sender,
    receiver, reason) and the sender's message dropped)."""

    def __init__(self, sessions: Mapping[int, Any], *, wire: bool = False,
                 on_deliver: Callable[[Frame], None] | None = None, keep_going: bool = False) -> None:
        self.sessions, self.wire, self.on_deliver, self.keep_going = sessions, wire, on_deliver, keep_going
        self.refused: list[tuple[int, int, int, str]] = []

    def route(self, msg: Message) -> tuple[int, int, int]:
        """(stage, sender, receiver) of a message."""
        if isinstance(msg, Frame):
            return msg.stage, msg.sender, msg.receiver
        return Frame.peek(msg)

    def transmit(self, msg: Message) -> list[Message]:
        """What the network makes of one sent message (here: itself; a fault
        wrapper overrides this)."""
        if self.wire and isinstance(msg, Frame):
            return [msg.to_bytes()]
        return [msg]

    def flush(self) -> list[Message]:
        """Messages held back by the transport, released at the end of a batch."""
        return []

    def _handle(self, msg: Message) -> list[Message]:
        try:
            if isinstance(msg, Frame):
                f = msg
                sess = self.sessions.get(f.receiver)
                if sess is None:
                    raise ProtocolError(f"no party {party_name(f.receiver)}")
            else:
                receiver = Frame.peek(msg)[2]
                sess = self.sessions.get(receiver)
                if sess is None:
                    raise ProtocolError(f"no party {party_name(receiver)}")
                f = sess.parse(msg)
            out = sess.receive(f)
        except ProtocolError as e:
            if not self.keep_going:
                raise
            try:
                stage, sender, receiver = self.route(msg)
            except ProtocolError:
                stage = sender = receiver = -1
            self.refused.append((stage, sender, receiver, str(e)))
            return []
        if self.on_deliver is not None:
            self.on_deliver(f)
        return out

    def _run_frames(self, q: deque) -> None:
        # the in-process path of run_round: frames only, refusals propagate
        sessions, pop = self.sessions, q.popleft
        while q:
            f = pop()
            sess = sessions.get(f.receiver)
            if sess is None:
                raise ProtocolError(f"no party {party_name(f.receiver)}")
            out = sess.receive(f)
            if out:
                q.extend(out)

    def deliver(self, messages: Iterable[Message]) -> None:
        """Carry ``messages`` and every reply they cause until none is left."""
        plain = not self.wire and type(self).transmit is Loopback.transmit     # frames pass as they are
        q: deque = deque()
        if plain:
            q.extend(messages)
            if not self.keep_going and self.on_deliver is None and all(type(m) is Frame for m in q):
                self._run_frames(q)
                return
        else:
            for m in messages:
                q.extend(self.transmit(m))
        handle, pop = self._handle, q.popleft
        while True:
            while q:
                out = handle(pop())
                if out:
                    if plain:
                        q.extend(out)
                    else:
                        for r in out:
                            q.extend(self.transmit(r))
            held = self.flush()
            if not held:
                return
            q.extend(held)


class FaultyLoopback(Loopback):
    """The loopback with a network attacker (tests): every frame crosses as
    bytes, and each predicate ``(stage, sender, receiver) -> bool`` picks the
    messages it applies to: ``drop`` (lost), ``corrupt`` (one byte of the
    body flipped), ``replay`` (delivered twice), ``delay`` (held back and
    delivered after the rest of the batch: a reordering).  Refusals are
    recorded in ``refused`` (the round goes on)."""

    def __init__(self, sessions: Mapping[int, Any], *, drop: Callable | None = None, corrupt: Callable | None = None,
                 replay: Callable | None = None, delay: Callable | None = None,
                 on_deliver: Callable[[Frame], None] | None = None) -> None:
        super().__init__(sessions, wire=True, on_deliver=on_deliver, keep_going=True)
        self.drop, self.corrupt, self.replay, self.delay = drop, corrupt, replay, delay
        self._held: list[Message] = []

    def transmit(self, msg: Message) -> list[Message]:
        data = msg.to_bytes() if isinstance(msg, Frame) else bytes(msg)
        key = Frame.peek(data)
        if self.drop and self.drop(*key):
            return []
        if self.corrupt and self.corrupt(*key):
            b = bytearray(data)
            b[len(b) // 2] ^= 0x01
            data = bytes(b)
        if self.delay and self.delay(*key):
            self._held.append(data)
            return []
        if self.replay and self.replay(*key):
            return [data, data]
        return [data]

    def flush(self) -> list[Message]:
        out, self._held = self._held, []
        return out


@dataclass
class DriveReport:
    """What ``drive`` measured: ``seconds`` per phase (share, aggregate,
    query, answer, reconstruct: CPU seconds, user + sys of this process),
    ``wall`` (the same phases, wall-clock seconds), ``bytes`` and
    ``elements`` of the protocol messages sent per stage ("sharing",
    "queries", "answers")."""
    seconds: dict = dc_field(default_factory=dict)
    wall: dict = dc_field(default_factory=dict)
    bytes: dict = dc_field(default_factory=dict)
    elements: dict = dc_field(default_factory=dict)
    sums: Optional[np.ndarray] = None


_SENT_KEY = {"share": "sharing", "query": "queries", "answer": "answers"}


def drive(clients: Sequence[ClientSession], federator: FederatorSession, transport: Loopback | None = None,
          *, share_rng: Callable[[int], Any] | None = None, query_rng: Any = None, wire: bool = False,
          on_deliver: Callable[[Frame], None] | None = None) -> DriveReport:
    """Run one round over ``transport`` (default: a ``Loopback``): every
    client shares (its messages delivered before the next client shares),
    the federator queries, the clients answer, the federator reconstructs
    (``DriveReport.sums``; a refusal propagates as ProtocolError).
    ``share_rng(i)`` / ``query_rng``: the parties' randomness (None: fresh)."""
    if transport is None:
        parties: dict[int, Any] = {c.index: c for c in clients}
        parties[FEDERATOR] = federator
        transport = Loopback(parties, wire=wire, on_deliver=on_deliver)
    rep = DriveReport()
    pc, cpu = time.perf_counter, time.process_time
    t_share = t_agg = w_share = w_agg = 0.0
    for c in clients:
        t0, w0 = cpu(), pc()
        out = c.start(share_rng(c.index) if share_rng is not None else None)
        t1, w1 = cpu(), pc()
        transport.deliver(out)
        t_share += t1 - t0
        t_agg += cpu() - t1
        w_share += w1 - w0
        w_agg += pc() - w1
        del out
    w = [pc()]
    t = [cpu()]
    qs = federator.start(query_rng)
    w.append(pc())
    t.append(cpu())
    transport.deliver(qs)
    w.append(pc())
    t.append(cpu())
    rep.sums = federator.result()
    w.append(pc())
    t.append(cpu())
    rep.wall.update(share=w_share, aggregate=w_agg, query=w[1] - w[0], answer=w[2] - w[1],
                    reconstruct=w[3] - w[2])
    t0, t1, t2, t3 = t
    rep.seconds.update(share=t_share, aggregate=t_agg, query=t1 - t0, answer=t2 - t1, reconstruct=t3 - t2)
    for stage, key in _SENT_KEY.items():
        tot = [0, 0]
        for s in (*clients, federator):
            v = s.sent.get(stage)
            if v:
                tot[0] += v[0]
                tot[1] += v[1]
        rep.bytes[key], rep.elements[key] = tot
    return rep
