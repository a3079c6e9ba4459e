"""Paillier keys: generation, encryption, decryption, homomorphic operations,
packing and serialization.  See the package docstring for the conventions.

Length (about 900 lines): ``PublicKey`` and ``PrivateKey`` with their
single and batch paths and serialization, and ``ShortExponentPublicKey``
(the short-exponent variant, a ``PublicKey`` with another randomizer);
the batch paths share the key's precomputed state, so they stay methods of
one class, and the variants' serializations refuse each other's forms, so
they stay beside each other.
"""
from __future__ import annotations

import os
import secrets
import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any, Union, overload

import gmpy2
import numpy as np
from gmpy2 import mpz

from .._checks import check_int
from .._native import available_cpus
from .._secrets import SecretHolder
from . import _core, _fixedbase, _packing, _pool, _serial

MIN_BITS = 2048             # keygen and loaders refuse smaller moduli unless insecure=True
MIN_INSECURE_BITS = 128     # smallest modulus accepted even with insecure=True (tests)
MAX_BITS = 16384            # largest modulus accepted (bounds the work of loaders)
# a batch of ints (a sequence, or an integer / object NumPy array), or one int or a batch
Ints = Union[Sequence[int], np.ndarray]
IntOrInts = Union[int, Sequence[int], np.ndarray]

TEXTBOOK = "textbook"                 # r^n with r uniform in Z_n^* (Paillier 1999): the default
SHORT_EXPONENT = "short-exponent"     # hs^alpha, alpha short (Damgard, Jurik, Nielsen 2010)
VARIANTS = (TEXTBOOK, SHORT_EXPONENT)

_PRIME_ROUNDS = 40          # gmpy2.is_prime: BPSW + (rounds - 24) Miller-Rabin (GMP >= 6.2)


# Every public key with a pool of obfuscators.  A forked child (our worker
# processes fork, and so may a caller's) starts with a copy of each pool; were
# it to encrypt with them, parent and child would use the same r^n twice, and
# c1 / c2 = (1 + n)^(m1 - m2) mod n^2 gives m1 - m2 to anyone holding both.
# So a child drops every inherited pool before it runs anything.
_POOLED_KEYS: weakref.WeakSet[PublicKey] = weakref.WeakSet()


def _drop_inherited_pools() -> None:
    for key in list(_POOLED_KEYS):
        key._pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_inherited_pools)


# --------------------------------------------------------------------------------------
# argument helpers


def _check_flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _check_processes(processes, default: int) -> int:
    if processes is None:
        return default
    processes = check_int(processes, "processes")
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    return processes


