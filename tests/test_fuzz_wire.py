"""Every wire parser of the package on hostile input.

Each parser, given (a) random bytes or (b) a valid message with random
mutations (bit flips, truncation, padding, insertions, overwritten length
and id fields), must either return an object that serialises back to the
same bytes or raise ValueError: never another exception type, never a hang.
Then the party checks: ids outside the protocol are refused by the parsers
(and, against their own N, by the receiving parties), and Paillier key JSON
is accepted in canonical form only.
"""
import dataclasses
import importlib.util
import json
import os
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from secea_fast import dpf, paillier
from secea_fast.field import EMBEDDING_PRIME
from secea_fast.protocols import _secea_local, osfl, secea, secea_phe, secemb
from secea_fast.protocols.common.roster import Roster
from secea_fast.protocols.common.wire import Writer
from secea_fast.protocols.secea import Message, SecEAParams

FLOWER = importlib.util.find_spec("flwr") is not None     # the flower extra
BITS = 512                      # insecure test keys: parsing cost does not depend on the key's strength
# examples per parser: 50 in the default run (its time budget), 500 in the thorough step of .ci/run
# (SECEA_FUZZ_EXAMPLES=500); every length field is also walked deterministically below
FUZZ = settings(max_examples=int(os.environ.get("SECEA_FUZZ_EXAMPLES", 50)), deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SLOW_CALL = 5.0                 # seconds: a parse of a few hundred bytes taking this long is a hang


# ------------------------------------------------------------------ the parsers and a valid input each
def _samples():
    """name -> (parse(bytes) -> obj, serialise(obj) -> bytes, [valid byte strings])."""
    rng = np.random.default_rng(5)      # test data only
    out = {}
    u64 = lambda *shape: rng.integers(0, 2**63, shape, dtype=np.uint64)   # noqa: E731

    S = Message.SERVER
    msgs = [Message("psu", 1, S, 0, 0, u64(1, 6)), Message("psu_sum", S, S, 0, 0, u64(1, 6)),
            Message("psu_sum", S, 2, 3, 0, u64(1, 4)), Message("share", 0, 2, 1, 0, u64(3, 2)),
            Message("query", 2, 1, 1, 7, u64(2, 5)), Message("response", 1, 1, 9, 2, u64(0, 3))]
    out["secea.Message"] = (Message.from_bytes, Message.to_bytes, [m.to_bytes() for m in msgs])
    p = EMBEDDING_PRIME
    out["secea.Message(p, N)"] = (lambda b: Message.from_bytes(b, p=p, N=3), Message.to_bytes,
                                  [Message("share", 0, 2, 1, 0, u64(3, 2) % np.uint64(p)).to_bytes()])

    pk, sk = paillier.keygen(BITS, insecure=True)
    cts = pk.encrypt([1, 2, 3, 4, 5, 6])
    cms = [secea_phe.CipherMessage("enc_response", 1, 0, 2, 3, 2, 3, cts, pk),
           secea_phe.CipherMessage("noised_response", 0, 2, 0, 0, 1, 1, cts[:1], pk)]
    out["secea_phe.CipherMessage"] = (lambda b: secea_phe.CipherMessage.from_bytes(b, pk),
                                      secea_phe.CipherMessage.to_bytes, [m.to_bytes() for m in cms])
    out["secea_phe.CipherMessage(N)"] = (lambda b: secea_phe.CipherMessage.from_bytes(b, pk, N=3),
                                         secea_phe.CipherMessage.to_bytes, [cms[0].to_bytes()])
    out["paillier.PublicKey.from_bytes"] = (lambda b: paillier.PublicKey.from_bytes(b, insecure=True),
                                            paillier.PublicKey.to_bytes, [pk.to_bytes()])
    out["paillier.PrivateKey.from_bytes"] = (lambda b: paillier.PrivateKey.from_bytes(b, insecure=True),
                                             paillier.PrivateKey.to_bytes, [sk.to_bytes()])
    out["paillier.PublicKey.from_json"] = (lambda b: paillier.PublicKey.from_json(b, insecure=True),
                                           lambda k: k.to_json().encode(), [pk.to_json().encode()])
    out["paillier.PrivateKey.from_json"] = (lambda b: paillier.PrivateKey.from_json(b, insecure=True),
                                            lambda k: k.to_json().encode(), [sk.to_json().encode()])
    spk, _ = paillier.keygen(BITS, insecure=True, variant="short-exponent")
    out["paillier.ShortExponentPublicKey.from_bytes"] = (
        lambda b: paillier.ShortExponentPublicKey.from_bytes(b, insecure=True),
        paillier.ShortExponentPublicKey.to_bytes, [spk.to_bytes()])
    out["paillier.ShortExponentPublicKey.from_json"] = (
        lambda b: paillier.ShortExponentPublicKey.from_json(b, insecure=True),
        lambda k: k.to_json().encode(), [spk.to_json().encode()])
    out["paillier.ciphertexts_from_bytes"] = (lambda b: paillier.ciphertexts_from_bytes(b, pk),
                                              lambda c: paillier.ciphertexts_to_bytes(c, pk),
                                              [paillier.ciphertexts_to_bytes(cts[:2], pk)])

    prm = secemb.SecEmbParams(m=20, d=2, m_prime=3, n_users=4)
    user = secemb.User(prm, [1, 7, 19, 4])              # truncated to m' = 3
    req0, req1 = user.retrieval_request()
    up0, up1 = user.aggregation_upload(rng.normal(0, 0.1, (4, 2)))
    out["secemb.RetrievalRequest"] = (secemb.RetrievalRequest.from_bytes, secemb.RetrievalRequest.to_bytes,
                                      [req0.to_bytes(), req1.to_bytes()])
    out["secemb.RetrievalResponse"] = (secemb.RetrievalResponse.from_bytes, secemb.RetrievalResponse.to_bytes,
                                       [secemb.RetrievalResponse(1, u64(3, 2)).to_bytes()])
    out["secemb.AggregationUpload"] = (secemb.AggregationUpload.from_bytes, secemb.AggregationUpload.to_bytes,
                                       [up0.to_bytes(), up1.to_bytes()])
    out["secemb.AggregateShare"] = (secemb.AggregateShare.from_bytes, secemb.AggregateShare.to_bytes,
                                    [secemb.AggregateShare(1, u64(20, 2), u64(3)).to_bytes()])

    keys = [dpf.gen(5, 9, 6, early=False)[0], dpf.gen(3, [1, 2, 3], 5)[1], dpf.gen(33, 2, 8, early=True)[0],
            dpf.gen(2, 7, 4, group="u32")[1], dpf.gen(9, 11, 5, group=EMBEDDING_PRIME)[0]]
    out["dpf.Key"] = (dpf.Key.from_bytes, dpf.Key.to_bytes, [k.to_bytes() for k in keys])
    out["dpf.PathKey"] = (dpf.PathKey.from_bytes, dpf.PathKey.to_bytes,
                          [keys[0].path_key().to_bytes(), keys[1].path_key().to_bytes()])
    kb = [dpf.gen_batch([1, 6, 2], [4, 5, 6], 5, early=False), dpf.gen_batch([3], [[1, 2]], 4, group="u32"),
          dpf.gen_batch([7, 8], [1, 2], 6, early=True), dpf.gen_batch([1, 2], [3, 4], 4, group=EMBEDDING_PRIME)]
    out["dpf.KeyBatch"] = (dpf.KeyBatch.from_bytes, dpf.KeyBatch.to_bytes, [k[1].to_bytes() for k in kb])
    pb0, _, psb = dpf.path_gen_batch([3, 1, 4], 5)
    out["dpf.PathKeyBatch"] = (dpf.PathKeyBatch.from_bytes, dpf.PathKeyBatch.to_bytes,
                               [pb0.to_bytes(), kb[0][0].path_keys().to_bytes()])
    dpf.convert_gen_batch(psb, np.ones(3, dtype=np.uint64), domain=4)
    out["dpf.PathSecretBatch.import_secret"] = (dpf.PathSecretBatch.import_secret,
                                                dpf.PathSecretBatch.export_secret,
                                                [psb.export_secret(), dpf.path_gen_batch([0], 2)[2].export_secret()])

    oprm = osfl.OSFLParams(osfl.Assignment.cyclic(4, 2, 3), 1, 1, s=3, c=2)
    share = osfl.ShareMessage(0, 2, 1, u64(2, 2) % np.uint64(oprm.p))
    query = osfl.Query(3, np.array([0, 1], dtype=np.uint64), u64(2) % np.uint64(oprm.p))
    answer = osfl.Answer(1, u64(2, 2) % np.uint64(oprm.p))
    for cls, msg in ((osfl.ShareMessage, share), (osfl.Query, query), (osfl.Answer, answer)):
        out[f"osfl.{cls.__name__}"] = (cls.from_bytes, cls.to_bytes, [msg.to_bytes()])
        out[f"osfl.{cls.__name__}(params)"] = (lambda b, cls=cls: cls.from_bytes(b, oprm), cls.to_bytes,
                                               [msg.to_bytes()])
    from secea_fast.protocols.osfl.approaches import SchemeClient
    from secea_fast.protocols.osfl.session import (ANSWER, FEDERATOR, QUERY, SHARE, ClientSession, FederatorSession,
                                                   Frame, drive)
    frames = [Frame(SHARE, b"r1", 0, 2, share), Frame(QUERY, b"r" * 64, FEDERATOR, 3, query, b"s" * 64),
              Frame(ANSWER, b"", 1, FEDERATOR, answer)]
    out["osfl.Frame"] = (lambda b: Frame.from_bytes(b, oprm), Frame.to_bytes, [f.to_bytes() for f in frames])
    olab = rng.integers(0, 5, size=(4, 2, 3, 2))
    ocl = [ClientSession(osfl.Client(i, oprm, olab[i], shared_seed=b"k" * 16, session=b"s"), round_id=b"r1")
           for i in range(4)]
    ofresh = ocl[0].export_state()
    ofed = FederatorSession(osfl.Federator(oprm, 1), round_id=b"r1")
    drive(ocl[:3] + [ClientSession(osfl.Client(3, oprm, olab[3], shared_seed=b"k" * 16, session=b"s"),
                                                round_id=b"r1")], ofed)
    out["osfl.ClientSession.import_state"] = (lambda b: ClientSession.import_state(b, oprm),
                                              ClientSession.export_state, [ofresh, ocl[1].export_state()])
    out["osfl.FederatorSession.import_state"] = (lambda b: FederatorSession.import_state(b, oprm),
                                                 FederatorSession.export_state, [ofed.export_state()])
    out["osfl.Client.import_state"] = (lambda b: osfl.Client.import_state(b, oprm), osfl.Client.export_state,
                                       [ocl[2].engine.export_state()])
    out["osfl.Federator.import_state"] = (lambda b: osfl.Federator.import_state(b, oprm),
                                          osfl.Federator.export_state, [ofed.engine.export_state()])
    gx = osfl.GXSTPIR(osfl.Assignment.cyclic(4, 2, 3), 3, 2, 1, 1)
    gcl = gx.client(1, {t: olab[1, t] for t in gx.objectives(1)}, (b"m" * 16, b"sess"))
    gcl.share()
    out["osfl.SchemeClient.import_state"] = (gx.import_client, SchemeClient.export_state,
                                             [gcl.export_state(), gx.client(0, {t: olab[0, t] for t in gx.objectives(0)})
                                              .export_state()])
    # states a party saves between the processes of a deployment (secea_fast.flower)
    sprm = SecEAParams(N=3, d=2)
    sets = [["a", "b"], ["b", "c"], ["c", "d", "e"]]
    sclients, sserver = _secea_local.make_parties(sets, sprm)
    fresh = sclients[0].export_state()
    _secea_local.run_union(sclients, sserver)
    sclients[0].queries(1, 0, np.arange(2))
    shares = [sclients[n].share({k: [0.5, -0.5] for k in sets[n]}, 2) for n in range(3)]
    sclients[0].receive_shares([shares[n][0] for n in range(3)])
    out["secea.Client.import_state"] = (lambda b: secea.Client.import_state(sprm, sets[0], b),
                                        secea.Client.export_state, [fresh, sclients[0].export_state()])
    pprm = secea_phe.PHEParams(sprm, key_bits=BITS, insecure_keys=True)
    pcs = [secea_phe.Client(n, pprm, sets[n], paillier.keygen(BITS, insecure=True)) for n in range(3)]
    pfresh = pcs[0].export_state()
    pcs[0].set_paillier_keys([c.paillier_public_key for c in pcs])
    out["secea_phe.Client.import_state"] = (lambda b: secea_phe.Client.import_state(pprm, sets[0], b),
                                            secea_phe.Client.export_state,
                                            [pfresh, pcs[0].export_state()])
    from secea_fast.protocols.common.roster import Roster
    from secea_fast.protocols.secea.loopback import Loopback
    from secea_fast.protocols.secea.session import ClientSession as SecEAClient, ServerSession
    sroster, sids = Roster.make([(f"client-{i}", "client") for i in range(3)])
    slocal = [{k: [0.5, -0.5] for k in s} for s in sets]
    sess = {f"client-{i}": SecEAClient(sroster, sids[f"client-{i}"], slocal[i]) for i in range(3)}
    ssrv = ServerSession(sroster, list(sess), d=2)
    sloop = Loopback(sess)
    sout = ssrv.start()
    for _ in range(4):                         # keys, peers, steps 0 and 1: mid-round
        sout = ssrv.receive(*sloop(sout))
    fresh_session = SecEAClient(sroster, sids["client-0"], slocal[0]).export_state()
    out["secea.ClientSession.import_state"] = (
        lambda b: SecEAClient.import_state(b, sroster, sids["client-0"], slocal[0]),
        SecEAClient.export_state, [fresh_session, sess["client-0"].export_state()])
    # the same session under SecEA-PHE's layer (its Paillier key pair saved with it), and the layers' states
    from secea_fast.protocols.secea.layer import Layer
    player = lambda: secea_phe.PaillierLayer(BITS, insecure_keys=True)   # noqa: E731
    psess = {x: SecEAClient(sroster, sids[x], slocal[i],
                            layer=secea_phe.PaillierLayer(BITS, insecure_keys=True,
                                                          keypair=paillier.keygen(BITS, insecure=True)))
             for i, x in enumerate(sess)}
    psrv = ServerSession(sroster, list(psess), d=2, layer=player())
    ploop = Loopback(psess)
    pout = psrv.start()
    for _ in range(4):
        pout = psrv.receive(*ploop(pout))
    pfresh_session = SecEAClient(sroster, sids["client-0"], slocal[0], layer=player()).export_state()
    out["secea_phe ClientSession.import_state"] = (
        lambda b: SecEAClient.import_state(b, sroster, sids["client-0"], slocal[0], layer=player()),
        SecEAClient.export_state, [pfresh_session, psess["client-0"].export_state()])

    def _layer(cls):
        def parse(b):
            obj = cls()
            obj.import_state(b)
            return obj
        return parse
    out["secea.Layer.import_state"] = (_layer(Layer), Layer.export_state, [b""])
    out["secea_phe.PaillierLayer.import_state"] = (_layer(player), secea_phe.PaillierLayer.export_state,
                                                   [player().export_state(), psess["client-0"].layer.export_state()])
    u2 = secemb.User(prm, [1, 7, 19, 4])
    u2.retrieval_request()
    out["secemb.User.import_state"] = (lambda b: secemb.User.import_state(prm, [1, 7, 19, 4], b),
                                       secemb.User.export_state, [u2.export_state(), user.export_state()])
    srv = secemb.Server(1, prm, np.zeros((20, 2), dtype=np.uint64))
    srv.answer(3, req1)
    srv.answer(8, u2.retrieval_request()[1])

    def _reqs(b):
        x = secemb.Server(1, prm, np.zeros((20, 2), dtype=np.uint64))
        x.import_requests(b)
        return x
    out["secemb.Server.import_requests"] = (_reqs, secemb.Server.export_requests, [srv.export_requests()])
    _, _, ps = dpf.path_gen(5, 6)
    dpf.convert_gen(ps, 3, domain=2)
    dpf.convert_gen(ps, 3, domain=9)
    out["dpf.PathSecret.import_secret"] = (dpf.PathSecret.import_secret, dpf.PathSecret.export_secret,
                                           [ps.export_secret(), dpf.path_gen(1, 3)[2].export_secret()])
    # the SecEmb sessions' saved states, fresh and mid-round
    from secea_fast.protocols.common.roster import Roster
    roster, ids = Roster.make([("server1", "server1"), ("user-0", "user"), ("user-1", "user")])
    s1s = secemb.Server1Session(roster, ids["server1"], run=7)
    us = secemb.UserSession(roster, ids["user-0"], run=7)
    fresh_u, fresh_s1 = us.export_state(), s1s.export_state()
    _, sq = us.retrieve(1, prm, [1, 7, 19, 4], s1s.key_message())
    s1s.answer(1, prm, np.zeros((20, 2), dtype=np.uint64), {"u": sq})
    out["secemb.UserSession.import_state"] = (
        lambda b: secemb.UserSession.import_state(roster, ids["user-0"], b),
        secemb.UserSession.export_state, [fresh_u, us.export_state()])
    out["secemb.Server1Session.import_state"] = (
        lambda b: secemb.Server1Session.import_state(roster, ids["server1"], b),
        secemb.Server1Session.export_state, [fresh_s1, s1s.export_state()])
    s0s = secemb.Server0Session(roster, run=7)
    fresh_s0 = s0s.export_state()
    s0s.begin(1, prm, np.zeros((20, 2), dtype=np.uint64))
    out["secemb.Server0Session.import_state"] = (
        lambda b: secemb.Server0Session.import_state(roster, b),
        secemb.Server0Session.export_state, [fresh_s0, s0s.export_state()])
    if FLOWER:                 # the flower extra's parser (test_flower_parser_is_fuzzed says when not)
        from secea_fast.flower import secemb as fsecemb
        out["flower.secemb table"] = (lambda b: fsecemb._table_from(b, prm), fsecemb._table_bytes,
                                      [fsecemb._table_bytes(u64(20, 2))])
    roster, _ = Roster.make([("server1", "server1"), ("user-0", "user"), ("user-1", "user")])
    out["roster.Roster.from_json"] = (Roster.from_json, lambda r: r.to_json().encode(), [roster.to_json().encode()])
    return out


SAMPLES = _samples()
NAMES = sorted(SAMPLES)


def test_flower_parser_is_fuzzed():
    if not FLOWER:
        pytest.skip("the flower extra is not installed: its table parser is not fuzzed")
    assert "flower.secemb table" in SAMPLES


def test_every_parser_is_fuzzed():
    """The parsers found in the package are the ones this file runs."""
    import pathlib
    import re
    import secea_fast
    root = pathlib.Path(secea_fast.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        cls = None
        for m in re.finditer(r"^class (\w+)|^    def (from_bytes|from_json|import_state|import_secret|"
                             r"import_requests)\b|^def (ciphertexts_from_bytes|_table_from)\b",
                             text, re.M):
            if m.group(1):
                cls = m.group(1)
            elif m.group(2):
                found.add(f"{cls}.{m.group(2)}")
            else:
                found.add(m.group(3))
    covered = {"Message.from_bytes", "CipherMessage.from_bytes", "PublicKey.from_bytes",
               "PublicKey.from_json", "PrivateKey.from_bytes", "PrivateKey.from_json",
               "ciphertexts_from_bytes", "RetrievalRequest.from_bytes", "RetrievalResponse.from_bytes",
               "AggregationUpload.from_bytes", "AggregateShare.from_bytes", "Key.from_bytes",
               "PathKey.from_bytes", "ShareMessage.from_bytes", "Query.from_bytes", "Answer.from_bytes",
               "Client.import_state", "ClientSession.import_state", "User.import_state",
               "Server.import_requests", "PathSecret.import_secret", "_table_from", "KeyBatch.from_bytes",
               "PathKeyBatch.from_bytes", "PathSecretBatch.import_secret", "Frame.from_bytes",
               "ClientSession.import_state", "FederatorSession.import_state", "Federator.import_state",
               "SchemeClient.import_state", "Roster.from_json", "UserSession.import_state",
               "Server1Session.import_state", "Server0Session.import_state", "Layer.import_state",
               "PaillierLayer.import_state", "ShortExponentPublicKey.from_bytes",
               "ShortExponentPublicKey.from_json"}
    assert found <= covered, f"parsers without a fuzz test: {sorted(found - covered)}"
    for name in NAMES:                               # and every valid sample parses and round-trips
        parse, ser, valid = SAMPLES[name]
        for b in valid:
            assert ser(parse(b)) == b, name


def _check(name, data):
    parse, ser, _ = SAMPLES[name]
    t0 = time.perf_counter()
    try:
        obj = parse(data)
    except ValueError:
        pass
    else:
        assert ser(obj) == bytes(data), f"{name} accepted {bytes(data)[:80]!r}... that does not re-serialise to itself"
    assert time.perf_counter() - t0 < SLOW_CALL, f"{name} took {time.perf_counter() - t0:.1f} s"


# ------------------------------------------------------------------ (a) random bytes
@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(data=st.data())
def test_random_bytes(name, data):
    _, _, valid = SAMPLES[name]
    if data.draw(st.booleans()):
        raw = data.draw(st.binary(max_size=300))
    else:                                      # past the magic: a valid header, random rest
        head = valid[0][:data.draw(st.integers(0, min(24, len(valid[0]))))]
        raw = head + data.draw(st.binary(max_size=300))
    _check(name, raw)


# ------------------------------------------------------------------ (b) mutated valid messages
INTERESTING = [0, 1, 2, 3, 7, 8, 255, 2**16, 2**31, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63,
               2**64 - 2, 2**64 - 1]


@st.composite
def mutation(draw, size):
    kind = draw(st.sampled_from(["flip", "truncate", "pad", "insert", "delete", "field", "byte"]))
    pos = draw(st.integers(0, max(size - 1, 0)))
    if kind == "flip":
        return kind, pos, draw(st.integers(0, 7))
    if kind in ("truncate", "delete"):
        return kind, pos, draw(st.integers(1, 16))
    if kind in ("pad", "insert"):
        return kind, pos, draw(st.binary(min_size=1, max_size=16))
    if kind == "byte":
        return kind, pos, draw(st.integers(0, 255))
    width = draw(st.sampled_from([1, 2, 4, 8]))
    value = draw(st.one_of(st.sampled_from(INTERESTING), st.integers(0, 2**64 - 1),
                           st.integers(0, 2 * size)))
    return kind, pos, (width, draw(st.sampled_from(["little", "big"])), value)


def apply(buf: bytes, mut) -> bytes:
    kind, pos, arg = mut
    b = bytearray(buf)
    if kind == "flip" and b:
        b[pos % len(b)] ^= 1 << arg
    elif kind == "truncate":              # the last few bytes, or everything from pos on
        cut = max(0, len(b) - arg) if pos % 2 else pos
        del b[cut:]
    elif kind == "delete":
        del b[pos:pos + arg]
    elif kind == "pad":
        b += arg
    elif kind == "insert":
        b[pos:pos] = arg
    elif kind == "byte" and b:
        b[pos % len(b)] = arg
    elif kind == "field":               # a length / id / shape field overwritten
        width, order, value = arg
        b[pos:pos + width] = (value % (1 << (8 * width))).to_bytes(width, order)
    return bytes(b)


@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(data=st.data())
def test_mutated_valid_messages(name, data):
    _, _, valid = SAMPLES[name]
    buf = data.draw(st.sampled_from(valid))
    for _ in range(data.draw(st.integers(1, 3))):
        buf = apply(buf, data.draw(mutation(len(buf))))
    _check(name, buf)


@pytest.mark.parametrize("name", NAMES)
def test_every_length_field(name):
    """Each 8-byte little-endian and 4-byte big-endian word of each valid
    message set to a few hostile values (exhaustive over offsets)."""
    _, _, valid = SAMPLES[name]
    buf = valid[0]
    for off in range(0, min(len(buf), 96)):
        for width, order in ((8, "little"), (4, "big")):
            for value in (0, 1, len(buf), 2**32 - 1, 2**63, 2**64 - 1):
                _check(name, apply(buf, ("field", off, (width, order, value))))


# ------------------------------------------------------------------ party ids: SecEA
def test_secea_message_refuses_parties_outside_the_protocol():
    S = Message.SERVER
    data = np.zeros((1, 2), dtype=np.uint64)
    raw = lambda *a: Message(*a).to_bytes()                                # noqa: E731
    bad = [("share", S, 1), ("share", 0, S), ("query", S, 0), ("response", 0, S), ("psu", S, S),
           ("psu", 0, 1), ("psu_sum", 0, S), ("psu_sum", 2, 1), ("share", S - 1, 0),
           ("query", 0, secea.max_clients()), ("response", secea.max_clients() + 5, 0)]
    for kind, snd, rcv in bad:
        with pytest.raises(ValueError, match="client index|is the server"):
            Message.from_bytes(raw(kind, snd, rcv, 0, 0, data))
    # against the receiver's N, and the protocol's limit for its p
    with pytest.raises(ValueError, match="sender 5 is not a client index"):
        Message.from_bytes(raw("query", 5, 0, 0, 0, data), N=5)
    with pytest.raises(ValueError, match="receiver 4 is not a client index"):
        Message.from_bytes(raw("psu_sum", S, 4, 0, 0, data), N=4)
    P = EMBEDDING_PRIME
    with pytest.raises(ValueError, match="not a client index"):
        Message.from_bytes(raw("share", secea.max_clients(P), 0, 0, 0, data), p=P)
    assert Message.from_bytes(raw("share", secea.max_clients(P) - 1, 0, 0, 0, data), p=P).sender == P - 4
    for n in (1, EMBEDDING_PRIME):
        with pytest.raises(ValueError, match="valid number of clients"):
            Message.from_bytes(raw("share", 0, 0, 0, 0, data), p=EMBEDDING_PRIME, N=n)
    ok = [("share", 4, 0), ("query", 0, 0), ("response", 3, 1), ("psu", 4, S), ("psu_sum", S, S),
          ("psu_sum", S, 2)]
    for kind, snd, rcv in ok:
        m = Message.from_bytes(raw(kind, snd, rcv, 0, 0, data), N=5)
        assert (m.kind, m.sender, m.receiver) == (kind, snd, rcv)


def test_secea_client_refuses_a_query_from_an_unknown_client():
    local = [{"a": np.ones(2), "b": np.zeros(2)}, {"b": np.ones(2)}, {"c": np.ones(2)}]
    prm = SecEAParams(N=3, d=2, T=1)
    clients, server = _secea_local.make_parties([list(x) for x in local], prm)
    _secea_local.run_union(clients, server, rnd=1)
    out = [c.share(local[n], 1) for n, c in enumerate(clients)]
    for v, c in enumerate(clients):
        c.receive_shares([out[n][v] for n in range(3)])
    q = list(clients[0].iter_queries(1, 0, np.arange(len(clients[0].ids))))[1]
    for sender in (3, Message.SERVER):
        with pytest.raises(ValueError, match="unknown client"):
            clients[1].answer(dataclasses.replace(q, sender=sender))
    assert clients[1].answer(q).receiver == 0


# ------------------------------------------------------------------ party ids: SecEA-PHE
def test_secea_phe_message_refuses_parties_outside_the_protocol():
    pk, sk = paillier.keygen(BITS, insecure=True)
    cts = pk.encrypt([5])

    def raw(snd, rcv):
        return secea_phe.CipherMessage("enc_response", snd, rcv, 0, 0, 1, 1, cts, pk).to_bytes()
    for snd, rcv in ((2**64 - 1, 0), (0, 2**64 - 1), (secea_phe.MAX_CLIENTS, 1)):
        with pytest.raises(ValueError, match="not a client index"):
            secea_phe.CipherMessage.from_bytes(raw(snd, rcv), pk)
    with pytest.raises(ValueError, match="receiver 3 is not a client index"):
        secea_phe.CipherMessage.from_bytes(raw(0, 3), pk, N=3)
    m = secea_phe.CipherMessage.from_bytes(raw(2, 1), pk, N=3)
    assert (m.sender, m.receiver) == (2, 1)
    prm = secea_phe.PHEParams(SecEAParams(N=3, d=2), key_bits=BITS, insecure_keys=True)
    client = secea_phe.Client(0, prm, ["a"], (pk, sk))
    wrong = secea_phe.CipherMessage("noised_response", 2, 0, 0, 0, 1, 1, cts, pk)
    with pytest.raises(ValueError, match="slot 1: the response of client 2"):
        client.decode([None, wrong, None], [0])


# ------------------------------------------------------------------ party ids: one-shot FL
def test_osfl_messages_refuse_parties_outside_the_protocol():
    prm = osfl.OSFLParams(osfl.Assignment.cyclic(4, 2, 3), 1, 1, s=3, c=2)
    vals = np.zeros((2, 2), dtype=np.uint64)
    for msg in (osfl.ShareMessage(2**64 - 1, 0, 0, vals), osfl.ShareMessage(0, osfl.MAX_CLIENTS, 0, vals),
                osfl.Query(2**64 - 1, np.zeros(1, np.uint64), np.zeros(1, np.uint64)),
                osfl.Answer(osfl.MAX_CLIENTS, vals)):
        with pytest.raises(ValueError, match="not a client index"):
            type(msg).from_bytes(msg.to_bytes())
    with pytest.raises(ValueError, match="share to itself"):
        osfl.ShareMessage.from_bytes(osfl.ShareMessage(1, 1, 0, vals).to_bytes())
    # against the receiver's parameters: n = 4 clients, T = 2 objectives, entries < p
    for msg, what in ((osfl.ShareMessage(4, 0, 0, vals), "sender 4"), (osfl.ShareMessage(0, 1, 2, vals), "objective 2"),
                      (osfl.Query(0, np.array([0, 5], np.uint64), np.zeros(2, np.uint64)), "objective 5"),
                      (osfl.Answer(4, vals), "client 4"),
                      (osfl.Answer(0, vals + np.uint64(prm.p)), "entry >= p")):
        with pytest.raises(ValueError, match=what):
            type(msg).from_bytes(msg.to_bytes(), prm)
        type(msg).from_bytes(msg.to_bytes())          # without params only the protocol's limits apply
    # the simulator sends every message through the checking parsers
    lab = np.arange(4 * 2 * 3 * 2).reshape(4, 2, 3, 2) % 5
    assert osfl.run_round(lab, osfl.Assignment.cyclic(4, 2, 3), 1, 1, 1, wire=True).sums.tolist() == \
        lab[[2, 3, 0], 1].sum(axis=0).tolist()


# ------------------------------------------------------------------ Paillier keys: canonical input only
def test_paillier_json_refuses_duplicates_and_non_canonical_text():
    pk, sk = paillier.keygen(BITS, insecure=True)
    n = format(pk.n, "x")
    good = pk.to_json()
    assert good == '{"kind":"secea_fast.paillier.PublicKey","version":1,"n":"%s"}' % n
    dup = good[:-1] + ',"n":"%s"}' % n
    with pytest.raises(ValueError, match="twice"):
        paillier.PublicKey.from_json(dup, insecure=True)
    other = paillier.keygen(BITS, insecure=True)[0]
    dup_other = good[:-1] + ',"n":"%s"}' % format(other.n, "x")        # the last one would win
    with pytest.raises(ValueError, match="twice"):
        paillier.PublicKey.from_json(dup_other, insecure=True)
    with pytest.raises(ValueError, match="twice"):
        paillier.PublicKey.from_json('{"kind":"a","kind":"secea_fast.paillier.PublicKey","version":1,"n":"%s"}'
                                     % n, insecure=True)
    obj = json.loads(good)
    for text in (json.dumps(obj), json.dumps(obj, indent=1), good + "\n", " " + good,
                 json.dumps({"n": n, "kind": obj["kind"], "version": 1}, separators=(",", ":")),
                 good.replace('"n"', '"\\u006e"')):
        with pytest.raises(ValueError, match="canonical"):
            paillier.PublicKey.from_json(text, insecure=True)
    assert paillier.PublicKey.from_json(good, insecure=True) == pk
    sj = sk.to_json()
    assert paillier.PrivateKey.from_json(sj, insecure=True) == sk
    with pytest.raises(ValueError, match="twice"):
        paillier.PrivateKey.from_json(sj[:-1] + ',"q":"%s"}' % format(sk.q, "x"), insecure=True)


def test_paillier_private_key_factors_in_canonical_order():
    from secea_fast.paillier import _serial
    pk, sk = paillier.keygen(BITS, insecure=True)
    assert sk.p < sk.q
    swapped = _serial.encode_key(_serial.PRIVATE_MAGIC, sk.q, sk.p)
    with pytest.raises(ValueError, match="p < q"):
        paillier.PrivateKey.from_bytes(swapped, insecure=True)
    text = _serial.encode_json(_serial.PRIVATE_KIND, n=sk.n, p=sk.q, q=sk.p)
    with pytest.raises(ValueError, match="p < q"):
        paillier.PrivateKey.from_json(text, insecure=True)


def _entry(rnd, *names):
    w = Writer(b"", 1).u64(rnd)
    for n in names:
        w.blob(n.encode())
    return b"".join(w.parts[2:])


def test_secemb_session_states_refuse_lists_out_of_order():
    """A saved SecEmb session's lists (the channel's used labels, answered
    users) are written sorted; the same entries in another order named the
    same state but re-serialised differently (found by the mutation fuzzing
    in CI), so the importers refuse them.  Control: the sorted bytes import
    and round-trip."""
    prm = secemb.SecEmbParams(m=20, d=2, m_prime=4, n_users=2)
    roster, ids = Roster.make([("server1", "server1"), ("user-0", "user"), ("user-1", "user")])
    s1s = secemb.Server1Session(roster, ids["server1"], run=7)
    for u in ("user-0", "user-1"):
        us = secemb.UserSession(roster, ids[u], run=7)
        _, sq = us.retrieve(1, prm, [1, 7, 19, 4], s1s.key_message())
        s1s.answer(1, prm, np.zeros((20, 2), dtype=np.uint64), {u: sq})
    data = s1s.export_state()
    used = [_entry(*e) for e in sorted(s1s.channel.used)]
    assert len(used) >= 2 and data.endswith(b"".join(used))
    load = lambda b: secemb.Server1Session.import_state(roster, ids["server1"], b)  # noqa: E731
    assert load(data).export_state() == data                                    # the control
    swapped = data[:-len(b"".join(used))] + b"".join(used[1:2] + used[:1] + used[2:])
    with pytest.raises(ValueError, match="strictly increasing"):
        load(swapped)
    # server 1's answered users (name, ephemeral key), written sorted by name
    eph = [_entry_blob(n, k) for n, k in sorted(s1s.current.eph.items())]
    assert b"".join(eph) in data
    with pytest.raises(ValueError, match="strictly increasing"):
        load(data.replace(b"".join(eph), eph[1] + eph[0] + b"".join(eph[2:])))


def _entry_blob(name, key):
    return b"".join(Writer(b"", 1).blob(name.encode()).blob(key).parts[2:])
