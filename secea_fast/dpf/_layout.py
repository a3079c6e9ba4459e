"""The DPF's byte layout and argument checks, shared by its modules
(private: nothing here is public API).

The key header (``HEADER``, 24 bytes, little endian) is
``magic | version u8 | party u8 | log_domain u8 | flags u8 (bit 0 early,
bit 1 vector payload) | group id u8 (0 u64, 1 u32, 2 F_p) | 3 zero bytes |
d u32 | modulus u64 (0, 2^32 or p)``; path keys carry group, d, modulus 0.
Bodies are csrc/include/secea.h's; ``kernel_shape`` builds the kernels'
``secea_dpf_shape`` from a key's parameters.
"""
from __future__ import annotations

import functools
import numbers
import struct

import numpy as np

from .._checks import check_int, check_prime
from .._native import check_status as _native_check_status
from .._native import ffi

MAX_LOG_DOMAIN = 63          # keys and point evaluation
MAX_FULL_LOG_DOMAIN = 32     # full-domain evaluation (2^n outputs)
MAX_PAYLOAD = 1 << 20        # elements per payload vector
VERSION = 1
MAGIC_KEY = b"SDPF"
MAGIC_PATH = b"SDPP"
MAGIC_KEY_BATCH = b"SDKB"
MAGIC_PATH_BATCH = b"SDPB"
HEADER = struct.Struct("<4sBBBBB3sIQ")
FLAG_EARLY, FLAG_VECTOR = 1, 2
GROUP_NAMES = {0: "u64", 1: "u32"}

# ---------------------------------------------------------------- helpers

class Group:
    __slots__ = ("gid", "p", "modulus", "name", "width")

    def __init__(self, gid, p):
        self.gid = gid
        self.p = p                                   # the C modulus argument
        self.modulus = (1 << 64) if gid == 0 else (1 << 32) if gid == 1 else p
        self.name = GROUP_NAMES.get(gid, p)
        self.width = 4 if gid == 1 else 8

    @property
    def header_modulus(self):
        return 0 if self.gid == 0 else self.modulus


def group_of(group) -> Group:
    if isinstance(group, str):
        if group == "u64":
            return Group(0, 0)
        if group == "u32":
            return Group(1, 0)
        raise ValueError(f"group must be 'u64', 'u32' or a prime p < 2^64, got {group!r}")
    if isinstance(group, bool) or not isinstance(group, numbers.Integral):
        raise TypeError(f"group must be 'u64', 'u32' or an int prime, got {type(group).__name__}")
    return Group(2, check_prime(int(group), "group"))


U64 = group_of("u64")


def check_log_domain(n, limit=MAX_LOG_DOMAIN, what="log_domain"):
    n = check_int(n, what)
    if not 1 <= n <= limit:
        raise ValueError(f"{what} must be between 1 and {limit}, got {n}")
    return n


def check_alpha(alpha, n):
    alpha = check_int(alpha, "alpha")
    if not 0 <= alpha < (1 << n):
        raise ValueError(f"alpha must satisfy 0 <= alpha < 2^{n}, got {alpha}")
    return alpha


def early_e(g: Group, n: int) -> int:
    return min(3 if g.gid == 0 else 4, n)


def as_u64_ints(values, name, bound, shape_hint=None):
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


def check_beta(beta, g: Group):
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
    arr = as_u64_ints(beta, "beta", g.modulus)
    if arr.ndim != 1:
        raise ValueError(f"beta must be a scalar or 1-D, got shape {arr.shape}")
    if not 1 <= arr.size <= MAX_PAYLOAD:
        raise ValueError(f"beta must have between 1 and {MAX_PAYLOAD} elements, got {arr.size}")
    return arr, True


def body_size(levels, ncw, width):
    return 32 + 16 * levels + ncw * width


def ptr(arr, ctype="uint8_t[]"):
    return ffi.from_buffer(ctype, arr)


def wptr(arr, ctype="uint64_t[]"):
    return ffi.from_buffer(ctype, arr, require_writable=True)