def _is_batch(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    return not isinstance(x, (str, bytes, bytearray, memoryview)) and hasattr(x, "__iter__")


def _int_list(values, name: str) -> list:
    """A batch of integers as a list of Python ints (NumPy arrays are flattened
    in C order; integer dtypes and object arrays of ints are accepted)."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iu":
            return values.ravel().tolist()
        if values.dtype == object:
            return [check_int(v, name) for v in values.ravel()]
        raise TypeError(f"{name} must hold integers, got a {values.dtype} array")
    if not _is_batch(values):
        raise TypeError(f"{name} must be a sequence or NumPy array of ints, got "
                        f"{type(values).__name__} (wrap a single value in a list)")
    return [v if type(v) is int else check_int(v, name) for v in values]


def _args(x, name: str):
    """(list of ints, was_scalar) for an argument that may be a scalar or a batch."""
    if type(x) is int:                          # the single-value call: no further checks needed
        return [x], True
    if _is_batch(x):
        return _int_list(x, name), False
    return [check_int(x, name)], True


def _broadcast(a: list, sa: bool, b: list, sb: bool, names=("a", "b")):
    if sa and not sb:
        a = a * len(b)
    elif sb and not sa:
        b = b * len(a)
    elif len(a) != len(b):
        raise ValueError(f"length mismatch: {names[0]} has {len(a)} entries, {names[1]} has {len(b)}")
    return a, b, sa and sb


def _out(values, scalar: bool):
    return int(values[0]) if scalar else [int(v) for v in values]


# --------------------------------------------------------------------------------------
# key generation


def _random_prime(bits: int) -> mpz:
    """A prime of exactly `bits` bits with the top two bits set: the first
    prime after a random odd start from `secrets` with those bits set
    (``gmpy2.next_prime``, i.e. GMP's sieve + BPSW, as phe and OpenSSL search),
    confirmed with ``gmpy2.is_prime(p, 40)``."""
    top = mpz(3) << (bits - 2)
    while True:
        p = gmpy2.next_prime(mpz(secrets.randbits(bits)) | top | 1)
        if p.bit_length() == bits and gmpy2.is_prime(p, _PRIME_ROUNDS):
            return p


def keygen(bits: int = 3072, insecure: bool = False, *, variant: str = TEXTBOOK,
           exponent_bits: int | None = None) -> tuple[PublicKey, PrivateKey]:
    """A fresh key pair ``(PublicKey, PrivateKey)`` with an n of exactly ``bits`` bits.

    ``variant``: ``"textbook"`` (the default: randomizers r^n, r uniform in
    Z_n^*) or ``"short-exponent"`` (a ``ShortExponentPublicKey``: a fixed
    hs = x^n mod n^2 for a random unit x, randomizers hs^alpha with alpha
    of ``exponent_bits`` bits, default twice the modulus's security level;
    see ``ShortExponentPublicKey`` for the extra assumption it rests on).

    p and q are primes of bits // 2 and bits - bits // 2 bits with their two
    top bits set (so n = pq has exactly ``bits`` bits): the next prime after a
    random odd start from the OS CSPRNG (``secrets``), confirmed with
    ``gmpy2.is_prime`` (BPSW plus 16 Miller-Rabin rounds); p != q,
    gcd(pq, (p-1)(q-1)) = 1 and
    |p - q| > 2^(bits/2 - 100) (against Fermat factoring).  ``bits`` must be
    >= 2048; smaller keys (down to 128 bits) need ``insecure=True`` and are
    for tests only.
    """
    bits = check_int(bits, "bits")
    insecure = _check_flag(insecure, "insecure")
    variant = _check_variant(variant, "variant")
    if exponent_bits is not None and variant != SHORT_EXPONENT:
        raise ValueError("exponent_bits is an option of the short-exponent variant only "
                         f"(variant={variant!r})")
    if bits < MIN_BITS and not insecure:
        raise ValueError(f"bits must be >= {MIN_BITS} (got {bits}); pass insecure=True for test keys")
    if not MIN_INSECURE_BITS <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in [{MIN_INSECURE_BITS}, {MAX_BITS}], got {bits}")
    pbits = bits // 2
    qbits = bits - pbits
    while True:
        p, q = _random_prime(pbits), _random_prime(qbits)
        if p == q:
            continue
        n = p * q
        if n.bit_length() != bits or gmpy2.gcd(n, (p - 1) * (q - 1)) != 1:
            continue
        if pbits > 200 and abs(p - q).bit_length() <= pbits - 100:
            continue
        break
    if variant == SHORT_EXPONENT:
        hs = gmpy2.powmod(_core.random_unit(n), n, n * n)
        pk: PublicKey = ShortExponentPublicKey(int(n), int(hs), exponent_bits=exponent_bits, insecure=True)
    else:
        pk = PublicKey(int(n), insecure=True)
    return pk, PrivateKey(pk, int(p), int(q))


def _check_variant(variant, name: str) -> str:
    if not isinstance(variant, str):
        raise TypeError(f"{name} must be a str, got {type(variant).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"{name} must be one of {VARIANTS}, got {variant!r}")
    return variant


# --------------------------------------------------------------------------------------
# public key


def _restore_public_key(n):
    return PublicKey(n, insecure=True)



class PublicKey:
    """Paillier public key (n, g = n + 1).

    Ciphertexts are plain Python ints in (0, n^2).  Plaintexts are residues mod
    n: ``encrypt`` accepts ints m with -(n-1)/2 <= m < n and encrypts m mod n
    (a negative m is the residue n + m); ``PrivateKey.decrypt`` returns
    residues in [0, n), or with ``signed=True`` the centred representative
    in [-(n-1)/2, (n-1)/2].  Batch arguments are sequences or NumPy arrays
    (integer dtypes or object arrays of Python ints; flattened in C order);
    batch results are lists of ints.

    Homomorphic operations check that ciphertexts lie in (0, n^2); whether
    they are units (gcd(c, n) = 1) is checked at decryption.

    ``precompute(count)`` fills a pool of obfuscators r^n mod n^2; ``encrypt``
    consumes one per value (popped, never reused) and falls back to fresh
    randomness when the pool is empty.  The pool is never serialized or
    pickled, and a forked child process starts with an empty one (an
    obfuscator used twice reveals the difference of the two plaintexts).

    Pickling (``__reduce__``) exists only to move keys to our own worker
    processes: it carries n alone.  Never unpickle data from another party;
    use ``to_bytes`` / ``to_json`` for the wire.
    """

    __slots__ = ("_nint", "_n2int", "_bits", "_n", "_n2", "_half", "_pool", "__weakref__")

    def __init__(self, n: int, *, insecure: bool = False) -> None:
        n = check_int(n, "n")
        insecure = _check_flag(insecure, "insecure")
        bits = n.bit_length()
        if bits < MIN_BITS and not insecure:
            raise ValueError(f"n has {bits} bits, fewer than {MIN_BITS}; pass insecure=True for test keys")
        if not MIN_INSECURE_BITS <= bits <= MAX_BITS:
            raise ValueError(f"n must have between {MIN_INSECURE_BITS} and {MAX_BITS} bits, got {bits}")
        if n % 2 == 0 or gmpy2.is_square(n) or gmpy2.is_prime(n, 1):
            raise ValueError("n is not a product of two distinct odd primes (even, square or prime)")
        self._nint = n
        self._n2int = n * n
        self._bits = bits
        self._n = mpz(n)
        self._n2 = mpz(self._n2int)
        self._half = (n - 1) // 2
        self._pool: deque[mpz] = deque()
        _POOLED_KEYS.add(self)

    @property
    def n(self) -> int:
        return self._nint

    @property
    def nsquare(self) -> int:
        return self._n2int

    @property
    def g(self) -> int:
        return self._nint + 1

    @property
    def bits(self) -> int:
        """n.bit_length()"""
        return self._bits

    @property
    def variant(self) -> str:
        """``"textbook"`` (this class) or ``"short-exponent"``
        (``ShortExponentPublicKey``)."""
        return TEXTBOOK

    # ---- dunder ---------------------------------------------------------------------

    def __eq__(self, other):
        return isinstance(other, PublicKey) and other.variant == self.variant and other.n == self.n

    def __hash__(self):
        return hash(("secea_fast.paillier.PublicKey", self.n))

    def __repr__(self):
        h = format(self.n, "x")
        return f"PublicKey(bits={self.bits}, n=0x{h[:8]}...{h[-8:]})"

    def __reduce__(self):
        return (_restore_public_key, (self.n,))

    # ---- validation -----------------------------------------------------------------

    def _plaintexts(self, values, name="values", scalar_ok=False):
        ms, scalar = _args(values, name) if scalar_ok else (_int_list(values, name), False)
        n, lo = self.n, -self._half
        for i, m in enumerate(ms):
            if not lo <= m < n:
                raise ValueError(f"{name}[{i}] is outside [-(n-1)/2, n): plaintexts are residues mod n")
        return [mpz(m % n) if m < 0 else mpz(m) for m in ms], scalar

    def _ciphertexts(self, cts, name="ciphertexts", scalar_ok=False):
        cs, scalar = _args(cts, name) if scalar_ok else (_int_list(cts, name), False)
        n2 = self.nsquare
        for i, c in enumerate(cs):
            if not 0 < c < n2:
                raise ValueError(f"{name}[{i}] is not a ciphertext: outside (0, n^2)")
        return [mpz(c) for c in cs], scalar

    # ---- randomness -----------------------------------------------------------------

    def _fresh_obfuscators(self, count: int, processes: int) -> list:
        if processes > 1 and count > 1:
            xs = _pool.run_count(_pool.task_obfuscators_public, (self.n,), count, processes)
            return [mpz(x) for x in xs]
        return _core.obfuscators_public(self._n, self._n2, count)

    def _obfuscators(self, count: int, processes: int, fresh=None) -> list:
        xs: list[mpz] = []
        pool = self._pool
        try:
            while len(xs) < count:
                xs.append(pool.popleft())
        except IndexError:
            pass
        if len(xs) < count:
            xs.extend((fresh or self._fresh_obfuscators)(count - len(xs), processes))
        return xs

    @property
    def pool_size(self) -> int:
        """Number of precomputed obfuscators left."""
        return len(self._pool)

    def clear_pool(self) -> None:
        """Drop all precomputed obfuscators."""
        self._pool.clear()

    def precompute(self, count: int, processes: int | None = None) -> int:
        """Append ``count`` fresh obfuscators r^n mod n^2 (r uniform in Z_n^*) to
        the pool, computed by ``processes`` processes (default: every CPU
        this process may use; 1 = the calling process alone).  Returns the
        pool size."""
        count = check_int(count, "count")
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        processes = _check_processes(processes, available_cpus())
        self._pool.extend(self._fresh_obfuscators(count, processes))
        return len(self._pool)

    # ---- encryption -----------------------------------------------------------------

    def encrypt(self, values: Ints, *, processes: int | None = None) -> list[int]:
        """Ciphertexts (1 + m n) r^n mod n^2 of a batch of plaintexts.

        Obfuscators come from the precomputed pool first, then fresh (r uniform
        in Z_n^* from ``secrets``, gcd(r, n) = 1 checked), computed by
        ``processes`` processes (default 1: the calling process)."""
        ms, _ = self._plaintexts(values)
        processes = _check_processes(processes, 1)
        xs = self._obfuscators(len(ms), processes)
        return _out(_core.combine(ms, xs, self._n, self._n2), False)

    def encrypt_with_r(self, values: Ints, rs: Ints) -> list[int]:
        """Deterministic encryption with caller-chosen r (known-answer tests,
        interop with phe's ``raw_encrypt(m, r_value=r)``).  Each r must be in
        [1, n) with gcd(r, n) = 1 (ValueError otherwise).  r must be secret and
        uniform for the ciphertext to hide m: use ``encrypt``."""
        ms, _ = self._plaintexts(values)
        rs = _int_list(rs, "rs")
        if len(rs) != len(ms):
            raise ValueError(f"length mismatch: {len(ms)} values, {len(rs)} r values")
        n = self._n
        for i, r in enumerate(rs):
            if not 0 < r < self.n or gmpy2.gcd(r, n) != 1:
                raise ValueError(f"rs[{i}] is not in Z_n^* (r must satisfy 0 < r < n, gcd(r, n) = 1)")
        xs = gmpy2.powmod_base_list([mpz(r) for r in rs], n, self._n2)
        return _out(_core.combine(ms, xs, n, self._n2), False)

    def rerandomize(self, ciphertexts: Ints, *, processes: int | None = None) -> list[int]:
        """c * r^n mod n^2 with fresh (or pooled) obfuscators: the same
        plaintexts under new randomness."""
        cs, _ = self._ciphertexts(ciphertexts)
        xs = self._obfuscators(len(cs), _check_processes(processes, 1))
        n2 = self._n2
        return [int(c * x % n2) for c, x in zip(cs, xs)]

    # ---- packing --------------------------------------------------------------------

    def slots(self, slot_bits: int) -> int:
        """Values of ``slot_bits`` bits per packed plaintext:
        (n.bit_length() - 1 - GUARD_BITS) // slot_bits."""
        return _packing.slots_per_plaintext(self.bits, slot_bits)

    def _pack(self, values, slot_bits) -> list:
        slots = self.slots(slot_bits)
        vals = _int_list(values, "values")
        limit = 1 << slot_bits
        for i, v in enumerate(vals):
            if not 0 <= v < limit:
                raise ValueError(f"values[{i}] is outside [0, 2^{slot_bits})")
        return _packing.pack(vals, slot_bits, slots)

    def encrypt_packed(self, values: Ints, slot_bits: int, *, processes: int | None = None) -> list[int]:
        """Encrypt non-negative values < 2^slot_bits, ``self.slots(slot_bits)``
        per ciphertext (layout and capacity rule: ``check_packing``).  Returns
        ceil(len(values) / slots) ciphertexts."""
        pts = self._pack(values, slot_bits)
        return self.encrypt(pts, processes=processes)

    # ---- homomorphic operations (scalars or batches) ----------------------------------

    @overload
    def add(self, a: int, b: int) -> int: ...
    @overload
    def add(self, a: Ints, b: IntOrInts) -> list[int]: ...
    @overload
    def add(self, a: IntOrInts, b: Ints) -> list[int]: ...

    def add(self, a: IntOrInts, b: IntOrInts) -> int | list[int]:
        """E(x) * E(y) mod n^2 = E(x + y): ciphertext + ciphertext (scalars,
        batches of equal length, or a scalar broadcast over a batch)."""
        top = self.nsquare
        if type(a) is int and type(b) is int and 0 < a < top and 0 < b < top:   # one value: no lists
            return int(mpz(a) * b % self._n2)
        (A, sa), (B, sb) = self._ciphertexts(a, "a", True), self._ciphertexts(b, "b", True)
        A, B, scalar = _broadcast(A, sa, B, sb)
        n2 = self._n2
        return _out([x * y % n2 for x, y in zip(A, B)], scalar)

    @overload
    def sub(self, a: int, b: int) -> int: ...
    @overload
    def sub(self, a: Ints, b: IntOrInts) -> list[int]: ...
    @overload
    def sub(self, a: IntOrInts, b: Ints) -> list[int]: ...

    def sub(self, a: IntOrInts, b: IntOrInts) -> int | list[int]:
        """E(x) * E(y)^-1 mod n^2 = E(x - y)."""
        return self.add(a, self.neg(b))

    @overload
    def neg(self, c: int) -> int: ...
    @overload
    def neg(self, c: Ints) -> list[int]: ...

    def neg(self, c: IntOrInts) -> int | list[int]:
        """E(x)^-1 mod n^2 = E(-x)."""
        cs, scalar = self._ciphertexts(c, "c", True)
        n2 = self._n2
        try:
            return _out([gmpy2.invert(x, n2) for x in cs], scalar)
        except ZeroDivisionError:
            raise ValueError("ciphertext is not invertible mod n^2 (shares a factor with n)") from None

    @overload
    def add_plain(self, c: int, m: int) -> int: ...
    @overload
    def add_plain(self, c: Ints, m: IntOrInts) -> list[int]: ...
    @overload
    def add_plain(self, c: IntOrInts, m: Ints) -> list[int]: ...

    def add_plain(self, c: IntOrInts, m: IntOrInts) -> int | list[int]:
        """E(x) * (1 + m n) mod n^2 = E(x + m) for plaintexts m (no fresh
        randomness: rerandomize if the result leaves your hands and m must
        stay hidden from someone who saw c)."""
        cs, sc = self._ciphertexts(c, "c", True)
        ms, sm = self._plaintexts(m, "m", True)
        cs, ms, scalar = _broadcast(cs, sc, ms, sm, ("c", "m"))
        return _out(_core.combine(ms, cs, self._n, self._n2), scalar)

    @overload
    def mul_scalar(self, c: int, k: int, *, processes: int | None = None) -> int: ...
    @overload
    def mul_scalar(self, c: Ints, k: IntOrInts, *, processes: int | None = None) -> list[int]: ...
    @overload
    def mul_scalar(self, c: IntOrInts, k: Ints, *, processes: int | None = None) -> list[int]: ...

    def mul_scalar(self, c: IntOrInts, k: IntOrInts, *, processes: int | None = None) -> int | list[int]:
        """E(x)^k mod n^2 = E(k x mod n) for integer k of any size (k < 0 through
        the inverse, k = 0 gives the trivial ciphertext 1: rerandomize it before
        sending).  ``k`` is one int for the whole batch or a batch of ints;
        ``processes`` splits a batch over processes."""
        if type(c) is int and type(k) is int and 0 < c < self.nsquare and k >= 0 and processes is None:
            return int(_core.powmod_public([c], [k], self._n2)[0])   # one value: no argument lists
        cs, sc = self._ciphertexts(c, "c", True)
        ks, sk = _args(k, "k")
        processes = _check_processes(processes, 1)
        n2 = self._n2
        try:
            if sk and not sc:
                kk = ks[0]
                if processes > 1 and len(cs) > 1:
                    out = _pool.run_items(_pool.task_powmod_broadcast, (self.nsquare, kk),
                                          [int(x) for x in cs], processes,
                                          cheap=abs(kk).bit_length() <= 256)
                else:
                    out = _core.powmod_broadcast(cs, kk, n2)
                return _out(out, False)
            cs, ks, scalar = _broadcast(cs, sc, ks, sk, ("c", "k"))
            if processes > 1 and len(cs) > 1:
                cheap = max(abs(y).bit_length() for y in ks) <= 256
                out = _pool.run_items(_pool.task_powmod_pairs, (self.nsquare,),
                                      [(int(x), y) for x, y in zip(cs, ks)], processes, cheap=cheap)
            else:
                out = _core.powmod_pairs(cs, ks, n2)
            return _out(out, scalar)
        except ZeroDivisionError:
            raise ValueError("ciphertext is not invertible mod n^2 (shares a factor with n)") from None

    def multi_exp(self, cts: Ints, ks: Ints) -> int:
        """prod_i c_i^k_i mod n^2 = E(sum_i k_i x_i): an encrypted inner product
        with plaintext integer weights (any size, negative allowed), by the
        bucket method (about 2-3x fewer multiplications than separate
        exponentiations for 64 weights of 64 bits)."""
        cs, _ = self._ciphertexts(cts, "cts")
        ks = _int_list(ks, "ks")
        if len(ks) != len(cs):
            raise ValueError(f"length mismatch: {len(cs)} ciphertexts, {len(ks)} weights")
        try:
            return int(_core.multi_exp(cs, ks, self._n2))
        except ZeroDivisionError:
            raise ValueError("ciphertext is not invertible mod n^2 (shares a factor with n)") from None

    # ---- interop and serialization --------------------------------------------------

    @classmethod
    def from_phe(cls, pk: Any, *, insecure: bool = False) -> PublicKey:
        """From a ``phe.PaillierPublicKey`` (phe also uses g = n + 1, so raw
        ciphertexts are interchangeable)."""
        n = getattr(pk, "n", None)
        if n is None or not hasattr(pk, "nsquare"):
            raise TypeError(f"expected a phe.PaillierPublicKey, got {type(pk).__name__}")
        return cls(n, insecure=insecure)

    def to_phe(self) -> Any:
        """This key as a ``phe.PaillierPublicKey`` (needs ``phe``)."""
        from phe import paillier
        return paillier.PaillierPublicKey(self.n)

    def to_bytes(self) -> bytes:
        return _serial.encode_key(_serial.PUBLIC_MAGIC, self.n)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *, insecure: bool = False) -> PublicKey:
        if bytes(data[:len(_serial.SHORT_PUBLIC_MAGIC)]) == _serial.SHORT_PUBLIC_MAGIC:
            raise ValueError("data is a short-exponent public key, not a textbook one: load it with "
                             "ShortExponentPublicKey.from_bytes (the two variants never mix)")
        (n,) = _serial.decode_key(data, _serial.PUBLIC_MAGIC, 1, "public key")
        return cls(n, insecure=insecure)

    def to_json(self) -> str:
        return _serial.encode_json(_serial.PUBLIC_KIND, n=self.n)

    @classmethod
    def from_json(cls, text: str, *, insecure: bool = False) -> PublicKey:
        if _serial.json_kind(text) == _serial.SHORT_PUBLIC_KIND:
            raise ValueError("text is a short-exponent public key, not a textbook one: load it with "
                             "ShortExponentPublicKey.from_json (the two variants never mix)")
        obj = _serial.decode_json(text, _serial.PUBLIC_KIND, ("n",), "public key")
        return cls(obj["n"], insecure=insecure)


def _restore_short_key(n, hs, exponent_bits):
    return ShortExponentPublicKey(n, hs, exponent_bits=exponent_bits, insecure=True)


class ShortExponentPublicKey(PublicKey):
    """Paillier public key of the short-exponent variant: (n, g = n + 1, hs).

    Encryption is c = (1 + m n) hs^alpha mod n^2 with hs = x^n mod n^2 for
    a random unit x fixed at key generation (an n-th residue, public) and
    alpha uniform in [0, 2^exponent_bits) from ``secrets``: the
    Damgard-Jurik-Nielsen randomizer (Damgard, Jurik, Nielsen, "A
    generalization of Paillier's public-key system with applications to
    electronic voting", Int. J. Inf. Secur. 9(6), 2010: their variant with
    faster encryption, a fixed n-th residue raised to a short random
    exponent; pypaillier 0.8 documents its encryption as this
    "Damgard-Jurik variant with a short exponent").  hs^alpha comes
    from a table of the powers hs^(d 2^(W i)) made once per key (the
    fixed-base method of Brickell, Gordon, McCurley, Wilson, EUROCRYPT
    1992): about exponent_bits / W modular products per encryption instead
    of the about 1.2 bits(n) of r^n.  Decryption and every homomorphic
    operation are textbook Paillier's (``PrivateKey`` decrypts both).

    **Extra assumption.**  Semantic security of textbook Paillier rests on
    the decisional composite residuosity assumption (DCRA) alone.  This
    variant also needs hs^alpha with a short alpha to be indistinguishable
    from a uniform n-th residue mod n^2 (a short-exponent assumption on the
    group of n-th residues, of unknown order; Damgard, Jurik and Nielsen
    state it for their variant, with exponents of bits(n) / 2 bits).  Our
    default exponent is shorter still, twice the modulus's security level
    (224 bits for n of 2048 bits, 256 for 3072), the length at which the
    generic exponent-recovery attacks (kangaroo, baby-step giant-step) cost
    as much as factoring n; ``exponent_bits`` may be set anywhere from that
    up to bits(n) (bits(n) // 2 is DJN's and pypaillier's choice).  Use the
    textbook ``PublicKey`` where DCRA alone must carry the proof.

    The variants never mix: ``variant`` is ``"short-exponent"``, a key never
    equals a textbook key of the same n, its binary and JSON forms have
    their own magic and kind (``PublicKey.from_bytes`` refuses them and
    ``ShortExponentPublicKey.from_bytes`` refuses textbook ones), and
    ``ciphertexts_to_bytes`` tags its ciphertexts so that the other
    variant's keys refuse them.  Ciphertexts in memory are plain ints and
    carry no mark: keep them with their key.

    ``PrivateKey.encrypt`` with the factors still makes textbook CRT
    obfuscators (full r^n); they decrypt the same way.
    """

    __slots__ = ("_hs", "_ebits", "_fb")

    def __init__(self, n: int, hs: int, *, exponent_bits: int | None = None, insecure: bool = False) -> None:
        self._hs = mpz(0)             # set before PublicKey.__init__ files the key under its hash
        self._ebits = 0
        super().__init__(n, insecure=insecure)
        hs = check_int(hs, "hs")
        if not 1 < hs < self._n2int or gmpy2.gcd(hs, self._n) != 1:
            raise ValueError("hs must be a unit of Z_{n^2} other than 1 (an n-th residue x^n mod n^2)")
        lo = _fixedbase.default_exponent_bits(self.bits)
        if exponent_bits is None:
            exponent_bits = lo
        exponent_bits = check_int(exponent_bits, "exponent_bits")
        if not lo <= exponent_bits <= self.bits:
            raise ValueError(f"exponent_bits must be in [{lo}, {self.bits}] for a {self.bits}-bit n "
                             f"(twice its security level up to bits(n)), got {exponent_bits}")
        self._hs = mpz(hs)
        self._ebits = exponent_bits
        self._fb: _fixedbase.FixedBase | None = None

    @property
    def variant(self) -> str:
        return SHORT_EXPONENT

    @property
    def hs(self) -> int:
        """The fixed base hs = x^n mod n^2."""
        return int(self._hs)

    @property
    def exponent_bits(self) -> int:
        """Bits of the exponent alpha of each randomizer hs^alpha."""
        return self._ebits

    def __eq__(self, other):
        return (isinstance(other, ShortExponentPublicKey) and other.n == self.n and other.hs == self.hs
                and other.exponent_bits == self.exponent_bits)

    def __hash__(self):
        return hash(("secea_fast.paillier.ShortExponentPublicKey", self.n))

    def __repr__(self):
        h = format(self.n, "x")
        return (f"ShortExponentPublicKey(bits={self.bits}, exponent_bits={self.exponent_bits}, "
                f"n=0x{h[:8]}...{h[-8:]})")

    def __reduce__(self):
        return (_restore_short_key, (self.n, self.hs, self.exponent_bits))

    def fixed_base(self) -> _fixedbase.FixedBase:
        """The table of hs (built on first use, about nwin 2^W products; kept
        for the key's lifetime: public values)."""
        if self._fb is None:
            self._fb = _fixedbase.build(self._hs, self._n2, self._ebits)
        return self._fb

    def _fresh_obfuscators(self, count: int, processes: int) -> list:
        if processes > 1 and count > 1:
            xs = _pool.run_count(_pool.task_obfuscators_short, (self.n, self.hs, self.exponent_bits),
                                 count, processes)
            return [mpz(x) for x in xs]
        return _fixedbase.randomizers(self.fixed_base(), count)

    def precompute(self, count: int, processes: int | None = None) -> int:
        """Append ``count`` fresh randomizers hs^alpha mod n^2 to the pool
        (as ``PublicKey.precompute``)."""
        return super().precompute(count, processes)

    @classmethod
    def from_phe(cls, pk: Any, *, insecure: bool = False) -> PublicKey:
        raise TypeError("phe has no short-exponent keys: use PublicKey.from_phe")

    def to_phe(self) -> Any:
        """Refused: a ``phe`` key would encrypt with textbook randomizers under
        this key (the variants never mix)."""
        raise ValueError("a short-exponent key has no phe form (phe is textbook Paillier)")

    def to_bytes(self) -> bytes:
        return _serial.encode_key(_serial.SHORT_PUBLIC_MAGIC, self.n, self.hs, self.exponent_bits)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *, insecure: bool = False) -> PublicKey:
        if bytes(data[:len(_serial.PUBLIC_MAGIC)]) == _serial.PUBLIC_MAGIC:
            raise ValueError("data is a textbook public key, not a short-exponent one: load it with "
                             "PublicKey.from_bytes (the two variants never mix)")
        n, hs, eb = _serial.decode_key(data, _serial.SHORT_PUBLIC_MAGIC, 3, "short-exponent public key")
        return cls(n, hs, exponent_bits=eb, insecure=insecure)

    def to_json(self) -> str:
        return _serial.encode_json(_serial.SHORT_PUBLIC_KIND, n=self.n, hs=self.hs, ebits=self.exponent_bits)

    @classmethod
    def from_json(cls, text: str, *, insecure: bool = False) -> PublicKey:
        if _serial.json_kind(text) == _serial.PUBLIC_KIND:
            raise ValueError("text is a textbook public key, not a short-exponent one: load it with "
                             "PublicKey.from_json (the two variants never mix)")
        obj = _serial.decode_json(text, _serial.SHORT_PUBLIC_KIND, ("n", "hs", "ebits"),
                                  "short-exponent public key")
        return cls(obj["n"], obj["hs"], exponent_bits=obj["ebits"], insecure=insecure)


# --------------------------------------------------------------------------------------
# private key


class PrivateKey(SecretHolder):
    """Paillier private key: the factors p < q of n and the CRT constants.

    ``decrypt`` works mod p^2 and q^2 separately (hp = (-q)^-1 mod p,
    hq = (-p)^-1 mod q for g = n + 1, as in Paillier's paper and phe) with a
    constant-time exponentiation for the secret exponents p - 1 and q - 1
    (the IFMA kernel of ``_mb``, or ``gmpy2.powmod_sec``).
    ``encrypt`` / ``encrypt_packed`` / ``precompute`` use the factors to make
    obfuscators by CRT (about 2.5x faster than with the public key alone).

    Not picklable nor copied (``secea_fast._secrets``): batch workers
    inherit the factors by fork, and the wire forms are ``to_bytes`` /
    ``to_json`` (the key's owner's own storage only).
    """

    __slots__ = ("_pk", "_ctx", "__weakref__")

    def __init__(self, public_key: PublicKey, p: int, q: int) -> None:
        if not isinstance(public_key, PublicKey):
            raise TypeError(f"public_key must be a PublicKey, got {type(public_key).__name__}")
        p, q = check_int(p, "p"), check_int(q, "q")
        if p * q != public_key.n:
            raise ValueError("p * q does not equal the public modulus n")
        if p == q:
            raise ValueError("p and q must be distinct")
        if not (gmpy2.is_prime(p, _PRIME_ROUNDS) and gmpy2.is_prime(q, _PRIME_ROUNDS)):
            raise ValueError("p and q must be prime")
        if gmpy2.gcd(public_key.n, (p - 1) * (q - 1)) != 1:
            raise ValueError("gcd(n, (p-1)(q-1)) != 1")
        self._pk = public_key
        self._ctx = _core.private_context(p, q)

    @property
    def public_key(self) -> PublicKey:
        return self._pk

    @property
    def p(self) -> int:
        return int(self._ctx.p)

    @property
    def q(self) -> int:
        return int(self._ctx.q)

    @property
    def n(self) -> int:
        return self.public_key.n

    def __eq__(self, other):
        return (isinstance(other, PrivateKey) and other._ctx.p == self._ctx.p and other._ctx.q == self._ctx.q
                and other.public_key == self.public_key)

    def __hash__(self):
        return hash(("secea_fast.paillier.PrivateKey", self.public_key.n))

    def __repr__(self):
        return f"PrivateKey(bits={self.public_key.bits})"   # never the factors

    # ---- encryption with the factors ------------------------------------------------

    def _fresh_obfuscators(self, count: int, processes: int) -> list:
        if processes > 1 and count > 1:
            xs = _pool.run_count(_pool.task_obfuscators_private, (self.p, self.q), count, processes)
            return [mpz(x) for x in xs]
        return _core.obfuscators_private(self._ctx, count)

    def precompute(self, count: int, processes: int | None = None) -> int:
        """``PublicKey.precompute`` with CRT obfuscators (fills
        ``self.public_key``'s pool; the factors go to the worker processes)."""
        count = check_int(count, "count")
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        processes = _check_processes(processes, available_cpus())
        pool = self.public_key._pool
        pool.extend(self._fresh_obfuscators(count, processes))
        return len(pool)

    def encrypt(self, values: Ints, *, processes: int | None = None) -> list[int]:
        """``PublicKey.encrypt`` with obfuscators from the public key's pool, then
        fresh ones by CRT."""
        pk = self.public_key
        ms, _ = pk._plaintexts(values)
        xs = pk._obfuscators(len(ms), _check_processes(processes, 1), self._fresh_obfuscators)
        return _out(_core.combine(ms, xs, pk._n, pk._n2), False)

    def encrypt_packed(self, values: Ints, slot_bits: int, *, processes: int | None = None) -> list[int]:
        """``PublicKey.encrypt_packed`` with obfuscators by CRT."""
        return self.encrypt(self.public_key._pack(values, slot_bits), processes=processes)

    # ---- decryption -----------------------------------------------------------------

    def _decrypt_mpz(self, ciphertexts, processes) -> list:
        cs, _ = self.public_key._ciphertexts(ciphertexts)
        bad = _core.find_non_unit(self._ctx, cs)
        if bad >= 0:
            raise ValueError(f"ciphertexts[{bad}] is not a unit mod n^2 (gcd(c, n) != 1)")
        processes = _check_processes(processes, 1)
        if processes > 1 and len(cs) > 1:
            return [mpz(m) for m in _pool.run_items(_pool.task_decrypt, (self.p, self.q),
                                                    [int(c) for c in cs], processes)]
        return _core.decrypt_list(self._ctx, cs)

    def decrypt(self, ciphertexts: Ints, *, signed: bool = False, processes: int | None = None) -> list[int]:
        """Plaintexts in [0, n) (``signed=True``: in [-(n-1)/2, (n-1)/2]) of a
        batch of ciphertexts; ValueError unless 0 < c < n^2 and gcd(c, n) = 1.
        ``processes`` splits the batch over processes (default 1)."""
        signed = _check_flag(signed, "signed")
        ms = self._decrypt_mpz(ciphertexts, processes)
        if signed:
            half, n = self.public_key._half, self.public_key.n
            return [int(m) - n if m > half else int(m) for m in ms]
        return [int(m) for m in ms]

    def decrypt_packed(self, ciphertexts: Ints, slot_bits: int, count: int, *,
                       processes: int | None = None) -> list[int]:
        """The ``count`` slot values of ciphertexts made by ``encrypt_packed(...,
        slot_bits)`` (possibly after additions / scalar multiplications within
        the ``check_packing`` capacity).  ValueError if the number of
        ciphertexts does not match ``count`` or a plaintext overflows its slots."""
        slots = self.public_key.slots(slot_bits)
        count = check_int(count, "count")
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        cts = _int_list(ciphertexts, "ciphertexts")
        need = -(-count // slots)
        if len(cts) != need:
            raise ValueError(f"{count} values of {slot_bits} bits fill {need} ciphertexts "
                             f"({slots} slots each), got {len(cts)}")
        ms = self._decrypt_mpz(cts, processes)
        return _packing.unpack(ms, slot_bits, slots, count)

    # ---- interop and serialization --------------------------------------------------

    @classmethod
    def from_phe(cls, sk: Any, *, insecure: bool = False) -> PrivateKey:
        """From a ``phe.PaillierPrivateKey``."""
        if not all(hasattr(sk, a) for a in ("p", "q", "public_key")):
            raise TypeError(f"expected a phe.PaillierPrivateKey, got {type(sk).__name__}")
        return cls(PublicKey.from_phe(sk.public_key, insecure=insecure), int(sk.p), int(sk.q))

    def to_phe(self) -> Any:
        """This key as a ``phe.PaillierPrivateKey`` (needs ``phe``; textbook keys only)."""
        from phe import paillier
        return paillier.PaillierPrivateKey(self.public_key.to_phe(), self.p, self.q)

    def to_bytes(self) -> bytes:
        """Binary form with p and q (secret!); a short-exponent key's also
        holds hs and the exponent length, under its own magic."""
        pk = self.public_key
        if isinstance(pk, ShortExponentPublicKey):
            return _serial.encode_key(_serial.SHORT_PRIVATE_MAGIC, self.p, self.q, pk.hs, pk.exponent_bits)
        return _serial.encode_key(_serial.PRIVATE_MAGIC, self.p, self.q)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *, insecure: bool = False) -> PrivateKey:
        """Either variant's binary form; the public key is of the variant the
        data names."""
        if bytes(data[:len(_serial.SHORT_PRIVATE_MAGIC)]) == _serial.SHORT_PRIVATE_MAGIC:
            p, q, hs, eb = _serial.decode_key(data, _serial.SHORT_PRIVATE_MAGIC, 4, "short-exponent private key")
            pk: PublicKey = ShortExponentPublicKey(p * q, hs, exponent_bits=eb, insecure=insecure)
        else:
            p, q = _serial.decode_key(data, _serial.PRIVATE_MAGIC, 2, "private key")
            pk = PublicKey(p * q, insecure=insecure)
        if not p < q:
            raise ValueError("private key: the factors must be stored as p < q (canonical form)")
        return cls(pk, p, q)

    def to_json(self) -> str:
        """JSON with n, p and q (secret!), and hs, ebits for a short-exponent key."""
        pk = self.public_key
        if isinstance(pk, ShortExponentPublicKey):
            return _serial.encode_json(_serial.SHORT_PRIVATE_KIND, n=self.n, p=self.p, q=self.q, hs=pk.hs,
                                       ebits=pk.exponent_bits)
        return _serial.encode_json(_serial.PRIVATE_KIND, n=self.n, p=self.p, q=self.q)

    @classmethod
    def from_json(cls, text: str, *, insecure: bool = False) -> PrivateKey:
        """Either variant's JSON form."""
        if _serial.json_kind(text) == _serial.SHORT_PRIVATE_KIND:
            obj = _serial.decode_json(text, _serial.SHORT_PRIVATE_KIND, ("n", "p", "q", "hs", "ebits"),
                                      "short-exponent private key")
            pk: PublicKey = ShortExponentPublicKey(obj["n"], obj["hs"], exponent_bits=obj["ebits"],
                                                   insecure=insecure)
        else:
            obj = _serial.decode_json(text, _serial.PRIVATE_KIND, ("n", "p", "q"), "private key")
            pk = PublicKey(obj["n"], insecure=insecure)
        if not obj["p"] < obj["q"]:
            raise ValueError("private key: the factors must be stored as p < q (canonical form)")
        return cls(pk, obj["p"], obj["q"])


# --------------------------------------------------------------------------------------
# ciphertext wire format


def ciphertexts_to_bytes(cts: Ints, pk: PublicKey) -> bytes:
    """Ciphertexts as fixed-width big-endian fields of 2 * ceil(bits / 8)
    bytes; under a ``ShortExponentPublicKey`` after a 13-byte tag naming
    that variant."""
    if not isinstance(pk, PublicKey):
        raise TypeError(f"pk must be a PublicKey, got {type(pk).__name__}")
    body = _serial.ciphertexts_to_bytes(_int_list(cts, "cts"), pk.nsquare, _serial.ciphertext_width(pk.bits))
    return _serial.SHORT_CT_TAG + body if pk.variant == SHORT_EXPONENT else body


def ciphertexts_nbytes(count: int, pk: PublicKey) -> int:
    """Length of ``ciphertexts_to_bytes`` of ``count`` ciphertexts under ``pk``."""
    if not isinstance(pk, PublicKey):
        raise TypeError(f"pk must be a PublicKey, got {type(pk).__name__}")
    count = check_int(count, "count")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    tag = len(_serial.SHORT_CT_TAG) if pk.variant == SHORT_EXPONENT else 0
    return tag + count * _serial.ciphertext_width(pk.bits)


def ciphertexts_from_bytes(data: bytes, pk: PublicKey) -> list[int]:
    """Inverse of ``ciphertexts_to_bytes``; ValueError on a length that is not a
    multiple of the width, a field outside (0, n^2), or ciphertexts of the
    other variant than ``pk``'s (the tag present or missing)."""
    if not isinstance(pk, PublicKey):
        raise TypeError(f"pk must be a PublicKey, got {type(pk).__name__}")
    raw = _serial.as_bytes(data)
    tagged = raw.startswith(_serial.SHORT_CT_TAG)
    if pk.variant == SHORT_EXPONENT:
        if not tagged:
            raise ValueError("data holds no short-exponent ciphertexts (no tag) but pk is a short-exponent "
                             "key: the two variants never mix")
        raw = raw[len(_serial.SHORT_CT_TAG):]
    elif tagged:
        raise ValueError("data holds short-exponent ciphertexts but pk is a textbook key: the two "
                         "variants never mix")
    return _serial.ciphertexts_from_bytes(raw, pk.nsquare, _serial.ciphertext_width(pk.bits))
