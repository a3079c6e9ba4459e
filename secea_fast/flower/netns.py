"""A multi-host rehearsal on one Linux machine: the SuperLink, every
SuperNode and the operator each in a network namespace of its own, with its
own address, joined by a shaped link.

    secea-fast flower netns [--profile lan|wan|none ...] [--protocol secea|secemb ...]
                            [--clients N] [--entities M] [--users U] [--set KEY=VALUE ...]
    python -m secea_fast.flower.netns ...            (the same; needs root and iproute2)

What runs is what a deployment across hosts runs: ``flower-superlink`` with
TLS (a certificate for its address, :func:`~secea_fast.flower.localfed
.make_host_certificates`) and SuperNode authentication (every node's key
registered by the operator with ``flwr supernode register`` before the nodes
start), one ``flower-supernode`` per party with its roster identity, and
``flwr run`` of the demo App (:func:`~secea_fast.flower.localfed
.example_app`) from the operator's namespace.  Only the wire is simulated.

The wire.  Each namespace has one interface, ``eth0``, with an address of
10.213.0.0/24.  Its own egress and its ingress are each limited to the
profile's rate by a token bucket (``tc qdisc tbf``; ingress through an
``ifb`` device), so a party's link is symmetric at that rate and the
SuperLink's link is the federation's bottleneck, as on a real star.  The
kernels this was built on do not have ``netem`` (``CONFIG_NET_SCH_NETEM``
is not set on this machine, nor ``fq``, so neither netem's delay nor
earliest-departure-time pacing is available), so the delay is a delay line
in this process: ``eth0`` is a TAP device whose frames a thread reads,
holds for RTT / 2 and writes to the TAP of the destination (learning
addresses like a bridge; that thread is the bridge).  A round trip between
two parties then takes the profile's RTT.  The TAPs carry TCP segmentation
offload (virtio-net headers), so TCP works with 1,448-byte segments on a
1,500-byte MTU (slow start and its restart after idle as across a real
link) while the delay line handles 64 KiB frames; it forwards about
50-80 MB/s on this machine's cores, which caps the 1 Gbit/s profile (its
table in ``docs/FLOWER.md`` says so).  The namespaces have no other
interface and no route out: every packet stays among them.

Profiles (cross-silo links): ``lan`` 1 Gbit/s, 20 ms RTT; ``wan`` 100
Mbit/s, 50 ms RTT; ``none``: no rate limit and no delay (the same
processes and delay line: the baseline the other two are compared to).

Output per profile and protocol: the round's time (the ServerApp's), its
bytes (frames through the SuperLink's link, both ways, headers included; and
the payload bytes the server counted), its stages, and the network's share
estimated as bytes / bandwidth + stages x RTT, beside the measured
difference to the ``none`` profile when that ran too.  The result is
checked bit for bit (SecEA: :func:`~secea_fast.flower.demo.verify_secea`;
SecEmb: :func:`~secea_fast.flower.demo.verify_secemb`).

Cleanup.  Every name this makes starts with ``sfns<pid>-`` (namespaces,
work directory) or ``sfns<pid>`` (interfaces, 15 characters at most).  At
the end, also on an error, SIGINT, SIGTERM or SIGHUP (``main`` turns them
into an exception), every process in each namespace is ended (``ip netns
pids``: the SuperLink, the SuperNodes and every process they started),
the namespaces are deleted (their TAP and ifb devices with them) and the
work directory is removed.  A run killed with SIGKILL leaves them behind;
the next run removes every ``sfns<pid>-`` namespace and work directory whose
pid is no longer alive (:func:`cleanup_leftovers`).

Length (about 800 lines): the namespaces, the delay line, the federation's
processes, the measurement and the teardown are one lifecycle whose cleanup
must see all of them; split across modules, each part's cleanup would reach
into the others' state.
"""
from __future__ import annotations

import argparse
import fcntl
import heapq
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Any

__all__ = ["Profile", "PROFILES", "PREFIX", "Rehearsal", "RehearsalResult", "DelayLine", "cleanup_leftovers",
           "leftovers", "network_share", "check_host_tools", "results_table", "main"]

PREFIX = "sfns"
SUBNET = "10.213.0"
LINK_PORT = 9093
_NS_RE = re.compile(rf"^{PREFIX}(\d+)-")

TUNSETIFF, TUNSETOFFLOAD = 0x400454CA, 0x400454D0
IFF_TAP, IFF_NO_PI, IFF_VNET_HDR = 0x0002, 0x1000, 0x4000
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6 = 0x01, 0x02, 0x04
VNET_HDR = 10                     # struct virtio_net_hdr, the TAP default: not part of the frame


