"""Versioned, validated byte layouts for protocol messages (no pickle).

A message is ``magic (4 bytes) | version u8 | reserved 3 bytes | fields``
(the version is per message type, ``VERSION`` unless its layout or meaning
changed);
arrays are written as ``ndim u8 | dims u64... | little-endian uint64 data``.
Parsing checks the magic, the version, that the reserved bytes are zero,
every length, and that nothing is left over; anything else raises ValueError
saying what was wrong.  So a message is accepted only in the form its
writer produces: parse then write gives back the same bytes.
"""
from __future__ import annotations

import builtins
import struct

import numpy as np

VERSION = 1


class Writer:
    def __init__(self, magic: bytes, version: int = VERSION):
        # builtins.bytes: in the class namespace `bytes` is the method below (the API reference resolves it there)
        self.parts: list[builtins.bytes | memoryview] = [magic, struct.pack("<B3x", version)]

    def u64(self, v: int):
        self.parts.append(struct.pack("<Q", v))
        return self

    def blob(self, b: builtins.bytes | memoryview):
        # len() of a memoryview counts items: a flat uint8 view (as the writers here pass) counts bytes
        self.parts.append(struct.pack("<Q", len(b)))
        self.parts.append(b)
        return self

    def array(self, a: np.ndarray):
        a = np.ascontiguousarray(a, dtype="<u8")
        self.parts.append(struct.pack("<B", a.ndim))
        self.parts.append(struct.pack(f"<{a.ndim}Q", *a.shape))
        # the array's own buffer (kept alive by the list): bytes() copies it once, in join
        self.parts.append(a.reshape(-1).view(np.uint8).data if a.size else b"")
        return self

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    def __init__(self, data, magic: bytes, what: str, version: int = VERSION):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{what}: expected bytes, got {type(data).__name__}")
        self.b = bytes(data)
        self.i = 0
        self.what = what
        head = self._take(8)
        if head[:4] != magic:
            raise ValueError(f"{what}: bad magic {head[:4]!r} (expected {magic!r})")
        if head[4] != version:
            raise ValueError(f"{what}: unsupported version {head[4]} (this library reads {version})")
        if head[5:8] != bytes(3):
            raise ValueError(f"{what}: reserved header bytes {head[5:8].hex()} are not zero")

    def _take(self, n):
        if n < 0 or self.i + n > len(self.b):
            raise ValueError(f"{self.what}: truncated message (needed {n} bytes at offset {self.i}, "
                             f"{len(self.b) - self.i} left)")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def u64(self) -> int:
        return struct.unpack("<Q", self._take(8))[0]

    def blob(self, max_len=1 << 34) -> bytes:
        n = self.u64()
        if n > max_len:
            raise ValueError(f"{self.what}: field length {n} is implausible")
        return self._take(n)

    def array(self, ndim: int, max_elems=1 << 34) -> np.ndarray:
        nd = self._take(1)[0]
        if nd != ndim:
            raise ValueError(f"{self.what}: expected a {ndim}-D array, got {nd}-D")
        shape = struct.unpack(f"<{nd}Q", self._take(8 * nd))
        count = 1
        for s in shape:
            count *= s
        # each dimension too: an empty array must not carry a dimension NumPy cannot hold
        if count > max_elems or max(shape, default=0) > max_elems:
            raise ValueError(f"{self.what}: array of shape {shape} is implausible")
        n = 8 * count
        if self.i + n > len(self.b):
            self._take(n)                       # the truncation error
        # one copy (a writable array of its own), straight from the message's buffer
        out = np.frombuffer(memoryview(self.b)[self.i:self.i + n], dtype="<u8").astype(np.uint64)
        self.i += n
        return out.reshape(shape)

    def flag(self) -> bool:
        """A u64 that must be 0 or 1 (anything else has no canonical form)."""
        v = self.u64()
        if v > 1:
            raise ValueError(f"{self.what}: flag field is {v}, not 0 or 1")
        return bool(v)

    def done(self):
        if self.i != len(self.b):
            raise ValueError(f"{self.what}: {len(self.b) - self.i} trailing bytes")


def canonical_int(text: str, what: str) -> int:
    """The int written as ``str(n)``; any other spelling ("007", "+7", " 7")
    is refused, so the text re-serialises to itself."""
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not an integer") from None
    if str(n) != text:
        raise ValueError(f"{what}: {text!r} is not in canonical form")
    return n


def check_increasing(values, what: str) -> None:
    """Refuse a list that is not strictly increasing (writers emit sorted,
    distinct entries: anything else would not re-serialise to itself)."""
    values = list(values)
    if any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError(f"{what}: entries must be strictly increasing")
