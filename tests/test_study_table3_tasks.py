"""The Table 3 tasks added beside LightGCN and PCA: SVD and NCF across item
silos (studies.rectasks) and the multi-view autoencoder
(studies.autoencoder).  At a tiny size each one's training loss falls,
SecEA(8) equals its fixed-point twin bit for bit at every round, and the
Entire twin (one client with everyone's data) runs on the same test cases;
NDCG (sampled and full ranking) and NMI are checked against hand-computed
cases."""
import math

import numpy as np
import pytest

from secea_fast.studies import framework as fw
from secea_fast.studies.recsys import Ratings, synthetic_ratings


def _ratings(n_users=60, n_items=80, n=1500, seed=1):
    r = synthetic_ratings(n_users, n_items, n, seed=seed)
    vals = np.random.default_rng(seed).integers(1, 6, len(r.users)).astype(np.float64)
    return Ratings(r.users, r.items, r.times, r.n_users, r.n_items, vals)


def _svd():
    from secea_fast.studies import rectasks
    return rectasks.SVDTask(_ratings(), 3, d=4, lr=0.05, epochs=2, seed=0)


def _ncf():
    from secea_fast.studies import rectasks
    return rectasks.NCFTask(_ratings(), 3, d=4, layers=(8, 4), lr=0.01, batch=64, epochs=2, seed=0)


def _autoencoder():
    from secea_fast.studies import autoencoder, tabular
    return autoencoder.AutoencoderTask(tabular.synthetic_census(200, seed=1), 3, d=4, hidden=(8,), lr=0.01,
                                       batch=32, seed=0)


BUILDERS = {"svd": _svd, "ncf": _ncf, "autoencoder": _autoencoder}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def task(request):
    return BUILDERS[request.param]()


class _Recording(fw.Aggregator):
    """An aggregator that keeps the rows it returns (to compare them bit for bit)."""

    def __init__(self, inner):
        self.inner, self.label, self.rows = inner, inner.label, []

    def __call__(self, task, rows):
        out = self.inner(task, rows)
        self.rows.append([r.copy() for r in out[0]])
        return out


def _same_rows(a, b):
    return all(np.array_equal(x, y) for ra, rb in zip(a.rows, b.rows) for x, y in zip(ra, rb))


def test_secea_equals_fixed_twin_bit_for_bit(task):
    sec, fix = _Recording(fw.SecEAAvg(8)), _Recording(fw.FixedAvg(8))
    rs, rf = fw.run(task, sec, 2, evaluate_init=True), fw.run(task, fix, 2, evaluate_init=True)
    assert _same_rows(sec, fix) and len(sec.rows) == 2
    assert [r.metrics for r in rs] == [r.metrics for r in rf]
    assert all(r.bytes > 0 for r in rs[1:])
    weak = _Recording(fw.FixedAvg(6))             # the control: two digits fewer is caught
    fw.run(task, weak, 2)
    assert not _same_rows(sec, weak)


def test_loss_falls_and_entire_runs(task):
    losses = []
    fw.run(task, fw.PlainAvg(), 4, on_round=lambda rec: losses.append(float(np.mean(task.loss))))
    assert losses[-1] < 0.9 * losses[0], losses
    c = task.centralized()
    assert c.n_clients == 1 and set(c.ids[0].tolist()) == set(np.concatenate(task.ids).tolist())
    recs = fw.run(c, fw.Single(), 1)
    assert set(recs[0].metrics) == set(task.metrics)


def test_ndcg_at_k_by_hand():
    from secea_fast.studies.rectasks import ndcg_at_k
    assert ndcg_at_k(np.array([0, 1, 10]), k=10) == pytest.approx((1 + 1 / math.log2(3)) / 3)
    assert ndcg_at_k(np.array([3]), k=3) == 0.0 and ndcg_at_k(np.array([2]), k=3) == 0.5


class _ByItemId:
    """A scorer for the ranking check: an item's score is minus its global id."""

    def __init__(self, task):
        self.task = task

    def __call__(self, n, rows, u, i):
        its = self.task.silos.items_of[n]
        nu = len(self.task.silos.users_of[n])
        return -its[i - nu].astype(np.float64)


@pytest.mark.parametrize("ranking", ["sampled", "full", "all"])
def test_ranking_against_brute_force(ranking):
    """Ranks under a known scorer (lower item id = better) against ranks
    counted by hand: sampled, the negatives below the test item; full, the
    silo's items below it that the user did not rate in training; all,
    every silo's items below it that the user did not rate in training in
    any silo."""
    from secea_fast.studies import rectasks
    task = rectasks.SVDTask(_ratings(), 3, d=2, ranking=ranking, k=5, seed=0)
    task._scores = _ByItemId(task)
    ranks = []
    anywhere = {(u, j) for tu, ti in task.silos.train for u, j in zip(tu.tolist(), ti.tolist())}
    for n in range(3):
        tu, ti, negs = task.silos.test[n]
        trained = set(zip(task.silos.train[n][0].tolist(), task.silos.train[n][1].tolist()))
        for u, i, ng in zip(tu.tolist(), ti.tolist(), negs):
            if ranking == "sampled":
                cands = [j for j in ng.tolist() if j >= 0]
            elif ranking == "all":
                cands = [j for j in range(task.silos.n_items) if j != i and (u, j) not in anywhere
                         and u in task.silos.users_of[task.silos.owner[j]]]
            else:
                cands = [j for j in task.silos.items_of[n].tolist() if j != i and (u, j) not in trained]
            ranks.append(sum(1 for j in cands if j <= i))
    want = np.mean([1 / math.log2(r + 2) if r < 5 else 0.0 for r in ranks])
    got = task.evaluate([np.zeros((len(x), 3)) for x in task.ids])
    assert got["NDCG@5"] == pytest.approx(want, abs=1e-12)
    assert got["HR@5"] == pytest.approx(np.mean([r < 5 for r in ranks]), abs=1e-12)


