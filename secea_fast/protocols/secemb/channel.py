"""SecEmb's sealed channel between a user and server 1, relayed by server 0
(X25519 + HKDF-SHA256 + AES-256-GCM, from ``cryptography``).

SecEmb (Mai et al. 2025, Sec. 4) has each user talk to both servers; when
server 0 relays server 1's traffic (as Flower does: one ServerApp, every
message through the SuperLink), what the user and server 1 exchange must be
sealed end to end, or the relay holds both servers' keys.

The rule of the channel, which the protocol session enforces:

* **One key and nonce per message, never twice, replay included.**  The
  AES-GCM key and the 12-byte nonce are derived together by HKDF from the
  X25519 shared secret with ``info`` = (label, run, round, stage, sender,
  receiver, counter) (:func:`derive`), the associated data is the same
  tuple, and a :class:`SealedChannel` refuses to seal *or* open the same
  (round, stage, sender, receiver) twice (:class:`ProtocolError`).
  The used tuples are part of the owning session's exported state, so a
  restarted node keeps refusing (those of the current round: a session
  refuses every earlier round itself and drops their tuples,
  :meth:`SealedChannel.forget_before`).  (The earlier channel sealed with an
  all-zero nonce under one key per (round, user, purpose) and trusted each
  key to encrypt one message; an active server 0 that replays server 1's
  answer stage with the same sealed request and a table of its choice made
  server 1 encrypt two plaintexts under one key and nonce, and the XOR of
  the ciphertexts was the XOR-PIR answer of the chosen table: every slot's
  item index.  Both the refusal here and server 1's answer-once rule now
  stop that.)
* A failed open also spends its tuple: a relay that flips a bit learns
  nothing from a second try.

A sealed part is ``ciphertext | tag (16)``; who sent it, and with which key,
is carried and authenticated by the session's messages around it.
"""
from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ...prg import X25519KeyPair
from ..common.roster import transcript
from ..common.errors import ProtocolError

__all__ = ["SealedChannel", "SealError", "ProtocolError", "derive", "CHANNEL_LABEL", "TAG_BYTES"]

CHANNEL_LABEL = b"secea_fast.secemb.sealed.v2"
TAG_BYTES = 16


class SealError(ProtocolError):
    """A sealed part that does not open (wrong key, round, stage, sender or
    receiver, or altered in transit), or a (round, stage, sender, receiver)
    used a second time."""


def derive(shared: bytes, run: bytes, rnd: int, stage: str, sender: str, receiver: str,
           counter: int = 0) -> tuple[bytes, bytes, bytes]:
    """(AES-256 key, 12-byte nonce, associated data) of one sealed message:
    HKDF-SHA256 of the X25519 shared secret, bound to every field."""
    ad = transcript(CHANNEL_LABEL, run, int(rnd), stage, sender, receiver, int(counter))
    okm = HKDF(algorithm=hashes.SHA256(), length=44, salt=None, info=ad).derive(shared)
    return okm[:32], okm[32:], ad


class SealedChannel:
    """One party's end of the sealed channels it has in a run: ``me`` (its
    roster name), ``run`` (the run's binding bytes).  ``used`` holds every
    (round, stage, sender, receiver) this party sealed or opened."""

    def __init__(self, me: str, run: bytes, used: set[tuple[int, str, str, str]] | None = None) -> None:
        self.me = me
        self.run = bytes(run)
        self.used: set[tuple[int, str, str, str]] = set() if used is None else set(used)

    def _spend(self, rnd: int, stage: str, sender: str, receiver: str) -> None:
        k = (int(rnd), stage, sender, receiver)
        if k in self.used:
            raise SealError(f"sealed channel: ({stage}, round {rnd}, {sender} -> {receiver}) was already "
                            "used once; a key and nonce never serve twice (a replay?)")
        self.used.add(k)

    def forget_before(self, rnd: int) -> None:
        """Drop the tuples of rounds before ``rnd``: called by a session that
        has moved to round ``rnd`` and refuses every earlier round itself,
        so its saved state stays the size of one round, not of the run."""
        self.used = {k for k in self.used if k[0] >= int(rnd)}

    def seal(self, keypair: X25519KeyPair, peer_public: bytes, rnd: int, stage: str, receiver: str,
             plaintext: bytes) -> bytes:
        """Seal ``plaintext`` from this party to ``receiver`` (holder of
        ``peer_public``) for (round, stage); once per tuple."""
        self._spend(rnd, stage, self.me, receiver)
        key, nonce, ad = derive(keypair.exchange(peer_public), self.run, rnd, stage, self.me, receiver)
        return AESGCM(key).encrypt(nonce, bytes(plaintext), ad)

    def open(self, keypair: X25519KeyPair, peer_public: bytes, rnd: int, stage: str, sender: str,
             sealed: bytes) -> bytes:
        """Open what ``sender`` (holder of ``peer_public``) sealed to this
        party for (round, stage); once per tuple, a failed open included."""
        self._spend(rnd, stage, sender, self.me)
        if not isinstance(sealed, (bytes, bytearray)) or len(sealed) < TAG_BYTES:
            raise SealError(f"sealed {stage} part from {sender}: too short")
        try:
            key, nonce, ad = derive(keypair.exchange(peer_public), self.run, rnd, stage, sender, self.me)
        except ValueError as exc:
            raise SealError(f"sealed {stage} part from {sender}: {exc}") from None
        try:
            return AESGCM(key).decrypt(nonce, bytes(sealed), ad)
        except InvalidTag:
            raise SealError(f"sealed {stage} part from {sender} (round {rnd}) failed to open") from None