@functools.lru_cache(maxsize=1024)
def kernel_shape(levels, early, gid, modulus, ncw, stride):
    """The kernels' ``secea_dpf_shape`` (secea.h), by field name; cached (a
    key's parameters repeat across calls, and the kernels only read it)."""
    return ffi.new("secea_dpf_shape *", {"levels": levels, "early": early, "group": gid, "modulus": modulus,
                                         "ncw": ncw, "stride": stride})


def path_shape(levels, stride):
    """The shape of path bodies (the tree alone) ``stride`` bytes apart."""
    return kernel_shape(levels, 0, 0, 0, 0, stride)


def check_status(status, what):
    _native_check_status(status, f"dpf {what}", "key layout outside the kernel's limits")


def check_out(out, shape):
    if out is None:
        return np.empty(shape, dtype=np.uint64)
    if not isinstance(out, np.ndarray) or out.dtype != np.uint64:
        raise TypeError("out must be a numpy.ndarray of dtype uint64")
    if out.shape != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writable")
    return out


def parse_header(data, magic, what):
    """Validate a key / path / batch header -> (party, n, flags, g, d, levels, ncw)."""
    mg, ver, party, n, flags, gid, rsv, d, mod = HEADER.unpack_from(data)
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
    if magic in (MAGIC_PATH, MAGIC_PATH_BATCH):
        if flags or gid or d or mod:
            raise ValueError("path key header: flags, group, d and modulus must be zero")
        return party, n, 0, Group(0, 0), 0, n, 0
    if flags & ~(FLAG_EARLY | FLAG_VECTOR):
        raise ValueError(f"unknown flag bits 0x{flags:02x}")
    if gid == 0:
        if mod != 0:
            raise ValueError(f"group u64 needs modulus field 0, got {mod}")
        g = Group(0, 0)
    elif gid == 1:
        if mod != 1 << 32:
            raise ValueError(f"group u32 needs modulus field 2^32, got {mod}")
        g = Group(1, 0)
    elif gid == 2:
        try:
            g = Group(2, check_prime(mod, "modulus"))
        except ValueError as exc:
            raise ValueError(f"group F_p: {exc}") from None
    else:
        raise ValueError(f"unknown group id {gid}")
    if not 1 <= d <= MAX_PAYLOAD:
        raise ValueError(f"payload length d must be between 1 and {MAX_PAYLOAD}, got {d}")
    if not flags & FLAG_VECTOR and d != 1:
        raise ValueError(f"a scalar key must have d = 1, got {d}")
    if flags & FLAG_EARLY:
        if flags & FLAG_VECTOR or g.gid == 2:
            raise ValueError("early termination is only defined for scalar u64 / u32 keys")
        e = early_e(g, n)
        return party, n, flags, g, d, n - e, 1 << e
    return party, n, flags, g, d, n, d


def check_bodies(bodies: np.ndarray, levels: int, g: Group, is_key: bool):
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


def parse(data, magic):
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"key bytes must be bytes, got {type(data).__name__}")
    data = bytes(data)
    what = "key" if magic == MAGIC_KEY else "path key"
    if len(data) < HEADER.size:
        raise ValueError(f"{what} truncated: {len(data)} bytes, the header alone has {HEADER.size}")
    party, n, flags, g, d, levels, ncw = parse_header(data, magic, what)
    body = data[HEADER.size:]
    size = body_size(levels, ncw, g.width) if magic == MAGIC_KEY else 32 + 16 * levels
    if len(body) != size:
        kind = "truncated" if len(body) < size else "padded"
        raise ValueError(f"{what} {kind}: body has {len(body)} bytes, expected {size} "
                         f"(log_domain {n}, {levels} levels, {ncw} correction elements)")
    check_bodies(np.frombuffer(body, dtype=np.uint8).reshape(1, -1), levels, g, magic == MAGIC_KEY)
    return party, n, flags, g, d, body