def test_all_ranking_of_the_entire_twin():
    """The Entire twin under ranking="all": one model over every item, the
    candidates every item the user did not rate in any silo's training."""
    from secea_fast.studies import rectasks
    c = rectasks.SVDTask(_ratings(), 3, d=2, ranking="all", k=5, seed=0).centralized()
    c._scores = _ByItemId(c)
    tu, ti, _ = c.silos.test[0]
    trained = set(zip(c.silos.train[0][0].tolist(), c.silos.train[0][1].tolist()))
    ranks = [sum(1 for j in range(c.silos.n_items) if j < i and (u, j) not in trained)
             for u, i in zip(tu.tolist(), ti.tolist())]
    got = c.evaluate([np.zeros((len(x), 3)) for x in c.ids])
    assert got["NDCG@5"] == pytest.approx(np.mean([1 / math.log2(r + 2) if r < 5 else 0.0 for r in ranks]),
                                          abs=1e-12)
    c.ranking = "full"                             # the control: the silo's items only rank higher
    assert c.evaluate([np.zeros((len(x), 3)) for x in c.ids])["NDCG@5"] > got["NDCG@5"]


def test_nmi_and_kmeans_by_hand():
    from secea_fast.studies.tabular import kmeans, nmi
    # joint (0,0) 1/2, (1,0) 1/4, (1,1) 1/4: MI = 1/2 ln(4/3) + 1/4 ln(2/3) + 1/4 ln 2
    mi = 0.5 * math.log(4 / 3) + 0.25 * math.log(2 / 3) + 0.25 * math.log(2)
    ha, hb = math.log(2), -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert nmi([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(2 * mi / (ha + hb), abs=1e-12)
    assert nmi([0, 1, 0, 1], [0, 0, 1, 1]) == pytest.approx(0.0, abs=1e-12)
    X = np.r_[np.zeros((20, 2)), np.full((30, 2), 5.0)] + np.random.default_rng(0).normal(scale=0.1, size=(50, 2))
    assert nmi(kmeans(X, 2, np.random.default_rng(1)), np.r_[np.zeros(20), np.ones(30)]) == pytest.approx(1.0)


def test_census_files_are_encoded_together(tmp_path):
    from secea_fast.studies.tabular import census_from_files
    a = tmp_path / "adult.data"
    b = tmp_path / "adult.test"
    a.write_text("39, State-gov, <=50K\n50, Private, >50K\n")
    b.write_text("|1x3 Cross validator\n28, Self-emp, <=50K.\n")
    t = census_from_files([a, b])
    assert t.X.shape == (3, 4) and t.classes == ["<=50K", ">50K"] and t.y.tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="non-empty list"):
        census_from_files(str(a))


def test_bad_arguments_name_themselves():
    from secea_fast.studies import rectasks
    r = _ratings()
    with pytest.raises(ValueError, match="ranking"):
        rectasks.NCFTask(r, 3, ranking="top")
    with pytest.raises(ValueError, match="values"):
        rectasks.SVDTask(Ratings(r.users, r.items, r.times, r.n_users, r.n_items), 3)


@pytest.mark.slow          # ~3 s of CPU: the builders' quick sizes (2,000 census rows, 200 users)
def test_quick_builders_train():
    """The quick configurations (what a default-run table test would use)
    build and train a round on data of the real formats' shapes."""
    from secea_fast.studies import autoencoder, rectasks, tabular
    r = _ratings(250, 120, 4000)
    for b in (rectasks.build_svd, rectasks.build_ncf):
        t = b(r, True, 0)
        assert t.n_clients == 3 and max(len(i) for i in t.ids) <= 200 + 120
        assert np.isfinite(fw.run(t, fw.PlainAvg(), 1)[0].metrics["NDCG@10"])
    t = autoencoder.build(tabular.synthetic_census(2500, seed=2), True, 0)
    assert t.n_entities == 2000 and fw.run(t, fw.PlainAvg(), 1)[0].metrics["NMI"] >= 0.0


def test_table3_factories_entire_is_the_centralized_twin():
    """The registry-shaped factories: N = 1 is one client holding what the
    three clients of the same seed hold together."""
    from secea_fast.studies import autoencoder, rectasks, tabular
    r, tab = _ratings(), tabular.synthetic_census(200, seed=1)
    for make, data in ((rectasks.table3_task("svd"), r), (autoencoder.table3_task("pca"), tab)):
        fed, ent = make(data, 3, 0, False), make(data, 1, 0, False)
        assert fed.n_clients == 3 and ent.n_clients == 1
        assert np.array_equal(ent.ids[0], np.unique(np.concatenate(fed.ids)))
    with pytest.raises(ValueError, match="model"):
        rectasks.table3_task("bpr")
