"""Small number theory: primes, factoring, primitive roots.

``primitive_root`` gives the generator alpha of F_q^* whose powers
alpha_i = alpha^i are the clients' evaluation points in objective-hiding
one-shot FL (Egger, Urbanke, Bitar (2025), One-shot federated learning with
objective hiding, Sec. V-b; ``secea_fast.protocols.osfl``).  Primality is
the strong BPSW test (``gmpy2``), the same as the modulus checks of
``secea_fast._checks`` use: no pseudoprime is known, and none exists below
2^64.  This module imports no protocol.
"""
from __future__ import annotations

import math
from functools import lru_cache


from ._checks import U64_LIMIT, check_int, check_prime, prime_test

__all__ = ["is_prime", "distinct_prime_factors", "pollard_brent", "primitive_root"]


def is_prime(n: int) -> bool:
    """Whether the integer n is prime (strong BPSW; exact for n < 2^64).

    >>> [q for q in range(20) if is_prime(q)]
    [2, 3, 5, 7, 11, 13, 17, 19]
    """
    return prime_test(check_int(n, "n"))


def distinct_prime_factors(m: int) -> list[int]:
    """Distinct prime factors of 1 <= m < 2^64, increasing (trial division,
    then Pollard-Brent).

    >>> distinct_prime_factors(2**64 - 2**32)       # Goldilocks p - 1
    [2, 3, 5, 17, 257, 65537]
    """
    m = check_int(m, "m")
    if not 1 <= m < U64_LIMIT:
        raise ValueError(f"m must satisfy 1 <= m < 2^64, got {m}")
    out = []
    for f in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if m % f == 0:
            out.append(f)
            while m % f == 0:
                m //= f
    f = 41
    while f * f <= m and f < 1 << 16:
        if m % f == 0:
            out.append(f)
            while m % f == 0:
                m //= f
        f += 2
    stack = [m] if m > 1 else []
    while stack:
        x = stack.pop()
        if prime_test(x):
            out.append(x)
            continue
        d = _pollard_brent(x)
        stack += [d, x // d]
    return sorted(set(out))


def pollard_brent(n: int) -> int:
    """A nontrivial factor of the composite n >= 4 (Brent's variant of Pollard
    rho; 2 for even n).  Raises ValueError when n is below 4 or prime.

    >>> 1 < pollard_brent(1000003 * 1000033) < 1000003 * 1000033
    True
    """
    n = check_int(n, "n")
    if n < 4:
        raise ValueError(f"n must be a composite integer >= 4, got {n}")
    if n % 2 == 0:
        return 2
    if prime_test(n):
        raise ValueError(f"n = {n} is prime: it has no nontrivial factor")
    return _pollard_brent(n)


def _pollard_brent(n: int) -> int:
    """A nontrivial factor of the odd composite n (no small factors)."""
    for c in range(1, 200):
        y, r, q, g, m = 2, 1, 1, 1, 128
        x = ys = y
        while g == 1:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and g == 1:
                ys = y
                for _ in range(min(m, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                g = math.gcd(q, n)
                k += m
            r *= 2
        if g == n:
            g = 1
            while g == 1:
                ys = (ys * ys + c) % n
                g = math.gcd(abs(x - ys), n)
        if 1 < g < n:
            return g
    raise ArithmeticError(f"could not factor {n}")   # pragma: no cover


@lru_cache(maxsize=64)
def primitive_root(p: int) -> int:
    """The smallest generator alpha of F_p^* (1 for p = 2), for a prime
    2 <= p < 2^64 (OSFL Sec. V-b: alpha_i = alpha^i).

    >>> primitive_root(11), primitive_root(2**64 - 2**32 + 1)
    (2, 7)
    """
    p = check_prime(p)
    if p == 2:
        return 1
    factors = distinct_prime_factors(p - 1)
    for g in range(2, p):
        if all(pow(g, (p - 1) // f, p) != 1 for f in factors):
            return g
    raise ArithmeticError("no generator found")   # pragma: no cover
