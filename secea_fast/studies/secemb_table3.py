"""SecEmb's Table 3 (MF row) on MovieLens-100K: explicit-rating matrix
factorisation trained federatedly, one client per user, with SecEmb's sparse
aggregation against lossy compressions of the item-embedding update
(Mai et al. 2025, "SecEmb: Sparsity-Aware Secure Federated Learning of
On-Device Recommender System with Large Embedding", Sec. 5.3, Table 3;
setup Appendix I, Tables 8 and 10; references in docs/papers.md).

Setup (Appendix I): ratings split 80 % train / 20 % test at random; MF with
biases, r_ui ~ mu + b_u + b_i + p_u . q_i (Koren, Bell, Volinsky 2009);
the item table holds [q_i, b_i] (d + 1 = 65 columns, the 109,330 sparse
parameters of Table 9), the user's (p_u, b_u) stay on its device; d = 64,
learning rate 0.025, regularisation 0.01 (Table 8); Adam (Kingma and Ba
2015) on the servers for the item table and on each device for its own
row; 200 epochs, each a fresh permutation of the users cut into rounds of
100 clients; m' = 200 (Appendix I); rank 12 for SVD and CoLR (Table 10);
4 repetitions (Table 3's caption).  The paper states neither the local
epochs nor mu; here each participating user takes one full-batch gradient
step over its training ratings per round, and mu is the training mean (one
public number).  Loss per user: sum_i (r_ui - r^_ui)^2 / 2 +
reg / 2 (|p_u|^2 + b_u^2 + sum_i |q_i|^2 + b_i^2); the servers step with
the sum of the uploaded item gradients.

Methods (each upload is what one user sends, for one round):

* ``FedRec``: the dense float32 m x (d + 1) gradient, summed in the clear
  (the lossless reference, no privacy, R.R. 1 by definition);
* ``SecEmb``: the protocol (``secemb.User`` / ``secemb.Server``: DPF path
  keys for the private retrieval, one correction word per slot for the
  aggregation, over Z_2^32 as the paper's b = 32, 16 fraction bits); a user
  with more than m' training ratings trains on a fresh uniform m'-subset
  each round (Algorithm 1's truncation, drawn here by the study's seeded
  generator so that the fixed-point twin sees the same items; the
  protocol's own PadOrTrunc then only pads).  ``secure_rounds`` rounds run
  the real protocol, the others its fixed-point twin (the retrieved rows
  rounded to 2^-16 as the Z_2^64 table, the uploads rounded to 2^-16 and
  summed mod 2^32), which returns the same model bit for bit: every secure
  round is checked against the twin, and tests/test_secemb_table3.py trains
  a whole quick run both ways.  The real protocol at this shape takes about
  20 s a round on 2 shared cores (2,000 rounds a repetition at the paper's
  200 epochs), so the rounds after the checked ones run as the twin;
* ``Bit8quant``: absmax linear 8-bit quantisation of the dense update
  (one float32 scale + one int8 per entry; the paper cites Dettmers 2015,
  whose dynamic-tree code spends the same 8 bits on another code book);
* ``Ternquant``: TernGrad (Wen et al. 2017): s = max |g|, each entry sent as
  s sign(g) Bernoulli(|g| / s), unbiased, two bits per entry packed four to
  a byte, plus the float32 s;
* ``SVD``: the rank-r truncated SVD of the dense update, sent as U_r S_r
  (m x r) and V_r ((d + 1) x r) in float32 (Nguyen et al. 2024's SVD
  baseline);
* ``CoLR``: correlated low-rank updates (Nguyen, Nguyen, Nguyen, Hoang,
  Le, Wong 2024, "Towards Efficient Communication and Secure Federated
  Recommendation System via Low-rank Training"): each round a fresh
  random B (r x (d + 1), entries N(0, 1/r), E[B^T B] = I) common to all users; a user sends
  A_u = G_u B^T (m x r float32), the gradient of its loss in the low-rank
  factor at A = 0; the servers apply (sum_u A_u) B.

R.R. (Table 3's caption: the upload cost before over after compression):
for the baselines, the dense float32 update (4 m (d + 1) bytes) over the
bytes of the compressed message; for SecEmb, Secure FedRec's upload
(additive shares of the dense update over Z_2^32 to both servers,
2 x 4 m (d + 1) bytes: Sec. 5.2.1, Table 2) over SecEmb's request and
upload messages to both servers (``to_bytes()`` lengths; padding makes
them the same for every user).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import check_int
from ..protocols import secemb
from . import compression

__all__ = ["ExplicitRatings", "MFConfig", "PAPER_MF", "QUICK_MF", "PUBLISHED_ML100K_MF", "METHODS",
           "ratings_from_inter", "synthetic_explicit", "split_ratings", "upload_bytes", "train",
           "run_table3", "format_table", "write_plot", "main"]

# Table 3, ML100K, MF: RMSE mean, std (four runs), R.R.; "FedRec" is not in Table 3.
PUBLISHED_ML100K_MF = {"SecEmb": (0.944, 0.003, 4.99), "Bit8quant": (0.948, 0.004, 4.00),
                       "Ternquant": (0.951, 0.002, 8.00), "SVD": (0.952, 0.006, 5.22),
                       "CoLR": (0.951, 0.001, 5.42)}
METHODS = ("FedRec", "SecEmb", "Bit8quant", "Ternquant", "SVD", "CoLR")


@dataclass
class ExplicitRatings:
    """Explicit ratings (user, item, rating) with dense 0-based ids."""
    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray
    n_users: int
    n_items: int


@dataclass(frozen=True)
class MFConfig:
    """Training setup: Table 8 (d, lr, reg), Appendix I (epochs, clients per
    round, m', split), Table 10 (rank)."""
    d: int = 64
    lr: float = 0.025
    reg: float = 0.01
    epochs: int = 200
    users_per_round: int = 100
    m_prime: int = 200
    rank: int = 12
    test_frac: float = 0.2
    frac_bits: int = 16
    agg_bits: int = 32
    init_std: float = 0.1


PAPER_MF = MFConfig()
QUICK_MF = MFConfig(d=16, epochs=3, users_per_round=50, m_prime=64, rank=4)


def ratings_from_inter(path: str | os.PathLike[str]) -> ExplicitRatings:
    """A RecBole ``.inter`` file (tab-separated, typed header
    ``user_id:token item_id:token rating:float ...``) or a MovieLens
    ``u.data`` (user, item, rating, time; tab-separated, no header), ids
    renumbered densely in sorted order.  ValueError naming the file and line
    on a malformed row."""
    p = Path(path)
    rows_u, rows_i, rows_r = [], [], []
    with open(p, encoding="utf-8") as fh:
        first = fh.readline()
        cols = first.rstrip("\n").split("\t")
        header = any(":" in c for c in cols)
        if header:
            names = [c.split(":")[0] for c in cols]
            try:
                iu, ii, ir = names.index("user_id"), names.index("item_id"), names.index("rating")
            except ValueError:
                raise ValueError(f"{p}: the header needs user_id, item_id and rating columns, got {cols}") from None
            lines: Any = fh
        else:
            iu, ii, ir = 0, 1, 2
            lines = [first, *fh]
        for k, line in enumerate(lines, start=2 if header else 1):
            if not line.strip():
                continue
            f = line.rstrip("\n").split("\t")
            try:
                rows_u.append(f[iu])
                rows_i.append(f[ii])
                rows_r.append(float(f[ir]))
            except (IndexError, ValueError):
                raise ValueError(f"{p}, line {k}: expected tab-separated user, item, rating, got {line.strip()!r}") \
                    from None
    if not rows_u:
        raise ValueError(f"{p}: no ratings")
    uu, ui = np.unique(np.array(rows_u), return_inverse=True)
    iu_, ii_ = np.unique(np.array(rows_i), return_inverse=True)
    return ExplicitRatings(ui.astype(np.int64), ii_.astype(np.int64), np.array(rows_r, dtype=np.float64),
                           len(uu), len(iu_))


def synthetic_explicit(n_users: int = 120, n_items: int = 300, per_user: int = 30, seed: int = 0) -> ExplicitRatings:
    """Explicit 1-5 ratings from a rank-4 preference model (simulation data for
    tests): ``per_user`` distinct items per user."""
    rng = np.random.default_rng([seed, 11])
    U, V = rng.normal(size=(n_users, 4)), rng.normal(size=(n_items, 4))
    us, its = [], []
    for u in range(n_users):
        its.append(rng.choice(n_items, size=min(per_user, n_items), replace=False))
        us.append(np.full(len(its[-1]), u))
    users, items = np.concatenate(us), np.concatenate(its)
    r = np.clip(np.rint(3.5 + 0.5 * np.einsum("ij,ij->i", U[users], V[items]) + rng.normal(scale=0.5, size=len(users))),
                1, 5)
    return ExplicitRatings(users.astype(np.int64), items.astype(np.int64), r, n_users, n_items)


def split_ratings(r: ExplicitRatings, test_frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) index arrays of a uniform random split of the ratings."""
    if not 0.0 < test_frac < 1.0:
        raise ValueError(f"test_frac must be in (0, 1), got {test_frac}")
    perm = np.random.default_rng([seed, 1]).permutation(len(r.ratings))
    k = int(round(test_frac * len(perm)))
    return np.sort(perm[k:]), np.sort(perm[:k])


def upload_bytes(method: str, m: int, width: int, rank: int = 12) -> int:
    """Bytes one user's compressed item-table upload takes (the formulas the
    messages below are built to): FedRec 4 m w (float32), Bit8quant 4 + m w,
    Ternquant 4 + ceil(m w / 4), SVD 4 r (m + w), CoLR 4 r m, with w = d + 1.
    (SecEmb's bytes are its messages' lengths: :func:`secemb_upload_bytes`.)"""
    mw = m * width
    table = {"FedRec": 4 * mw, "Bit8quant": 4 + mw, "Ternquant": 4 + (mw + 3) // 4,
             "SVD": 4 * rank * (m + width), "CoLR": 4 * rank * m}
    if method not in table:
        raise ValueError(f"method must be one of {sorted(table)}, got {method!r}")
    return table[method]


def secemb_upload_bytes(params: secemb.SecEmbParams) -> dict[str, int]:
    """One user's SecEmb upload to both servers, from real messages: the
    retrieval requests (path keys) and the aggregation uploads (correction
    words); padding to m' makes them the same for every user."""
    usr = secemb.User(params, np.arange(min(3, params.m)))
    r0, r1 = usr.retrieval_request()
    u0, u1 = usr.aggregation_upload(np.zeros((min(3, params.m), params.d)))
    return {"request": r0.nbytes + r1.nbytes, "upload": u0.nbytes + u1.nbytes}


