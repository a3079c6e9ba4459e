"""Checks of the inputs every protocol's round takes: entity ids and their
canonical bytes, per-client embedding dicts, (querier, responder) pairs.
Private to ``protocols`` (the rounds call these; users call the rounds)."""
from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike

# an entity id; the per-client inputs of a round: one dict entity id -> embedding per client
EntityId = Union[str, bytes, int]
Local = Sequence[dict[Any, Any]]


def id_bytes(x: EntityId) -> bytes:
    """The canonical, type-tagged bytes of an entity id (str, bytes or int),
    so that 1, "1" and b"1" are different entities.  Anything else is a
    TypeError."""
    if isinstance(x, str):
        return b"s" + x.encode("utf-8")
    if isinstance(x, (bytes, bytearray, memoryview)):
        return b"b" + bytes(x)
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        v = int(x)
        return b"i" + v.to_bytes((v.bit_length() + 8) // 8 or 1, "big", signed=True)
    raise TypeError(f"entity ids must be str, bytes or int, got {type(x).__name__}")


def entity_list(entities: Iterable[Any], name: str) -> list[Any]:
    """``entities`` (any iterable of ids, or a mapping: its keys) as a list.
    A single str / bytes is refused: iterating it would silently turn
    "abc" into the three entities 'a', 'b', 'c'."""
    if isinstance(entities, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be a collection of entity ids (list, set, dict keys...), "
                        f"not a single {type(entities).__name__}: wrap it as [{entities!r}]")
    try:
        return list(entities)
    except TypeError:
        raise TypeError(f"{name} must be a collection of entity ids, got "
                        f"{type(entities).__name__}") from None


def real_vector(vec: ArrayLike, name: str) -> np.ndarray:
    """An embedding as a float64 array.  Refuses complex values (NumPy would
    drop the imaginary part with only a ComplexWarning) and non-numeric
    ones (object, str, bytes...) with a TypeError naming ``name``."""
    a = np.asarray(vec)
    if a.dtype.kind not in "biuf":
        what = "complex" if a.dtype.kind == "c" else "non-numeric"
        raise TypeError(f"{name} must hold real numbers, got {what} dtype {a.dtype}")
    return a.astype(np.float64, copy=False)


def check_local(local: Local) -> int:
    """``local``: one non-empty dict entity id -> real 1-D embedding per
    client (the input of the entity-aggregation rounds).  Returns d, the
    embedding length of the first entity (the parameters check the rest)."""
    if not isinstance(local, (list, tuple)) or not local:
        raise TypeError("local must be a non-empty list of dicts (one per client)")
    for n, emb in enumerate(local):
        if not isinstance(emb, dict) or not emb:
            raise ValueError(f"client {n}: expected a non-empty dict entity id -> embedding")
        for key, vec in emb.items():
            if not (isinstance(vec, np.ndarray) and vec.dtype.kind in "biuf"):
                real_vector(vec, f"local[{n}][{key!r}]")
    return len(np.asarray(next(iter(local[0].values()))).reshape(-1))


def check_pairs(pairs: Iterable[tuple[int, int]] | None, N: int, name: str) -> set[tuple[int, int]]:
    """``drop`` / ``corrupt``: an iterable of (querier, responder) pairs of
    client indices in [0, N), as a set.  A pair naming an unknown client
    (out of range, or an entity id instead of an index) would otherwise
    never match and be ignored silently."""
    if pairs is None:
        return set()
    if isinstance(pairs, (str, bytes, bytearray, memoryview, dict)):
        raise TypeError(f"{name} must be a set of (querier, responder) pairs, "
                        f"got {type(pairs).__name__}")
    try:
        items = list(pairs)
    except TypeError:
        raise TypeError(f"{name} must be a set of (querier, responder) pairs, "
                        f"got {type(pairs).__name__}") from None
    out: set[tuple[int, int]] = set()
    for pair in items:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{name}: {pair!r} is not a (querier, responder) pair of client indices")
        for role, x in zip(("querier", "responder"), pair):
            if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not 0 <= int(x) < N:
                raise ValueError(f"{name}: pair {tuple(pair)!r} names unknown client {x!r} as "
                                 f"{role}; clients are the indices 0..{N - 1}")
        out.add((int(pair[0]), int(pair[1])))
    return out
