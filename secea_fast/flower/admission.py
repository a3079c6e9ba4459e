"""Which Flower node is which roster party: the admission challenge every
runner's first stage carries, and the node side's identity files.

Flower names nodes by the ids its SuperLink assigns; the protocols name
parties by the roster (:mod:`secea_fast.protocols.common.roster`).  The
runner sends every connected node a fresh 32-byte challenge (field
``challenge``); a node answers with its roster name, role and its Ed25519
signature of (challenge, its node id, the message type) in its reply's
fields ``name``, ``role`` and ``admission`` (:func:`admission_claim`).  The
runner keeps exactly the roster's parties of the roles it needs
(:func:`admit`): it refuses to go on (:class:`AdmissionError`, naming the
node or the party) when a connected node does not prove a roster identity
(a stranger), when two nodes claim one party, or when a party is missing.

The challenge rides on the first protocol stage where that stage can be
sent identically to every connected node before the runner knows which
node is which (SecEA's ``keys``: public parameters and the roster's client
names only), so admission costs no stage of its own; :func:`identify_nodes`
is the stand-alone ``hello`` stage for a runner that needs the mapping to
build its first stage (SecEmb: its first stage carries server 1's key,
which server 1 announces in the ``hello`` stage).  The checks are the same
either way.

This is the transport's half of admission; the other half is Flower's own
SuperNode authentication (``flower-superlink --enable-supernode-auth``,
``flwr supernode register``), which keeps a stranger from connecting at all
(``docs/FLOWER.md``).  The protocol sessions authenticate every key they
rely on against the same roster, so a server that lies about the mapping
gains nothing: a party's signed keys name the party, not the node.

A node finds its identity in its node config: ``roster-file`` (the
federation's public roster) and ``identity-file`` (its own private key),
or in the simulation engine, ``roster-dir`` of the run config with the
files :func:`~secea_fast.protocols.common.roster.write_federation` wrote.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..protocols.common.roster import AuthenticationError, Identity, Roster
from .records import Exchange, StageResult

__all__ = ["AdmissionError", "NodeIdentity", "node_identity", "hello_reply", "identify_nodes", "HELLO",
           "CHALLENGE", "new_challenge", "admission_claim", "admit", "strip_claim"]

HELLO = "hello"
CHALLENGE = "challenge"          # the stage config field carrying the admission challenge
_PURPOSE = "flower.hello"
_CLAIM = ("name", "role", "admission")      # the reply fields of a node's answer to the challenge


class AdmissionError(RuntimeError):
    """The connected nodes are not exactly the roster's parties."""


@dataclass
class NodeIdentity:
    """A node's roster, its own identity and its role in the roster."""
    roster: Roster
    identity: Identity

    @property
    def name(self) -> str:
        return self.identity.name

    @property
    def role(self) -> str:
        return self.roster.role(self.identity.name)


_CACHE: dict[tuple[str, str], NodeIdentity] = {}


def load_identity(roster_file: str | os.PathLike[str], identity_file: str | os.PathLike[str]) -> NodeIdentity:
    """The roster and identity in these files; ValueError naming a file if
    they do not load, or if the identity is not the roster's key of its name."""
    key = (str(roster_file), str(identity_file))
    if key not in _CACHE:
        roster, ident = Roster.load(roster_file), Identity.load(identity_file)
        if ident.name not in roster:
            raise ValueError(f"identity file {identity_file}: party {ident.name!r} is not in the roster "
                             f"{roster_file}")
        if roster.entries[ident.name].public != ident.public_bytes:
            raise ValueError(f"identity file {identity_file}: its key is not the roster's key of "
                             f"{ident.name!r} ({roster_file})")
        _CACHE[key] = NodeIdentity(roster, ident)
    return _CACHE[key]


def node_identity(node_config: Mapping[str, Any], run_config: Mapping[str, Any] | None = None,
                  default_name: str | None = None) -> NodeIdentity:
    """A node's :class:`NodeIdentity` from its node config (``roster-file``,
    ``identity-file``) or, in the simulation engine only (a node config of
    ``partition-id`` and ``num-partitions``), from the run config's
    ``roster-dir`` and ``default_name`` (the party the partition plays).
    ValueError naming the missing key otherwise."""
    if "identity-file" in node_config or "roster-file" in node_config:
        for k in ("roster-file", "identity-file"):
            if k not in node_config:
                raise ValueError(f"node config: {k!r} is missing (both roster-file and identity-file are needed)")
        return load_identity(str(node_config["roster-file"]), str(node_config["identity-file"]))
    rdir = (run_config or {}).get("roster-dir")
    # the run config is the server's: it may name the roster only to the simulation engine's
    # nodes (whose node config is Flower's partition-id and num-partitions), never to a deployed
    # node, whose trust anchor comes from its own node config
    simulated = "partition-id" in node_config and "num-partitions" in node_config
    if rdir and default_name is not None and simulated:
        return load_identity(os.path.join(str(rdir), "roster.json"),
                             os.path.join(str(rdir), f"{default_name}.identity.json"))
    raise ValueError("node config: 'roster-file' and 'identity-file' are missing: start the SuperNode with "
                     "--node-config \"roster-file='...' identity-file='...'\" (secea-fast writes them with "
                     "secea_fast.protocols.common.roster.write_federation)")


