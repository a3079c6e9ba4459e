"""The SecEA-PHE key stage: every client's Paillier public key signed by its
roster identity, the way SecEA's ``keys`` stage signs the X25519 keys
(:func:`secea_fast.protocols.secea.session.signed_key_bytes`, which
:func:`exchange_keys` uses for the X25519 keys themselves).

Responses travel under the *querier's* Paillier key (Tang, Zhu, Li, Sun
2022, Sec. III-B, eq. 13), and the keys reach the responders through the
server.  A server (or network) that substitutes its own key for pk_n would
receive every response A_{v,n,e} to client n's queries encrypted under a
key it can open, i.e. client v's embeddings in the clear after the
Lagrange decoding it can do itself.  So each client signs its key
(purpose ``secea-phe.paillier-key``) over (protocol, round, attempt, its
index, the party set, the key bytes), and every receiver -- the responders and the
server -- checks every key against the roster before using it
(:func:`check_paillier_key`); a key that does not verify is a
:class:`~secea_fast.protocols.secea.session.ProtocolError` naming its
client.  Without a roster (``roster=None``) keys travel unsigned, as in
SecEA's unauthenticated sessions.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ... import paillier
from ..common.roster import Identity, Roster
from ..common.wire import Reader, Writer
from ..secea.session import ProtocolError, check_key as check_x25519_key, signed_key_bytes
from .params import PHEParams, check_key
from .parties import Client, Server

__all__ = ["PAILLIER_KEY_PURPOSE", "PROTOCOL", "signed_paillier_key", "check_paillier_key",
           "exchange_keys", "party_names"]

PROTOCOL = "secea-phe"
PAILLIER_KEY_PURPOSE = "secea-phe.paillier-key"
_MAGIC = b"SEPk"
_SIG_LEN = 64


def _parties_str(parties: Sequence[str]) -> str:
    return "\n".join(parties)


def signed_paillier_key(roster: Roster | None, identity: Identity | None, rnd: int, index: int,
                        parties: Sequence[str], pk: paillier.PublicKey, *, attempt: int = 1) -> bytes:
    """Client ``index``'s Paillier public key with its roster signature
    over (round, attempt, index, party set, key) (an empty signature when
    ``roster`` or ``identity`` is None)."""
    if not isinstance(pk, paillier.PublicKey):
        raise TypeError(f"pk must be a paillier.PublicKey, got {type(pk).__name__}")
    raw = pk.to_bytes()
    sig = b"" if roster is None or identity is None else roster.sign(
        identity, PAILLIER_KEY_PURPOSE, PROTOCOL, rnd, attempt, index, _parties_str(parties), raw)
    return Writer(_MAGIC).blob(raw).blob(sig).bytes()


def check_paillier_key(roster: Roster | None, blob: bytes, rnd: int, index: int,
                       parties: Sequence[str], params: PHEParams, *, attempt: int = 1) -> paillier.PublicKey:
    """The Paillier public key of client ``index`` from its signed blob;
    ProtocolError naming the client when the blob is malformed, the key does
    not fit ``params`` or (with a roster) the signature does not verify."""
    who = parties[index]
    try:
        r = Reader(bytes(blob), _MAGIC, f"Paillier key of client {index}")
        raw, sig = r.blob(), r.blob()
        r.done()
        if roster is not None:
            if len(sig) != _SIG_LEN:
                raise ValueError(f"signature has {len(sig)} bytes, expected {_SIG_LEN}")
            roster.verify(who, sig, PAILLIER_KEY_PURPOSE, PROTOCOL, rnd, attempt, index,
                          _parties_str(parties), raw)
        return check_key(raw, params, f"Paillier key of client {index}")
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"Paillier key of client {index} ({who}) refused"
                            f"{' (a substituted key?)' if roster is not None else ''}: {exc}",
                            index) from None


def party_names(N: int) -> list[str]:
    """The roster names of N SecEA(-PHE) clients, in index order."""
    return [f"client-{n}" for n in range(N)]


def exchange_keys(clients: Sequence[Client], server: Server, roster: Roster | None,
                  identities: Mapping[str, Identity], rnd: int, *,
                  tamper: Callable[[int, list[bytes]], list[bytes]] | None = None) -> list[bytes]:
    """The key stage in one process.  Every client signs its X25519 key with
    SecEA's own rule (:func:`~secea_fast.protocols.secea.session.signed_key_bytes`,
    attempt 1 of round ``rnd``) and its Paillier key
    (:func:`signed_paillier_key`); the server checks every Paillier key and
    relays both; every client checks every key
    (:func:`~secea_fast.protocols.secea.session.check_key`,
    :func:`check_paillier_key`) before ``set_peer_keys`` (seeds bound to
    the round and attempt, as SecEA's sessions bind them) and
    ``set_paillier_keys``.  ``tamper(receiver, blobs) -> blobs`` is the
    relaying server or network as an adversary (attack tests): what
    client ``receiver`` is handed instead of the N signed X25519 key blobs
    followed by the N signed Paillier key blobs.  Returns all signed blobs (their sizes are the stage's bytes)."""
    if not clients:
        raise ValueError("clients: no clients")
    params = clients[0].phe
    parties = party_names(len(clients))
    attempt = 1
    xblobs = [signed_key_bytes(roster, identities.get(parties[n]), rnd, attempt, n, parties, c.public_key)
              for n, c in enumerate(clients)]
    blobs = [signed_paillier_key(roster, identities.get(parties[n]), rnd, n, parties,
                                 c.paillier_public_key) for n, c in enumerate(clients)]
    # a verified key equal to a client's own is that client's key object, so
    # every party shares one object per key (its obfuscator pool included)
    known = {c.paillier_public_key.to_bytes(): c.paillier_public_key for c in clients}

    def check(b: bytes, v: int) -> paillier.PublicKey:
        pk = check_paillier_key(roster, b, rnd, v, parties, params)
        return known.setdefault(pk.to_bytes(), pk)

    server.set_paillier_keys([check(b, v) for v, b in enumerate(blobs)])
    N = len(clients)
    for n, c in enumerate(clients):
        got = xblobs + blobs if tamper is None else list(tamper(n, xblobs + blobs))
        if len(got) != 2 * N:
            raise ProtocolError(f"key stage: {len(got)} keys for {N} clients (expected {2 * N})")
        xkeys = [check_x25519_key(roster, b, rnd, attempt, v, parties) for v, b in enumerate(got[:N])]
        if xkeys[n] != c.public_key:
            raise ProtocolError(f"key stage: client {n}'s own X25519 key was replaced", "server")
        pks = [check(b, v) for v, b in enumerate(got[N:])]
        c.set_peer_keys(xkeys, session=f"round {rnd} attempt {attempt}".encode())
        c.set_paillier_keys(pks)
    return xblobs + blobs
