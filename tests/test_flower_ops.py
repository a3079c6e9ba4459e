"""``secea-fast flower`` as a tool: a user's mistake is refused before
anything starts (one line naming the ``--set`` key, exit 2, seconds), a
failed run is summarized as one line per node with the detail in a log
file, progress is shown per stage and silenced by ``--quiet``, and no
dependency's deprecation noise reaches the terminal."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from secea_fast.flower import cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _secea_fast(*args, timeout=120, env=None):
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "secea_fast", *args], capture_output=True, text=True,
                         timeout=timeout, env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))
    return out, time.perf_counter() - t0


@pytest.mark.parametrize("argv, key", [
    (["flower", "train", "--set", "ratings-file=/nonexistent"], "ratings-file=/nonexistent: no such file"),
    (["flower", "local", "--set", "num-clients=2"], "num-clients=2: must be >= 3"),
    (["flower", "sim", "--set", "num-clients=1"], "num-clients=1: must be >= 3"),
])
def test_a_mistake_is_one_line_exit_2_before_anything_starts(argv, key):
    out, secs = _secea_fast(*argv)
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr[-2000:]
    assert key in lines[0] and lines[0].startswith(f"secea-fast flower {argv[1]}: error: --set ")
    assert secs < 15, f"{secs:.1f} s: something started before the check"   # ~1.5 s idle, 2 shared cores


@pytest.mark.parametrize("mode, protocol, over, key", [
    ("sim", "secea", {"T": 2, "num-clients": 4}, "num-clients"),
    ("sim", "secea", {"workload": "nope"}, "workload"),
    ("local", "secea", {"precision": 30}, "precision"),
    ("sim", "secemb", {"m-prime": 5000}, "m-prime"),
    ("sim", "secemb", {"min-users": 9}, "min-users"),
    ("local", "secemb", {"server0-workers": 0}, "server0-workers"),
    ("local", "secea", {"roster-file": "/nonexistent/roster.json"}, "roster-file"),
    ("train", "secea", {"silos": 2}, "silos"),
    ("train", "secea", {"setting": "x"}, "setting"),
    ("train", "secea", {"ratings-file": "/"}, "ratings-file"),
])
def test_validate_names_the_key(mode, protocol, over, key):
    from secea_fast.flower import demo, train
    defaults = train.TRAIN_DEFAULTS if mode == "train" else (demo.DEFAULTS if protocol == "secea"
                                                              else demo.SECEMB_DEFAULTS)
    with pytest.raises(cli.UsageError, match=f"--set {key}="):
        cli.validate(mode, protocol, dict(defaults, **over))
    cli.validate(mode, protocol, dict(defaults))          # the defaults pass


def test_a_bad_ratings_file_is_refused_before_the_run(tmp_path):
    bad = tmp_path / "ratings.dat"
    bad.write_bytes(b"\x00\xff garbage\n" * 3)
    with pytest.raises(cli.UsageError, match="ratings-file="):
        from secea_fast.flower import train
        cli.validate("train", "secea", dict(train.TRAIN_DEFAULTS, **{"ratings-file": str(bad)}))


LOG = """\x1b[92mINFO \x1b[0m:      SecEA on Flower: 2 nodes, d = 64, T = 1
\x1b[91mERROR \x1b[0m:     ServerApp raised an exception
Traceback (most recent call last):
  File "x.py", line 1, in run
    raise RoundFailed("SecEA cannot run")
secea_fast.protocols.secea.session.RoundFailed: SecEA cannot run: 2 clients remain
\x1b[91mERROR \x1b[0m:     Exit Code: 201
"""


def test_failure_lines_one_per_source_with_its_last_exception():
    lines = cli.failure_lines({"ServerApp": LOG, "supernode-0": "INFO all good\n",
                               "supernode-1": "Traceback (most recent call last):\n  File \"a\"\n"
                                              "ValueError: no such ratings file: /x\n"})
    assert lines == ["  ServerApp: secea_fast.protocols.secea.session.RoundFailed: SecEA cannot run: "
                     "2 clients remain", "  supernode-1: ValueError: no such ratings file: /x"]


def test_a_failed_run_prints_one_line_per_node_and_keeps_the_detail(tmp_path, capsys):
    err = RuntimeError("flwr run failed (exit 0):\n" + LOG)
    path = cli._report_failure("local", err, {"ServerApp": str(err)}, tmp_path)
    got = capsys.readouterr().err.strip().splitlines()
    assert got[0] == "FAIL: the local run failed:" and len(got) == 3
    assert "RoundFailed" in got[1] and got[2].endswith(str(tmp_path / "errors.log"))
    assert "Traceback" in Path(path).read_text()


def test_a_run_that_ends_without_a_result_is_a_failure_with_its_logs(tmp_path, capsys, monkeypatch):
    """``flwr run`` exits 0 once the SuperLink closes the run's log stream,
    also for a run marked failed: no summary is a FAIL with the logs kept,
    not a verification of results that were never written."""
    def ended_early(protocol, over, out, on_line=None):
        (out / "simulation" / "logs").mkdir(parents=True)
        (out / "simulation" / "logs" / "superlink.log").write_text("run finished:failed\n")
    monkeypatch.setattr(cli, "run_sim", ended_early)
    assert cli.main(["sim", "--quiet", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "FAIL: the sim run failed:" and "wrote no summary" in err[1], err
    assert "run finished:failed" in (tmp_path / "errors.log").read_text()


def test_flwr_run_stops_a_run_that_cannot_end(tmp_path):
    """A run whose Ray cluster died never ends by itself (its ray.init waits
    on a dead cluster): ``flwr_run``'s abort check stops the command within
    a second of being told, names why, and leaves no process behind."""
    from secea_fast.flower.localfed import RunAborted, flwr_run
    cmd = [sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(120)"]
    t0 = time.monotonic()
    with pytest.raises(RunAborted, match="the cluster exited") as exc:
        flwr_run(cmd, None, env=os.environ, cwd=tmp_path, timeout=60,
                 abort=lambda: "the cluster exited" if time.monotonic() - t0 > 2 else None)
    assert time.monotonic() - t0 < 20
    pid = int(str(exc.value).split("\n")[1])
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    # control: without the check the same command runs until the timeout
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="did not finish within 3 s"):
        flwr_run(cmd, None, env=os.environ, cwd=tmp_path, timeout=3)
    assert time.monotonic() - t0 >= 3


# ------------------------------------------------------------------ progress
def test_stages_print_one_line_per_stage_off_a_terminal_and_nothing_when_quiet(capsys):
    from secea_fast._progress import Bar, Stages
    with Stages("cmd") as st:
        for name in ("one", "two", "two", "three"):
            st.stage(name)
    bar = Bar(4, "blocks")
    for _ in range(4):
        bar.step()
    err = capsys.readouterr().err.splitlines()
    assert [line.split("] ", 1)[-1] for line in err[:3]] == ["cmd: one", "cmd: two", "cmd: three"]
    assert err[3].startswith("blocks: 4 done in ") and len(err) == 4
    with Stages("cmd", enabled=False) as st:
        st.stage("one")
    Bar(2, "blocks", enabled=False).step(2)
    assert capsys.readouterr().err == ""


def test_run_shows_its_stages_and_quiet_silences_them():
    out, _ = _secea_fast("run", "--workload", "tiny")
    assert out.returncode == 0, out.stderr[-2000:]
    stages = [line for line in out.stderr.splitlines() if "] run secea: " in line]
    assert [s.split("run secea: ")[1] for s in stages] == [
        "generate the workload", "the round (every party in this process)", "verify against the plaintext sums",
        "baselines (EmbAvg, PSI+SA)"]
    quiet, _ = _secea_fast("run", "--workload", "tiny", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "" and len(quiet.stdout.splitlines()) == 1


@pytest.mark.slow     # Flower's simulation runtime and Ray (40-150 s on 2 shared cores)
def test_flower_sim_shows_stages_without_deprecation_noise():
    out, _ = _secea_fast("flower", "sim", "--set", "entities=200", "--set", "d=8", "--set", "num-clients=3",
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    stages = [line.split("flower sim: ", 1)[1] for line in out.stderr.splitlines() if "] flower sim: " in line]
    assert stages[0] == "start the simulation runtime" and stages[-1].startswith("verify")
    # the first round stages (keys, which carries SecEA's admission, then peers) follow each other
    # within a poll of the nodes' progress files: either names the round's start
    assert any(s in ("round: keys", "round: peers") for s in stages), stages
    assert any(s.startswith("round: step") for s in stages), stages
    assert "deprecat" not in out.stderr.lower() and "FutureWarning" not in out.stderr
    assert out.stdout.splitlines()[-1].startswith("PASS: secea on Flower (sim)")
    quiet, _ = _secea_fast("flower", "sim", "--quiet", "--protocol", "secemb", "--set", "users=3",
                           "--set", "items=300", "--set", "m-prime=30", "--set", "d=8", timeout=600)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert quiet.stderr == "" and len(quiet.stdout.splitlines()) == 1
