"""DPF keys and their generation.

One implementation carries every key type: a ``Params`` (params.py), the
party, and the bodies (csrc/include/secea.h's layout) -- one body for a
single key, a (count, body_size) uint8 array for a batch (what the batch
kernels consume).  The public types differ only in what they promise and
in their wire magic, so each keeps its own name:

================  ==========  ===========================================
type              magic       what it is
================  ==========  ===========================================
``Key``           ``SDPF``    one key: the length-1 case of ``KeyBatch``
``KeyBatch``      ``SDKB``    keys of one party and parameters
``PathKey``       ``SDPP``    one path key (SecEmb's PathGen: no final CW)
``PathKeyBatch``  ``SDPB``    path keys of one party and depth
================  ==========  ===========================================

Bytes: the 24-byte header of ``_layout`` followed by the body (single
keys), or by the count (u64) and the bodies (batches).  Parsing validates
every body (vectorised) and raises ValueError naming what is wrong.
"""
from __future__ import annotations

import numbers
import secrets
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import ClassVar, Union, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._native import ffi, lib, resolve_threads
from ._layout import (FLAG_EARLY, FLAG_VECTOR, MAGIC_KEY, MAGIC_KEY_BATCH, MAGIC_PATH, MAGIC_PATH_BATCH, MAX_LOG_DOMAIN, MAX_PAYLOAD, U64, Group, as_u64_ints,
                      check_alpha, check_below_modulus, check_beta, check_cw, check_early, check_log_domain,
                      check_status, group_of, pack_elems, parse, parse_batch, ptr, wptr)
from .params import Params

__all__ = ["Key", "KeyBatch", "PathKey", "PathKeyBatch", "gen", "gen_batch"]


class _Keys:
    """What every key type shares: parameters, party, the byte code."""

    __slots__ = ("params", "party")
    _MAGIC: ClassVar[bytes]
    params: Params
    party: int

    @property
    def log_domain(self) -> int:
        """Domain bits n: x in [0, 2^n)."""
        return self.params.log_domain

    @property
    def levels(self) -> int:
        """The tree depth (n - e)."""
        return self.params.levels

    @classmethod
    def _from_header(cls, party: int, n: int, flags: int, g: Group, d: int) -> Params:
        if cls._MAGIC in (MAGIC_PATH, MAGIC_PATH_BATCH):
            return Params.path(n)
        return Params.of(n, g, d, bool(flags & FLAG_VECTOR), bool(flags & FLAG_EARLY))


class _PayloadKeys(_Keys):
    """The parameters a key with a payload exposes."""

    __slots__ = ()

    @property
    def group(self) -> str | int:
        """'u64', 'u32' or the prime p."""
        return self.params.group

    @property
    def d(self) -> int:
        """Payload length (1 for scalars)."""
        return self.params.d

    @property
    def vector(self) -> bool:
        """True for vector payloads."""
        return self.params.vector

    @property
    def early(self) -> bool:
        """True if the tree terminates early."""
        return self.params.early

    @property
    def e(self) -> int:
        """Early-termination levels."""
        return self.params.e

    @property
    def ncw(self) -> int:
        """Elements of the final correction word."""
        return self.params.ncw

    @property
    def body_size(self) -> int:
        """Bytes of one key body."""
        return self.params.body_size


class _One(_Keys):
    """A single key: one immutable body."""

    __slots__ = ("_body",)
    _body: bytes

    def _init(self, params: Params, party: int, body: bytes | bytearray) -> None:
        self.params, self.party, self._body = params, party, bytes(body)

    @property
    def bodies(self) -> NDArray[np.uint8]:
        """The body as a read-only (1, body_size) uint8 array (the batch kernels' input)."""
        return np.frombuffer(self._body, dtype=np.uint8).reshape(1, -1)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, _One) and self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def to_bytes(self) -> bytes:
        """The versioned wire format (module docstring)."""
        return self.params.header(self._MAGIC, self.party) + self._body

    @classmethod
    def _parsed(cls, data: bytes) -> tuple[Params, int, bytes]:
        party, n, flags, g, d, body = parse(data, cls._MAGIC)
        return cls._from_header(party, n, flags, g, d), party, body


