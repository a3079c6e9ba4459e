"""Rates and communication of Table I (Sec. VII) of Egger, Urbanke, Bitar
(2025), One-shot federated learning with objective hiding: our scheme,
Shamir + GXSTPIR and the star-product scheme (k_C* of Lemma 1).  The
plots of Figs. 3-6 are a driver's: ``secea_fast.studies.osfl_plots``.
"""
from __future__ import annotations

import math
from typing import Any
from fractions import Fraction

from ..._checks import check_int

__all__ = ["star_product_k", "rates", "elements"]


# ----------------------------------------------------------------- rates (Table I)
def _pos_int(v, name, lo):
    v = check_int(v, name)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def star_product_k(n: int, T: int, z_s: int, z_q: int) -> tuple[float, int | None]:
    """Lemma 1: (k_C', k_C*) for the star-product scheme (rho = n).  k_C' is the
    stationary point c1 c2 - sqrt(c1^2 c2^2 - (c2 - n)(c1^2 c2 + n c1 z_s)) over
    (c2 - n), c1 = n - z_q + 1, c2 = T n (n - 1); k_C* is floor or ceil of it,
    clipped to the feasible range z_s + 1 <= k_C <= n - z_q, whichever costs
    less.  Returns (nan, None) when the range is empty."""
    n, T = _pos_int(n, "n", 1), _pos_int(T, "T", 1)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    lo, hi = z_s + 1, n - z_q
    if lo > hi:
        return math.nan, None
    c1, c2 = n - z_q + 1, T * n * (n - 1)
    disc = c1 * c1 * c2 * c2 - (c2 - n) * (c1 * c1 * c2 + n * c1 * z_s)
    if c2 != n and disc >= 0:
        kp = (c1 * c2 - math.sqrt(disc)) / (c2 - n)
        cands = {min(hi, max(lo, math.floor(kp))), min(hi, max(lo, math.ceil(kp)))}
    else:                                       # degenerate: scan the (convex) range
        kp = math.nan
        cands = set(range(lo, hi + 1))
    best = min(sorted(cands), key=lambda k: _star_cost(n, T, k, z_s, z_q))
    return kp, best


def _star_cost(n, T, k, z_s, z_q):
    return Fraction(T * n * (n - 1), k - z_s) + Fraction(k * n, (k - z_s) * (n - k - z_q + 1))


