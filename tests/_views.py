"""Helpers for view tests: is a party's view distributed the same for two
different private inputs of another party?

Two kinds of check, each shown to be able to fail by a deliberately leaky
control in the test files that use it:

* Statistical (small prime fields): ``same_distribution`` is a two-sample
  chi-square test of homogeneity on categorical samples;
  ``assert_views_same`` runs it on every coordinate of a view and on the
  joint distribution of every pair of coordinates (p^2 cells, so *any*
  pairwise dependence, e.g. a pad reused for two messages, is visible), with
  a Bonferroni-corrected family-wise level.
* Exact (large fields): ``PadRecorder`` records, while a protocol runs,
  every keystream range a ``secea_fast.prg.Prg`` writes into an output array;
  ``attribute`` finds the ranges that mask a given message; ``mask_leaks``
  treats every distinct (AES key, stream range) as an independent uniform
  variable and returns the linear combinations of the view's messages in
  which every mask cancels beyond the ones the protocol is meant to reveal
  (left kernel of the message x mask incidence matrix).  A pad reused for
  two messages, or a message without a pad, shows up there.

No SciPy needed: the chi-square tail is the regularized incomplete gamma
function, computed here.

Sample sizes (``samples``): ``SECEA_FAST_VIEW_LEVEL=ci`` (the default run)
draws each statistical view test at the sample size of its leaky control,
which shows the check detecting a leak at exactly that size;
``SECEA_FAST_VIEW_LEVEL=thorough`` (a step of .ci/run) draws the larger
samples, for leaks subtler than the controls'.  The controls draw the same
at both levels.
"""
from __future__ import annotations

import math
import os
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from secea_fast.prg import Prg

__all__ = ["VIEW_LEVELS", "view_level", "samples", "chi2_sf", "same_distribution", "assert_same_distribution", "view_pvalues",
           "assert_views_same", "PadRecorder", "attribute", "mask_leaks", "ZeroPrg"]

FAMILY_ALPHA = 1e-6      # family-wise false-alarm rate of one view comparison
MIN_CELL = 10            # cells with fewer observations (both samples) are pooled
VIEW_LEVELS = ("ci", "thorough")


def view_level() -> str:
    """``SECEA_FAST_VIEW_LEVEL``: "ci" (the default) or "thorough"."""
    level = os.environ.get("SECEA_FAST_VIEW_LEVEL", "ci") or "ci"
    if level not in VIEW_LEVELS:
        raise ValueError(f"SECEA_FAST_VIEW_LEVEL must be one of {VIEW_LEVELS}, got {level!r}")
    return level


def samples(thorough: int, ci: int) -> int:
    """The sample size of a view test at this level: ``ci`` is its power
    control's size (the check is shown to detect a leak there)."""
    if not 0 < ci <= thorough:
        raise ValueError(f"samples: need 0 < ci <= thorough, got ci={ci}, thorough={thorough}")
    return ci if view_level() == "ci" else thorough


