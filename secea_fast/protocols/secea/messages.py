"""The one SecEA message type (kind, sender, receiver, round, block, one 2-D
array) with its versioned byte layout.  The names of the one-time-pad
domains every pad of a round is drawn under are in
``secea_fast.protocols._secea_wire`` (shared with SecEA-PHE, not public)."""
from __future__ import annotations


from dataclasses import dataclass

import numpy as np

from ..._checks import check_int
from ..common.wire import Reader, Writer
from .params import max_clients

# ----------------------------------------------------------------- messages
_KINDS = {"psu": 1, "psu_sum": 2, "share": 3, "query": 4, "response": 5}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_SERVER = (1 << 64) - 1
# who sends and who receives each kind: "c" a client, "s" the server
# (psu_sum is the server's broadcast, addressed to the server id or to one client)
_ROLES = {"psu": ("c", "s"), "psu_sum": ("s", "cs"), "share": ("c", "c"), "query": ("c", "c"),
          "response": ("c", "c")}


@dataclass
class Message:
    """One protocol message: ``kind`` in psu, psu_sum, share, query,
    response; ``sender`` / ``receiver`` client indices (``Message.SERVER``
    for the server); ``round``, ``block`` (entity block of a query /
    response); ``data`` a 2-D uint64 array (padded with one-time pads when
    relayed between clients)."""
    kind: str
    sender: int
    receiver: int
    round: int
    block: int
    data: np.ndarray

    SERVER = _SERVER

    def to_bytes(self) -> bytes:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown message kind {self.kind!r}")
        return (Writer(b"SEEA").u64(_KINDS[self.kind]).u64(self.sender).u64(self.receiver)
                .u64(self.round).u64(self.block).array(self.data).bytes())

    @classmethod
    def from_bytes(cls, data: bytes, p: int | None = None, N: int | None = None) -> Message:
        """Parse and validate; with ``p``, also check every entry is < p.
        The sender and receiver must fit the kind (a client index or
        ``SERVER``, see ``_ROLES``); client indices must be < ``N`` when it
        is given (the receiving party passes its ``params.N``), otherwise
        below ``max_clients(p)``, the protocol's own limit."""
        r = Reader(data, b"SEEA", "SecEA message")
        kind = r.u64()
        if kind not in _KIND_NAMES:
            raise ValueError(f"SecEA message: unknown kind {kind}")
        sender, receiver, rnd, block = r.u64(), r.u64(), r.u64(), r.u64()
        arr = r.array(2)
        r.done()
        name = _KIND_NAMES[kind]
        if N is not None:
            N = check_int(N, "N")
            if not 2 <= N <= max_clients(p):
                raise ValueError(f"SecEA message: N = {N} is not a valid number of clients")
        limit = max_clients(p) if N is None else N
        for role, who, allowed in (("sender", sender, _ROLES[name][0]),
                                   ("receiver", receiver, _ROLES[name][1])):
            if who == _SERVER and "s" in allowed:
                continue
            if "c" not in allowed:
                raise ValueError(f"SecEA message: the {role} of a {name} message is the server, "
                                 f"got {who}")
            if who >= limit:
                raise ValueError(f"SecEA message: {role} {who} is not a client index "
                                 f"(< {limit}){' or the server' if 's' in allowed else ''}")
        if p is not None and arr.size and int(arr.max()) >= p:
            raise ValueError("SecEA message: entry >= p")
        return cls(name, sender, receiver, rnd, block, arr)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire (header + array)."""
        return 8 + 5 * 8 + 1 + 8 * self.data.ndim + 8 * self.data.size
