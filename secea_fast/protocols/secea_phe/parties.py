"""The SecEA-PHE parties (Tang, Zhu, Li, Sun 2022, Sec. III-B): ``Client`` extends the
SecEA client with encrypted responses and decryption, ``Server`` adds the
noise under encryption (eqs. 12-14)."""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ... import field, linalg, paillier
from ...field import raw as fp
from ..._checks import check_int
from ...prg import Prg
from .. import secea
from .._secea_wire import as_u64, pad_domain
from ..secea import DecodingError, Message
from .._inputs import EntityId
from ..common.wire import Reader, Writer
from .messages import CipherMessage
from .params import PHEParams, check_key

_STATE_MAGIC = b"SEPs"

# ----------------------------------------------------------------- client
class Client(secea.Client):
    """Client ``index`` with a Paillier key pair (generated here from
    ``secrets`` unless ``keypair = (pk, sk)`` is given).  Union, sharing and
    queries are ``secea.Client``'s; ``answer`` returns Enc(A) under the
    querier's key; ``decode`` decrypts, interpolates and reconstructs the
    mean."""

    def __init__(self, index: int, params: PHEParams, entities: Iterable[EntityId],
                 keypair: tuple[paillier.PublicKey, paillier.PrivateKey] | None = None) -> None:
        if not isinstance(params, PHEParams):
            raise TypeError("params must be PHEParams")
        super().__init__(index, params.base, entities)
        if keypair is None:
            keypair = paillier.keygen(params.key_bits, insecure=params.insecure_keys, variant=params.variant)
        self._set_paillier(params, keypair)

    def _set_paillier(self, params, keypair) -> None:
        pk, sk = keypair
        if not isinstance(sk, paillier.PrivateKey) or sk.public_key != pk:
            raise ValueError("keypair must be (PublicKey, matching PrivateKey)")
        self.phe = params
        self._pk = check_key(pk, params, f"client {self.index}")
        self._sk: paillier.PrivateKey | None = sk
        self._peer_pks: list[paillier.PublicKey] | None = None
        self.encrypt_seconds = 0.0
        self.decrypt_seconds = 0.0
        self.ciphertexts = 0             # ciphertexts this client encrypted as a responder

    # --- state kept between the processes of a deployment
    def export_state(self) -> bytes:
        """``secea.Client.export_state`` followed by this client's Paillier
        private key and, once set, every client's Paillier public key: the
        party's own state, holding secrets, that never leaves its host.
        :meth:`import_state` restores it with the same key (a key is never
        regenerated on import)."""
        if self._sk is None:
            raise RuntimeError(f"this worker copy of client {self.index} has no Paillier private key")
        w = Writer(_STATE_MAGIC).blob(super().export_state()).blob(self._sk.to_bytes())
        w.u64(self._peer_pks is not None)
        for pk in self._peer_pks or ():
            w.blob(pk.to_bytes())
        return w.bytes()

    @classmethod
    def import_state(cls, params: PHEParams, entities: Iterable[EntityId],  # type: ignore[override]  # PHE params
                     data: bytes) -> Client:
        """The client saved by :meth:`export_state`, with its own Paillier
        key, for the same ``params`` and entities (ValueError otherwise, or
        for state without a Paillier key, such as ``secea.Client``'s)."""
        if not isinstance(params, PHEParams):
            raise TypeError(f"params must be PHEParams, got {type(params).__name__}")
        r = Reader(data, _STATE_MAGIC, "SecEA-PHE client state")
        base, key = r.blob(), r.blob(1 << 20)
        peers = [r.blob(1 << 20) for _ in range(params.N)] if r.flag() else None
        r.done()
        sk = paillier.PrivateKey.from_bytes(key, insecure=params.insecure_keys)
        restored = secea.Client.import_state(params.base, entities, base)
        c = cls.__new__(cls)
        vars(c).update(vars(restored))
        c._set_paillier(params, (sk.public_key, sk))
        if peers is not None:
            c.set_paillier_keys(peers)
        return c

    @property
    def paillier_public_key(self) -> paillier.PublicKey:
        return self._pk

    @property
    def can_decrypt(self) -> bool:
        """Whether this object holds the client's Paillier private key (an
        executor's worker copy does not: ``secea_fast._secrets``)."""
        return self._sk is not None

    def set_paillier_keys(self, public_keys: Iterable[paillier.PublicKey | bytes]) -> None:
        """pk_v of every client (index order; PublicKey or its bytes)."""
        public_keys = list(public_keys)
        if len(public_keys) != self.phe.N:
            raise ValueError(f"need {self.phe.N} Paillier public keys, got {len(public_keys)}")
        pks = [check_key(k, self.phe, f"key of client {v}") for v, k in enumerate(public_keys)]
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
        (``secea.Client.iter_queries``).  Each (round, querier, block) is
        answered once, as in SecEA: two answers to queries a relay altered
        (the query pad is an XOR stream) would, once the querier and the
        server compare them, differ by y_v times the change."""
        prm = self.params
        n, Q = self._check_query(msg)
        self._once((msg.round, f"response to {n}", msg.block))
        if n != self.index:
            Q = self._pad(n, pad_domain(msg.round, "query", n, self.index, msg.block)).xor_into(
                np.empty_like(Q), Q, prm.p, check=True)
        elif Q.size and int(Q.max()) >= prm.p:
            raise ValueError("query entries must be < p")
        t0 = time.process_time()
        A = linalg.raw.matmul(Q, self.response_share(), prm.p, threads=self.threads)
        self.product_seconds += time.process_time() - t0
        return A

    def encrypt_response(self, A: np.ndarray, query: Message) -> CipherMessage:
        """PHE.Enc(A_{v,n,e}, pk_n) (Sec. III-B), the sub values of each row
        packed into ``cols`` ciphertexts of L-bit slots."""
        lay = self.phe
        A = as_u64(A)
        B = query.data.shape[0]
        if A.shape != (B, self.params.sub):
            raise ValueError(f"response has shape {A.shape}, expected {(B, self.params.sub)}")
        n = query.sender
        pk = self._querier_key(n)
        vals = np.zeros((B, lay.row_values), dtype=np.uint64)
        vals[:, :A.shape[1]] = A
        t0 = time.process_time()
        cts = pk.encrypt_packed(vals, lay.slot_bits)
        self.encrypt_seconds += time.process_time() - t0
        self.ciphertexts += len(cts)
        return CipherMessage("enc_response", self.index, n, query.round, query.block, B, lay.cols,
                             cts, pk)

    def answer(self, msg: Message) -> CipherMessage:  # type: ignore[override]  # PHE responses are ciphertexts
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
        if self._sk is None:
            raise RuntimeError(f"this worker copy of client {self.index} has no Paillier private key: "
                               "decrypt in the client's own process")
        t0 = time.process_time()
        try:
            vals = self._sk.decrypt_packed(msg.cts, lay.slot_bits, msg.rows * lay.row_values)
        finally:
            self.decrypt_seconds += time.process_time() - t0
        sub, p = self.params.sub, self.params.p
        V = np.array(vals, dtype=object).reshape(msg.rows, lay.row_values)[:, :sub]
        return (V % p).astype(np.uint64)

    def response_unpads(self, msg: CipherMessage, rows: int) -> bool:  # type: ignore[override]  # ciphertexts
        """Whether a noised response to this client decrypts to ``rows``
        entities (the ciphertexts are units and no slot overflows): how a
        session names the responder whose response ``decode`` refused."""
        try:
            self.decrypt(msg, rows)
        except ValueError:
            return False
        return True

    def decode_values(self, values: Sequence[np.ndarray | None], members: Sequence[int] | np.ndarray, *,
                      verify: bool = False) -> secea.DecodeResult:
        """From the N decrypted responses (``None`` for a missing one) of a
        block: (numerators a, denominators b, faulty) with a / b the mean of
        each coordinate in lowest terms (eqs. 14-16 and the rational
        reconstruction of the module docstring), as a ``secea.DecodeResult``
        that also says whether the result was checked: as in SecEA, with
        exactly k = 2(K+T-1)+1 responses a corrupted one goes unnoticed
        (``checked`` False), and ``verify=True`` refuses such a result."""
        prm, lay = self.params, self.phe
        B = len(members)

        def fill(v, a, out):
            a = as_u64(a)
            if a.shape != (B, prm.sub) or (a.size and int(a.max()) >= prm.p):
                raise ValueError(f"response {v}: expected {(B, prm.sub)} elements of F_p")
            out[...] = a

        Y, present = secea.gather_responses(values, prm.N, B, prm.sub, fill)
        full, faulty, redundancy = secea.decode_values(prm, Y, present, B, verify=verify,
                                                       who=f"client {self.index}")
        rs = np.ascontiguousarray(full[:, :prm.d])          # r S   (eq. 16)
        rc = np.ascontiguousarray(full[:, prm.d])           # r c
        if not rc.all():
            raise DecodingError("decoded r * count is zero: responses were corrupted")
        x = fp.mul(rs, np.repeat(fp.batch_inv(rc, prm.p), prm.d).reshape(B, prm.d), prm.p)
        num, den = _rational(x, prm.p, prm.N, lay.numerator_bound)
        return secea.DecodeResult(num, den, faulty, redundancy)

    def decode(self, responses: Iterable[CipherMessage | None],  # type: ignore[override]  # PHE responses are ciphertexts
               members: Sequence[int] | np.ndarray, *, verify: bool = False) -> secea.DecodeResult:
        """``decode_values`` of the decrypted ``responses`` (CipherMessages from
        the server, ``None`` for a missing one)."""
        B = len(members)
        responses = list(responses)
        for v, m in enumerate(responses):
            if isinstance(m, CipherMessage) and m.sender != v:
                raise ValueError(f"slot {v}: the response of client {m.sender}, not of client {v}")
        return self.decode_values([None if m is None else self.decrypt(m, B) for m in responses],
                                  members, verify=verify)

    def finish(self, num: np.ndarray, den: np.ndarray) -> dict[Any, np.ndarray]:
        """Global embeddings (eq. 2) of this client's entities: the correctly
        rounded a / (b scale)."""
        return dict(zip(self.ids, self.finish_rows(num, den)))

    def finish_rows(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        """:meth:`finish` as one 2-D array, a row per own entity in this
        client's entity order."""
        return _means(num, den, self.params.fx.scale)


