"""secea_fast.studies.framework, .ldp and .kg: the study loop, the
aggregators (SecEA against its fixed-point twin and plaintext EmbAvg), the
LDP baseline of SecEA's Appendix C, and the TransE task with its loader."""
import numpy as np
import pytest

from secea_fast.studies import framework as fw
from secea_fast.studies import kg, ldp


@pytest.fixture(scope="module")
def transe():
    data = kg.synthetic_triples(30, 6, 900, seed=1)
    return kg.TransETask(data, 3, d=8, seed=2)


def test_secea_rows_equal_fixed_point_twin_and_plaintext(transe):
    rows = [transe.train(n, r, 1) for n, r in enumerate(transe.init())]
    sec, secs, nbytes = fw.SecEAAvg(8)(transe, rows)
    fix, _, _ = fw.FixedAvg(8)(transe, rows)
    plain, _, _ = fw.PlainAvg()(transe, rows)
    for s, f, p in zip(sec, fix, plain):
        assert np.array_equal(s, f)
        assert np.abs(s - p).max() <= 1e-8
    assert nbytes > 0 and {"union", "responses", "decode"} <= set(secs)


def test_secea_union_runs_once_per_training_run(transe, monkeypatch):
    """The first round computes the private union, later rounds pass it on;
    other entity sets (another task) compute their own."""
    from secea_fast.protocols import secea
    real, seen = secea.run_round, []

    def spy(local, **kw):
        seen.append(kw.get("union"))
        return real(local, **kw)

    monkeypatch.setattr(secea, "run_round", spy)
    agg = fw.SecEAAvg(8)
    rows = [transe.train(n, r, 1) for n, r in enumerate(transe.init())]
    first, _, b1 = agg(transe, rows)
    again, _, b2 = agg(transe, rows)
    assert seen[0] is None and seen[1] is not None and b2 < b1
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    other = kg.TransETask(kg.synthetic_triples(40, 6, 900, seed=5), 3, d=8, seed=2)
    agg(other, [other.train(n, r, 1) for n, r in enumerate(other.init())])
    assert seen[2] is None


def test_secea_metric_equals_plaintext_every_round(transe):
    sec = fw.run(transe, fw.SecEAAvg(8), 3)
    fix = fw.run(transe, fw.FixedAvg(8), 3)
    plain = fw.run(transe, fw.PlainAvg(), 3)
    for a, b, c in zip(sec, fix, plain):
        assert a.metrics == b.metrics                      # bit for bit: same rows every round
        for k in a.metrics:
            assert abs(a.metrics[k] - c.metrics[k]) <= 1e-3
    assert sec[0].seconds["train"] > 0 and sec[0].bytes > 0


def test_ldp_mechanism_and_loss_grows_as_epsilon_shrinks(transe):
    rng = np.random.default_rng(0)
    x = np.full((2000, 4), 3.0)
    y = ldp.laplace_mechanism(x, 2.0, 1.0, rng)
    assert abs((y - 1.0).mean()) < 0.05                       # clipped to 1, zero-mean noise
    assert abs(np.abs(y - 1.0).mean() - 1.0) < 0.05           # Laplace scale 2 clip / eps = 1
    with pytest.raises(ValueError, match="epsilon"):
        ldp.laplace_mechanism(x, 0.0, 1.0, rng)
    with pytest.raises(TypeError, match="rng"):
        ldp.laplace_mechanism(x, 1.0, 1.0, 0)
    # aggregated-row error grows as epsilon shrinks; the metric falls
    rows = [transe.train(n, r, 1) for n, r in enumerate(transe.init())]
    plain, _, _ = fw.PlainAvg()(transe, rows)
    err = []
    for eps in ldp.PAPER_EPSILONS:
        out, _, _ = ldp.LDPAvg(eps, seed=5)(transe, rows)
        err.append(np.mean([np.abs(o - p).mean() for o, p in zip(out, plain)]))
    assert all(a > b for a, b in zip(err, err[1:]))
    mrr = [fw.run(transe, a, 3)[-1].metrics["MRR"]
           for a in (ldp.LDPAvg(0.5, seed=3), ldp.LDPAvg(100.0, seed=3), fw.PlainAvg())]
    assert mrr[0] < mrr[1] <= mrr[2] + 0.02
    a, b = ldp.LDPAvg(1.0), ldp.LDPAvg(1.0)
    assert a.seed != b.seed                                   # fresh randomness by default


def test_published_table7_shape():
    assert tuple(ldp.PUBLISHED_TABLE7["with_ldp"]) == ldp.PAPER_EPSILONS
    vals = list(ldp.PUBLISHED_TABLE7["with_ldp"].values())
    assert vals == sorted(vals) and vals[-1] < ldp.PUBLISHED_TABLE7["without_ldp"]