def new_challenge() -> bytes:
    """A fresh 32-byte admission challenge (``secrets.token_bytes``)."""
    import secrets
    return secrets.token_bytes(32)


def admission_claim(cfg: Mapping[str, Any], me: NodeIdentity, node_id: int, message_type: str) -> dict[str, Any]:
    """A node's answer to the admission challenge in ``cfg`` (field
    ``challenge``), whatever the stage: the reply fields ``name``, ``role``
    and ``admission`` (its roster signature of the challenge bound to its
    node id and the message type).  ValueError naming the field if the
    challenge is not 32 bytes."""
    challenge = cfg.get(CHALLENGE)
    if not isinstance(challenge, bytes) or len(challenge) != 32:
        raise ValueError(f"admission: field {CHALLENGE!r} must be 32 bytes")
    sig = me.roster.sign(me.identity, _PURPOSE, challenge, int(node_id), message_type)
    return {"name": me.name, "role": me.role, "admission": sig}


def hello_reply(cfg: Mapping[str, Any], me: NodeIdentity, node_id: int, message_type: str) -> tuple[dict, list]:
    """A node's answer to the stand-alone ``hello`` stage: the stage name
    and :func:`admission_claim`; no message parts."""
    return dict(admission_claim(cfg, me, node_id, message_type), stage=HELLO), []


def admit(result: StageResult, roster: Roster, nodes: Iterable[int], challenge: bytes, message_type: str, *,
          roles: Sequence[str] | None = None) -> dict[int, str]:
    """Node id -> roster name from the replies to a stage that carried
    ``challenge`` to every node of ``nodes`` (the ``hello`` stage, or a
    first protocol stage with the challenge folded in).  Every roster party
    of ``roles`` (all roles if None) must answer exactly once with a valid
    :func:`admission_claim` and no other node may be connected; else
    AdmissionError naming the nodes and parties."""
    nodes = sorted(int(x) for x in nodes)
    want = set(roster.names()) if roles is None else {n for n in roster.names() if roster.role(n) in roles}
    names: dict[int, str] = {}
    problems = []
    for x in nodes:
        if x in result.failed or x not in result.replies:
            problems.append(f"node {x} did not answer the admission challenge "
                            f"({result.failed.get(x, 'no reply')})")
            continue
        rcfg, _ = result.replies[x]
        name = rcfg.get("name") if isinstance(rcfg, Mapping) else None
        sig = rcfg.get("admission") if isinstance(rcfg, Mapping) else None
        try:
            if not isinstance(name, str) or not isinstance(sig, bytes):
                raise AuthenticationError("no roster name and signature")
            roster.verify(name, sig, _PURPOSE, challenge, x, message_type)
        except AuthenticationError as exc:
            problems.append(f"node {x} is not a roster party: {exc}")
            continue
        if name not in want:
            problems.append(f"node {x} is roster party {name!r} of role {roster.role(name)!r}, "
                            "which this protocol does not take")
        elif name in names.values():
            problems.append(f"node {x} claims party {name!r}, which another node already proved")
        else:
            names[x] = name
    missing = sorted(want - set(names.values()))
    if missing:
        problems.append(f"roster part{'ies' if len(missing) > 1 else 'y'} {', '.join(missing)} "
                        f"{'are' if len(missing) > 1 else 'is'} not connected")
    if problems:
        raise AdmissionError("refusing to start: " + "; ".join(problems))
    return names


def strip_claim(rcfg: Mapping[str, Any]) -> dict[str, Any]:
    """A reply's fields without the admission claim (what the protocol reads)."""
    return {k: v for k, v in rcfg.items() if k not in _CLAIM}


def identify_nodes(exchange: Exchange, roster: Roster, nodes: Iterable[int], message_type: str, *,
                   roles: Sequence[str] | None = None, extra: Mapping[str, Any] | None = None
                   ) -> tuple[dict[int, str], StageResult]:
    """Run the stand-alone ``hello`` stage with ``nodes`` over ``exchange``
    (as :func:`secea_fast.flower.records.grid_exchange`) and return (node id
    -> party name, the stage's result), as :func:`admit` checks it."""
    nodes = sorted(int(x) for x in nodes)
    challenge = new_challenge()
    cfg = dict(extra or {}, stage=HELLO, challenge=challenge)
    r = exchange({x: (dict(cfg), []) for x in nodes})
    return admit(r, roster, nodes, challenge, message_type, roles=roles), r
