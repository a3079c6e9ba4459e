"""SecEmb's split of the DPF (Mai et al., 2025, Sec. 4.3.2 and Appendix F,
Algorithms 4-7): ``path_gen`` / ``path_eval`` build and walk the tree of
seeds and control bits, ``convert_gen`` / ``convert_eval`` map a final seed
to group elements with the last correction word CW^{n+1}, in a public
conversion domain; and the servers' fused kernels on path keys
(``path_eval_full`` + ``convert_accumulate``, ``path_convert_accumulate``,
the XOR PIR ``path_xor_rows``).

The client's secret (the two final states of each path) is a
``PathSecretBatch`` -- a single ``PathSecret`` is its length-1 case with its
own saved-state format -- which records the conversion domains it has
carried a payload in and refuses a second payload in the same one
(package docstring, "Conversion domains").
"""
from __future__ import annotations

import numbers
import secrets
import struct
from collections.abc import Iterable
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_int
from .._native import ffi, lib, resolve_threads
from .._secrets import SecretHolder
from ..prg import aes128_ctr, random_seed
from ._layout import (MAX_FULL_LOG_DOMAIN, VERSION, as_u64_ints, check_alpha, check_below_modulus, check_beta,
                      check_cw, check_cws, check_domain, check_log_domain, check_status, check_table, claim_domain,
                      group_of, join_states, kernel_shape, path_shape, ptr, wptr)
from .eval import key_arrays
from .keys import Beta, Key, KeyBatch, PathKey, PathKeyBatch, PathKeys
from .params import Params

__all__ = ["PathSecret", "PathSecretBatch", "path_gen", "path_gen_batch", "convert_gen", "convert_gen_batch",
           "path_eval", "convert_eval", "path_eval_full", "convert_accumulate", "path_convert_accumulate",
           "path_xor_rows", "split_states"]


def _pack_domains(domains: set[int]) -> bytes:
    doms = sorted(domains)
    return struct.pack(f"<Q{len(doms)}Q", len(doms), *doms)


def _unpack_domains(data: bytes, off: int, what: str, counts: str) -> set[int]:
    """The domain record (count u64, domains u64...) ending ``data`` at ``off``."""
    (nd,) = struct.unpack_from("<Q", data, off)
    if len(data) != off + 8 + 8 * nd:
        raise ValueError(f"{what}: length does not match {counts}")
    doms = struct.unpack_from(f"<{nd}Q", data, off + 8)
    if any(a >= b for a, b in zip(doms, doms[1:])):
        raise ValueError(f"{what}: domains must be strictly increasing")
    return set(doms)


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
        return struct.pack("<4sB3xQ", b"SEPS", VERSION, self.log_domain) + self._finals + _pack_domains(self._domains)

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
        n = check_log_domain(n)
        obj = cls(n, data[16:48])
        obj._domains = _unpack_domains(data, 48, "PathSecret", "its domain count")
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
        return (struct.pack("<4sB3xQQ", b"SEPB", VERSION, self.log_domain, len(self)) + self._finals.tobytes()
                + _pack_domains(self._domains))

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
        n = check_log_domain(n)
        end = 24 + 32 * count
        if count < 1 or len(data) < end + 8:
            raise ValueError("PathSecretBatch: truncated")
        doms = _unpack_domains(data, end, "PathSecretBatch", "its counts")
        obj = cls(n, np.frombuffer(data[24:end], dtype=np.uint8).reshape(count, 32).copy())
        obj._domains = doms
        return obj


def path_gen(alpha: int, log_domain: int) -> tuple[PathKey, PathKey, PathSecret]:
    """Algorithm 7: (PathKey for server 0, PathKey for server 1, PathSecret)."""
    n = check_log_domain(log_domain)
    alpha = check_alpha(alpha, n)
    size = 32 + 16 * n
    p0 = np.empty(size, dtype=np.uint8)
    p1 = np.empty(size, dtype=np.uint8)
    fin = np.empty(32, dtype=np.uint8)
    a = np.array([alpha], dtype=np.uint64)
    st = lib.secea_dpf_gen(path_shape(n, size), wptr(p0, "uint8_t[]"), wptr(p1, "uint8_t[]"), wptr(fin, "uint8_t[]"),
                           ptr(a, "uint64_t[]"), ffi.NULL, secrets.token_bytes(32), 1, 1)
    check_status(st, "path_gen")
    secret = PathSecret(n, fin.tobytes())
    fin[:] = 0
    params = Params.path(n)
    return PathKey(params, 0, p0.tobytes()), PathKey(params, 1, p1.tobytes()), secret


