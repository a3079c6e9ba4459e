"""The lossy compressions of an item-table update that SecEmb's Table 3
compares with (Mai et al. 2025, Sec. 5.3; references in docs/papers.md),
as the messages one user would send: 8-bit absmax quantisation (the paper
cites Dettmers 2015), TernGrad (Wen et al. 2017), rank-r truncated SVD and
CoLR's correlated low-rank update (Nguyen et al. 2024).  Each ``*_message``
lays out the whole m x w update (zeros off the user's rows) and each
``*_decode`` reads back the user's rows; :func:`compress_round` does a
round's users at once and checks one message against its vectorised
result.  Used by :mod:`secea_fast.studies.secemb_table3`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["bit8_message", "bit8_decode", "tern_message", "tern_decode", "svd_message", "svd_decode",
           "colr_message", "colr_decode", "top_right_vectors", "compress_round"]


# A round's compressed updates are computed for all its users at once (one
# array of gradient rows, one row per (user, rated item)); every round the
# message of one user (the first of the round) is also built as bytes
# (the whole m x w update in the codec's layout), decoded, and must give
# exactly the rows the vectorised path used, and its length is the bytes
# counted per upload (the layouts have the same length for every user).
def bit8_message(s: np.float32, q: np.ndarray, its: np.ndarray, m: int, w: int) -> bytes:
    """float32 scale s, then m x w int8 q (rows ``its``: q = rint(127 g / s)): 4 + m w bytes."""
    full = np.zeros((m, w), dtype=np.int8)
    full[its] = q
    return s.tobytes() + full.tobytes()


def bit8_decode(msg: bytes, its: np.ndarray, m: int, w: int) -> np.ndarray:
    """Rows ``its`` of a :func:`bit8_message`: q s / 127."""
    s = np.float64(np.frombuffer(msg[:4], dtype=np.float32)[0])
    return np.frombuffer(msg[4:], dtype=np.int8).reshape(m, w)[its] * (s / 127)


def tern_message(s: np.float32, code: np.ndarray, its: np.ndarray, m: int, w: int) -> bytes:
    """float32 scale s, then m x w two-bit codes (0: 0, 1: +s, 2: -s), four to a byte, lowest bits first:
    4 + ceil(m w / 4) bytes."""
    full = np.zeros(m * w + (-(m * w)) % 4, dtype=np.uint8)       # 0: 0, 1: +s, 2: -s
    full[:m * w].reshape(m, w)[its] = code
    c4 = full.reshape(-1, 4)
    return s.tobytes() + (c4[:, 0] | (c4[:, 1] << 2) | (c4[:, 2] << 4) | (c4[:, 3] << 6)).astype(np.uint8).tobytes()


def tern_decode(msg: bytes, its: np.ndarray, m: int, w: int) -> np.ndarray:
    """Rows ``its`` of a :func:`tern_message` as values in {0, +s, -s}."""
    s = np.float64(np.frombuffer(msg[:4], dtype=np.float32)[0])
    b = np.frombuffer(msg[4:], dtype=np.uint8)
    back = np.stack([(b >> k) & 3 for k in (0, 2, 4, 6)], axis=1).ravel()[:m * w].reshape(m, w)[its]
    return np.where(back == 1, s, np.where(back == 2, -s, 0.0))


def svd_message(U: np.ndarray, V: np.ndarray, its: np.ndarray, m: int) -> bytes:
    """U_r S_r as m x r float32 (rows ``its`` = ``U``), then V_r as w x r float32: 4 r (m + w) bytes."""
    full = np.zeros((m, V.shape[1]), dtype=np.float32)
    full[its] = U
    return full.tobytes() + V.astype(np.float32).tobytes()


def svd_decode(msg: bytes, its: np.ndarray, m: int, w: int, rank: int) -> np.ndarray:
    """Rows ``its`` of U_r S_r V_r^T from an :func:`svd_message`."""
    U = np.frombuffer(msg[:4 * m * rank], dtype=np.float32).reshape(m, rank)[its]
    V = np.frombuffer(msg[4 * m * rank:], dtype=np.float32).reshape(w, rank)
    return U.astype(np.float64) @ V.T.astype(np.float64)


def colr_message(A: np.ndarray, its: np.ndarray, m: int) -> bytes:
    """A_u = G_u B^T as m x r float32 (rows ``its`` = ``A``): 4 r m bytes."""
    full = np.zeros((m, A.shape[1]), dtype=np.float32)
    full[its] = A
    return full.tobytes()


def colr_decode(msg: bytes, its: np.ndarray, m: int, rank: int) -> np.ndarray:
    """Rows ``its`` of A_u from a :func:`colr_message`."""
    return np.frombuffer(msg, dtype=np.float32).reshape(m, rank)[its].astype(np.float64)


def top_right_vectors(gs: Sequence[np.ndarray], rank: int) -> list[np.ndarray]:
    """The ``rank`` top right singular vectors of every matrix in ``gs``, as
    the top eigenvectors of the w x w Gram matrices g^T g (one batched
    ``eigh`` per round instead of one SVD per user: the same subspace,
    hence the same rank-r truncated SVD g V_r V_r^T)."""
    gram = np.stack([g.T @ g for g in gs])
    _, vecs = np.linalg.eigh(gram)                  # ascending eigenvalues
    return [v[:, ::-1][:, :rank] for v in vecs]


def compress_round(method: str, gT: np.ndarray, items: np.ndarray, starts: np.ndarray, m: int, rank: int,
                   rng: np.random.Generator, B: np.ndarray | None) -> tuple[np.ndarray, int]:
    """(the rows the servers decode, one per gradient row; bytes per upload)
    for a round's users, whose rows are gT[starts[k]:starts[k + 1]]."""
    w = gT.shape[1]
    seg = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    a0, a1 = starts[0], starts[1]
    its0 = items[a0:a1]
    if method in ("Bit8quant", "Ternquant"):
        s32 = np.maximum.reduceat(np.abs(gT).max(axis=1), starts[:-1]).astype(np.float32)
        s = s32.astype(np.float64)[seg]
        safe = np.where(s > 0, s, 1.0)
        if method == "Bit8quant":
            q = np.rint(gT / safe[:, None] * 127).astype(np.int8)
            dec = q * (s / 127)[:, None]
            msg = bit8_message(s32[0], q[a0:a1], its0, m, w)
            back = bit8_decode(msg, its0, m, w)
        else:
            keep = rng.random(gT.shape) < np.abs(gT) / safe[:, None]
            code = (keep * np.where(gT > 0, 1, 2)).astype(np.uint8)
            dec = np.where(code == 1, s[:, None], np.where(code == 2, -s[:, None], 0.0))
            msg = tern_message(s32[0], code[a0:a1], its0, m, w)
            back = tern_decode(msg, its0, m, w)
    elif method == "SVD":
        Vs = top_right_vectors([gT[starts[k]:starts[k + 1]] for k in range(len(starts) - 1)], rank)
        dec = np.empty_like(gT)
        for k, V in enumerate(Vs):
            a, b = starts[k], starts[k + 1]
            if V.shape[1] < rank:                                  # fewer columns than the rank
                V = np.hstack([V, np.zeros((w, rank - V.shape[1]))])
            U32, V32 = (gT[a:b] @ V).astype(np.float32), V.astype(np.float32)
            dec[a:b] = U32.astype(np.float64) @ V32.T.astype(np.float64)
            if k == 0:
                msg = svd_message(U32, V32, its0, m)
        back = svd_decode(msg, its0, m, w, rank)
    elif method == "CoLR":                                        # CoLR: the rows of A_u = G_u B^T
        if B is None:
            raise ValueError("B: CoLR needs the round's random matrix")
        A32 = (gT @ B.T).astype(np.float32)
        dec = A32.astype(np.float64)
        msg = colr_message(A32[a0:a1], its0, m)
        back = colr_decode(msg, its0, m, rank)
    else:
        raise ValueError(f"method must be Bit8quant, Ternquant, SVD or CoLR, got {method!r}")
    if not np.array_equal(back, dec[a0:a1]):
        raise AssertionError(f"{method}: the decoded message differs from the rows the round used")
    return dec, len(msg)