# ----------------------------------------------------------------- training
class _Adam:
    """Adam (Kingma and Ba 2015) on rows ``idx`` of a parameter array, with a
    step count per row (a device's own row steps when it takes part; the
    item table steps every round as one array)."""

    def __init__(self, shape, lr, b1=0.9, b2=0.999, eps=1e-8):
        self.m, self.v = np.zeros(shape), np.zeros(shape)
        self.t = np.zeros(shape[0], dtype=np.int64)
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def step(self, x, g, idx=None):
        idx = slice(None) if idx is None else idx
        self.t[idx] += 1
        t = self.t[idx][:, None]
        m = self.m[idx] * self.b1 + (1 - self.b1) * g
        v = self.v[idx] * self.b2 + (1 - self.b2) * g * g
        self.m[idx], self.v[idx] = m, v
        x[idx] -= self.lr * (m / (1 - self.b1 ** t)) / (np.sqrt(v / (1 - self.b2 ** t)) + self.eps)


def _grads(Xb, rows, seg, starts, r, mu, reg, d):
    """The loss of the module docstring for a round's users: Xb their rows
    (p_u, b_u), ``rows`` the item rows [q_i, b_i] of their ratings ``r``
    (user k's at starts[k]:starts[k + 1], seg[j] the user of rating j).
    Returns (gradients of Xb, gradient rows of the items, one per rating)."""
    k = np.diff(starts).astype(np.float64)
    p = Xb[seg, :d]
    q = rows[:, :d]
    e = (mu + Xb[seg, d] + rows[:, d] + np.einsum("ij,ij->i", q, p) - r) / k[seg]
    gT = np.empty_like(rows)
    gT[:, :d] = e[:, None] * p + reg * q
    gT[:, d] = e + reg * rows[:, d]
    gx = np.empty_like(Xb)
    gx[:, :d] = np.add.reduceat(e[:, None] * q, starts[:-1], axis=0) + reg * Xb[:, :d]
    gx[:, d] = np.add.reduceat(e, starts[:-1]) + reg * Xb[:, d]
    return gx, gT