def path_gen_batch(alphas: ArrayLike, log_domain: int, *, threads: int | None = None,
                   _rand: bytes | None = None) -> tuple[PathKeyBatch, PathKeyBatch, PathSecretBatch]:
    """Algorithm 7 for many points in one kernel call: (PathKeyBatch for
    server 0, for server 1, PathSecretBatch); the batches index like lists.
    The roots (32 bytes a key) are the AES-128-CTR keystream of a fresh
    16-byte ``secrets`` key used for this draw only (``prg.aes128_ctr``:
    one 16-byte draw from the OS instead of 32 bytes per key; os.urandom ran
    at about 0.3 GB/s here, a tenth of a 300-key batch's time).  ``_rand``:
    the roots, for tests against the Python twin."""
    n = check_log_domain(log_domain)
    a = as_u64_ints(alphas, "alphas", 1 << n).reshape(-1)
    count = a.size
    if _rand is None:           # a fresh key for this draw only: no domain to separate
        rand = aes128_ctr(random_seed(16), bytes(16), 32 * count)
    else:
        rand = bytearray(_rand)
        if len(rand) != 32 * count:
            raise ValueError("_rand must be 32 bytes per key")
    size = 32 + 16 * n
    p0 = np.empty((count, size), dtype=np.uint8)
    p1 = np.empty((count, size), dtype=np.uint8)
    fin = np.empty((count, 32), dtype=np.uint8)
    if count:
        a = np.ascontiguousarray(a)
        st = lib.secea_dpf_gen(path_shape(n, size), wptr(p0, "uint8_t[]"), wptr(p1, "uint8_t[]"),
                               wptr(fin, "uint8_t[]"), ptr(a, "uint64_t[]"), ffi.NULL,
                               ffi.from_buffer("uint8_t[]", rand), count, resolve_threads(threads))
        check_status(st, "path_gen_batch")
    params = Params.path(n)
    return PathKeyBatch(params, 0, p0), PathKeyBatch(params, 1, p1), PathSecretBatch(n, fin)


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
    domain = check_domain(domain)
    g = group_of(group)
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
    check_below_modulus(bb, g, "betas", group)
    d = b.shape[1]
    cw = np.empty((count, d), dtype=np.uint64)
    if count:
        claim_domain([batch] if batch is not None else paths, domain)
        finals = ptr(np.ascontiguousarray(batch._finals)) if batch is not None else b"".join(x._finals for x in paths)
        st = lib.secea_dpf_convert_gen(kernel_shape(0, 0, g.gid, g.p, d, 0), wptr(cw), finals, ptr(bb, "uint64_t[]"),
                                       count, domain)
        check_status(st, "convert_gen_batch")
    return cw


def convert_gen(path_secret: PathSecret, beta: Beta, group: str | int = "u64", *, domain: int = 0) -> NDArray[np.uint64]:
    """Algorithm 5: CW^{n+1} = (-1)^{t_1} [beta - Convert_D(s_0) + Convert_D(s_1)],
    as a 1-D uint64 array of d group elements (d = 1 for a scalar beta), in
    conversion domain D = ``domain``.  Raises ValueError if this path already
    carries a payload in that domain (module docstring)."""
    if not isinstance(path_secret, PathSecret):
        raise TypeError(f"path_secret must be a PathSecret, got {type(path_secret).__name__}")
    domain = check_domain(domain)
    g = group_of(group)
    b, _ = check_beta(beta, g)
    cw = np.empty(b.size, dtype=np.uint64)
    claim_domain([path_secret], domain)
    st = lib.secea_dpf_convert_gen(kernel_shape(0, 0, g.gid, g.p, b.size, 0), wptr(cw), path_secret._finals,
                                   ptr(b, "uint64_t[]"), 1, domain)
    check_status(st, "convert_gen")
    return cw


