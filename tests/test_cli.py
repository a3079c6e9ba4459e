import json

from secea_fast import cli


def test_info(capsys):
    assert cli.main(["info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert set(info["kernels"]) == {"aes", "bignum", "dpf", "field", "matmul", "ntt"}


def test_selfcheck_quick(capsys):
    assert cli.main(["selfcheck", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "all checks passed" in out
    assert "[portable]" in out and "G multiply-adds/s" in out and "GB/s" in out
