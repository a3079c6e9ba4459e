"""secea_fast.bench.report: `secea-fast bench report` on small synthetic inputs and on a
file shaped like the output of bench/test_secea.py (written to tmp_path)."""
import json
import sys

import pytest

from secea_fast.bench import report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _bench(group, name, median, **extra):
    return {"group": group, "name": name, "fullname": f"bench/test_x.py::{name}", "params": {},
            "stats": {"median": median, "min": median, "mean": median}, "extra_info": extra}


def _scaling(protocol, axis, value, total, phases, **fixed):
    return _bench(None, f"test_scaling[{protocol}-{axis}-{value}]", total, suite="scaling",
                  protocol=protocol, axis=axis, params={axis: value, **fixed}, phases=phases,
                  impl="secea_fast")


@pytest.fixture
def no_matplotlib(monkeypatch):
    """Make matplotlib unimportable, even when an earlier test imported it."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


@pytest.fixture
def inputs(tmp_path):
    """A pytest-benchmark file (kernel group: two of our thread variants and a peer; a
    scaling axis N and a processes axis, with phases) and a throughput file."""
    benches = [
        _bench("matmul 64x64", "test_ours[1]", 0.004, impl="secea_fast", threads=1),
        _bench("matmul 64x64", "test_ours[2]", 0.0025, impl="secea_fast", threads=2),
        _bench("matmul 64x64", "test_flint", 0.030, impl="python-flint", threads=1),
    ]
    for n, t in ((3, 1.0), (5, 2.0), (10, 40.0)):
        benches.append(_scaling("secea", "N", n, t, {"offline": t / 2, "responses": t / 4}, T=1))
    for p, t in ((1, 8.0), (2, 4.4)):
        benches.append(_scaling("secea", "processes", p, t, {"offline": t / 2}, N=5))
    benches.append(_bench(None, "test_secea_round_census", 50.0, processes=2,
                          core_seconds={"offline": 30.0}, wall_seconds={"offline": 16.0},
                          round_wall_s=45.0, paper_table4_round_s=3293.0407))
    benches.append(_bench("secemb round", "test_secemb_round[1]", 12.0, impl="secea_fast",
                          threads=1, server_seconds_per_iteration=6.0,
                          user_upload_ms_per_user=0.4, upload_kib_per_user=227.4,
                          download_kib_per_user=150.0))
    bench = {"machine_info": {"cpu": {"brand_raw": "Test CPU 9000", "count": 2},
                              "python_version": "3.11.7"},
             "commit_info": {"id": "0123456789abcdef"}, "benchmarks": benches,
             "datetime": "2026-11-21T12:00:00", "version": "5.3.1"}
    tput = {"kind": "secea-fast/throughput", "version": 1, "machine": {"cpus": 2},
            "results": [{"protocol": "secea", "phase": "responses", "unit": "entities/s",
                         "executor": "local", "workload": {"M": 1000},
                         "rows": [{"processes": 1, "seconds": 10.0, "rate": 100.0,
                                   "speedup": 1.0, "efficiency": 1.0},
                                  {"processes": 2, "seconds": 6.25, "rate": 160.0,
                                   "speedup": 1.6, "efficiency": 0.8}],
                         "shard_overhead_s": None}]}
    paths = [tmp_path / "bench.json", tmp_path / "tput.json"]
    paths[0].write_text(json.dumps(bench))
    paths[1].write_text(json.dumps(tput))
    return [str(p) for p in paths]


def test_markdown_only(inputs, tmp_path, no_matplotlib):    # --no-plots must not need it
    out = tmp_path / "rep"
    assert report.main(inputs + ["-o", str(out), "--no-plots", "--title", "T1"]) == 0
    md = (out / "report.md").read_text()
    assert md.startswith("# T1")
    assert f"**{0.030 / 0.0025:.2f}x**" in md                 # flint / our fastest (2 threads)
    assert f"{0.030 / 0.004:.2f}x" in md                      # against our 1-thread variant
    assert "test_ours[2] (2 threads), fastest of 2" in md
    assert "Test CPU 9000, 2 cores" in md and "0123456789" in md
    assert "| 2 | 6.25 s | 160 entities/s | 1.60x | 0.80 |" in md
    assert "| 10 | 40 s | 20 s | 10 s |" in md               # scaling table, N axis
    assert report.PUB in md and report.MEAS in md
    assert "## Published figures (paper)" in md and "88.7823" in md and "3556.2640" in md
    assert "| Census Income round" in md and "| 3293.0407 s | 45 s |" in md
    assert "| SecEmb | 0.08 min (4.8 s) | 6 s |" in md
    assert not list(out.glob("*.png"))


def test_plots(inputs, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "rep"
    assert report.main(inputs + ["-o", str(out)]) == 0
    md = (out / "report.md").read_text()
    pngs = {"kernels_vs_peers.png", "scaling_secea_n.png", "scaling_secea_processes.png",
            "scaling_secea_processes_speedup.png", "throughput_speedup.png",
            "throughput_rate_entities_s.png"}
    assert {p.name for p in out.glob("*.png")} == pngs
    for name in pngs:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
        assert f"]({name})" in md


def test_missing_matplotlib(inputs, tmp_path, no_matplotlib, capsys):
    with pytest.raises(RuntimeError, match=r'pip install "secea_fast\[report\]"'):
        report.render(report.load_results(inputs), tmp_path / "rep")
    assert report.main(inputs + ["-o", str(tmp_path / "rep")]) == 1
    assert "secea_fast[report]" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("{not json", "not valid JSON"),
    ('{"hello": 1}', "neither a pytest-benchmark JSON"),
    ('{"machine_info": {}, "benchmarks": []}', "no entries"),
    ('{"kind": "secea-fast/throughput", "results": [{"rows": [{}]}]}', "malformed"),
])
def test_bad_input(tmp_path, capsys, content, message):
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        report.load_results([str(path)])
    assert report.main([str(path), "-o", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert "error" in err and message in err and str(path) in err
    assert not (tmp_path / "rep").exists()


def _secea_round(processes, offline_wall):
    """One ``test_secea_round_ml1m[P]`` entry with the extra_info keys bench/test_secea.py
    records (figures from one run on the Zen 4 machine of docs/PERFORMANCE.md)."""
    core = {"union": 0.679, "encode": 0.359, "offline": 1.052, "responses": 11.10,
            "noise": 0.225, "decode": 0.222, "product": 10.95}
    wall = {"union": 0.206, "encode": 0.359, "blocks": 12.62 / processes,
            "product": 10.97 / processes, "offline": offline_wall,
            "responses": 11.12 / processes, "noise": 0.226 / processes,
            "decode": 0.222 / processes}
    b = _bench(None, f"test_secea_round_ml1m[{processes}]", 12.98 / processes,
               processes=processes, M=9746, core_seconds=core, wall_seconds=wall,
               bytes_via_server={"union": 5420650, "encode": 202719400,
                                 "offline": 20932940680, "responses": 174627050},
               response_macs=106299622000, kernel_rate_gmacs=10.72,
               products_at_kernel_speed_s=9.91, overhead_beyond_products=0.31,
               round_wall_s=12.98 / processes,
               paper_table6_ml1m_s={"offline": 88.7823, "coding": 7.3514, "comm.": 0.6446})
    b["fullname"] = f"bench/test_secea.py::{b['name']}"
    b["params"] = {"processes": processes}
    return b


@pytest.fixture
def secea_json(tmp_path):
    """A pytest-benchmark file as ``python -m pytest bench/test_secea.py
    --benchmark-json=...`` writes it: the ML-1M round at 1 and 2 processes, the Census
    Income round and an entity union (the report must pick the ML-1M rounds out)."""
    benches = [_secea_round(1, 1.054), _secea_round(2, 0.5756)]
    benches.append(_bench(None, "test_secea_round_census", 13.6, M=48842,
                          core_seconds={"offline": 7.86, "responses": 17.89},
                          wall_seconds={"offline": 4.007, "responses": 9.122},
                          round_wall_s=13.59, peak_rss_mb=471.6, paper_table4_round_s=3293.0407))
    benches.append(_bench(None, "test_entity_union[10000]", 0.2, N=5, k=10000, union=26061))
    data = {"machine_info": {"cpu": {"brand_raw": "Test CPU 9000", "count": 2},
                             "python_version": "3.11.7"},
            "commit_info": {"id": "0123456789abcdef"}, "benchmarks": benches,
            "datetime": "2026-11-21T12:00:00", "version": "5.3.1"}
    path = tmp_path / "secea.json"
    path.write_text(json.dumps(data))
    return path


def test_secea_results(secea_json, tmp_path):
    out = tmp_path / "rep"
    assert report.main([str(secea_json), "-o", str(out), "--no-plots"]) == 0
    md = (out / "report.md").read_text()
    info = {b["extra_info"]["processes"]: b["extra_info"]
            for b in json.loads(secea_json.read_text())["benchmarks"]
            if b["name"].startswith("test_secea_round_ml1m")}     # the file also holds census / union
    assert "### SecEA beside the paper" in md
    assert "| offline (wall) | 88.7823 s | " + report._t(info[1]["wall_seconds"]["offline"]) in md
    assert "Counterpart measured in this run" in md


def test_summary_ratio(tmp_path, capsys):
    """`secea-fast bench summary`: per group, fastest first, with our ratio to the fastest peer
    (peer median / our median) and the rate from extra_info."""
    from secea_fast.cli import main
    data = {"benchmarks": [
        _bench("aes", "test_ours", 0.004, impl="secea_fast", bytes=8_000_000, threads=1),
        _bench("aes", "test_openssl", 0.010, impl="openssl", bytes=8_000_000),
        _bench("aes", "test_slow_peer", 0.030, impl="slowlib", bytes=8_000_000),
        _bench("matmul", "test_ours_mm", 0.5, impl="secea_fast", macs=1_000_000_000),
        _bench("matmul", "test_flint", 0.25, impl="flint", macs=1_000_000_000),
        _bench("solo", "test_only_ours", 0.1, impl="secea_fast")]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    text = report.summary(str(path))
    assert text == report.summary(data)
    lines = text.splitlines()
    assert [ln for ln in lines if not ln.startswith(" ")] == ["aes", "matmul", "solo"]
    aes = lines[1:4]
    assert [ln.split()[0] for ln in aes] == ["secea_fast", "openssl", "slowlib"]
    assert "(1t)" in aes[0] and "4.000 ms" in aes[0] and "2.00 GB/s" in aes[0]
    assert aes[0].endswith(" 2.50x best peer")                  # 0.010 / 0.004, not 0.030 / 0.004
    assert "best peer" not in aes[1] and "best peer" not in aes[2]
    mm = lines[5:7]
    assert mm[0].split()[0] == "flint" and mm[1].endswith(" 0.50x best peer")   # 0.25 / 0.5
    assert "2.00 G MAC/s" in mm[1]
    assert "best peer" not in lines[8]                           # no peer in the group
    assert main(["bench", "summary", str(path)]) == 0
    assert capsys.readouterr().out == text + "\n"
    assert main(["bench", "summary", str(tmp_path / "missing.json")]) == 2
    assert "error" in capsys.readouterr().err


def test_backends_table(tmp_path, no_matplotlib):
    """The per-backend suite (bench/test_backends.py) gets its own table, each backend's
    median, rate and time relative to auto, and stays out of the kernels-against-peers table;
    the summary names the backend."""
    def b(kernel, backend, median, **rate):
        return _bench(f"backends {kernel}", f"test_{kernel}[{backend}]", median, impl="secea_fast",
                      suite="backends", backend=backend, kernel=kernel, threads=1, **rate)
    data = {"machine_info": {}, "benchmarks": [
        b("aes", "auto", 0.0001, bytes=1 << 20), b("aes", "portable", 0.0025, bytes=1 << 20),
        b("aes", "avx2", 0.0002, bytes=1 << 20), b("mm", "portable", 0.5, macs=10**9),
        b("dpf", "auto", 0.0005, outputs=1 << 20), b("dpf", "portable", 0.05, outputs=1 << 20)]}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(data))
    assert report.main([str(path), "-o", str(tmp_path / "rep"), "--no-plots"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Backends" in md and "## Kernels against peers" not in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| aes |")]
    assert rows == ["| aes | auto | 100 µs | 10.5 GB/s | 1.00x |",
                    "| aes | avx2 | 200 µs | 5.24 GB/s | 2.00x |",
                    "| aes | portable | 2.5 ms | 0.419 GB/s | 25.00x |"]
    assert "| mm | portable | 500 ms | 2 G MAC/s | — |" in md
    assert "| dpf | auto | 500 µs | 2.1 G outputs/s | 1.00x |" in md
    assert "| dpf | portable | 50 ms | 21 M outputs/s | 100.00x |" in md
    lines = report.summary(data).splitlines()
    assert "secea_fast (1t) [auto]" in lines[1] and "[portable]" in lines[3]
