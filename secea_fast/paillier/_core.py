"""gmpy2 kernels behind ``secea_fast.paillier`` (no validation here: the key
classes check their inputs once, at the API boundary, and hand these
functions reduced ``mpz`` values).

Everything secret comes from ``secrets`` (the OS CSPRNG); every exponent that
depends on the factorisation goes through a constant-time exponentiation:
the 8-lane AVX-512 IFMA kernel (``_mb.powmod_sec_batch``, csrc/bignum) where
the CPU has it, ``gmpy2.powmod_sec`` (GMP's side-channel-silent
``mpz_powm_sec``) otherwise.  Public exponents (n, scalars) use the same
kernel in batches of two or more and for a single long exponent (it is
faster than ``powmod`` there too), ``gmpy2.powmod`` otherwise.
"""
from __future__ import annotations

import secrets
from typing import NamedTuple

import gmpy2
from gmpy2 import mpz

from .. import tuning
from . import _fixedbase, _mb

_ONE = mpz(1)


class PrivateContext(NamedTuple):
    """Precomputed values of a private key (all ``mpz``, p < q)."""
    p: mpz
    q: mpz
    n: mpz
    n2: mpz
    psq: mpz
    qsq: mpz
    pm1: mpz
    qm1: mpz
    hp: mpz          # L_p(g^(p-1) mod p^2)^-1 mod p = (-q)^-1 mod p for g = n + 1
    hq: mpz          # (-p)^-1 mod q
    p_inv_q: mpz     # p^-1 mod q        (CRT of plaintexts)
    psq_inv_qsq: mpz  # (p^2)^-1 mod q^2 (CRT of obfuscators)
    mont: dict       # Montgomery constants of p^2 and q^2 for the IFMA kernel, filled on first use


def private_context(p: int, q: int) -> PrivateContext:
    p, q = mpz(min(p, q)), mpz(max(p, q))
    n = p * q
    psq, qsq = p * p, q * q
    return PrivateContext(
        p=p, q=q, n=n, n2=n * n, psq=psq, qsq=qsq, pm1=p - 1, qm1=q - 1,
        hp=gmpy2.invert(-q % p, p), hq=gmpy2.invert(-p % q, q),
        p_inv_q=gmpy2.invert(p, q), psq_inv_qsq=gmpy2.invert(psq, qsq), mont={})


# --------------------------------------------------------------------------------------
# randomness


def random_unit(n: mpz) -> mpz:
    """r uniform in Z_n^* (uniform in [1, n) and resampled unless gcd(r, n) = 1;
    a non-unit reveals a factor of n and has probability about 2^-1023)."""
    bound = int(n) - 1
    for _ in range(64):
        r = mpz(secrets.randbelow(bound) + 1)
        if gmpy2.gcd(r, n) == 1:
            return r
    raise RuntimeError("the CSPRNG keeps returning non-units of Z_n: refusing to continue")


def obfuscators_public(n: mpz, n2: mpz, count: int) -> list:
    """``count`` values r^n mod n^2 with fresh r uniform in Z_n^*."""
    if count <= 0:
        return []
    rs = [random_unit(n) for _ in range(count)]
    return powmod_public(rs, [n] * count, n2)


def _ifma_pays(count: int, exps) -> bool:
    """The IFMA kernels beat ``gmpy2.powmod`` for ``count`` public powers:
    from ``tuning.PAILLIER_MB_MIN_PUBLIC`` bases, or one base with an
    exponent of ``tuning.PAILLIER_HZ_MIN_EBITS`` bits or more (the kernel's
    fixed cost per call outweighs a short exponentiation)."""
    if not count or not _mb.available():
        return False
    return count >= tuning.PAILLIER_MB_MIN_PUBLIC or int(exps[0]).bit_length() >= tuning.PAILLIER_HZ_MIN_EBITS


def powmod_public(bases, exps, n2: mpz) -> list:
    """[b^e mod n^2] for public exponents e >= 0: the IFMA kernels where
    ``_ifma_pays`` (one or two bases with each number across the vector
    lanes, more four or eight lanes per call), ``gmpy2.powmod`` otherwise."""
    if _ifma_pays(len(bases), exps):
        return _mb.powmod_sec_batch(bases, exps, [n2] * len(bases))
    return [gmpy2.powmod(b, e, n2) for b, e in zip(bases, exps)]


def obfuscators_private(ctx: PrivateContext, count: int) -> list:
    """``count`` values distributed exactly as r^n mod n^2 for r uniform in
    Z_n^*, computed by CRT.

    Mod p^2, r^n depends only on s = r mod p and equals omega(s)^q where
    omega(s) = s^p mod p^2 is the Teichmueller lift (the unique (p-1)-th root
    of unity mod p^2 congruent to s).  s -> omega(s)^q is a bijection of Z_p^*
    onto the roots of unity (gcd(q, p - 1) = 1), and so is s -> omega(s): for
    uniform s both give the same, uniform, distribution.  So one
    exponentiation by p (instead of by n) mod p^2 (instead of n^2) per prime,
    with the secret exponent p through ``powmod_sec``: about 2.5x fewer cycles
    than ``obfuscators_public``.
    """
    p, q, psq, qsq, inv = ctx.p, ctx.q, ctx.psq, ctx.qsq, ctx.psq_inv_qsq
    rb = secrets.randbelow
    pb, qb = int(p) - 1, int(q) - 1
    # draw all randomness first: interleaving os.urandom calls (which drop and
    # retake the GIL) with long computations starves other threads
    sps = [mpz(rb(pb) + 1) for _ in range(count)]
    sqs = [mpz(rb(qb) + 1) for _ in range(count)]
    xs = powmod_crt(ctx, sps, p, sqs, q)
    out = []
    for xp, xq in zip(xs[:count], xs[count:]):
        out.append(xp + psq * ((xq - xp) * inv % qsq))
    return out