class _Many(_Keys):
    """A batch: a (count, body_size) uint8 array; indexing by an int gives the
    single type (``_ONE``), by a slice a batch."""

    __slots__ = ("_bodies",)
    _bodies: NDArray[np.uint8]
    _ONE: ClassVar[type[_One]]

    def _init(self, params: Params, party: int, bodies: NDArray[np.uint8]) -> None:
        self.params, self.party, self._bodies = params, party, bodies

    @property
    def bodies(self) -> NDArray[np.uint8]:
        """The (count, body_size) uint8 array of bodies."""
        return self._bodies

    def __len__(self) -> int:
        return self._bodies.shape[0]

    def _one(self, i: int) -> _One:
        one = self._ONE.__new__(self._ONE)
        one._init(self.params, self.party, self._bodies[i].tobytes())
        return one

    def _slice(self, i: slice) -> _Many:
        sub = type(self).__new__(type(self))
        sub._init(self.params, self.party, self._bodies[i])
        return sub

    def to_bytes(self) -> bytes:
        """One header (the batch magic), the count (u64) and the bodies."""
        return (self.params.header(self._MAGIC, self.party) + struct.pack("<Q", len(self))
                + self._bodies.tobytes())

    @classmethod
    def _parsed(cls, data: bytes) -> tuple[Params, int, NDArray[np.uint8]]:
        party, n, flags, g, d, bodies = parse_batch(data, cls._MAGIC)
        return cls._from_header(party, n, flags, g, d), party, bodies


class Key(_One, _PayloadKeys):
    """One party's DPF key (immutable): the length-1 case of ``KeyBatch``.
    ``to_bytes`` / ``from_bytes`` give the versioned wire format (magic
    ``SDPF``)."""

    __slots__ = ()
    _MAGIC = MAGIC_KEY

    def __init__(self, params: Params, party: int, body: bytes | bytearray) -> None:
        self._init(params, party, body)

    def __repr__(self) -> str:
        kind = "early" if self.early else "vector" if self.vector else "scalar"
        return (f"Key(party={self.party}, log_domain={self.log_domain}, group={self.group!r}, "
                f"d={self.d}, {kind}, {len(self.to_bytes())} bytes)")

    @classmethod
    def from_bytes(cls, data: bytes) -> Key:
        """Parse and validate; raises ValueError naming what is wrong."""
        return cls(*cls._parsed(data))

    def path_key(self) -> PathKey:
        """The path part s^(0) || t^(0) || CW^1..CW^n (depth-n keys only)."""
        if self.early:
            raise ValueError("early-termination keys have no depth-n path (use early=False)")
        return PathKey(Params.path(self.log_domain), self.party, self._body[:self.params.path_size])

    @property
    def correction_word(self) -> np.ndarray:
        """CW^{n+1} as uint64 group elements (ncw of them)."""
        dt = "<u4" if self.params.g.gid == 1 else "<u8"
        return np.frombuffer(self._body[self.params.path_size:], dtype=dt).astype(np.uint64)

    @classmethod
    def from_path(cls, path_key: PathKey, cw: NDArray[np.uint64], group: str | int = "u64",
                  vector: bool | None = None) -> Key:
        """A depth-n key from a path key and CW^{n+1} (from ``convert_gen``)."""
        if not isinstance(path_key, PathKey):
            raise TypeError(f"path_key must be a PathKey, got {type(path_key).__name__}")
        g = group_of(group)
        cw = check_cw(cw, g)
        if vector is None:
            vector = cw.size > 1
        elif not vector and cw.size != 1:
            raise ValueError(f"a scalar key needs a 1-element cw, got {cw.size}")
        return cls(Params.of(path_key.log_domain, g, int(cw.size), bool(vector), False), path_key.party,
                   path_key._body + pack_elems(cw, g))


