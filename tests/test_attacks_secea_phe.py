"""Attacks on SecEA-PHE's Paillier keys (Tang, Zhu, Li, Sun 2022, Sec. III-B:
responses travel under the querier's key, and the keys reach the responders
through the server).  The adversary is the relaying server or network: it
hands a responder its own Paillier key in place of the querier's, so that
the responder's answer A_{v,n,e} is encrypted under a key the adversary can
open.  Every key is signed under the roster and checked by every receiver
(secea_fast.protocols.secea_phe.keys), so the substitution is refused; the
weakened control runs the same key stage without a roster (keys unsigned)
and shows the attack then goes through: the adversary decrypts the
responder's plain answer."""
import numpy as np
import pytest

from secea_fast import paillier
from secea_fast.prg import X25519KeyPair
from secea_fast.protocols import secea
from secea_fast.protocols.common.roster import Roster
from secea_fast.protocols.secea import SecEAParams
from secea_fast.protocols.secea.session import ProtocolError
from secea_fast.protocols.secea_phe import Client, PHEParams, Server
from secea_fast.protocols.secea_phe.keys import exchange_keys, party_names, signed_paillier_key

BITS = 512


@pytest.fixture(scope="module")
def keys():
    return [paillier.keygen(BITS, insecure=True) for _ in range(4)]   # 3 clients + the adversary


def _local(N=3, M=12, d=2, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"e{i}" for i in range(M)]
    return [{ids[i]: rng.uniform(-1, 1, d) for i in rng.choice(M, 5, replace=False)} for _ in range(N)]


def _parties(local, keys, auth):
    N = len(local)
    params = PHEParams(SecEAParams(N=N, d=2, T=1), key_bits=BITS, insecure_keys=True)
    clients = [Client(n, params, list(local[n]), keys[n]) for n in range(N)]
    for c in clients:
        c.set_peer_keys([x.public_key for x in clients])
    roster, ids = Roster.make([(x, "client") for x in party_names(N)]) if auth else (None, {})
    return params, clients, Server(params), roster, ids


def _substitute(roster, ids, adversary_pk, rnd=1, victim=1, querier=0, signer=None):
    """The relay hands ``victim`` the adversary's key as the querier's, signed
    by ``signer`` (a colluding roster member) or unsigned."""
    names = party_names(3)

    def tamper(receiver, blobs):
        if receiver == victim:
            ident = None if signer is None else ids[names[signer]]
            blobs[3 + querier] = signed_paillier_key(roster if signer is not None else None, ident, rnd,
                                                 querier, names, adversary_pk)
        return blobs
    return tamper


@pytest.mark.parametrize("signer", [None, 2])
def test_substituted_paillier_key_refused(keys, signer):
    """Unsigned, or signed by another client of the roster: the responder
    refuses the querier's key, naming the querier; no query is answered."""
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    with pytest.raises(ProtocolError, match="Paillier key of client 0") as exc:
        exchange_keys(clients, server, roster, ids, 1,
                      tamper=_substitute(roster, ids, keys[3][0], signer=signer))
    assert exc.value.sender == 0


def test_paillier_key_of_another_round_refused(keys):
    """The querier's genuine signed key of round 1, replayed in round 2."""
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    old = signed_paillier_key(roster, ids["client-0"], 1, 0, party_names(3), keys[0][0])

    def replay(receiver, blobs):
        blobs[3] = old
        return blobs
    with pytest.raises(ProtocolError, match="Paillier key of client 0"):
        exchange_keys(clients, server, roster, ids, 2, tamper=replay)


def test_substituted_x25519_key_refused(keys):
    """The pairwise-seed key travels in the same stage under SecEA's own
    signature rule: a relay's X25519 key in place of client 0's is refused."""
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    mitm = X25519KeyPair()

    def swap(receiver, blobs):
        if receiver == 1:
            blobs[0] = mitm.public_bytes + blobs[0][32:]       # the key replaced, client 0's signature kept
        return blobs
    with pytest.raises(ProtocolError, match="key of client 0"):
        exchange_keys(clients, server, roster, ids, 1, tamper=swap)
    # weakened control (no roster: keys unsigned): the relay's key is taken,
    # so client 1's pairwise seed with client 0 is one the relay can compute
    _, clients, server, _, _ = _parties(local, keys, auth=False)
    exchange_keys(clients, server, None, {}, 1, tamper=swap)


def test_genuine_keys_pass(keys):
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    exchange_keys(clients, server, roster, ids, 1)
    assert all(server.key(n) == keys[n][0] for n in range(3))


def test_control_unsigned_keys_let_the_adversary_read_a_response(keys):
    """Weakened control (no roster: keys unsigned): the substitution is
    accepted, and the adversary decrypts client 1's answer to client 0's
    query -- the plain A_{1,0,e} that eq. (13) exists to hide."""
    local = _local()
    params, clients, server, _, _ = _parties(local, keys, auth=False)
    exchange_keys(clients, server, None, {}, 1, tamper=_substitute(None, {}, keys[3][0]))
    secea.union_and_share(clients, server, local, 1, {}, {}, {})
    members = clients[0].blocks(4)[0]
    queries = clients[0].iter_queries(1, 0, members)
    next(queries)
    q = next(queries)                                # client 0's query to client 1
    A = clients[1].answer_plain(q)
    ct = clients[1].encrypt_response(A, q)
    assert ct.pk == keys[3][0]                       # under the adversary's key
    vals = keys[3][1].decrypt_packed(ct.cts, params.slot_bits, ct.rows * params.row_values)
    got = np.array(vals, dtype=object).reshape(ct.rows, params.row_values)[:, :params.base.sub]
    assert (got.astype(np.uint64) == A).all()