def powmod_crt(ctx: PrivateContext, bp: list, ep: mpz, bq: list, eq: mpz) -> list:
    """[b^ep mod p^2 for b in bp] + [b^eq mod q^2 for b in bq] (len(bp) ==
    len(bq)), constant time in the secret values: the IFMA kernels where the
    CPU has them, else four AVX2 lanes per modulus for batches of
    ``tuning.PAILLIER_AVX2_MIN_SECRET`` or more (1.75x ``powmod_sec`` per
    exponentiation mod a 2048-bit p^2), else ``gmpy2.powmod_sec``."""
    k = len(bp)
    if not _mb.available() and k >= tuning.PAILLIER_AVX2_MIN_SECRET and _fixedbase.lanes_available():
        return _fixedbase.powmod_lanes(bp, ep, ctx.psq) + _fixedbase.powmod_lanes(bq, eq, ctx.qsq)
    return _mb.powmod_sec_batch(bp + bq, [ep] * k + [eq] * k, [ctx.psq] * k + [ctx.qsq] * k, cache=ctx.mont)


def combine(ms, xs, n: mpz, n2: mpz) -> list:
    """Ciphertexts (1 + m n) x mod n^2 = x + n ((m x) mod n) mod n^2."""
    out = []
    for m, x in zip(ms, xs):
        c = x + n * (m * x % n)
        if c >= n2:
            c -= n2
        out.append(c)
    return out


# --------------------------------------------------------------------------------------
# decryption


def decrypt_list(ctx: PrivateContext, cts) -> list:
    """CRT decryption (Paillier 1999, Sec. 7) of validated ciphertexts
    (0 < c < n^2, c coprime to n).  Returns plaintexts in [0, n) as mpz."""
    p, q, psq, qsq, pm1, qm1 = ctx.p, ctx.q, ctx.psq, ctx.qsq, ctx.pm1, ctx.qm1
    hp, hq, pinv = ctx.hp, ctx.hq, ctx.p_inv_q
    k = len(cts)
    xs = powmod_crt(ctx, [c % psq for c in cts], pm1, [c % qsq for c in cts], qm1)
    out = []
    for xp, xq in zip(xs[:k], xs[k:]):
        mp = (xp - 1) // p * hp % p
        mq = (xq - 1) // q * hq % q
        out.append(mp + p * ((mq - mp) * pinv % q))
    return out


def find_non_unit(ctx: PrivateContext, cts) -> int:
    """Index of the first ciphertext sharing a factor with n, or -1."""
    p, q = ctx.p, ctx.q
    for i, c in enumerate(cts):
        if not (c % p and c % q):
            return i
    return -1


# --------------------------------------------------------------------------------------
# exponentiation


def powmod_broadcast(cs, k, n2: mpz) -> list:
    """[c^k mod n^2 for c in cs] for one integer k (negative: through c^-1)."""
    if k < 0:
        cs = [gmpy2.invert(c, n2) for c in cs]
        k = -k
    cs = list(cs)
    if _ifma_pays(len(cs), [k]):
        return _mb.powmod_sec_batch(cs, [mpz(k)] * len(cs), [n2] * len(cs))
    return gmpy2.powmod_base_list(cs, mpz(k), n2)


def powmod_pairs(cs, ks, n2: mpz) -> list:
    """[c_i^k_i mod n^2]."""
    inv = gmpy2.invert
    bases = [c if k >= 0 else inv(c, n2) for c, k in zip(cs, ks)]
    return powmod_public(bases, [mpz(abs(k)) for k in ks], n2)


def _bucket_cost(t: int, b: int, w: int) -> int:
    return -(-b // w) * (t + (2 << w)) + b


def multi_exp(cs, ks, n2: mpz) -> mpz:
    """prod c_i^k_i mod n^2 by the bucket method (Pippenger): with t bases and
    b-bit exponents about ceil(b/w) (t + 2^(w+1)) + b modular multiplications
    instead of t (b + b/5) for separate exponentiations."""
    bases, exps = [], []
    for c, k in zip(cs, ks):
        if k < 0:
            c, k = gmpy2.invert(c, n2), -k
        if k:
            bases.append(c)
            exps.append(mpz(k))
    t = len(bases)
    if t == 0:
        return _ONE
    b = max(int(k.bit_length()) for k in exps)
    w = min(range(1, 17), key=lambda w: _bucket_cost(t, b, w))
    if t <= 2 or _bucket_cost(t, b, w) >= t * (b + b // 5):
        acc = _ONE
        for c, k in zip(bases, exps):
            acc = acc * gmpy2.powmod(c, k, n2) % n2
        return acc
    nwin = -(-b // w)
    digits = [gmpy2.unpack(k, w) for k in exps]   # little-endian w-bit digits
    acc = None
    for j in range(nwin - 1, -1, -1):
        if acc is not None:
            for _ in range(w):
                acc = acc * acc % n2
        buckets = [None] * (1 << w)
        for c, dig in zip(bases, digits):
            if j < len(dig):
                d = dig[j]
                if d:
                    cur = buckets[d]
                    buckets[d] = c if cur is None else cur * c % n2
        running = total = None
        for d in range((1 << w) - 1, 0, -1):
            cur = buckets[d]
            if cur is not None:
                running = cur if running is None else running * cur % n2
            if running is not None:
                total = running if total is None else total * running % n2
        if total is not None:
            acc = total if acc is None else acc * total % n2
    return _ONE if acc is None else acc


def ceil_log2(x: int) -> int:
    """ceil(log2(x)) for an int x >= 1, exactly."""
    return (x - 1).bit_length()
