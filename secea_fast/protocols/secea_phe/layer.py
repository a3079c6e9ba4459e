"""SecEA-PHE as a layer of SecEA's sessions: the Paillier step composed into
:class:`~secea_fast.protocols.secea.session.ClientSession` and
:class:`~secea_fast.protocols.secea.session.ServerSession` through their
hook points (:class:`~secea_fast.protocols.secea.layer.Layer`), so that the
stage machine and every rule of a SecEA deployment -- stage order, replay
refusal, the restart/difference rule, answer-once, decode checking, bad
nodes dropped -- are SecEA's, written once.

What the layer changes (Tang, Zhu, Li, Sun 2022, "Secure Embedding
Aggregation for Federated Representation Learning", Sec. III-B):

* parties: :class:`~secea_fast.protocols.secea_phe.parties.Client` (answers
  Enc(A) under the querier's key, decrypts and decodes the mean) and
  :class:`~secea_fast.protocols.secea_phe.parties.Server` (eq. 13 on
  ciphertexts);
* every stage carries ``layer = "secea-phe"``, ``key-bits``,
  ``stat-bits`` and ``insecure-keys``; a client refuses a stage whose
  values differ from its own settings;
* the ``keys`` stage: each client announces, after its signed X25519 key,
  its Paillier public key signed under the roster over (round, attempt,
  index, party set, key) (:func:`~secea_fast.protocols.secea_phe.keys.signed_paillier_key`);
  the server and every client check every key
  (:func:`~secea_fast.protocols.secea_phe.keys.check_paillier_key`) and a
  client refuses a ``peers`` stage that replaces its own;
* steps: a response travels as a
  :class:`~secea_fast.protocols.secea_phe.messages.CipherMessage`
  ("enc_response" up, parsed under the querier's checked key; "noised_response"
  down, parsed under the receiving client's own key); a plaintext SecEA
  response is refused in either direction;
* decoded totals are the means' numerators and denominators, both
  (count, d).

Secrets: the client's Paillier key pair lives in its layer (one
:class:`PaillierLayer` per client session), generated once, when the first
``keys`` stage needs it, unless given; it is reused by every attempt and
round and saved with the session (:meth:`PaillierLayer.export_state`), so
``ClientSession.import_state`` restores it and never generates a new one.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ... import paillier
from ..._checks import check_int
from ..._secrets import SecretHolder
from ..common.roster import Identity, Roster
from ..common.wire import Reader, Writer
from ..secea.layer import Layer, kind_of as secea_kind_of
from ..secea.messages import Message
from ..secea.params import SecEAParams
from .keys import check_paillier_key, signed_paillier_key
from .messages import CipherMessage
from .params import DEFAULT_KEY_BITS, DEFAULT_STAT_BITS, PHEParams
from .parties import Client, Server

__all__ = ["PaillierLayer", "LAYER"]

LAYER = "secea-phe"
_STATE_MAGIC = b"SEPL"


class PaillierLayer(Layer, SecretHolder):
    """SecEA-PHE's hooks into SecEA's sessions.  ``key_bits`` /
    ``stat_bits`` / ``insecure_keys`` / ``variant``: as :class:`PHEParams`
    (the server's and every client's must agree); ``keypair``: this client's (pk, sk) to
    use instead of generating one.  A client session needs its own
    instance (it holds the key pair: not picklable); the server's holds
    none."""

    name = LAYER
    key_parts = 2
    stateful = True

    def __init__(self, key_bits: int = DEFAULT_KEY_BITS, stat_bits: int = DEFAULT_STAT_BITS, *,
                 insecure_keys: bool = False, variant: str = paillier.TEXTBOOK,
                 keypair: tuple[paillier.PublicKey, paillier.PrivateKey] | None = None) -> None:
        self.key_bits = check_int(key_bits, "key_bits")
        self.stat_bits = check_int(stat_bits, "stat_bits")
        if not isinstance(insecure_keys, bool):
            raise TypeError("insecure_keys must be a bool")
        self.insecure_keys = insecure_keys
        if not isinstance(variant, str):
            raise TypeError(f"variant must be a str, got {type(variant).__name__}")
        if variant not in paillier.VARIANTS:
            raise ValueError(f"variant must be one of {paillier.VARIANTS}, got {variant!r}")
        self.variant = variant
        self._params: dict[SecEAParams, PHEParams] = {}
        self._keypair: tuple[paillier.PublicKey, paillier.PrivateKey] | None = None
        if keypair is not None:
            self._set_keypair(keypair)

    def _set_keypair(self, keypair) -> None:
        if not (isinstance(keypair, tuple) and len(keypair) == 2):
            raise TypeError("keypair must be a (PublicKey, PrivateKey) pair")
        pk, sk = keypair
        if not isinstance(sk, paillier.PrivateKey) or sk.public_key != pk:
            raise ValueError("keypair must be (PublicKey, matching PrivateKey)")
        if pk.bits != self.key_bits:
            raise ValueError(f"keypair: the key has {pk.bits} bits, key_bits is {self.key_bits}")
        if pk.variant != self.variant:
            raise ValueError(f"keypair: a {pk.variant} key, variant is {self.variant!r} "
                             "(the two variants never mix)")
        self._keypair = (pk, sk)

    @property
    def public_key(self) -> paillier.PublicKey | None:
        """This client's Paillier public key (None before it has one)."""
        return None if self._keypair is None else self._keypair[0]

    def params(self, base: SecEAParams) -> PHEParams:
        """The :class:`PHEParams` of an attempt's SecEA parameters."""
        prm = self._params.get(base)
        if prm is None:
            prm = self._params[base] = PHEParams(base, key_bits=self.key_bits, stat_bits=self.stat_bits,
                                                 insecure_keys=self.insecure_keys, variant=self.variant)
        return prm

    # ------------------------------------------------ stage fields
    def stage_fields(self) -> dict[str, Any]:
        """``layer``, ``key-bits``, ``stat-bits``, ``insecure-keys``,
        ``paillier-variant``."""
        return {"layer": LAYER, "key-bits": self.key_bits, "stat-bits": self.stat_bits,
                "insecure-keys": self.insecure_keys, "paillier-variant": self.variant}

    def check_fields(self, cfg: Mapping[str, Any]) -> None:
        """ValueError naming the field that differs from this client's settings."""
        want = self.stage_fields()
        for f, v in want.items():
            got = cfg.get(f)
            if type(got) is not type(v) or got != v:
                raise ValueError(f"field {f!r} is {got!r}, this client runs {v!r}")

    # ------------------------------------------------ parties
    def check(self, params: SecEAParams) -> None:
        """ValueError when the Paillier layout cannot carry ``params``."""
        self.params(params)

    def keypair(self) -> tuple[paillier.PublicKey, paillier.PrivateKey]:
        """This client's key pair, generated (from ``secrets``) the first
        time it is needed and never again."""
        if self._keypair is None:
            self._keypair = paillier.keygen(self.key_bits, insecure=self.insecure_keys, variant=self.variant)
        return self._keypair

    def client(self, index: int, params: SecEAParams, ids: Sequence[Any]) -> Client:
        """The attempt's SecEA-PHE client, with this layer's key pair."""
        return Client(index, self.params(params), ids, self.keypair())

    def import_client(self, params: SecEAParams, ids: Sequence[Any], data: bytes) -> Client:
        """The saved client; ValueError unless its key is this layer's."""
        c = Client.import_state(self.params(params), ids, data)
        if self._keypair is None or c.paillier_public_key != self._keypair[0]:
            raise ValueError("SecEA-PHE session state: the client's Paillier key is not the session's")
        return c

    def server(self, params: SecEAParams, material: Sequence[Any]) -> Server:
        """The attempt's SecEA-PHE server, with every client's checked key."""
        s = Server(self.params(params))
        s.set_paillier_keys(list(material))
        return s

    # ------------------------------------------------ keys stage
    def key_material(self, client: Client, roster: Roster | None, identity: Identity | None, rnd: int,  # type: ignore[override]
                     attempt: int, index: int, parties: Sequence[str]) -> list[bytes]:
        """This client's Paillier public key, signed under the roster."""
        return [signed_paillier_key(roster, identity, rnd, index, parties, client.paillier_public_key,
                                    attempt=attempt)]

    def check_key_material(self, roster: Roster | None, blobs: Sequence[bytes], rnd: int, attempt: int,
                           index: int, parties: Sequence[str], params: SecEAParams) -> paillier.PublicKey:
        """Client ``index``'s Paillier public key, verified (ProtocolError naming it)."""
        if len(blobs) != 1:
            raise ValueError(f"{len(blobs)} Paillier key parts, expected 1")
        return check_paillier_key(roster, blobs[0], rnd, index, parties, self.params(params), attempt=attempt)

    def set_peer_material(self, client: Client, material: Sequence[Any]) -> None:  # type: ignore[override]
        """Every client's checked Paillier key (ValueError if this client's own was replaced)."""
        client.set_paillier_keys(list(material))

    # ------------------------------------------------ steps
    def parse(self, blob: bytes, party: Client | Server, *, to_client: bool) -> Any:  # type: ignore[override]
        """A SecEA message, or a response under the querier's key: an
        "enc_response" in a client's reply, a "noised_response" in the
        server's envelope; a plaintext response is refused."""
        N = party.params.N
        if bytes(blob[:4]) == b"SEPH":
            kind, _, receiver = CipherMessage.header(blob)
            want = "noised_response" if to_client else "enc_response"
            if kind != want:
                raise ValueError(f"a {kind} where a {want} belongs")
            if not 0 <= receiver < N:
                raise ValueError(f"a response to client {receiver}, not a client index (< {N})")
            if isinstance(party, Client):
                pk = party.paillier_public_key
            else:
                pk = party.key(receiver)
            return CipherMessage.from_bytes(blob, pk, N)
        m = Message.from_bytes(blob, N=N)
        if m.kind == "response":
            raise ValueError("a plaintext response in a SecEA-PHE round")
        return m

    def is_response(self, msg: Any) -> bool:
        """Whether ``msg`` is a ciphertext response."""
        return isinstance(msg, CipherMessage)

    def response_fits(self, msg: Any, rows: int, params: SecEAParams) -> bool:
        """``rows`` entities of ``cols`` ciphertexts each."""
        return bool(msg.rows == rows and msg.cols == self.params(params).cols)

    def kind_of(self, blob: bytes) -> str:
        """"response" for a ciphertext message, else SecEA's kinds."""
        return "response" if bytes(blob[:4]) == b"SEPH" else secea_kind_of(blob)

    def totals(self, count: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        """The means' numerators and denominators, (count, d) each."""
        return np.zeros((count, d), dtype=np.int64), np.zeros((count, d), dtype=np.int64)

    # ------------------------------------------------ state
    def export_state(self) -> bytes:
        """This client's Paillier key pair (its private key: the bytes never
        leave the client's host), or nothing before it has one."""
        w = Writer(_STATE_MAGIC).u64(self._keypair is not None)
        if self._keypair is not None:
            w.blob(self._keypair[1].to_bytes())
        return w.bytes()

    def import_state(self, data: bytes) -> None:
        """Restore the saved key pair into this fresh layer (ValueError if it
        already holds another one, or for another key size)."""
        r = Reader(data, _STATE_MAGIC, "SecEA-PHE layer state")
        if r.flag():
            sk = paillier.PrivateKey.from_bytes(r.blob(1 << 20), insecure=self.insecure_keys)
            r.done()
            if self._keypair is not None and self._keypair[0] != sk.public_key:
                raise ValueError("SecEA-PHE layer state: this layer already holds another key pair")
            self._set_keypair((sk.public_key, sk))
        else:
            r.done()
