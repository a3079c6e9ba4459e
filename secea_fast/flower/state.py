"""A ClientApp's state between the stages of a deployment.

Flower 1.42 hands each ClientApp process the node's ``context`` and takes it
back only after the process has pushed its reply
(``flwr.supernode.runtime.run_clientapp``: the reply in the ``finally``
block, the context in the exit handler, with one try), so the next stage's
message can start a ClientApp that sees the context of the stage before
(observed on a loaded host in a MovieLens-1M-shape rehearsal: "step 7 after
step 5: refused").  :func:`save_state` therefore also journals the state,
sealed, in a node-local file written before the reply leaves; both copies
carry a version and :func:`load_state` returns the newer.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from flwr.app import Array, ArrayRecord, Context

from .admission import NodeIdentity
from .records import BYTES_STYPE

__all__ = ["load_state", "save_state", "STATE_PURPOSE"]

STATE_PURPOSE = "secea_fast.flower.state-key"
_VERSION = "version"


def _state_dir(context: Context) -> Path:
    nc = context.node_config
    if "state-dir" in nc:
        d = Path(str(nc["state-dir"]))
    else:
        d = Path(tempfile.gettempdir()) / f"secea_fast-state-{os.getuid() if hasattr(os, 'getuid') else 0}"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"node config 'state-dir': cannot create {d}: {e.strerror}") from None
    return d


def _journal(context: Context, key: str, me: NodeIdentity) -> tuple[Path, bytes, bytes]:
    """The journal file of ``key`` on this node in this run, its AES-256-GCM
    key and associated data.  The key is derived from the node's deterministic
    Ed25519 signature over (purpose, run, node, key): only the holder of the
    node's identity can compute it, and it is never sent."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    run, node = int(context.run_id), int(context.node_id)
    sig = me.roster.sign(me.identity, STATE_PURPOSE, run, node, key)
    aead_key = HKDF(hashes.SHA256(), 32, None, STATE_PURPOSE.encode()).derive(sig)
    ad = b"|".join([STATE_PURPOSE.encode(), str(run).encode(), str(node).encode(), key.encode()])
    name = hashlib.sha256(ad).hexdigest()[:32]
    return _state_dir(context) / f"{name}.state", aead_key, ad


def _read_journal(path: Path, aead_key: bytes, ad: bytes) -> tuple[int, bytes] | None:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValueError(f"state journal {path}: {e.strerror}") from None
    if len(raw) < 8 + 12 + 16:
        raise ValueError(f"state journal {path}: truncated ({len(raw)} bytes)")
    version = int.from_bytes(raw[:8], "little")
    try:
        data = AESGCM(aead_key).decrypt(raw[8:20], raw[20:], ad + raw[:8])
    except InvalidTag:
        raise ValueError(f"state journal {path}: does not authenticate under this node's identity "
                         "(written by another node or altered)") from None
    return version, data


def _journal_version(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return int.from_bytes(f.read(8), "little")
    except FileNotFoundError:
        return 0


def _write_journal(path: Path, aead_key: bytes, ad: bytes, version: int, data: bytes) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    head = version.to_bytes(8, "little")
    nonce = os.urandom(12)
    blob = head + nonce + AESGCM(aead_key).encrypt(nonce, bytes(data), ad + head)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)          # atomic: a reader sees the old or the new journal
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _context_state(context: Context, key: str) -> tuple[int, bytes] | None:
    if key not in context.state:
        return None
    rec = context.state[key]
    if "state" not in rec:
        return None
    arr = rec["state"]
    if not isinstance(arr, Array):
        raise TypeError(f"context.state[{key!r}]['state'] is a {type(arr).__name__}, not the "
                        "Array save_state writes")
    v = rec[_VERSION] if _VERSION in rec else None
    return (int.from_bytes(v.data, "little") if isinstance(v, Array) else 0), arr.data


def _newest(context: Context, key: str, me: NodeIdentity | None) -> tuple[int, bytes] | None:
    found = [_context_state(context, key)]
    if me is not None:
        found.append(_read_journal(*_journal(context, key, me)))
    have = [f for f in found if f is not None]
    return max(have, key=lambda f: f[0]) if have else None


def load_state(context: Context, key: str, me: NodeIdentity | None = None) -> bytes | None:
    """The bytes a protocol last saved on this node under ``key`` (None if
    nothing was saved): the newer of ``context.state[key]`` (Flower keeps it
    in the SuperNode and hands it to each ClientApp process of the run; it is
    never sent to the SuperLink) and, given the node's roster identity ``me``,
    its sealed journal (see :func:`save_state`).  ValueError naming the
    journal file if it exists but does not authenticate."""
    found = _newest(context, key, me)
    return None if found is None else found[1]


def save_state(context: Context, key: str, data: bytes, me: NodeIdentity | None = None) -> None:
    """Save ``data`` on this node under ``key``, one version above the newest
    saved: in ``context.state`` and, given the node's roster identity ``me``,
    in a journal file sealed with AES-256-GCM under a key only ``me`` can
    derive, written (atomically, fsync'd, mode 0600) before this returns, so
    before the ClientApp's reply leaves.  The journal lives in the node
    config's ``state-dir`` (default: a per-user directory under the temporary
    directory, mode 0700); a journal is replaced at each stage of its run."""
    old = _context_state(context, key)
    version = max(old[0] if old is not None else 0,
                  _journal_version(_journal(context, key, me)[0]) if me is not None else 0) + 1
    v = version.to_bytes(8, "little")
    context.state[key] = ArrayRecord({"state": Array("uint8", (len(data),), BYTES_STYPE, bytes(data)),
                                      _VERSION: Array("uint8", (8,), BYTES_STYPE, v)})
    if me is not None:
        _write_journal(*_journal(context, key, me), version, data)
