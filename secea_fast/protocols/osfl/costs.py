"""Rates and communication of Table I (Sec. VII) of Egger, Urbanke, Bitar
(2025), One-shot federated learning with objective hiding: our scheme,
Shamir + GXSTPIR and the star-product scheme (k_C* of Lemma 1), and the
plots of Figs. 3-6.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..._checks import check_int

__all__ = ["star_product_k", "rates", "plot_rates"]


# ----------------------------------------------------------------- rates (Table I)
def _pos_int(v, name, lo):
    v = check_int(v, name)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def star_product_k(n, T, z_s, z_q) -> tuple:
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


def rates(n, T, rho, z_s, z_q, *, s=1, c=1) -> dict:
    """Sharing rate, PIR rate and total communication (field elements, s c
    symbols per objective) of Table I for our scheme, GXSTPIR [19] and the
    star-product scheme [17] (rho = n only, k_C* of Lemma 1):

    * ours: (rho - z_s - z_q + 1) / (2 T rho (rho - 1)); (rho - z_q - z_s + 1) / (2 n);
      2 T s c rho (rho - 1) / (rho - z_s - z_q + 1) + 2 s c n / (rho - z_q - z_s + 1)
    * gxstpir: 1 / (T rho (rho - 1)); (rho - z_q - z_s) / n;
      T s c rho (rho - 1) + s c n / (rho - z_s - z_q)
    * star_product: (k* - z_s) / (T n (n - 1)); (k* - z_s)(n - k* - z_q + 1) / (n k*);
      T s c n (n - 1) / (k* - z_s) + s c k* n / ((k* - z_s)(n - k* - z_q + 1))

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
    out = {}
    g = rho - z_s - z_q + 1                       # >= 2
    out["ours"] = {"sharing_rate": g / (2 * T * rho * (rho - 1)), "pir_rate": g / (2 * n),
                   "communication": 2 * T * sc * rho * (rho - 1) / g + 2 * sc * n / g,
                   "k_C": (rho - z_q + z_s + 1) / 2}
    g2 = rho - z_s - z_q                          # >= 1
    out["gxstpir"] = {"sharing_rate": 1 / (T * rho * (rho - 1)), "pir_rate": g2 / n,
                      "communication": T * sc * rho * (rho - 1) + sc * n / g2}
    kp, ks = star_product_k(n, T, z_s, z_q)      # ks exists: z_s + 1 <= n - z_q
    if rho != n:
        out["star_product"] = {"sharing_rate": math.nan, "pir_rate": math.nan, "communication": math.nan,
                               "k_prime": kp, "k_star": None}
    else:
        out["star_product"] = {"sharing_rate": (ks - z_s) / (T * n * (n - 1)),
                               "pir_rate": (ks - z_s) * (n - ks - z_q + 1) / (n * ks),
                               "communication": float(sc * _star_cost(n, T, ks, z_s, z_q)),
                               "k_prime": kp, "k_star": ks}
    return out


def plot_rates(n, T, z_s, z_q, path):
    """Figs. 3-6: total communication (in s c symbols), sharing rate and PIR rate
    against the feasible rho = max(2, z_s + z_q + 1)..n for our scheme and GXSTPIR, with the star-product point
    at rho = n; one PNG/PDF/SVG (by ``path``'s suffix) with three panels.
    Needs matplotlib (imported here only).  Returns ``path``."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("osfl.plot_rates needs matplotlib, which is not installed: "
                          "pip install matplotlib") from exc
    n, T = _pos_int(n, "n", 2), _pos_int(T, "T", 1)
    z_s, z_q = _pos_int(z_s, "z_s", 0), _pos_int(z_q, "z_q", 0)
    rhos = list(range(max(2, z_s + z_q + 1), n + 1))     # the feasible rho (see ``rates``)
    if not rhos:
        raise ValueError(f"infeasible: need n >= z_s + z_q + 1 = {z_s + z_q + 1} for some "
                         f"rho <= n to exist, got n = {n}")
    table = [rates(n, T, r, z_s, z_q) for r in rhos]

    def series(key, field_name):
        ys = [row[key][field_name] for row in table]
        return [y if (isinstance(y, float) and math.isfinite(y) and y > 0) else math.nan for y in ys]

    fig = Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    titles = [("communication", "communication cost [s c symbols in F_q]", True),
              ("sharing_rate", "sharing rate", True), ("pir_rate", "PIR rate", False)]
    for ax, (key, label, logy) in zip(axes, titles):
        ax.plot(rhos, series("ours", key), "-o", ms=3, label="ours (ramp sharing + graph PIR)")
        ax.plot(rhos, series("gxstpir", key), "-s", ms=3, label="Shamir + GXSTPIR [19]")
        sp = table[-1]["star_product"][key]
        if isinstance(sp, float) and math.isfinite(sp) and sp > 0:
            ax.plot([n], [sp], "*", ms=12, label=f"star product [17], k* = {table[-1]['star_product']['k_star']}")
        ax.set_xlabel("rho (clients per objective)")
        ax.set_ylabel(label)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"n = {n}, T = {T}, z_s = {z_s}, z_q = {z_q}")
    fig.tight_layout()
    fig.savefig(path)
    return path