def rates(n: int, T: int, rho: int, z_s: int, z_q: int, *, s: int = 1, c: int = 1,
          K2: int = 2) -> dict[str, Any]:
    """Sharing rate, PIR rate and total communication (field elements, s c
    symbols per objective) of Table I for our scheme, GXSTPIR [19] and the
    star-product scheme [17] (rho = n only, k_C* of Lemma 1):

    * ours: (rho - z_s - z_q + 1) / (2 T rho (rho - 1)); (rho - z_q - z_s + 1) / (2 n);
      2 T s c rho (rho - 1) / (rho - z_s - z_q + 1) + 2 s c n / (rho - z_q - z_s + 1)
    * gxstpir: 1 / (T rho (rho - 1)); (rho - z_q - z_s) / n;
      T s c rho (rho - 1) + s c n / (rho - z_s - z_q)
    * star_product: (k* - z_s) / (T n (n - 1)); (k* - z_s)(n - k* - z_q + 1) / (n k*);
      T s c n (n - 1) / (k* - z_s) + s c k* n / ((k* - z_s)(n - k* - z_q + 1))
    * approach1 (Sec. IV, rho = n): 1 / (T n (n - 1)); 1 / (z_s + z_q + 1);
      T s c n (n - 1) + (z_s + z_q + 1) s c  (the paper's T s n (n - 1) + 3 s for z = 1)
    * approach2 (Sec. IV, rho = n, ``K2`` labels per polynomial, the paper's 2):
      K2 / (T n (n - 1)); K2 / (2 K2 + z_s + z_q - 1);
      T s c n (n - 1) / K2 + (2 K2 + z_s + z_q - 1) s c / K2  (T (s/2) n (n - 1) + 5 s / 2
      for K2 = 2, z = 1); nan where n < 2 K2 + z_s + z_q - 1

    Feasibility (refused with ValueError naming the failing constraint):
    rho <= n, and rho >= z_s + z_q + 1.  The latter is where the schemes
    exist at all: ours needs k_C - z_s = (rho - z_s - z_q + 1)/2 >= 1 labels
    per partition of eq. (1) (k_C = (rho - z_q + z_s + 1)/2, Sec. V-b), and
    GXSTPIR a PIR rate (rho - z_s - z_q)/n > 0 (Table I); it also gives the
    star product's range z_s + 1 <= k_C <= n - z_q of Lemma 1 a member
    (Egger, Urbanke and Bitar, "Federated One-Shot Learning with Data
    Privacy and Objective-Hiding", 2025, Table I and Sec. VII).  Below it
    the formulas gave rates 0 / communication inf, which read as numbers.
    The formulas are evaluated for every feasible rho (as in Figs. 3-6),
    also where k_C is not an integer.  The star-product scheme exists for
    rho = n only (Sec. VII-a): for rho < n its entries are nan (not
    applicable) and ``k_star`` is None.

    >>> r = rates(10, 10, 10, 1, 1)
    >>> round(r["ours"]["communication"], 3), r["star_product"]["k_star"]
    (202.222, 9)
    """
    n, T = _pos_int(n, "n", 1), _pos_int(T, "T", 1)
    rho = _pos_int(rho, "rho", 2)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    s, c = _pos_int(s, "s", 1), _pos_int(c, "c", 1)
    if rho > n:
        raise ValueError(f"rho must be <= n = {n}, got {rho}")
    if rho < z_s + z_q + 1:
        raise ValueError(
            f"infeasible: need rho >= z_s + z_q + 1 = {z_s + z_q + 1}, got rho = {rho} "
            f"(z_s = {z_s}, z_q = {z_q}): k_C - z_s = (rho - z_s - z_q + 1)/2 = "
            f"{(rho - z_s - z_q + 1) / 2:g} < 1 label per partition (eq. 1) and GXSTPIR's "
            f"PIR rate (rho - z_s - z_q)/n = {(rho - z_s - z_q) / n:g} <= 0 (Table I)")
    sc = s * c
    out: dict[str, dict[str, float | None]] = {}   # scheme -> rates, communication and its k's
    g = rho - z_s - z_q + 1                       # >= 2
    out["ours"] = {"sharing_rate": g / (2 * T * rho * (rho - 1)), "pir_rate": g / (2 * n),
                   "communication": 2 * T * sc * rho * (rho - 1) / g + 2 * sc * n / g,
                   "k_C": (rho - z_q + z_s + 1) / 2}
    g2 = rho - z_s - z_q                          # >= 1
    out["gxstpir"] = {"sharing_rate": 1 / (T * rho * (rho - 1)), "pir_rate": g2 / n,
                      "communication": T * sc * rho * (rho - 1) + sc * n / g2}
    kp, ks = star_product_k(n, T, z_s, z_q)
    if rho != n:
        out["star_product"] = {"sharing_rate": math.nan, "pir_rate": math.nan, "communication": math.nan,
                               "k_prime": kp, "k_star": None}
    else:
        assert ks is not None, "rho = n >= z_s + z_q + 1 (checked above) gives ks's range z_s + 1 <= n - z_q"
        out["star_product"] = {"sharing_rate": (ks - z_s) / (T * n * (n - 1)),
                               "pir_rate": (ks - z_s) * (n - ks - z_q + 1) / (n * ks),
                               "communication": float(sc * _star_cost(n, T, ks, z_s, z_q)),
                               "k_prime": kp, "k_star": ks}
    if rho != n:
        nan = {"sharing_rate": math.nan, "pir_rate": math.nan, "communication": math.nan}
        out["approach1"], out["approach2"] = dict(nan), dict(nan, K=K2)
        return out
    N1 = z_s + z_q + 1
    out["approach1"] = {"sharing_rate": 1 / (T * n * (n - 1)), "pir_rate": 1 / N1,
                        "communication": T * sc * n * (n - 1) + N1 * sc}
    K2 = _pos_int(K2, "K2", 1)
    N2 = 2 * K2 + z_s + z_q - 1
    if N2 > n:
        out["approach2"] = {"sharing_rate": math.nan, "pir_rate": math.nan, "communication": math.nan, "K": K2}
    else:
        out["approach2"] = {"sharing_rate": K2 / (T * n * (n - 1)), "pir_rate": K2 / N2,
                            "communication": T * sc * n * (n - 1) / K2 + N2 * sc / K2, "K": K2}
    return out