def parse_batch(data, magic):
    """A batch: header | count u64 | count bodies -> (party, n, flags, g, d, bodies (count, size))."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"batch bytes must be bytes, got {type(data).__name__}")
    data = bytes(data)
    what = "key batch" if magic == MAGIC_KEY_BATCH else "path key batch"
    if len(data) < HEADER.size + 8:
        raise ValueError(f"{what} truncated: {len(data)} bytes")
    party, n, flags, g, d, levels, ncw = parse_header(data, magic, what)
    (count,) = struct.unpack_from("<Q", data, HEADER.size)
    size = body_size(levels, ncw, g.width) if magic == MAGIC_KEY_BATCH else 32 + 16 * levels
    body = data[HEADER.size + 8:]
    if count < 1 or len(body) != count * size:
        raise ValueError(f"{what}: {len(body)} body bytes do not hold {count} bodies of {size} bytes")
    bodies = np.frombuffer(body, dtype=np.uint8).reshape(count, size).copy()
    check_bodies(bodies, levels, g, magic == MAGIC_KEY_BATCH)
    return party, n, flags, g, d, bodies


def pack_elems(vals: np.ndarray, g: Group) -> bytes:
    return vals.astype("<u4" if g.gid == 1 else "<u8").tobytes()


def check_below_modulus(arr: np.ndarray, g: Group, name: str, group):
    """uint64 elements of Z_2^32 / F_p must be below the modulus (Z_2^64: any)."""
    if g.gid != 0 and arr.size and int(arr.max()) >= g.modulus:
        raise ValueError(f"{name} must be < {g.modulus} for group {group!r}")


def check_cw(cw, g: Group) -> np.ndarray:
    if isinstance(cw, (bytes, bytearray, memoryview)):
        raise TypeError("cw must be an array of group elements (uint64), not bytes")
    if isinstance(cw, np.ndarray) and cw.dtype != np.uint64:
        raise TypeError(f"cw must have dtype uint64, got {cw.dtype}")
    arr = as_u64_ints(cw, "cw", g.modulus)
    if arr.ndim != 1 or not 1 <= arr.size <= MAX_PAYLOAD:
        raise ValueError(f"cw must be 1-D with 1..{MAX_PAYLOAD} elements, got shape {arr.shape}")
    return arr



def check_early(early, g, vector) -> bool:
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



def check_domain(domain) -> int:
    domain = check_int(domain, "domain")
    if not 0 <= domain < 1 << 64:
        raise ValueError(f"domain must be in [0, 2^64), got {domain}")
    return domain


def claim_domain(path_secrets, domain):
    """Refuse a second payload in one conversion domain on one path (module
    docstring, "Conversion domains"), then record the domain."""
    for x in path_secrets:
        if domain in x._domains:
            raise ValueError(f"this path already carries a payload in conversion domain {domain}: a second "
                             "correction word on the same conversion reveals the difference of the payloads; "
                             "convert it in another domain")
    for x in path_secrets:
        x._domains.add(domain)



def join_states(t, s):
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



def check_cws(cw, count, d):
    """One (d,) correction word for every key or a (count, d) array -> (count, d) view."""
    if not isinstance(cw, np.ndarray) or cw.dtype != np.uint64:
        raise TypeError("cw must be a uint64 ndarray")
    cws = cw.reshape(1, -1) if cw.ndim == 1 else cw
    if cws.shape != (count, d):
        raise ValueError(f"cw must have shape ({d},) or ({count}, {d}), got {cw.shape}")
    return cws



def check_table(table, n):
    """A (m, d) uint64 table with m <= 2^n, C-contiguous -> (table, m, d)."""
    if not isinstance(table, np.ndarray) or table.dtype != np.uint64:
        raise TypeError("table must be a numpy.ndarray of dtype uint64")
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D (m, d), got shape {table.shape}")
    m, d = table.shape
    if m > (1 << n):
        raise ValueError(f"table has {m} rows, more than the domain size 2^{n}")
    return np.ascontiguousarray(table), m, d


