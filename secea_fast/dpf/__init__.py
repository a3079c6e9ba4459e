"""Two-party distributed point functions (DPF) over Z_2^64, Z_2^32 and F_p.

The scheme is the tree DPF of Boyle, Gilboa and Ishai ("Function Secret
Sharing: Improvements and Extensions", CCS 2016, Fig. 1), written as in
SecEmb (Appendix F, Algorithms 4-7): ``path_gen`` / ``path_eval`` build and
walk the tree of seeds and control bits, ``convert_gen`` / ``convert_eval``
map the final seed to group elements with the last correction word CW^{n+1}.
``gen`` / ``eval_*`` are the composition.  For f(x) = beta if x == alpha else
0, ``eval(k0, x) + eval(k1, x) = f(x)`` in the group.

Construction (csrc/dpf/, bit-identical to the pure-Python twin
``secea_fast.dpf.reference``):

* Seeds are 128-bit blocks.  The PRG is G(s) = H_L(s) || H_R(s) with the
  correlation-robust fixed-key hash H_k(x) = AES_k(sigma(x)) xor sigma(x),
  sigma(lo, hi) = (hi, hi xor lo) (Guo, Katz, Wang, Yu, S&P 2020; Google
  distributed_point_functions' ``aes_128_fixed_key_hash``).  The keys k_L,
  k_R and k_V (conversion) are public constants, SHA-256(label)[:16] of
  ``reference.FIXED_KEY_LABELS``.  The control bit t of each child is bit 0 of
  its hash output and is cleared in the seed.
* Level i consumes bit n - i of alpha (most significant first).
* t_0^(0) is random and t_1^(0) = 1 - t_0^(0); seeds come from ``secrets``.
* Convert(s): block j of the stream H_V(s xor j); Z_2^64 takes 64-bit words,
  Z_2^32 32-bit words, F_p reduces each 128-bit block mod p.
* Conversion domains: ``convert_gen`` / ``convert_eval`` /
  ``convert_accumulate`` take a public ``domain`` D < 2^64 and use
  Convert_D(s), block j = H_V(s xor (j + D 2^64)).  Keys (``gen``, ``eval_*``)
  use D = 0.  A path that carries two payloads (SecEmb reuses the retrieval
  path for the aggregation) must convert them in different domains: the
  correction words are CW_D = (-1)^t1 (beta_D - Convert_D(s_0) +
  Convert_D(s_1)), and with one domain for both a server would subtract them
  and learn beta - beta'.  With different domains the masks are outputs of
  the correlation-robust hash on distinct inputs under the other server's
  secret seed s_{1-b}, hence independent, and each CW is uniform on its own.
  A ``PathSecret`` remembers the domains it has converted in and refuses a
  second payload in the same one.
* ``early=True`` (scalar Z_2^64 / Z_2^32 payloads) stops the tree e levels
  early (e = 3 for Z_2^64, 4 for Z_2^32): four Convert blocks then hold the
  2^e outputs of a leaf and CW^{n+1} is 512 bits.  A 2^n domain costs
  2^(n-e+1) tree blocks plus 2^(n-1) conversion blocks: 0.75 2^n for e = 3
  (e = 1: 1.5 2^n, 1.44 ms at n = 20; e = 2: 2^n, 1.09 ms; e = 3: 0.81 ms).  It is the
  default (``early=None``) wherever the payload allows it: scalar Z_2^64 /
  Z_2^32 payloads.  Vector and F_p payloads keep the depth-n tree (a leaf
  cannot pack several outputs of them), and so do keys made with
  ``early=False``, which SecEmb uses to reuse the path (``path_key``,
  ``Key.from_path``, ``path_gen``).

Deviations from the paper (documented, tested):

* Algorithm 6 as printed takes ``s <- s^L`` on the right branch; the correct
  step (BGI16) takes s^R, which this code does.
* G outputs 2 x 128 bits, not 2(lambda + 1): t is carved out of the seed, so
  seeds have 127 effective bits (the usual packing, as in Google's
  implementation).
* Convert for vector payloads and F_p is specified here (the paper leaves
  it abstract); F_p conversion has statistical distance <= p / 2^128 from
  uniform.
* Early termination (the default for scalar Z_2^64 / Z_2^32 payloads)
  shortens the tree; such keys have no depth-n path and cannot be split into
  path + CW.

Key bytes (``Key.to_bytes``): a 24-byte little-endian header
``magic "SDPF" | version u8 | party u8 | log_domain u8 | flags u8 (bit 0
early, bit 1 vector payload) | group id u8 (0 u64, 1 u32, 2 F_p) | 3 zero
bytes | d u32 | modulus u64 (0, 2^32 or p)`` followed by the key body of
csrc/include/secea.h.  Path keys use magic "SDPP" with group, d, modulus 0.

Length (about 1,350 lines, over the package's ~600 guideline): one flat
API whose key layout, generation, evaluation and SecEmb path/convert
sections share the private layout helpers (``_Group``, ``_KeyParams``,
``_parse``); the sections are marked, and splitting them would export those
helpers between modules.
"""
from __future__ import annotations

import numbers
import secrets
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Union, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_int, check_prime
from .._native import check_status, ffi, lib, resolve_threads
from .._secrets import SecretHolder

__all__ = ["Key", "KeyBatch", "PathKey", "PathKeyBatch", "PathSecret", "PathSecretBatch", "gen", "gen_batch", "eval_points", "eval_full",
           "eval_full_batch", "path_gen", "path_gen_batch", "convert_gen", "convert_gen_batch", "path_eval", "convert_eval", "path_eval_full",
           "convert_accumulate", "path_convert_accumulate", "path_xor_rows", "eval_full_dot", "split_states", "MAX_LOG_DOMAIN", "MAX_FULL_LOG_DOMAIN",
           "MAX_PAYLOAD"]

MAX_LOG_DOMAIN = 63          # keys and point evaluation
MAX_FULL_LOG_DOMAIN = 32     # full-domain evaluation (2^n outputs)
MAX_PAYLOAD = 1 << 20        # elements per payload vector
VERSION = 1
_MAGIC_KEY = b"SDPF"
_MAGIC_PATH = b"SDPP"
_MAGIC_KEY_BATCH = b"SDKB"
_MAGIC_PATH_BATCH = b"SDPB"
_HEADER = struct.Struct("<4sBBBBB3sIQ")
_FLAG_EARLY, _FLAG_VECTOR = 1, 2
_GROUP_NAMES = {0: "u64", 1: "u32"}


# ---------------------------------------------------------------- helpers

class _Group:
    __slots__ = ("gid", "p", "modulus", "name", "width")

    def __init__(self, gid, p):
        self.gid = gid
        self.p = p                                   # the C modulus argument
        self.modulus = (1 << 64) if gid == 0 else (1 << 32) if gid == 1 else p
        self.name = _GROUP_NAMES.get(gid, p)
        self.width = 4 if gid == 1 else 8

    @property
    def header_modulus(self):
        return 0 if self.gid == 0 else self.modulus


def _group(group) -> _Group:
    if isinstance(group, str):
        if group == "u64":
            return _Group(0, 0)
        if group == "u32":
            return _Group(1, 0)
        raise ValueError(f"group must be 'u64', 'u32' or a prime p < 2^64, got {group!r}")
    if isinstance(group, bool) or not isinstance(group, numbers.Integral):
        raise TypeError(f"group must be 'u64', 'u32' or an int prime, got {type(group).__name__}")
    return _Group(2, check_prime(int(group), "group"))


_U64 = _group("u64")


def _check_log_domain(n, limit=MAX_LOG_DOMAIN, what="log_domain"):
    n = check_int(n, what)
    if not 1 <= n <= limit:
        raise ValueError(f"{what} must be between 1 and {limit}, got {n}")
    return n


def _check_alpha(alpha, n):
    alpha = check_int(alpha, "alpha")
    if not 0 <= alpha < (1 << n):
        raise ValueError(f"alpha must satisfy 0 <= alpha < 2^{n}, got {alpha}")
    return alpha


def _early_e(g: _Group, n: int) -> int:
    return min(3 if g.gid == 0 else 4, n)