@dataclass(frozen=True)
class Profile:
    """A link: ``rate_mbit`` (0: unlimited) both ways on every party's
    link, and the round-trip time ``rtt_ms`` between any two parties."""
    name: str
    rate_mbit: float
    rtt_ms: float

    @property
    def bytes_per_s(self) -> float:
        """The rate in bytes per second (inf when unlimited)."""
        return self.rate_mbit * 1e6 / 8 if self.rate_mbit > 0 else float("inf")


PROFILES = {"lan": Profile("lan", 1000.0, 20.0), "wan": Profile("wan", 100.0, 50.0),
            "none": Profile("none", 0.0, 0.0)}


def network_share(wire_bytes: float, stages: int, profile: Profile) -> float:
    """The network's estimated share of a round, in seconds: the bytes
    through the bottleneck link at its rate plus one RTT per stage."""
    return wire_bytes / profile.bytes_per_s + stages * profile.rtt_ms / 1e3


# ------------------------------------------------------------------ host tools
def _run(args: Sequence[str], check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[:300]}")
    return r


def check_host_tools(install: bool = True) -> None:
    """Refuse (RuntimeError, one line) unless this is root on Linux with
    TAP, ``ip`` and ``tc``; installs iproute2 with apt-get when ``ip`` is
    missing and ``install``."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError("the rehearsal needs Linux network namespaces")
    if os.geteuid() != 0:
        raise RuntimeError("the rehearsal needs root (network namespaces, TAP devices, tc)")
    if (shutil.which("ip") is None or shutil.which("tc") is None) and install and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "iproute2"], capture_output=True, timeout=600)
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"the rehearsal needs {tool!r} (iproute2)")
    if not os.path.exists("/dev/net/tun"):
        raise RuntimeError("the rehearsal needs /dev/net/tun (TAP devices)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _namespaces() -> list[str]:
    r = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _ns_pids(ns: str) -> list[int]:
    r = _run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in r.stdout.split() if x.isdigit()]


def _end_namespace(ns: str, grace: float = 5.0) -> None:
    """SIGTERM every process in ``ns``, SIGKILL what is left after
    ``grace`` seconds, then delete the namespace."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        pids = _ns_pids(ns)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + wait
        while pids and time.time() < deadline:
            pids = [p for p in pids if _alive(p) and not _zombie(p)]
            time.sleep(0.1)
    _run(["ip", "netns", "del", ns], check=False)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def leftovers(pid: int | None = None) -> dict[str, list[str]]:
    """What rehearsals left on this host: {"namespaces": [...],
    "workdirs": [...], "processes": [pids in those namespaces as str]} of
    run ``pid`` (default: of every run)."""
    def mine(name: str) -> bool:
        m = _NS_RE.match(name)
        return m is not None and (pid is None or int(m.group(1)) == pid)
    ns = [n for n in _namespaces() if mine(n)]
    tmp = Path(tempfile.gettempdir())
    dirs = [str(p) for p in tmp.glob(f"{PREFIX}*-*") if mine(p.name)]
    procs = [str(p) for n in ns for p in _ns_pids(n)]
    return {"namespaces": ns, "workdirs": dirs, "processes": procs}


def cleanup_leftovers() -> list[str]:
    """Remove every rehearsal namespace (with its processes) and work
    directory whose run's pid is no longer alive; returns what it removed."""
    removed = []
    left = leftovers()
    for name in left["namespaces"] + left["workdirs"]:
        m = _NS_RE.match(Path(name).name)
        if m is None or _alive(int(m.group(1))):
            continue
        if name in left["namespaces"]:
            _end_namespace(name, grace=1.0)
        else:
            shutil.rmtree(name, ignore_errors=True)
        removed.append(name)
    return removed


