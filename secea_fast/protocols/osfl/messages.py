"""Messages of objective-hiding one-shot FL (Egger, Urbanke, Bitar (2025),
One-shot federated learning with objective hiding) as versioned, validated
bytes: ``ShareMessage`` (client to client, eq. 1 / Sec. V-b), ``Query``
(federator to client, eq. 2) and ``Answer`` (client to federator, Sec. V-c
and VI), with the party-index and value checks their parsers apply.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..common.wire import Reader, Writer
from .params import OSFLParams

__all__ = ["MAX_CLIENTS", "ShareMessage", "Query", "Answer"]

_U64 = np.uint64


# ----------------------------------------------------------------- messages
def _arr_bytes(*shape) -> int:
    return 1 + 8 * len(shape) + 8 * math.prod(shape)


# n <= q - 1 clients (distinct alpha^i, deviation 5) and q < 2^64, whose
# largest prime is 2^64 - 59: client indices on the wire are below this
MAX_CLIENTS = (1 << 64) - 60


def _check_ids(what, params, clients=(), objectives=()):
    """Parsers' party checks: client indices < n (``params`` given, the
    receiver's OSFLParams) or < MAX_CLIENTS; objectives < T with ``params``."""
    if params is not None and not isinstance(params, OSFLParams):
        raise TypeError(f"params must be OSFLParams or None, got {type(params).__name__}")
    n = MAX_CLIENTS if params is None else params.n
    for role, i in clients:
        if i >= n:
            raise ValueError(f"{what}: {role} {i} is not a client index (< {n})")
    if params is not None:
        for t in objectives:
            if t >= params.T:
                raise ValueError(f"{what}: objective {t} is not one of the T = {params.T} objectives")


def _check_values(what, params, values):
    if params is not None and values.size and int(values.max()) >= params.p:
        raise ValueError(f"{what}: entry >= p")


class _Msg:
    values: np.ndarray                   # the payload, a field of every message

    @property
    def elements(self) -> int:
        """Field elements of payload (the unit of Table I)."""
        return int(self.values.size)


@dataclass
class ShareMessage(_Msg):
    """Client ``sender`` -> client ``receiver``: f_p^(t)(alpha_receiver) for all
    partitions p and classes (eq. 1), shape (P, c)."""
    sender: int
    receiver: int
    objective: int
    values: np.ndarray

    MAGIC = b"OSSH"

    def to_bytes(self) -> bytes:
        return (Writer(self.MAGIC).u64(self.sender).u64(self.receiver).u64(self.objective)
                .array(self.values).bytes())

    @classmethod
    def from_bytes(cls, data: bytes, params: OSFLParams | None = None) -> ShareMessage:
        """Parse and validate: sender and receiver distinct client indices
        (a client keeps its own share); with ``params`` (the receiver's
        OSFLParams) indices < n, objective < T and entries < p."""
        r = Reader(data, cls.MAGIC, "ShareMessage")
        sender, receiver, objective = r.u64(), r.u64(), r.u64()
        values = r.array(2)
        r.done()
        _check_ids("ShareMessage", params, (("sender", sender), ("receiver", receiver)), (objective,))
        if sender == receiver:
            raise ValueError(f"ShareMessage: client {sender} sent a share to itself")
        _check_values("ShareMessage", params, values)
        return cls(sender, receiver, objective, values)

    @property
    def nbytes(self) -> int:
        return 8 + 24 + _arr_bytes(*np.shape(self.values))


@dataclass
class Query(_Msg):
    """Federator -> client: q^(t,j)(alpha_client) for t in I(client) (eq. 2)."""
    client: int
    objectives: np.ndarray
    values: np.ndarray

    MAGIC = b"OSQY"

    def to_bytes(self) -> bytes:
        return (Writer(self.MAGIC).u64(self.client).array(np.asarray(self.objectives, dtype=_U64))
                .array(self.values).bytes())

    @classmethod
    def from_bytes(cls, data: bytes, params: OSFLParams | None = None) -> Query:
        """Parse and validate: ``client`` a client index, as many values as
        objectives; with ``params`` client < n, objectives < T, entries < p."""
        r = Reader(data, cls.MAGIC, "Query")
        client = r.u64()
        objectives, values = r.array(1), r.array(1)
        r.done()
        if objectives.shape != values.shape:
            raise ValueError(f"Query: {objectives.size} objectives but {values.size} values")
        _check_ids("Query", params, (("client", client),), (int(t) for t in objectives))
        _check_values("Query", params, values)
        return cls(client, objectives, values)

    @property
    def nbytes(self) -> int:
        return 8 + 8 + _arr_bytes(len(self.objectives)) + _arr_bytes(len(self.values))


@dataclass
class Answer(_Msg):
    """Client -> federator: A^i for all partitions and classes (Sec. V-c / VI), shape (P, c)."""
    client: int
    values: np.ndarray

    MAGIC = b"OSAN"

    def to_bytes(self) -> bytes:
        return Writer(self.MAGIC).u64(self.client).array(self.values).bytes()

    @classmethod
    def from_bytes(cls, data: bytes, params: OSFLParams | None = None) -> Answer:
        """Parse and validate: ``client`` a client index; with ``params``
        client < n and entries < p."""
        r = Reader(data, cls.MAGIC, "Answer")
        client = r.u64()
        values = r.array(2)
        r.done()
        _check_ids("Answer", params, (("client", client),))
        _check_values("Answer", params, values)
        return cls(client, values)

    @property
    def nbytes(self) -> int:
        return 8 + 8 + _arr_bytes(*np.shape(self.values))
