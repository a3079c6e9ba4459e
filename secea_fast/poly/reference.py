"""Slow reference twins of ``secea_fast.poly`` (pure Python integers).

Polynomials are lists of ints, lowest degree first.  Quadratic or worse; for
tests only.
"""
from __future__ import annotations


def trim(a):
    a = [int(x) for x in a]
    while a and a[-1] == 0:
        a.pop()
    return a


def mul(a, b, p):
    if not len(a) or not len(b):
        return []
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] = (out[i + j] + int(x) * int(y)) % p
    return out


def divrem(a, b, p):
    a, b = trim(a), trim(b)
    if not b:
        raise ZeroDivisionError
    inv = pow(b[-1], p - 2, p)
    q = [0] * max(0, len(a) - len(b) + 1)
    r = a[:]
    for i in range(len(a) - len(b), -1, -1):
        c = r[i + len(b) - 1] * inv % p
        q[i] = c
        for j, y in enumerate(b):
            r[i + j] = (r[i + j] - c * y) % p
    return trim(q), trim(r[: len(b) - 1])


def evaluate(f, x, p):
    acc = 0
    for c in reversed(list(f)):
        acc = (acc * int(x) + int(c)) % p
    return acc


def from_roots(rs, p):
    f = [1 % p]
    for r in rs:
        f = mul(f, [(-int(r)) % p, 1], p)
    return f


def interpolate(xs, ys, p):
    xs, ys = [int(x) for x in xs], [int(y) for y in ys]
    n = len(xs)
    out = [0] * n
    for j in range(n):
        num, den = [1], 1
        for m in range(n):
            if m != j:
                num = mul(num, [(-xs[m]) % p, 1], p)
                den = den * (xs[j] - xs[m]) % p
        c = ys[j] * pow(den, p - 2, p) % p
        for i, v in enumerate(num):
            out[i] = (out[i] + c * v) % p
    return out


def inv_series(f, n, p):
    f = [int(x) for x in f]
    g = [0] * n
    inv0 = pow(f[0], p - 2, p)
    for i in range(n):
        s = (1 if i == 0 else 0) - sum(f[j] * g[i - j] for j in range(1, min(i, len(f) - 1) + 1))
        g[i] = s * inv0 % p
    return g


def remainder_sequence(a, b, p, stop_deg):
    """Classical extended Euclid on (a, b): the first remainder of degree
    < stop_deg and its cofactor t (s a + t b = r)."""
    r0, r1 = trim(a), trim(b)
    t0, t1 = [], [1 % p]
    while len(r1) - 1 >= stop_deg:
        q, r = divrem(r0, r1, p)
        r0, r1 = r1, r
        t0, t1 = t1, trim([(x - y) % p for x, y in zip(_pad(t0, max(len(t0), len(q) + len(t1))),
                                                     _pad(mul(q, t1, p), max(len(t0), len(q) + len(t1))))])
    return r1, t1


def _pad(a, n):
    return list(a) + [0] * (n - len(a))


def roots_bruteforce(f, p):
    return [x for x in range(p) if evaluate(f, x, p) == 0]
