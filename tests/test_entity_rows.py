"""The array-native input of the entity-aggregation rounds (EntityRows: integer
ids and a 2-D row array): the same result bit for bit as the dict form on
every path (the sessions, the executor, SecEA-PHE, one session), matched by
id when a client's order differs, checked once where it is made, and refused
by the rounds that take dicts only."""
import numpy as np
import pytest

from secea_fast import paillier
from secea_fast.protocols import baselines, secea, secea_phe
from secea_fast.protocols.secea import EntityRows, SecEAParams
from secea_fast.protocols.secea_phe import PHEParams


def _inputs(seed=0, N=4, d=3, universe=40, size=15):
    rng = np.random.default_rng(seed)
    ids = [rng.choice(universe, size, replace=False).astype(np.int64) for _ in range(N)]   # unsorted
    rows = [rng.uniform(-1, 1, (size, d)) for _ in range(N)]
    return ids, rows


def _same(res_a, res_d, ids):
    for n, i in enumerate(ids):
        assert np.array_equal(res_a.rows[n], res_d.rows[n]) and res_a.rows[n].shape[0] == len(i)
        # the dict form's embeddings, in the ids' order, are the rows bit for bit
        assert np.array_equal(np.array([res_d.embeddings[n][k] for k in i.tolist()]), res_a.rows[n])
        assert list(res_a.embeddings[n]) == i.tolist()


@pytest.mark.parametrize("processes", [1, 2])
def test_secea_arrays_equal_dicts_bit_for_bit(processes):
    ids, rows = _inputs()
    as_dicts = [dict(zip(i.tolist(), r)) for i, r in zip(ids, rows)]
    as_arrays = [EntityRows(i, r) for i, r in zip(ids, rows)]
    mixed = [as_arrays[0], *as_dicts[1:]]
    res_d = secea.run_round(as_dicts, precision=6, processes=processes, verify=True)
    for local in (as_arrays, mixed):
        res_a = secea.run_round(local, precision=6, processes=processes, verify=True)
        _same(res_a, res_d, ids)
        for a, b in zip(res_a.sums + res_a.counts, res_d.sums + res_d.counts):
            assert np.array_equal(a, b)
    # a later round with the kept union takes arrays too
    again = secea.run_round(as_arrays, precision=6, processes=processes, union=res_d.union)
    _same(again, res_d, ids)


def test_secea_phe_arrays_equal_dicts():
    ids, rows = _inputs(seed=1, N=3, d=2, universe=12, size=5)
    keys = [paillier.keygen(512, insecure=True) for _ in range(3)]
    prm = PHEParams(SecEAParams(N=3, d=2), key_bits=512, insecure_keys=True)
    res_d = secea_phe.run_round([dict(zip(i.tolist(), r)) for i, r in zip(ids, rows)], params=prm, keys=keys,
                                verify=True)
    res_a = secea_phe.run_round([EntityRows(i, r) for i, r in zip(ids, rows)], params=prm, keys=keys,
                                verify=True)
    _same(res_a, res_d, ids)


def test_client_matches_rows_by_id_when_its_order_differs():
    """A client made with its ids in one order takes EntityRows in another:
    rows are matched by id, as a dict's are."""
    ids, rows = _inputs(N=3)
    prm = SecEAParams(N=3, d=3)
    union = secea.entity_union([i.tolist() for i in ids])
    c = secea.Client(0, prm, ids[0].tolist())
    c.set_union(union)
    perm = np.random.default_rng(5).permutation(len(ids[0]))
    want = c.encode_embeddings(dict(zip(ids[0].tolist(), rows[0])))
    assert np.array_equal(c.encode_embeddings(EntityRows(ids[0], rows[0])), want)
    assert np.array_equal(c.encode_embeddings(EntityRows(ids[0][perm], rows[0][perm])), want)
    with pytest.raises(ValueError, match="unknown entity"):
        c.encode_embeddings(EntityRows(ids[0] + 1000, rows[0]))
    with pytest.raises(ValueError, match="one embedding per entity"):
        c.encode_embeddings(EntityRows(ids[0][:-1], rows[0][:-1]))
    with pytest.raises(ValueError, match="3 columns"):
        c.encode_embeddings(EntityRows(ids[0], rows[0][:, :2]))


def test_session_takes_arrays_and_keeps_rows():
    ids, rows = _inputs(N=3)
    res = secea.run_round([EntityRows(i, r) for i, r in zip(ids, rows)], precision=6)
    from secea_fast.protocols.secea.session import ClientSession
    s = ClientSession(None, None, EntityRows(ids[0], rows[0]))
    assert s.ids == ids[0].tolist() and s.rows is None
    assert res.rows[0].shape == rows[0].shape


def test_entity_rows_checked_where_made():
    ok = EntityRows(np.array([3, 1, 2]), np.zeros((3, 2)))
    assert len(ok) == 3 and ok.id_list() == [3, 1, 2] and list(ok.to_dict()) == [3, 1, 2]
    with pytest.raises(TypeError, match="ids must be a 1-D integer array"):
        EntityRows(np.array([1.0, 2.0]), np.zeros((2, 2)))
    with pytest.raises(TypeError, match="ids must be a 1-D integer array"):
        EntityRows(np.array([["a"], ["b"]]), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="at least one entity"):
        EntityRows(np.array([], dtype=np.int64), np.zeros((0, 2)))
    with pytest.raises(ValueError, match="rows must be a 2-D array"):
        EntityRows(np.array([1, 2]), np.zeros(2))
    with pytest.raises(ValueError, match="rows must be a 2-D array"):
        EntityRows(np.array([1, 2]), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="entity id 7 is repeated"):
        EntityRows(np.array([7, 1, 7]), np.zeros((3, 2)))
    with pytest.raises(TypeError, match="rows must hold real numbers"):
        EntityRows(np.array([1]), np.zeros((1, 2), dtype=complex))
    with pytest.raises(AttributeError):
        ok.rows = np.ones((3, 2))
    with pytest.raises(ValueError):
        ok.rows[0, 0] = 1.0                   # read-only views
    src = np.zeros((1, 2))
    EntityRows(np.array([1]), src)
    src[0, 0] = 1.0                           # the caller's array stays writable


def test_rounds_that_take_dicts_refuse_arrays_by_name():
    local = [{1: np.zeros(2)}, EntityRows(np.array([1]), np.zeros((1, 2)))]
    with pytest.raises(TypeError, match=r"local\[1\].*to_dict"):
        baselines.embavg(local)
    with pytest.raises(ValueError, match="params do not match"):
        secea.run_round([EntityRows(np.array([1]), np.zeros((1, 2))),
                         EntityRows(np.array([1]), np.zeros((1, 2)))],
                        params=SecEAParams(N=3, d=2))
