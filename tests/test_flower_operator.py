"""The operator's tools: ``secea-fast flower certs`` (a CA and per-host
certificates whose chain and subject alternative names check, and which a
real SuperLink serves so that a TLS client verifying the host name gets
through, and one asking for another name does not) and ``secea-fast flower
report`` (stage table and verdict from a round's summary.json)."""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")
pytest.importorskip("cryptography")

from cryptography import x509  # noqa: E402

from secea_fast.flower import localfed, operator  # noqa: E402
from secea_fast.flower.secea import SecEAFlowerResult  # noqa: E402


class _Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _cli(*args, capsys=None):
    """``secea-fast flower ARGS``: in this process through the flower CLI's
    entry point when ``capsys`` is given (fast), else as a real command."""
    if capsys is None:
        return subprocess.run([sys.executable, "-m", "secea_fast", "flower", *args], capture_output=True,
                              text=True, timeout=120)
    from secea_fast.flower import cli
    capsys.readouterr()
    try:
        rc = cli.main(list(args))
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr()
    return _Result(rc, out.out, out.err)


def test_certs_command_chain_and_sans(tmp_path):
    out = tmp_path / "certs"
    r = _cli("certs", "--out", str(out), "--host", "hostA.example.org,10.0.0.1,localhost,127.0.0.1",
             "--host", "node-b.example.org,fd00::1")
    assert r.returncode == 0, r.stderr
    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for stem, dns, ips in (("hosta.example.org", {"hosta.example.org", "localhost"}, {"10.0.0.1", "127.0.0.1"}),
                           ("node-b.example.org", {"node-b.example.org"}, {"fd00::1"})):
        cert = x509.load_pem_x509_certificate((out / f"{stem}.pem").read_bytes())
        cert.verify_directly_issued_by(ca)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert set(san.get_values_for_type(x509.DNSName)) == dns
        assert {str(a) for a in san.get_values_for_type(x509.IPAddress)} == {str(ipaddress.ip_address(i))
                                                                             for i in ips}
        assert os.stat(out / f"{stem}.key").st_mode & 0o777 == 0o600
        assert f"{stem}\t" in r.stdout
    assert not list(out.glob("ca.key"))            # the CA's private key is not kept


@pytest.mark.parametrize("args, words", [
    (["--host", "bad_name"], "--host 'bad_name'"),
    (["--host", ","], "names no host"),
    (["--host", "a.example,b.example", "--host", "a.example"], "already asked for"),
    (["--host", "a.example", "--days", "0"], "days"),
])
def test_certs_command_refuses_bad_options(tmp_path, args, words, capsys):
    r = _cli("certs", "--out", str(tmp_path / "c"), *args, capsys=capsys)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert words in last and "Traceback" not in r.stderr


def test_certs_command_keeps_an_existing_ca(tmp_path, capsys):
    assert _cli("certs", "--out", str(tmp_path), "--host", "a.example", capsys=capsys).returncode == 0
    before = (tmp_path / "ca.crt").read_bytes()
    r = _cli("certs", "--out", str(tmp_path), "--host", "b.example", capsys=capsys)
    assert r.returncode == 2 and "exists" in r.stderr and (tmp_path / "ca.crt").read_bytes() == before


def _handshake(port, cafile, name):
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname=name) as t:
            return t.getpeercert()


