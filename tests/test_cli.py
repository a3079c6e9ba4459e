import json

import pytest

from secea_fast import cli, jobs
from secea_fast.protocols import secea, secemb


def test_info(capsys):
    assert cli.main(["info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert set(info["kernels"]) == {"aes", "bignum", "dpf", "field", "matmul", "ntt"}


def test_selfcheck_quick(capsys):
    assert cli.main(["selfcheck", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "all checks passed" in out
    assert "[portable]" in out and "G multiply-adds/s" in out and "GB/s" in out


# ------------------------------------------------------------------ secea-fast run


def _run(capsys, *argv):
    rc = cli.main(["run", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("argv, flag", [
    (["--protocol", "osfl", "--workload", "tiny"], "--workload"),
    (["--protocol", "osfl", "-T", "2"], "-T"),
    (["--protocol", "osfl", "--precision", "6"], "--precision"),
    (["--protocol", "osfl", "--executor", "ray"], "--executor"),
    (["--protocol", "secea-phe", "-K", "2"], "-K"),
    (["--protocol", "secea-phe", "--movielens", "ratings.dat"], "--movielens"),
    (["--protocol", "secemb", "-N", "4"], "-N"),
    (["--protocol", "secemb", "--workload", "tiny"], "--workload"),
    (["--protocol", "secea", "--users", "4"], "--users"),
    (["--protocol", "secea", "--m-prime", "4"], "--m-prime"),
])
def test_run_refuses_options_the_protocol_does_not_read(capsys, argv, flag):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{flag} does not apply to --protocol {argv[1]}" in err


def test_run_help_states_defaults(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")          # no line breaks inside hyphenated words
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for text in ("default 5 (secea), 3 (secea-phe), 20 (osfl)", "default movielens-1m for secea, tiny for secea-phe",
                 "(default 100)", "(default 3883", "(default 300", "64 (secemb)", "(default 16)",
                 "secemb: --users --items --m-prime -d --frac-bits --processes --executor --address --seed", "osfl: -N --seed"):
        assert text in out, text


def test_run_secea_quiet_prints_the_verdict(capsys):
    rc, out, err = _run(capsys, "--workload", "tiny", "-N", "3", "--processes", "1", "--quiet")
    assert rc == 0
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("secea: PASS") and " s wall" in lines[0]
    assert err == ""                       # no progress bar either


def test_run_secea_quiet_fails_loudly(capsys, monkeypatch):
    real = secea.plaintext_sums
    monkeypatch.setattr(secea, "plaintext_sums",
                        lambda local, prm: [(s + 1, c) for s, c in real(local, prm)])
    rc, out, _ = _run(capsys, "--workload", "tiny", "-N", "3", "--processes", "1", "--quiet")
    assert rc == 1 and out.strip().startswith("secea: FAIL")


def test_run_secea_table_labels_protocol_bytes(capsys, tmp_path):
    rc, out, _ = _run(capsys, "--workload", "tiny", "-N", "3", "--processes", "1",
                      "--json", str(tmp_path / "r.json"))
    assert rc == 0
    assert "protocol MB" in out and "via server" not in out
    assert out.strip().splitlines()[-1].startswith("secea: PASS")
    assert json.loads((tmp_path / "r.json").read_text())["verified"] is True


def test_run_osfl_reads_N_and_quiet(capsys, monkeypatch):
    seen = {}

    def fake(**kw):
        seen.update(kw)
        return {"exact_sum": True, "approach1": {"exact_sum": False},
                "seconds": {"local_training": 5.0, "share": 0.25, "answer": 0.5, "total": 9.0}}
    monkeypatch.setattr(jobs, "osfl_job", fake)
    rc, out, _ = _run(capsys, "--protocol", "osfl", "-N", "13", "--seed", "4", "--quiet")
    assert seen == {"n": 13, "seed": 4}
    assert rc == 1 and out.strip().splitlines() == [out.strip()]
    assert out.startswith("osfl: FAIL") and "round 0.75 s" in out


def test_run_osfl_quiet_real_job(capsys):
    rc, out, _ = _run(capsys, "--protocol", "osfl", "--quiet")
    assert rc == 0 and out.startswith("osfl: PASS") and len(out.strip().splitlines()) == 1


def test_run_secea_phe_keeps_the_workload_asked_for(capsys, monkeypatch):
    calls = []

    def fake(**kw):
        calls.append(kw)
        return {"verified": True, "core_seconds": {"encode": 1.0}, "wall_seconds": {"encode": 0.5, "noise": 0.25},
                "bytes_via_server": {"encode": 2_000_000}, "table": "MB via server"}
    monkeypatch.setattr(jobs, "secea_phe_job", fake)
    rc, out, _ = _run(capsys, "--protocol", "secea-phe", "--workload", "movielens-1m", "-N", "4",
                      "--precision", "6", "--block-size", "32")
    assert rc == 0
    assert calls[0]["workload"] == "movielens-1m" and calls[0]["N"] == 4
    assert calls[0]["precision"] == 6 and calls[0]["block_size"] == 32
    assert "protocol MB" in out and "via server" not in out and "2.00" in out
    assert out.strip().splitlines()[-1] == "secea-phe: PASS (bit for bit against plaintext EmbAvg); round 0.75 s wall"
    rc, out, _ = _run(capsys, "--protocol", "secea-phe", "--quiet")
    assert calls[1]["workload"] is None            # the job's own default, stated in --help: tiny
    assert rc == 0 and len(out.strip().splitlines()) == 1


def test_run_secemb_small(capsys, tmp_path):
    rc, out, _ = _run(capsys, "--protocol", "secemb", "--users", "6", "--items", "300", "--m-prime", "40",
                      "-d", "8", "--json", str(tmp_path / "e.json"))
    assert rc == 0, out
    assert "protocol MB" in out and "user_keygen" in out and "server_aggregation" in out
    assert out.strip().splitlines()[-1].startswith("secemb: PASS")
    res = json.loads((tmp_path / "e.json").read_text())
    assert res["verified"] and res["users"] == 6 and res["m_prime"] == 40
    assert any(c > 40 for c in res["items_per_user"])       # truncation is accounted for
    assert res["bytes_up_per_user_server"]["retrieval"] > 0 and res["bytes_down_per_user_server"]["retrieval"] > 0


def test_run_secemb_quiet_fails_on_a_wrong_aggregate(capsys, monkeypatch):
    real = secemb.run_round

    def corrupt(*a, **kw):
        rep = real(*a, **kw)
        rep.aggregate[3, 1] += 2.0 ** -16
        return rep
    monkeypatch.setattr(secemb, "run_round", corrupt)
    rc, out, _ = _run(capsys, "--protocol", "secemb", "--users", "3", "--items", "200", "--m-prime", "30",
                      "-d", "4", "--quiet")
    assert rc == 1
    assert out.strip().splitlines() == [out.strip()] and out.startswith("secemb: FAIL")
    assert "aggregate differs" in out


def test_secemb_check_matches_fixed_point_bit_for_bit():
    Q, items, grads = cli.secemb_workload(4, 150, 5, seed=1)
    rep = secemb.run_round(Q, items, grads, 30, frac_bits=12)
    assert secemb.plaintext_check(Q, items, grads, rep.params, rep)[0]
    other = secemb.SecEmbParams(m=150, d=5, m_prime=30, frac_bits=16, n_users=4)
    assert not secemb.plaintext_check(Q, items, grads, other, rep)[0]    # another quantization is not it


def test_run_secemb_servers_on_their_own_pools(capsys, monkeypatch):
    """--processes W: each server its own local pool (never one executor for
    both), the round still bit for bit; --address without --executor ray is
    refused naming the option."""
    seen = []
    real = secemb.run_round

    def spy(*a, **kw):
        seen.append(kw["executors"])
        return real(*a, **kw)
    monkeypatch.setattr(secemb, "run_round", spy)
    rc, out, _ = _run(capsys, "--protocol", "secemb", "--users", "5", "--items", "200", "--m-prime", "20",
                      "-d", "4", "--processes", "2", "--quiet")
    assert rc == 0 and out.startswith("secemb: PASS"), out
    ex0, ex1 = seen[0]
    assert ex0 is not ex1 and ex0.processes == ex1.processes == 2
    rc, _, err = _run(capsys, "--protocol", "secemb", "--address", "auto")
    assert rc == 2 and "--address applies with --executor ray only" in err


def test_run_secemb_refuses_bad_sizes(capsys):
    rc, _, err = _run(capsys, "--protocol", "secemb", "--items", "20", "--m-prime", "30")
    assert rc == 2 and "--m-prime (30) must be at most --items (20)" in err


# ------------------------------------------------------------------ stage progress of every protocol
# (SecEA's: tests/test_flower_ops.py::test_run_shows_its_stages_and_quiet_silences_them)
def _stages(err, title):
    """The stage names of ``title``'s progress lines on stderr (each
    "[ elapsed s] title: name"), checking that every one carries its time."""
    import re
    lines = [line for line in err.splitlines() if f"] {title}: " in line]
    assert all(re.match(r"^\[\s*\d+\.\d s\] ", line) for line in lines), lines
    return [line.split(f"] {title}: ", 1)[1] for line in lines]


def test_run_secemb_shows_its_stages_and_quiet_silences_them(capsys):
    argv = ("--protocol", "secemb", "--users", "3", "--items", "200", "--m-prime", "30", "-d", "4")
    rc, out, err = _run(capsys, *argv)
    assert rc == 0, out
    assert _stages(err, "run secemb") == ["generate the workload",
                                          "the round (both servers and every user in this process)",
                                          "verify against the plaintext computation"]
    assert out.strip().splitlines()[-1].startswith("secemb: PASS")
    rc, out, err = _run(capsys, *argv, "--quiet")
    assert rc == 0 and err == "" and len(out.strip().splitlines()) == 1


def _quiet_fake(result):
    """A job's stand-in for ``--quiet``: it fails if given a stage callback."""
    def fake(**kw):
        assert "on_stage" not in kw, "a stage callback under --quiet"
        return result
    return fake


def test_run_osfl_shows_its_stages_and_quiet_silences_them(capsys, monkeypatch):
    real = jobs.osfl_job
    # the real job on a smaller public set (s = 5000 takes a minute on 2 loaded cores)
    monkeypatch.setattr(jobs, "osfl_job", lambda **kw: real(**kw, s=300, n_test=200))
    rc, out, err = _run(capsys, "--protocol", "osfl")
    assert rc == 0, out
    assert _stages(err, "run osfl") == ["local training (every client's teachers)",
                                        "the round (share, aggregate, query, answer, reconstruct)",
                                        "student training on the retrieved labels",
                                        "Approach 1 (Sec. IV) on the same labels"]
    monkeypatch.setattr(jobs, "osfl_job", _quiet_fake({"exact_sum": True, "seconds": {"share": 0.5}}))
    rc, out, err = _run(capsys, "--protocol", "osfl", "--quiet")
    assert rc == 0 and err == "" and len(out.strip().splitlines()) == 1


def test_run_secea_phe_shows_its_stages_and_quiet_silences_them(capsys, monkeypatch):
    real = jobs.secea_phe_job
    # the real job on test-sized Paillier keys (the job's 2048-bit keys take a minute on 2 cores)
    monkeypatch.setattr(jobs, "secea_phe_job", lambda **kw: real(**kw, key_bits=512, insecure_keys=True))
    rc, out, err = _run(capsys, "--protocol", "secea-phe", "--processes", "1")
    assert rc == 0, out
    assert _stages(err, "run secea-phe") == ["generate the workload",
                                             "the round (Paillier keys, then every party in this process)",
                                             "verify against the plaintext sums",
                                             "SecEA on the same data (comparison)"]
    assert out.strip().splitlines()[-1].startswith("secea-phe: PASS")
    monkeypatch.setattr(jobs, "secea_phe_job", _quiet_fake(
        {"verified": True, "core_seconds": {}, "wall_seconds": {"encode": 0.5}, "bytes_via_server": {}}))
    rc, out, err = _run(capsys, "--protocol", "secea-phe", "--quiet")
    assert rc == 0 and err == "" and len(out.strip().splitlines()) == 1
