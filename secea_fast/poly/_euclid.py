"""Fast extended Euclid (half-GCD), rational reconstruction, gcd (raw layer).

Half-GCD in the formulation of Thull & Yap ("A unified approach to HGCD
algorithms for polynomials and integers", 1990; also von zur Gathen & Gerhard,
Modern Computer Algebra, Sec. 11.1): for deg a = n > deg b, ``hgcd(a, b)``
returns the 2x2 polynomial matrix M of the Euclidean steps that take (a, b) to
the consecutive remainders (c, d) with deg c >= ceil(n/2) > deg d.  It recurses
on the top halves of the operands; below ``tuning.HGCD_CLASSICAL_MAX`` the
classical C kernel runs the steps.  Cost O(M(n) log n).

For Goldilocks and primes p < 2^63 whose 2-adicity covers the transform
lengths, degrees above ``tuning.HGCD_NATIVE_MIN`` run the whole recursion in
C (``secea_fp_poly_hgcd``, csrc/poly/hgcd.c); the matrix is the same (it is
unique), only faster.  The Python recursion below stays the reference and
the route for every other prime.
"""
from __future__ import annotations

import numpy as np

from .. import tuning
from .._native import check_status, ffi, lib, u64ptr
from ..field import raw as fp
from ._core import (GOLDILOCKS, U64, add, deg, divrem, intt_rows, monic, mul, ntt_native, ntt_rows, sub, trim,
                    two_adicity, zeros)

def _one(p):
    return np.array([1 % p], dtype=U64)


def identity(p):
    return ((_one(p), zeros(0)), (zeros(0), _one(p)))


def _stack(polys, N):
    out = np.zeros((len(polys), N), dtype=U64)
    for i, f in enumerate(polys):
        out[i, : len(f)] = f
    return out


def _transform_len(p, n_out):
    """NTT length for products of n_out coefficients, or None for the plain route."""
    if n_out <= 2 * tuning.POLY_MUL_CLASSICAL_MAX:
        return None
    N = 1 << (n_out - 1).bit_length()
    return N if ntt_native(p, N.bit_length() - 1) else None


def mat_mul(A, B, p):
    """2x2 polynomial matrix product.  Large entries: the 8 entries are
    transformed once, the 8 products and 4 sums taken pointwise, 4 inverse
    transforms (instead of 8 separate products)."""
    (a, b), (c, d) = A
    (e, f), (g, h) = B
    n_out = max(len(a), len(b), len(c), len(d)) + max(len(e), len(f), len(g), len(h)) - 1
    N = _transform_len(p, n_out) if min(map(len, (a, b, c, d, e, f, g, h))) else None
    if N is None:
        return ((trim(add(mul(a, e, p), mul(b, g, p), p)), trim(add(mul(a, f, p), mul(b, h, p), p))),
                (trim(add(mul(c, e, p), mul(d, g, p), p)), trim(add(mul(c, f, p), mul(d, h, p), p))))
    TA = ntt_rows(_stack((a, b, c, d), N), N, p)
    TB = ntt_rows(_stack((e, f, g, h), N), N, p)
    P = fp.mul(TA[[0, 1, 0, 1, 2, 3, 2, 3]], TB[[0, 2, 1, 3, 0, 2, 1, 3]], p)
    C = intt_rows(fp.add(P[0::2], P[1::2], p), p)
    return ((trim(C[0, :n_out]), trim(C[1, :n_out])), (trim(C[2, :n_out]), trim(C[3, :n_out])))


def apply(M, a, b, p):
    """M (a, b)^T, with the transforms of a and b shared by both rows."""
    (m00, m01), (m10, m11) = M
    n_out = max(len(m00), len(m01), len(m10), len(m11)) + max(len(a), len(b)) - 1
    N = _transform_len(p, n_out) if min(map(len, (m00, m01, m10, m11, a, b))) else None
    if N is None:
        return (trim(add(mul(m00, a, p), mul(m01, b, p), p)),
                trim(add(mul(m10, a, p), mul(m11, b, p), p)))
    TM = ntt_rows(_stack((m00, m01, m10, m11), N), N, p)
    TX = ntt_rows(_stack((a, b), N), N, p)
    P = fp.mul(TM, TX[[0, 1, 0, 1]], p)
    C = intt_rows(fp.add(P[0::2], P[1::2], p), p)
    return trim(C[0, :n_out]), trim(C[1, :n_out])