# ----------------------------------------------------------------- chi-square
def _gammainc_upper(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a) (series below a + 1, continued
    fraction above; Numerical Recipes 6.2)."""
    if x <= 0:
        return 1.0
    lg = math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(10000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-x + a * math.log(x) - lg))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(-x + a * math.log(x) - lg) * h)


def chi2_sf(x: float, dof: int) -> float:
    """P[chi^2 with ``dof`` degrees of freedom >= x]."""
    if dof <= 0:
        return 1.0
    return _gammainc_upper(dof / 2.0, x / 2.0)


def _homogeneity(ca: np.ndarray, cb: np.ndarray):
    """Chi-square statistic and dof of a 2 x cells table (rows: the counts
    of the two samples); cells with fewer than MIN_CELL observations in
    total are pooled into one cell."""
    ca = np.asarray(ca, dtype=np.float64)
    cb = np.asarray(cb, dtype=np.float64)
    tot = ca + cb
    small = tot < MIN_CELL
    if small.any():
        ca = np.append(ca[~small], ca[small].sum())
        cb = np.append(cb[~small], cb[small].sum())
        tot = ca + cb
    keep = tot > 0
    ca, cb, tot = ca[keep], cb[keep], tot[keep]
    na, nb = ca.sum(), cb.sum()
    n = na + nb
    if len(tot) < 2 or na == 0 or nb == 0:
        return 0.0, 0
    ea, eb = tot * na / n, tot * nb / n
    stat = float((((ca - ea) ** 2) / ea).sum() + (((cb - eb) ** 2) / eb).sum())
    return stat, len(tot) - 1


def _codes(samples) -> np.ndarray:
    """Samples (1-D values, or 2-D rows: one sample per row) as small ints."""
    a = np.asarray(samples)
    if a.ndim == 1:
        return a.astype(np.int64)
    a = np.ascontiguousarray(a.reshape(len(a), -1))
    _, inv = np.unique(a, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def same_distribution(samples_a, samples_b) -> float:
    """p-value of the two-sample chi-square test that ``samples_a`` and
    ``samples_b`` (1-D arrays of categories, or 2-D arrays whose rows are
    the samples) come from one distribution.  Small p: they differ."""
    a = np.asarray(samples_a)
    b = np.asarray(samples_b)
    both = _codes(np.concatenate([a, b]))
    ca = np.bincount(both[:len(a)], minlength=both.max() + 1)
    cb = np.bincount(both[len(a):], minlength=both.max() + 1)
    stat, dof = _homogeneity(ca, cb)
    return chi2_sf(stat, dof)


def assert_same_distribution(samples_a, samples_b, alpha: float = FAMILY_ALPHA) -> float:
    pv = same_distribution(samples_a, samples_b)
    assert pv >= alpha, f"the two samples differ (chi-square p = {pv:.3g} < {alpha:g})"
    return pv


def view_pvalues(views_a, views_b, p: int, pairs: bool = True):
    """Two-sample chi-square p-values for every coordinate of the views
    (``views_*``: (samples, D) integers in [0, p)) and, with ``pairs``, for
    the joint distribution (p^2 cells) of every pair of coordinates.
    Returns (pvalues, labels) with labels (i,) or (i, j)."""
    A = np.asarray(views_a, dtype=np.int64)
    B = np.asarray(views_b, dtype=np.int64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError("views must be (samples, D) arrays of the same width")
    if A.size and (A.min() < 0 or A.max() >= p or B.min() < 0 or B.max() >= p):
        raise ValueError("view entries must be in [0, p)")
    D = A.shape[1]
    labels = [(i,) for i in range(D)]
    if pairs:
        iu, ju = np.triu_indices(D, 1)
        labels += list(zip(iu.tolist(), ju.tolist()))

    def counts(V):
        cols = [V]
        if pairs:
            cols.append(V[:, iu] * p + V[:, ju])
        cells = p * p if pairs else p
        C = np.concatenate(cols, axis=1)                       # (samples, tests)
        off = np.arange(C.shape[1], dtype=np.int64) * cells
        return np.bincount((C + off).ravel(), minlength=C.shape[1] * cells).reshape(-1, cells)

    ca, cb = counts(A), counts(B)
    pv = np.empty(len(labels))
    for t in range(len(labels)):
        stat, dof = _homogeneity(ca[t], cb[t])
        pv[t] = chi2_sf(stat, dof)
    return pv, labels


def assert_views_same(views_a, views_b, p: int, alpha: float = FAMILY_ALPHA, pairs: bool = True,
                      names=None):
    """Assert that no coordinate and no pair of coordinates of the two view
    samples differ in distribution (Bonferroni over all tests, family-wise
    level ``alpha``).  Returns the smallest p-value."""
    pv, labels = view_pvalues(views_a, views_b, p, pairs)
    k = int(np.argmin(pv))
    worst = labels[k] if names is None else tuple(names[i] for i in labels[k])
    assert pv[k] >= alpha / len(pv), (
        f"views differ: coordinates {worst} have chi-square p = {pv[k]:.3g} "
        f"< {alpha:g} / {len(pv)} tests")
    return float(pv[k])


# ----------------------------------------------------------------- pad tracing
@dataclass
class PadUse:
    key: bytes            # the Prg's AES key: one per (seed, domain)
    start: int            # keystream bytes [start, end) consumed by this call
    end: int
    out: np.ndarray       # the array written (kept alive: no address reuse)
    coef: int             # +1 (added / XORed) or -1 (subtracted)
    kind: str             # "field" or "xor"
    domain: bytes


class PadRecorder:
    """While active (``with PadRecorder() as rec``), every ``Prg.field_into``
    and ``Prg.xor_into`` call is recorded as a ``PadUse`` in ``rec.uses``:
    which keystream (AES key, i.e. (seed, domain)), which stream range, and
    into which array.  Calls that only read a stream for decryption write
    arrays no message shares, so ``attribute`` ignores them."""

    def __init__(self):
        self.uses: list[PadUse] = []
        self._saved = None

    def __enter__(self):
        orig_field, orig_xor = Prg.field_into, Prg.xor_into
        rec = self

        def field_into(prg, out, p, base=None, negate=False, coef=1):
            start = prg._pos
            res = orig_field(prg, out, p, base=base, negate=negate, coef=coef)
            rec.uses.append(PadUse(prg._key, start, prg._pos, out, -1 if negate else 1, "field",
                                   prg.domain))
            return res

        def xor_into(prg, out, src, *args, **kwargs):
            start = prg._pos
            res = orig_xor(prg, out, src, *args, **kwargs)
            rec.uses.append(PadUse(prg._key, start, prg._pos, out, 1, "xor", prg.domain))
            return res

        self._saved = (orig_field, orig_xor)
        Prg.field_into, Prg.xor_into = field_into, xor_into
        return self

    def __exit__(self, *exc):
        Prg.field_into, Prg.xor_into = self._saved
        return False


def attribute(uses, data: np.ndarray) -> list:
    """The recorded pad uses that wrote into (memory shared with) ``data``."""
    return [u for u in uses if np.shares_memory(u.out, data)]


def _rank_mod(rows, q):
    rows = [r[:] for r in rows]
    rank, ncols = 0, len(rows[0]) if rows else 0
    for c in range(ncols):
        piv = next((i for i in range(rank, len(rows)) if rows[i][c] % q), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        inv = pow(rows[rank][c], -1, q)
        rows[rank] = [x * inv % q for x in rows[rank]]
        for i in range(len(rows)):
            if i != rank and rows[i][c] % q:
                f = rows[i][c]
                rows[i] = [(x - f * y) % q for x, y in zip(rows[i], rows[rank])]
        rank += 1
    return rank


_Q = (1 << 61) - 1


def mask_leaks(masks, allowed=()):
    """Which linear combinations of a view's messages are free of masks?

    ``masks``: one list of ``PadUse`` per message of the view (the pads
    applied to it, from ``attribute``); ``allowed``: combinations the
    protocol is meant to reveal, as dicts {message index: coefficient}.
    Every distinct (key, stream range) is one independent uniform variable
    (a PRG modelled as a random function of (seed, domain)); two uses of one
    key on partly overlapping ranges are reported outright.

    Returns a list of problems (empty: the view is a uniform pad on every
    combination but the allowed ones): each allowed combination must cancel
    every mask, and the left kernel of the message x variable incidence
    matrix must have exactly the dimension spanned by ``allowed``.  A
    message without a pad, or two messages sharing one, makes it larger."""
    problems = []
    ranges = {}
    for uses in masks:
        for u in uses:
            ranges.setdefault(u.key, set()).add((u.start, u.end))
    for key, rs in ranges.items():
        rs = sorted(rs)
        for (s0, e0), (s1, e1) in zip(rs, rs[1:]):
            if s1 < e0:
                problems.append(f"keystream {key.hex()[:8]} used on overlapping ranges "
                                f"[{s0}, {e0}) and [{s1}, {e1})")
    var = {}
    for uses in masks:
        for u in uses:
            var.setdefault((u.key, u.start, u.end, u.kind), len(var))
    rows = [[0] * len(var) for _ in masks]
    for i, uses in enumerate(masks):
        for u in uses:
            j = var[(u.key, u.start, u.end, u.kind)]
            rows[i][j] = (rows[i][j] + u.coef) % _Q
    for combo in allowed:
        tot = [0] * len(var)
        for i, c in combo.items():
            tot = [(t + c * x) % _Q for t, x in zip(tot, rows[i])]
        if any(tot):
            problems.append(f"allowed combination {combo} does not cancel its masks")
    kernel = len(masks) - (_rank_mod(rows, _Q) if var else 0)
    want = 0
    if allowed:
        A = [[0] * len(masks) for _ in allowed]
        for k, combo in enumerate(allowed):
            for i, c in combo.items():
                A[k][i] = c % _Q
        want = _rank_mod(A, _Q)
    if kernel != want:
        problems.append(f"{kernel - want} mask-free combination(s) of the view's messages beyond "
                        f"the {want} allowed")
    return problems


@contextmanager
def recording():
    """``with recording() as rec:`` shorthand for ``PadRecorder``."""
    with PadRecorder() as rec:
        yield rec


class ZeroPrg(Prg):
    """A stream that writes zeros: a protocol step without its randomness
    (the leaky controls of the view tests)."""
    __slots__ = ()

    def field_into(self, out, p, *a, **kw):
        super().field_into(out, p, *a, **kw)
        out[...] = 0
        return out

    def field(self, count, p):
        super().field(count, p)
        return np.zeros(count, dtype=np.uint64)
