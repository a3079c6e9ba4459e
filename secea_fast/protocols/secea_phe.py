"""SecEA-PHE: the conference version of SecEA (seed 000, Sec. III-B, eqs. 11-16;
worked example Sec. III-C), whose responses travel under Paillier encryption.

Everything up to the response is SecEA (``secea.py``, seed 002): the private
entity union, the Lagrange-coded sharing y_v (eqs. 3-8) and the coded
queries q_{n,v,e} (eqs. 9-11) are the ``secea.Client`` methods, reused
unchanged.  The retrieval differs (Sec. III-B):

1. client v computes A_{v,n,e} = <q_{n,v,e}, y_v> over F_p (the same
   response product as SecEA) and sends PHE.Enc(A_{v,n,e}, pk_n) under the
   *querying* client's public key to the server (the paper: "client v sends
   a PHE-encrypted version ... of the response A_{v,n,e} to server");
2. the server, for each querier n and entity e, draws r_{n,e} and the noise
   polynomial psi_{n,e} (eq. 12: psi(beta_k) = 0, psi(alpha_k) = z^k for
   k <= K+2T-1) and returns
   Y~ = (A~)^{r_{n,e}} * PHE.Enc(psi_{n,e}(alpha_v), pk_n)          (eq. 13);
3. client n decrypts every Y~_{v,n,e}, interpolates Y_{n,e}(x) (eq. 14) and
   evaluates it at beta_1..beta_K: (r S, r c) with S = sum_v 1(e in E_v) h_{v,e}
   and c the number of holders (eqs. 15-16); the mean is (r S) / (r c) = S / c.

Parties are ``Client`` (a ``secea.Client`` with a Paillier key pair) and
``Server`` (a ``secea.Server`` whose ``noise`` works on ciphertexts);
ciphertext messages are ``CipherMessage`` (versioned bytes, validated).
``run_round`` simulates a full round with per-phase core-seconds,
``aggregate`` returns the global embeddings, ``main_job`` is the
``secea-fast run --protocol secea-phe`` job.

Arithmetic: Z_n against F_p, and the capacity argument
--------------------------------------------------------
The paper writes eq. (13) as if Paillier plaintexts were elements of F.  They
are residues mod the Paillier modulus n (2048 bits by default), while the
responses live in F_p (p = ``EMBEDDING_PRIME``, 50 bits).  We lift every
F_p value to its representative in [0, p) and let Paillier compute over the
integers: the decrypted plaintext of one value is the *integer*

    V = r A + psi + p u,    0 <= A, psi < p,  1 <= r < p,  0 <= u < 2^U,

and the client keeps V mod p = r A + psi mod p, which is exactly the F_p
value of eq. (13) as long as nothing wraps mod n.  With U = bits(p) + sigma,

    V <= (p-1)^2 + (p-1) + p (2^U - 1) = p (p - 2 + 2^U) < p 2^(U+1) <= 2^L,
    L = 2 bits(p) + sigma + 1                    (``PHEParams.slot_bits``)

so every value fits an L-bit slot (181 bits for p of 50 bits and
sigma = 80); a ciphertext carries ``slots = (bits(n) - 1 - 32) // L``
slots (the paillier packing layout, 11 for a 2048-bit key), so its
plaintext stays below 2^(bits(n)-33) < n: no slot carries into the next and
no reduction mod n ever happens.  ``PHEParams`` checks these bounds and
``tests/test_secea_phe.py`` pins the result bit for bit against the
plaintext sums.

Deviations and choices, each pinned by a test:

* Statistical smudging p u (not in the paper).  Without it the client would
  decrypt the integer r A + psi < p^2, whose quotient floor((r A + psi)/p)
  is not part of the F_p value: across v it reveals the ratios
  A_v / A_w ~ floor(r A_v / p) / floor(r A_w / p) of the *un-noised*
  responses, i.e. information about other clients' embeddings that eq. (13)
  was meant to hide.  The server therefore encrypts psi + p u, u uniform
  in [0, 2^U) from its CSPRNG stream; the quotient floor(V/p) = u + carry,
  carry <= p, is within statistical distance 2^-sigma of uniform
  (``stat_bits`` = sigma, default 80).  V mod p is unchanged.
* Packing.  The sub = ceil((d+1)/K) coordinates of one (n, e, v) share the
  same r_{n,e}, so they go into ceil(sub / slots) packed ciphertexts
  (eq. 13 applied slot-wise by one exponentiation); entities are never
  packed together, because each has its own r_{n,e}.  The padding slots of
  the last ciphertext of a row carry 0 and decrypt to 0.
* r_{n,e} is uniform in F_p^* = [1, p) (the paper: "from F"; r = 0 would
  erase the response), one per (round, n, e), the same for every v and every
  coordinate (eq. 14 needs a common factor), from the server's AES-CTR stream
  seeded by ``secrets``.
* The querier's own response (v = n) is encrypted under its own key and goes
  through the server like the others: the server must scale it by r_{n,e}
  and add psi_{n,e}(alpha_n) (the paper leaves this implicit).
* Output (eq. 16).  The client learns (r S, r c), not r; it cannot "divide
  by r" alone, and must not learn c (that is what r hides).  It computes
  x = (r S)(r c)^{-1} = S c^{-1} mod p and recovers the mean S / c as the
  rational a / b in lowest terms by rational reconstruction: the unique pair
  with 1 <= b <= N and |a| <= A_max = N * max|q(h)| (unique because
  p > 2 N A_max, checked by ``PHEParams``).  Only the mean is revealed (its
  reduced denominator divides c, as for any exact mean).  ``numerators`` /
  ``denominators`` hold a, b; the float embedding is the correctly rounded
  a / (b scale) (both operands are exact doubles).  SecEA's full version
  computes S / scale / c with two roundings, so the floats of the two
  protocols may differ in the last bit; the rationals are equal exactly.
* Offline / online split (Sec. IV-B): the queries and the server's noise
  ciphertexts Enc(psi + p u) do not depend on embeddings and are reported
  under ``offline``; the responders' encryptions are online (``encrypt``),
  the server's exponentiation and product are ``noise``.
* Keys: 2048-bit Paillier moduli by default; smaller keys only with
  ``insecure_keys=True`` (tests).  Queries keep SecEA's XOR pads; responses
  have no pad: Paillier under pk_n hides them from the server and from v
  (v only ever sees its own A).
* Dropped responses are decoded by Reed-Solomon when K is below eq. (4)'s
  value (as in ``secea``); decryption failures (a ciphertext that is not a
  unit, a plaintext that overflows its slots) raise ValueError.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field as dc_field

import numpy as np

from .. import field, linalg, paillier
from .._checks import check_int
from .._native import available_cpus
from ..prg import Prg
from . import secea
from ._jobs import job_options, jsonable
from ._wire import Reader, Writer
from .secea import DecodingError, Message, SecEAParams, _domain, _u64

__all__ = ["PHEParams", "Client", "Server", "CipherMessage", "PHERoundResult", "run_round",
           "aggregate", "main_job", "DEFAULT_KEY_BITS", "DEFAULT_STAT_BITS", "DecodingError"]

DEFAULT_KEY_BITS = 2048
DEFAULT_STAT_BITS = 80
DEFAULT_BLOCK = 16          # query rows per block: ~N * 16 ciphertexts of work per response batch
_MAGIC = b"SEPH"


# ----------------------------------------------------------------- parameters
@dataclass(frozen=True)
class PHEParams:
    """SecEA parameters plus the Paillier layout.

    ``base``: the ``SecEAParams`` (N, T, K, d, precision, bound, points);
    ``key_bits``: bits of every client's Paillier modulus (default 2048;
    fewer than ``paillier.MIN_BITS`` need ``insecure_keys=True``);
    ``stat_bits``: sigma of the smudging noise (>= 40).

    Raises ValueError when a slot cannot hold r A + psi + p u, when a key
    has no room for one slot, or when rational reconstruction of the mean
    is ambiguous (p <= 2 N A_max)."""
    base: SecEAParams
    key_bits: int = DEFAULT_KEY_BITS
    stat_bits: int = DEFAULT_STAT_BITS
    insecure_keys: bool = False

    def __post_init__(self):
        if not isinstance(self.base, SecEAParams):
            raise TypeError("base must be SecEAParams")
        kb = check_int(self.key_bits, "key_bits")
        sb = check_int(self.stat_bits, "stat_bits")
        if not isinstance(self.insecure_keys, bool):
            raise TypeError("insecure_keys must be a bool")
        if kb < paillier.MIN_BITS and not self.insecure_keys:
            raise ValueError(f"key_bits = {kb} is below {paillier.MIN_BITS}: pass insecure_keys=True "
                             "for test keys")
        if not paillier.MIN_INSECURE_BITS <= kb <= paillier.MAX_BITS:
            raise ValueError(f"key_bits must be in [{paillier.MIN_INSECURE_BITS}, "
                             f"{paillier.MAX_BITS}], got {kb}")
        if not 40 <= sb <= 256:
            raise ValueError(f"stat_bits must be in [40, 256], got {sb}")
        object.__setattr__(self, "key_bits", kb)
        object.__setattr__(self, "stat_bits", sb)
        p, L = self.p, self.slot_bits
        vmax = (p - 1) * (p - 1) + (p - 1) + p * ((1 << self.smudge_bits) - 1)
        if vmax >= 1 << L:                              # the capacity argument, checked
            raise AssertionError("slot capacity argument violated")
        if self.slots < 1:
            raise ValueError(f"a {kb}-bit key has {kb - 1 - paillier.GUARD_BITS} usable plaintext "
                             f"bits, fewer than one {L}-bit slot: use a larger key")
        amax, N = self.numerator_bound, self.base.N
        if not p > 2 * N * amax:
            raise ValueError(
                f"rational reconstruction of the mean needs p > 2 N A_max = {2 * N * amax} "
                f"(N = {N}, A_max = N * max|q(h)| = {amax}); p = {p}: lower the precision or bound")

    @property
    def p(self) -> int:
        return self.base.p

    @property
    def N(self) -> int:
        return self.base.N

    @property
    def smudge_bits(self) -> int:
        """U = bits(p) + sigma: u is uniform in [0, 2^U)."""
        return self.p.bit_length() + self.stat_bits

    @property
    def slot_bits(self) -> int:
        """L = 2 bits(p) + sigma + 1: r A + psi + p u < 2^L (module docstring)."""
        return 2 * self.p.bit_length() + self.stat_bits + 1

    @property
    def slots(self) -> int:
        """Slots per ciphertext: (key_bits - 1 - GUARD_BITS) // L (paillier's layout)."""
        return max(0, self.key_bits - 1 - paillier.GUARD_BITS) // self.slot_bits

    @property
    def cols(self) -> int:
        """Ciphertexts per (n, e, v): ceil(sub / slots)."""
        return -(-self.base.sub // self.slots)

    @property
    def row_values(self) -> int:
        """Slot values per (n, e, v) after zero padding: cols * slots."""
        return self.cols * self.slots

    @property
    def numerator_bound(self) -> int:
        """A_max = N * max|q(h)|: bound on the numerator of a mean in lowest terms."""
        b = self.base
        return b.N * b.fx.max_quantized(b.bound)


def _check_key(pk, prm: PHEParams, who: str):
    if isinstance(pk, (bytes, bytearray, memoryview)):
        pk = paillier.PublicKey.from_bytes(pk, insecure=prm.insecure_keys)
    if not isinstance(pk, paillier.PublicKey):
        raise TypeError(f"{who}: expected a paillier.PublicKey or its bytes, got {type(pk).__name__}")
    if pk.bits != prm.key_bits:
        raise ValueError(f"{who}: key has {pk.bits} bits, the parameters say {prm.key_bits}")
    return pk


# ----------------------------------------------------------------- messages
_KINDS = {"enc_response": 1, "noised_response": 2}
# client indices on the wire: the querier decodes by trying every denominator
# b <= N (``_rational``) and each client holds N - 1 keys, so N stays far below
MAX_CLIENTS = 1 << 32
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_HEADER = 8 + 7 * 8 + 8      # magic/version, kind sender receiver round block rows cols, blob length


@dataclass
class CipherMessage:
    """Ciphertexts of one query block under the querier's key ``pk``:
    ``kind`` "enc_response" (responder v -> server: Enc(A_{v,n,e})) or
    "noised_response" (server -> querier n: eq. 13); ``sender`` v,
    ``receiver`` n; ``cts``: rows * cols ints, row-major (``cols``
    ciphertexts per entity of the block).

    Bytes: ``b"SEPH" | version | kind sender receiver round block rows cols
    (u64 each) | u64 length | ciphertexts`` (fixed width 2 ceil(bits/8),
    big-endian).  ``from_bytes(data, pk)`` raises ValueError on anything
    malformed: magic, version, kind, lengths, sizes, ciphertexts outside
    (0, n^2)."""
    kind: str
    sender: int
    receiver: int
    round: int
    block: int
    rows: int
    cols: int
    cts: list
    pk: paillier.PublicKey = dc_field(repr=False)

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"unknown ciphertext message kind {self.kind!r}")
        if len(self.cts) != self.rows * self.cols:
            raise ValueError(f"{len(self.cts)} ciphertexts for {self.rows} x {self.cols}")

    @property
    def width(self) -> int:
        return 2 * ((self.pk.bits + 7) // 8)

    def to_bytes(self) -> bytes:
        blob = paillier.ciphertexts_to_bytes(self.cts, self.pk)
        return (Writer(_MAGIC).u64(_KINDS[self.kind]).u64(self.sender).u64(self.receiver)
                .u64(self.round).u64(self.block).u64(self.rows).u64(self.cols).blob(blob).bytes())

    @classmethod
    def from_bytes(cls, data, pk: paillier.PublicKey, N: int | None = None) -> "CipherMessage":
        """Parse and validate.  Both kinds go between clients (the server only
        relays), so sender and receiver must be client indices: below ``N``
        when it is given (the receiving party passes its ``params.N``),
        otherwise below ``MAX_CLIENTS``."""
        if not isinstance(pk, paillier.PublicKey):
            raise TypeError("pk must be a paillier.PublicKey (the querier's key)")
        if N is not None:
            N = check_int(N, "N")
            if not 2 <= N <= MAX_CLIENTS:
                raise ValueError(f"SecEA-PHE message: N = {N} is not a valid number of clients")
        limit = MAX_CLIENTS if N is None else N
        r = Reader(data, _MAGIC, "SecEA-PHE message")
        kind = r.u64()
        if kind not in _KIND_NAMES:
            raise ValueError(f"SecEA-PHE message: unknown kind {kind}")
        sender, receiver, rnd, block, rows, cols = (r.u64() for _ in range(6))
        for role, who in (("sender", sender), ("receiver", receiver)):
            if who >= limit:
                raise ValueError(f"SecEA-PHE message: {role} {who} is not a client index (< {limit})")
        if not (1 <= rows <= 1 << 24 and 1 <= cols <= 1 << 16):
            raise ValueError(f"SecEA-PHE message: implausible shape {rows} x {cols}")
        width = 2 * ((pk.bits + 7) // 8)
        blob = r.blob()
        r.done()
        if len(blob) != rows * cols * width:
            raise ValueError(f"SecEA-PHE message: {len(blob)} ciphertext bytes, expected "
                             f"{rows} x {cols} x {width} (wrong key or truncated)")
        cts = paillier.ciphertexts_from_bytes(blob, pk)
        return cls(_KIND_NAMES[kind], sender, receiver, rnd, block, rows, cols, cts, pk)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire."""
        return _HEADER + len(self.cts) * self.width


# ----------------------------------------------------------------- client
class Client(secea.Client):
    """Client ``index`` with a Paillier key pair (generated here from
    ``secrets`` unless ``keypair = (pk, sk)`` is given).  Union, sharing and
    queries are ``secea.Client``'s; ``answer`` returns Enc(A) under the
    querier's key; ``decode`` decrypts, interpolates and reconstructs the
    mean."""

    def __init__(self, index: int, params: PHEParams, entities, keypair=None):
        if not isinstance(params, PHEParams):
            raise TypeError("params must be PHEParams")
        super().__init__(index, params.base, entities)
        self.phe = params
        if keypair is None:
            keypair = paillier.keygen(params.key_bits, insecure=params.insecure_keys)
        pk, sk = keypair
        if not isinstance(sk, paillier.PrivateKey) or sk.public_key != pk:
            raise ValueError("keypair must be (PublicKey, matching PrivateKey)")
        self._pk = _check_key(pk, params, f"client {index}")
        self._sk = sk
        self._peer_pks = None
        self.encrypt_seconds = 0.0

    @property
    def paillier_public_key(self) -> paillier.PublicKey:
        return self._pk

    def set_paillier_keys(self, public_keys) -> None:
        """pk_v of every client (index order; PublicKey or its bytes)."""
        public_keys = list(public_keys)
        if len(public_keys) != self.phe.N:
            raise ValueError(f"need {self.phe.N} Paillier public keys, got {len(public_keys)}")
        pks = [_check_key(k, self.phe, f"key of client {v}") for v, k in enumerate(public_keys)]
        if pks[self.index] != self._pk:
            raise ValueError("the key list does not hold this client's own public key")
        self._peer_pks = pks

    def _querier_key(self, n) -> paillier.PublicKey:
        if self._peer_pks is None:
            raise RuntimeError("call set_paillier_keys() before answering queries")
        return self._peer_pks[n]

    # --- responder (client v)
    def answer_plain(self, msg: Message) -> np.ndarray:
        """A_{v,n,e} = <q_{n,v,e}, y_v> over F_p for every row of the query
        (B, sub): the response product, before encryption.  The query
        arrives divided by c_v and meets ``response_share()`` = c_v y_v
        (``secea.Client.iter_queries``)."""
        prm = self.params
        if not isinstance(msg, Message) or msg.kind != "query" or msg.receiver != self.index:
            raise ValueError("not a query for this client")
        if self._y is None or msg.round != self._y_round:
            raise ValueError(f"no shares for round {msg.round}")
        Q = msg.data
        if Q.ndim != 2 or Q.shape[1] != self.M:
            raise ValueError(f"query must have {self.M} columns, got shape {Q.shape}")
        n = msg.sender
        if not 0 <= n < prm.N:
            raise ValueError("query from an unknown client")
        Q = _u64(Q)
        if n != self.index:
            Q = self._pad(n, _domain(msg.round, "query", n, self.index, msg.block)).xor_into(
                np.empty_like(Q), Q, prm.p, check=True)
        elif Q.size and int(Q.max()) >= prm.p:
            raise ValueError("query entries must be < p")
        t0 = time.perf_counter()
        A = linalg._matmul_reduced(Q, self.response_share(), prm.p, threads=self.threads)
        self.product_seconds += time.perf_counter() - t0
        return A

    def encrypt_response(self, A: np.ndarray, query: Message) -> CipherMessage:
        """PHE.Enc(A_{v,n,e}, pk_n) (Sec. III-B), the sub values of each row
        packed into ``cols`` ciphertexts of L-bit slots."""
        lay = self.phe
        A = _u64(A)
        B = query.data.shape[0]
        if A.shape != (B, self.params.sub):
            raise ValueError(f"response has shape {A.shape}, expected {(B, self.params.sub)}")
        n = query.sender
        pk = self._querier_key(n)
        vals = np.zeros((B, lay.row_values), dtype=np.uint64)
        vals[:, :A.shape[1]] = A
        t0 = time.perf_counter()
        cts = pk.encrypt_packed(vals, lay.slot_bits)
        self.encrypt_seconds += time.perf_counter() - t0
        return CipherMessage("enc_response", self.index, n, query.round, query.block, B, lay.cols,
                             cts, pk)

    def answer(self, msg: Message) -> CipherMessage:
        """``encrypt_response(answer_plain(msg), msg)``: the responder's message."""
        return self.encrypt_response(self.answer_plain(msg), msg)

    # --- querier (client n)
    def decrypt(self, msg: CipherMessage, rows: int | None = None) -> np.ndarray:
        """Y_{v,n,e} mod p (B, sub) from the server's noised response: decrypt
        with sk_n, unpack the L-bit slots, reduce mod p.  ValueError for a
        message not meant for this client, of the wrong shape, with a
        ciphertext that is not a unit, or whose plaintext overflows its slots."""
        lay = self.phe
        if not isinstance(msg, CipherMessage) or msg.kind != "noised_response" \
                or msg.receiver != self.index:
            raise ValueError("not a noised response for this client")
        if msg.pk != self._pk:
            raise ValueError("response is not under this client's key")
        if msg.cols != lay.cols or (rows is not None and msg.rows != rows):
            raise ValueError(f"response has shape {msg.rows} x {msg.cols}, expected "
                             f"{rows if rows is not None else msg.rows} x {lay.cols}")
        vals = self._sk.decrypt_packed(msg.cts, lay.slot_bits, msg.rows * lay.row_values)
        sub, p = self.params.sub, self.params.p
        V = np.array(vals, dtype=object).reshape(msg.rows, lay.row_values)[:, :sub]
        return (V % p).astype(np.uint64)

    def decode_values(self, values, members, *, verify: bool = False) -> "secea.DecodeResult":
        """From the N decrypted responses (``None`` for a missing one) of a
        block: (numerators a, denominators b, faulty) with a / b the mean of
        each coordinate in lowest terms (eqs. 14-16 and the rational
        reconstruction of the module docstring), as a ``secea.DecodeResult``
        that also says whether the result was checked: as in SecEA, with
        exactly k = 2(K+T-1)+1 responses a corrupted one goes unnoticed
        (``checked`` False), and ``verify=True`` refuses such a result."""
        prm, lay = self.params, self.phe
        values = list(values)
        if len(values) != prm.N:
            raise ValueError(f"need N = {prm.N} response slots (None for missing)")
        B = len(members)
        Y = np.zeros((prm.N, B * prm.sub), dtype=np.uint64)
        present = np.ones(prm.N, dtype=bool)
        for v, a in enumerate(values):
            if a is None:
                present[v] = False
                continue
            a = _u64(a)
            if a.shape != (B, prm.sub) or (a.size and int(a.max()) >= prm.p):
                raise ValueError(f"response {v}: expected {(B, prm.sub)} elements of F_p")
            Y[v] = a.reshape(-1)
        full, faulty, redundancy = secea.decode_values(prm, Y, present, B, verify=verify,
                                                       who=f"client {self.index}")
        rs = np.ascontiguousarray(full[:, :prm.d])          # r S   (eq. 16)
        rc = np.ascontiguousarray(full[:, prm.d])           # r c
        if not rc.all():
            raise DecodingError("decoded r * count is zero: responses were corrupted")
        x = field.mul(rs, np.repeat(field.batch_inv(rc, prm.p), prm.d).reshape(B, prm.d), prm.p)
        num, den = _rational(x, prm.p, prm.N, lay.numerator_bound)
        return secea.DecodeResult(num, den, faulty, redundancy)

    def decode(self, responses, members, *, verify: bool = False) -> "secea.DecodeResult":
        """``decode_values`` of the decrypted ``responses`` (CipherMessages from
        the server, ``None`` for a missing one)."""
        B = len(members)
        responses = list(responses)
        for v, m in enumerate(responses):
            if isinstance(m, CipherMessage) and m.sender != v:
                raise ValueError(f"slot {v}: the response of client {m.sender}, not of client {v}")
        return self.decode_values([None if m is None else self.decrypt(m, B) for m in responses],
                                  members, verify=verify)

    def finish(self, num, den) -> dict:
        """Global embeddings (eq. 2) of this client's entities: the correctly
        rounded a / (b scale)."""
        return {x: v for x, v in zip(self.ids, _means(num, den, self.params.fx.scale))}


def _rational(x, p, N, amax):
    """(a, b) with a = x b mod p centred, 1 <= b <= N, |a| <= amax, b minimal
    (so a / b is in lowest terms); unique when p > 2 N amax."""
    a_out = np.zeros(x.shape, dtype=np.int64)
    b_out = np.zeros(x.shape, dtype=np.int64)
    todo = np.ones(x.shape, dtype=bool)
    half = np.uint64((p - 1) // 2)
    pu = np.uint64(p)
    for b in range(1, N + 1):
        y = field.mul(x, b % p, p) if b > 1 else x
        neg = y > half
        mag = np.where(neg, pu - y, y)
        ok = todo & (mag <= np.uint64(amax))
        if ok.any():
            a_out[ok] = np.where(neg[ok], -mag[ok].astype(np.int64), mag[ok].astype(np.int64))
            b_out[ok] = b
            todo &= ~ok
        if not todo.any():
            break
    if todo.any():
        raise DecodingError("a decoded mean is not a fraction a/b with b <= N and |a| <= A_max: "
                            "responses were corrupted")
    return a_out, b_out


def _means(num, den, scale):
    """Correctly rounded num / (den * scale): one IEEE division of exact doubles
    when both fit 53 bits, else through Fraction."""
    num, den = np.asarray(num), np.asarray(den)
    q = den.astype(object) * scale
    if num.size == 0 or (np.abs(num).max() < 2**53 and int(q.max()) < 2**53):
        return num.astype(np.float64) / q.astype(np.float64)
    from fractions import Fraction
    out = np.empty(num.shape, dtype=np.float64)
    for i, (a, b) in enumerate(zip(num.ravel().tolist(), q.ravel().tolist())):
        out.flat[i] = float(Fraction(a, b))
    return out


# ----------------------------------------------------------------- server
class Server(secea.Server):
    """The honest-but-curious server: sums the union uploads, relays, and
    noises the encrypted responses (eqs. 12-13): Y~ = A~^r * Enc(psi + p u).

    ``prepare`` (offline) draws r_{n,e} and encrypts the noise for every
    responder of a block; ``noise`` (online) uses each prepared ciphertext
    once.  psi is ``secea.Server``'s eq.-(12) polynomial from the same
    seeded stream."""

    def __init__(self, params: PHEParams):
        if not isinstance(params, PHEParams):
            raise TypeError("params must be PHEParams")
        super().__init__(params.base)
        self.phe = params
        self._pks = None
        self._prepared = {}       # (rnd, n, block) -> {"r": [...], "w": {v: cts}}
        self.encrypt_seconds = 0.0

    def set_paillier_keys(self, public_keys) -> None:
        public_keys = list(public_keys)
        if len(public_keys) != self.phe.N:
            raise ValueError(f"need {self.phe.N} Paillier public keys, got {len(public_keys)}")
        self._pks = [_check_key(k, self.phe, f"key of client {v}") for v, k in enumerate(public_keys)]

    def key(self, n) -> paillier.PublicKey:
        if self._pks is None:
            raise RuntimeError("call set_paillier_keys() first")
        return self._pks[n]

    def _r(self, rnd, n, block, rows) -> list:
        """r_{n,e} uniform in [1, p) for the block's rows (rejection of 0)."""
        p = self.params.p
        g = Prg(self._noise_seed, _domain(rnd, "phe-r", n, n, block))
        r = g.field(rows, p)
        while not r.all():
            z = np.flatnonzero(r == 0)
            r[z] = g.field(len(z), p)
        return [int(x) for x in r]

    def _smudge(self, rnd, n, v, block, count) -> list:
        """u uniform in [0, 2^U), U = bits(p) + sigma (from the seeded stream)."""
        U = self.phe.smudge_bits
        nb = (U + 7) // 8
        raw = Prg(self._noise_seed, _domain(rnd, "phe-u", n, v, block)).bytes(count * nb)
        mask = (1 << U) - 1
        return [int.from_bytes(raw[i * nb:(i + 1) * nb], "little") & mask for i in range(count)]

    def psi(self, rnd, n, v, block, rows) -> np.ndarray:
        """psi_{n,e}(alpha_v) (rows, sub) of eq. (12) (``secea.Server.noise``
        applied to a zero response)."""
        zero = np.zeros((rows, self.params.sub), dtype=np.uint64)
        return secea.Server.noise(self, Message("response", v, n, rnd, block, zero)).data

    def prepare(self, n: int, rnd: int, block: int, rows: int) -> None:
        """Offline: r_{n,e} for the block's ``rows`` entities and
        Enc(psi_{n,e}(alpha_v) + p u, pk_n) for every responder v."""
        prm, lay = self.params, self.phe
        n, rows = check_int(n, "n"), check_int(rows, "rows")
        if not 0 <= n < prm.N:
            raise ValueError("unknown querier")
        if rows < 1:
            raise ValueError("rows must be >= 1")
        key = (rnd, n, block)
        if key in self._prepared:
            raise ValueError(f"round {rnd} block {block} of client {n} was already prepared")
        pk = self.key(n)
        p, sub = prm.p, prm.sub
        t0 = time.perf_counter()
        w = {}
        for v in range(prm.N):
            psi = self.psi(rnd, n, v, block, rows)
            u = self._smudge(rnd, n, v, block, rows * sub)
            vals = [[0] * lay.row_values for _ in range(rows)]
            for i in range(rows):
                row, ps, off = vals[i], psi[i].tolist(), i * sub
                for j in range(sub):
                    row[j] = ps[j] + p * u[off + j]
            w[v] = pk.encrypt_packed([x for row in vals for x in row], lay.slot_bits)
        self.encrypt_seconds += time.perf_counter() - t0
        self._prepared[key] = {"r": self._r(rnd, n, block, rows), "w": w, "rows": rows}

    def noise(self, msg: CipherMessage) -> CipherMessage:
        """Online eq. (13): (A~_{v,n,e})^{r_{n,e}} * Enc(psi_{n,e}(alpha_v) + p u)
        for every row, with the block prepared offline (prepared here if not)."""
        prm, lay = self.params, self.phe
        if not isinstance(msg, CipherMessage) or msg.kind != "enc_response":
            raise ValueError("the server noises encrypted responses only")
        n, v = msg.receiver, msg.sender
        if not (0 <= n < prm.N and 0 <= v < prm.N):
            raise ValueError("response between unknown clients")
        pk = self.key(n)
        if msg.pk != pk:
            raise ValueError(f"response is not under client {n}'s key")
        if msg.cols != lay.cols:
            raise ValueError(f"response has {msg.cols} ciphertexts per row, expected {lay.cols}")
        key = (msg.round, n, msg.block)
        if key not in self._prepared:
            self.prepare(n, msg.round, msg.block, msg.rows)
        st = self._prepared[key]
        if msg.rows != st["rows"]:
            raise ValueError(f"response has {msg.rows} rows, the block has {st['rows']}")
        w = st["w"].pop(v, None)
        if w is None:
            raise ValueError(f"response of client {v} to client {n} (round {msg.round}, block "
                             f"{msg.block}) was already noised")
        if not st["w"]:
            del self._prepared[key]
        ks = [r for r in st["r"] for _ in range(lay.cols)]
        out = pk.add(pk.mul_scalar(msg.cts, ks), w)
        return CipherMessage("noised_response", v, n, msg.round, msg.block, msg.rows, msg.cols,
                             out, pk)


# ----------------------------------------------------------------- local round
_PHASES = ("keygen", "union", "encode", "offline", "responses", "encrypt", "noise", "decrypt",
           "decode")


@dataclass
class PHERoundResult:
    """Outcome of one simulated SecEA-PHE round (cf. ``runner.RoundResult``)."""
    params: PHEParams
    embeddings: list                 # per client: id -> global embedding (eq. 2)
    numerators: list                 # per client: (|E_n|, d) int64, mean = a / (b scale)
    denominators: list               # per client: (|E_n|, d) int64, 1 <= b <= N
    union_size: int
    seconds: dict                    # phase -> core-seconds (summed over parties)
    wall: dict                       # phase -> wall-clock seconds
    bytes: dict                      # phase -> bytes through the server
    ciphertexts: int = 0             # ciphertexts the responders sent
    faulty: list = dc_field(default_factory=list)
    processes: int = 1

    def table(self) -> str:
        rows = [("phase", "core-s", "wall-s", "protocol MB")]
        for ph in _PHASES:
            rows.append((ph, f"{self.seconds.get(ph, 0.0):.3f}", f"{self.wall.get(ph, 0.0):.3f}",
                         f"{self.bytes.get(ph, 0) / 1e6:.2f}"))
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
                                   for i, c in enumerate(r)) for r in rows)

    def as_dict(self) -> dict:
        """JSON-serializable summary (no embeddings)."""
        b = self.params.base
        return {"N": b.N, "T": b.T, "K": b.K, "d": b.d, "precision": b.precision, "p": b.p,
                "key_bits": self.params.key_bits, "stat_bits": self.params.stat_bits,
                "slot_bits": self.params.slot_bits, "slots_per_ciphertext": self.params.slots,
                "ciphertexts_per_response": self.params.cols, "M": int(self.union_size),
                "entities": [len(x) for x in self.numerators], "ciphertexts": int(self.ciphertexts),
                "processes": self.processes,
                "core_seconds": {k: float(v) for k, v in self.seconds.items()},
                "wall_seconds": {k: float(v) for k, v in self.wall.items()},
                "bytes_via_server": {k: int(v) for k, v in self.bytes.items()}}

    def matches(self, sums, counts) -> bool:
        """Whether every mean equals sums / counts exactly (per client, e.g.
        ``runner.plaintext_sums`` or a SecEA ``RoundResult``)."""
        for a, b, s, c in zip(self.numerators, self.denominators, sums, counts):
            s = np.asarray(s, dtype=object)
            c = np.asarray(c, dtype=object).reshape(-1, 1)
            if a.shape != s.shape or not (a.astype(object) * c == s * b.astype(object)).all():
                return False
        return True


def _block_job(S, job):
    """One query block of client n (an executor shard; ``S``: the round's
    parties and settings)."""
    n, b, members = job
    clients, server, drop, rnd = S["clients"], S["server"], S["drop"], S["round"]
    t = {ph: 0.0 for ph in ("offline", "responses", "encrypt", "noise", "decrypt", "decode")}
    nbytes = {"offline": 0, "responses": 0}
    B = len(members)
    t0 = time.perf_counter()
    server.prepare(n, rnd, b, B)                 # offline: r and Enc(psi + p u), eq. (12)
    t["offline"] += time.perf_counter() - t0
    queries = clients[n].iter_queries(rnd, b, members)
    vals = []
    cts = 0
    for v in range(len(clients)):
        t0 = time.perf_counter()
        q = next(queries)
        t["offline"] += time.perf_counter() - t0
        if v != n:
            nbytes["offline"] += 2 * q.nbytes
        if (n, v) in drop:
            vals.append(None)
            continue
        t0 = time.perf_counter()
        A = clients[v].answer_plain(q)
        t1 = time.perf_counter()
        c = clients[v].encrypt_response(A, q)
        t2 = time.perf_counter()
        y = server.noise(c)
        t3 = time.perf_counter()
        vals.append(clients[n].decrypt(y, B))
        t4 = time.perf_counter()
        t["responses"] += t1 - t0
        t["encrypt"] += t2 - t1
        t["noise"] += t3 - t2
        t["decrypt"] += t4 - t3
        nbytes["responses"] += c.nbytes + y.nbytes
        cts += len(c.cts)
    t0 = time.perf_counter()
    num, den, faulty = clients[n].decode_values(vals, members)
    t["decode"] += time.perf_counter() - t0
    server._prepared.pop((rnd, n, b), None)      # dropped responders' noise is never used
    return n, members, num, den, faulty, t, nbytes, cts


def run_round(local, T: int = 1, precision: int = 8, key_bits: int = DEFAULT_KEY_BITS,
              processes: int | None = None, *, K=None, bound: float = 100.0,
              stat_bits: int = DEFAULT_STAT_BITS, insecure_keys: bool = False, keys=None,
              block_size=None, drop=None, progress=False, verify=False, rnd: int = 1, params=None,
              threads=None, executor=None) -> PHERoundResult:
    """One SecEA-PHE round for all parties: ``local[n]`` is client n's dict
    entity id -> 1-D float embedding.

    ``key_bits``: Paillier modulus size of every client (keys below 2048 bits
    need ``insecure_keys=True``); ``keys``: optional list of N (pk, sk) pairs
    to reuse instead of generating fresh ones; ``processes``: worker
    processes (fork) for the per-block phases, or ``executor``: any
    ``secea_fast.executor.Executor``; ``block_size``: query rows
    per block (default 16); ``drop``: (querier, responder) pairs whose
    responses are lost; ``verify``: compare with ``runner.plaintext_sums``
    and raise AssertionError on any difference; ``params``: a ``PHEParams``
    (overrides T, precision, K, bound, key_bits, stat_bits)."""
    from . import runner
    from .runner import _Progress, plaintext_sums
    if not isinstance(local, (list, tuple)) or not local:
        raise TypeError("local must be a non-empty list of dicts (one per client)")
    for n, emb in enumerate(local):
        if not isinstance(emb, dict) or not emb:
            raise ValueError(f"client {n}: expected a non-empty dict entity id -> embedding")
    N = len(local)
    d = len(np.asarray(next(iter(local[0].values()))).reshape(-1))
    if params is None:
        params = PHEParams(SecEAParams(N=N, d=d, T=T, precision=precision, K=K, bound=bound),
                           key_bits=key_bits, stat_bits=stat_bits, insecure_keys=insecure_keys)
    elif not isinstance(params, PHEParams):
        raise TypeError("params must be PHEParams")
    elif params.N != N or params.base.d != d:
        raise ValueError("params do not match the clients' data (N or d)")
    executor = runner.resolve_executor(executor, processes)
    B = DEFAULT_BLOCK if block_size is None else check_int(block_size, "block_size")
    drop = runner.check_pairs(drop, N, "drop")
    if keys is not None:
        keys = list(keys)
        if len(keys) != N:
            raise ValueError(f"need {N} key pairs, got {len(keys)}")
    prm = params.base
    secs, wall, nbytes = {}, {}, {}

    # --- Paillier keys (one-time)
    w0 = time.perf_counter()
    if keys is None:
        keys = [paillier.keygen(params.key_bits, insecure=params.insecure_keys) for _ in range(N)]
    secs["keygen"] = wall["keygen"] = time.perf_counter() - w0
    clients = [Client(n, params, list(emb.keys()), keys[n]) for n, emb in enumerate(local)]
    server = Server(params)
    xkeys = [c.public_key for c in clients]
    pks = [c.paillier_public_key for c in clients]
    for c in clients:
        c.set_peer_keys(xkeys)
        c.set_paillier_keys(pks)
    server.set_paillier_keys(pks)
    nbytes["keygen"] = N * N * len(pks[0].to_bytes())     # each key up, then to the N - 1 others

    # --- the one-time entity union and the sharing (as runner.run_round)
    M = runner.union_and_share(clients, server, local, rnd, secs, wall, nbytes)

    # --- retrieval, per query block
    jobs = [(n, b, mem) for n, c in enumerate(clients) for b, mem in enumerate(c.blocks(B))]
    blk = ("offline", "responses", "encrypt", "noise", "decrypt", "decode")
    for ph in blk:
        secs[ph] = 0.0
    nbytes["offline"] = nbytes["responses"] = 0
    for c in clients:
        c.threads = threads
    nums = [np.zeros((len(c.ids), d), dtype=np.int64) for c in clients]
    dens = [np.zeros((len(c.ids), d), dtype=np.int64) for c in clients]
    faulty = set()
    counter = [0]
    bar = _Progress(len(jobs), "SecEA-PHE blocks", progress)

    def collect(res):
        n, members, a, b_, bad, t, nb, cts = res
        nums[n][members] = a
        dens[n][members] = b_
        faulty.update((n, v) for v in bad)
        for ph, x in t.items():
            secs[ph] += x
        for ph, x in nb.items():
            nbytes[ph] += x
        counter[0] += cts
        bar.step()

    for pk in pks:      # no precomputed obfuscators may be copied into forked workers
        pk.clear_pool()
    state = dict(clients=clients, server=server, drop=drop, round=rnd)
    w0 = time.perf_counter()
    executor.map(_block_job, jobs, state, collect)
    wall_blocks = time.perf_counter() - w0
    busy = sum(secs[ph] for ph in blk) or 1.0
    for ph in blk:
        wall[ph] = wall_blocks * secs[ph] / busy          # wall time apportioned by work
    embeddings = [c.finish(a, b_) for c, a, b_ in zip(clients, nums, dens)]
    res = PHERoundResult(params, embeddings, nums, dens, M, secs, wall, nbytes, counter[0],
                         sorted(faulty), executor.processes)
    if verify:
        ref = plaintext_sums(local, prm)
        if not res.matches([s for s, _ in ref], [c for _, c in ref]):
            raise AssertionError("SecEA-PHE means differ from the plaintext sums / counts")
    return res


def aggregate(local, T: int = 1, precision: int = 8, *, key_bits: int = DEFAULT_KEY_BITS,
              insecure_keys: bool = False, K=None, bound: float = 100.0, block_size=None,
              drop=None, processes: int = 1) -> list:
    """SecEA-PHE end to end for all parties locally.  ``local[n]``: client
    n's dict entity id -> 1-D float array.  Returns one dict per client with
    the global embedding (eq. 2) of each of its entities."""
    return run_round(local, T=T, precision=precision, key_bits=key_bits, insecure_keys=insecure_keys,
                     K=K, bound=bound, block_size=block_size, drop=drop,
                     processes=processes).embeddings


# ----------------------------------------------------------------- CLI job
_JOB_DEFAULTS = {"workload": "tiny", "N": 3, "T": 1, "d": None, "precision": 8,
                 "key_bits": DEFAULT_KEY_BITS, "insecure_keys": False, "stat_bits": DEFAULT_STAT_BITS,
                 "processes": None, "block_size": None, "seed": 0, "compare": True}


def main_job(args=None, **kwargs) -> dict:
    """The ``secea-fast run --protocol secea-phe`` job: one verified SecEA-PHE
    round on a small workload (default: the "tiny" shape, N = 3, T = 1,
    2048-bit keys, every CPU up to 4; well under a minute) and, with
    ``compare``, the information-theoretic SecEA round on the same data.
    ``args``: dict of options (keys of ``_JOB_DEFAULTS``, '-' or '_') and/or
    keyword arguments.  Returns a JSON-serializable dict of per-phase
    core/wall seconds and bytes."""
    from . import runner, workloads
    opts = job_options(_JOB_DEFAULTS, args, kwargs, "secea-phe", ("insecure_keys", "compare"))
    procs = opts["processes"]
    if procs is None:
        procs = min(4, available_cpus())
    t0 = time.perf_counter()
    local = workloads.workload(opts["workload"], N=opts["N"], d=opts["d"], seed=opts["seed"])
    t_gen = time.perf_counter() - t0
    res = run_round(local, T=opts["T"], precision=opts["precision"], key_bits=opts["key_bits"],
                    insecure_keys=opts["insecure_keys"], stat_bits=opts["stat_bits"],
                    processes=procs, block_size=opts["block_size"])
    ref = runner.plaintext_sums(local, res.params.base)
    out = {"protocol": "secea-phe", "workload": opts["workload"], "seed": opts["seed"],
           "workload_seconds": t_gen, **res.as_dict(),
           "verified": res.matches([s for s, _ in ref], [c for _, c in ref]),
           "table": res.table()}
    if opts["compare"]:
        it = runner.run_round(local, T=opts["T"], precision=opts["precision"], processes=procs,
                              params=res.params.base)
        out["secea"] = {"core_seconds": {k: float(v) for k, v in it.seconds.items()},
                        "wall_seconds": {k: float(v) for k, v in it.wall.items()},
                        "bytes_via_server": {k: int(v) for k, v in it.bytes.items()},
                        "same_means": res.matches(it.sums, it.counts)}
    return jsonable(out)
