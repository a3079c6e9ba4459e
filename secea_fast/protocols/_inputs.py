"""Checks of the inputs every protocol's round takes: entity ids and their
canonical bytes, per-client embedding dicts, (querier, responder) pairs.
Private to ``protocols`` (the rounds call these; users call the rounds)."""
from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike

# an entity id; the per-client inputs of a round: per client, a dict entity id -> embedding or
# the same as arrays (EntityRows)
EntityId = Union[str, bytes, int]


class EntityRows:
    """One client's input to an entity-aggregation round as arrays:
    ``ids``, a 1-D integer array of distinct entity ids, and ``rows``, a
    2-D real array with one embedding row per id, in the same order.  The
    same input as the dict ``{int(i): row}`` (ids are matched across
    clients as integers, so ``EntityRows([3], ...)`` and ``{3: ...}`` name
    the same entity) and the same result bit for bit, without building a
    dict per round.  Checked once, here: a round takes it as it is.  The
    arrays are kept as read-only views, not copied (``rows`` as float64:
    copied only if it is another dtype)."""

    __slots__ = ("ids", "rows")
    ids: np.ndarray
    rows: np.ndarray

    def __init__(self, ids: ArrayLike, rows: ArrayLike) -> None:
        i = np.asarray(ids)
        if i.ndim != 1 or i.dtype.kind not in "iu":
            raise TypeError(f"ids must be a 1-D integer array, got dtype {i.dtype}, shape {i.shape}")
        if not len(i):
            raise ValueError("ids must name at least one entity")
        r = real_vector(rows, "rows")
        if r.ndim != 2 or r.shape[0] != len(i) or not r.shape[1]:
            raise ValueError(f"rows must be a 2-D array with one non-empty row per id ({len(i)}), "
                             f"got shape {r.shape}")
        u, counts = np.unique(i, return_counts=True)
        if len(u) != len(i):
            raise ValueError(f"ids must be distinct: entity id {int(u[counts > 1][0])} is repeated")
        i, r = i.view(), r.view()
        i.flags.writeable = r.flags.writeable = False
        object.__setattr__(self, "ids", i)
        object.__setattr__(self, "rows", r)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("EntityRows is immutable")

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"EntityRows({len(self.ids)} ids, rows {self.rows.shape[0]}x{self.rows.shape[1]})"

    def id_list(self) -> list[int]:
        """The ids as Python ints (the dict form's keys)."""
        return self.ids.tolist()

    def to_dict(self) -> dict[int, np.ndarray]:
        """The dict form: int id -> its row."""
        return dict(zip(self.id_list(), self.rows))


Local = Sequence[Union[dict[Any, Any], EntityRows]]
Dicts = Sequence[dict[Any, Any]]          # the input of the rounds that take dicts only


def local_ids(emb: dict[Any, Any] | EntityRows) -> list[Any]:
    """A client's entity ids in its input's order (a dict's keys, or
    :class:`EntityRows`' ids as Python ints)."""
    return emb.id_list() if isinstance(emb, EntityRows) else list(emb)


def local_items(emb: dict[Any, Any] | EntityRows) -> Iterable[tuple[Any, Any]]:
    """(id, row) pairs of a client's input, in its order."""
    return zip(emb.id_list(), emb.rows) if isinstance(emb, EntityRows) else emb.items()


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


def check_local(local: Local, *, arrays: bool = False) -> int:
    """``local``: one non-empty dict entity id -> real 1-D embedding per
    client (the input of the entity-aggregation rounds), or with
    ``arrays``, an :class:`EntityRows` (checked when it was made) in place
    of any dict.  Returns d, the embedding length of the first entity (the
    parameters check the rest)."""
    if not isinstance(local, (list, tuple)) or not local:
        raise TypeError("local must be a non-empty list of dicts (one per client)")
    for n, emb in enumerate(local):
        if isinstance(emb, EntityRows):
            if not arrays:
                raise TypeError(f"local[{n}]: this round takes dicts entity id -> embedding, "
                                f"not EntityRows (use its to_dict())")
            continue
        if not isinstance(emb, dict) or not emb:
            raise ValueError(f"client {n}: expected a non-empty dict entity id -> embedding")
        for key, vec in emb.items():
            if not (isinstance(vec, np.ndarray) and vec.dtype.kind in "biuf"):
                real_vector(vec, f"local[{n}][{key!r}]")
    first = local[0]
    if isinstance(first, EntityRows):
        return int(first.rows.shape[1])
    return len(np.asarray(next(iter(first.values()))).reshape(-1))


def rows_in_order(emb: EntityRows, ids: list[Any], d: int, who: str) -> np.ndarray:
    """``emb``'s rows in the order of ``ids`` (a party's entities): as they
    are when its ids are ``ids`` in the same order, else matched by
    ``id_bytes`` as a dict's keys are.  ValueError naming ``who`` for rows
    of another width, a missing id or an unknown one."""
    if emb.rows.shape[1] != d:
        raise ValueError(f"{who}: rows must have {d} columns, got {emb.rows.shape[1]}")
    keys = emb.id_list()
    if keys == ids:
        return emb.rows
    if len(keys) != len(ids):
        raise ValueError(f"{who}: need one embedding per entity ({len(ids)}), got {len(keys)}")
    idx = {id_bytes(x): i for i, x in enumerate(ids)}
    order = np.empty(len(keys), dtype=np.int64)
    for j, key in enumerate(keys):
        row = idx.get(id_bytes(key))
        if row is None:
            raise ValueError(f"{who}: embedding for unknown entity {key!r}")
        order[row] = j
    return emb.rows[order]


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
