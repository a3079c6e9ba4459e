"""The data loaders refuse what is not their data, quickly and in a short
message naming the file and line: non-regular files (a FIFO used to block
forever, /dev/zero to be read until MemoryError), over-long lines (a 2-line
4 MB census file took 66 s, 16 MB did not finish in 300 s, and one error
quoted a whole 16 MB line), binary content (400 characters of mojibake),
missing fields and non-numeric values (accepted silently), ids >= 2^63 and
an infinite time (OverflowError without the file), a "header" skipped in a
format that has none, and data too small for N clients (padded with fake
entities)."""
from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from secea_fast import workloads
from secea_fast.studies import graph, kg, recsys, tabular

LOADERS = {
    "ratings": lambda p: workloads.read_ratings(p),
    "movielens": lambda p: workloads.load_movielens(p, N=2, d=2),
    "recsys": lambda p: recsys.ratings_from_file(p),
    "triples": lambda p: kg.triples_from_file(p),
    "edges": lambda p: graph.edges_from_file(p),
    "labels": lambda p: graph.labels_from_file(p, graph.Graph(None, 0, None, [])),   # type: ignore[arg-type]
    "census": lambda p: tabular.census_from_file(p),
}
GOOD_LINE = {"ratings": "1::2::3::4", "movielens": "1::2::3::4", "recsys": "1::2::3::4", "triples": "a\tr\tb",
             "edges": "1 2", "labels": "1 x", "census": "1, a, <=50K"}


