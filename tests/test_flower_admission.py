"""Admission: who may join a federation and who may run Apps on it.

Attacks, each with a weakened control that shows the test has power:

* a stranger SuperNode with only the CA certificate and the SuperLink's
  address (and one with a key pair of its own) asks to join a federation
  that uses Flower's SuperNode authentication: the SuperLink refuses it and
  it is not among the SuperLink's nodes.  Control: with SuperNode
  authentication off the same stranger joins.
* an outsider calls the Control API from another address of this host:
  with the SuperLink bound to 127.0.0.1 it cannot connect while the
  operator on 127.0.0.1 can.  Control: bound to 0.0.0.0, the outsider lists
  the federation's nodes through it (and, slow test, registers a key of its
  own and gets its SuperNode in despite SuperNode authentication: why the
  Control API must stay closed).
* the ``hello`` stage (in process, over the loopback transport): a stranger,
  a missing party, two nodes claiming one party and a signature bound to
  another node id are each refused, naming the node or the party.
"""
import http.client
import socket
import ssl

import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")
psutil = pytest.importorskip("psutil", reason="psutil is needed to check the processes are gone")

import _flower_loop  # noqa: E402
from secea_fast.flower.admission import AdmissionError, NodeIdentity, hello_reply, identify_nodes  # noqa: E402
from secea_fast.flower.localfed import LocalFederation, make_supernode_keys  # noqa: E402
from secea_fast.protocols.common.roster import Roster, write_federation  # noqa: E402

Loopback = _flower_loop.Loopback

MT = "query"


# ---------------------------------------------------------------- hello stage (in process)
def _party(roster, ids, name):
    return NodeIdentity(roster, ids[name])


def _handler(me, node_id):
    """A node that answers the hello stage as ``me``, signing for ``node_id``."""
    def h(cfg, blobs, state):
        rcfg, out = hello_reply(cfg, me, node_id, MT)
        return rcfg, out, state, None
    return h


@pytest.fixture(scope="module")
def federation_roster():
    return Roster.make([("client-0", "client"), ("client-1", "client"), ("client-2", "client"),
                        ("server", "server")])


def _honest(roster, ids, first=11):
    return {first + i: _handler(_party(roster, ids, f"client-{i}"), first + i) for i in range(3)}


def test_hello_accepts_exactly_the_roster(federation_roster):
    roster, ids = federation_roster
    loop = Loopback(_honest(roster, ids))
    names, _ = identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])
    assert names == {11: "client-0", 12: "client-1", 13: "client-2"}


def test_hello_refuses_a_stranger(federation_roster):
    """Node 14 signs with a key the roster does not hold: once under a name
    of its own, once claiming client-1's name."""
    roster, ids = federation_roster
    other, other_ids = Roster.make([("client-1", "client"), ("client-9", "client")])
    for name in ("client-9", "client-1"):
        handlers = _honest(roster, ids)
        handlers[14] = _handler(_party(other, other_ids, name), 14)
        loop = Loopback(handlers)
        with pytest.raises(AdmissionError, match=r"node 14 is not a roster party") as err:
            identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])
        assert "node 11" not in str(err.value) and "node 12" not in str(err.value)
    # control: the same node with the roster's own key for its name is accepted
    handlers = _honest(roster, ids)
    del handlers[12]
    handlers[14] = _handler(_party(roster, ids, "client-1"), 14)
    loop = Loopback(handlers)
    assert identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])[0][14] == "client-1"


def test_hello_refuses_a_missing_party(federation_roster):
    roster, ids = federation_roster
    handlers = _honest(roster, ids)
    del handlers[13]
    loop = Loopback(handlers)
    with pytest.raises(AdmissionError, match=r"roster party client-2 is not connected"):
        identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])


def test_hello_refuses_a_silent_node(federation_roster):
    roster, ids = federation_roster
    loop = Loopback(_honest(roster, ids), die={12: ("hello", None)})
    with pytest.raises(AdmissionError, match=r"node 12 did not answer.*client-1 is not connected"):
        identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])


def test_hello_refuses_two_nodes_claiming_one_party(federation_roster):
    """Node 14 holds a copy of client-0's key (each node signs its own id)."""
    roster, ids = federation_roster
    handlers = _honest(roster, ids)
    handlers[14] = _handler(_party(roster, ids, "client-0"), 14)
    loop = Loopback(handlers)
    with pytest.raises(AdmissionError, match=r"node 14 claims party 'client-0', which another node already proved"):
        identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])


