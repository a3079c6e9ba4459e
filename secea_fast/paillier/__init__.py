"""Paillier encryption (PHE of SecEA, Sec. III-B) on gmpy2, batched.

Scheme (Paillier 1999, with g = n + 1 as in python-paillier ``phe``):

* ``keygen(bits=3072)``: n = pq with p, q primes of bits/2 bits (top two bits
  set, so n has exactly ``bits`` bits) found from random starts from ``secrets``;
  gcd(pq, (p-1)(q-1)) = 1.  Fewer than 2048 bits only with ``insecure=True``.
* Encryption: c = (1 + m n) r^n mod n^2, r uniform in Z_n^* from ``secrets``
  (gcd(r, n) = 1 checked).  The obfuscator r^n mod n^2 is the expensive part
  and does not depend on m: ``pk.precompute(count)`` makes a pool of them
  offline (in worker processes); ``encrypt`` pops one per value (never
  reused) and computes fresh ones when the pool runs dry.  With the private
  key (``sk.encrypt``) obfuscators are made by CRT mod p^2 and q^2.
* Short-exponent variant (an explicit option, never the default):
  ``keygen(bits, variant="short-exponent")`` gives a
  ``ShortExponentPublicKey`` (n, hs = x^n mod n^2) whose randomizers are
  hs^alpha, alpha of 2 lambda bits (224 for n of 2048 bits), from a
  fixed-base table in constant time (csrc/bignum/fb_powm.c): Damgard,
  Jurik, Nielsen 2010, under an extra short-exponent assumption named in
  the class's docstring.  Decryption and homomorphic operations are
  shared; keys, their wire forms and ciphertext bytes carry the variant
  and refuse the other (``VARIANTS``, ``ciphertexts_nbytes``).
* Decryption by CRT mod p^2 and q^2 with a constant-time exponentiation for
  the secret exponents: eight at a time on AVX-512 IFMA lanes, four for
  small batches (``_mb.powmod_sec_batch``, csrc/bignum/mb8_powm.c), one or
  two (one decryption) with each number across the lanes
  (csrc/bignum/hz_powm.c) where the CPU has it; without IFMA, batches of
  three or more per prime four at a time on AVX2 lanes
  (csrc/bignum/fb_powm.c, ``secea_vb4_powm``), ``gmpy2.powmod_sec``
  otherwise; ciphertexts must satisfy 0 < c < n^2 and
  gcd(c, n) = 1.  Obfuscators and scalar products use the same kernel.
* Plaintexts are residues mod n: ``encrypt`` accepts -(n-1)/2 <= m < n (m < 0
  means n + m), ``decrypt`` returns [0, n) or, with ``signed=True``, the
  centred value.  Ciphertexts are plain Python ints; batches are sequences or
  NumPy integer / object arrays; batch results are lists of ints.
* Homomorphic operations on batches (or single ints): ``pk.add``, ``pk.sub``,
  ``pk.neg``, ``pk.add_plain``, ``pk.mul_scalar`` (any int, negative via the
  inverse), ``pk.multi_exp`` (prod c_i^k_i by the bucket method),
  ``pk.rerandomize``; also as module functions taking the key first.
* Packing: ``pk.encrypt_packed(values, slot_bits)`` /
  ``sk.decrypt_packed(cts, slot_bits, count)`` put
  (n.bit_length() - 1 - GUARD_BITS) // slot_bits values per plaintext;
  ``check_packing(slot_bits, value_bits, additions, scalar_bits)`` enforces
  slot_bits >= value_bits + ceil(log2(additions)) + scalar_bits.
* Parallelism: ``processes=k`` on ``encrypt``, ``decrypt``, ``mul_scalar``,
  ``precompute``, ``rerandomize`` splits a batch over the calling process and
  k - 1 worker processes forked for the call (the package's one pool,
  ``secea_fast._workers``; see ``secea_fast.paillier._pool``): they import
  nothing, so this works from scripts read from stdin and notebooks, and a
  dead worker's chunk is recomputed rather than lost; they inherit the key
  (private-key work: its factors) by fork.  A public key pickles as n alone
  (never unpickle data from another party); a private key is neither pickled
  nor copied (``secea_fast._secrets``: one rule for every secret).
  ``shutdown_workers()`` drops cached key contexts.
* Wire formats without pickle: ``to_bytes`` / ``from_bytes`` and ``to_json`` /
  ``from_json`` on keys (versioned; the private forms contain p and q),
  ``ciphertexts_to_bytes`` / ``ciphertexts_from_bytes`` (fixed width
  2 * ceil(bits / 8) bytes, big-endian).  Malformed input raises ValueError.
* Interop with ``phe``: ``PublicKey.from_phe`` / ``PrivateKey.from_phe`` /
  ``.to_phe()``; raw ciphertexts decrypt across both libraries
  (``phe.EncryptedNumber(pk, c, exponent=0)``, ``raw_encrypt`` /
  ``raw_decrypt``).

Nothing here uses ``random`` or ``numpy.random``.

>>> pk, sk = keygen(1024, insecure=True)
>>> c = pk.encrypt([20, 22, -1])
>>> sk.decrypt(pk.add(c, pk.mul_scalar(c, 2)), signed=True)
[60, 66, -3]
>>> sk.decrypt_packed(pk.encrypt_packed([1, 2, 3], 16), 16, 3)
[1, 2, 3]
"""
from __future__ import annotations

from ._keys import (MAX_BITS, MIN_BITS, MIN_INSECURE_BITS, SHORT_EXPONENT, TEXTBOOK, VARIANTS, IntOrInts, Ints,
                    PrivateKey, PublicKey, ShortExponentPublicKey, ciphertexts_from_bytes, ciphertexts_nbytes,
                    ciphertexts_to_bytes, keygen)
from ._packing import GUARD_BITS, check_packing
from ._pool import shutdown_workers

__all__ = ["keygen", "PublicKey", "PrivateKey", "ShortExponentPublicKey", "TEXTBOOK", "SHORT_EXPONENT",
           "VARIANTS", "ciphertexts_to_bytes", "ciphertexts_nbytes", "ciphertexts_from_bytes",
           "check_packing", "GUARD_BITS", "MIN_BITS", "MIN_INSECURE_BITS", "MAX_BITS",
           "shutdown_workers", "add", "sub", "neg", "add_plain", "mul_scalar", "multi_exp"]


def add(pk: PublicKey, a: IntOrInts, b: IntOrInts) -> int | list[int]:
    """``pk.add(a, b)``: E(x + y)."""
    return pk.add(a, b)


def sub(pk: PublicKey, a: IntOrInts, b: IntOrInts) -> int | list[int]:
    """``pk.sub(a, b)``: E(x - y)."""
    return pk.sub(a, b)


def neg(pk: PublicKey, c: IntOrInts) -> int | list[int]:
    """``pk.neg(c)``: E(-x)."""
    return pk.neg(c)


def add_plain(pk: PublicKey, c: IntOrInts, m: IntOrInts) -> int | list[int]:
    """``pk.add_plain(c, m)``: E(x + m)."""
    return pk.add_plain(c, m)


def mul_scalar(pk: PublicKey, c: IntOrInts, k: IntOrInts, *, processes: int | None = None) -> int | list[int]:
    """``pk.mul_scalar(c, k)``: E(k x)."""
    return pk.mul_scalar(c, k, processes=processes)


def multi_exp(pk: PublicKey, cts: Ints, ks: Ints) -> int:
    """``pk.multi_exp(cts, ks)``: E(sum k_i x_i)."""
    return pk.multi_exp(cts, ks)
