"""The hook points through which an encryption step composes into SecEA's
sessions (:mod:`secea_fast.protocols.secea.session`), and plain SecEA as
the default :class:`Layer`.

The sessions own the stage machine and every rule (order, replay, the
restart/difference rule, answer-once, decode checking, bad-node dropping);
a layer supplies only what differs between SecEA and a variant that moves
its responses under another encryption, such as SecEA-PHE (Tang, Zhu, Li,
Sun 2022, "Secure Embedding Aggregation for Federated Representation
Learning", Sec. III-B; :mod:`secea_fast.protocols.secea_phe.layer`):

* the parties (:meth:`Layer.client`, :meth:`Layer.server`) whose
  ``answer`` / ``noise`` / ``decode`` the sessions call;
* public fields added to every stage (:meth:`Layer.stage_fields`), which a
  client checks against its own settings (:meth:`Layer.check_fields`);
* key material announced in the ``keys`` stage beside the X25519 key
  (:meth:`Layer.key_material`), checked by the server and by every client
  before use (:meth:`Layer.check_key_material`, :meth:`Layer.set_peer_material`);
* how a step's blob is parsed (:meth:`Layer.parse`), which messages are
  responses (:meth:`Layer.is_response`) and whether a response fits its
  block (:meth:`Layer.response_fits`);
* the shape of a client's decoded totals (:meth:`Layer.totals`) and the
  layer's own secret state (:meth:`Layer.export_state`).

Every method that checks something raises ValueError (or TypeError); the
session turns it into its ``ProtocolError`` naming the sender.  Plain SecEA
adds no field, no key material and no state: its sessions' bytes are the
same with or without the default layer.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..common.roster import Identity, Roster
from .messages import Message
from .params import SecEAParams
from .parties import Client, Server

__all__ = ["Layer", "kind_of"]

# the message kinds by their wire code (messages._KINDS)
_KIND_OF = {1: "psu", 2: "psu_sum", 3: "share", 4: "query", 5: "response"}


def kind_of(blob: bytes) -> str:
    """The kind of a SecEA message from its header (no parse); "keys" for
    anything else (a signed key)."""
    if bytes(blob[:4]) == b"SEEA" and len(blob) >= 16:
        return _KIND_OF.get(int.from_bytes(blob[8:16], "little"), "keys")
    return "keys"


class Layer:
    """Plain SecEA (Tang, Zhu, Li, Zhang, Sun 2022, Sec. 4): responses are
    F_p values under the pairwise pad, noised in the clear (eq. 20).  A
    subclass overrides the hooks; one instance per client session when it
    holds a secret (``stateful``)."""

    #: the layer's name, sent in every stage by a non-default layer
    name = "secea"
    #: blobs in a client's ``keys`` reply (its signed X25519 key, then the layer's)
    key_parts = 1
    #: whether :meth:`export_state` has something to save
    stateful = False

    # ------------------------------------------------ stage fields
    def stage_fields(self) -> dict[str, Any]:
        """Public fields the server adds to every stage."""
        return {}

    def check_fields(self, cfg: Mapping[str, Any]) -> None:
        """ValueError when a stage's ``cfg`` is for another layer or other
        settings than this client's."""
        if cfg.get("layer", self.name) != self.name:
            raise ValueError(f"field 'layer' is {cfg.get('layer')!r}; this client runs {self.name!r}")

    # ------------------------------------------------ parties
    def check(self, params: SecEAParams) -> None:
        """ValueError when ``params`` cannot run under this layer."""

    def client(self, index: int, params: SecEAParams, ids: Sequence[Any]) -> Client:
        """The party of one attempt (its X25519 key is new; a layer's
        long-term secret is reused)."""
        return Client(index, params, ids)

    def import_client(self, params: SecEAParams, ids: Sequence[Any], data: bytes) -> Client:
        """The party saved by its ``export_state``."""
        return Client.import_state(params, ids, data)

    def server(self, params: SecEAParams, material: Sequence[Any]) -> Server:
        """The server's party of one attempt; ``material``: every client's
        checked key material (:meth:`check_key_material`), index order."""
        return Server(params)

    # ------------------------------------------------ keys stage
    def key_material(self, client: Client, roster: Roster | None, identity: Identity | None, rnd: int,
                     attempt: int, index: int, parties: Sequence[str]) -> list[bytes]:
        """The ``key_parts - 1`` blobs a client announces after its X25519 key."""
        return []

    def check_key_material(self, roster: Roster | None, blobs: Sequence[bytes], rnd: int, attempt: int,
                           index: int, parties: Sequence[str], params: SecEAParams) -> Any:
        """Client ``index``'s material from its blobs, verified against the
        roster (ValueError otherwise)."""
        if blobs:
            raise ValueError(f"{len(blobs)} unexpected key parts")
        return None

    def set_peer_material(self, client: Client, material: Sequence[Any]) -> None:
        """Give the client every party's checked material (index order);
        ValueError if its own was replaced."""

    # ------------------------------------------------ steps
    def parse(self, blob: bytes, party: Client | Server, *, to_client: bool) -> Any:
        """A step's blob as a message (ValueError if it does not parse):
        ``to_client`` for the server's envelope, else a client's reply."""
        return Message.from_bytes(blob, N=party.params.N)

    def is_response(self, msg: Any) -> bool:
        """Whether ``msg`` (from :meth:`parse`) is a response."""
        return msg.kind == "response"

    def response_fits(self, msg: Any, rows: int, params: SecEAParams) -> bool:
        """Whether a client's response fits a block of ``rows`` entities."""
        return bool(msg.data.shape == (rows, params.sub))

    def kind_of(self, blob: bytes) -> str:
        """The kind of a blob for byte accounting (header only)."""
        return kind_of(blob)

    def totals(self, count: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        """Zeroed decoded totals of a client with ``count`` entities: the
        quantized sums (count, d) and holder counts (count,)."""
        return np.zeros((count, d), dtype=np.int64), np.zeros(count, dtype=np.int64)

    # ------------------------------------------------ state
    def export_state(self) -> bytes:
        """The layer's own secret state (nothing for plain SecEA)."""
        return b""

    def import_state(self, data: bytes) -> None:
        """Restore :meth:`export_state`'s bytes into this (fresh) layer."""
        if data:
            raise ValueError("plain SecEA has no layer state")