def test_superlink_serves_the_certificate_under_its_host_name(tmp_path):
    """A real flower-superlink started with the certificate of
    ``superlink.federation.test``: a client that trusts only our CA and
    checks that name completes the TLS handshake; the same client asking
    for another name (the control) is refused by its own verification."""
    files = localfed.make_host_certificates(tmp_path / "certs", {"link": ["superlink.federation.test",
                                                                          "127.0.0.1"]})
    port = localfed._free_port()
    proc = subprocess.Popen([localfed._bin("flower-superlink"), "--ssl-ca-certfile", files["ca"]["cert"],
                             "--ssl-certfile", files["link"]["cert"], "--ssl-keyfile", files["link"]["key"],
                             "--host", "127.0.0.1", "--port", str(port), "--database", str(tmp_path / "state.db"),
                             "--disable-runtime-dependency-installation"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=tmp_path, env=dict(os.environ, FLWR_HOME=str(tmp_path / "home")))
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, "flower-superlink exited"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.time() < deadline, "flower-superlink did not listen"
            time.sleep(0.2)
        peer = _handshake(port, files["ca"]["cert"], "superlink.federation.test")
        assert ("DNS", "superlink.federation.test") in peer["subjectAltName"]
        with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
            _handshake(port, files["ca"]["cert"], "elsewhere.federation.test")
        other = localfed.make_host_certificates(tmp_path / "other", {"x": ["superlink.federation.test"]})
        with pytest.raises(ssl.SSLCertVerificationError):       # a CA the SuperLink's chain is not from
            _handshake(port, other["ca"]["cert"], "superlink.federation.test")
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)


def test_make_certificates_default_is_loopback(tmp_path):
    files = localfed.make_certificates(tmp_path)
    cert = x509.load_pem_x509_certificate(Path(files["cert"]).read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


# ------------------------------------------------------------------ report
def _secea_summary(**over):
    res = SecEAFlowerResult(names={11: "client-0", 12: "client-1", 13: "client-2"},
                            parties={11: 0, 12: 1, 13: 2}, attempts=1, done=[11, 12, 13], union_size=40, wall=12.5)
    for k, v in over.items():
        setattr(res, k, v)
    res.stages = [{"stage": "hello", "attempt": 0, "nodes": 3, "wall": 3.1, "server_seconds": 0.0,
                   "bytes_down": 300, "bytes_up": 600},
                  {"stage": "step", "step": 0, "attempt": 1, "nodes": 3, "wall": 4.0, "server_seconds": 0.2,
                   "bytes_down": 2_000_000, "bytes_up": 5_000_000}]
    return res.summary()


def _write(tmp_path, summary):
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    return tmp_path


def test_report_pass(tmp_path):
    r = _cli("report", str(_write(tmp_path, _secea_summary())), "--json", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["stage", "attempt", "nodes"]
    assert any(line.startswith("step 0") for line in lines)
    assert lines[-2].split()[-2:] == ["2.00", "5.00"] and lines[-2].startswith("total")
    assert lines[-1].startswith("PASS: secea: 3 clients decoded every block")
    assert json.loads((tmp_path / "r.json").read_text())["verified"] is True


@pytest.mark.parametrize("over, words", [
    ({"done": [11, 12]}, "client-2 did not finish"),
    ({"failed_blocks": [(13, 0)]}, "1 block(s) could not be decoded"),
    ({"parties": {}, "done": []}, "no party took part"),
])
def test_report_fail(tmp_path, over, words, capsys):
    r = _cli("report", str(_write(tmp_path, _secea_summary(**over))), capsys=capsys)
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1].startswith("FAIL") and words in r.stdout.splitlines()[-1]


def test_report_names_dropouts_and_secemb(tmp_path):
    ok, why = operator.round_verdict(_secea_summary(dropped={14: (1, "keys", "lost")}))
    assert ok and "dropped" in why and "lost" in why
    ok, why = operator.round_verdict({"protocol": "secemb", "users": 5, "uploaded": 4,
                                      "dropouts": {"7": ["upload", "lost"]}, "stages": []})
    assert ok and "4 of 5" in why and "node 7" in why
    ok, why = operator.round_verdict({"protocol": "secemb", "users": 5, "uploaded": 0, "stages": []})
    assert not ok


@pytest.mark.parametrize("content, words", [
    (None, "no summary"), ("{not json", "not JSON"), ('{"protocol": "x"}', "not a round summary"),
    ('{"protocol": "secea", "stages": [{"wall": 1}]}', "stage 0 lacks"),
])
def test_report_refuses_what_is_no_summary(tmp_path, content, words, capsys):
    if content is not None:
        (tmp_path / "summary.json").write_text(content)
    r = _cli("report", str(tmp_path), capsys=capsys)
    assert r.returncode == 2 and words in r.stderr.strip().splitlines()[-1] and "Traceback" not in r.stderr
