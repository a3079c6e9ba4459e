"""The runnable examples in examples/ run and succeed."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ is not in this installation")
@pytest.mark.parametrize("script, args", [("protocol_rounds.py", []),
                                          ("osfl_distillation.py", ["--clients", "12"])])
def test_example_runs(script, args):
    out = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip()
