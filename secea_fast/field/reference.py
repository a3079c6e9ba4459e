"""Slow reference twins of ``secea_fast.field`` and ``secea_fast.linalg``.

Pure Python integers, no shortcuts: every fast kernel has such a slow twin and
is tested against it.  Arrays come in as anything iterable of ints and go
out as lists.
"""
from __future__ import annotations


def add(a, b, p):
    return [(int(x) + int(y)) % p for x, y in zip(a, b)]


def sub(a, b, p):
    return [(int(x) - int(y)) % p for x, y in zip(a, b)]


def neg(a, p):
    return [(-int(x)) % p for x in a]


def mul(a, b, p):
    return [(int(x) * int(y)) % p for x, y in zip(a, b)]


def pow(a, e, p):  # noqa: A001
    return [_powmod(int(x), int(y), p) for x, y in zip(a, e)]


def _powmod(x, e, p):
    """Square-and-multiply, x^e mod p (x^0 = 1)."""
    r, b = 1, x % p
    while e:
        if e & 1:
            r = r * b % p
        b = b * b % p
        e >>= 1
    return r


def inv(a, p):
    out = []
    for x in a:
        if int(x) % p == 0:
            raise ValueError("zero has no inverse")
        out.append(_powmod(int(x), p - 2, p))
    return out


def dot(a, b, p):
    return sum(int(x) * int(y) for x, y in zip(a, b)) % p


def matmul(A, B, p):
    """Schoolbook product of nested lists (or 2-D arrays) of ints."""
    A = [[int(v) for v in row] for row in A]
    Bt = [list(col) for col in zip(*[[int(v) for v in row] for row in B])]
    return [[sum(x * y for x, y in zip(row, col)) % p for col in Bt] for row in A]
