"""The multi-host rehearsal across network namespaces
(:mod:`secea_fast.flower.netns`): the link a profile promises is the link
measured between two namespaces (and an unshaped link is not, the control),
leftovers of a killed run are found and removed, SIGTERM removes every
namespace and process, and (slow) an M = 2,000 SecEA round across the
namespaces is bit-exact and leaves nothing behind."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from secea_fast.flower import netns  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _why_not() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "the rehearsal needs root (network namespaces, TAP devices, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"{tool!r} (iproute2) is not installed"
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    return None


needs_root = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def test_network_share_and_table():
    wan = netns.PROFILES["wan"]
    assert netns.network_share(12_500_000, 4, wan) == pytest.approx(1.0 + 4 * 0.05)
    assert netns.network_share(10**9, 3, netns.PROFILES["none"]) == 0.0
    res = [netns.RehearsalResult(netns.PROFILES[p], "secea", s, s + 5, 6, 10**7, 12 * 10**6, {}, True, "ok")
           for p, s in (("none", 60.0), ("wan", 70.0))]
    table = netns.results_table(res).splitlines()
    assert "vs none-s" in table[0] and table[2].split()[-2] == "+10.0" and table[2].endswith("bit-exact")


def test_register_output_parses():
    assert netns._node_id('log line\n{\n  "success": true,\n  "node-id": 10673516636002029076\n}\n') \
        == 10673516636002029076
    assert netns._node_id("no json here") is None


@pytest.mark.parametrize("argv, option", [(["--timeout", "0"], "--timeout"), (["--clients", "2"], "--clients"),
                                           (["--attempts", "0"], "--attempts")])
def test_bad_options_are_refused_before_anything_starts(argv, option, capsys):
    with pytest.raises(SystemExit) as exc:
        netns.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and option in err[-1]


@needs_root
def test_profile_is_the_measured_link():
    """Between two namespaces, a profile's link has its RTT and at most its
    rate (20 Mbit/s here, the wan profile's 50 ms RTT: a rate the delay line
    beats even on a loaded machine); the unshaped link (the control) is
    faster than that rate, so the measurement can tell."""
    parties = [("a", "client"), ("b", "client")]
    slow = netns.Profile("test", 20.0, netns.PROFILES["wan"].rtt_ms)
    with netns.Rehearsal(parties, [{}, {}], slow, federation=False) as r:
        r.probe(1000)                                    # ARP
        small, big = r.probe(1000), r.probe(2_500_000)
        names = list(r.ns.values())
    assert small["rtt_s"] >= 0.050                       # connect = one round trip
    assert big["bytes_per_s"] <= 2.5e6 * 1.05            # 20 Mbit/s
    assert not set(names) & set(netns.leftovers()["namespaces"])
    with netns.Rehearsal(parties, [{}, {}], netns.PROFILES["none"], federation=False) as r:
        r.probe(1000)
        fast = r.probe(2_500_000)
    assert fast["bytes_per_s"] > 2.5e6 * 1.5, fast


@needs_root
def test_leftovers_of_a_dead_run_are_removed(tmp_path):
    """What a SIGKILLed run leaves (a namespace with a process in it, a work
    directory) under the pid of a process that is gone is removed by the
    next run; a live run's are not touched."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    ns = f"{netns.PREFIX}{dead.pid}-link"
    work = Path(netns.tempfile.gettempdir()) / f"{netns.PREFIX}{dead.pid}-test"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"], start_new_session=True)
    live_ns = f"{netns.PREFIX}{os.getpid()}-probe"
    subprocess.run(["ip", "netns", "add", live_ns], check=True)
    work.mkdir()
    try:
        time.sleep(0.3)
        left = netns.leftovers(dead.pid)
        assert left["namespaces"] == [ns] and str(work) in left["workdirs"] and str(sleeper.pid) in left["processes"]
        removed = netns.cleanup_leftovers()
        assert ns in removed and str(work) in removed and live_ns not in removed
        assert sleeper.wait(timeout=10) != 0
        assert netns.leftovers(dead.pid) == {"namespaces": [], "workdirs": [], "processes": []}
    finally:
        subprocess.run(["ip", "netns", "del", live_ns])
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        if sleeper.poll() is None:
            sleeper.kill()


