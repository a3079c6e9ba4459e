"""The SecEmb messages with their versioned byte layouts: retrieval
requests and responses, aggregation uploads, aggregate shares."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import dpf
from ..common.wire import Reader, Writer
from .params import REQUEST_VERSION, UPLOAD_VERSION


# ----------------------------------------------------------------- messages
def _server_id(party: int, what: str) -> int:
    if party not in (0, 1):
        raise ValueError(f"{what}: party must be server 0 or 1, got {party}")
    return party


class _Msg:
    @property
    def nbytes(self) -> int:
        return len(self.to_bytes())


@dataclass
class RetrievalRequest(_Msg):
    """User -> server b: m' retrieval keys (scalar, beta = 1 over Z_2^64) as
    one ``dpf.KeyBatch``.  Layout version 2: the batch's own bytes (one
    header for all keys) in place of one blob per key."""
    party: int
    keys: dpf.KeyBatch

    def to_bytes(self) -> bytes:
        if not isinstance(self.keys, dpf.KeyBatch):
            raise TypeError(f"RetrievalRequest.keys must be a dpf.KeyBatch, got {type(self.keys).__name__}")
        return Writer(b"SERQ", REQUEST_VERSION).u64(self.party).blob(self.keys.to_bytes()).bytes()

    @classmethod
    def from_bytes(cls, data) -> "RetrievalRequest":
        r = Reader(data, b"SERQ", "RetrievalRequest", REQUEST_VERSION)
        party = _server_id(r.u64(), "RetrievalRequest")
        keys = dpf.KeyBatch.from_bytes(r.blob(1 << 30))
        r.done()
        if keys.party != party:
            raise ValueError("RetrievalRequest: the keys belong to the other server")
        return cls(party, keys)


@dataclass
class RetrievalResponse(_Msg):
    """Server b -> user: m' x d shares of the requested rows (eq. 3)."""
    party: int
    shares: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SERS").u64(self.party).array(self.shares).bytes()

    @classmethod
    def from_bytes(cls, data) -> "RetrievalResponse":
        r = Reader(data, b"SERS", "RetrievalResponse")
        party = _server_id(r.u64(), "RetrievalResponse")
        shares = r.array(2)
        r.done()
        return cls(party, shares)


@dataclass
class AggregationUpload(_Msg):
    """User -> server b: CW^{n+1} per slot (m' x d) and a dense share."""
    party: int
    cws: np.ndarray
    dense: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SEUP", UPLOAD_VERSION).u64(self.party).array(self.cws).array(self.dense).bytes()

    @classmethod
    def from_bytes(cls, data) -> "AggregationUpload":
        r = Reader(data, b"SEUP", "AggregationUpload", UPLOAD_VERSION)
        party = _server_id(r.u64(), "AggregationUpload")
        cws, dense = r.array(2), r.array(1)
        r.done()
        return cls(party, cws, dense)


@dataclass
class AggregateShare(_Msg):
    """Server 1 -> server 0: its share of sum_u g_Q (m x d) and of the dense sum."""
    party: int
    sparse: np.ndarray
    dense: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SEAG").u64(self.party).array(self.sparse).array(self.dense).bytes()

    @classmethod
    def from_bytes(cls, data) -> "AggregateShare":
        r = Reader(data, b"SEAG", "AggregateShare")
        party = _server_id(r.u64(), "AggregateShare")
        sparse, dense = r.array(2), r.array(1)
        r.done()
        return cls(party, sparse, dense)