def _path_arrays(keys):
    """PathKey / Key / KeyBatch / sequence -> (log_domain, bodies (count, stride) uint8, parties, single)."""
    if isinstance(keys, PathKey):
        return keys.log_domain, keys.bodies, np.array([keys.party], dtype=np.uint8), True
    if isinstance(keys, PathKeyBatch):
        return keys.log_domain, keys.bodies, np.full(len(keys), keys.party, dtype=np.uint8), False
    if isinstance(keys, (Key, KeyBatch)):
        ref, bodies, parties, single = key_arrays(keys, allow_early=False)
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
    bodies = np.concatenate([p.bodies for p in paths])
    return n, bodies, np.array([p.party for p in paths], dtype=np.uint8), False


def split_states(states: ArrayLike) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Packed states (..., 16) uint8 -> (t (...) uint8, s (..., 16) uint8 with bit 0 cleared)."""
    states = np.asarray(states)
    t = (states[..., 0] & 1).astype(np.uint8)
    s = states.copy()
    s[..., 0] &= 0xFE
    return t, s


def path_eval(path_key: PathKey | Key, xs: ArrayLike, *, threads: int | None = None) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Algorithm 6 at the points xs: (t, s) with t uint8 of shape xs.shape
    and s the 16-byte seeds, uint8 of shape xs.shape + (16,)."""
    n, bodies, _, single = _path_arrays(path_key)
    if not single:
        raise TypeError("path_eval takes one PathKey (or default Key)")
    threads = resolve_threads(threads)
    x = as_u64_ints(xs, "xs", 1 << n)
    states = np.empty(x.shape + (16,), dtype=np.uint8)
    if x.size:
        xf = np.ascontiguousarray(x.reshape(-1))
        st = lib.secea_dpf_path_eval(path_shape(n, bodies.shape[1]), wptr(states, "uint8_t[]"), ptr(bodies),
                                     ptr(xf, "uint64_t[]"), x.size, x.size, threads)
        check_status(st, "path_eval")
    return split_states(states)


def convert_eval(party: int, t: ArrayLike, s: NDArray[np.uint8], cw: NDArray[np.uint64], group: str | int = "u64", *,
                 domain: int = 0) -> NDArray[np.uint64]:
    """Algorithm 4: (-1)^party [Convert_D(s) + t * CW] for each state, D =
    ``domain`` (the one the CW was generated in); returns uint64 of shape
    t.shape + (d,)."""
    party = check_int(party, "party")
    domain = check_domain(domain)
    if party not in (0, 1):
        raise ValueError(f"party must be 0 or 1, got {party}")
    g = group_of(group)
    cw = check_cw(cw, g)
    st = join_states(t, s)
    n = st.size // 16
    out = np.empty((n, cw.size), dtype=np.uint64)
    if n:
        status = lib.secea_dpf_convert_eval(kernel_shape(0, 0, g.gid, g.p, cw.size, 0), wptr(out), ptr(st), n, party,
                                            ptr(cw, "uint64_t[]"), domain)
        check_status(status, "convert_eval")
    return out.reshape(st.shape[:-1] + (cw.size,))