def test_triples_loader_formats(tmp_path):
    f = tmp_path / "kinship.txt"
    f.write_text("".join(f"p{i % 7}\tterm{i % 3}\tp{(i * 5) % 7}\n" for i in range(20)))
    t = kg.triples_from_file(f)
    assert len(t.train) + len(t.test) == 20 and len(t.test) == 2 and t.n_relations == 3
    d = tmp_path / "fb15k-237"
    d.mkdir()
    (d / "train.txt").write_text("/m/a\t/r/x\t/m/b\n/m/b\t/r/y\t/m/c\n")
    (d / "test.txt").write_text("/m/c\t/r/x\t/m/a\n")
    (d / "valid.txt").write_text("garbage line\n")
    t = kg.triples_from_file(d)
    assert (t.n_entities, t.n_relations, len(t.train), len(t.test)) == (3, 2, 2, 1)
    assert t.test.tolist() == [[2, 0, 0]]
    bad = tmp_path / "bad.txt"
    bad.write_text("a\tb\tc\na\tb\n")
    with pytest.raises(ValueError, match="bad.txt:2"):
        kg.triples_from_file(bad)
    with pytest.raises(TypeError, match="path"):
        kg.triples_from_file(3)


def test_transe_learns_and_is_deterministic(transe):
    a = fw.run(transe, fw.PlainAvg(), 4, evaluate_init=True)
    b = fw.run(transe, fw.PlainAvg(), 4, evaluate_init=True)
    assert [r.metrics for r in a] == [r.metrics for r in b]
    assert a[-1].metrics["MRR"] > a[0].metrics["MRR"] + 0.04      # 0.14 -> 0.20 (seeded)
    with pytest.raises(ValueError, match="N"):
        kg.TransETask(transe.data, 1)
    with pytest.raises(TypeError, match="aggregator"):
        fw.run(transe, "plain", 1)


def test_study_command_writes_json_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from secea_fast import cli
    assert cli.main(["study", "kg", "--quick", "--rounds", "2", "--eps", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SecEA(8)" in out and "LDP(eps=1)" in out and "MB/round" in out
    import json
    res = json.loads((tmp_path / "kg.json").read_text())
    assert set(res["runs"]) == {"Single", "EmbAvg", "SecEA(8)", "LDP(eps=1)"}
    assert [r["round"] for r in res["runs"]["SecEA(8)"]] == [0, 1, 2]
    assert abs(res["runs"]["SecEA(8)"][-1]["MRR"] - res["runs"]["EmbAvg"][-1]["MRR"]) <= 1e-3
    assert (tmp_path / "kg.png").read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["study", "kg", "--quick", "--data", str(tmp_path / "missing.txt"),
                     "--out", str(tmp_path)]) == 2


@pytest.mark.slow          # about 25 s: every aggregation of Table 7 at Kinship's size
def test_study_ldp_quick_table7(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from secea_fast import cli
    assert cli.main(["study", "ldp", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "w/ LDP (published)" in out and "0.3039" in out
    import json
    res = json.loads((tmp_path / "ldp.json").read_text())
    last = [res["runs"][f"LDP(eps={e:g})"][-1]["MRR"] for e in res["epsilons"]]
    assert last[0] < last[-1] <= res["runs"]["EmbAvg"][-1]["MRR"] + 0.02


def test_bad_inputs_are_named(transe):
    from secea_fast.studies import runner
    with pytest.raises(ValueError, match="epsilon"):
        ldp.LDPAvg(-1.0)
    with pytest.raises(ValueError, match="rounds"):
        fw.run(transe, fw.PlainAvg(), 0)
    with pytest.raises(ValueError, match="name"):
        runner.run_study("nope", progress=False)
    with pytest.raises(ValueError, match="only"):
        runner.run_study("kg", quick=True, only=["secure"], progress=False)
    with pytest.raises(ValueError, match="N"):
        kg.TransETask(kg.synthetic_triples(30, 2, 100, seed=0), 3)          # 2 relations, 3 clients


def test_study_help_and_precision_sweep(capsys):
    from secea_fast import cli
    from secea_fast.studies import runner
    with pytest.raises(SystemExit):
        cli.main(["study", "--help"])
    assert "--precision" in capsys.readouterr().out
    res = runner.run_study("kg", quick=True, rounds=1, epsilons=(), precisions=(4, 8), only=["embavg", "secea"],
                           progress=False)
    assert list(res["runs"]) == ["EmbAvg", "SecEA(4)", "SecEA(8)"]
    assert "SecEA(4)" in runner.format_tables(res)