def _as_u64_ints(values, name, bound, shape_hint=None):
    """Integers (sequence or integer ndarray) -> uint64 ndarray, each < bound."""
    if isinstance(values, np.ndarray):
        if values.dtype == np.bool_ or values.dtype.kind not in "ui":
            raise TypeError(f"{name} must hold integers, got dtype {values.dtype}")
        if values.dtype.kind == "i" and values.size and int(values.min()) < 0:
            raise ValueError(f"{name} has a negative entry ({int(values.min())})")
        arr = values.astype(np.uint64, copy=False)
    else:
        try:
            obj = np.asarray(values, dtype=object)
        except Exception as exc:  # pragma: no cover - exotic inputs
            raise TypeError(f"{name} must be integers: {exc}") from None
        flat = obj.reshape(-1)
        for v in flat:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name} must hold ints, got {type(v).__name__}")
            if not 0 <= int(v) < (1 << 64):
                raise ValueError(f"{name} has an entry outside [0, 2^64): {int(v)}")
        arr = np.array([int(v) for v in flat], dtype=np.uint64).reshape(obj.shape)
    if arr.size and bound < (1 << 64) and int(arr.max()) >= bound:
        bad = int(np.argmax(arr >= np.uint64(bound)))
        raise ValueError(f"{name} has an entry >= {bound} at flat index {bad} (value {int(arr.flat[bad])})")
    return np.ascontiguousarray(arr)


def _check_beta(beta, g: _Group):
    """-> (uint64 array of d elements, vector flag)."""
    if isinstance(beta, numbers.Integral) and not isinstance(beta, bool):
        b = int(beta)
        if not 0 <= b < g.modulus:
            raise ValueError(f"beta must satisfy 0 <= beta < {g.modulus} for group {g.name!r}, got {b}")
        return np.array([b], dtype=np.uint64), False
    if isinstance(beta, bool):
        raise TypeError("beta must be an int or a 1-D array of ints, got bool")
    if isinstance(beta, np.ndarray):
        if beta.dtype != np.uint64:
            raise TypeError(f"beta must have dtype uint64, got {beta.dtype}")
        if beta.ndim != 1:
            raise ValueError(f"beta must be a scalar or 1-D, got shape {beta.shape}")
    elif not isinstance(beta, (list, tuple)):
        raise TypeError(f"beta must be an int, a list of ints or a uint64 ndarray, got {type(beta).__name__}")
    arr = _as_u64_ints(beta, "beta", g.modulus)
    if arr.ndim != 1:
        raise ValueError(f"beta must be a scalar or 1-D, got shape {arr.shape}")
    if not 1 <= arr.size <= MAX_PAYLOAD:
        raise ValueError(f"beta must have between 1 and {MAX_PAYLOAD} elements, got {arr.size}")
    return arr, True


def _body_size(levels, ncw, width):
    return 32 + 16 * levels + ncw * width


def _ptr(arr, ctype="uint8_t[]"):
    return ffi.from_buffer(ctype, arr)


def _wptr(arr, ctype="uint64_t[]"):
    return ffi.from_buffer(ctype, arr, require_writable=True)


def _check_status(status, what):
    check_status(status, f"dpf {what}", "key layout outside the kernel's limits")


def _check_out(out, shape):
    if out is None:
        return np.empty(shape, dtype=np.uint64)
    if not isinstance(out, np.ndarray) or out.dtype != np.uint64:
        raise TypeError("out must be a numpy.ndarray of dtype uint64")
    if out.shape != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writable")
    return out


# ------------------------------------------------------------------ keys

class _KeyParams:
    """Parameters shared by Key and KeyBatch."""
    __slots__ = ()
    party: int
    log_domain: int
    _g: _Group
    d: int
    vector: bool
    early: bool

    @property
    def group(self) -> str | int:
        """'u64', 'u32' or the prime p."""
        return self._g.name

    @property
    def e(self) -> int:
        return _early_e(self._g, self.log_domain) if self.early else 0

    @property
    def levels(self) -> int:
        return self.log_domain - self.e

    @property
    def ncw(self) -> int:
        return (1 << self.e) if self.early else self.d

    @property
    def body_size(self) -> int:
        return _body_size(self.levels, self.ncw, self._g.width)

    def _out_tail(self):
        return (self.d,) if self.vector else ()

    def _same_params(self, other):
        return (self.log_domain == other.log_domain and self._g.gid == other._g.gid
                and self._g.p == other._g.p and self.d == other.d and self.vector == other.vector
                and self.early == other.early)


class Key(_KeyParams):
    """One party's DPF key (immutable).  ``to_bytes`` / ``from_bytes`` give
    the versioned wire format described in the module docstring."""

    __slots__ = ("party", "log_domain", "_g", "d", "vector", "early", "_body")

    def __init__(self, party: int, log_domain: int, g: _Group, d: int, vector: bool, early: bool,
                 body: bytes | bytearray) -> None:
        self.party, self.log_domain, self._g = party, log_domain, g
        self.d, self.vector, self.early, self._body = d, vector, early, bytes(body)

    def __repr__(self):
        kind = "early" if self.early else "vector" if self.vector else "scalar"
        return (f"Key(party={self.party}, log_domain={self.log_domain}, group={self.group!r}, "
                f"d={self.d}, {kind}, {len(self.to_bytes())} bytes)")

    def __eq__(self, other):
        return isinstance(other, Key) and self.to_bytes() == other.to_bytes()

    def __hash__(self):
        return hash(self.to_bytes())

    def to_bytes(self) -> bytes:
        flags = (_FLAG_EARLY if self.early else 0) | (_FLAG_VECTOR if self.vector else 0)
        head = _HEADER.pack(_MAGIC_KEY, VERSION, self.party, self.log_domain, flags, self._g.gid,
                            b"\0\0\0", self.d, self._g.header_modulus)
        return head + self._body

    @classmethod
    def from_bytes(cls, data: bytes) -> Key:
        """Parse and validate; raises ValueError naming what is wrong."""
        party, n, flags, g, d, body = _parse(data, _MAGIC_KEY)
        return cls(party, n, g, d, bool(flags & _FLAG_VECTOR), bool(flags & _FLAG_EARLY), body)

    def path_key(self) -> "PathKey":
        """The path part s^(0) || t^(0) || CW^1..CW^n (default keys only)."""
        if self.early:
            raise ValueError("early-termination keys have no depth-n path (use early=False)")
        return PathKey(self.party, self.log_domain, self._body[:32 + 16 * self.log_domain])

    @property
    def correction_word(self) -> np.ndarray:
        """CW^{n+1} as uint64 group elements (ncw of them)."""
        off = 32 + 16 * self.levels
        dt = "<u4" if self._g.gid == 1 else "<u8"
        return np.frombuffer(self._body[off:], dtype=dt).astype(np.uint64)

    @classmethod
    def from_path(cls, path_key: PathKey, cw: NDArray[np.uint64], group: str | int = "u64",
                  vector: bool | None = None) -> Key:
        """A default key from a path key and CW^{n+1} (from ``convert_gen``)."""
        if not isinstance(path_key, PathKey):
            raise TypeError(f"path_key must be a PathKey, got {type(path_key).__name__}")
        g = _group(group)
        cw = _check_cw(cw, g)
        if vector is None:
            vector = cw.size > 1
        elif not vector and cw.size != 1:
            raise ValueError(f"a scalar key needs a 1-element cw, got {cw.size}")
        return cls(path_key.party, path_key.log_domain, g, int(cw.size), bool(vector), False,
                   path_key._body + _pack_elems(cw, g))