def test_hello_refuses_a_signature_for_another_node_id(federation_roster):
    """Node 13 relays client-2's answer made for node 99 (a node id that is
    not its own): the signature binds the node id, so it does not verify."""
    roster, ids = federation_roster
    handlers = _honest(roster, ids)
    handlers[13] = _handler(_party(roster, ids, "client-2"), 99)
    loop = Loopback(handlers)
    with pytest.raises(AdmissionError, match=r"node 13 is not a roster party.*client-2 is not connected"):
        identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])


def test_hello_refuses_a_party_of_another_role(federation_roster):
    roster, ids = federation_roster
    handlers = _honest(roster, ids)
    handlers[20] = _handler(_party(roster, ids, "server"), 20)
    loop = Loopback(handlers)
    with pytest.raises(AdmissionError, match=r"node 20 is roster party 'server' of role 'server'"):
        identify_nodes(loop, roster, loop.nodes, MT, roles=["client"])


# ---------------------------------------------------------------- real processes

def _non_loopback_ipv4():
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def _all_gone(pids):
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def _control_call(fed, host, path, body=b""):
    """One Control API call as an outsider makes it: TLS to ``host`` with
    the federation's CA certificate (which every SuperNode holds), Flower's
    protobuf-over-HTTP encoding; (HTTP status, body)."""
    ctx = ssl.create_default_context(cafile=fed.certs["ca"])
    ctx.check_hostname = False          # an outsider need not care which name the certificate gives
    conn = http.client.HTTPSConnection(host, fed.port, context=ctx, timeout=10)
    try:
        conn.request("POST", f"/v1/control/{path}", body=body,
                     headers={"Content-Type": "application/protobuf"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _listed_node_ids(fed, host):
    from flwr.proto.control_pb2 import ListNodesResponse
    status, body = _control_call(fed, host, "list-nodes")
    assert status == 200, body[:300]
    res = ListNodesResponse()
    res.ParseFromString(body)
    return {n.node_id for n in res.nodes_info}


def _online(fed):
    return {x for x, status in fed.superlink_nodes().items() if status == "online"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """The default federation: SuperNode authentication, SuperLink on 127.0.0.1."""
    fed = LocalFederation(1, workdir=tmp_path_factory.mktemp("guarded"))
    with fed:
        yield fed
    assert _all_gone(fed.started), "a process of the federation survived"


@pytest.fixture(scope="module")
def open_federation(tmp_path_factory):
    """The weakened federation: no SuperNode authentication, SuperLink on 0.0.0.0."""
    fed = LocalFederation(1, workdir=tmp_path_factory.mktemp("open"), supernode_auth=False, bind="0.0.0.0")
    with fed:
        yield fed
    assert _all_gone(fed.started), "a process of the federation survived"


@pytest.mark.slow     # real SuperLink and SuperNodes; .ci/run runs it as its own step
def test_stranger_supernode_is_refused(guarded):
    assert guarded.supernode_auth and len(guarded.node_ids) == 1
    before = _online(guarded)
    assert before == set(guarded.node_ids)
    # one with no key at all, one with a key pair of its own that nobody registered
    strangers = [guarded.start_stranger(), guarded.start_stranger(own_key=True)]
    for name, proc in zip(strangers, guarded.strangers):
        assert not guarded.admitted(name), guarded.log_tail(name)
        assert "Failed to initialize the connection to the SuperLink" in guarded.log_text(name), \
            guarded.log_tail(name)
        assert proc.poll() is not None        # it gave up: no ClientApp of it can run
    assert set(guarded.superlink_nodes()) == set(guarded.node_ids)
    assert _online(guarded) == before


@pytest.mark.slow     # real SuperLink and SuperNodes; .ci/run runs it as its own step
def test_stranger_supernode_joins_without_supernode_auth(open_federation):
    """Control: the same stranger, against a SuperLink without SuperNode
    authentication, joins and is one of the nodes a ServerApp would use."""
    before = _online(open_federation)
    name = open_federation.start_stranger()
    assert open_federation.admitted(name), open_federation.log_tail(name)
    after = _online(open_federation)
    assert len(after) == len(before) + 1 and before < after


@pytest.mark.slow     # real SuperLink and SuperNodes; .ci/run runs it as its own step
def test_control_api_is_reachable_only_on_loopback(guarded):
    ip = _non_loopback_ipv4()
    if ip is None:
        pytest.skip("this host has no non-loopback IPv4 address to call from")
    assert _listed_node_ids(guarded, "127.0.0.1") == set(guarded.node_ids)    # the operator's side
    with socket.socket() as s:
        s.settimeout(5)
        assert s.connect_ex((ip, guarded.port)) != 0, f"the SuperLink answers on {ip}:{guarded.port}"
    with pytest.raises(OSError):
        _control_call(guarded, ip, "list-nodes")


@pytest.mark.slow     # real SuperLink and SuperNodes; .ci/run runs it as its own step
def test_control_api_bound_to_all_addresses_is_open(open_federation):
    """Control: bound to 0.0.0.0, a caller on another address of the host
    reads the federation through the Control API."""
    ip = _non_loopback_ipv4()
    if ip is None:
        pytest.skip("this host has no non-loopback IPv4 address to call from")
    listed = _listed_node_ids(open_federation, ip)
    assert listed == _listed_node_ids(open_federation, "127.0.0.1") and len(listed) >= 1


@pytest.mark.slow
def test_open_control_api_defeats_supernode_auth(tmp_path):
    """SuperNode authentication alone does not keep a stranger out when the
    Control API is reachable: the outsider registers a key of its own
    through it (RegisterNode, what ``flwr supernode register`` sends) and
    its SuperNode joins.  With the default bind the same call cannot connect
    (test_control_api_is_reachable_only_on_loopback)."""
    ip = _non_loopback_ipv4()
    if ip is None:
        pytest.skip("this host has no non-loopback IPv4 address to call from")
    from cryptography.hazmat.primitives import serialization
    from flwr.proto.control_pb2 import RegisterNodeRequest, RegisterNodeResponse
    from flwr.supercore.primitives.asymmetric import public_key_to_bytes

    with LocalFederation(1, workdir=tmp_path / "fed", bind="0.0.0.0") as fed:
        keys = make_supernode_keys(tmp_path / "outsider", "outsider")
        with open(keys["public"], "rb") as f:
            pub = serialization.load_ssh_public_key(f.read())
        status, body = _control_call(fed, ip, "register-node",
                                     RegisterNodeRequest(public_key=public_key_to_bytes(pub)).SerializeToString())
        assert status == 200, body[:300]
        res = RegisterNodeResponse()
        res.ParseFromString(body)
        name = fed.start_stranger(private_key=keys["private"])
        assert fed.admitted(name), fed.log_tail(name)
        assert res.node_id in _online(fed)
    assert _all_gone(fed.started)


# ---------------------------------------------------------------- roster files for a deployment
def test_flower_roster_command_writes_the_federation(tmp_path, capsys):
    from secea_fast.flower.cli import main, roster_parties
    from secea_fast.protocols.common.roster import Identity

    assert main(["roster", "--out", str(tmp_path), "--clients", "2", "--users", "1"]) == 0
    printed = dict(line.split("\t") for line in capsys.readouterr().out.splitlines())
    roster = Roster.load(printed["roster"])
    assert sorted(roster.names()) == ["client-0", "client-1", "server1", "user-0"]
    assert roster.role("server1") == "server1" and roster.role("user-0") == "user"
    for name in roster.names():
        ident = Identity.load(printed[name])
        assert roster.entries[name].public == ident.public_bytes
        assert (tmp_path / f"{name}.identity.json").stat().st_mode & 0o077 == 0     # private: owner only
    for bad, what in ((dict(party=["x"]), "--party"), (dict(clients=0), "--clients"),
                      (dict(party=["client-0=client"], clients=1), "named twice"), ({}, "name the parties")):
        with pytest.raises(ValueError, match=what):
            roster_parties(**bad)


def test_local_federation_refuses_auth_without_tls_and_a_bad_bind(tmp_path):
    with pytest.raises(ValueError, match="supernode_auth needs tls"):
        LocalFederation(1, tls=False, supernode_auth=True, workdir=tmp_path)
    with pytest.raises(ValueError, match="bind must be an IP address"):
        LocalFederation(1, bind="example.org", workdir=tmp_path)
    fed = LocalFederation(1, workdir=tmp_path)
    assert fed.supernode_auth and fed.bind == "127.0.0.1"
    assert not LocalFederation(1, tls=False, workdir=tmp_path).supernode_auth


def _proxy_certificate(directory, ip):
    """A self-signed certificate for ``ip`` (the proxy's TLS name)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fleet proxy")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (directory / "proxy.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "proxy.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                            serialization.PrivateFormat.TraditionalOpenSSL,
                                                            serialization.NoEncryption()))
    return directory / "proxy.pem", directory / "proxy.key"


NGINX_FLEET_ONLY = """
pid {d}/nginx.pid; error_log {d}/nginx-error.log; daemon off;
events {{}}
http {{
  access_log {d}/nginx-access.log;
  client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp;
  server {{
    listen {ip}:{port} ssl;
    ssl_certificate {cert}; ssl_certificate_key {key};
    location /v1/fleet/ {{
      proxy_pass https://127.0.0.1:{superlink_port};
      proxy_ssl_trusted_certificate {ca}; proxy_ssl_verify on; proxy_ssl_name localhost;
      proxy_http_version 1.1; proxy_set_header Connection "";
    }}
    location / {{ return 403; }}
  }}
}}
"""


@pytest.mark.slow
def test_fleet_only_proxy_recipe(tmp_path):
    """The multi-host recipe of docs/FLOWER.md on one host: the SuperLink on
    127.0.0.1, an nginx on the host's other address forwarding only
    /v1/fleet/.  Through the proxy the Control API answers 403, a stranger
    is refused, and a registered SuperNode gets in."""
    import shutil
    import subprocess
    import time

    nginx = shutil.which("nginx")
    ip = _non_loopback_ipv4()
    if nginx is None or ip is None:
        pytest.skip("needs nginx and a non-loopback IPv4 address")
    with socket.socket() as s:
        s.bind((ip, 0))
        port = s.getsockname()[1]
    with LocalFederation(1, workdir=tmp_path / "fed") as fed:
        cert, key = _proxy_certificate(tmp_path, ip)
        bundle = tmp_path / "cas.crt"                 # what the nodes trust: the proxy's and the SuperLink's CA
        bundle.write_bytes(cert.read_bytes() + open(fed.certs["ca"], "rb").read())
        (tmp_path / "tmp").mkdir()
        (tmp_path / "nginx.conf").write_text(NGINX_FLEET_ONLY.format(
            d=tmp_path, ip=ip, port=port, cert=cert, key=key, superlink_port=fed.port, ca=fed.certs["ca"]))
        proxy = subprocess.Popen([nginx, "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)],
                                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 20
            while time.time() < deadline:
                with socket.socket() as s:
                    if s.connect_ex((ip, port)) == 0:
                        break
                time.sleep(0.1)
            ctx = ssl.create_default_context(cafile=str(bundle))
            conn = http.client.HTTPSConnection(ip, port, context=ctx, timeout=10)
            conn.request("POST", "/v1/control/list-nodes", body=b"",
                         headers={"Content-Type": "application/protobuf"})
            assert conn.getresponse().status == 403
            conn.close()
            via = dict(superlink=f"{ip}:{port}", root_certificates=bundle)
            stranger = fed.start_stranger(**via)
            assert not fed.admitted(stranger), fed.log_tail(stranger)
            keys = make_supernode_keys(tmp_path / "keys", "member")
            out = subprocess.run(["flwr", "supernode", "register", keys["public"], "local-tls"], env=fed.env,
                                 cwd=fed.workdir, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stdout + out.stderr
            member = fed.start_stranger(private_key=keys["private"], **via)
            assert fed.admitted(member), fed.log_tail(member)
            assert len(_online(fed)) == 2
        finally:                                  # nginx and its workers end here, also on failure
            try:
                tree = [psutil.Process(proxy.pid)] + psutil.Process(proxy.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                tree = []
            for q in tree:
                try:
                    q.terminate()
                except psutil.NoSuchProcess:      # a worker that ended with its master
                    pass
            psutil.wait_procs(tree, timeout=10)
            proxy.wait(timeout=10)
    assert _all_gone(fed.started)


def test_run_config_names_the_roster_only_to_simulated_nodes(tmp_path):
    """The run config is the server's: a deployed node (its own node config,
    here party-id only) never takes its roster from it, a node of the
    simulation engine (partition-id and num-partitions) does."""
    from secea_fast.flower.admission import node_identity
    write_federation(tmp_path, [("client-0", "client"), ("client-1", "client")])
    rc = {"roster-dir": str(tmp_path)}
    me = node_identity({"partition-id": 1, "num-partitions": 2}, rc, "client-1")
    assert me.name == "client-1"
    for nc in ({"party-id": 1}, {"partition-id": 1}):
        with pytest.raises(ValueError, match="roster-file"):
            node_identity(nc, rc, "client-1")