@needs_root
@pytest.mark.slow
def test_sigterm_removes_every_namespace_and_process():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "secea_fast.flower.netns", "--profile", "none", "--protocol", "secea",
                          "--entities", "50", "--clients", "3"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:        # wait for the SuperNodes (processes in the namespaces)
            left = netns.leftovers(p.pid)
            if len(left["namespaces"]) == 5 and len(left["processes"]) >= 4:
                break
            assert p.poll() is None, p.stderr.read() if p.stderr else ""
            time.sleep(0.5)
        pids = [int(x) for x in netns.leftovers(p.pid)["processes"]]
        assert pids
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 130 and "SIGTERM" in err and "Traceback" not in err
        assert netns.leftovers(p.pid) == {"namespaces": [], "workdirs": [], "processes": []}
        time.sleep(0.5)
        assert [q for q in pids if netns._alive(q) and not netns._zombie(q)] == []
    finally:
        if p.poll() is None:
            p.kill()
        netns.cleanup_leftovers()


@needs_root
@pytest.mark.slow
def test_sigterm_keeps_the_rounds_that_finished(tmp_path):
    """A rehearsal stopped after its first round still writes that round's
    JSON and table (nothing computed is lost), then removes everything."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, "-m", "secea_fast.flower.netns", "--profile", "none", "--protocol", "secea",
                          "--protocol", "secemb", "--entities", "50", "--clients", "3", "--users", "2",
                          "--json", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 600
        assert p.stdout is not None
        for line in p.stdout:                # wait for the SecEA round's line, then for SecEmb's nodes
            if "secea on none: round" in line or time.time() > deadline:
                break
        while time.time() < deadline and len(netns.leftovers(p.pid)["processes"]) < 3:
            time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        rest, err = p.communicate(timeout=120)
        assert p.returncode == 130 and "SIGTERM" in err and "Traceback" not in err
        rounds = json.loads(out.read_text())
        assert [(r["profile"], r["protocol"], r["verified"]) for r in rounds] == [("none", "secea", True)]
        assert "secea" in rest                # the table of the finished round
        assert netns.leftovers(p.pid) == {"namespaces": [], "workdirs": [], "processes": []}
    finally:
        if p.poll() is None:
            p.kill()
        netns.cleanup_leftovers()


@needs_root
@pytest.mark.slow
def test_secea_round_across_namespaces_is_bit_exact_and_leaves_nothing(monkeypatch):
    """An M = 2,000 SecEA round, SuperLink, five SuperNodes and the operator
    each in a namespace of its own on the lan profile (1 Gbit/s, 20 ms RTT),
    TLS with the certificate of the SuperLink's address and SuperNode
    authentication: every client's global embeddings equal
    ``secea.aggregate`` bit for bit, the bytes crossed the shaped link, and
    no namespace, work directory or process is left."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    parties = [(f"client-{i}", "client") for i in range(5)]
    with netns.Rehearsal(parties, [{"party-id": i} for i in range(5)], netns.PROFILES["lan"]) as r:
        res = r.run("secea", {"entities": 2000, "num-clients": 5})
        names = list(r.ns.values())
        assert netns.leftovers(os.getpid())["processes"]
    assert res.verified, res.verification
    assert res.link_bytes >= res.payload_bytes > 0
    assert min(res.bytes_by_party[f"n{i}"] for i in range(5)) > 0
    left = netns.leftovers(os.getpid())
    assert not set(names) & set(left["namespaces"]) and not left["workdirs"] and not left["processes"]
    assert [q for q in r.seen_pids if netns._alive(q) and not netns._zombie(q)] == []