def elements(scheme: str, n: int, T: int, rho: int, z_s: int, z_q: int, *, s: int, c: int, K: int = 2,
             k_C: int | None = None) -> dict[str, int]:
    """Exact payload field elements per stage ("sharing", "queries",
    "answers") of one run of ``scheme`` ("ours", "approach1", "approach2",
    "star_product", "gxstpir") on an instance, padding included: the
    formulas of ``rates`` with s replaced by the padded number of labels
    (they agree when the divisibility conditions of Sec. V-b hold), plus the
    query upload Table I leaves out.  ``K``: Approach 2's labels per
    polynomial; ``k_C``: the star product's storage dimension (default k_C*).

    * ours: T rho (rho - 1) P c; T rho; n P c with P = ceil(s / K), K = (rho - z_s - z_q + 1) / 2
    * approach1: T n (n - 1) s c; T N; N s c with N = z_s + z_q + 1
    * approach2: T n (n - 1) P c; T N; N P c with P = ceil(s / K), N = 2K + z_s + z_q - 1
    * star_product: T n (n - 1) P c; n R T b; n R P c / b, d = n - k_C - z_q + 1,
      b = d / gcd(k_C, d), R = k_C / gcd(k_C, d), P = ceil(s / (k_C - z_s)) rounded up to a multiple of b
    * gxstpir: T rho (rho - 1) L B c; T rho L; n B c with L = rho - z_s - z_q, B = ceil(s / L)"""
    n, T, rho = _pos_int(n, "n", 1), _pos_int(T, "T", 1), _pos_int(rho, "rho", 1)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    s, c = _pos_int(s, "s", 1), _pos_int(c, "c", 1)
    if not isinstance(scheme, str):
        raise TypeError(f"scheme must be a str, got {type(scheme).__name__}")
    if rho > n:
        raise ValueError(f"rho must be <= n = {n}, got {rho}")
    if scheme in ("approach1", "approach2", "star_product") and rho != n:
        raise ValueError(f"{scheme} needs rho = n (every client computes every objective), got rho = {rho}")
    if scheme == "ours":
        if (rho - z_s - z_q + 1) % 2 or rho < z_s + z_q + 1:
            raise ValueError("ours needs rho - z_s - z_q + 1 even and >= 2")
        P = -(-s // ((rho - z_s - z_q + 1) // 2))
        return {"sharing": T * rho * (rho - 1) * P * c, "queries": T * rho, "answers": n * P * c}
    if scheme == "approach1":
        N = z_s + z_q + 1
        return {"sharing": T * n * (n - 1) * s * c, "queries": T * N, "answers": N * s * c}
    if scheme == "approach2":
        K = _pos_int(K, "K", 1)
        N, P = 2 * K + z_s + z_q - 1, -(-s // K)
        return {"sharing": T * n * (n - 1) * P * c, "queries": T * N, "answers": N * P * c}
    if scheme == "star_product":
        if k_C is None:
            k_C = star_product_k(n, T, z_s, z_q)[1]
        k_C = _pos_int(k_C, "k_C", z_s + 1)
        d = n - k_C - z_q + 1
        if d < 1:
            raise ValueError(f"k_C must be <= n - z_q = {n - z_q}, got {k_C}")
        g = math.gcd(k_C, d)
        b, R = d // g, k_C // g
        P = -(-(-(-s // (k_C - z_s))) // b) * b
        return {"sharing": T * n * (n - 1) * P * c, "queries": n * R * T * b, "answers": n * R * P * c // b}
    if scheme == "gxstpir":
        L = rho - z_s - z_q
        if L < 1:
            raise ValueError(f"gxstpir needs rho >= z_s + z_q + 1 = {z_s + z_q + 1}, got {rho}")
        B = -(-s // L)
        return {"sharing": T * rho * (rho - 1) * L * B * c, "queries": T * rho * L, "answers": n * B * c}
    raise ValueError(f"scheme must be one of 'ours', 'approach1', 'approach2', 'star_product', 'gxstpir', "
                     f"got {scheme!r}")
