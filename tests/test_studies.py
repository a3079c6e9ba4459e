"""The recommendation task of secea_fast.studies.recsys: data, split,
metrics, and the agreement of secure and plaintext aggregation."""
import numpy as np
import pytest

from secea_fast.protocols import baselines, secea
from secea_fast.studies import recsys


def test_hr_ndcg_by_hand():
    pos = np.array([5.0, 1.0, 0.0])
    neg = np.array([[1.0, 2.0, 3.0], [2.0, 0.5, np.nan], [0.0, -1.0, -2.0]])
    # ranks: 0, 1, 1 (a tie counts against the positive)
    hr, nd = recsys.hr_ndcg(pos, neg, k=1)
    assert hr == pytest.approx(1 / 3) and nd == pytest.approx(1 / 3)
    hr, nd = recsys.hr_ndcg(pos, neg, k=2)
    assert hr == 1.0 and nd == pytest.approx((1 + 2 / np.log2(3)) / 3)
    with pytest.raises(ValueError, match="neg"):
        recsys.hr_ndcg(pos, neg[:2])


def test_reader_formats_and_errors(tmp_path):
    dat = tmp_path / "ratings.dat"
    dat.write_text("10::5::4::978300760\n10::7::3::978300700\n22::5::5::978300100\n")
    r = recsys.ratings_from_file(dat)
    assert (r.n_users, r.n_items) == (2, 2) and r.times.tolist() == [978300760, 978300700, 978300100]
    csv = tmp_path / "ratings.csv"
    csv.write_text("userId,movieId,rating,timestamp\n1,31,2.5,1260759144\n1,1029,3.0,1260759179\n")
    assert recsys.ratings_from_file(csv).n_items == 2
    bad = tmp_path / "bad.dat"
    bad.write_text("1::2::3::4\nfoo::bar\n")
    with pytest.raises(ValueError, match="bad.dat:2"):
        recsys.ratings_from_file(bad)
    with pytest.raises(TypeError, match="path"):
        recsys.ratings_from_file(3.5)


def test_synthetic_shape_and_leave_one_out():
    r = recsys.synthetic_ratings(200, 300, 8000, seed=3)
    counts = np.bincount(r.users, minlength=200)
    assert counts.min() >= 20 and len(r.users) == counts.sum()
    assert len(set(zip(r.users.tolist(), r.items.tolist()))) == len(r.users)      # no repeats
    sp = recsys.leave_one_out(r, 99, seed=0)
    assert len(sp.test_users) == 200 and len(sp.users) == len(r.users) - 200
    for k in range(0, 200, 37):
        u = sp.test_users[k]
        rated = set(r.items[r.users == u].tolist())
        assert sp.test_items[k] in rated and not rated & set(sp.negatives[k].tolist())
        assert sp.test_items[k] not in set(sp.items[sp.users == u].tolist())
    with pytest.raises(ValueError):
        recsys.synthetic_ratings(0, 10, 100)


def test_cross_silo_learns_and_secea_equals_fixed_point_embavg():
    r = recsys.synthetic_ratings(150, 200, 6000, seed=1)
    silos = recsys.Silos(r, 3, seed=0)
    local = [silos.train_silo(n, e, epochs=1, seed=n) for n, e in enumerate(silos.init(8))]
    got = secea.aggregate(local, precision=8)
    want = baselines.embavg(local, precision=8)
    plain = baselines.embavg(local)
    for g, w, p in zip(got, want, plain):
        for key in w:
            assert np.array_equal(g[key], w[key])
            assert np.abs(g[key] - p[key]).max() <= 1e-8
    hist = recsys.run_cross_silo(silos, rounds=4, d=8, epochs=2)
    assert hist[-1]["hr"] > 0.25                      # random: 10 / 100


def test_cross_device_secure_equals_plaintext_twin():
    r = recsys.synthetic_ratings(40, 80, 1500, seed=2)
    a = recsys.run_cross_device(r, rounds=2, d=4, m_prime=20, secure=True)
    b = recsys.run_cross_device(r, rounds=2, d=4, m_prime=20, secure=False)
    assert [(x["hr"], x["ndcg"]) for x in a] == [(x["hr"], x["ndcg"]) for x in b]
    assert a[0]["bytes"] > 0 and b[0]["bytes"] == 0


@pytest.mark.slow          # three simulation-engine runs, 30 s: the default run keeps its 5-minute budget
def test_federated_training_on_flower(tmp_path):
    """The example of ``secea-fast flower train`` at a small size: FedAvg and
    SecEA across 3 silos and SecEmb across 20 users, every party a node of
    Flower's simulation engine; SecEA equals its in-process run and agrees
    with FedAvg, SecEmb equals its plaintext twin."""
    pytest.importorskip("flwr", reason="the flower extra is not installed")
    from secea_fast.flower import cli
    res = cli.run_training({"rounds": 2, "users": 20, "items": 60, "ratings": 700, "silos": 3, "d": 4,
                            "m-prime": 20}, tmp_path)
    checks = res["checks"]
    assert checks["SecEA on Flower = in-process SecEA"] and checks["SecEmb on Flower = plaintext twin"]
    assert checks["SecEA vs plaintext FedAvg, largest |HR| / |NDCG| difference"] <= 1e-5
    assert len(res["runs"]["SecEmb"]["rounds"]) == 2