def _rational(x, p, N, amax):
    """(a, b) with a = x b mod p centred, 1 <= b <= N, |a| <= amax, b minimal
    (so a / b is in lowest terms); unique when p > 2 N amax."""
    a_out = np.zeros(x.shape, dtype=np.int64)
    b_out = np.zeros(x.shape, dtype=np.int64)
    todo = np.ones(x.shape, dtype=bool)
    half = np.uint64((p - 1) // 2)
    pu = np.uint64(p)
    for b in range(1, N + 1):
        y = fp.scale(x, b, p) if b > 1 else x
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

    def __init__(self, params: PHEParams) -> None:
        if not isinstance(params, PHEParams):
            raise TypeError("params must be PHEParams")
        super().__init__(params.base)
        self.phe = params
        self._pks: list[paillier.PublicKey] | None = None
        # (rnd, n, block) -> {"r": [...], "w": {v: cts}, "rows": rows}
        self._prepared: dict[tuple[int, int, int], dict[str, Any]] = {}
        self.encrypt_seconds = 0.0

    def set_paillier_keys(self, public_keys: Iterable[paillier.PublicKey | bytes]) -> None:
        """pk_v of every client (index order; PublicKey or its bytes)."""
        public_keys = list(public_keys)
        if len(public_keys) != self.phe.N:
            raise ValueError(f"need {self.phe.N} Paillier public keys, got {len(public_keys)}")
        self._pks = [check_key(k, self.phe, f"key of client {v}") for v, k in enumerate(public_keys)]

    def key(self, n: int) -> paillier.PublicKey:
        """Client n's Paillier public key."""
        if self._pks is None:
            raise RuntimeError("call set_paillier_keys() first")
        return self._pks[n]

    def _r(self, rnd, n, block, rows) -> list:
        """r_{n,e} uniform in [1, p) for the block's rows (rejection of 0)."""
        p = self.params.p
        g = Prg(self._noise_seed, pad_domain(rnd, "phe-r", n, n, block))
        r = g.field(rows, p)
        while not r.all():
            z = np.flatnonzero(r == 0)
            r[z] = g.field(len(z), p)
        return [int(x) for x in r]

    def _smudge(self, rnd, n, v, block, count) -> list:
        """u uniform in [0, 2^U), U = bits(p) + sigma (from the seeded stream)."""
        U = self.phe.smudge_bits
        nb = (U + 7) // 8
        raw = Prg(self._noise_seed, pad_domain(rnd, "phe-u", n, v, block)).bytes(count * nb)
        mask = (1 << U) - 1
        return [int.from_bytes(raw[i * nb:(i + 1) * nb], "little") & mask for i in range(count)]

    def psi(self, rnd: int, n: int, v: int, block: int, rows: int) -> np.ndarray:
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
        t0 = time.process_time()
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
        self.encrypt_seconds += time.process_time() - t0
        self._prepared[key] = {"r": self._r(rnd, n, block, rows), "w": w, "rows": rows}

    def noise(self, msg: CipherMessage) -> CipherMessage:  # type: ignore[override]  # PHE responses are ciphertexts
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
