"""End-to-end sealed messages between a user and SecEmb's server 1 through
server 0's relay (X25519 + HKDF-SHA256 + AES-256-GCM, from ``cryptography``).

Flower has one ServerApp per run and every message passes its SuperLink, so
SecEmb's second server runs as a SuperNode and its traffic with the users is
relayed by server 0.  Each user makes an ephemeral X25519 key pair per
round; with server 1's public key it derives one AES-GCM key per purpose
(``info`` = label | purpose | round | user), and each key encrypts exactly
one message, so the all-zero nonce is never reused under a key.  The
associated data binds the purpose, round and user id: server 0 cannot swap
a sealed message between users, purposes or rounds without decryption
failing.  A sealed message is ``ephemeral public key (32) | ciphertext | tag
(16)``; it reveals only its length, which SecEmb fixes by m' and d.
"""
from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..prg import X25519KeyPair

__all__ = ["seal", "open_sealed", "sealed_key", "SealError"]

_LABEL = b"secea_fast.flower.sealed.v1"
_NONCE = bytes(12)


class SealError(ValueError):
    """A sealed message failed to open (wrong key, purpose, round or user,
    or altered in transit)."""


def sealed_key(shared: bytes, purpose: str, rnd: int, user: int) -> tuple:
    """(AES-GCM key, associated data) of one message."""
    ad = b"%s|%s|r%d|u%d" % (_LABEL, purpose.encode(), int(rnd), int(user))
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=ad).derive(shared)
    return key, ad


def seal(keypair: X25519KeyPair, peer_public: bytes, plaintext: bytes, purpose: str, rnd: int,
         user: int) -> bytes:
    """Seal ``plaintext`` from ``keypair``'s owner to the holder of
    ``peer_public``'s private key.  The user passes its ephemeral pair and
    server 1's public key; server 1 answers with its pair and the user's
    ephemeral public key (read from the user's sealed request)."""
    key, ad = sealed_key(keypair.exchange(peer_public), purpose, rnd, user)
    return keypair.public_bytes + AESGCM(key).encrypt(_NONCE, bytes(plaintext), ad)


def open_sealed(keypair: X25519KeyPair, sealed: bytes, purpose: str, rnd: int, user: int,
                peer_public: bytes | None = None) -> tuple:
    """(plaintext, the sender's public key).  ``peer_public``: the expected
    sender key (the user checks that server 1's reply comes from server 1's
    key); None accepts the key in the message (server 1 reading a user's
    ephemeral key)."""
    if not isinstance(sealed, (bytes, bytearray)) or len(sealed) < 32 + 16:
        raise SealError("sealed message: too short")
    sender = bytes(sealed[:32])
    if peer_public is not None and sender != peer_public:
        raise SealError("sealed message: not from the expected sender")
    key, ad = sealed_key(keypair.exchange(peer_public or sender), purpose, rnd, user)
    try:
        return AESGCM(key).decrypt(_NONCE, bytes(sealed[32:]), ad), sender
    except InvalidTag:
        raise SealError(f"sealed message ({purpose}, round {rnd}, user {user}) failed to open") from None
