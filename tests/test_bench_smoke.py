"""The smoke subset of the scaling benchmarks (bench/test_scaling.py, marker
``smoke``): one tiny point per axis of every protocol, run through the same
test functions as the full study, so the benchmark suite cannot rot.

Runs pytest in a subprocess (bench/ is not on the default testpaths) with a
benchmark JSON and checks the ``extra_info`` convention that
``secea-fast bench report`` consumes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCALING = REPO / "bench" / "test_scaling.py"
PROTOCOLS = ("secea", "secemb", "osfl")
KEYS = ("suite", "protocol", "axis", "params", "phases", "impl")
TIMEOUT_S = 300


def _pytest(*args, tmp_path):
    cmd = [sys.executable, "-m", "pytest", str(SCALING), "-m", "smoke", "-q",
           "-p", "no:cacheprovider", *args]
    try:
        return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} did not finish in {TIMEOUT_S} s:\n{e.stdout}\n{e.stderr}")


@pytest.mark.slow     # about 9 s; .ci/run runs it
def test_scaling_smoke_subset(tmp_path):
    pytest.importorskip("pytest_benchmark", reason="pytest-benchmark is not installed "
                        "(pip install -e '.[test]' or '.[bench]')")
    if not SCALING.is_file():
        pytest.skip(f"{SCALING} not found (not a source checkout)")

    col = _pytest("--collect-only", tmp_path=tmp_path)
    assert col.returncode == 0, f"collection failed:\n{col.stdout}\n{col.stderr}"
    collected = [ln.strip() for ln in col.stdout.splitlines() if "::" in ln]
    assert collected, f"no smoke tests collected:\n{col.stdout}"

    out = tmp_path / "smoke.json"
    run = _pytest("--benchmark-json", str(out), tmp_path=tmp_path)
    assert run.returncode == 0, f"smoke benchmarks failed:\n{run.stdout[-5000:]}\n{run.stderr[-3000:]}"
    data = json.loads(out.read_text())
    benches = data["benchmarks"]
    assert len(benches) == len(collected), (
        f"{len(collected)} smoke tests collected but {len(benches)} benchmarks recorded "
        f"(a smoke point skipped or did not call benchmark.pedantic?)")

    seen = {}
    for b in benches:
        info = b["extra_info"]
        missing = [k for k in KEYS if k not in info]
        assert not missing, f"{b['name']}: extra_info lacks {missing}"
        assert info["suite"] == "scaling" and info["impl"] == "secea_fast", b["name"]
        assert info["protocol"] in PROTOCOLS, b["name"]
        assert isinstance(info["axis"], str) and info["axis"], b["name"]
        assert b["group"] == f"scaling-{info['protocol']}-{info['axis']}", b["name"]
        assert isinstance(info["params"], dict) and info["axis"] in info["params"], b["name"]
        phases = info["phases"]
        assert isinstance(phases, dict) and phases, b["name"]
        assert all(isinstance(v, (int, float)) and v >= 0 for v in phases.values()), (b["name"], phases)
        assert info.get("smoke") is True, f"{b['name']}: smoke point not flagged extra_info['smoke']"
        seen.setdefault(info["protocol"], set()).add(info["axis"])
    assert set(seen) == set(PROTOCOLS), f"benchmarks per protocol: {seen}"