def path_eval_full(keys: PathKeys, m: int | None = None, *, threads: int | None = None) -> NDArray[np.uint8]:
    """Packed leaf states (seed with t in bit 0) of all leaves j < m
    (default 2^n): uint8 (m, 16) for one key, (count, m, 16) for several.
    Keep them to run ``convert_accumulate`` later without redoing AES."""
    n, bodies, _, single = _path_arrays(keys)
    check_log_domain(n, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    threads = resolve_threads(threads)
    m = (1 << n) if m is None else check_int(m, "m")
    if not 1 <= m <= (1 << n):
        raise ValueError(f"m must satisfy 1 <= m <= 2^{n}, got {m}")
    count = bodies.shape[0]
    states = np.empty((count, m, 16), dtype=np.uint8)
    st = lib.secea_dpf_path_eval_full(path_shape(n, bodies.shape[1]), wptr(states, "uint8_t[]"), ptr(bodies),
                                      count, m, threads)
    check_status(st, "path_eval_full")
    return states[0] if single else states


def convert_accumulate(acc: NDArray[np.uint64], states: NDArray[np.uint8], party: int | ArrayLike, cw: NDArray[np.uint64], *, domain: int = 0,
                       threads: int | None = None) -> NDArray[np.uint64]:
    """Over Z_2^64, in place: acc[j, :] += sum_c (-1)^party_c [Convert_D(s_cj) + t_cj * CW_c]
    for j < m, D = ``domain`` (the one the CWs were generated in).  acc: (m, d)
    uint64; states: (m, 16) or (count, m, 16) uint8 from ``path_eval_full``;
    party: 0/1 or one per key; cw: (d,) or (count, d)."""
    domain = check_domain(domain)
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
    cws = check_cws(cw, count, d)
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
    st = lib.secea_dpf_convert_accumulate(kernel_shape(0, 0, 0, 0, d, 0), wptr(acc), ptr(states), ptr(parties),
                                          ptr(cws, "uint64_t[]"), count, m, domain, threads)
    check_status(st, "convert_accumulate")
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
    domain = check_domain(domain)
    if not isinstance(acc, np.ndarray) or acc.dtype not in (np.uint64, np.uint32):
        raise TypeError("acc must be a numpy.ndarray of dtype uint64 (Z_2^64) or uint32 (Z_2^32)")
    if acc.ndim != 2 or not acc.flags.c_contiguous or not acc.flags.writeable:
        raise ValueError(f"acc must be a writable C-contiguous (m, d) array, got shape {acc.shape}")
    n, bodies, _, _ = _path_arrays(keys)
    check_log_domain(n, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    m, d = acc.shape
    if m > (1 << n):
        raise ValueError(f"acc has {m} rows, more than the domain size 2^{n}")
    party = check_int(party, "party")
    if party not in (0, 1):
        raise ValueError(f"party must be 0 or 1, got {party}")
    count = bodies.shape[0]
    cws = check_cws(cw, count, d)
    gid = 1 if acc.dtype == np.uint32 else 0
    if gid == 1 and cws.size and int(cws.max()) >> 32:
        raise ValueError("cw must hold Z_2^32 elements (< 2^32) for a uint32 acc")
    cws = np.ascontiguousarray(cws)
    bodies = np.ascontiguousarray(bodies)
    st = lib.secea_dpf_path_convert_accumulate(kernel_shape(n, 0, gid, 0, d, bodies.shape[1]),
                                               ffi.from_buffer("uint8_t[]", acc, require_writable=True),
                                               ptr(bodies), party, ptr(cws, "uint64_t[]"), count, m, domain,
                                               resolve_threads(threads))
    check_status(st, "path_convert_accumulate")
    return acc


def path_xor_rows(keys: PathKeys, table: NDArray[np.uint64], *, threads: int | None = None) -> NDArray[np.uint64]:
    """Two-server PIR on path keys (Boyle, Gilboa and Ishai's PIR from a DPF):
    the XOR of the table rows whose leaf has control bit t = 1, for each key.
    The leaves' control bits of the two servers' keys differ exactly at
    alpha, so the two outputs XOR to table[alpha].  No conversion and no
    multiplication: the tree walk plus one masked XOR per row.  table: (m, d)
    of 64-bit words (uint64 or int64 viewed), m <= 2^n.  Returns (d,) uint64 for
    one PathKey, (count, d) otherwise."""
    n, bodies, _, single = _path_arrays(keys)
    check_log_domain(n, MAX_FULL_LOG_DOMAIN, "log_domain for full-domain evaluation")
    table, m, d = check_table(table, n)
    bodies = np.ascontiguousarray(bodies)
    count = bodies.shape[0]
    out = np.zeros((count, d), dtype=np.uint64)
    if d and m:
        st = lib.secea_dpf_path_xor_rows(path_shape(n, bodies.shape[1]), wptr(out), ptr(bodies), count,
                                         ptr(table, "uint64_t[]"), m, d, resolve_threads(threads))
        check_status(st, "path_xor_rows")
    return out[0] if single else out
