"""The own-data Flower App of ``examples/flower_own_data``: its embeddings
loader accepts the two documented formats and refuses bad files naming them,
both App files import with every name defined, and (slow) ``flwr run`` of
the App on a real SuperLink with three SuperNodes, each reading its own
file, gives every client the global embeddings ``secea.aggregate`` gives on
the same data, bit for bit, with a PASS from ``flower report``."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

APP = Path(__file__).resolve().parents[1] / "examples" / "flower_own_data"
pytestmark = pytest.mark.skipif(not APP.is_dir(), reason="examples/ is not in this installation")


def _module(name):
    spec = importlib.util.spec_from_file_location(f"own_data_{name}", APP / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _data(n_clients=3, d=4, seed=1):
    rng = np.random.default_rng(seed)
    local = []
    for _ in range(n_clients):
        ids = rng.choice(30, size=12, replace=False)
        local.append({f"item-{i}": rng.uniform(-2, 2, d) for i in ids})
    return local


def _write_csv(path, emb):
    path.write_text("".join(f"{k}," + ",".join(repr(float(x)) for x in v) + "\n" for k, v in emb.items()))


def test_app_files_load_and_name_their_components():
    import tomllib
    comp = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["components"]
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    assert isinstance(getattr(_module("secea_server"), comp["serverapp"].split(":")[1]), ServerApp)
    assert isinstance(getattr(_module("secea_client"), comp["clientapp"].split(":")[1]), ClientApp)


def test_loader_reads_csv_and_npz(tmp_path):
    client = _module("secea_client")
    emb = _data(1)[0]
    _write_csv(tmp_path / "a.csv", emb)
    client.save_embeddings(tmp_path / "b.npz", emb)
    for name in ("a.csv", "b.npz"):
        got = client.load_embeddings(tmp_path / name, 4)
        assert set(got) == set(emb) and all(np.array_equal(got[k], emb[k]) for k in emb)


@pytest.mark.parametrize("name, text, words", [
    ("x.csv", "e1,1,2,3\n", "line 1: 3 values, run config d = 4"),
    ("x.csv", "e1,1,2,3,abc\n", "line 1: a value is not a number"),
    ("x.csv", "e1,1,2,3,4\ne1,1,2,3,4\n", "line 2: entity 'e1' appears twice"),
    ("x.csv", "e1,1,2,3,inf\n", "not 4 finite values"),
    ("x.csv", "", "no entity"),
    ("x.txt", "e1,1,2,3,4\n", "expected a .npz or .csv"),
    ("x.npz", "not a zip", "expected arrays"),
])
def test_loader_refuses_bad_files_naming_them(tmp_path, name, text, words):
    client = _module("secea_client")
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match="embeddings-file") as exc:
        client.load_embeddings(tmp_path / name, 4)
    assert words in str(exc.value) and name in str(exc.value)
    with pytest.raises(ValueError, match="not a regular file"):
        client.load_embeddings(tmp_path, 4)


@pytest.mark.slow
def test_own_data_app_on_a_local_deployment(tmp_path, monkeypatch, capsys):
    from secea_fast.flower import cli
    from secea_fast.flower.localfed import LocalFederation
    from secea_fast.protocols import secea
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(APP.parents[1]), os.environ.get("PYTHONPATH", "")]))
    client = _module("secea_client")
    local = _data(3)
    files = []
    for i, emb in enumerate(local):
        src = tmp_path / (f"client{i}.csv" if i % 2 == 0 else f"client{i}.npz")
        if src.suffix == ".csv":
            _write_csv(src, emb)
        else:
            client.save_embeddings(src, emb)
        files.append({"embeddings-file": str(src), "result-file": str(tmp_path / f"global{i}.npz")})
    out = tmp_path / "out"
    with LocalFederation(3, node_configs=files, roster=[(f"client-{i}", "client") for i in range(3)],
                         env={"PYTHONPATH": os.environ["PYTHONPATH"]}) as fed:
        fed.run(APP, run_config={"roster-file": fed.roster_file, "d": 4, "out-dir": str(out)})
    # the same data in one process: the files as the loader reads them
    want = secea.aggregate([client.load_embeddings(f["embeddings-file"], 4) for f in files], T=1, precision=8)
    for i, f in enumerate(files):
        got = client.load_embeddings(f["result-file"], 4)
        assert set(got) == set(want[i])
        assert all(np.array_equal(got[k], want[i][k]) for k in want[i]), f"client {i} differs"
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("PASS: secea: 3 clients")
    assert json.loads((out / "summary.json").read_text())["protocol"] == "secea"
