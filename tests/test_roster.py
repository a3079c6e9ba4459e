"""The federation roster: signatures bind the roster, the signer, the
purpose and every field; identities never pickle; files load only in the
form the package writes and errors name the file."""
import copy
import json
import os
import pickle

import pytest

from secea_fast.protocols.common.roster import (AuthenticationError, Identity, Roster, RosterEntry,
                                                transcript, write_federation)


@pytest.fixture(scope="module")
def fed():
    return Roster.make([("server1", "server1"), ("user-0", "user"), ("user-1", "user")])


def test_signature_binds_every_field_signer_purpose_and_roster(fed):
    roster, ids = fed
    sig = roster.sign(ids["user-0"], "secemb.request", 3, b"k" * 32)
    roster.verify("user-0", sig, "secemb.request", 3, b"k" * 32)
    for signer, purpose, fields in [("user-1", "secemb.request", (3, b"k" * 32)),      # re-attributed
                                    ("user-0", "secemb.upload", (3, b"k" * 32)),       # other purpose
                                    ("user-0", "secemb.request", (4, b"k" * 32)),      # other round
                                    ("user-0", "secemb.request", (3, b"j" * 32)),      # other key
                                    ("user-0", "secemb.request", (3,))]:               # field dropped
        with pytest.raises(AuthenticationError):
            roster.verify(signer, sig, purpose, *fields)
    other, oids = Roster.make([("server1", "server1"), ("user-0", "user"), ("user-1", "user")])
    with pytest.raises(AuthenticationError):       # the same names in another federation
        other.verify("user-0", sig, "secemb.request", 3, b"k" * 32)
    with pytest.raises(AuthenticationError, match="not in the roster"):
        roster.verify("stranger", sig, "secemb.request", 3, b"k" * 32)
    with pytest.raises(AuthenticationError, match="does not match"):
        roster.sign(oids["user-0"], "secemb.request", 3)       # a key of the same name, not the roster's
    with pytest.raises(AuthenticationError):
        roster.verify("user-0", sig[:63], "secemb.request", 3, b"k" * 32)


def test_transcript_is_injective_on_field_boundaries():
    assert transcript(b"ab", b"c") != transcript(b"a", b"bc")
    assert transcript("1") != transcript(1)
    with pytest.raises(TypeError):
        transcript(True)


def test_identity_holds_a_secret(fed):
    _, ids = fed
    for op in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="secret"):
            op(ids["user-0"])


def test_files_round_trip_and_errors_name_the_file(tmp_path, fed):
    files = write_federation(tmp_path, [("client-0", "client"), ("client-1", "client")])
    roster = Roster.load(files["roster"])
    ident = Identity.load(files["client-0"])
    roster.verify("client-0", roster.sign(ident, "x", 1), "x", 1)
    assert oct(os.stat(files["client-0"]).st_mode & 0o777) == "0o600"
    bad = tmp_path / "bad.json"
    for text in ["", "{", json.dumps({"format": "other"}), json.dumps(json.loads(roster.to_json()), indent=2)]:
        bad.write_text(text)
        with pytest.raises(ValueError, match="bad.json"):
            Roster.load(bad)
    with pytest.raises(ValueError, match="not a regular file"):
        Roster.load(tmp_path)
    with pytest.raises(ValueError, match="bad.json"):
        Identity.load(bad)


def test_roster_refuses_duplicates_and_bad_entries():
    _, ids = Roster.make([("a", "client")])
    e = RosterEntry("a", "client", ids["a"].public_bytes)
    with pytest.raises(ValueError, match="twice"):
        Roster([e, e])
    with pytest.raises(ValueError, match="share a public key"):
        Roster([e, RosterEntry("b", "client", ids["a"].public_bytes)])
    with pytest.raises(ValueError, match="party name"):
        Roster([RosterEntry("a b", "client", ids["a"].public_bytes)])
    with pytest.raises(ValueError, match="32"):
        Roster([RosterEntry("a", "client", b"x" * 31)])


def test_static_exchange_agrees_and_matches_the_montgomery_form():
    """Two identities' static X25519 secrets agree; the Montgomery form of
    an Ed25519 key is the X25519 public key of its secret scalar; the
    neutral point and unreduced keys are refused."""
    import hashlib
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from secea_fast.protocols.common.roster import Identity, ed25519_to_x25519_public
    a, b, c = Identity("a"), Identity("b"), Identity("c")
    assert a.static_exchange(b.public_bytes) == b.static_exchange(a.public_bytes)
    assert a.static_exchange(b.public_bytes) != a.static_exchange(c.public_bytes)
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")  # RFC 8032 test 1
    ident = Identity("rfc", seed)
    x = X25519PrivateKey.from_private_bytes(hashlib.sha512(seed).digest()[:32])
    assert ed25519_to_x25519_public(ident.public_bytes) == x.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    for bad in ((1).to_bytes(32, "little"), (2**255 - 1).to_bytes(32, "little"), b"short"):
        with pytest.raises(ValueError):
            ed25519_to_x25519_public(bad)