# ------------------------------------------------------------------ the wire
class DelayLine:
    """The bridge of the rehearsal: a thread that reads every frame the
    TAP devices ``fds`` (port -> fd, opened with a virtio-net header) send,
    learns source addresses, and writes each frame ``delay`` seconds later
    to the port of its destination (every other port for broadcasts and
    unknown destinations).  ``bytes_from[port]`` counts the bytes of the
    frames each port sent (virtio-net headers excluded)."""

    def __init__(self, fds: Mapping[str, int], delay: float) -> None:
        self.fds = dict(fds)
        self.port_of = {fd: p for p, fd in self.fds.items()}
        self.delay = float(delay)
        self.bytes_from = {p: 0 for p in self.fds}
        self.frames = 0
        self.table: dict[bytes, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="netns-delay-line", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        """Start forwarding."""
        self._thread.start()

    def stop(self) -> None:
        """Stop forwarding (frames still held are dropped)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def reset_counters(self) -> None:
        """Zero the byte counters."""
        self.bytes_from = {p: 0 for p in self.fds}
        self.frames = 0

    def _loop(self) -> None:
        queue: list[tuple[float, int, int, bytes]] = []
        seq = 0
        fds = list(self.port_of)
        try:
            while not self._stop.is_set():
                wait = 0.05 if not queue else max(0.0, queue[0][0] - time.monotonic())
                ready, _, _ = select.select(fds, [], [], min(wait, 0.05))
                now = time.monotonic()
                for fd in ready:
                    port = self.port_of[fd]
                    for _ in range(256):
                        try:
                            frame = os.read(fd, 70000)
                        except (BlockingIOError, InterruptedError):
                            break
                        if len(frame) <= VNET_HDR + 14:
                            continue
                        self.bytes_from[port] += len(frame) - VNET_HDR
                        self.frames += 1
                        dst, src = frame[VNET_HDR:VNET_HDR + 6], frame[VNET_HDR + 6:VNET_HDR + 12]
                        self.table[src] = port
                        out = [self.table[dst]] if dst in self.table else [p for p in self.fds if p != port]
                        for p in out:
                            seq += 1
                            heapq.heappush(queue, (now + self.delay, seq, self.fds[p], frame))
                now = time.monotonic()
                while queue and queue[0][0] <= now:
                    _, _, fd, frame = heapq.heappop(queue)
                    try:
                        os.write(fd, frame)
                    except (BlockingIOError, OSError):
                        pass                    # a full queue drops, as a switch does; TCP resends
        except BaseException as exc:            # pragma: no cover - reported by Rehearsal
            self.error = exc


def _open_tap(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI | IFF_VNET_HDR))
        fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)
    except OSError:
        os.close(fd)
        raise
    return fd


# ------------------------------------------------------------------ processes
def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found: install the flower extra (pip install -e '.[flower]')")
    return found


def _config_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def _json_value(text: str, key: str) -> Any:
    """``key`` of the first JSON object in ``text`` that has it (the flwr
    CLI's ``--format json`` output: an object, possibly over several lines,
    after any log lines), or None."""
    start = text.find("{")
    while start != -1:
        try:
            v = json.JSONDecoder().raw_decode(text[start:])[0]
        except ValueError:
            v = None
        if isinstance(v, dict) and v.get(key) is not None:
            return v[key]
        start = text.find("{", start + 1)
    return None


def _node_id(text: str) -> int | None:
    """The ``node-id`` of ``flwr supernode register --format json``'s output."""
    v = _json_value(text, "node-id")
    return None if v is None else int(v)


@dataclass
class RehearsalResult:
    """One round of the rehearsal: ``profile``, ``protocol``,
    ``round_seconds`` (the ServerApp's wall time of the round),
    ``run_seconds`` (``flwr run`` from submission to its end), ``stages``,
    ``payload_bytes`` (down + up the server counted), ``link_bytes``
    (frames through the SuperLink's link, both ways), ``bytes_by_party``
    (frames each party sent), ``verified`` and ``verification`` (the bit
    for bit check), ``summary`` (the ServerApp's summary.json)."""
    profile: Profile
    protocol: str
    round_seconds: float
    run_seconds: float
    stages: int
    payload_bytes: int
    link_bytes: int
    bytes_by_party: dict[str, int]
    verified: bool
    verification: str
    summary: dict[str, Any] = dc_field(default_factory=dict)

    @property
    def network_estimate(self) -> float:
        """bytes / bandwidth + stages x RTT (:func:`network_share`)."""
        return network_share(self.link_bytes, self.stages, self.profile)

    def as_dict(self) -> dict[str, Any]:
        """JSON-serializable."""
        return {"profile": self.profile.name, "rate_mbit": self.profile.rate_mbit, "rtt_ms": self.profile.rtt_ms,
                "protocol": self.protocol, "round_seconds": self.round_seconds, "run_seconds": self.run_seconds,
                "stages": self.stages, "payload_bytes": self.payload_bytes, "link_bytes": self.link_bytes,
                "bytes_by_party": self.bytes_by_party, "network_estimate_seconds": self.network_estimate,
                "verified": self.verified, "verification": self.verification}


class Rehearsal:
    """One federation across network namespaces (see the module docstring).

    ``parties``: the roster, (name, role) per SuperNode in node order;
    ``node_configs``: each node's extra node config (``party-id``, ...);
    ``profile``: the link.  ``with Rehearsal(...) as r: r.run(run_config)``;
    :meth:`close` (also by ``__exit__``) removes everything it made.
    ``federation=False`` sets up only the namespaces and the link
    (:meth:`probe` measures it).  ``keep``: a directory to copy the logs and out-dirs to before the work
    directory goes."""

    def __init__(self, parties: Sequence[tuple[str, str]], node_configs: Sequence[Mapping[str, Any]],
                 profile: Profile, *, startup_timeout: float = 120.0, keep: str | os.PathLike[str] | None = None,
                 log: Any = None, federation: bool = True) -> None:
        if len(parties) != len(node_configs) or not parties:
            raise ValueError("parties and node_configs: one entry per SuperNode, at least one")
        if len(parties) > 200:
            raise ValueError("parties: at most 200 SuperNodes (one /24 subnet)")
        if not isinstance(profile, Profile):
            raise TypeError(f"profile must be a Profile, got {type(profile).__name__}")
        self.parties = [(str(n), str(r)) for n, r in parties]
        self.node_configs = [dict(c) for c in node_configs]
        self.profile = profile
        self.startup_timeout = float(startup_timeout)
        self.keep = Path(keep) if keep else None
        self.log = log or (lambda msg: None)
        self.federation = bool(federation)
        self.pid = os.getpid()
        self.tag = f"{PREFIX}{self.pid}"
        self.roles = ["link", "op"] + [f"n{i}" for i in range(len(self.parties))]
        self.ns = {r: f"{self.tag}-{r}" for r in self.roles}
        self.addr = {r: f"{SUBNET}.{k + 1}" for k, r in enumerate(self.roles)}
        self.fds: dict[str, int] = {}
        self.procs: list[subprocess.Popen] = []
        self.line: DelayLine | None = None
        self.work: Path | None = None
        self.node_ids: list[int] = []
        self.seen_pids: set[int] = set()
        self._logs: list[Any] = []
        self._runs = 0

    # -------------------------------------------------------------- setup
    def __enter__(self) -> "Rehearsal":
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        from ..protocols.common.roster import write_federation
        from .localfed import make_host_certificates
        check_host_tools()
        cleanup_leftovers()
        self.work = Path(tempfile.mkdtemp(prefix=f"{self.tag}-"))
        (self.work / "logs").mkdir()
        self.env = dict(os.environ, FLWR_HOME=str(self.work / "flwr-home"), PYTHONUNBUFFERED="1",
                        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        for k in ("FLWR_INTERNAL_GRPC_CONTROL_API", "FLWR_INTERNAL_GRPC_FLEET_API", "http_proxy", "https_proxy",
                  "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
            self.env.pop(k, None)
        self._network()
        if not self.federation:
            return
        self.certs = make_host_certificates(self.work / "certs", {"superlink": [self.addr["link"], "127.0.0.1",
                                                                                "localhost"]}, days=1)
        files = write_federation(self.work / "roster", self.parties)
        self.roster_file = files.pop("roster")
        for nc, (name, _) in zip(self.node_configs, self.parties):
            nc.update({"roster-file": self.roster_file, "identity-file": files[name]})
        link = f"{self.addr['link']}:{LINK_PORT}"
        home = self.work / "flwr-home"
        home.mkdir()
        (home / "config.toml").write_text(f'[superlink]\ndefault = "rehearsal"\n\n[superlink.rehearsal]\n'
                                          f'address = "{link}"\nroot-certificates = "{self.certs["ca"]["cert"]}"\n')
        self.log(f"SuperLink at {link} in namespace {self.ns['link']}")
        self._start("superlink", "link", [
            _bin("flower-superlink"), "--ssl-ca-certfile", self.certs["ca"]["cert"],
            "--ssl-certfile", self.certs["superlink"]["cert"], "--ssl-keyfile", self.certs["superlink"]["key"],
            "--enable-supernode-auth", "--host", self.addr["link"], "--port", str(LINK_PORT),
            # state in memory: with a database file, a loaded machine made SQLite answer "database is
            # locked" to the Runtime API and the ServerApp failed
            "--disable-runtime-dependency-installation"])
        self._wait_listening("op", self.addr["link"], LINK_PORT, "superlink")
        from .localfed import make_supernode_keys
        node_keys = [make_supernode_keys(self.work / "node-keys", f"supernode-{i}") for i in range(len(self.parties))]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(4) as pool:            # each flwr call is a Python start: overlap them
            self.node_ids = list(pool.map(self._register, [k["public"] for k in node_keys]))
        self.log(f"registered {len(node_keys)} SuperNode keys from the operator's namespace")
        for i, (nc, nk) in enumerate(zip(self.node_configs, node_keys)):
            # the node's sealed state journal (flower.state.save_state) in the rehearsal's directory
            nc = dict(nc, **{"state-dir": str(nc.get("state-dir", self.work / "node-state" / f"n{i}"))})
            self._start(f"supernode-{i}", f"n{i}", [
                _bin("flower-supernode"), "--superlink", link, "--root-certificates", self.certs["ca"]["cert"],
                "--auth-supernode-private-key", nk["private"], "--host", "127.0.0.1", "--port", "9094",
                "--node-config", " ".join(f"{key}={_config_value(v)}" for key, v in nc.items())])
        self._wait_nodes()
        self.log(f"{len(self.parties)} SuperNodes connected through the shaped link")

    def _network(self) -> None:
        prof = self.profile
        for k, role in enumerate(self.roles):
            ns, tap = self.ns[role], f"{self.tag}t{k}"[:15]
            if ns in _namespaces():              # an earlier rehearsal of this process that did not finish
                _end_namespace(ns, grace=1.0)
            _run(["ip", "netns", "add", ns])
            self.fds[role] = _open_tap(tap)
            _run(["ip", "link", "set", tap, "netns", ns])
            for args in (["link", "set", "lo", "up"], ["link", "set", tap, "name", "eth0"],
                         ["link", "set", "eth0", "mtu", "1500", "up"],
                         ["addr", "add", f"{self.addr[role]}/24", "dev", "eth0"]):
                _run(["ip", "-n", ns, *args])
            if prof.rate_mbit > 0:
                burst = max(64 * 1024 + 1500, int(prof.bytes_per_s * 0.004))
                tbf = ["tbf", "rate", f"{prof.rate_mbit:g}mbit", "burst", str(burst), "latency", "200ms"]
                _run(["ip", "-n", ns, "link", "add", "ifb0", "type", "ifb"])
                _run(["ip", "-n", ns, "link", "set", "ifb0", "up"])
                _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", *tbf])
                _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "handle", "ffff:", "ingress"])
                _run(["ip", "netns", "exec", ns, "tc", "filter", "add", "dev", "eth0", "parent", "ffff:",
                      "protocol", "all", "u32", "match", "u32", "0", "0",
                      "action", "mirred", "egress", "redirect", "dev", "ifb0"])
                _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "ifb0", "root", *tbf])
        self.line = DelayLine(self.fds, prof.rtt_ms / 2e3)
        self.line.start()
        self.log(f"{len(self.roles)} namespaces {self.tag}-*, profile {prof.name}: "
                 f"{prof.rate_mbit:g} Mbit/s, {prof.rtt_ms:g} ms RTT")

    def _start(self, name: str, role: str, args: Sequence[str]) -> subprocess.Popen:
        assert self.work is not None
        log = open(self.work / "logs" / f"{name}.log", "wb")
        self._logs.append(log)
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[role], *args], stdout=log, stderr=subprocess.STDOUT,
                             env=self.env, cwd=self.work, start_new_session=True)
        self.procs.append(p)
        return p

    def log_text(self, name: str) -> str:
        """The log of process ``name`` (superlink, supernode-<i>)."""
        path = (self.work or Path("/nonexistent")) / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _in_ns(self, role: str, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.ns[role], *args], capture_output=True, text=True,
                              env=self.env, cwd=self.work, timeout=timeout)

    def _wait_listening(self, role: str, host: str, port: int, name: str) -> None:
        deadline = time.time() + self.startup_timeout
        while time.time() < deadline:
            if self.procs[0].poll() is not None:
                raise RuntimeError(f"{name} exited with {self.procs[0].returncode}: "
                                   + self.log_text(name)[-1500:])
            r = self._in_ns(role, ["bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"], timeout=10)
            if r.returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError(f"{name} did not listen on {host}:{port} within {self.startup_timeout:g} s")

    def _register(self, public_key: str) -> int:
        r = self._in_ns("op", [_bin("flwr"), "supernode", "register", public_key, "rehearsal", "--format", "json"],
                        timeout=self.startup_timeout)
        node_id = _node_id(r.stdout)
        if r.returncode != 0 or node_id is None:
            raise RuntimeError(f"flwr supernode register {public_key} failed (exit {r.returncode}): "
                               f"{(r.stdout + r.stderr)[-800:]}")
        return node_id

    def _wait_nodes(self) -> None:
        deadline = time.time() + self.startup_timeout
        while time.time() < deadline:
            for i, p in enumerate(self.procs[1:]):
                if p.poll() is not None:
                    raise RuntimeError(f"supernode {i} exited with {p.returncode}: "
                                       + self.log_text(f"supernode-{i}")[-1500:])
            if all("SuperNode ID" in self.log_text(f"supernode-{i}") for i in range(len(self.parties))):
                return
            time.sleep(0.3)
        raise RuntimeError(f"not every SuperNode connected within {self.startup_timeout:g} s")

    def probe(self, nbytes: int = 4_000_000, src: str = "n0", dst: str = "link") -> dict[str, float]:
        """Measure the link from namespace ``src`` to ``dst``: the TCP
        connect time (one RTT), the seconds to send ``nbytes`` and receive
        a one-byte answer, and the resulting rate:
        {"rtt_s", "seconds", "bytes_per_s"}."""
        port = 5599
        server = ("import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                  f"s.bind(('{self.addr[dst]}',{port}));s.listen();print('up',flush=True)\n"
                  f"c,_=s.accept();n=0\nwhile n<{int(nbytes)}:\n d=c.recv(1<<20)\n if not d: break\n n+=len(d)\n"
                  "c.sendall(b'k');c.close()")
        client = ("import socket,time,json\nt=time.perf_counter()\n"
                  f"c=socket.create_connection(('{self.addr[dst]}',{port}),timeout=60)\nrtt=time.perf_counter()-t\n"
                  f"t=time.perf_counter();c.sendall(b'x'*{int(nbytes)});c.recv(1)\n"
                  "print(json.dumps({'rtt_s':rtt,'seconds':time.perf_counter()-t}))")
        srv = subprocess.Popen(["ip", "netns", "exec", self.ns[dst], sys.executable, "-c", server],
                               stdout=subprocess.PIPE, text=True)
        try:
            assert srv.stdout is not None
            srv.stdout.readline()
            r = self._in_ns(src, [sys.executable, "-c", client], timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"link probe failed: {r.stderr.strip()[-300:]}")
            out = json.loads(r.stdout.strip().splitlines()[-1])
        finally:
            srv.kill()
            srv.wait()
        out["bytes_per_s"] = nbytes / out["seconds"]
        return out

    # -------------------------------------------------------------- a round
    def run(self, protocol: str, run_config: Mapping[str, Any], timeout: float = 1800.0) -> RehearsalResult:
        """``flwr run`` of the demo App from the operator's namespace with
        ``run_config`` (``protocol`` and ``out-dir`` are set here) and its
        result, checked against the in-process computation."""
        from . import demo
        from .localfed import example_app
        assert self.work is not None and self.line is not None
        if protocol not in ("secea", "secemb"):
            raise ValueError(f"protocol must be secea or secemb, got {protocol!r}")
        self._runs += 1
        out = self.work / f"out-{self._runs}-{protocol}"
        rc = dict(run_config, protocol=protocol, **{"out-dir": str(out), "roster-file": self.roster_file})
        args = [_bin("flwr"), "run", str(example_app()), "rehearsal", "--format", "json"]
        for k, v in rc.items():
            args += ["--run-config", f"{k}={_config_value(v)}"]
        self.line.reset_counters()
        t0 = time.perf_counter()
        # submit, then follow the run's status: `flwr run --stream` can end with the log stream
        # before the run does when the machine is loaded
        r = self._in_ns("op", args, timeout=self.startup_timeout)
        run_id = _json_value(r.stdout, "run-id")
        if r.returncode != 0 or run_id is None:
            raise RuntimeError(f"flwr run did not start a run (exit {r.returncode}): {(r.stdout + r.stderr)[-600:]}")
        status = ""
        while not status.startswith("finished"):
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"run {run_id} did not finish within {timeout:g} s (status {status!r})")
            time.sleep(3.0)
            ls = self._in_ns("op", [_bin("flwr"), "list", "rehearsal", "--run-id", str(run_id), "--format", "json"],
                             timeout=self.startup_timeout)
            runs = _json_value(ls.stdout, "runs") or []
            status = str(runs[0].get("status", "")) if runs and isinstance(runs[0], dict) else status
        run_s = time.perf_counter() - t0
        self._note_pids()
        logs = self._in_ns("op", [_bin("flwr"), "log", str(run_id), "rehearsal", "--show"], timeout=120)
        text = f"status {status}\n" + logs.stdout + logs.stderr
        (self.work / "logs" / f"run-{self._runs}.log").write_text(text)
        if self.line.error is not None:
            raise RuntimeError(f"the delay line failed: {self.line.error!r}")
        summary_path = out / "summary.json"
        if status != "finished:completed" or not summary_path.exists():
            tail = "\n".join(text.splitlines()[-15:])
            raise RuntimeError(f"run {run_id} ended {status} without summary.json:\n{tail}")
        summary = json.loads(summary_path.read_text())
        verify = demo.verify_secea if protocol == "secea" else demo.verify_secemb
        cfg = {k: v for k, v in rc.items() if k in (demo.DEFAULTS if protocol == "secea" else demo.SECEMB_DEFAULTS)}
        ok, why = verify(out, cfg)
        by_party = dict(self.line.bytes_from)
        link_bytes = sum(by_party.values())       # a star: every frame goes to or from the SuperLink
        stages = summary["stages"]
        return RehearsalResult(
            profile=self.profile, protocol=protocol, round_seconds=float(summary["wall_seconds"]), run_seconds=run_s,
            stages=len(stages), payload_bytes=int(sum(s["bytes_down"] + s["bytes_up"] for s in stages)),
            link_bytes=int(link_bytes), bytes_by_party=by_party, verified=ok, verification=why, summary=summary)

    def _note_pids(self) -> None:
        for ns in self.ns.values():
            self.seen_pids.update(_ns_pids(ns))

    # -------------------------------------------------------------- teardown
    def close(self) -> None:
        """End every process in the rehearsal's namespaces, delete the
        namespaces (and their devices), stop the delay line, remove the
        work directory (after copying logs and out-dirs to ``keep``)."""
        try:
            self._note_pids()
        except Exception:                       # pragma: no cover - best effort
            pass
        for ns in list(self.ns.values()):
            if ns in _namespaces():
                _end_namespace(ns)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:   # pragma: no cover - the namespace's SIGKILL covers it
                p.kill()
        if self.line is not None:
            self.line.stop()
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}
        for f in self._logs:
            f.close()
        self._logs = []
        if self.work is not None and self.work.exists():
            if self.keep is not None:
                shutil.copytree(self.work, self.keep / self.work.name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.key", "*.identity.json", "state.db*"))
            shutil.rmtree(self.work, ignore_errors=True)


# ------------------------------------------------------------------ the command
def results_table(results: Sequence[RehearsalResult]) -> str:
    """The rehearsal's table: per profile and protocol, round time, bytes
    through the SuperLink's link, stages, the estimated network share (and
    its fraction of the round), the measured difference to the ``none``
    profile when it ran, and the check."""
    base = {r.protocol: r.round_seconds for r in results if r.profile.name == "none"}
    rows = [("profile", "protocol", "round-s", "link MB", "payload MB", "stages", "net est-s", "est/round",
             "vs none-s", "check")]
    for r in results:
        diff = f"{r.round_seconds - base[r.protocol]:+.1f}" if r.protocol in base and r.profile.name != "none" else ""
        rows.append((f"{r.profile.name} ({r.profile.rate_mbit:g} Mbit/s, {r.profile.rtt_ms:g} ms)"
                     if r.profile.rate_mbit else r.profile.name, r.protocol, f"{r.round_seconds:.1f}",
                     f"{r.link_bytes / 1e6:.1f}", f"{r.payload_bytes / 1e6:.1f}", str(r.stages),
                     f"{r.network_estimate:.1f}", f"{r.network_estimate / r.round_seconds:.0%}", diff,
                     "bit-exact" if r.verified else "FAIL"))
    w = [max(len(x[i]) for x in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i]) for i, c in enumerate(x)) for x in rows)


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        k, eq, v = it.partition("=")
        if not eq or not k:
            raise ValueError(f"--set: expected KEY=VALUE, got {it!r}")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


