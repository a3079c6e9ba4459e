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

Every process the federation starts is ended by ``__exit__`` (SIGTERM to
its process group, SIGKILL after a grace period), also when the body
raised; ``kill_node(i)`` kills one SuperNode mid-run (dropout tests).
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any
from pathlib import Path

__all__ = ["LocalFederation", "RunInfo", "example_app", "train_app", "make_certificates"]


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


def make_certificates(directory: str | os.PathLike[str]) -> dict[str, str]:
    """A CA and a server certificate for 127.0.0.1 / localhost in
    ``directory``: {"ca": path, "cert": path, "key": path}."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secea_fast local federation CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    out = {"ca": d / "ca.crt", "cert": d / "server.pem", "key": d / "server.key"}
    out["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.TraditionalOpenSSL,
                                             serialization.NoEncryption()))
    os.chmod(out["key"], 0o600)
    return {k: str(v) for k, v in out.items()}


def _config_value(v) -> str:
    """A node-config / run-config value in the TOML form flwr parses."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


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
    node's config gets its ``roster-file`` and ``identity-file``, and
    :attr:`roster_file` is the path the ServerApp's run config names."""

    def __init__(self, n_nodes: int, *, node_configs: Sequence[Mapping[str, Any]] | None = None,
                 workdir: str | os.PathLike[str] | None = None, tls: bool = True, env: Mapping[str, str] | None = None,
                 startup_timeout: float = 60.0, roster: Sequence[tuple[str, str]] | None = None) -> None:
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
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.tls = bool(tls)
        self.startup_timeout = float(startup_timeout)
        self.env = dict(os.environ)
        # Flower's processes start others by name (flower-superexec, flwr-serverapp,
        # flwr-clientapp): this environment's scripts come first on PATH
        path = os.pathsep.join([str(Path(sys.executable).parent), self.env.get("PATH", "")])
        self.env.update({"FLWR_HOME": str(self.workdir / "flwr-home"), "PYTHONUNBUFFERED": "1",
                         "PATH": path})
        self.env.update(env or {})
        self.superlink = None
        self.nodes: list[subprocess.Popen] = []
        self._logs: list[IO[bytes]] = []
        self.port = None
        self.certs = None
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
                nc.update({"roster-file": self.roster_file, "identity-file": files[name]})
        self.port = _free_port()
        tls_link, tls_node = (["--insecure"], ["--insecure"])
        if self.tls:
            self.certs = make_certificates(self.workdir / "certs")
            tls_link = ["--ssl-ca-certfile", self.certs["ca"], "--ssl-certfile", self.certs["cert"],
                        "--ssl-keyfile", self.certs["key"]]
            tls_node = ["--root-certificates", self.certs["ca"]]
        self.superlink = self._start("superlink", [
            _bin("flower-superlink"), *tls_link, "--host", "127.0.0.1", "--port", str(self.port),
            "--database", str(self.workdir / "state.db"), "--disable-runtime-dependency-installation"])
        self._wait_port(self.port, self.superlink, "superlink")
        for i, nc in enumerate(self.node_configs):
            args = [_bin("flower-supernode"), *tls_node, "--superlink", f"127.0.0.1:{self.port}",
                    "--host", "127.0.0.1", "--port", str(_free_port())]
            if nc:
                args += ["--node-config", " ".join(f"{k}={_config_value(v)}" for k, v in nc.items())]
            self.nodes.append(self._start(f"supernode-{i}", args))
        self._write_cli_config()
        self._wait_nodes()

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
            timeout: float = 900.0) -> RunInfo:
        """``flwr run app_dir`` against this federation with ``run_config``
        overrides, streaming its logs until the run ends.  Raises
        RuntimeError with the logs' tails if it fails or times out."""
        args = [_bin("flwr"), "run", str(app_dir), "local-tls", "--stream"]
        for k, v in (run_config or {}).items():
            args += ["--run-config", f"{k}={_config_value(v)}"]
        t0 = time.perf_counter()
        try:
            out = subprocess.run(args, env=self.env, cwd=self.workdir, capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            # bytes even with text=True (the subprocess docs: TimeoutExpired.output)
            partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
            raise RuntimeError(f"flwr run did not finish within {timeout:g} s:\n{partial}\n"
                               + self.log_tail("superlink")) from None
        seconds = time.perf_counter() - t0
        text = out.stdout + out.stderr
        run_id = None
        for word in text.replace(",", " ").split():
            if word.isdigit() and len(word) > 8:
                run_id = int(word)
                break
        if out.returncode != 0 or "Traceback" in text or "ERROR" in text:
            raise RuntimeError(f"flwr run failed (exit {out.returncode}):\n{text[-4000:]}\n"
                               + self.log_tail("superlink"))
        return RunInfo(run_id, seconds, text)

    # ------------------------------------------------------------------ teardown
    def pids(self) -> list:
        """The SuperLink's and the SuperNodes' pids."""
        return [p.pid for p in [self.superlink, *self.nodes] if p is not None]

    def _tree(self, procs):
        """The processes and all their descendants (Flower starts its
        SuperExec in a session of its own, so process groups are not enough)."""
        import psutil
        out = []
        for p in procs:
            try:
                root = psutil.Process(p.pid)
                out += [root] + root.children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        return out

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
        import psutil
        tree = self._tree([p for p in [*self.nodes, self.superlink] if p is not None])
        self.started |= {q.pid for q in tree}
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
        for p in [*self.nodes, self.superlink]:
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
