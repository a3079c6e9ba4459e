"""bench/ntt_bound.py (what bounds the Goldilocks NTT) builds and its part
counts match the transform's structure, so the tool cannot rot.

A benchmark-side check, not a unit test: it compiles the tool twice and
times it (17-48 s), so it lives in bench/ (outside testpaths = tests) and
runs only when asked for:

    python -m pytest bench/test_ntt_bound.py
"""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "bench" / "ntt_bound.py"


def test_ntt_bound_counts_match_the_plan(tmp_path):
    if not TOOL.is_file():
        pytest.skip("not a source checkout")
    spec = importlib.util.spec_from_file_location("ntt_bound", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    if not tool._has_avx512():
        pytest.skip("the tool times the AVX-512 kernels")
    out = tmp_path / "bound.json"
    run = subprocess.run([sys.executable, str(TOOL), "--logn", "10", "--json", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    res = json.loads(out.read_text())
    parts = {p["part"]: p for p in res["parts"]}
    # every level does one add and one sub per pair of registers: 1/2 each per 8 entries
    assert parts["add"]["count_per_8"] == pytest.approx(10 / 2)
    assert parts["sub"]["count_per_8"] == pytest.approx(10 / 2)
    # 2^10: stages of 4 and 3 levels, then 3 levels of 8 x 8 transposes; the
    # general twiddles skip index 0 of each stage (1/16, 1/8 of the rows)
    assert parts["mul"]["count_per_8"] == pytest.approx((1 - 1 / 16) + (1 - 1 / 8))
    assert parts["transpose8"]["count_per_8"] == pytest.approx(2 / 8)
    assert parts["shl_rt"]["count_per_8"] == 0          # the standard root uses compile-time shifts
    assert all(p["cycles_each"] > 0 for p in parts.values())
    assert 0 < res["floor_ms"] and 0 < res["transform_ms"]
    assert "floor" in run.stdout and "transform" in run.stdout
