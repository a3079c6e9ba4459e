"""A federation roster: every party's long-term identity, handed to every
node out of band, and the signatures that authenticate what a party
announces.

The papers assume semi-honest servers; a deployment meets a server that
substitutes keys, replays stages or names parties that are not there.
Following the active-server variant of Bonawitz et al., "Practical Secure
Aggregation for Privacy-Preserving Machine Learning", CCS 2017 (Sec. 6.2:
a PKI of long-term signing keys, every announced public key signed), each
party holds an Ed25519 signing key (:class:`Identity`, RFC 8032, from
``cryptography``) and every party holds the same :class:`Roster` of names,
roles and verification keys.  A party signs every ephemeral key it
announces together with the protocol, round, attempt, stage and the party
set it was announced to (:meth:`Roster.sign`); a receiver checks it with
:meth:`Roster.verify` against the roster and refuses what does not verify
(:class:`AuthenticationError`, a ``ValueError``).  The signed transcript
also carries the roster's digest, so a signature made for one federation
never verifies in another, and the signer's name, so it cannot be
re-attributed.

Files (written by :func:`write_federation`, read by :meth:`Roster.load` and
:meth:`Identity.load`): ``roster.json`` is public (names, roles, public
keys); ``<name>.identity.json`` is one party's private key (mode 0600),
which never leaves that party's host.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from ..._secrets import SecretHolder

__all__ = ["AuthenticationError", "Identity", "Roster", "RosterEntry", "transcript", "write_federation",
           "ed25519_to_x25519_public", "ROSTER_FORMAT", "IDENTITY_FORMAT"]

ROSTER_FORMAT = "secea_fast.roster.v1"
IDENTITY_FORMAT = "secea_fast.identity.v1"
_LABEL = b"secea_fast.roster.signed.v1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class AuthenticationError(ValueError):
    """A signature, key or party that does not verify against the roster."""


def _check_name(name, what="party name") -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what} must be 1-64 characters of letters, digits, '_', '.', '-' "
                         f"(starting with a letter or digit), got {name!r}")
    return name


_P25519 = 2**255 - 19


def ed25519_to_x25519_public(public: bytes) -> bytes:
    """The X25519 (Montgomery u) form of an Ed25519 public key (RFC 7748,
    Sec. 4.1: u = (1 + y) / (1 - y) mod 2^255 - 19), as libsodium's
    ``crypto_sign_ed25519_pk_to_curve25519``.  ValueError for a key that
    is not 32 bytes, whose y is not reduced, or that is the neutral point."""
    if not isinstance(public, (bytes, bytearray)) or len(public) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    y = int.from_bytes(bytes(public), "little") & ((1 << 255) - 1)
    if y >= _P25519 or y == 1:
        raise ValueError("not an Ed25519 public key usable for key agreement (y unreduced or the neutral point)")
    u = (1 + y) * pow(1 - y, _P25519 - 2, _P25519) % _P25519
    return u.to_bytes(32, "little")


def transcript(*fields: bytes | str | int) -> bytes:
    """The canonical encoding of a sequence of fields: each a type tag, a
    length and its bytes (ints as signed decimal text), so that no two
    different sequences encode alike."""
    out = []
    for f in fields:
        if isinstance(f, bool):
            raise TypeError("transcript fields are bytes, str or int (not bool)")
        if isinstance(f, (bytes, bytearray, memoryview)):
            tag, b = b"b", bytes(f)
        elif isinstance(f, str):
            tag, b = b"s", f.encode()
        elif isinstance(f, int):
            tag, b = b"i", str(int(f)).encode()
        else:
            raise TypeError(f"transcript fields are bytes, str or int, got {type(f).__name__}")
        out += [tag, struct.pack("<Q", len(b)), b]
    return b"".join(out)


class Identity(SecretHolder):
    """One party's long-term Ed25519 signing key and its name in the roster.
    Holds a secret: not picklable, never sent; saved only to its owner's
    file (:meth:`save`, mode 0600)."""

    __slots__ = ("name", "_sk", "public_bytes")

    def __init__(self, name: str, private: bytes | None = None) -> None:
        self.name = _check_name(name)
        if private is None:
            self._sk = Ed25519PrivateKey.generate()
        else:
            if not isinstance(private, (bytes, bytearray)) or len(private) != 32:
                raise ValueError("an Ed25519 private key is 32 bytes")
            self._sk = Ed25519PrivateKey.from_private_bytes(bytes(private))
        self.public_bytes = self._sk.public_key().public_bytes(serialization.Encoding.Raw,
                                                               serialization.PublicFormat.Raw)

    def __repr__(self) -> str:
        return f"Identity({self.name!r}, public={self.public_bytes.hex()})"

    def sign_raw(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message`` (use
        :meth:`Roster.sign`, which binds the roster, signer and purpose)."""
        return self._sk.sign(bytes(message))

    def static_exchange(self, peer_public: bytes) -> bytes:
        """The X25519 shared secret (32 bytes) of this identity's long-term
        key and a peer's roster key ``peer_public`` (Ed25519, 32 bytes), both
        in their Montgomery form: the scalar is this key's Ed25519 secret
        scalar (the clamped first half of SHA-512 of the seed, RFC 8032 Sec.
        5.1.5), the peer's point :func:`ed25519_to_x25519_public` of its key
        (libsodium's ``crypto_sign_ed25519_sk_to_curve25519``).  One key pair
        for Ed25519 signatures and X25519 agreement: Thormarker, "On using the
        same key pair for Ed25519 and an X25519 based KEM", IACR ePrint
        2021/509, proves the two jointly secure (random-oracle model, gap-DH);
        callers hash the secret with HKDF bound to its purpose.  ValueError
        for a key that is not a usable point (low order: an all-zero secret)."""
        peer = X25519PublicKey.from_public_bytes(ed25519_to_x25519_public(peer_public))
        seed = self._sk.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                      serialization.NoEncryption())
        scalar = X25519PrivateKey.from_private_bytes(hashlib.sha512(seed).digest()[:32])
        return scalar.exchange(peer)        # ValueError on an all-zero secret

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this identity to ``path`` (JSON, mode 0600)."""
        raw = self._sk.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                     serialization.NoEncryption())
        p = Path(path)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"format": IDENTITY_FORMAT, "name": self.name, "ed25519_private": raw.hex()}, f)
            f.write("\n")
        os.chmod(p, 0o600)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Identity:
        """The identity saved by :meth:`save`; ValueError naming the file otherwise."""
        data = _read_json(path, "identity file")
        if not isinstance(data, dict) or data.get("format") != IDENTITY_FORMAT:
            raise ValueError(f"identity file {path}: not a {IDENTITY_FORMAT} file")
        try:
            raw = bytes.fromhex(str(data["ed25519_private"]))
            return cls(str(data["name"]), raw)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"identity file {path}: {exc}") from None


def _read_json(path, what):
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {path}: not a regular file")
    if p.stat().st_size > 1 << 24:
        raise ValueError(f"{what} {path}: larger than 16 MiB")
    try:
        return json.loads(p.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what} {path}: not JSON ({exc})") from None


@dataclass(frozen=True)
class RosterEntry:
    """A party of the federation: its name, its role in the protocol and its
    Ed25519 verification key (32 bytes)."""
    name: str
    role: str
    public: bytes


class Roster:
    """The federation's parties (name -> :class:`RosterEntry`), in the
    order given.  Every node holds the same roster; :attr:`digest` names it."""

    def __init__(self, entries: Iterable[RosterEntry]) -> None:
        self.entries: dict[str, RosterEntry] = {}
        for e in entries:
            if not isinstance(e, RosterEntry):
                raise TypeError(f"roster entries must be RosterEntry, got {type(e).__name__}")
            _check_name(e.name)
            _check_name(e.role, "role")
            if not isinstance(e.public, bytes) or len(e.public) != 32:
                raise ValueError(f"roster: party {e.name!r} has a public key of {len(e.public)} bytes, not 32")
            if e.name in self.entries:
                raise ValueError(f"roster: party {e.name!r} appears twice")
            self.entries[e.name] = e
        keys = [e.public for e in self.entries.values()]
        if len(set(keys)) != len(keys):
            raise ValueError("roster: two parties share a public key")
        if not self.entries:
            raise ValueError("roster: no parties")
        by_role: dict[str, list[str]] = {}
        for e in self.entries.values():
            by_role.setdefault(e.role, []).append(e.name)
        self._by_role = {role: tuple(names) for role, names in by_role.items()}
        self.digest = hashlib.sha256(self.to_bytes()).digest()

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def names(self, role: str | None = None) -> list[str]:
        """The parties' names in roster order (only those of ``role`` if given:
        indexed once, so a role with few parties costs little in a large roster)."""
        return list(self.entries) if role is None else list(self._by_role.get(role, ()))

    def role(self, name: str) -> str:
        """The role of party ``name``; AuthenticationError for a stranger."""
        return self._entry(name).role

    def _entry(self, name) -> RosterEntry:
        e = self.entries.get(name)
        if e is None:
            raise AuthenticationError(f"party {name!r} is not in the roster")
        return e

    # ------------------------------------------------------------ signatures
    def _message(self, signer: str, purpose: str, fields) -> bytes:
        return transcript(_LABEL, self.digest, signer, purpose, *fields)

    def sign(self, identity: Identity, purpose: str, *fields: bytes | str | int) -> bytes:
        """``identity``'s signature (64 bytes) of ``fields`` for ``purpose``,
        bound to this roster and to the signer's name."""
        if not isinstance(identity, Identity):
            raise TypeError(f"identity must be an Identity, got {type(identity).__name__}")
        if self._entry(identity.name).public != identity.public_bytes:
            raise AuthenticationError(f"identity {identity.name!r} does not match its roster key")
        return identity.sign_raw(self._message(identity.name, purpose, fields))

    def verify(self, signer: str, signature: bytes, purpose: str, *fields: bytes | str | int) -> None:
        """Check ``signature`` of ``fields`` by party ``signer`` (as
        :meth:`sign`); AuthenticationError if it does not verify or the
        signer is not in the roster."""
        e = self._entry(signer)
        if not isinstance(signature, (bytes, bytearray)) or len(signature) != 64:
            raise AuthenticationError(f"signature of {signer!r} ({purpose}): not 64 bytes")
        try:
            Ed25519PublicKey.from_public_bytes(e.public).verify(bytes(signature),
                                                                self._message(signer, purpose, fields))
        except InvalidSignature:
            raise AuthenticationError(f"signature of {signer!r} ({purpose}) does not verify") from None

    # ------------------------------------------------------------ files
    def to_bytes(self) -> bytes:
        """The canonical bytes of the roster (what :attr:`digest` hashes)."""
        return transcript(ROSTER_FORMAT, *(f for e in self.entries.values() for f in (e.name, e.role, e.public)))

    def to_json(self) -> str:
        """The roster as canonical JSON text (what :meth:`save` writes)."""
        doc = {"format": ROSTER_FORMAT,
               "parties": [{"name": e.name, "role": e.role, "ed25519": e.public.hex()}
                           for e in self.entries.values()]}
        return json.dumps(doc, separators=(",", ":"))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the roster (public) to ``path``: its JSON text and a newline."""
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def from_json(cls, text: str | bytes, what: str = "roster") -> Roster:
        """The roster of :meth:`to_json`'s text; anything else (another
        spelling of the same document included) is a ValueError: the roster
        is a trust anchor, so only the form the package writes is read
        (regenerate it with ``secea-fast flower roster``)."""
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{what}: not UTF-8 text") from None
        if not isinstance(text, str):
            raise TypeError(f"{what}: expected JSON text, got {type(text).__name__}")
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{what}: not JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != ROSTER_FORMAT:
            raise ValueError(f"{what}: not a {ROSTER_FORMAT} document")
        parties = data.get("parties")
        if not isinstance(parties, list):
            raise ValueError(f"{what}: 'parties' must be a list")
        entries = []
        for i, p in enumerate(parties):
            try:
                entries.append(RosterEntry(str(p["name"]), str(p["role"]), bytes.fromhex(str(p["ed25519"]))))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{what}: party {i}: {exc!r}") from None
        try:
            roster = cls(entries)
        except ValueError as exc:
            raise ValueError(f"{what}: {exc}") from None
        if roster.to_json() != text:
            raise ValueError(f"{what}: not in the canonical form secea_fast writes (regenerate it with "
                             "`secea-fast flower roster`)")
        return roster

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Roster:
        """The roster saved by :meth:`save`; ValueError naming the file otherwise."""
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"roster file {path}: not a regular file")
        if p.stat().st_size > 1 << 24:
            raise ValueError(f"roster file {path}: larger than 16 MiB")
        text = p.read_bytes()
        return cls.from_json(text[:-1] if text.endswith(b"\n") else text, f"roster file {path}")

    @classmethod
    def make(cls, parties: Iterable[tuple[str, str]] | Mapping[str, str]) -> tuple[Roster, dict[str, Identity]]:
        """A fresh roster of ``parties`` ((name, role) pairs, or name -> role)
        and every party's :class:`Identity` (for tests, simulations and
        :func:`write_federation`)."""
        pairs = list(parties.items()) if isinstance(parties, Mapping) else list(parties)
        ids = {name: Identity(name) for name, _ in pairs}
        return cls(RosterEntry(n, r, ids[n].public_bytes) for n, r in pairs), ids


def write_federation(directory: str | os.PathLike[str],
                     parties: Iterable[tuple[str, str]] | Mapping[str, str]) -> dict[str, str]:
    """Make a roster and one identity per party in ``directory``:
    ``{"roster": path, <name>: identity path, ...}``.  Hand ``roster.json``
    to every node and each ``<name>.identity.json`` to that party's node only."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    roster, ids = Roster.make(parties)
    out = {"roster": str(d / "roster.json")}
    roster.save(out["roster"])
    for name, ident in ids.items():
        if name == "roster":
            raise ValueError("a party may not be named 'roster'")
        out[name] = str(d / f"{name}.identity.json")
        ident.save(out[name])
    return out