class KeyBatch(_Many, _PayloadKeys):
    """``count`` keys of one party with the same parameters, stored as a
    (count, body_size) uint8 array (what the batch kernels consume);
    indexing gives ``Key`` objects (magic ``SDKB``)."""

    __slots__ = ()
    _MAGIC = MAGIC_KEY_BATCH
    _ONE = Key

    def __init__(self, params: Params, party: int, bodies: NDArray[np.uint8]) -> None:
        self._init(params, party, bodies)

    @overload
    def __getitem__(self, i: int) -> Key: ...
    @overload
    def __getitem__(self, i: slice) -> KeyBatch: ...

    def __getitem__(self, i: int | slice) -> Key | KeyBatch:
        return self._slice(i) if isinstance(i, slice) else self._one(i)   # type: ignore[return-value]

    def __iter__(self) -> Iterator[Key]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return (f"KeyBatch(count={len(self)}, party={self.party}, log_domain={self.log_domain}, "
                f"group={self.group!r}, d={self.d}, early={self.early})")

    @classmethod
    def from_bytes(cls, data: bytes) -> KeyBatch:
        """Parse and validate (every body, vectorised); ValueError naming what is wrong."""
        return cls(*cls._parsed(data))

    @classmethod
    def from_paths(cls, paths: PathKeyBatch, cws: NDArray[np.uint64], group: str | int = "u64",
                   vector: bool | None = None) -> KeyBatch:
        """Depth-n keys from a batch of path keys and their CW^{n+1}s
        (count, ncw) from ``convert_gen_batch``: ``Key.from_path`` for all at once."""
        if not isinstance(paths, PathKeyBatch):
            raise TypeError(f"paths must be a PathKeyBatch, got {type(paths).__name__}")
        g = group_of(group)
        cw = np.asarray(cws)
        if cw.ndim != 2 or cw.shape[0] != len(paths):
            raise ValueError(f"cws must have shape ({len(paths)}, ncw), got {cw.shape}")
        if cw.dtype != np.uint64:
            raise TypeError(f"cws must be a uint64 array, got dtype {cw.dtype}")
        check_below_modulus(cw, g, "cws", group)
        if vector is None:
            vector = cw.shape[1] > 1
        elif not vector and cw.shape[1] != 1:
            raise ValueError(f"scalar keys need 1-element cws, got {cw.shape[1]}")
        packed = cw.astype("<u4" if g.gid == 1 else "<u8").view(np.uint8).reshape(len(paths), -1)
        return cls(Params.of(paths.log_domain, g, int(cw.shape[1]), bool(vector), False), paths.party,
                   np.concatenate([paths._bodies, packed], axis=1))

    def path_keys(self) -> PathKeyBatch:
        """The path parts of depth-n keys (as ``Key.path_key`` for each)."""
        if self.early:
            raise ValueError("early-termination keys have no depth-n path (use early=False)")
        return PathKeyBatch(Params.path(self.log_domain), self.party,
                            self._bodies[:, :self.params.path_size].copy())

    @classmethod
    def from_keys(cls, keys: Iterable[Key]) -> KeyBatch:
        """One batch of keys of the same party and parameters."""
        keys = list(keys)
        if not keys:
            raise ValueError("need at least one key")
        for k in keys:
            if not isinstance(k, Key):
                raise TypeError(f"keys must be Key objects, got {type(k).__name__}")
        k0 = keys[0]
        for k in keys[1:]:
            if k.params != k0.params or k.party != k0.party:
                raise ValueError("all keys of a batch need the same party, log_domain, group, d and early flag")
        bodies = np.frombuffer(b"".join(k._body for k in keys), dtype=np.uint8).reshape(len(keys), -1).copy()
        return cls(k0.params, k0.party, bodies)


class PathKey(_One):
    """s^(0) || t^(0) || CW^(1..n): the path part of a depth-n key (SecEmb,
    Sec. 4.3.2), magic ``SDPP``."""

    __slots__ = ()
    _MAGIC = MAGIC_PATH

    def __init__(self, params: Params, party: int, body: bytes | bytearray) -> None:
        self._init(params, party, body)

    def __repr__(self) -> str:
        return f"PathKey(party={self.party}, log_domain={self.log_domain})"

    @classmethod
    def from_bytes(cls, data: bytes) -> PathKey:
        """Parse and validate; raises ValueError naming what is wrong."""
        return cls(*cls._parsed(data))


