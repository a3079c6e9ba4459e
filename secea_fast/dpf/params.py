"""One parameters object for DPF keys: what a key's layout and every kernel
call depend on.

``Params(log_domain, group, d, vector=, early=)`` holds the domain bits n
(x in [0, 2^n)), the group ('u64' = Z_2^64, 'u32' = Z_2^32 or a prime p for
F_p), the payload length d (1 for a scalar beta), whether the payload is a
vector, and whether the tree terminates early (e = 3 levels for Z_2^64, 4
for Z_2^32: a leaf then packs 2^e outputs).  Path keys (SecEmb's PathGen
output: the tree without a final correction word) have ``Params.path(n)``:
d = 0.  Everything else is derived: the tree depth ``levels`` = n - e, the
final correction word's element count ``ncw`` (d, or 2^e for early keys),
the body size, and the kernels' ``secea_dpf_shape`` (``shape()``).
"""
from __future__ import annotations

import functools

from .._checks import check_int
from ._layout import (FLAG_EARLY, FLAG_VECTOR, HEADER, MAX_PAYLOAD, U64, VERSION, Group, body_size, check_early,
                      check_log_domain, early_e, group_of, kernel_shape)

__all__ = ["Params"]


class Params:
    """The parameters of a DPF key or key batch (immutable; equal parameters
    compare equal).  ``Params(8)`` is a scalar Z_2^64 key over [0, 2^8)
    without early termination; ``Params(8, early=True)`` the default scalar
    key of ``gen``; ``Params(8, 'u32', 4)`` a 4-element Z_2^32 payload."""

    __slots__ = ("log_domain", "g", "d", "vector", "early", "e", "levels", "ncw", "path_size", "body_size", "_kshape")
    log_domain: int
    g: Group
    d: int
    vector: bool
    early: bool
    e: int              # early-termination levels (0 for depth-n keys)
    levels: int         # the tree depth n - e
    ncw: int            # elements of the final correction word: 2^e for early keys, else d (0 for path keys)
    path_size: int      # bytes of the path part of a body: 32 + 16 levels
    body_size: int      # bytes of one key body (csrc/include/secea.h)

    def __init__(self, log_domain: int, group: str | int = "u64", d: int = 1, *, vector: bool | None = None,
                 early: bool = False) -> None:
        n = check_log_domain(log_domain)
        g = group_of(group)
        d = check_int(d, "d")
        if not 1 <= d <= MAX_PAYLOAD:
            raise ValueError(f"d must be between 1 and {MAX_PAYLOAD}, got {d}")
        vec = d > 1 if vector is None else vector
        if not isinstance(vec, bool):
            raise TypeError(f"vector must be a bool or None, got {type(vec).__name__}")
        if not vec and d != 1:
            raise ValueError(f"a scalar payload has d = 1, got {d}")
        self._set(n, g, d, vec, check_early(early, g, vec))

    def _set(self, n: int, g: Group, d: int, vector: bool, early: bool) -> None:
        # everything derived is computed once: the objects are immutable and cached (``of``)
        self.log_domain, self.g, self.d, self.vector, self.early = n, g, d, vector, early
        self.e = early_e(g, n) if early else 0
        self.levels = n - self.e
        self.ncw = (1 << self.e) if early else d
        self.path_size = 32 + 16 * self.levels
        self.body_size = body_size(self.levels, self.ncw, g.width) if d else self.path_size
        self._kshape = kernel_shape(self.levels, self.e, g.gid, g.p, self.ncw, self.body_size)

    @classmethod
    def of(cls, log_domain: int, g: Group, d: int, vector: bool, early: bool) -> Params:
        """The parameters from checked values (the package's constructor:
        no validation; equal arguments give the same cached object)."""
        return _cached(log_domain, g.gid, g.p, d, vector, early)

    @classmethod
    def path(cls, log_domain: int) -> Params:
        """The parameters of path keys of depth ``log_domain`` (no payload: d = 0)."""
        return _cached(log_domain, 0, 0, 0, False, False)

    @property
    def is_path(self) -> bool:
        """True for path keys (no final correction word)."""
        return self.d == 0

    @property
    def group(self) -> str | int:
        """'u64', 'u32' or the prime p."""
        return self.g.name

    def shape(self, stride: int | None = None) -> object:
        """The kernels' ``secea_dpf_shape`` for bodies ``stride`` bytes apart
        (default: the body size); cached, read-only."""
        if stride is None or stride == self.body_size:
            return self._kshape
        return kernel_shape(self.levels, self.e, self.g.gid, self.g.p, self.ncw, stride)

    def header(self, magic: bytes, party: int) -> bytes:
        """The 24-byte key header (module ``_layout``) of a body with these parameters."""
        if self.is_path:
            return HEADER.pack(magic, VERSION, party, self.log_domain, 0, 0, b"\0\0\0", 0, 0)
        flags = (FLAG_EARLY if self.early else 0) | (FLAG_VECTOR if self.vector else 0)
        return HEADER.pack(magic, VERSION, party, self.log_domain, flags, self.g.gid, b"\0\0\0", self.d,
                           self.g.header_modulus)

    def _key(self) -> tuple:
        return (self.log_domain, self.g.gid, self.g.p, self.d, self.vector, self.early)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Params) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self.is_path:
            return f"Params.path({self.log_domain})"
        return (f"Params({self.log_domain}, {self.group!r}, {self.d}, vector={self.vector}, "
                f"early={self.early})")


@functools.lru_cache(maxsize=4096)
def _cached(n: int, gid: int, p: int, d: int, vector: bool, early: bool) -> Params:
    obj = Params.__new__(Params)
    obj._set(n, U64 if gid == 0 else Group(gid, p), d, vector, early)
    return obj