class KeyBatch(_KeyParams):
    """``count`` keys of one party with the same parameters, stored as a
    (count, body_size) uint8 array (what the batch kernels consume)."""

    __slots__ = ("party", "log_domain", "_g", "d", "vector", "early", "_bodies")

    def __init__(self, party: int, log_domain: int, g: _Group, d: int, vector: bool, early: bool,
                 bodies: NDArray[np.uint8]) -> None:
        self.party, self.log_domain, self._g = party, log_domain, g
        self.d, self.vector, self.early = d, vector, early
        self._bodies = bodies

    def __len__(self):
        return self._bodies.shape[0]

    @overload
    def __getitem__(self, i: int) -> Key: ...
    @overload
    def __getitem__(self, i: slice) -> KeyBatch: ...

    def __getitem__(self, i: int | slice) -> Key | KeyBatch:
        if isinstance(i, slice):
            return KeyBatch(self.party, self.log_domain, self._g, self.d, self.vector, self.early,
                            self._bodies[i])
        return Key(self.party, self.log_domain, self._g, self.d, self.vector, self.early,
                   self._bodies[i].tobytes())

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return (f"KeyBatch(count={len(self)}, party={self.party}, log_domain={self.log_domain}, "
                f"group={self.group!r}, d={self.d}, early={self.early})")

    def to_bytes(self) -> bytes:
        """One header (as a Key's, magic ``SDKB``), the count (u64) and the bodies."""
        flags = (_FLAG_EARLY if self.early else 0) | (_FLAG_VECTOR if self.vector else 0)
        return (_HEADER.pack(_MAGIC_KEY_BATCH, VERSION, self.party, self.log_domain, flags, self._g.gid,
                             b"\0\0\0", self.d, self._g.header_modulus)
                + struct.pack("<Q", len(self)) + self._bodies.tobytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> KeyBatch:
        """Parse and validate (every body, vectorised); ValueError naming what is wrong."""
        party, n, flags, g, d, bodies = _parse_batch(data, _MAGIC_KEY_BATCH)
        return cls(party, n, g, d, bool(flags & _FLAG_VECTOR), bool(flags & _FLAG_EARLY), bodies)

    @classmethod
    def from_paths(cls, paths: PathKeyBatch, cws: NDArray[np.uint64], group: str | int = "u64",
                   vector: bool | None = None) -> KeyBatch:
        """Default keys from a batch of path keys and their CW^{n+1}s
        (count, ncw) from ``convert_gen_batch``: ``Key.from_path`` for all at once."""
        if not isinstance(paths, PathKeyBatch):
            raise TypeError(f"paths must be a PathKeyBatch, got {type(paths).__name__}")
        g = _group(group)
        cw = np.asarray(cws)
        if cw.ndim != 2 or cw.shape[0] != len(paths):
            raise ValueError(f"cws must have shape ({len(paths)}, ncw), got {cw.shape}")
        if cw.dtype != np.uint64:
            raise TypeError(f"cws must be a uint64 array, got dtype {cw.dtype}")
        _check_below_modulus(cw, g, "cws", group)
        if vector is None:
            vector = cw.shape[1] > 1
        elif not vector and cw.shape[1] != 1:
            raise ValueError(f"scalar keys need 1-element cws, got {cw.shape[1]}")
        packed = cw.astype("<u4" if g.gid == 1 else "<u8").view(np.uint8).reshape(len(paths), -1)
        return cls(paths.party, paths.log_domain, g, int(cw.shape[1]), bool(vector), False,
                   np.concatenate([paths._bodies, packed], axis=1))

    def path_keys(self) -> "PathKeyBatch":
        """The path parts of default keys (as ``Key.path_key`` for each)."""
        if self.early:
            raise ValueError("early-termination keys have no depth-n path (use early=False)")
        return PathKeyBatch(self.party, self.log_domain, self._bodies[:, :32 + 16 * self.log_domain].copy())

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
            if not k._same_params(k0) or k.party != k0.party:
                raise ValueError("all keys of a batch need the same party, log_domain, group, d and early flag")
        bodies = np.frombuffer(b"".join(k._body for k in keys), dtype=np.uint8).reshape(len(keys), -1).copy()
        return cls(k0.party, k0.log_domain, k0._g, k0.d, k0.vector, k0.early, bodies)


class PathKey:
    """s^(0) || t^(0) || CW^(1..n): the path part of a default key (Sec. 4.3.2)."""

    __slots__ = ("party", "log_domain", "_body")

    def __init__(self, party: int, log_domain: int, body: bytes | bytearray) -> None:
        self.party, self.log_domain, self._body = party, log_domain, bytes(body)

    @property
    def levels(self) -> int:
        """The tree depth (``log_domain``)."""
        return self.log_domain

    def __repr__(self):
        return f"PathKey(party={self.party}, log_domain={self.log_domain})"

    def __eq__(self, other):
        return isinstance(other, PathKey) and self.to_bytes() == other.to_bytes()

    def __hash__(self):
        return hash(self.to_bytes())

    def to_bytes(self) -> bytes:
        return _HEADER.pack(_MAGIC_PATH, VERSION, self.party, self.log_domain, 0, 0, b"\0\0\0", 0, 0) + self._body

    @classmethod
    def from_bytes(cls, data: bytes) -> PathKey:
        party, n, _, _, _, body = _parse(data, _MAGIC_PATH)
        return cls(party, n, body)


class PathKeyBatch:
    """``count`` path keys of one party and depth, as a (count, 32 + 16 n)
    uint8 array; indexing gives ``PathKey`` objects.  What ``path_gen_batch``
    returns and the batch kernels consume without per-key objects."""

    __slots__ = ("party", "log_domain", "_bodies")

    def __init__(self, party: int, log_domain: int, bodies: NDArray[np.uint8]) -> None:
        self.party, self.log_domain, self._bodies = party, log_domain, bodies

    @property
    def levels(self) -> int:
        """The tree depth (``log_domain``)."""
        return self.log_domain

    def __len__(self):
        return self._bodies.shape[0]

    @overload
    def __getitem__(self, i: int) -> PathKey: ...
    @overload
    def __getitem__(self, i: slice) -> PathKeyBatch: ...

    def __getitem__(self, i: int | slice) -> PathKey | PathKeyBatch:
        if isinstance(i, slice):
            return PathKeyBatch(self.party, self.log_domain, self._bodies[i])
        return PathKey(self.party, self.log_domain, self._bodies[i].tobytes())

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"PathKeyBatch(count={len(self)}, party={self.party}, log_domain={self.log_domain})"

    def to_bytes(self) -> bytes:
        """A path key header (magic ``SDPB``), the count (u64) and the bodies."""
        return (_HEADER.pack(_MAGIC_PATH_BATCH, VERSION, self.party, self.log_domain, 0, 0, b"\0\0\0", 0, 0)
                + struct.pack("<Q", len(self)) + self._bodies.tobytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> PathKeyBatch:
        party, n, _, _, _, bodies = _parse_batch(data, _MAGIC_PATH_BATCH)
        return cls(party, n, bodies)

    @classmethod
    def concat(cls, batches: Iterable[PathKeyBatch]) -> PathKeyBatch:
        """One batch of the keys of several (same party and depth)."""
        batches = list(batches)
        if not batches or not all(isinstance(b, PathKeyBatch) for b in batches):
            raise TypeError("concat needs one or more PathKeyBatch objects")
        b0 = batches[0]
        if any(b.party != b0.party or b.log_domain != b0.log_domain for b in batches):
            raise ValueError("concat: batches must share party and log_domain")
        return cls(b0.party, b0.log_domain, np.concatenate([b._bodies for b in batches]))


class PathSecret(SecretHolder):
    """The client's PathGen output (t_1^(n), s_0^(n), s_1^(n)), input of
    ``convert_gen``.  Secret: not printable, not picklable."""

    __slots__ = ("log_domain", "_finals", "_domains")

    def __init__(self, log_domain: int, finals: bytes) -> None:
        self.log_domain, self._finals = log_domain, bytes(finals)
        self._domains: set[int] = set()      # conversion domains already used on this path

    def __repr__(self):
        return f"PathSecret(log_domain={self.log_domain})"

    def export_secret(self) -> bytes:
        """The secret seeds and the conversion domains used so far as bytes
        (``SEPS`` | version | 3 zero bytes | log_domain u64 | 32 seed bytes |
        count u64 | domains u64...), for a party saving its own state between
        the processes of one deployment (never sent to anyone).  The domain
        record travels with the seeds, so a restored path still refuses a
        second payload in a used domain."""
        doms = sorted(self._domains)
        return (struct.pack("<4sB3xQ", b"SEPS", VERSION, self.log_domain) + self._finals
                + struct.pack(f"<Q{len(doms)}Q", len(doms), *doms))

    @classmethod
    def import_secret(cls, data: bytes) -> PathSecret:
        """The path secret written by :meth:`export_secret` (ValueError on
        anything else)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"PathSecret bytes must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) < 56:
            raise ValueError("PathSecret: truncated")
        magic, version, n = struct.unpack_from("<4sB3xQ", data)
        if magic != b"SEPS" or version != VERSION or data[5:8] != bytes(3):
            raise ValueError("PathSecret: bad header")
        n = _check_log_domain(n)
        (count,) = struct.unpack_from("<Q", data, 48)
        if len(data) != 56 + 8 * count:
            raise ValueError("PathSecret: length does not match its domain count")
        doms = struct.unpack_from(f"<{count}Q", data, 56)
        if any(a >= b for a, b in zip(doms, doms[1:])):
            raise ValueError("PathSecret: domains must be strictly increasing")
        obj = cls(n, data[16:48])
        obj._domains = set(doms)
        return obj


class PathSecretBatch(SecretHolder):
    """``count`` path secrets (PathGen outputs) as one (count, 32) array;
    indexing gives ``PathSecret`` objects sharing the batch's record of used
    conversion domains (a payload converted through one of them claims the
    domain for the batch: the paths of a batch carry their payloads
    together).  Secret: not printable, not picklable."""

    __slots__ = ("log_domain", "_finals", "_domains")

    def __init__(self, log_domain: int, finals: NDArray[np.uint8]) -> None:
        self.log_domain, self._finals = log_domain, finals
        self._domains: set[int] = set()

    def __len__(self):
        return self._finals.shape[0]

    @overload
    def __getitem__(self, i: int) -> PathSecret: ...
    @overload
    def __getitem__(self, i: slice) -> PathSecretBatch: ...

    def __getitem__(self, i: int | slice) -> PathSecret | PathSecretBatch:
        if isinstance(i, slice):
            sub = PathSecretBatch(self.log_domain, self._finals[i])
            sub._domains = self._domains
            return sub
        x = PathSecret(self.log_domain, self._finals[i].tobytes())
        x._domains = self._domains
        return x

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"PathSecretBatch(count={len(self)}, log_domain={self.log_domain})"

    def export_secret(self) -> bytes:
        """As ``PathSecret.export_secret`` for the batch (magic ``SEPB``, then
        log_domain u64, count u64, 32 count seed bytes, domain count u64,
        domains u64...): a party's own saved state, never sent."""
        doms = sorted(self._domains)
        return (struct.pack("<4sB3xQQ", b"SEPB", VERSION, self.log_domain, len(self)) + self._finals.tobytes()
                + struct.pack(f"<Q{len(doms)}Q", len(doms), *doms))

    @classmethod
    def import_secret(cls, data: bytes) -> PathSecretBatch:
        """The batch written by :meth:`export_secret` (ValueError on anything else)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"PathSecretBatch bytes must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) < 32:
            raise ValueError("PathSecretBatch: truncated")
        magic, version, n, count = struct.unpack_from("<4sB3xQQ", data)
        if magic != b"SEPB" or version != VERSION or data[5:8] != bytes(3):
            raise ValueError("PathSecretBatch: bad header")
        n = _check_log_domain(n)
        end = 24 + 32 * count
        if count < 1 or len(data) < end + 8:
            raise ValueError("PathSecretBatch: truncated")
        (nd,) = struct.unpack_from("<Q", data, end)
        if len(data) != end + 8 + 8 * nd:
            raise ValueError("PathSecretBatch: length does not match its counts")
        doms = struct.unpack_from(f"<{nd}Q", data, end + 8)
        if any(a >= b for a, b in zip(doms, doms[1:])):
            raise ValueError("PathSecretBatch: domains must be strictly increasing")
        obj = cls(n, np.frombuffer(data[24:end], dtype=np.uint8).reshape(count, 32).copy())
        obj._domains = set(doms)
        return obj


def _parse_header(data, magic, what):
    """Validate a key / path / batch header -> (party, n, flags, g, d, levels, ncw)."""
    mg, ver, party, n, flags, gid, rsv, d, mod = _HEADER.unpack_from(data)
    if mg != magic:
        raise ValueError(f"not a {what}: magic {mg!r}, expected {magic!r}")
    if ver != VERSION:
        raise ValueError(f"unsupported {what} version {ver} (this build reads version {VERSION})")
    if party not in (0, 1):
        raise ValueError(f"party must be 0 or 1, got {party}")
    if not 1 <= n <= MAX_LOG_DOMAIN:
        raise ValueError(f"log_domain must be between 1 and {MAX_LOG_DOMAIN}, got {n}")
    if rsv != b"\0\0\0":
        raise ValueError("reserved header bytes must be zero")
    if magic in (_MAGIC_PATH, _MAGIC_PATH_BATCH):
        if flags or gid or d or mod:
            raise ValueError("path key header: flags, group, d and modulus must be zero")
        return party, n, 0, _Group(0, 0), 0, n, 0
    if flags & ~(_FLAG_EARLY | _FLAG_VECTOR):
        raise ValueError(f"unknown flag bits 0x{flags:02x}")
    if gid == 0:
        if mod != 0:
            raise ValueError(f"group u64 needs modulus field 0, got {mod}")
        g = _Group(0, 0)
    elif gid == 1:
        if mod != 1 << 32:
            raise ValueError(f"group u32 needs modulus field 2^32, got {mod}")
        g = _Group(1, 0)
    elif gid == 2:
        try:
            g = _Group(2, check_prime(mod, "modulus"))
        except ValueError as exc:
            raise ValueError(f"group F_p: {exc}") from None
    else:
        raise ValueError(f"unknown group id {gid}")
    if not 1 <= d <= MAX_PAYLOAD:
        raise ValueError(f"payload length d must be between 1 and {MAX_PAYLOAD}, got {d}")
    if not flags & _FLAG_VECTOR and d != 1:
        raise ValueError(f"a scalar key must have d = 1, got {d}")
    if flags & _FLAG_EARLY:
        if flags & _FLAG_VECTOR or g.gid == 2:
            raise ValueError("early termination is only defined for scalar u64 / u32 keys")
        e = _early_e(g, n)
        return party, n, flags, g, d, n - e, 1 << e
    return party, n, flags, g, d, n, d


def _check_bodies(bodies: np.ndarray, levels: int, g: _Group, is_key: bool):
    """Vectorised body checks on a (count, size) uint8 array: correction seeds
    with bit 0 clear, no t_CW mask bits beyond the last level, F_p elements < p."""
    if levels:
        bad = np.nonzero(bodies[:, 16:16 + 16 * levels:16] & 1)[1]
        if bad.size:
            raise ValueError(f"correction seed of level {int(bad.min()) + 1} has bit 0 set (must be zero)")
    off = 16 + 16 * levels
    unused = np.uint64(~((1 << levels) - 1) & ((1 << 64) - 1))
    masks = np.ascontiguousarray(bodies[:, off:off + 16]).view("<u8")
    for name, col in (("t_CW^L", 0), ("t_CW^R", 1)):
        if (masks[:, col] & unused).any():
            raise ValueError(f"{name} mask has bits set beyond level {levels}")
    if is_key and g.gid == 2:
        cw = np.ascontiguousarray(bodies[:, 32 + 16 * levels:]).view("<u8")
        if cw.size and int(cw.max()) >= g.p:
            raise ValueError(f"final correction word has an element >= p = {g.p}")


def _parse(data, magic):
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"key bytes must be bytes, got {type(data).__name__}")
    data = bytes(data)
    what = "key" if magic == _MAGIC_KEY else "path key"
    if len(data) < _HEADER.size:
        raise ValueError(f"{what} truncated: {len(data)} bytes, the header alone has {_HEADER.size}")
    party, n, flags, g, d, levels, ncw = _parse_header(data, magic, what)
    body = data[_HEADER.size:]
    size = _body_size(levels, ncw, g.width) if magic == _MAGIC_KEY else 32 + 16 * levels
    if len(body) != size:
        kind = "truncated" if len(body) < size else "padded"
        raise ValueError(f"{what} {kind}: body has {len(body)} bytes, expected {size} "
                         f"(log_domain {n}, {levels} levels, {ncw} correction elements)")
    _check_bodies(np.frombuffer(body, dtype=np.uint8).reshape(1, -1), levels, g, magic == _MAGIC_KEY)
    return party, n, flags, g, d, body


def _parse_batch(data, magic):
    """A batch: header | count u64 | count bodies -> (party, n, flags, g, d, bodies (count, size))."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"batch bytes must be bytes, got {type(data).__name__}")
    data = bytes(data)
    what = "key batch" if magic == _MAGIC_KEY_BATCH else "path key batch"
    if len(data) < _HEADER.size + 8:
        raise ValueError(f"{what} truncated: {len(data)} bytes")
    party, n, flags, g, d, levels, ncw = _parse_header(data, magic, what)
    (count,) = struct.unpack_from("<Q", data, _HEADER.size)
    size = _body_size(levels, ncw, g.width) if magic == _MAGIC_KEY_BATCH else 32 + 16 * levels
    body = data[_HEADER.size + 8:]
    if count < 1 or len(body) != count * size:
        raise ValueError(f"{what}: {len(body)} body bytes do not hold {count} bodies of {size} bytes")
    bodies = np.frombuffer(body, dtype=np.uint8).reshape(count, size).copy()
    _check_bodies(bodies, levels, g, magic == _MAGIC_KEY_BATCH)
    return party, n, flags, g, d, bodies


def _pack_elems(vals: np.ndarray, g: _Group) -> bytes:
    return vals.astype("<u4" if g.gid == 1 else "<u8").tobytes()


def _check_below_modulus(arr: np.ndarray, g: _Group, name: str, group):
    """uint64 elements of Z_2^32 / F_p must be below the modulus (Z_2^64: any)."""
    if g.gid != 0 and arr.size and int(arr.max()) >= g.modulus:
        raise ValueError(f"{name} must be < {g.modulus} for group {group!r}")


def _check_cw(cw, g: _Group) -> np.ndarray:
    if isinstance(cw, (bytes, bytearray, memoryview)):
        raise TypeError("cw must be an array of group elements (uint64), not bytes")
    if isinstance(cw, np.ndarray) and cw.dtype != np.uint64:
        raise TypeError(f"cw must have dtype uint64, got {cw.dtype}")
    arr = _as_u64_ints(cw, "cw", g.modulus)
    if arr.ndim != 1 or not 1 <= arr.size <= MAX_PAYLOAD:
        raise ValueError(f"cw must be 1-D with 1..{MAX_PAYLOAD} elements, got shape {arr.shape}")
    return arr


# what the functions below accept: a payload (an int or d ints), keys for evaluation, path keys
Beta = Union[int, Sequence[int], NDArray[np.uint64]]
Keys = Union[Key, KeyBatch, Sequence[Key]]
PathKeys = Union[PathKey, PathKeyBatch, Key, KeyBatch, Sequence[Union[PathKey, Key]]]


# ------------------------------------------------------------ generation

def _gen_raw(alphas, betas, n, g, early, vector, d, rand, threads):
    """alphas: uint64 (count,), betas: uint64 (count, d); rand: 32 bytes per key."""
    count = alphas.shape[0]
    e = _early_e(g, n) if early else 0
    levels = n - e
    ncw = (1 << e) if early else d
    if early:
        placed = np.zeros((count, ncw), dtype=np.uint64)
        placed[np.arange(count), (alphas & np.uint64(ncw - 1)).astype(np.intp)] = betas[:, 0]
        betas = placed
        alphas = alphas >> np.uint64(e)
    size = _body_size(levels, ncw, g.width)
    k0 = np.empty((count, size), dtype=np.uint8)
    k1 = np.empty((count, size), dtype=np.uint8)
    betas = np.ascontiguousarray(betas, dtype=np.uint64)
    alphas = np.ascontiguousarray(alphas, dtype=np.uint64)
    st = lib.secea_dpf_gen(_wptr(k0, "uint8_t[]"), _wptr(k1, "uint8_t[]"), ffi.NULL, _ptr(alphas, "uint64_t[]"),
                           _ptr(betas, "uint64_t[]"), rand, count, levels, g.gid, g.p, ncw, threads)
    _check_status(st, "gen")
    return (KeyBatch(0, n, g, d, vector, early, k0), KeyBatch(1, n, g, d, vector, early, k1))


def _check_early(early, g, vector) -> bool:
    """early=None (the default): early termination wherever the payload
    allows it, i.e. scalar payloads over Z_2^64 / Z_2^32; vector and F_p
    payloads have no packed leaf, so they keep the full-depth tree."""
    if early is None:
        return g.gid != 2 and not vector
    if not isinstance(early, bool):
        raise TypeError(f"early must be a bool or None, got {type(early).__name__}")
    if early and (g.gid == 2 or vector):
        raise ValueError("early=True needs a scalar beta in group 'u64' or 'u32'")
    return early


def gen(alpha: int, beta: Beta, log_domain: int, group: str | int = "u64", early: bool | None = None, *,
        _rand: bytes | None = None) -> tuple[Key, Key]:
    """Keys (k0, k1) of f(alpha) = beta, f(x) = 0 elsewhere, x in [0, 2^log_domain).

    beta: an int (scalar payload) or a 1-D uint64 array / list of d ints (each
    reduced: < 2^64, < 2^32 or < p).  ``early``: None (default) terminates the
    tree early wherever the payload allows it (scalar u64/u32: fast
    full-domain evaluation, no depth-n path); False keeps the depth-n path
    (``Key.path_key``); True insists on early termination.

    >>> k0, k1 = gen(5, 42, 4)
    >>> [(int(eval_points(k0, x)) + int(eval_points(k1, x))) % 2**64 for x in (5, 6)]
    [42, 0]
    """
    g = _U64 if group == "u64" else _group(group)
    n = _check_log_domain(log_domain)
    alpha = _check_alpha(alpha, n)
    b, vector = _check_beta(beta, g)
    early = _check_early(early, g, vector)
    rand = secrets.token_bytes(32) if _rand is None else bytes(_rand)
    if len(rand) != 32:
        raise ValueError("_rand must be 32 bytes")
    if g.gid == 0 and not vector:
        # one scalar key: the kernel straight on bytearrays (a single call then costs
        # what the batched path costs per key plus the argument checks)
        e = _early_e(g, n) if early else 0
        ncw = 1 << e
        betas = ffi.new(f"uint64_t[{ncw}]")
        betas[alpha & (ncw - 1)] = int(b[0])      # an early leaf holds beta at alpha mod 2^e
        size = _body_size(n - e, ncw, g.width)
        k0, k1 = bytearray(size), bytearray(size)
        st = lib.secea_dpf_gen(ffi.from_buffer(k0), ffi.from_buffer(k1), ffi.NULL,
                               ffi.new("uint64_t[1]", [alpha >> e]), betas, rand, 1, n - e, 0, 0, ncw, 1)
        _check_status(st, "gen")
        return Key(0, n, g, 1, False, early, k0), Key(1, n, g, 1, False, early, k1)
    b0, b1 = _gen_raw(np.array([alpha], dtype=np.uint64), b.reshape(1, -1), n, g, early, vector, b.size, rand, 1)
    return b0[0], b1[0]


def gen_batch(alphas: ArrayLike, betas: int | ArrayLike, log_domain: int, group: str | int = "u64",
              early: bool | None = None, *, threads: int | None = None,
              _rand: bytes | None = None) -> tuple[KeyBatch, KeyBatch]:
    """Key batches (K0, K1) for many point functions at once.

    alphas: (count,) ints; betas: (count,) for scalar payloads, (count, d)
    for vector payloads, or one int for all keys; ``early`` as for ``gen``."""
    g = _group(group)
    n = _check_log_domain(log_domain)
    threads = resolve_threads(threads)
    a = _as_u64_ints(alphas, "alphas", 1 << n)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-D array, got shape {a.shape}")
    count = a.size
    if isinstance(betas, numbers.Integral) and not isinstance(betas, bool):
        b, _ = _check_beta(betas, g)
        b = np.full((count, 1), b[0], dtype=np.uint64)
        vector = False
    else:
        if isinstance(betas, np.ndarray) and betas.dtype != np.uint64:
            raise TypeError(f"betas must have dtype uint64, got {betas.dtype}")
        b = _as_u64_ints(betas, "betas", g.modulus)
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
    early = _check_early(early, g, vector)
    rand = secrets.token_bytes(32 * count) if _rand is None else bytes(_rand)
    if len(rand) != 32 * count:
        raise ValueError("_rand must be 32 bytes per key")
    return _gen_raw(a, b, n, g, early, vector, b.shape[1], rand, threads)


# ------------------------------------------------------------ evaluation

def _key_arrays(keys, *, allow_early=True):
    """Key / KeyBatch / sequence of Keys -> (params key, bodies (count, size) uint8, parties uint8, single)."""
    if isinstance(keys, Key):
        bodies = np.frombuffer(keys._body, dtype=np.uint8).reshape(1, -1)
        parties = np.array([keys.party], dtype=np.uint8)
        ref, single = keys, True
    elif isinstance(keys, KeyBatch):
        bodies = np.ascontiguousarray(keys._bodies)
        parties = np.full(len(keys), keys.party, dtype=np.uint8)
        ref, single = keys, False
    else:
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise TypeError(f"keys must be a Key, a KeyBatch or a sequence of Keys, got {type(keys).__name__}")
        keys = list(keys)
        if not keys:
            raise ValueError("need at least one key")
        for k in keys:
            if not isinstance(k, Key):
                raise TypeError(f"keys must be Key objects, got {type(k).__name__}")
            if not k._same_params(keys[0]):
                raise ValueError("all keys must share log_domain, group, d and early flag")
        bodies = np.frombuffer(b"".join(k._body for k in keys), dtype=np.uint8).reshape(len(keys), -1)
        parties = np.array([k.party for k in keys], dtype=np.uint8)
        ref, single = keys[0], False
    if not allow_early and ref.early:
        raise ValueError("early-termination keys have no depth-n path (use early=False keys)")
    return ref, bodies, parties, single


def eval_points(key: Keys, xs: int | ArrayLike, *, threads: int | None = None) -> np.uint64 | NDArray[np.uint64]:
    """Party shares Eval(key, x).  key: a Key (xs any shape) or a KeyBatch /
    sequence of keys (xs of shape (count,) or (count, k): row i for key i).
    Returns uint64 of shape xs.shape (+ (d,) for vector payloads)."""
    ref, bodies, parties, single = _key_arrays(key)
    threads = resolve_threads(threads)
    n = ref.log_domain
    scalar_x = isinstance(xs, numbers.Integral) and not isinstance(xs, bool)
    x = _as_u64_ints([xs] if scalar_x else xs, "xs", 1 << n)
    if not single:
        if x.ndim == 0 or x.shape[0] != bodies.shape[0]:
            raise ValueError(f"xs must have {bodies.shape[0]} rows (one per key), got shape {x.shape}")
    shape = () if scalar_x else x.shape
    npts = x.size
    per_key = npts if single else (npts // bodies.shape[0] if npts else 1)
    tail = ref._out_tail()
    out = np.empty((npts,) + tail, dtype=np.uint64)
    if npts:
        xf = np.ascontiguousarray(x.reshape(-1))
        st = lib.secea_dpf_eval_points(_wptr(out), _ptr(bodies), bodies.shape[1], _ptr(parties), _ptr(xf, "uint64_t[]"),
                                       npts, max(per_key, 1), ref.levels, ref.e, ref._g.gid, ref._g.p, ref.ncw,
                                       threads)
        _check_status(st, "eval_points")
    out = out.reshape(shape + tail)
    return out[()] if scalar_x and not tail else out


# Below this many outputs a full-domain evaluation runs on one thread
# (measured, Zen 4: 2^16 outputs 0.057 ms on 1 thread, 0.092 ms on 2; 2^20: 0.82 / 0.61 ms).
FULL_PARALLEL_MIN_OUTPUTS = 1 << 18


def _full(ref, bodies, parties, out, threads, single):
    n = _check_log_domain(ref.log_domain, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    threads = resolve_threads(threads)
    count = bodies.shape[0]
    m = 1 << n
    if count * m * max(1, ref.ncw if not ref.early else 1) < FULL_PARALLEL_MIN_OUTPUTS:
        threads = 1          # thread start-up outweighs the work (2^16: 0.057 ms on 1, 0.092 on 2)
    shape = ((m,) if single else (count, m)) + ref._out_tail()
    out = _check_out(out, shape)
    st = lib.secea_dpf_eval_full(_wptr(out), _ptr(bodies), bodies.shape[1], _ptr(parties), count, m, ref.levels,
                                 ref.e, ref._g.gid, ref._g.p, ref.ncw, threads)
    _check_status(st, "eval_full")
    return out


def eval_full(key: Key, *, out: NDArray[np.uint64] | None = None, threads: int | None = None) -> NDArray[np.uint64]:
    """All 2^n shares of one key: shape (2^n,) or (2^n, d).  ``out``: a
    preallocated uint64 array of that shape (no allocation)."""
    if not isinstance(key, Key):
        raise TypeError(f"key must be a Key (use eval_full_batch for batches), got {type(key).__name__}")
    ref, bodies, parties, _ = _key_arrays(key)
    return _full(ref, bodies, parties, out, threads, True)


def eval_full_batch(keys: Keys, *, out: NDArray[np.uint64] | None = None, threads: int | None = None) -> NDArray[np.uint64]:
    """Full-domain shares of many keys: shape (count, 2^n[, d])."""
    ref, bodies, parties, _ = _key_arrays(keys)
    return _full(ref, bodies, parties, out, threads, False)


# ------------------------------------------------- SecEmb path / convert

def path_gen(alpha: int, log_domain: int) -> tuple[PathKey, PathKey, PathSecret]:
    """Algorithm 7: (PathKey for server 0, PathKey for server 1, PathSecret)."""
    n = _check_log_domain(log_domain)
    alpha = _check_alpha(alpha, n)
    size = 32 + 16 * n
    p0 = np.empty(size, dtype=np.uint8)
    p1 = np.empty(size, dtype=np.uint8)
    fin = np.empty(32, dtype=np.uint8)
    a = np.array([alpha], dtype=np.uint64)
    st = lib.secea_dpf_gen(_wptr(p0, "uint8_t[]"), _wptr(p1, "uint8_t[]"), _wptr(fin, "uint8_t[]"), _ptr(a, "uint64_t[]"),
                           ffi.NULL, secrets.token_bytes(32), 1, n, 0, 0, 0, 1)
    _check_status(st, "path_gen")
    secret = PathSecret(n, fin.tobytes())
    fin[:] = 0
    return PathKey(0, n, p0.tobytes()), PathKey(1, n, p1.tobytes()), secret


def path_gen_batch(alphas: ArrayLike, log_domain: int, *,
                   threads: int | None = None) -> tuple[PathKeyBatch, PathKeyBatch, PathSecretBatch]:
    """Algorithm 7 for many points in one kernel call: (PathKeyBatch for
    server 0, for server 1, PathSecretBatch); the batches index like lists."""
    n = _check_log_domain(log_domain)
    a = _as_u64_ints(alphas, "alphas", 1 << n).reshape(-1)
    count = a.size
    size = 32 + 16 * n
    p0 = np.empty((count, size), dtype=np.uint8)
    p1 = np.empty((count, size), dtype=np.uint8)
    fin = np.empty((count, 32), dtype=np.uint8)
    if count:
        a = np.ascontiguousarray(a)
        st = lib.secea_dpf_gen(_wptr(p0, "uint8_t[]"), _wptr(p1, "uint8_t[]"), _wptr(fin, "uint8_t[]"),
                               _ptr(a, "uint64_t[]"), ffi.NULL, secrets.token_bytes(32 * count), count, n,
                               0, 0, 0, resolve_threads(threads))
        _check_status(st, "path_gen_batch")
    return PathKeyBatch(0, n, p0), PathKeyBatch(1, n, p1), PathSecretBatch(n, fin)


def _check_domain(domain) -> int:
    domain = check_int(domain, "domain")
    if not 0 <= domain < 1 << 64:
        raise ValueError(f"domain must be in [0, 2^64), got {domain}")
    return domain


def _claim_domain(path_secrets, domain):
    """Refuse a second payload in one conversion domain on one path (module
    docstring, "Conversion domains"), then record the domain."""
    for x in path_secrets:
        if domain in x._domains:
            raise ValueError(f"this path already carries a payload in conversion domain {domain}: a second "
                             "correction word on the same conversion reveals the difference of the payloads; "
                             "convert it in another domain")
    for x in path_secrets:
        x._domains.add(domain)


def convert_gen_batch(path_secrets: PathSecretBatch | Iterable[PathSecret], betas: ArrayLike,
                      group: str | int = "u64", *, domain: int = 0) -> NDArray[np.uint64]:
    """Algorithm 5 for many paths at once: betas (count, d) (or (count,) for
    scalars) -> CW^{n+1} as a (count, d) uint64 array, in conversion domain
    ``domain`` (module docstring; each path takes one payload per domain)."""
    batch = path_secrets if isinstance(path_secrets, PathSecretBatch) else None
    paths: list[PathSecret] = []
    if batch is None:
        paths = list(path_secrets)
        if not all(isinstance(x, PathSecret) for x in paths):
            raise TypeError("path_secrets must be a PathSecretBatch or PathSecret objects")
        if len(set(map(id, paths))) != len(paths):
            raise ValueError("path_secrets has the same path twice")
    domain = _check_domain(domain)
    g = _group(group)
    count = len(batch) if batch is not None else len(paths)
    b = np.asarray(betas)
    if b.ndim == 1:
        b = b.reshape(count, 1) if b.shape == (count,) else b
    if b.ndim != 2 or b.shape[0] != count:
        raise ValueError(f"betas must have shape ({count}, d), got {np.shape(betas)}")
    if b.dtype.kind not in "ui":
        raise TypeError(f"betas must be an integer array, got dtype {b.dtype}")
    if b.dtype.kind == "i" and b.size and b.min() < 0:
        raise ValueError("betas must be non-negative group elements")
    bb = np.ascontiguousarray(b, dtype=np.uint64)
    _check_below_modulus(bb, g, "betas", group)
    d = b.shape[1]
    cw = np.empty((count, d), dtype=np.uint64)
    if count:
        _claim_domain([batch] if batch is not None else paths, domain)
        finals = batch._finals.tobytes() if batch is not None else b"".join(x._finals for x in paths)
        st = lib.secea_dpf_convert_gen(_wptr(cw), finals, _ptr(bb, "uint64_t[]"), count, g.gid, g.p, d, domain)
        _check_status(st, "convert_gen_batch")
    return cw


def convert_gen(path_secret: PathSecret, beta: Beta, group: str | int = "u64", *, domain: int = 0) -> NDArray[np.uint64]:
    """Algorithm 5: CW^{n+1} = (-1)^{t_1} [beta - Convert_D(s_0) + Convert_D(s_1)],
    as a 1-D uint64 array of d group elements (d = 1 for a scalar beta), in
    conversion domain D = ``domain``.  Raises ValueError if this path already
    carries a payload in that domain (module docstring)."""
    if not isinstance(path_secret, PathSecret):
        raise TypeError(f"path_secret must be a PathSecret, got {type(path_secret).__name__}")
    domain = _check_domain(domain)
    g = _group(group)
    b, _ = _check_beta(beta, g)
    cw = np.empty(b.size, dtype=np.uint64)
    _claim_domain([path_secret], domain)
    st = lib.secea_dpf_convert_gen(_wptr(cw), path_secret._finals, _ptr(b, "uint64_t[]"), 1, g.gid, g.p, b.size,
                                   domain)
    _check_status(st, "convert_gen")
    return cw


def _path_arrays(keys):
    """PathKey / Key / KeyBatch / sequence -> (log_domain, bodies (count, stride) uint8, parties, single)."""
    if isinstance(keys, PathKey):
        return keys.log_domain, np.frombuffer(keys._body, dtype=np.uint8).reshape(1, -1), \
            np.array([keys.party], dtype=np.uint8), True
    if isinstance(keys, PathKeyBatch):
        return keys.log_domain, keys._bodies, np.full(len(keys), keys.party, dtype=np.uint8), False
    if isinstance(keys, (Key, KeyBatch)):
        ref, bodies, parties, single = _key_arrays(keys, allow_early=False)
        return ref.log_domain, bodies, parties, single
    if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
        raise TypeError(f"expected a PathKey, Key, KeyBatch or a sequence of them, got {type(keys).__name__}")
    keys = list(keys)
    if not keys:
        raise ValueError("need at least one key")
    paths = []
    for k in keys:
        if isinstance(k, Key):
            k = k.path_key()
        if not isinstance(k, PathKey):
            raise TypeError(f"expected PathKey or Key objects, got {type(k).__name__}")
        paths.append(k)
    n = paths[0].log_domain
    if any(p.log_domain != n for p in paths):
        raise ValueError("all path keys must have the same log_domain")
    bodies = np.frombuffer(b"".join(p._body for p in paths), dtype=np.uint8).reshape(len(paths), -1)
    return n, bodies, np.array([p.party for p in paths], dtype=np.uint8), False


def split_states(states: ArrayLike) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Packed states (..., 16) uint8 -> (t (...) uint8, s (..., 16) uint8 with bit 0 cleared)."""
    states = np.asarray(states)
    t = (states[..., 0] & 1).astype(np.uint8)
    s = states.copy()
    s[..., 0] &= 0xFE
    return t, s


def _join_states(t, s):
    if not isinstance(s, np.ndarray) or s.dtype != np.uint8 or s.ndim < 1 or s.shape[-1] != 16:
        raise TypeError("s must be a uint8 array of shape (..., 16)")
    t = np.asarray(t)
    if t.dtype.kind not in "uib" or t.shape != s.shape[:-1]:
        raise ValueError(f"t must be an integer array of shape {s.shape[:-1]}, got {t.dtype} {t.shape}")
    if t.size and (int(t.max()) > 1 or int(t.min()) < 0):
        raise ValueError("t must hold bits (0 or 1)")
    st = np.ascontiguousarray(s).copy()
    st[..., 0] = (st[..., 0] & 0xFE) | t.astype(np.uint8)
    return st


def path_eval(path_key: PathKey | Key, xs: ArrayLike, *, threads: int | None = None) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Algorithm 6 at the points xs: (t, s) with t uint8 of shape xs.shape
    and s the 16-byte seeds, uint8 of shape xs.shape + (16,)."""
    n, bodies, _, single = _path_arrays(path_key)
    if not single:
        raise TypeError("path_eval takes one PathKey (or default Key)")
    threads = resolve_threads(threads)
    x = _as_u64_ints(xs, "xs", 1 << n)
    states = np.empty(x.shape + (16,), dtype=np.uint8)
    if x.size:
        xf = np.ascontiguousarray(x.reshape(-1))
        st = lib.secea_dpf_path_eval(_wptr(states, "uint8_t[]"), _ptr(bodies), bodies.shape[1],
                                     _ptr(xf, "uint64_t[]"), x.size, x.size, n, threads)
        _check_status(st, "path_eval")
    return split_states(states)


def convert_eval(party: int, t: ArrayLike, s: NDArray[np.uint8], cw: NDArray[np.uint64], group: str | int = "u64", *,
                 domain: int = 0) -> NDArray[np.uint64]:
    """Algorithm 4: (-1)^party [Convert_D(s) + t * CW] for each state, D =
    ``domain`` (the one the CW was generated in); returns uint64 of shape
    t.shape + (d,)."""
    party = check_int(party, "party")
    domain = _check_domain(domain)
    if party not in (0, 1):
        raise ValueError(f"party must be 0 or 1, got {party}")
    g = _group(group)
    cw = _check_cw(cw, g)
    st = _join_states(t, s)
    n = st.size // 16
    out = np.empty((n, cw.size), dtype=np.uint64)
    if n:
        status = lib.secea_dpf_convert_eval(_wptr(out), _ptr(st), n, party, _ptr(cw, "uint64_t[]"), g.gid, g.p,
                                            cw.size, domain)
        _check_status(status, "convert_eval")
    return out.reshape(st.shape[:-1] + (cw.size,))


def path_eval_full(keys: PathKeys, m: int | None = None, *, threads: int | None = None) -> NDArray[np.uint8]:
    """Packed leaf states (seed with t in bit 0) of all leaves j < m
    (default 2^n): uint8 (m, 16) for one key, (count, m, 16) for several.
    Keep them to run ``convert_accumulate`` later without redoing AES."""
    n, bodies, _, single = _path_arrays(keys)
    _check_log_domain(n, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    threads = resolve_threads(threads)
    m = (1 << n) if m is None else check_int(m, "m")
    if not 1 <= m <= (1 << n):
        raise ValueError(f"m must satisfy 1 <= m <= 2^{n}, got {m}")
    count = bodies.shape[0]
    states = np.empty((count, m, 16), dtype=np.uint8)
    st = lib.secea_dpf_path_eval_full(_wptr(states, "uint8_t[]"), _ptr(bodies), bodies.shape[1], count, m, n, threads)
    _check_status(st, "path_eval_full")
    return states[0] if single else states


def _check_cws(cw, count, d):
    """One (d,) correction word for every key or a (count, d) array -> (count, d) view."""
    if not isinstance(cw, np.ndarray) or cw.dtype != np.uint64:
        raise TypeError("cw must be a uint64 ndarray")
    cws = cw.reshape(1, -1) if cw.ndim == 1 else cw
    if cws.shape != (count, d):
        raise ValueError(f"cw must have shape ({d},) or ({count}, {d}), got {cw.shape}")
    return cws


def convert_accumulate(acc: NDArray[np.uint64], states: NDArray[np.uint8], party: int | ArrayLike, cw: NDArray[np.uint64], *, domain: int = 0,
                       threads: int | None = None) -> NDArray[np.uint64]:
    """Over Z_2^64, in place: acc[j, :] += sum_c (-1)^party_c [Convert_D(s_cj) + t_cj * CW_c]
    for j < m, D = ``domain`` (the one the CWs were generated in).  acc: (m, d)
    uint64; states: (m, 16) or (count, m, 16) uint8 from ``path_eval_full``;
    party: 0/1 or one per key; cw: (d,) or (count, d)."""
    domain = _check_domain(domain)
    if not isinstance(acc, np.ndarray) or acc.dtype != np.uint64:
        raise TypeError("acc must be a numpy.ndarray of dtype uint64")
    if acc.ndim != 2 or not acc.flags.c_contiguous or not acc.flags.writeable:
        raise ValueError(f"acc must be a writable C-contiguous (m, d) array, got shape {acc.shape}")
    if not isinstance(states, np.ndarray) or states.dtype != np.uint8:
        raise TypeError("states must be a uint8 ndarray from path_eval_full")
    if states.ndim == 2:
        states = states[None]
    if states.ndim != 3 or states.shape[2] != 16:
        raise ValueError(f"states must have shape (m, 16) or (count, m, 16), got {states.shape}")
    count, m = states.shape[0], states.shape[1]
    if acc.shape[0] != m:
        raise ValueError(f"acc has {acc.shape[0]} rows, states cover {m} leaves")
    d = acc.shape[1]
    cws = _check_cws(cw, count, d)
    if isinstance(party, numbers.Integral) and not isinstance(party, bool):
        parties = np.full(count, int(party), dtype=np.int64)
    else:
        parties = np.asarray(party)
        if parties.shape != (count,) or parties.dtype.kind not in "ui":
            raise ValueError(f"party must be 0/1 or an integer array of shape ({count},)")
    if parties.size and (parties.min() < 0 or parties.max() > 1):
        raise ValueError("party values must be 0 or 1")
    parties = parties.astype(np.uint8)
    threads = resolve_threads(threads)
    states = np.ascontiguousarray(states)
    cws = np.ascontiguousarray(cws)
    st = lib.secea_dpf_convert_accumulate(_wptr(acc), _ptr(states), _ptr(parties), _ptr(cws, "uint64_t[]"),
                                          count, m, d, domain, threads)
    _check_status(st, "convert_accumulate")
    return acc


def path_convert_accumulate(acc: NDArray[np.uint64] | NDArray[np.uint32], keys: PathKeys, party: int, cw: NDArray[np.uint64], *,
                            domain: int = 0,
                            threads: int | None = None) -> NDArray[np.uint64] | NDArray[np.uint32]:
    """``path_eval_full`` and ``convert_accumulate`` fused, in place and
    without the leaf states in memory: acc[j, :] += (-1)^party sum_c
    [Convert_D(s_cj) + t_cj * CW_c] for j < m = acc.shape[0], D = ``domain``.
    The group is acc's dtype: uint64 for Z_2^64, uint32 for Z_2^32 (the
    correction words from ``convert_gen_batch(..., group="u32")``).  keys:
    PathKeys (or default Keys) of one server; cw: (d,) or (count, d) uint64.
    Threads split the leaves, each owning its rows of acc."""
    domain = _check_domain(domain)
    if not isinstance(acc, np.ndarray) or acc.dtype not in (np.uint64, np.uint32):
        raise TypeError("acc must be a numpy.ndarray of dtype uint64 (Z_2^64) or uint32 (Z_2^32)")
    if acc.ndim != 2 or not acc.flags.c_contiguous or not acc.flags.writeable:
        raise ValueError(f"acc must be a writable C-contiguous (m, d) array, got shape {acc.shape}")
    n, bodies, _, _ = _path_arrays(keys)
    _check_log_domain(n, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    m, d = acc.shape
    if m > (1 << n):
        raise ValueError(f"acc has {m} rows, more than the domain size 2^{n}")
    party = check_int(party, "party")
    if party not in (0, 1):
        raise ValueError(f"party must be 0 or 1, got {party}")
    count = bodies.shape[0]
    cws = _check_cws(cw, count, d)
    gid = 1 if acc.dtype == np.uint32 else 0
    if gid == 1 and cws.size and int(cws.max()) >> 32:
        raise ValueError("cw must hold Z_2^32 elements (< 2^32) for a uint32 acc")
    cws = np.ascontiguousarray(cws)
    bodies = np.ascontiguousarray(bodies)
    st = lib.secea_dpf_path_convert_accumulate(ffi.from_buffer("uint8_t[]", acc, require_writable=True),
                                               _ptr(bodies), bodies.shape[1], party, _ptr(cws, "uint64_t[]"),
                                               count, m, d, gid, n, domain, resolve_threads(threads))
    _check_status(st, "path_convert_accumulate")
    return acc


def _check_table(table, n):
    """A (m, d) uint64 table with m <= 2^n, C-contiguous -> (table, m, d)."""
    if not isinstance(table, np.ndarray) or table.dtype != np.uint64:
        raise TypeError("table must be a numpy.ndarray of dtype uint64")
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D (m, d), got shape {table.shape}")
    m, d = table.shape
    if m > (1 << n):
        raise ValueError(f"table has {m} rows, more than the domain size 2^{n}")
    return np.ascontiguousarray(table), m, d


def path_xor_rows(keys: PathKeys, table: NDArray[np.uint64], *, threads: int | None = None) -> NDArray[np.uint64]:
    """Two-server PIR on path keys (Boyle, Gilboa and Ishai's PIR from a DPF):
    the XOR of the table rows whose leaf has control bit t = 1, for each key.
    The leaves' control bits of the two servers' keys differ exactly at
    alpha, so the two outputs XOR to table[alpha].  No conversion and no
    multiplication: the tree walk plus one masked XOR per row.  table: (m, d)
    of 64-bit words (uint64 or int64 viewed), m <= 2^n.  Returns (d,) uint64 for
    one PathKey, (count, d) otherwise."""
    n, bodies, _, single = _path_arrays(keys)
    _check_log_domain(n, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    table, m, d = _check_table(table, n)
    bodies = np.ascontiguousarray(bodies)
    count = bodies.shape[0]
    out = np.zeros((count, d), dtype=np.uint64)
    if d and m:
        st = lib.secea_dpf_path_xor_rows(_wptr(out), _ptr(bodies), bodies.shape[1], count, n,
                                         _ptr(table, "uint64_t[]"), m, d, resolve_threads(threads))
        _check_status(st, "path_xor_rows")
    return out[0] if single else out


def eval_full_dot(keys: Keys, table: NDArray[np.uint64], *, threads: int | None = None) -> NDArray[np.uint64]:
    """Over Z_2^64: sum_j Eval(key, j) * table[j, :] for each key, without
    materialising the 2^n shares (SecEmb retrieval, eq. 3).  Scalar u64 keys
    (default or early); table (m, d) uint64 with m <= 2^n.  Returns (d,) for
    one Key, (count, d) otherwise."""
    ref, bodies, parties, single = _key_arrays(keys)
    if ref._g.gid != 0 or ref.vector:
        raise ValueError("eval_full_dot needs scalar keys over group 'u64'")
    _check_log_domain(ref.log_domain, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    table, m, d = _check_table(table, ref.log_domain)
    threads = resolve_threads(threads)
    count = bodies.shape[0]
    out = np.zeros((count, d), dtype=np.uint64)
    if d and m:
        st = lib.secea_dpf_eval_full_dot(_wptr(out), _ptr(bodies), bodies.shape[1], _ptr(parties), count,
                                         ref.levels, ref.e, _ptr(table, "uint64_t[]"), m, d, threads)
        _check_status(st, "eval_full_dot")
    return out[0] if single else out