def _refused(load, path, *says, within: float = 1.0) -> str:
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as ex:
        load(path)
    dt = time.perf_counter() - t0
    msg = str(ex.value)
    assert dt < within, (dt, msg[:200])
    assert len(msg) < 400, msg[:500]                       # an excerpt, never the data
    assert os.fspath(path) in msg, msg
    for s in says:
        assert s in msg, msg
    return msg


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_non_regular_files_are_refused(tmp_path, name):
    load = LOADERS[name]
    _refused(load, "/dev/zero", "character device, not a regular file")
    # a directory of train.txt/test.txt is a triples format; a directory holding one ratings file, or
    # adult.data/adult.test, is a ratings or census format (what `secea-fast data fetch` writes)
    dir_says = {"triples": "train.txt", "census": "a directory without adult.data",
                "ratings": "no ratings file", "movielens": "no ratings file", "recsys": "no ratings file"}
    _refused(load, tmp_path, dir_says.get(name, "directory, not a regular file"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out: list[BaseException] = []
    t = threading.Thread(target=lambda: out.append(pytest.raises(ValueError, load, fifo).value), daemon=True)
    t.start()
    t.join(5.0)
    assert not t.is_alive(), "blocked on a FIFO"
    assert "FIFO" in str(out[0]) and str(fifo) in str(out[0])
    _refused(load, tmp_path / "missing.txt", "missing.txt")


@pytest.fixture(scope="module")
def long_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("long")
    out = {}
    for mb in (4, 16):
        row = ",".join(["12345678"] * (mb * 1_000_000 // 9))
        out[mb] = d / f"long{mb}.txt"
        out[mb].write_text(row + ",x\n" + row + ",y\n")
    return out


@pytest.mark.parametrize("name", sorted(LOADERS))
@pytest.mark.parametrize("mb", [4, 16])
def test_long_lines_are_refused_at_once(long_files, name, mb):
    msg = _refused(LOADERS[name], long_files[mb], ":1:", "line longer than")
    assert msg.count("12345678") <= 10


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_binary_and_non_utf8_content(tmp_path, name):
    f = tmp_path / "bin"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    _refused(LOADERS[name], f, ":1:", "binary content")
    g = tmp_path / "latin1"
    g.write_bytes((GOOD_LINE[name] + "\n").encode() + "caf\xe9 1 2\n".encode("latin-1"))
    msg = _refused(LOADERS[name], g, ":2:", "not UTF-8 text (byte 0xe9 at column 4)")
    assert "\ufffd" not in msg


RATINGS_BAD = [
    ("2::10::4\n", ":1:", "3 field(s), a ratings.dat"),                     # no time in a .dat
    ("1::10::abc::5\n", ":1:", "rating 'abc'"),
    ("1::10::4::5\n1::x::4::5\n", ":2:", "item id 'x'"),
    ("9223372036854775808::10::4::5\n", ":1:", "user id", "< 2^63"),
    ("1::18446744073709551616::4::5\n", ":1:", "item id", "< 2^63"),
    ("1::10::4::inf\n", ":1:", "time 'inf'"),
    ("1::10::nan::5\n", ":1:", "rating 'nan'"),
    ("1::10::4::-5\n", ":1:", "time '-5'"),
    ("user::item::rating::time\n1::10::4::5\n", ":1:", "user id 'user'"),      # a .dat has no header
    ("garbage\n1::10::4::5\n", ":1:", "no '::', tab or ',' separator"),
    ("1\t10\t4\n", ":1:", "u.data"),
    ("1,10,4\n", ":1:", "ratings.csv"),
    ("1::10::4::5\n1\t10\t4\t5\n", ":2:", "1 field(s)"),                      # one format per file
]


@pytest.mark.parametrize("text, says", [(t[0], t[1:]) for t in RATINGS_BAD], ids=[t[0][:24] for t in RATINGS_BAD])
def test_ratings_refuse_malformed_lines(tmp_path, text, says):
    f = tmp_path / "ratings.dat"
    f.write_text(text)
    for name in ("ratings", "recsys"):
        _refused(LOADERS[name], f, *says)


def test_ratings_csv_header_is_skipped_and_said(tmp_path, caplog):
    f = tmp_path / "ratings.csv"
    f.write_text("userId,movieId,rating,timestamp\n1,31,2.5,1260759144\n2,1029,3.0,1260759179\n")
    with caplog.at_level(logging.WARNING):
        u, i, t = workloads.read_ratings(f)
    assert u.tolist() == [1, 2] and t.tolist() == [1260759144, 1260759179]
    assert any("ratings.csv:1: skipped the header line" in r.getMessage() for r in caplog.records)


def test_too_little_data_for_N_clients_is_refused_not_padded(tmp_path):
    f = tmp_path / "ratings.dat"
    f.write_text("1::10::4::5\n1::11::3::6\n")              # 1 user, 2 ratings
    _refused(lambda p: workloads.load_movielens(p, N=5, d=2), f,
             "(1 users, 2 items, 2 ratings) is too small for N = 5 clients", "would hold no entity")
    with pytest.raises(ValueError, match="workload 'tiny' is too small for N = 60 clients"):
        workloads.workload("tiny", N=60)
    with pytest.raises(ValueError, match=r"2 items are too few for N = 3 silos: .* use more data"):
        recsys.Silos(recsys.ratings_from_file(f), N=3)     # the recommendation study's split
    local = workloads.load_movielens(f, N=2, d=2, seed=1)  # enough for two: no made-up entity
    assert not any(str(e).startswith("pad-") for x in local for e in x)


def test_census_values_fields_and_header(tmp_path, caplog):
    f = tmp_path / "adult.data"
    f.write_text("25, Private, inf, <=50K\n")
    _refused(LOADERS["census"], f, ":1:", "field 3 is 'inf', not a finite number")
    f.write_text("25, Private, " + "9" * 400 + ", <=50K\n")          # overflows a float: inf
    _refused(LOADERS["census"], f, ":1:", "field 3", "...")
    f.write_text(",".join(["1"] * 5000) + "\n")
    _refused(LOADERS["census"], f, ":1:", "5000 comma-separated field(s)")
    f.write_text("25, Private, <=50K\n|1x3 Cross validator\n")
    _refused(LOADERS["census"], f, ":2:", "'|' header line after the rows")
    f.write_text("|1x3 Cross validator\n25, Private, <=50K\n38, Farming, >50K.\n")
    with caplog.at_level(logging.WARNING):
        t = tabular.census_from_file(f)
    assert t.classes == ["<=50K", ">50K"]
    assert any("adult.data:1: skipped the '|' header line" in r.getMessage() for r in caplog.records)


def test_triples_and_edges_name_file_and_line(tmp_path):
    f = tmp_path / "kin.txt"
    f.write_text("a\tr\tb\na\tr\n")
    _refused(LOADERS["triples"], f, ":2:", "2 field(s)")
    g = tmp_path / "e.txt"
    g.write_text("1 2\n" + "3" * 5000 + "\n")
    msg = _refused(LOADERS["edges"], g, ":2:", "expected two node ids")
    assert msg.count("3") < 100


def test_census_rows_load_in_linear_time(tmp_path):
    f = tmp_path / "adult.data"
    row = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, <=50K\n"
    f.write_text(row * 2_000)
    t0 = time.perf_counter()
    tabular.census_from_file(f)
    small = time.perf_counter() - t0
    f.write_text(row * 20_000)                             # 1.5 MB
    t0 = time.perf_counter()
    t = tabular.census_from_file(f)
    big = time.perf_counter() - t0
    assert t.X.shape[0] == 20_000
    assert big < 20 * small + 1.0, (small, big)            # 10x the rows: about 10x the time
