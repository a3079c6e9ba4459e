"""The command line as a tool: bad option values are refused before anything
runs (exit 2, one line naming the option as typed), output paths are checked
before the run and a result whose file cannot be written after it is saved
beside, and every protocol prints the same table and verdict shape (JSON
only where asked)."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from secea_fast import cli, jobs
from secea_fast.studies import runner


def _main(capsys, argv):
    t0 = time.perf_counter()
    rc = cli.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err, time.perf_counter() - t0


@pytest.fixture
def no_run(monkeypatch):
    """Any run that starts fails the test: the refusal must come first."""
    def boom(*a, **k):
        raise AssertionError("the run started")
    monkeypatch.setattr(cli, "run_job", boom)
    monkeypatch.setattr(runner, "run_study", boom)


BAD = [
    (["run", "--precision", "30"], "--precision must be in [0, 18]"),
    (["run", "--precision", "-1"], "--precision"),
    (["run", "-N", "1"], "-N must be >= 2"),
    (["run", "-N", "abc"], "argument -N"),
    (["run", "-T", "0"], "-T must be >= 1"),
    (["run", "-T", "3"], "-T must be <= 2 for -N 5"),
    (["run", "-N", "7", "-K", "4"], "-K must be in [1, 3]"),
    (["run", "-d", "0"], "-d must be >= 1"),
    (["run", "--processes", "0"], "--processes must be >= 1"),
    (["run", "--block-size", "0"], "--block-size must be >= 1"),
    (["run", "--seed", "-1"], "--seed must be >= 0"),
    (["run", "--workload", "nope"], "--workload"),
    (["run", "--movielens", "/nonexistent/ratings.dat"], "--movielens"),
    (["run", "--movielens", "/dev/zero"], "--movielens '/dev/zero': not a regular file"),
    (["run", "--json", "/nonexistent/dir/r.json"], "--json '/nonexistent/dir/r.json'"),
    (["run", "--json", "/proc/nope.json"], "--json '/proc/nope.json'"),
    (["run", "--json", "/"], "--json '/' is a directory"),
    (["run", "--protocol", "secea-phe", "--precision", "19"], "--precision must be in [0, 18]"),
    (["run", "--protocol", "secea-phe", "-N", "3", "-T", "2"], "-T must be <= 1 for -N 3"),
    (["run", "--protocol", "secemb", "--users", "0"], "--users must be >= 1"),
    (["run", "--protocol", "secemb", "--items", "0"], "--items must be >= 1"),
    (["run", "--protocol", "secemb", "--m-prime", "0"], "--m-prime must be >= 1"),
    (["run", "--protocol", "secemb", "--frac-bits", "41"], "--frac-bits must be in [0, 40]"),
    (["run", "--protocol", "secemb", "-d", "0"], "-d must be >= 1"),
    (["run", "--protocol", "osfl", "-N", "6"], "-N must be >= 11"),
    (["run", "--protocol", "osfl", "-T", "2"], "-T does not apply"),
    (["study", "kg", "--clients", "1"], "--clients must be >= 2"),
    (["study", "kg", "--clients", "x"], "argument --clients"),
    (["study", "kg", "--rounds", "0"], "--rounds must be >= 1"),
    (["study", "kg", "--processes", "0"], "--processes must be >= 1"),
    (["study", "kg", "--precision", "8", "30"], "--precision must be in [0, 18]"),
    (["study", "kg", "--seed", "-3"], "--seed must be >= 0"),
    (["study", "kg", "--eps", "0"], "--eps must be positive"),
    (["study", "kg", "--eps", "inf"], "--eps must be positive"),
    (["study", "kg", "--data", "/nonexistent/triples.txt"], "--data '/nonexistent/triples.txt'"),
    (["study", "graph", "--labels", "/nonexistent/labels"], "--labels"),
    (["study", "kg", "--out", "/proc/nope"], "--out '/proc/nope'"),
    (["study", "kg", "--out", "/dev/null"], "--out '/dev/null' exists and is not a directory"),
    (["study", "nope"], "argument name"),
    (["bench", "report", "r.json", "-o", "/proc/nope"], "--out '/proc/nope'"),
    (["bench", "throughput", "--json", "/proc/x/r.json"], "--json '/proc/x'"),
    (["bench", "throughput", "--json", "/dev/null/r.json"], "--json '/dev/null' exists and is not a directory"),
]


@pytest.mark.parametrize("argv, says", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_values_are_one_line_naming_the_option(capsys, no_run, argv, says):
    try:
        rc = cli.main(argv)
    except SystemExit as exc:              # the parser's own errors (a type, a choice)
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert says in lines[0], lines[0]
    assert "digits" not in err and not re.search(r"(^|[^-])\bN must", err)      # internal names
    assert "Traceback" not in err


def test_argparse_errors_are_one_line_too(capsys):
    with pytest.raises(SystemExit) as ex:
        cli.main(["run", "--no-such-option"])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and len(err.strip().splitlines()) == 1 and "--no-such-option" in err


# ------------------------------------------------------------------ results written late


def _fake_osfl(done=None):
    def job(**kw):
        if done:
            done()
        return {"exact_sum": True, "seconds": {"share": 0.25, "answer": 0.5}, "wall_seconds": {"share": 0.3},
                "bytes": {"sharing": 2_000_000}}
    return job


def test_json_that_cannot_be_written_after_the_run_is_saved_beside(capsys, tmp_path, monkeypatch):
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)

    def vanish():           # the directory is replaced by a file while the round runs
        out_dir.rmdir()
        out_dir.write_text("")
    monkeypatch.setattr(jobs, "osfl_job", _fake_osfl(vanish))
    rc, out, err, _ = _main(capsys, ["run", "--protocol", "osfl", "--json", str(out_dir / "r.json")])
    assert rc == 0
    assert out.strip().splitlines()[-1].startswith("osfl: PASS")          # the verdict, still
    assert "could not write --json" in err and str(cwd / "r.json") in err
    assert json.loads((cwd / "r.json").read_text())["exact_sum"] is True


def test_saved_beside_never_overwrites(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text("keep")
    blocker = tmp_path / "gone"
    blocker.mkdir()
    monkeypatch.setattr(jobs, "osfl_job", _fake_osfl(lambda: (blocker.rmdir(), blocker.write_text(""))))
    rc, out, err, _ = _main(capsys, ["run", "--protocol", "osfl", "--json", str(blocker / "r.json")])
    assert rc == 0 and (tmp_path / "r.json").read_text() == "keep"
    saved = re.search(r"saved the result to (\S+) instead", err).group(1)
    assert json.loads(Path(saved).read_text())["exact_sum"] is True


def test_study_out_checked_before_and_saved_beside_after(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out_dir = tmp_path / "study"

    def fake_study(name, **kw):
        out_dir.write_text("")             # --out becomes unusable during the run
        return {"study": name}
    monkeypatch.setattr(runner, "run_study", fake_study)
    monkeypatch.setattr(runner, "format_tables", lambda res: "the table")
    monkeypatch.setattr(runner, "write_plot", lambda res, path: Path(path).write_text("png"))
    rc, out, err, _ = _main(capsys, ["study", "kg", "--out", str(out_dir)])
    assert rc == 0 and "the table" in out
    assert "could not write --out" in err and (tmp_path / "kg.json").exists()
    assert f"wrote {tmp_path / 'kg.json'}" in out


# ------------------------------------------------------------------ one shape for every protocol

HEAD = re.compile(r"^phase\s+core-s\s+wall-s\s+protocol MB$")
ROW = re.compile(r"^\w+\s+\d+\.\d{3}\s+\d+\.\d{3}\s+\d+\.\d{2}$")


def _shape(out: str, protocol: str) -> None:
    lines = out.strip().splitlines()
    assert not any(ln.lstrip().startswith(("{", "}", '"')) for ln in lines), "JSON printed unasked"
    h = [i for i, ln in enumerate(lines) if HEAD.match(ln)]
    assert len(h) == 1, out
    rows = lines[h[0] + 1:]
    n = next(i for i, ln in enumerate(rows) if not ROW.match(ln))
    assert n >= 4, out                               # at least four phases
    assert rows[n] == cli.TABLE_NOTE
    assert re.match(rf"^{protocol}: (PASS|FAIL) \(.+\); round \d+\.\d\d s .+$", lines[-1]), lines[-1]


@pytest.fixture
def small_jobs(monkeypatch):
    real_phe, real_osfl = jobs.secea_phe_job, jobs.osfl_job
    monkeypatch.setattr(jobs, "secea_phe_job",
                        lambda **kw: real_phe(**kw, key_bits=256, insecure_keys=True, compare=False))
    monkeypatch.setattr(jobs, "osfl_job", lambda **kw: real_osfl(**kw, s=300, n_test=100, approach1=False))


@pytest.mark.parametrize("protocol, argv", [
    ("secea", ["--workload", "tiny", "-N", "3", "--processes", "1"]),
    ("secea-phe", ["--processes", "1"]),
    ("secemb", ["--users", "4", "--items", "200", "--m-prime", "30", "-d", "4"]),
    ("osfl", []),
])
def test_every_protocol_prints_the_same_shape(capsys, tmp_path, monkeypatch, small_jobs, protocol, argv):
    monkeypatch.chdir(tmp_path)
    rc, out, err, _ = _main(capsys, ["run", "--protocol", protocol, *argv])
    assert rc == 0, (out, err)
    _shape(out, protocol)
    assert list(tmp_path.iterdir()) == []            # no file unless --json
    if protocol in ("secea-phe", "osfl"):             # the slow two: --quiet and --json in tests/test_cli.py
        return
    rc, out, _, _ = _main(capsys, ["run", "--protocol", protocol, *argv, "--json", "r.json", "--quiet"])
    assert rc == 0 and len(out.strip().splitlines()) == 1 and out.startswith(f"{protocol}: PASS")
    assert json.loads((tmp_path / "r.json").read_text())
