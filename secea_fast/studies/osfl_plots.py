"""Figs. 3-6 of Egger, Urbanke, Bitar (2025), One-shot federated learning
with objective hiding (Sec. VII): total communication, sharing rate and PIR
rate of Table I's schemes against rho, drawn with matplotlib.  A driver of
``secea_fast.protocols.osfl.rates`` (the formulas stay with the protocol)."""
from __future__ import annotations

import math
import os

from .._checks import check_int
from ..protocols.osfl import rates

__all__ = ["plot_rates"]


def _at_least(v, name, lo):
    v = check_int(v, name)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def plot_rates(n: int, T: int, z_s: int, z_q: int, path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """Figs. 3-6: total communication (in s c symbols), sharing rate and PIR rate
    against the feasible rho = max(2, z_s + z_q + 1)..n for our scheme and GXSTPIR, with the star-product point
    at rho = n; one PNG/PDF/SVG (by ``path``'s suffix) with three panels.
    Needs matplotlib (imported here only).  Returns ``path``."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("plot_rates needs matplotlib, which is not installed: "
                          "pip install matplotlib") from exc
    n, T = _at_least(n, "n", 2), _at_least(T, "T", 1)
    z_s, z_q = _at_least(z_s, "z_s", 0), _at_least(z_q, "z_q", 0)
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
