"""The tasks of secea_fast.studies, one per family of SecEA's Table 3: at a
small size each learns, is deterministic given its seed, and trained with
SecEA equals its fixed-point twin bit for bit and plaintext EmbAvg to the
quantization error at every round; their loaders read the real formats."""
import numpy as np
import pytest

from secea_fast.studies import framework as fw


def _lightgcn():
    from secea_fast.studies import lightgcn, recsys
    return lightgcn.LightGCNTask(recsys.synthetic_ratings(120, 150, 4000, seed=1), 3, d=8, seed=0)


def _deepwalk():
    from secea_fast.studies import graph
    return graph.DeepWalkTask(graph.synthetic_graph(200, 700, 4, seed=1), 3, d=8, walks=2, max_pairs=8000, seed=0)


def _pca():
    from secea_fast.studies import tabular
    return tabular.PCATask(tabular.synthetic_census(300, seed=1), 3, d=4, seed=0)


BUILDERS = {"lightgcn": _lightgcn, "deepwalk": _deepwalk, "pca": _pca}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def task(request):
    pytest.importorskip("scipy")
    return BUILDERS[request.param]()


def test_secea_equals_fixed_twin_and_plaintext_every_round(task):
    sec = fw.run(task, fw.SecEAAvg(8), 2, evaluate_init=True)
    fix = fw.run(task, fw.FixedAvg(8), 2, evaluate_init=True)
    plain = fw.run(task, fw.PlainAvg(), 2, evaluate_init=True)
    for a, b, c in zip(sec, fix, plain):
        assert a.metrics == b.metrics
        for k in a.metrics:
            assert abs(a.metrics[k] - c.metrics[k]) <= 1e-3, (a.round, k)
    assert all(r.bytes > 0 for r in sec[1:])


def test_learns_and_is_deterministic(task):
    a = fw.run(task, fw.PlainAvg(), 3, evaluate_init=True)
    b = fw.run(task, fw.PlainAvg(), 3, evaluate_init=True)
    assert [r.metrics for r in a] == [r.metrics for r in b]
    if task.name == "pca":                                  # learning = reconstruction error falls
        assert a[-1].metrics["MSE"] < 0.8 * a[0].metrics["MSE"]
    else:
        m = task.metrics[0]
        assert a[-1].metrics[m] > a[0].metrics[m] + 0.02


def test_graph_loaders_and_auc(tmp_path):
    from secea_fast.studies import graph
    cites = tmp_path / "cora.cites"
    cites.write_text("# comment\n35\t1033\n35\t103482\n1033\t35\n887\t887\n887,1033\n")
    g = graph.edges_from_file(cites)
    assert g.n_nodes == 4 and g.edges.tolist() == [[0, 1], [0, 2], [1, 3]]     # repeat and loop dropped
    content = tmp_path / "cora.content"
    content.write_text("35\t0\t1\tNeural_Networks\n1033\t1\t0\tTheory\n999\t0\t0\tTheory\n")
    g = graph.labels_from_file(content, g)
    assert g.labels.tolist() == [0, 1, -1, -1]
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3\n")
    with pytest.raises(ValueError, match="bad.txt:2"):
        graph.edges_from_file(bad)
    with pytest.raises(TypeError, match="path"):
        graph.edges_from_file(None)
    assert graph.auc([3.0, 1.0], [2.0, 0.0]) == 0.75
    assert graph.auc([1.0], [1.0]) == 0.5


def test_census_loader_kmeans_nmi(tmp_path):
    from secea_fast.studies import tabular
    adult = tmp_path / "adult.test"
    adult.write_text("|1x3 Cross validator\n"
                     "25, Private, 226802, 11th, ?, <=50K.\n"
                     "38, Private, 89814, HS-grad, Farming, >50K.\n"
                     "\n"
                     "28, Local-gov, 336951, Assoc-acdm, Protective, >50K.\n")
    t = tabular.census_from_file(adult)
    assert t.classes == ["<=50K", ">50K"] and t.y.tolist() == [0, 1, 1]
    # 2 numeric fields + one-hot of 3 categorical fields (2 + 3 + 3 levels; "?" is a level)
    assert t.X.shape == (3, 2 + 2 + 3 + 3) and t.field_of.tolist() == [0, 1, 1, 2, 3, 3, 3, 4, 4, 4]
    assert np.allclose(t.X[:, 0].mean(), 0.0)
    bad = tmp_path / "bad.data"
    bad.write_text("1, a, x\n2, b\n")
    with pytest.raises(ValueError, match="bad.data:2"):
        tabular.census_from_file(bad)
    assert tabular.nmi([0, 0, 1, 1], [0, 1, 0, 1]) == 0.0
    X = np.r_[np.zeros((20, 2)), np.ones((20, 2)) * 5] + np.random.default_rng(0).normal(size=(40, 2)) * 0.1
    lab = tabular.kmeans(X, 2, np.random.default_rng(1))
    assert tabular.nmi(lab, [0] * 20 + [1] * 20) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n_init"):          # used to return None
        tabular.kmeans(X, 2, np.random.default_rng(1), n_init=0)


@pytest.mark.slow          # 5-30 s each: every aggregation of the study at its --quick size
@pytest.mark.parametrize("name", ["kg", "recsys", "graph", "tabular"])
def test_study_quick_runs(name, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("scipy")
    import json
    from secea_fast import cli
    assert cli.main(["study", name, "--quick", "--out", str(tmp_path)]) == 0
    assert "SecEA(8)" in capsys.readouterr().out
    res = json.loads((tmp_path / f"{name}.json").read_text())
    m0 = res["metrics"][0]
    for a, b in zip(res["runs"]["SecEA(8)"], res["runs"]["EmbAvg"]):
        assert abs(a[m0] - b[m0]) <= 1e-3
    assert res["runs"][f"LDP(eps={res['epsilons'][0]:g})"][-1][m0] < res["runs"]["EmbAvg"][-1][m0]
    assert (tmp_path / f"{name}.png").stat().st_size > 1000
