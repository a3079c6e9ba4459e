"""SecEA decoding (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 4.1 step 3 and eqs. 21-22):
the union from the server's sum by rational reconstruction, and
the response polynomial by interpolation or Reed-Solomon decoding, with
how far the result was checked."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from ... import linalg, poly
from .params import SecEAParams

DecodingError = poly.DecodingError


# ----------------------------------------------------------------- union math
@lru_cache(maxsize=4)
def union_from_sum(total_bytes: bytes, p: int):
    """u/L from the 2Nk-term sum, and the roots of L (Sec. 4.1, step 3).
    A pure function of the public sum, so simulated clients share one
    evaluation (each real client runs it on its own machine)."""
    total = np.frombuffer(total_bytes, dtype=np.uint64)
    _, L = poly.rational_reconstruct(total, p, laurent=True)
    return poly.roots(L, p), len(L) - 1


# ----------------------------------------------------------------- decoding
def decode_values(prm: SecEAParams, Y: np.ndarray, present: np.ndarray, B: int, *,
                  verify: bool = False, who: str = "decode") -> tuple[np.ndarray, list[int], int]:
    """Y(beta_1..beta_K) from the unpadded responses ``Y`` (N, B*sub) of one
    block (eq. 22): interpolation when every response is present and they
    are consistent (parity checks zero), Reed-Solomon decoding otherwise.
    Returns ((B, K*sub) values, positions of faulty present responses,
    redundancy = responses present beyond k = ``prm.response_len``).
    Corrects e faulty and s missing responses when 2e + s <= N - k; with
    N - s = k nothing can be checked and the values are returned as
    interpolated, unless ``verify`` (then DecodingError; see ``Client.decode``)."""
    redundancy = int(present.sum()) - prm.response_len
    if verify and redundancy == 0:
        raise DecodingError(
            f"{who}: {int(present.sum())} responses = k = 2(K+T-1)+1 = {prm.response_len} leave no "
            f"redundancy, so the result cannot be checked (a corrupted response would go unnoticed); "
            f"verify=True refuses it: choose a smaller K, or accept unchecked results with verify=False")
    faulty: list[int] = []
    if present.all() and (prm.redundancy == 0 or not linalg.matmul(prm.parity_matrix, Y, prm.p).any()):
        S = linalg.matmul(prm.decode_matrix, Y, prm.p)              # (K, B*sub)
    else:
        if prm.redundancy == 0:
            raise DecodingError(
                f"response(s) of client(s) {np.flatnonzero(~present).tolist()} missing and "
                f"N = {prm.N} = 2(K+T-1)+1 leaves no redundancy (choose a smaller K)")
        coeffs, errs = poly.rs_decode(np.array(prm.alphas, dtype=np.uint64),
                                      np.ascontiguousarray(Y.T), prm.response_len, prm.p,
                                      erasures=~present)
        S = poly.eval(coeffs, np.array(prm.betas[:prm.K], dtype=np.uint64), prm.p).T
        faulty = [int(x) for x in errs if present[x]]
    return S.reshape(prm.K, B, prm.sub).transpose(1, 0, 2).reshape(B, prm.K * prm.sub), faulty, redundancy


def gather_responses(slots: Iterable[Any], N: int, B: int, sub: int,
                     fill: Callable[[int, Any, np.ndarray], None]) -> tuple[np.ndarray, np.ndarray]:
    """The (N, B*sub) matrix Y of a block's responses and the (N,) mask of
    the present ones, from N slots (``None`` for a missing response):
    ``fill(v, slot, out)`` checks slot v and writes its B x sub values of
    F_p into ``out`` (a view of row v of Y)."""
    slots = list(slots)
    if len(slots) != N:
        raise ValueError(f"need N = {N} response slots (None for missing)")
    Y = np.zeros((N, B * sub), dtype=np.uint64)
    present = np.ones(N, dtype=bool)
    for v, slot in enumerate(slots):
        if slot is None:
            present[v] = False
        else:
            fill(v, slot, Y[v].reshape(B, sub))
    return Y, present


class DecodeResult(tuple):
    """``Client.decode``'s result: the tuple (sums, counts, faulty) as before,
    plus how far it was checked.  (SecEA-PHE's decode returns one too, its
    first two entries being the numerators and denominators of the means.)

    * ``redundancy``: responses received beyond the k = 2(K+T-1)+1 that
      determine the response polynomial (eq. 21), i.e. N - s - k for s
      dropped responses;
    * ``checked``: ``redundancy > 0``.  Only then is a corrupted response
      detected (and, within 2e + s <= N - k, corrected and named in
      ``faulty``); an unchecked result is right only if every response was.
    """

    redundancy: int

    def __new__(cls, sums, counts, faulty, redundancy):
        self = super().__new__(cls, (sums, counts, faulty))
        self.redundancy = int(redundancy)
        return self

    @property
    def sums(self) -> np.ndarray:
        return self[0]

    @property
    def counts(self) -> np.ndarray:
        return self[1]

    @property
    def faulty(self) -> list[int]:
        return self[2]

    @property
    def checked(self) -> bool:
        return self.redundancy > 0

    def __getnewargs__(self):
        return tuple(self) + (self.redundancy,)