class PathKeyBatch(_Many):
    """``count`` path keys of one party and depth, as a (count, 32 + 16 n)
    uint8 array; indexing gives ``PathKey`` objects (magic ``SDPB``).  What
    ``path_gen_batch`` returns and the batch kernels consume without
    per-key objects."""

    __slots__ = ()
    _MAGIC = MAGIC_PATH_BATCH
    _ONE = PathKey

    def __init__(self, params: Params, party: int, bodies: NDArray[np.uint8]) -> None:
        self._init(params, party, bodies)

    @overload
    def __getitem__(self, i: int) -> PathKey: ...
    @overload
    def __getitem__(self, i: slice) -> PathKeyBatch: ...

    def __getitem__(self, i: int | slice) -> PathKey | PathKeyBatch:
        return self._slice(i) if isinstance(i, slice) else self._one(i)   # type: ignore[return-value]

    def __iter__(self) -> Iterator[PathKey]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"PathKeyBatch(count={len(self)}, party={self.party}, log_domain={self.log_domain})"

    @classmethod
    def from_bytes(cls, data: bytes) -> PathKeyBatch:
        """Parse and validate; raises ValueError naming what is wrong."""
        return cls(*cls._parsed(data))

    @classmethod
    def concat(cls, batches: Iterable[PathKeyBatch]) -> PathKeyBatch:
        """One batch of the keys of several (same party and depth)."""
        batches = list(batches)
        if not batches or not all(isinstance(b, PathKeyBatch) for b in batches):
            raise TypeError("concat needs one or more PathKeyBatch objects")
        b0 = batches[0]
        if any(b.party != b0.party or b.log_domain != b0.log_domain for b in batches):
            raise ValueError("concat: batches must share party and log_domain")
        return cls(b0.params, b0.party, np.concatenate([b._bodies for b in batches]))


# what the functions accept: a payload (an int or d ints), keys for evaluation, path keys
Beta = Union[int, Sequence[int], NDArray[np.uint64]]
Keys = Union[Key, KeyBatch, Sequence[Key]]
PathKeys = Union[PathKey, PathKeyBatch, Key, KeyBatch, Sequence[Union[PathKey, Key]]]


# ------------------------------------------------------------ generation

def _gen_raw(alphas, betas, params, rand, threads):
    """alphas: uint64 (count,), betas: uint64 (count, d); rand: 32 bytes per key."""
    count = alphas.shape[0]
    e, ncw = params.e, params.ncw
    if params.early:
        placed = np.zeros((count, ncw), dtype=np.uint64)
        placed[np.arange(count), (alphas & np.uint64(ncw - 1)).astype(np.intp)] = betas[:, 0]
        betas = placed
        alphas = alphas >> np.uint64(e)
    size = params.body_size
    k0 = np.empty((count, size), dtype=np.uint8)
    k1 = np.empty((count, size), dtype=np.uint8)
    betas = np.ascontiguousarray(betas, dtype=np.uint64)
    alphas = np.ascontiguousarray(alphas, dtype=np.uint64)
    st = lib.secea_dpf_gen(params.shape(), wptr(k0, "uint8_t[]"), wptr(k1, "uint8_t[]"), ffi.NULL,
                           ptr(alphas, "uint64_t[]"), ptr(betas, "uint64_t[]"), rand, count, threads)
    check_status(st, "gen")
    return KeyBatch(params, 0, k0), KeyBatch(params, 1, k1)


def _one_key(params: Params, alpha: int, beta: int, rand: bytes) -> tuple[Key, Key]:
    # both bodies in one zeroed C buffer, sliced into two bytes objects: one
    # allocation and no from_buffer wrappers (a third of the Python cost of
    # a one-key gen at depth 32)
    size = params.body_size
    buf = ffi.new("uint8_t[]", 2 * size)
    st = lib.secea_dpf_gen_one(params._kshape, buf, buf + size, alpha, beta, rand)
    if st:
        check_status(st, "gen")
    body = ffi.buffer(buf)
    one, other = Key.__new__(Key), Key.__new__(Key)
    one.params, one.party, one._body = params, 0, body[:size]
    other.params, other.party, other._body = params, 1, body[size:]
    return one, other


# log_domain -> the Params of a default u64 scalar key (gen's fast path)
_U64_SCALAR: dict[int, Params] = {}


