"""A Flower deployment on this host: a real SuperLink and N real SuperNodes
as separate processes, TLS on, and ``flwr run`` of an App against them.

For tests, benchmarks and trials of the deployment path: every process is
the one a multi-host deployment runs (``flower-superlink``,
``flower-supernode``, ``flwr run``); only the addresses are local.  TLS uses
a CA and a server certificate for ``127.0.0.1`` / ``localhost`` made for the
federation (``cryptography``), so the nodes verify the SuperLink as they
would across hosts.  Flower's CLI state lives in the federation's work
directory (``FLWR_HOME``), never in the user's home.

    with LocalFederation(5, node_configs=[{"party-id": i} for i in range(5)]) as fed:
        info = fed.run(example_app(), run_config={"protocol": "secea"})

Admission (Flower's own SuperNode authentication, on by default): every
SuperNode gets a P-384 key pair made for the federation, the SuperLink runs
with ``--enable-supernode-auth``, exactly the federation's public keys are
registered with ``flwr supernode register`` before any node connects, and
each SuperNode starts with ``--auth-supernode-private-key``.  A SuperNode
with only the CA certificate (or a key of its own) is refused by the
SuperLink; :meth:`LocalFederation.start_stranger` starts one to show it.

Flower 1.42 serves its Fleet, Control and Runtime APIs on one HTTPS port
(``flower-superlink --host/--port``); the Control API has no account
authentication in the open-source release (``flwr.superlink.config_loader
.load_control_authn_plugin`` returns the no-op plugin unless the
enterprise OIDC plugin is installed), so whoever reaches that port can
``flwr run`` an App on every SuperNode and register SuperNode keys.  The
federation binds it to ``127.0.0.1`` (``bind``); ``docs/FLOWER.md`` says
what a multi-host deployment does instead.

Every process the federation starts is ended by ``__exit__`` (SIGTERM to
its process group, SIGKILL after a grace period), also when the body
raised; ``kill_node(i)`` kills one SuperNode mid-run (dropout tests).

:class:`LocalSimulation` is the same for Flower's simulation runtime (a
SuperLink in simulation mode, ``flwr run`` with a federation config), and
:func:`flwr_run` the ``flwr run`` both of them stream.

Length (about 900 lines): the two local Flower runtimes (the simulation's
with the Ray cluster it starts), their certificates and keys, and the one
``flwr run`` driver they share; every part starts, watches and ends the
same kind of Flower processes.
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal
from pathlib import Path

from .._lifetime import remove_on_exit

__all__ = ["LocalFederation", "LocalSimulation", "flwr_run", "RunAborted", "RunInfo", "example_app", "train_app", "make_certificates",
           "make_host_certificates", "check_host", "make_supernode_keys"]

# Flower's internal switches that start its legacy gRPC Control and Fleet
# servers on their own (default 0.0.0.0) addresses
# (flwr/superlink/cli/flower_superlink.py, SuperLinkLifespan.startup): never
# inherited by the federation's processes
_LEGACY_GRPC_SWITCHES = ("FLWR_INTERNAL_GRPC_CONTROL_API", "FLWR_INTERNAL_GRPC_FLEET_API")

_DNS_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def example_app() -> Path:
    """The directory of the example Flower App shipped with the package
    (``secea_fast/flower/app``: SecEA and SecEmb rounds on the demo data)."""
    return Path(__file__).resolve().parent / "app"


def train_app() -> Path:
    """The directory of the training example's Flower App
    (``secea_fast/flower/train_app``, :mod:`secea_fast.flower.train`)."""
    return Path(__file__).resolve().parent / "train_app"


def _bin(name: str) -> str:
    """A console script of the running environment (the venv of ``sys.executable``)."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: install the flower extra (pip install 'secea_fast[flower]')")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_host(value: str, what: str = "host") -> str:
    """``value`` if it is an IP address or a DNS name (letters, digits,
    hyphens and dots, labels of 1-63 characters, an optional leading
    ``*.``); ValueError naming ``what`` otherwise."""
    v = str(value).strip()
    try:
        return str(ipaddress.ip_address(v))
    except ValueError:
        pass
    labels = v[2:].split(".") if v.startswith("*.") else v.split(".")
    if not v or len(v) > 253 or not all(_DNS_LABEL.fullmatch(x) for x in labels):
        raise ValueError(f"{what}: {value!r} is neither an IP address nor a DNS name")
    return v.lower()


