"""The SecEA-PHE ciphertext message (a batch of Paillier ciphertexts of one
response) with its versioned byte layout."""
from __future__ import annotations

from dataclasses import dataclass, field as dc_field


from ... import paillier
from ..._checks import check_int
from ..common.wire import Reader, Writer

_MAGIC = b"SEPH"




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
    (u64 each) | u64 length | ciphertexts`` (``paillier.ciphertexts_to_bytes``:
    fixed width 2 ceil(bits/8), big-endian, after a tag under a
    short-exponent key).  ``from_bytes(data, pk)`` raises ValueError on anything
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

    @staticmethod
    def header(data: bytes) -> tuple[str, int, int]:
        """(kind, sender, receiver) from a message's header alone (which
        key it is under is the receiver's: parse with :meth:`from_bytes`
        then); ValueError for a header that is not one."""
        r = Reader(bytes(data[:_HEADER - 8]), _MAGIC, "SecEA-PHE message header")
        kind = r.u64()
        if kind not in _KIND_NAMES:
            raise ValueError(f"SecEA-PHE message: unknown kind {kind}")
        return _KIND_NAMES[kind], r.u64(), r.u64()

    @classmethod
    def from_bytes(cls, data: bytes, pk: paillier.PublicKey, N: int | None = None) -> CipherMessage:
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
        if len(blob) != paillier.ciphertexts_nbytes(rows * cols, pk):
            raise ValueError(f"SecEA-PHE message: {len(blob)} ciphertext bytes, expected "
                             f"{rows} x {cols} x {width}"
                             f"{' + the tag' if pk.variant == paillier.SHORT_EXPONENT else ''} "
                             "(wrong key or truncated)")
        cts = paillier.ciphertexts_from_bytes(blob, pk)
        return cls(_KIND_NAMES[kind], sender, receiver, rnd, block, rows, cols, cts, pk)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire."""
        return _HEADER + paillier.ciphertexts_nbytes(len(self.cts), self.pk)
