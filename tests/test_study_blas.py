"""Every study command runs with one BLAS thread (secea_fast.studies.blas),
and gives the process back as it found it."""
import os

import pytest

from secea_fast.studies import blas, runner, secemb_table3, tables


def _recorder(seen):
    def record(*args, **kwargs):
        seen.append((blas.blas_threads(), {k: os.environ.get(k) for k in blas.THREAD_VARIABLES}))
        raise ValueError("stopped by the test")        # the command reports it and exits 2
    return record


@pytest.fixture
def two_threads(monkeypatch):
    """BLAS at 2 threads and the variables at 4 before the command, so a
    command that did not set them would be seen (the control below)."""
    if not blas.blas_threads():
        pytest.skip("no BLAS library found in this process (threadpoolctl not installed, not Linux)")
    before = blas.set_blas_threads(2)
    for k in blas.THREAD_VARIABLES:
        monkeypatch.setenv(k, "4")
    yield
    blas.set_blas_threads(before)


@pytest.mark.parametrize("command", ["study", "table3", "table7", "secemb-table3"])
def test_study_commands_run_single_threaded_and_restore(command, two_threads, monkeypatch, tmp_path, capsys):
    seen = []
    rec = _recorder(seen)
    rec_outside = []
    with pytest.raises(ValueError):
        _recorder(rec_outside)()           # control: outside a command the setting is 2 threads and "4"
    assert all(v == 2 for v in rec_outside[0][0].values()) and set(rec_outside[0][1].values()) == {"4"}
    if command == "study":
        monkeypatch.setattr(runner, "run_study", rec)
        argv = ["kg", "--quick", "--out", str(tmp_path)]
    elif command == "secemb-table3":
        monkeypatch.setattr(secemb_table3, "run_table3", rec)
        monkeypatch.setattr(secemb_table3, "_load", lambda data: None)
        argv = ["secemb-table3", "--quick", "--out", str(tmp_path)]
    else:
        monkeypatch.setattr(tables, "run_table3" if command == "table3" else "run_table7", rec)
        argv = [command, "--quick", "--out", str(tmp_path)]
    assert runner.main(argv) == 2 and "stopped by the test" in capsys.readouterr().err
    threads, env = seen[0]
    assert threads and all(v == 1 for v in threads.values()) and set(env.values()) == {"1"}
    assert all(v == 2 for v in blas.blas_threads().values())              # restored
    assert {os.environ[k] for k in blas.THREAD_VARIABLES} == {"4"}


def test_set_blas_threads_names_bad_counts():
    with pytest.raises(ValueError, match="n must"):
        blas.set_blas_threads(0)
    with pytest.raises(TypeError, match="n must"):
        blas.set_blas_threads(1.5)