def _san(host: str) -> Any:
    from cryptography import x509
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_host_certificates(directory: str | os.PathLike[str], hosts: Mapping[str, Sequence[str]], *,
                           days: float = 365.0) -> dict[str, dict[str, str]]:
    """A CA and one server certificate per host in ``directory``, via
    ``cryptography`` (ECDSA P-256, SHA-256).  ``hosts``: file stem -> the
    names and IP addresses the certificate is valid for (its subject
    alternative names; the first is also its common name), e.g.
    ``{"superlink": ["hostA.example.org", "10.0.0.1", "localhost", "127.0.0.1"]}``.
    Writes ``ca.crt`` (to every SuperNode and the operator) and per host
    ``<stem>.pem`` and ``<stem>.key`` (mode 0600, to that host only); the
    CA's private key is not written (issue every certificate in one call).
    Returns {"ca": {"cert": path}, stem: {"cert": path, "key": path}, ...}.
    ValueError naming the host or stem that is not valid."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not hosts:
        raise ValueError("hosts: name at least one host")
    checked: dict[str, list[str]] = {}
    for stem, names in hosts.items():
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", str(stem)) or stem == "ca":
            raise ValueError(f"hosts: {stem!r} is not a usable file stem (letters, digits, . _ -; not 'ca')")
        if isinstance(names, str) or not names:
            raise ValueError(f"hosts[{stem!r}]: give a non-empty list of names and addresses")
        checked[str(stem)] = list(dict.fromkeys(check_host(h, f"hosts[{stem!r}]") for h in names))
    if not (isinstance(days, (int, float)) and not isinstance(days, bool) and 0 < days <= 3650):
        raise ValueError(f"days must be in (0, 3650], got {days!r}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    start, stop = now - _dt.timedelta(minutes=5), now + _dt.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secea_fast federation CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(stop)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       key_cert_sign=True, crl_sign=True, encipher_only=False,
                                       decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    out: dict[str, dict[str, str]] = {"ca": {"cert": str(d / "ca.crt")}}
    (d / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for stem, names in checked.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(stop)
                .add_extension(x509.SubjectAlternativeName([_san(h) for h in names]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        cert_path, key_path = d / f"{stem}.pem", d / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption()))
        os.chmod(key_path, 0o600)
        out[stem] = {"cert": str(cert_path), "key": str(key_path)}
    return out


def make_certificates(directory: str | os.PathLike[str],
                      hosts: Sequence[str] = ("localhost", "127.0.0.1"), *, days: float = 2.0) -> dict[str, str]:
    """A CA and a server certificate valid for ``hosts`` (names and IP
    addresses; default 127.0.0.1 / localhost) in ``directory``:
    {"ca": path, "cert": path, "key": path} (``ca.crt``, ``server.pem``,
    ``server.key``; :func:`make_host_certificates` for several hosts)."""
    files = make_host_certificates(directory, {"server": list(hosts)}, days=days)
    return {"ca": files["ca"]["cert"], "cert": files["server"]["cert"], "key": files["server"]["key"]}


def make_supernode_keys(directory: str | os.PathLike[str], name: str) -> dict[str, str]:
    """A SuperNode authentication key pair in ``directory`` in the formats
    Flower 1.42 reads: a P-384 private key in OpenSSH format (mode 0600,
    ``flower-supernode --auth-supernode-private-key``) and its OpenSSH public
    key (``flwr supernode register``): {"private": path, "public": path}."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP384R1())
    out = {"private": d / f"{name}.key", "public": d / f"{name}.key.pub"}
    fd = os.open(out["private"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                  serialization.NoEncryption()))
    out["public"].write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                             serialization.PublicFormat.OpenSSH) + b"\n")
    return {k: str(v) for k, v in out.items()}