def step_mul(q, R, p):
    """[[0, 1], [1, -q]] R: the rows become (R1, R0 - q R1); two products."""
    (r00, r01), (r10, r11) = R
    return ((r10, r11), (trim(sub(r00, mul(q, r10, p), p)), trim(sub(r01, mul(q, r11, p), p))))


def classical(a, b, stop_deg, p):
    """C kernel: Euclid until the remainder has degree < stop_deg."""
    la = len(a)
    bufs = [np.zeros(la, dtype=U64) for _ in range(6)]
    lens = np.zeros(6, dtype=np.uint64)
    lens_c = ffi.from_buffer("size_t[]", lens)
    check_status(lib.secea_fp_poly_hgcd_classical(*(u64ptr(x) for x in bufs), lens_c,
                                                  u64ptr(np.ascontiguousarray(a)), la,
                                                  u64ptr(np.ascontiguousarray(b)), len(b), stop_deg, p),
                 "half-gcd base case")
    r0, r1, m00, m01, m10, m11 = (x[: int(n)] for x, n in zip(bufs, lens))
    return ((m00, m01), (m10, m11)), r0, r1


def native_supported(p, la):
    """Whether the C half-GCD handles modulus p and len a = la (its transforms
    reach length 2^ceil(log2(2 la)))."""
    logn = (2 * la - 1).bit_length()
    if logn > lib.SECEA_HGCD_MAX_LOG:
        return False
    return p == GOLDILOCKS or (p < 2**63 and p % 2 == 1 and two_adicity(p) >= logn)


def _use_native(p, n):
    return n > tuning.HGCD_NATIVE_MIN and native_supported(p, n + 1)


def hgcd_native(a, b, p, remainders=False, base_deg=None):
    """``hgcd`` by the C recursion (``native_supported(p, len(a))`` must hold).
    With ``remainders=True`` returns (M, c, d), (c, d)^T = M (a, b)^T.
    ``base_deg``: classical Euclid at and below this degree (default
    ``tuning.HGCD_NATIVE_BASE``)."""
    if base_deg is None:
        base_deg = tuning.HGCD_NATIVE_BASE
    la = len(a)
    cap = la // 2 + 1
    buf = np.empty(4 * cap + (2 * la if remainders else 0), dtype=U64)
    lens = np.zeros(6, dtype=np.uint64)
    ms = [buf[i * cap:(i + 1) * cap] for i in range(4)]
    if remainders:
        r0, r1 = buf[4 * cap:4 * cap + la], buf[4 * cap + la:]
        rp0, rp1 = u64ptr(r0), u64ptr(r1)
    else:
        rp0 = rp1 = ffi.NULL
    a = np.ascontiguousarray(a)
    lb = len(b)
    b = np.ascontiguousarray(b) if lb else np.zeros(1, dtype=U64)
    rc = lib.secea_fp_poly_hgcd(*(u64ptr(x) for x in ms), rp0, rp1, ffi.from_buffer("size_t[]", lens),
                                u64ptr(a), la, u64ptr(b), lb, p, base_deg)
    check_status(rc, "half-gcd", f"a (length {la}) and b (length {lb}) or p = {p} outside the kernel's limits")
    L = [int(x) for x in lens]
    M = ((ms[0][:L[0]], ms[1][:L[1]]), (ms[2][:L[2]], ms[3][:L[3]]))
    return (M, r0[:L[4]], r1[:L[5]]) if remainders else M