def _rmse(X, Q, mu, d, users, items, ratings):
    pred = mu + X[users, d] + Q[items, d] + np.einsum("ij,ij->i", X[users, :d], Q[items, :d])
    return float(np.sqrt(np.mean((pred - ratings) ** 2)))


def train(r: ExplicitRatings, method: str, cfg: MFConfig = PAPER_MF, *, seed: int = 0, secure_rounds: int = 0,
          threads: int | None = None, on_epoch: Callable[[int, float], object] | None = None) -> dict[str, Any]:
    """Train MF federatedly with ``method`` (one of :data:`METHODS`) on the
    (seed-dependent) 80/20 split of ``r``.  ``secure_rounds`` (SecEmb only):
    the first that many rounds run the real protocol, each checked bit for
    bit against the fixed-point twin (AssertionError on a difference), the
    rest the twin; -1: every round.  Returns {"rmse" (per epoch, test),
    "rmse_final", "rmse_best", "bytes_per_user" (upload, mean),
    "secure_rounds", "seconds", "X", "Q"}.  Runs differing only in
    ``method`` see the same split, initialisation, users per round and
    (for SecEmb) item subsets."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_int(seed, "seed")
    check_int(secure_rounds, "secure_rounds")
    if method != "SecEmb" and secure_rounds:
        raise ValueError("secure_rounds is for method 'SecEmb' only")
    d, m, w = cfg.d, r.n_items, cfg.d + 1
    tr, te = split_ratings(r, cfg.test_frac, seed)
    mu = float(r.ratings[tr].mean())
    order = np.argsort(r.users[tr], kind="stable")
    tu, ti, trr = r.users[tr][order], r.items[tr][order], r.ratings[tr][order]
    cuts = np.searchsorted(tu, np.arange(r.n_users + 1))
    init = np.random.default_rng([seed, 2])
    X = np.zeros((r.n_users, w))
    X[:, :d] = init.normal(scale=cfg.init_std, size=(r.n_users, d))
    Q = np.zeros((m, w))
    Q[:, :d] = init.normal(scale=cfg.init_std, size=(m, d))
    uopt, qopt = _Adam(X.shape, cfg.lr), _Adam(Q.shape, cfg.lr)
    params = secemb.SecEmbParams(m=m, d=w, m_prime=min(cfg.m_prime, m), frac_bits=cfg.frac_bits,
                                 n_users=cfg.users_per_round, agg_bits=cfg.agg_bits)
    sched = np.random.default_rng([seed, 3])          # user order, SecEmb subsets: the same for every method
    noise = np.random.default_rng([seed, 4, METHODS.index(method)])    # TernGrad's coins, CoLR's B
    sb = secemb_upload_bytes(params) if method == "SecEmb" else {"request": 0, "upload": 0}
    curve, nbytes, nuploads, rnd, checked = [], 0, 0, 0, 0
    t_start = time.perf_counter()
    for ep in range(check_int(cfg.epochs, "epochs")):
        perm = sched.permutation(r.n_users)
        for s in range(0, r.n_users, cfg.users_per_round):
            batch = np.array([u for u in perm[s:s + cfg.users_per_round] if cuts[u + 1] > cuts[u]], dtype=np.int64)
            if not len(batch):
                continue
            sel = []
            for u in batch:
                a, b = int(cuts[u]), int(cuts[u + 1])
                if method == "SecEmb" and b - a > params.m_prime:     # Algorithm 1's truncation (the docstring)
                    sel.append(a + np.sort(sched.choice(b - a, size=params.m_prime, replace=False)))
                else:
                    sel.append(np.arange(a, b))
            starts = np.r_[0, np.cumsum([len(x) for x in sel])]
            j = np.concatenate(sel)
            items, rr = ti[j], trr[j]
            seg = np.repeat(np.arange(len(batch)), np.diff(starts))
            Xb = X[batch]
            if method == "SecEmb":
                secure = secure_rounds < 0 or rnd < secure_rounds
                table = secemb.encode_table(Q, params)
                rows = secemb.decode_fixed(table, params)[items]            # what every user retrieves
                gx, gT = _grads(Xb, rows, seg, starts, rr, mu, cfg.reg, d)
                G = _secemb_twin(gT, items, params)
                if secure:
                    G2, nb = _secemb_protocol(table, params, batch, items, starts, rows, gT, threads)
                    if not np.array_equal(G2, G):
                        raise AssertionError("SecEmb: the protocol's aggregate differs from the fixed-point twin's")
                    checked += 1
                else:
                    nb = len(batch) * (sb["request"] + sb["upload"])
            else:
                gx, gT = _grads(Xb, Q[items], seg, starts, rr, mu, cfg.reg, d)
                if method == "FedRec":
                    dec, per = gT, 4 * m * w
                    G = np.zeros((m, w))
                else:
                    B = noise.normal(scale=1 / math.sqrt(cfg.rank), size=(cfg.rank, w)) if method == "CoLR" else None
                    dec, per = compression.compress_round(method, gT, items, starts, m, cfg.rank, noise, B)
                acc = _scatter_sum(dec, items, m)
                G = acc @ B if method == "CoLR" else acc
                nb = per * len(batch)
            uopt.step(X, gx, batch)
            qopt.step(Q, G)
            nbytes += nb
            nuploads += len(batch)
            rnd += 1
        curve.append(_rmse(X, Q, mu, d, r.users[te], r.items[te], r.ratings[te]))
        if on_epoch is not None:
            on_epoch(ep + 1, curve[-1])
    per_user = nbytes / max(1, nuploads)
    want = (sb["request"] + sb["upload"]) if method == "SecEmb" else upload_bytes(method, m, w, cfg.rank)
    if nuploads and per_user != want:
        raise AssertionError(f"{method}: {per_user} bytes per upload, its formula gives {want}")
    return {"method": method, "rmse": curve, "rmse_final": curve[-1] if curve else float("nan"),
            "rmse_best": min(curve) if curve else float("nan"), "bytes_per_user": per_user,
            "secure_rounds": checked, "rounds": rnd, "seconds": time.perf_counter() - t_start, "X": X, "Q": Q}


def _scatter_sum(rows, items, m):
    """out[i] = sum of rows[j] over j with items[j] = i (m rows; uint64 sums
    wrap mod 2^64)."""
    order = np.argsort(items, kind="stable")
    uniq, first = np.unique(items[order], return_index=True)
    out = np.zeros((m, rows.shape[1]), dtype=rows.dtype)
    if len(uniq):
        out[uniq] = np.add.reduceat(rows[order], first, axis=0)
    return out


def _secemb_twin(gT, items, params):
    """The fixed-point twin of SecEmb's aggregation: every gradient row
    rounded to 2^-f, summed mod 2^b, decoded as signed."""
    acc = _scatter_sum(secemb.encode_fixed(gT, params), items, params.m)
    if params.agg_bits == 32:
        return (acc & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32) / params.scale
    return acc.view(np.int64) / params.scale


def _secemb_protocol(table, params, batch, items, starts, rows, gT, threads):
    """One round through ``secemb.User`` / ``secemb.Server``: retrieval (each
    user's rows must equal ``rows``, the twin's) and aggregation of ``gT``.
    Returns (the reconstructed sum, bytes the users sent to both servers)."""
    servers = [secemb.Server(0, params, table, threads), secemb.Server(1, params, table, threads)]
    ups: tuple[dict[int, Any], dict[int, Any]] = ({}, {})
    nb = 0
    for k, u in enumerate(batch):
        a, b = starts[k], starts[k + 1]
        usr = secemb.User(params, items[a:b])
        r0, r1 = usr.retrieval_request()
        got = usr.reconstruct(servers[0].answer(int(u), r0), servers[1].answer(int(u), r1))
        if not np.array_equal(got, rows[a:b]):
            raise AssertionError(f"SecEmb: user {u}'s retrieved rows differ from the fixed-point twin's")
        up0, up1 = usr.aggregation_upload(gT[a:b])
        ups[0][int(u)], ups[1][int(u)] = up0, up1
        nb += r0.nbytes + r1.nbytes + up0.nbytes + up1.nbytes
    sh = [servers[b].aggregate(ups[b]) for b in (0, 1)]
    return secemb.reconstruct_aggregate(sh[0], sh[1], params)[0], nb


# ----------------------------------------------------------------- the table
def _job(args):
    r, method, cfg, seed, secure_rounds = args
    res = train(r, method, cfg, seed=seed, secure_rounds=secure_rounds if method == "SecEmb" else 0)
    res.pop("X")
    res.pop("Q")
    return res


def run_table3(r: ExplicitRatings, cfg: MFConfig = PAPER_MF, *, reps: int = 4, methods: Sequence[str] = METHODS,
               secure_rounds: int = 1, processes: int = 1, seed: int = 0,
               progress: Callable[[str], object] | None = None) -> dict[str, Any]:
    """Train every method ``reps`` times (seeds seed .. seed + reps - 1: the
    split, initialisation and schedule of repetition k are the same for every
    method) and collect RMSE (mean, std over repetitions; final epoch and
    best epoch) and R.R.  ``processes``: worker processes over the
    (method, repetition) jobs.  Returns a JSON-able dict."""
    check_int(reps, "reps")
    check_int(processes, "processes")
    if reps < 1 or processes < 1:
        raise ValueError("reps and processes must be >= 1")
    bad = [mm for mm in methods if mm not in METHODS]
    if bad or not methods:
        raise ValueError(f"methods must be some of {METHODS}, got {list(methods)}")
    jobs = [(r, mm, cfg, seed + k, secure_rounds) for mm in methods for k in range(reps)]
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    if processes == 1:
        for j in jobs:
            results.append(_job(j))
            if progress:
                progress(f"{j[1]} rep {j[3] - seed + 1}/{reps}: RMSE {results[-1]['rmse_final']:.4f}")
    else:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(processes) as pool:
            for res in pool.imap(_job, jobs):
                results.append(res)
                if progress:
                    progress(f"{res['method']}: RMSE {res['rmse_final']:.4f}")
    w = cfg.d + 1
    dense = 4 * r.n_items * w
    rows = {}
    for mm in methods:
        rs = [x for x in results if x["method"] == mm]
        fin = np.array([x["rmse_final"] for x in rs])
        best = np.array([x["rmse_best"] for x in rs])
        per = rs[0]["bytes_per_user"]
        before = 2 * dense if mm == "SecEmb" else dense        # Secure FedRec's two shares for SecEmb
        rows[mm] = {"rmse": float(fin.mean()), "std": float(fin.std(ddof=1)) if len(fin) > 1 else 0.0,
                    "rmse_best": float(best.mean()), "bytes_per_user": per, "bytes_before": before,
                    "rr": before / per, "curves": [x["rmse"] for x in rs],
                    "secure_rounds": [x["secure_rounds"] for x in rs], "seconds": [x["seconds"] for x in rs]}
    return {"study": "secemb-table3", "model": "MF", "data": {"users": r.n_users, "items": r.n_items,
                                                              "ratings": int(len(r.ratings))},
            "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__}, "reps": reps, "seed": seed,
            "methods": rows, "published": {k: list(v) for k, v in PUBLISHED_ML100K_MF.items()},
            "seconds": time.perf_counter() - t0}


def format_table(res: dict[str, Any]) -> str:
    """Table 3's ML100K MF row: ours (RMSE mean +- std over repetitions at the
    last epoch, R.R.) beside the published, with the differences."""
    c = res["config"]
    out = [f"SecEmb Table 3, MF on MovieLens-100K ({res['data']['users']} users, {res['data']['items']} items, "
           f"{res['data']['ratings']} ratings): d = {c['d']}, lr = {c['lr']}, reg = {c['reg']}, "
           f"{c['epochs']} epochs, {c['users_per_round']} users per round, m' = {c['m_prime']}, rank {c['rank']}, "
           f"{res['reps']} repetitions", ""]
    hdr = ["method", "RMSE (ours)", "best epoch", "published", "diff", "R.R. (ours)", "published", "bytes/user"]
    rows = [hdr]
    for mm, v in res["methods"].items():
        pub = res["published"].get(mm)
        rows.append([mm, f"{v['rmse']:.3f} +- {v['std']:.3f}", f"{v['rmse_best']:.3f}",
                     f"{pub[0]:.3f} +- {pub[1]:.3f}" if pub else "-",
                     f"{v['rmse'] - pub[0]:+.3f}" if pub else "-", f"{v['rr']:.2f}",
                     f"{pub[2]:.2f}" if pub else "-", f"{v['bytes_per_user']:.0f}"])
    w = [max(len(r_[i]) for r_ in rows) for i in range(len(hdr))]
    out += ["  ".join(x.ljust(w[i]) if i == 0 else x.rjust(w[i]) for i, x in enumerate(r_)) for r_ in rows]
    if "SecEmb" in res["methods"]:
        s = res["methods"]["SecEmb"]["secure_rounds"]
        out += ["", f"SecEmb: {s} round(s) per repetition through the real protocol (each checked bit for bit "
                    "against the fixed-point twin), the rest as the twin"]
    out += ["R.R.: dense float32 update over the message sent (SecEmb: Secure FedRec's two Z_2^32 shares over "
            "SecEmb's requests and uploads to both servers)"]
    return "\n".join(out)


def write_plot(res: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Test RMSE per epoch (mean over repetitions) of every method."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.4, 3.4), dpi=90)
    for mm, v in res["methods"].items():
        y = np.mean(np.array(v["curves"]), axis=0)
        ax.plot(np.arange(1, len(y) + 1), y, "--" if mm == "SecEmb" else "-", lw=1.2,
                label=f"{mm} ({v['rmse']:.3f}, R.R. {v['rr']:.2f})")
    for mm, pub in res["published"].items():
        if mm == "SecEmb":
            ax.axhline(pub[0], color="gray", lw=0.8, ls=":", label=f"published SecEmb {pub[0]:.3f}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test RMSE")
    ax.set_ylim(top=min(ax.get_ylim()[1], 1.1))
    ax.set_title("SecEmb Table 3: MF on MovieLens-100K", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _load(data):
    """--data FILE, else MovieLens-100K fetched by :mod:`secea_fast.datasets`
    (the same reader either way, so the ids and the results are the same)."""
    if data is not None:
        return ratings_from_inter(data)
    from .. import datasets
    return ratings_from_inter(datasets.fetch("ml-100k") / "ml-100k.inter")


def main(argv: Sequence[str] | None = None) -> int:
    """``secea-fast study secemb-table3``: parse ``argv``, run, print the
    table, write JSON and a plot; the exit status."""
    from .blas import single_threaded_blas
    with single_threaded_blas():        # one BLAS thread for the whole run (studies.blas)
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    from .._cli_checks import OneLineParser, option_problem, output_dir_problem, save_result
    p = OneLineParser(prog="secea-fast study secemb-table3", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="d = 16, 3 epochs, 50 users per round, m' = 64, rank 4, "
                   "every SecEmb round through the real protocol")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 4, the paper's; --quick: 1)")
    p.add_argument("--epochs", type=int, default=None, help="epochs (default 200; --quick: 3)")
    p.add_argument("--secure-rounds", type=int, default=None,
                   help="SecEmb rounds per repetition through the real protocol, the rest as its checked "
                        "fixed-point twin (default 1; --quick: all; -1: all)")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=None, help="default: all")
    p.add_argument("--processes", type=int, default=1, help="worker processes over (method, repetition)")
    p.add_argument("--data", metavar="FILE", help="MovieLens-100K ratings (ml-100k.inter or u.data); "
                   "default: fetched by secea_fast.datasets (secea-fast data fetch ml-100k)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", metavar="DIR", default=None, help="write secemb-table3.json and .png here "
                   "(default: study-out)")
    args = p.parse_args(argv)
    bad = option_problem([("--reps", args.reps, 1, None), ("--epochs", args.epochs, 1, None),
                          ("--secure-rounds", args.secure_rounds, -1, None), ("--processes", args.processes, 1, None),
                          ("--seed", args.seed, 0, None)])
    if not bad and args.data is not None and not os.path.exists(args.data):
        bad = f"--data {args.data!r}: no such file"
    bad = bad or output_dir_problem(args.out or "study-out", "--out")
    if bad:
        print(f"secea-fast study secemb-table3: error: {bad}", file=sys.stderr)
        return 2
    import dataclasses
    cfg = QUICK_MF if args.quick else PAPER_MF
    if args.epochs is not None:
        cfg = dataclasses.replace(cfg, epochs=args.epochs)
    reps = args.reps or (1 if args.quick else 4)
    sec = args.secure_rounds if args.secure_rounds is not None else (-1 if args.quick else 1)
    try:
        r = _load(args.data)
        res = run_table3(r, cfg, reps=reps, methods=args.methods or METHODS, secure_rounds=sec,
                         processes=args.processes, seed=args.seed,
                         progress=lambda s: print(s, file=sys.stderr, flush=True))
    except (ValueError, TypeError, OSError) as exc:
        print(f"secea-fast study secemb-table3: error: {exc}", file=sys.stderr)
        return 2
    print(format_table(res))
    return save_result(json.dumps(res, indent=1, default=float), Path(args.out or "study-out") / "secemb-table3.json",
                       "--out", lambda png: write_plot(res, png), "secea-fast study secemb-table3")