def _json_field(text, key):
    """``key`` of the first JSON object line in ``text`` (Flower's CLI
    prints its ``--format json`` result after any log lines), or None."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line).get(key)
            except ValueError:
                continue
    try:
        return json.loads(text[text.index("{"):]).get(key)
    except ValueError:
        return None


def _config_value(v) -> str:
    """A node-config / run-config value in the TOML form flwr parses."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def _tree(procs) -> list:
    """The processes and all their descendants (psutil.Process objects;
    Flower starts its SuperExec in a session of its own, so process groups
    are not enough)."""
    import psutil
    out = []
    for p in procs:
        try:
            root = psutil.Process(p.pid)
            out += [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            pass
    return out


def _end(tree: list, grace: float) -> None:
    """SIGTERM every process of ``tree``, SIGKILL those alive after
    ``grace`` seconds, and reap them."""
    import psutil
    for q in tree:
        try:
            q.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(tree, timeout=grace)
    for q in alive:
        try:
            q.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


@dataclass
class RunInfo:
    """One ``flwr run``: its run id (if Flower printed it), the seconds from
    submission to the end of the run, and the command's output."""
    run_id: int | None
    seconds: float
    output: str


class LocalFederation:
    """A SuperLink and ``n_nodes`` SuperNodes on this host (see the module
    docstring).  ``node_configs[i]``: node config of SuperNode i (e.g.
    ``{"party-id": i}``); ``workdir``: where certificates, logs and Flower's
    state go (default: a temporary directory removed at exit); ``tls``:
    False runs everything ``--insecure`` (loopback only); ``env``: extra
    environment of every process; ``roster``: (name, role) of each node's
    roster party, in node order: the federation's roster and every node's
    identity are written under ``workdir/roster``
    (:func:`~secea_fast.protocols.common.roster.write_federation`), each
    node's config gets its ``roster-file``, ``identity-file`` and
    ``salt-ledger`` (:class:`~secea_fast.flower.secea.FileSaltLedger`), and
    :attr:`roster_file` is the path the ServerApp's run config names.

    ``supernode_auth`` (default: on whenever ``tls`` is): Flower's SuperNode
    authentication, see the module docstring; :attr:`node_ids` are the node
    ids the SuperLink gave the registered keys, in node order.  ``bind``:
    the address the SuperLink's one port (Fleet, Control and Runtime APIs)
    listens on; keep it ``127.0.0.1`` (anything else opens the Control API
    to whoever reaches that address: the tests use ``0.0.0.0`` to show it)."""

    def __init__(self, n_nodes: int, *, node_configs: Sequence[Mapping[str, Any]] | None = None,
                 workdir: str | os.PathLike[str] | None = None, tls: bool = True, env: Mapping[str, str] | None = None,
                 startup_timeout: float = 300.0, roster: Sequence[tuple[str, str]] | None = None,
                 supernode_auth: bool | None = None, bind: str = "127.0.0.1") -> None:
        if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 1:
            raise ValueError(f"n_nodes must be an int >= 1, got {n_nodes!r}")
        if node_configs is not None and len(node_configs) != n_nodes:
            raise ValueError(f"node_configs must have {n_nodes} entries, got {len(node_configs)}")
        if roster is not None and len(roster) != n_nodes:
            raise ValueError(f"roster must name {n_nodes} parties (one per node), got {len(roster)}")
        self.n_nodes = n_nodes
        self.node_configs = [dict(c) for c in (node_configs or [{} for _ in range(n_nodes)])]
        self.roster = None if roster is None else [(str(n), str(r)) for n, r in roster]
        self.roster_file: str | None = None
        self.identity_files: dict[str, str] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="secea-fed-")
            remove_on_exit(self._tmp.name)  # by the command's watchdog if it is killed
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.tls = bool(tls)
        self.supernode_auth = self.tls if supernode_auth is None else bool(supernode_auth)
        if self.supernode_auth and not self.tls:
            raise ValueError("supernode_auth needs tls: Flower refuses SuperNode authentication without TLS")
        try:
            ipaddress.ip_address(bind)
        except ValueError:
            raise ValueError(f"bind must be an IP address, got {bind!r}") from None
        self.bind = bind
        self.node_ids: list[int] = []
        self.node_keys: list[dict[str, str]] = []
        self.strangers: list[subprocess.Popen] = []
        self.startup_timeout = float(startup_timeout)
        self.env = dict(os.environ)
        # Flower's processes start others by name (flower-superexec, flwr-serverapp,
        # flwr-clientapp): this environment's scripts come first on PATH
        path = os.pathsep.join([str(Path(sys.executable).parent), self.env.get("PATH", "")])
        self.env.update({"FLWR_HOME": str(self.workdir / "flwr-home"), "PYTHONUNBUFFERED": "1",
                         "PATH": path})
        self.env.update(env or {})
        for k in _LEGACY_GRPC_SWITCHES:
            self.env.pop(k, None)
        self.superlink = None
        self.nodes: list[subprocess.Popen] = []
        self._logs: list[IO[bytes]] = []
        self.port: int | None = None
        self.certs: dict[str, str] | None = None
        self.started: set[int] = set()       # pids of every process (and descendant) seen, for audits

    # ------------------------------------------------------------------ processes
    def _start(self, name, args):
        log = open(self.workdir / "logs" / f"{name}.log", "wb")
        self._logs.append(log)
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True, cwd=self.workdir)

    def __enter__(self):
        try:
            self._launch()
        except BaseException:
            self.close()
            raise
        return self

    def _launch(self):
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        if self.roster is not None:
            from ..protocols.common.roster import write_federation
            files = write_federation(self.workdir / "roster", self.roster)
            self.roster_file = files.pop("roster")
            self.identity_files = files
            for nc, (name, _) in zip(self.node_configs, self.roster):
                # salt-ledger: the node's record of SecEA salts across runs (flower.secea.FileSaltLedger)
                nc.update({"roster-file": self.roster_file, "identity-file": files[name],
                           "salt-ledger": str(self.workdir / "roster" / f"{name}.salts")})
        for i, nc in enumerate(self.node_configs):
            # each node's sealed state journal (flower.state.save_state) in the federation's own
            # directory, so it goes with it
            nc.setdefault("state-dir", str(self.workdir / "node-state" / f"supernode-{i}"))
        self.port = _free_port()
        tls_link, tls_node = (["--insecure"], ["--insecure"])
        if self.tls:
            self.certs = make_certificates(self.workdir / "certs")
            tls_link = ["--ssl-ca-certfile", self.certs["ca"], "--ssl-certfile", self.certs["cert"],
                        "--ssl-keyfile", self.certs["key"]]
            tls_node = ["--root-certificates", self.certs["ca"]]
        auth = ["--enable-supernode-auth"] if self.supernode_auth else []
        self.superlink = self._start("superlink", [
            _bin("flower-superlink"), *tls_link, *auth, "--host", self.bind, "--port", str(self.port),
            "--database", str(self.workdir / "state.db"), "--disable-runtime-dependency-installation"])
        self._wait_port(self.port, self.superlink, "superlink")
        self._write_cli_config()
        if self.supernode_auth:
            self.node_keys = [make_supernode_keys(self.workdir / "node-keys", f"supernode-{i}")
                              for i in range(self.n_nodes)]
            self.node_ids = self._register([k["public"] for k in self.node_keys])
        for i, nc in enumerate(self.node_configs):
            key = self.node_keys[i]["private"] if self.supernode_auth else None
            self.nodes.append(self._start(f"supernode-{i}", self._supernode_args(nc, key)))
        self._wait_nodes()

    def _supernode_args(self, node_config, private_key, superlink=None, root_certificates=None):
        args = [_bin("flower-supernode"), "--superlink", superlink or f"127.0.0.1:{self.port}",
                "--host", "127.0.0.1", "--port", str(_free_port())]
        args += ["--root-certificates", str(root_certificates or self.certs["ca"])] if self.tls else ["--insecure"]
        if private_key is not None:
            args += ["--auth-supernode-private-key", str(private_key)]
        if node_config:
            args += ["--node-config", " ".join(f"{k}={_config_value(v)}" for k, v in node_config.items())]
        return args

    def _register(self, public_keys):
        """``flwr supernode register`` of each public key (concurrently):
        the node ids the SuperLink gave them, in order."""
        procs = [subprocess.Popen([_bin("flwr"), "supernode", "register", str(k), "local-tls", "--format", "json"],
                                  env=self.env, cwd=self.workdir, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for k in public_keys]
        ids = []
        try:
            for k, p in zip(public_keys, procs):
                try:
                    out, _ = p.communicate(timeout=self.startup_timeout)
                except subprocess.TimeoutExpired:
                    raise RuntimeError(f"flwr supernode register {k} did not finish within "
                                       f"{self.startup_timeout:g} s") from None
                node_id = _json_field(out, "node-id")
                if p.returncode != 0 or node_id is None:
                    raise RuntimeError(f"flwr supernode register {k} failed (exit {p.returncode}):\n{out}\n"
                                       + self.log_tail("superlink"))
                ids.append(int(node_id))
        finally:
            for q in procs:             # none outlives a failed registration
                if q.poll() is None:
                    q.kill()
                    q.wait(timeout=10)
        return ids

    def superlink_nodes(self) -> dict[int, str]:
        """The SuperLink's SuperNodes as its Control API lists them (what
        ``flwr supernode list`` prints): node id -> status (``online``,
        ``registered``, ``offline``, ...)."""
        from flwr.proto.control_pb2 import ListNodesRequest
        from flwr.supercore.control import ControlHttpClient
        client = ControlHttpClient.from_server_address(
            f"127.0.0.1:{self.port}", insecure=not self.tls,
            root_certificates=Path(self.certs["ca"]).read_bytes() if self.certs else None, interceptors=())
        try:
            res = client.ListNodes(ListNodesRequest())
        finally:
            client.close()
        return {int(n.node_id): str(n.status) for n in res.nodes_info}

    def start_stranger(self, node_config: Mapping[str, Any] | None = None, *, own_key: bool = False,
                       private_key: str | os.PathLike[str] | None = None, superlink: str | None = None,
                       root_certificates: str | os.PathLike[str] | None = None) -> str:
        """Start a SuperNode that is not one of the federation's and return
        its name (``stranger-<k>``, its log's name).  It has the CA
        certificate and the SuperLink's address (what an outsider can have)
        and no key of the federation's: none, or with ``own_key`` a key pair
        of its own that nobody registered, or ``private_key`` (a key the
        outsider got registered some other way).  ``superlink`` /
        ``root_certificates``: another address and CA file to reach the
        SuperLink by (e.g. through a proxy).  :meth:`admitted` tells
        whether the SuperLink took it.  An admitted stranger keeps running
        (it takes part in runs) until the federation closes;
        :attr:`strangers` holds their processes."""
        name = f"stranger-{len(self.strangers)}"
        key = private_key
        if own_key and key is None:
            key = make_supernode_keys(self.workdir / "stranger-keys", name)["private"]
        self.strangers.append(self._start(name, self._supernode_args(dict(node_config or {}), key, superlink,
                                                                     root_certificates)))
        return name

    def admitted(self, stranger: str, timeout: float = 30.0) -> bool:
        """Whether the SuperLink took the stranger ``stranger``: waits until
        its log shows the SuperNode ID the SuperLink gave it (True) or it
        exited, refused (False); False also if neither within ``timeout``
        seconds.  ValueError for a name :meth:`start_stranger` did not give."""
        names = [f"stranger-{k}" for k in range(len(self.strangers))]
        if stranger not in names:
            raise ValueError(f"stranger: no stranger named {stranger!r} (started: {names})")
        proc = self.strangers[names.index(stranger)]
        deadline = time.time() + timeout
        while time.time() < deadline:
            if "SuperNode ID" in self.log_text(stranger):
                return True
            if proc.poll() is not None:
                return "SuperNode ID" in self.log_text(stranger)
            time.sleep(0.1)
        return False

    def _wait_port(self, port, proc, name):
        deadline = time.time() + self.startup_timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not listen on port {port} within {self.startup_timeout:g} s")

    def _write_cli_config(self):
        home = Path(self.env["FLWR_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        lines = ["[superlink]", 'default = "local-tls"', "", "[superlink.local-tls]",
                 f'address = "127.0.0.1:{self.port}"']
        lines += [f'root-certificates = "{self.certs["ca"]}"'] if self.tls else ["insecure = true"]
        (home / "config.toml").write_text("\n".join(lines) + "\n")

    def _wait_nodes(self):
        """Wait until the SuperLink has every SuperNode registered (the
        nodes' logs show their node id)."""
        deadline = time.time() + self.startup_timeout
        while time.time() < deadline:
            for i, p in enumerate(self.nodes):
                if p.poll() is not None:
                    raise RuntimeError(f"supernode {i} exited with {p.returncode}:\n{self.log_tail(f'supernode-{i}')}")
            if all("SuperNode ID" in self.log_text(f"supernode-{i}") for i in range(self.n_nodes)):
                return
            time.sleep(0.2)
        raise RuntimeError(f"not every SuperNode connected within {self.startup_timeout:g} s:\n"
                           + "\n".join(self.log_tail(f"supernode-{i}") for i in range(self.n_nodes)))

    def log_text(self, name: str) -> str:
        """The log of process ``name`` (superlink, supernode-<i>, run) so far."""
        path = self.workdir / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tail(self, name: str, lines: int = 30) -> str:
        """The last ``lines`` lines of that log, headed by its name."""
        return f"--- {name} ---\n" + "\n".join(self.log_text(name).splitlines()[-lines:])

    # ------------------------------------------------------------------ runs
    def run(self, app_dir: str | os.PathLike[str], run_config: Mapping[str, Any] | None = None,
            timeout: float = 900.0, on_line: Callable[[str], None] | None = None) -> RunInfo:
        """``flwr run app_dir`` against this federation with ``run_config``
        overrides, streaming its logs until the run ends (each line to
        ``on_line`` as it comes, all of them to ``logs/run.log``).  Raises
        RuntimeError with the logs' tails if it fails or times out."""
        args = [_bin("flwr"), "run", str(app_dir), "local-tls", "--stream"]
        return flwr_run(args, run_config, env=self.env, cwd=self.workdir, timeout=timeout, on_line=on_line,
                        log=self.workdir / "logs" / "run.log", tail=lambda: self.log_tail("superlink"))

    # ------------------------------------------------------------------ teardown
    def pids(self) -> list:
        """The SuperLink's, the SuperNodes' and any stranger's pids."""
        return [p.pid for p in [self.superlink, *self.nodes, *self.strangers] if p is not None]

    def _tree(self, procs):
        return _tree(procs)

    def kill_node(self, i: int) -> None:
        """SIGKILL SuperNode ``i`` and its ClientApp processes (a lost node)."""
        tree = self._tree([self.nodes[i]])
        self.started |= {q.pid for q in tree}
        for q in tree:
            try:
                q.kill()
            except Exception:           # already gone
                pass
        self.nodes[i].wait(timeout=10)

    def close(self, grace: float = 5.0) -> None:
        """End every process this federation started and their descendants:
        SIGTERM, then SIGKILL after ``grace`` seconds."""
        tree = self._tree([p for p in [*self.nodes, *self.strangers, self.superlink] if p is not None])
        self.started |= {q.pid for q in tree}
        _end(tree, grace)
        for p in [*self.nodes, *self.strangers, self.superlink]:
            if p is not None:
                try:
                    p.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
        for f in self._logs:
            f.close()
        self._logs = []
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc):
        self.close()
        return False


class RunAborted(RuntimeError):
    """``flwr run`` was stopped because something it depends on is gone
    (:func:`flwr_run`'s ``abort``)."""


def flwr_run(args: Sequence[str], run_config: Mapping[str, Any] | None, *, env: Mapping[str, str],
             cwd: str | os.PathLike[str], timeout: float = 900.0, on_line: Callable[[str], None] | None = None,
             log: str | os.PathLike[str] | None = None, tail: Callable[[], str] = lambda: "",
             abort: Callable[[], str | None] | None = None) -> RunInfo:
    """Run ``args`` (a ``flwr run ... --stream`` command) with
    ``--run-config`` items for ``run_config``; each output line goes to
    ``log`` and to ``on_line`` as it comes.  RuntimeError with the output's
    end and ``tail()`` if the run fails (exit status, a traceback or an
    ERROR line) or does not end within ``timeout`` seconds; the process
    never outlives the call.  ``abort``, asked twice a second, returns why
    the run cannot succeed any more (or None): the command is stopped and
    :class:`RunAborted` (a RuntimeError) raised with that reason."""
    import threading
    cmd = list(args)
    for k, v in (run_config or {}).items():
        cmd += ["--run-config", f"{k}={_config_value(v)}"]
    t0 = time.perf_counter()
    lines: list[str] = []
    sink = open(log, "a") if log is not None else None
    proc = subprocess.Popen(cmd, env=dict(env), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")

    def pump():
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if sink is not None:
                sink.write(line)
                sink.flush()
            if on_line is not None:
                try:
                    on_line(line.rstrip("\n"))
                except Exception:        # a display error never fails the run
                    pass
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            why = abort() if abort is not None else None
            if why:
                raise RunAborted(f"flwr run stopped: {why}\n{''.join(lines)[-4000:]}\n" + tail())
            if time.monotonic() > deadline:
                raise RuntimeError(f"flwr run did not finish within {timeout:g} s:\n{''.join(lines)[-4000:]}\n"
                                   + tail())
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if sink is not None:
            sink.close()
    text = "".join(lines)
    run_id = None
    for word in text.replace(",", " ").split():
        if word.isdigit() and len(word) > 8:
            run_id = int(word)
            break
    if proc.returncode != 0 or "Traceback" in text or "ERROR" in text:
        raise RuntimeError(f"flwr run failed (exit {proc.returncode}):\n{text[-4000:]}\n" + tail())
    return RunInfo(run_id, time.perf_counter() - t0, text)


class LocalSimulation:
    """Flower 1.42's simulation runtime on this host, the way Flower
    recommends instead of the deprecated ``flwr.simulation.run_simulation``:
    a SuperLink in simulation mode (``flower-superlink --simulation``) and
    ``flwr run APP <connection> --federation-config "num-supernodes=N ..."``
    (what ``flwr run`` does against a local simulation federation, whose
    ``:local:`` connection starts a shared, detached SuperLink on the fixed
    port 39091 that outlives the command; here the SuperLink, its port,
    state and ``FLWR_HOME`` are the simulation's own and end with it).  The
    SuperLink starts ``flwr-simulation`` per run, which runs the ServerApp
    and the ClientApps on Ray actors, as ``run_simulation`` did in-process.

        with LocalSimulation() as sim:
            sim.run(example_app(), num_supernodes=5, run_config={...})

    Ray is started once per simulation, beside the SuperLink, as a Ray
    cluster of this host (``ray start --head --block``, on ports of its
    own), and every ``flwr-simulation`` joins it through ``RAY_ADDRESS``
    (``ray.init`` connects to the cluster that variable names instead of
    starting one).  Ray's start-up (its GCS, raylet and agents: about half
    of a small run's time) thus overlaps the SuperLink's, the ``flwr`` CLI's
    and ``flwr-simulation``'s, and later runs of the same simulation
    (``flower train``) pay it no more.  ``ray_cpus`` (default: the CPUs this
    process may use) is the cluster's CPU count: with ``cpus_per_node`` it
    sets how many ClientApp actors run at once.  Flower 1.42's simulation
    runtime has no backend other than Ray.

    Ray keeps its session files in a temporary directory of the
    simulation's own (``RAY_TMPDIR``), removed with it.  Ray's FutureWarning
    about accelerator environment variables is answered at its source (``RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0``, the
    behaviour it announces), so runs print no dependency deprecation noise.
    """

    def __init__(self, workdir: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None,
                 startup_timeout: float = 300.0, ray_cpus: int | None = None) -> None:
        if ray_cpus is None:
            ray_cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if isinstance(ray_cpus, bool) or not isinstance(ray_cpus, int) or ray_cpus < 1:
            raise ValueError(f"ray_cpus must be an int >= 1, got {ray_cpus!r}")
        self.ray_cpus = ray_cpus
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="secea-sim-")
            remove_on_exit(self._tmp.name)
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.startup_timeout = float(startup_timeout)
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        self.env = dict(os.environ, FLWR_HOME=str(self.workdir / "flwr-home"), PYTHONUNBUFFERED="1", PATH=path,
                        RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO="0", FLWR_DISABLE_UPDATE_CHECK="1")
        # Ray's session files (sockets, logs; Ray never removes them) in a
        # directory of the simulation's own, short for the sockets' path limit
        # (a Unix socket path has at most 107 bytes: Ray's are ~70 below this
        # directory, so a long TMPDIR gives way to /tmp)
        base = tempfile.gettempdir()
        self.ray_tmp = tempfile.mkdtemp(prefix="secea-ray-", dir=base if len(base) <= 20 else "/tmp")
        remove_on_exit(self.ray_tmp)
        self.env["RAY_TMPDIR"] = self.ray_tmp
        self.env.update(env or {})
        for k in _LEGACY_GRPC_SWITCHES:
            self.env.pop(k, None)
        self.superlink: subprocess.Popen | None = None
        self.ray: subprocess.Popen | None = None
        self.port: int | None = None
        self._log: IO[bytes] | None = None
        self._ray_log: IO[bytes] | None = None
        self._ray_up = False

    def __enter__(self) -> "LocalSimulation":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        """Start the Ray cluster and the SuperLink (together) and wait for the SuperLink."""
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        for f in self.workdir.glob("state.db*"):     # a restarted SuperLink must not resume the lost run
            f.unlink()
        self._start_ray()
        self.port = _free_port()
        self._log = open(self.workdir / "logs" / "superlink.log", "ab")
        self.superlink = subprocess.Popen(
            [_bin("flower-superlink"), "--insecure", "--simulation", "--host", "127.0.0.1", "--port",
             str(self.port), "--database", str(self.workdir / "state.db"),
             "--disable-runtime-dependency-installation"],
            stdout=self._log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True, cwd=self.workdir)
        deadline = time.time() + self.startup_timeout
        while True:
            if self.superlink.poll() is not None:
                raise RuntimeError(f"the simulation SuperLink exited with {self.superlink.returncode}:\n"
                                   + self.log_tail())
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if time.time() > deadline:
                raise RuntimeError(f"the simulation SuperLink did not listen within {self.startup_timeout:g} s")
            time.sleep(0.1)
        home = Path(self.env["FLWR_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(f'[superlink]\ndefault = "sim"\n\n[superlink.sim]\n'
                                          f'address = "127.0.0.1:{self.port}"\ninsecure = true\n')

    def _start_ray(self) -> None:
        """Start this simulation's Ray cluster (``ray start --head
        --block``: it ends every Ray process when it is terminated) and
        point every process started after it at that cluster (``RAY_ADDRESS``).
        Its ports are free ones (the GCS, the Ray Client server and the
        dashboard agent otherwise take fixed defaults other clusters on the
        host may hold); no dashboard, no usage statistics."""
        gcs, client, agent = _free_port(), _free_port(), _free_port()
        self._ray_up = False
        self._ray_log = open(self.workdir / "logs" / "ray.log", "ab")
        self.ray = subprocess.Popen(
            [_bin("ray"), "start", "--head", "--block", "--port", str(gcs), "--num-cpus", str(self.ray_cpus),
             "--include-dashboard", "false", "--disable-usage-stats", "--ray-client-server-port", str(client),
             "--dashboard-agent-listen-port", str(agent)],
            stdout=self._ray_log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True, cwd=self.workdir)
        self.env["RAY_ADDRESS"] = f"127.0.0.1:{gcs}"

    def ray_log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the Ray cluster's start-up log."""
        path = self.workdir / "logs" / "ray.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "--- ray ---\n" + "\n".join(text.splitlines()[-lines:])

    def _wait_ray(self) -> None:
        """Return once the Ray cluster's GCS accepts connections; RuntimeError
        with its log if it exited or did not listen within the start-up
        timeout.  The rest of the cluster (raylet, agents) may still be
        starting: ``ray.init`` in ``flwr-simulation``, which comes after that
        process's own start-up, the App's install and the ClientApp's
        import, waits for it (up to 60 s, Ray's
        ``gcs_server_request_timeout_seconds``)."""
        if self._ray_up:
            return
        assert self.ray is not None
        host, port = self.env["RAY_ADDRESS"].rsplit(":", 1)
        deadline = time.time() + self.startup_timeout
        while True:
            if self.ray.poll() is not None:
                raise RunAborted(f"the simulation's Ray cluster exited with {self.ray.returncode}:\n"
                                 + self.ray_log_tail())
            with socket.socket() as sock:
                if sock.connect_ex((host, int(port))) == 0:
                    break
            if time.time() > deadline:
                raise RuntimeError(f"the simulation's Ray cluster did not listen within {self.startup_timeout:g} s:\n"
                                   + self.ray_log_tail())
            time.sleep(0.1)
        self._ray_up = True

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the SuperLink's log."""
        path = self.workdir / "logs" / "superlink.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "--- superlink ---\n" + "\n".join(text.splitlines()[-lines:])

    def run(self, app_dir: str | os.PathLike[str], num_supernodes: int,
            run_config: Mapping[str, Any] | None = None, *, cpus_per_node: int = 1, timeout: float = 900.0,
            on_line: Callable[[str], None] | None = None) -> RunInfo:
        """``flwr run app_dir`` in the simulation runtime with
        ``num_supernodes`` simulated SuperNodes (``cpus_per_node`` CPUs of
        Ray's each) and ``run_config`` overrides; output lines to
        ``on_line`` and ``logs/run.log``.  RuntimeError if the run fails."""
        if self.superlink is None:
            raise RuntimeError("LocalSimulation.run: use it in a with block (the SuperLink is not started)")
        args = [_bin("flwr"), "run", str(app_dir), "sim", "--stream", "--federation-config",
                f"num-supernodes={int(num_supernodes)} client-resources-num-cpus={int(cpus_per_node)}"]
        for attempt in (1, 2):
            try:
                self._wait_ray()
                return flwr_run(args, run_config, env=self.env, cwd=self.workdir, timeout=timeout, on_line=on_line,
                                log=self.workdir / "logs" / "run.log",
                                tail=lambda: self.log_tail() + "\n" + self.ray_log_tail(), abort=self._ray_lost)
            except RunAborted:
                # Ray gives its raylet 30 s to register (ray/_private/node.py), which a loaded
                # host can miss: a run whose cluster died never ends, so start everything again once
                if attempt == 2:
                    raise
                if on_line is not None:
                    on_line("the simulation's Ray cluster exited (start-up timeout on a loaded host?): "
                            "starting the simulation again")
                self._stop(grace=2.0)
                self._start()
        raise AssertionError("unreachable")

    def _ray_lost(self) -> str | None:
        """Why a run cannot end (the Ray cluster exited), or None."""
        if self.ray is not None and self.ray.poll() is not None:
            return f"the simulation's Ray cluster exited with {self.ray.returncode}"
        return None

    def _stop(self, grace: float = 5.0) -> None:
        # the Ray cluster keeps nothing worth a graceful stop: SIGKILL at once (its raylet's
        # workers die with it), while the SuperLink and its SuperExec get ``grace`` seconds
        _end(_tree([self.ray]) if self.ray is not None else [], 0.0)
        procs = [p for p in (self.superlink, self.ray) if p is not None]
        if procs:
            _end(_tree(procs), grace)
            for p in procs:
                try:
                    p.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
            self.superlink = self.ray = None
        for f in (self._log, self._ray_log):
            if f is not None:
                f.close()
        self._log = self._ray_log = None

    def close(self, grace: float = 5.0) -> None:
        """End the SuperLink and everything beneath it (its SuperExec, the
        ``flwr-simulation`` process) and the Ray cluster, together: SIGTERM,
        SIGKILL after ``grace`` (at once for Ray); then remove Ray's and, if
        the simulation made it, the work directory."""
        self._stop(grace)
        shutil.rmtree(self.ray_tmp, ignore_errors=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False