def hgcd(a, b, p):
    """M with M (a, b)^T = (c, d)^T, deg c >= ceil(n/2) > deg d, n = deg a > deg b."""
    n = deg(a)
    m = (n + 1) // 2
    if deg(b) < m:
        return identity(p)
    if _use_native(p, n):
        return hgcd_native(a, b, p)
    if n <= tuning.HGCD_CLASSICAL_MAX:
        return classical(a, b, m, p)[0]
    R = hgcd(trim(a[m:]), trim(b[m:]), p)
    c, d = apply(R, a, b, p)
    if deg(d) < m:
        return R
    q, e = divrem(c, d, p)
    R = step_mul(q, R, p)
    if deg(e) < m:
        return R
    k = 2 * m - deg(d)
    S = hgcd(trim(d[k:]), trim(e[k:]), p)
    return mat_mul(S, R, p)


def _mat_mul_acc(R, M, p):
    """R M, skipping the products while M is still the identity."""
    return R if _is_identity(M) else mat_mul(R, M, p)


def reduce_below(a, b, d, p, matrix=True):
    """Run Euclid on (a, b) (deg a > deg b) to the first remainder of degree < d.

    Returns (M, r0, r1): M (a, b)^T = (r0, r1)^T, deg r0 >= d > deg r1 (if
    deg a >= d).  The cofactors of r1 are M[1][0] (of a) and M[1][1] (of b).
    ``matrix=False`` skips accumulating M (returned as None): remainders only.
    """
    M = identity(p) if matrix else None
    while deg(b) >= d:
        n = deg(a)
        if deg(b) >= n:                # equal degrees: a plain step first (the half-gcd needs deg b < deg a)
            q, r = divrem(a, b, p)
            if matrix:
                M = step_mul(q, M, p)
            a, b = b, r
            continue
        if n <= tuning.HGCD_CLASSICAL_MAX:
            R, a, b = classical(a, b, d, p)
            return (_mat_mul_acc(R, M, p) if matrix else None), a, b
        if 2 * d > n:
            s = 2 * d - n              # the quotients of the top parts agree down to degree d
            R = hgcd(trim(a[s:]), trim(b[s:]), p)
            if not _is_identity(R):
                a, b = apply(R, a, b, p)
        elif _use_native(p, n):
            R, a2, b2 = hgcd_native(a, b, p, remainders=True)   # (a2, b2) = R (a, b)
            if not _is_identity(R):
                a, b = a2, b2
        else:
            R = hgcd(a, b, p)
            if not _is_identity(R):
                a, b = apply(R, a, b, p)
        if matrix and not _is_identity(R):
            M = _mat_mul_acc(R, M, p)
        if deg(b) >= d:                # one plain step keeps the loop moving
            q, r = divrem(a, b, p)
            if matrix:
                M = step_mul(q, M, p)
            a, b = b, r
    return M, a, b


def _is_identity(M):
    (a, b), (c, d) = M
    return len(a) == 1 and a[0] == 1 and len(b) == 0 and len(c) == 0 and len(d) == 1 and d[0] == 1


def gcd(a, b, p):
    """Monic gcd (zero if both are zero)."""
    a, b = trim(a), trim(b)
    if deg(a) < deg(b):
        a, b = b, a
    if len(b) == 0:
        return monic(a, p)
    _, r0, _ = reduce_below(a, b, 0, p, matrix=False)
    return monic(r0, p)


def rational_reconstruct_series(s, num_len, p):
    """(U, V) with V S = U mod x^n, deg U < num_len, deg V <= n - num_len, V(0) = 1.

    Raises ValueError if no such pair with V(0) != 0 exists."""
    n = len(s)
    S = trim(np.asarray(s, dtype=U64))
    a = zeros(n + 1)
    a[n] = 1
    if len(S) == 0:
        return zeros(0), _one(p)
    M, r0, r1 = reduce_below(a, S, num_len, p)
    U, V = r1, M[1][1]
    if len(V) == 0 or V[0] == 0:
        raise ValueError("no rational function with a denominator invertible at 0 fits these terms")
    c = pow(int(V[0]), p - 2, p)
    return trim(fp.scale(U, c, p)), trim(fp.scale(V, c, p))
