"""secea_fast.nt: primes, factoring, primitive roots (the evaluation points
alpha^i of Egger, Urbanke, Bitar, 2025, Sec. V-b).  Factorizations are
checked independently (product and gmpy2 primality), generators by
g^((p - 1)/q) != 1 for every prime factor q of p - 1 and by minimality."""
import math

import gmpy2
import pytest

import secea_fast as sf
from secea_fast import field, nt
from secea_fast.protocols import osfl

from conftest import PRIMES


def _check_factors(m, factors):
    """``factors`` are exactly the distinct primes dividing m."""
    assert factors == sorted(set(factors))
    assert all(gmpy2.is_prime(q) for q in factors)
    rest = m
    for q in factors:
        assert rest % q == 0
        while rest % q == 0:
            rest //= q
    assert rest == 1


def _is_generator(g, p, factors):
    return all(pow(g, (p - 1) // q, p) != 1 for q in factors)


@pytest.mark.parametrize("p", sorted(set(PRIMES + [field.EMBEDDING_PRIME, field.GOLDILOCKS])))
def test_primitive_root_of_the_package_primes(p):
    g = nt.primitive_root(p)
    if p == 2:
        assert g == 1
        return
    factors = nt.distinct_prime_factors(p - 1)
    _check_factors(p - 1, factors)
    assert 2 <= g < p and _is_generator(g, p, factors)
    assert not any(_is_generator(h, p, factors) for h in range(2, g))      # the smallest


def test_known_values_and_reexport():
    assert nt.primitive_root(field.GOLDILOCKS) == 7
    assert nt.distinct_prime_factors(field.GOLDILOCKS - 1) == [2, 3, 5, 17, 257, 65537]
    assert nt.distinct_prime_factors(field.EMBEDDING_PRIME - 1) == [2, 3, 7]
    assert osfl.primitive_root is nt.primitive_root and sf.EMBEDDING_PRIME == field.EMBEDDING_PRIME


def test_is_prime():
    small = [q for q in range(-5, 2000) if nt.is_prime(q)]
    assert small == [q for q in range(2, 2000) if all(q % d for d in range(2, math.isqrt(q) + 1))]
    assert all(nt.is_prime(p) for p in PRIMES)
    assert not nt.is_prime(2**64 - 1) and not nt.is_prime(3215031751)      # a strong pseudoprime to 2, 3, 5, 7
    with pytest.raises(TypeError, match="n must be an int"):
        nt.is_prime(7.0)


def test_distinct_prime_factors_small_and_large():
    assert nt.distinct_prime_factors(1) == []
    for m in list(range(2, 2000)) + [2**64 - 1, 2**64 - 60, 2**63, 3**40, 65537 * 65539 * 1000003]:
        _check_factors(m, nt.distinct_prime_factors(m))


@pytest.mark.parametrize("a, b", [(1000003, 1000033), (4294967291, 4294967279), (65537, 2**31 - 1),
                                  (101, 101)])
def test_pollard_brent_splits_a_semiprime(a, b):
    n = a * b
    d = nt.pollard_brent(n)
    assert 1 < d < n and n % d == 0 and d in (a, b)
    assert nt.pollard_brent(2 * a) == 2


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="p must be an int"):
        nt.primitive_root(11.0)
    with pytest.raises(TypeError, match="p must be an int"):
        nt.primitive_root(True)
    with pytest.raises(ValueError, match="p = 91 is not prime"):
        nt.primitive_root(91)
    with pytest.raises(ValueError, match="p must satisfy"):
        nt.primitive_root(2**64 + 13)
    with pytest.raises(TypeError, match="m must be an int"):
        nt.distinct_prime_factors("12")
    for m in (0, -6, 2**64):
        with pytest.raises(ValueError, match="m must satisfy"):
            nt.distinct_prime_factors(m)
    with pytest.raises(TypeError, match="n must be an int"):
        nt.pollard_brent(15.0)
    for n in (-15, 0, 1, 3):
        with pytest.raises(ValueError, match="n must be a composite"):
            nt.pollard_brent(n)
    with pytest.raises(ValueError, match="n = 1000003 is prime"):
        nt.pollard_brent(1000003)
    assert math.gcd(nt.pollard_brent(91), 91) in (7, 13)