class _Stop(Exception):
    pass


def _on_signal(signum: int, frame: Any) -> None:
    raise _Stop(f"signal {signal.Signals(signum).name}")


def main(argv: Sequence[str] | None = None) -> int:
    """``secea-fast flower netns``: the exit status (0 every round bit-exact,
    1 a round failed or differs, 2 a bad option or a host without root /
    iproute2)."""
    p = argparse.ArgumentParser(prog="secea-fast flower netns",
                                description="A SecEA / SecEmb round across network namespaces (one per party) "
                                            "joined by a shaped link; needs root and iproute2.")
    p.add_argument("--profile", action="append", choices=sorted(PROFILES),
                   help="link profile (repeatable; default: none lan wan)")
    p.add_argument("--protocol", action="append", choices=("secea", "secemb"),
                   help="round to run on each profile (repeatable; default: secea secemb)")
    p.add_argument("--clients", type=int, default=5, help="SecEA clients (default 5)")
    p.add_argument("--entities", type=int, default=2000, help="SecEA's M (default 2000)")
    p.add_argument("--users", type=int, default=5, help="SecEmb users (default 5)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="more run config of the demo App (e.g. workload=movielens-1m stage-bytes=134217728)")
    p.add_argument("--attempts", type=int, default=1,
                   help="tries per round (a failed attempt is reported and fails the verdict; default 1)")
    p.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="give up a round that has not finished after this long (default 1800; the "
                        "MovieLens-1M shape needs more on a loaded machine)")
    p.add_argument("--json", metavar="FILE", help="write every round's result as JSON")
    p.add_argument("--keep", metavar="DIR", help="copy logs and out-dirs here (no private keys)")
    p.add_argument("--quiet", action="store_true", help="print only the table and the verdict")
    args = p.parse_args(None if argv is None else list(argv))
    for opt, v, lo in (("--clients", args.clients, 3), ("--entities", args.entities, 1), ("--users", args.users, 2),
                       ("--attempts", args.attempts, 1)):
        if v < lo:
            p.error(f"{opt} must be >= {lo}, got {v}")
    if not args.timeout > 0:
        p.error(f"--timeout must be > 0 seconds, got {args.timeout:g}")
    try:
        extra = _parse_set(args.set)
        check_host_tools()
    except (ValueError, RuntimeError) as exc:
        p.error(str(exc))
    if args.json:
        try:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).touch()
        except OSError as exc:
            p.error(f"--json: {exc}")
    log = (lambda msg: None) if args.quiet else (lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}",
                                                                     flush=True))
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    results: list[RehearsalResult] = []
    failures: list[str] = []
    try:
        for prof in args.profile or ["none", "lan", "wan"]:
            for protocol in args.protocol or ["secea", "secemb"]:
                if protocol == "secea":
                    parties = [(f"client-{i}", "client") for i in range(args.clients)]
                    ncs: list[dict[str, Any]] = [{"party-id": i} for i in range(args.clients)]
                    rc = dict({"entities": args.entities, "num-clients": args.clients}, **extra)
                else:
                    parties = [("server1", "server1")] + [(f"user-{u}", "user") for u in range(args.users)]
                    ncs = [{} for _ in parties]
                    rc = dict({"users": args.users}, **extra)
                res = None
                for attempt in range(1, args.attempts + 1):
                    try:
                        with Rehearsal(parties, [dict(c) for c in ncs], PROFILES[prof], keep=args.keep,
                                       log=log) as reh:
                            log(f"{protocol} round, profile {prof} (attempt {attempt}) ...")
                            res = reh.run(protocol, rc, timeout=args.timeout)
                        break
                    except RuntimeError as exc:     # the next attempt / round still runs; the verdict fails
                        print(f"FAIL: {protocol} on {prof}, attempt {attempt}: {exc}", file=sys.stderr)
                        failures.append(f"{protocol} on {prof}, attempt {attempt}: {str(exc).splitlines()[0]}")
                if res is None:
                    continue
                results.append(res)
                log(f"{protocol} on {prof}: round {res.round_seconds:.1f} s, {res.link_bytes / 1e6:.1f} MB "
                    f"through the SuperLink's link, {res.verification}")
    except _Stop as exc:
        print(f"stopped by {exc}: every namespace and process of the rehearsal was removed", file=sys.stderr)
        if results:                      # the rounds that finished are kept
            print(results_table(results))
            if args.json:
                Path(args.json).write_text(json.dumps([r.as_dict() for r in results], indent=1))
                print(f"wrote the {len(results)} finished round(s) to {args.json}", file=sys.stderr)
        return 130
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    print(results_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in results], indent=1))
    ok = all(r.verified for r in results) and len(results) == len(args.profile or PROFILES) * len(
        args.protocol or ("secea", "secemb"))
    for f in failures:
        print(f"failed: {f}")
    print(f"{'PASS' if ok else 'FAIL'}: {len(results)} round(s) across network namespaces completed, "
          f"{sum(r.verified for r in results)} bit-exact, {len(failures)} failed attempt(s)")
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
