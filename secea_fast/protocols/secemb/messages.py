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
    def to_bytes(self) -> bytes:
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        return len(self.to_bytes())


@dataclass
class RetrievalRequest(_Msg):
    """User -> server b: its m' path keys as one ``dpf.PathKeyBatch`` (the
    XOR retrieval needs no correction word).  Layout version 3 (2 carried
    KeyBatch retrieval keys with beta = 1, 1 one blob per key)."""
    party: int
    keys: dpf.PathKeyBatch

    def to_bytes(self) -> bytes:
        if not isinstance(self.keys, dpf.PathKeyBatch):
            raise TypeError(f"RetrievalRequest.keys must be a dpf.PathKeyBatch, got {type(self.keys).__name__}")
        return Writer(b"SERQ", REQUEST_VERSION).u64(self.party).blob(self.keys.to_bytes()).bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> RetrievalRequest:
        r = Reader(data, b"SERQ", "RetrievalRequest", REQUEST_VERSION)
        party = _server_id(r.u64(), "RetrievalRequest")
        keys = dpf.PathKeyBatch.from_bytes(r.blob(1 << 30))
        r.done()
        if keys.party != party:
            raise ValueError("RetrievalRequest: the keys belong to the other server")
        return cls(party, keys)


@dataclass
class RetrievalResponse(_Msg):
    """Server b -> user: m' x d XOR shares of the requested rows (eq. 3, XOR form)."""
    party: int
    shares: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SERS").u64(self.party).array(self.shares).bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> RetrievalResponse:
        r = Reader(data, b"SERS", "RetrievalResponse")
        party = _server_id(r.u64(), "RetrievalResponse")
        shares = r.array(2)
        r.done()
        return cls(party, shares)


def _pack(a: np.ndarray, bits: int) -> memoryview:
    # the packed array's own buffer: Writer.bytes copies it once, in its join
    return np.ascontiguousarray(a, dtype="<u8" if bits == 64 else "<u4").reshape(-1).view(np.uint8).data


def _unpack(r: Reader, bits: int, shape, what: str) -> np.ndarray:
    size = int(np.prod(shape)) * bits // 8
    raw = r.blob(1 << 34)
    if len(raw) != size:
        raise ValueError(f"AggregationUpload: {what} has {len(raw)} bytes, its shape needs {size}")
    return np.frombuffer(raw, dtype="<u8" if bits == 64 else "<u4").astype(np.uint64).reshape(shape)


@dataclass
class AggregationUpload(_Msg):
    """User -> server b: CW^{n+1} per slot (m' x d) and a dense share, in the
    aggregation ring Z_2^bits (uint64 arrays of values < 2^bits in memory;
    on the wire each element takes bits / 8 bytes)."""
    party: int
    cws: np.ndarray
    dense: np.ndarray
    bits: int = 64

    def to_bytes(self) -> bytes:
        if self.bits not in (32, 64):
            raise ValueError(f"AggregationUpload: bits must be 32 or 64, got {self.bits}")
        c, d = np.asarray(self.cws), np.asarray(self.dense)
        if c.ndim != 2 or d.ndim != 1:
            raise ValueError("AggregationUpload: cws must be 2-D and dense 1-D")
        return (Writer(b"SEUP", UPLOAD_VERSION).u64(self.party).u64(self.bits).u64(c.shape[0]).u64(c.shape[1])
                .u64(d.size).blob(_pack(c, self.bits)).blob(_pack(d, self.bits)).bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregationUpload:
        r = Reader(data, b"SEUP", "AggregationUpload", UPLOAD_VERSION)
        party = _server_id(r.u64(), "AggregationUpload")
        bits = r.u64()
        if bits not in (32, 64):
            raise ValueError(f"AggregationUpload: bits must be 32 or 64, got {bits}")
        rows, cols, nd = r.u64(), r.u64(), r.u64()
        if max(rows, cols, nd) > 1 << 34 or rows * cols > 1 << 34:
            raise ValueError("AggregationUpload: implausible shape")
        cws = _unpack(r, bits, (rows, cols), "cws")
        dense = _unpack(r, bits, (nd,), "dense")
        r.done()
        return cls(party, cws, dense, bits)


@dataclass
class AggregateShare(_Msg):
    """Server 1 -> server 0: its share of sum_u g_Q (m x d) and of the dense sum."""
    party: int
    sparse: np.ndarray
    dense: np.ndarray

    def to_bytes(self) -> bytes:
        return Writer(b"SEAG").u64(self.party).array(self.sparse).array(self.dense).bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> AggregateShare:
        r = Reader(data, b"SEAG", "AggregateShare")
        party = _server_id(r.u64(), "AggregateShare")
        sparse, dense = r.array(2), r.array(1)
        r.done()
        return cls(party, sparse, dense)