def gen(alpha: int, beta: Beta, log_domain: int, group: str | int = "u64", early: bool | None = None, *,
        _rand: bytes | None = None) -> tuple[Key, Key]:
    """Keys (k0, k1) of f(alpha) = beta, f(x) = 0 elsewhere, x in [0, 2^log_domain).

    beta: an int (scalar payload) or a 1-D uint64 array / list of d ints (each
    reduced: < 2^64, < 2^32 or < p).  ``early``: None (default) terminates the
    tree early wherever the payload allows it (scalar u64/u32: fast
    full-domain evaluation, no depth-n path); False keeps the depth-n path
    (``Key.path_key``); True insists on early termination.

    >>> from secea_fast.dpf import eval_points
    >>> k0, k1 = gen(5, 42, 4)
    >>> [(int(eval_points(k0, x)) + int(eval_points(k1, x))) % 2**64 for x in (5, 6)]
    [42, 0]
    """
    if (type(alpha) is int and type(beta) is int and type(log_domain) is int and group == "u64"
            and early is None and _rand is None
            and 1 <= log_domain <= MAX_LOG_DOMAIN and 0 <= alpha < (1 << log_domain) and 0 <= beta < (1 << 64)):
        # plain ints over Z_2^64 with the default early flag, checked inline;
        # anything out of range takes the checked path below, whose error
        # names the argument
        params = _U64_SCALAR.get(log_domain)
        if params is None:
            params = _U64_SCALAR.setdefault(log_domain, Params.of(log_domain, U64, 1, False,
                                                                  check_early(None, U64, False)))
        return _one_key(params, alpha, beta, secrets.token_bytes(32))
    g = U64 if group == "u64" else group_of(group)
    n = check_log_domain(log_domain)
    alpha = check_alpha(alpha, n)
    b, vector = check_beta(beta, g)
    early = check_early(early, g, vector)
    rand = secrets.token_bytes(32) if _rand is None else bytes(_rand)
    if len(rand) != 32:
        raise ValueError("_rand must be 32 bytes")
    params = Params.of(n, g, int(b.size), vector, early)
    if g.gid != 2 and not vector:
        # one scalar key: the one-key kernel on bytearrays (beta placed at alpha mod 2^e there)
        return _one_key(params, alpha, int(b[0]), rand)
    b0, b1 = _gen_raw(np.array([alpha], dtype=np.uint64), b.reshape(1, -1), params, rand, 1)
    return b0[0], b1[0]


def gen_batch(alphas: ArrayLike, betas: int | ArrayLike, log_domain: int, group: str | int = "u64",
              early: bool | None = None, *, threads: int | None = None,
              _rand: bytes | None = None) -> tuple[KeyBatch, KeyBatch]:
    """Key batches (K0, K1) for many point functions at once.

    alphas: (count,) ints; betas: (count,) for scalar payloads, (count, d)
    for vector payloads, or one int for all keys; ``early`` as for ``gen``."""
    g = group_of(group)
    n = check_log_domain(log_domain)
    threads = resolve_threads(threads)
    a = as_u64_ints(alphas, "alphas", 1 << n)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-D array, got shape {a.shape}")
    count = a.size
    if isinstance(betas, numbers.Integral) and not isinstance(betas, bool):
        b, _ = check_beta(betas, g)
        b = np.full((count, 1), b[0], dtype=np.uint64)
        vector = False
    else:
        if isinstance(betas, np.ndarray) and betas.dtype != np.uint64:
            raise TypeError(f"betas must have dtype uint64, got {betas.dtype}")
        b = as_u64_ints(betas, "betas", g.modulus)
        if b.ndim == 1:
            vector = False
            b = b.reshape(-1, 1)
        elif b.ndim == 2:
            vector = True
            if not 1 <= b.shape[1] <= MAX_PAYLOAD:
                raise ValueError(f"betas rows must have 1..{MAX_PAYLOAD} elements, got {b.shape[1]}")
        else:
            raise ValueError(f"betas must be 1-D (scalars) or 2-D (vectors), got shape {b.shape}")
        if b.shape[0] != count:
            raise ValueError(f"betas has {b.shape[0]} rows for {count} alphas")
    early = check_early(early, g, vector)
    rand = secrets.token_bytes(32 * count) if _rand is None else bytes(_rand)
    if len(rand) != 32 * count:
        raise ValueError("_rand must be 32 bytes per key")
    return _gen_raw(a, b, Params.of(n, g, int(b.shape[1]), vector, early), rand, threads)
