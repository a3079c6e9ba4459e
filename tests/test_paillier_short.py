"""secea_fast.paillier's short-exponent variant (``ShortExponentPublicKey``):
the fixed-base kernel against gmpy2, exact decryption and the homomorphic
identities, the exponent length rule, and the marks that keep the two
variants apart (keys, key bytes and JSON, ciphertext bytes).

1024-bit keys with insecure=True keep this file fast.
"""
import pickle
import secrets

import gmpy2
import pytest
from gmpy2 import mpz

from secea_fast import paillier as P
from secea_fast.paillier import _fixedbase


@pytest.fixture(scope="module")
def short():
    return P.keygen(1024, insecure=True, variant=P.SHORT_EXPONENT)


@pytest.fixture(scope="module")
def textbook():
    return P.keygen(1024, insecure=True)


# ------------------------------------------------------------------ the kernel


KERNELS = [pytest.param(True, id="portable"),
           pytest.param(False, id="avx2", marks=pytest.mark.skipif(
               not _fixedbase.lanes_available(), reason="no AVX2 here (or the portable backend)"))]


@pytest.mark.parametrize("portable", KERNELS)
@pytest.mark.parametrize("ebits", [1, 7, 64, 65, 160, 300])
@pytest.mark.parametrize("mbits", [128, 1000, 2048, 4097])
def test_fixed_base_powers_match_gmpy2(ebits, mbits, portable):
    m = mpz(secrets.randbits(mbits) | (1 << (mbits - 1)) | 1)
    h = mpz(secrets.randbelow(int(m)))
    fb = _fixedbase.build(h, m, ebits, portable=portable)
    assert fb.radix == (64 if portable else 26)
    # 0, 1, the largest, and batches that fill the four lanes and leave some empty
    exps = [0, 1, (1 << ebits) - 1] + [secrets.randbits(ebits) for _ in range(6)]
    assert _fixedbase.powers(fb, exps) == [gmpy2.powmod(h, e, m) for e in exps]
    assert _fixedbase.powers(fb, exps[:1]) == [gmpy2.powmod(h, exps[0], m)]


@pytest.mark.skipif(not _fixedbase.lanes_available(), reason="no AVX2 here (or the portable backend)")
@pytest.mark.parametrize("ebits", [1, 5, 64, 1024])
@pytest.mark.parametrize("mbits", [130, 1000, 2048, 4096])
def test_variable_base_lanes_match_gmpy2(mbits, ebits):
    """The four-lane exponentiation behind decryption without IFMA (one
    modulus and exponent, a batch of bases; batches that leave lanes empty)."""
    m = mpz(secrets.randbits(mbits) | (1 << (mbits - 1)) | 1)
    e = mpz(secrets.randbits(ebits) | (1 << (ebits - 1)))
    bases = [mpz(secrets.randbelow(int(m))) for _ in range(6)] + [mpz(0), mpz(1), m - 1]
    assert _fixedbase.powmod_lanes(bases, e, m) == [gmpy2.powmod(b, e, m) for b in bases]
    assert _fixedbase.powmod_lanes(bases[:1], mpz(0), m) == [1]


def test_fixed_base_follows_the_backend():
    import secea_fast
    try:
        secea_fast.set_backend("portable")
        assert not _fixedbase.lanes_available()
        fb = _fixedbase.build(mpz(3), mpz(1000003), 16)
        assert fb.radix == 64 and _fixedbase.powers(fb, [5, 60000]) == [243, pow(3, 60000, 1000003)]
    finally:
        secea_fast.set_backend("auto")


@pytest.mark.parametrize("portable", KERNELS)
def test_fixed_base_refuses_bad_sizes(portable):
    fb = _fixedbase.build(mpz(3), mpz(1000003), 16, portable=portable)
    with pytest.raises(RuntimeError):
        _fixedbase.powers(fb._replace(W=9), [5])
    with pytest.raises(RuntimeError):
        _fixedbase.powers(fb._replace(mod=fb.mod * 0 + 1000002), [5])    # even modulus


def test_window_keeps_a_window_in_the_first_level_cache():
    for L in (2, 33, 65, 129, 256):
        for ebits in (1, 160, 224, 256, 1024, 2048):
            w = _fixedbase.window_for(ebits, L)
            assert 1 <= w <= _fixedbase.MAX_W and ((1 << w) * L * 8 <= 40 << 10 or w == 1)
    assert _fixedbase.window_for(224, 65) == 6          # 2048-bit n, portable kernel: the measured best
    assert _fixedbase.window_for(224, 159) == 5         # 2048-bit n, four AVX2 lanes


def test_exponent_length_rule():
    assert _fixedbase.default_exponent_bits(2048) == 224
    assert _fixedbase.default_exponent_bits(3072) == 256
    assert _fixedbase.default_exponent_bits(1024) == 160
    assert _fixedbase.default_exponent_bits(15360) == 512


# ------------------------------------------------------------------ correctness


def test_decrypts_exactly_and_adds(short):
    pk, sk = short
    assert pk.variant == P.SHORT_EXPONENT and pk.exponent_bits == 160
    ms = [0, 1, -1, pk.n - 1, -(pk.n - 1) // 2] + [secrets.randbelow(pk.n) for _ in range(20)]
    cts = pk.encrypt(ms)
    assert sk.decrypt(cts) == [m % pk.n for m in ms]
    a, b = [secrets.randbits(200) for _ in range(9)], [secrets.randbits(200) for _ in range(9)]
    ca, cb = pk.encrypt(a), pk.encrypt(b)
    assert sk.decrypt(pk.add(ca, cb)) == [(x + y) % pk.n for x, y in zip(a, b)]
    assert sk.decrypt(pk.mul_scalar(ca, 12345)) == [x * 12345 % pk.n for x in a]
    assert sk.decrypt(pk.rerandomize(ca)) == a
    assert sk.decrypt_packed(pk.encrypt_packed([1, 2, 3], 16), 16, 3) == [1, 2, 3]


def test_randomizers_are_powers_of_hs(short, monkeypatch):
    """c = (1 + m n) hs^alpha for the alpha drawn (the variant's definition)."""
    pk, sk = short
    drawn = []
    real = secrets.randbits

    def spy(k):
        v = real(k)
        drawn.append((k, v))
        return v
    monkeypatch.setattr(_fixedbase.secrets, "randbits", spy)
    pk.clear_pool()
    (c,) = pk.encrypt([42])
    assert [k for k, _ in drawn] == [pk.exponent_bits]
    alpha = drawn[0][1]
    n2 = pk.nsquare
    assert c == (1 + 42 * pk.n) * pow(pk.hs, alpha, n2) % n2


def test_fresh_randomness_and_pool(short):
    pk, sk = short
    c1, c2 = pk.encrypt([7, 7])
    assert c1 != c2
    pk.precompute(5, processes=1)
    assert pk.pool_size == 5
    out = pk.encrypt([1, 2, 3])
    assert pk.pool_size == 2 and sk.decrypt(out) == [1, 2, 3]
    pk.clear_pool()


def test_worker_processes(short):
    pk, sk = short
    ms = list(range(37))
    assert sk.decrypt(pk.encrypt(ms, processes=2)) == ms
    pk.precompute(20, processes=2)
    assert sk.decrypt(pk.encrypt(ms[:20])) == ms[:20]


def test_private_key_encrypts_too(short):
    pk, sk = short
    assert sk.decrypt(sk.encrypt([5, 6])) == [5, 6]


def test_pickle_keeps_the_variant(short):
    pk = short[0]
    back = pickle.loads(pickle.dumps(pk))
    assert type(back) is P.ShortExponentPublicKey and back == pk


def test_wire_forms_round_trip(short):
    pk, sk = short
    assert P.ShortExponentPublicKey.from_bytes(pk.to_bytes(), insecure=True) == pk
    assert P.ShortExponentPublicKey.from_json(pk.to_json(), insecure=True) == pk
    for back in (P.PrivateKey.from_bytes(sk.to_bytes(), insecure=True),
                 P.PrivateKey.from_json(sk.to_json(), insecure=True)):
        assert back == sk and back.public_key == pk
    cts = pk.encrypt([3, 4])
    assert P.ciphertexts_from_bytes(P.ciphertexts_to_bytes(cts, pk), pk) == cts


# ------------------------------------------------------------------ validation


def test_keygen_options():
    with pytest.raises(ValueError, match="variant"):
        P.keygen(1024, insecure=True, variant="fast")
    with pytest.raises(ValueError, match="exponent_bits"):
        P.keygen(1024, insecure=True, exponent_bits=300)           # textbook keys have no exponent option
    with pytest.raises(ValueError, match="exponent_bits"):
        P.keygen(1024, insecure=True, variant=P.SHORT_EXPONENT, exponent_bits=100)
    pk, sk = P.keygen(1024, insecure=True, variant=P.SHORT_EXPONENT, exponent_bits=512)
    assert pk.exponent_bits == 512 and sk.decrypt(pk.encrypt([9])) == [9]


def test_constructor_checks_hs(short):
    pk = short[0]
    with pytest.raises(ValueError, match="hs"):
        P.ShortExponentPublicKey(pk.n, 1, insecure=True)
    with pytest.raises(ValueError, match="hs"):
        P.ShortExponentPublicKey(pk.n, pk.nsquare, insecure=True)
    with pytest.raises(TypeError, match="hs"):
        P.ShortExponentPublicKey(pk.n, "2", insecure=True)


# ------------------------------------------------------------------ the variants never mix


def test_keys_of_the_two_variants_differ(short):
    pk = short[0]
    assert P.PublicKey(pk.n, insecure=True) != pk
    assert pk != P.PublicKey(pk.n, insecure=True)


def test_key_forms_refuse_the_other_variant(short, textbook):
    spk, tpk = short[0], textbook[0]
    with pytest.raises(ValueError, match="data is a short-exponent public key"):
        P.PublicKey.from_bytes(spk.to_bytes(), insecure=True)
    with pytest.raises(ValueError, match="data is a textbook public key"):
        P.ShortExponentPublicKey.from_bytes(tpk.to_bytes(), insecure=True)
    with pytest.raises(ValueError, match="text is a short-exponent public key"):
        P.PublicKey.from_json(spk.to_json(), insecure=True)
    with pytest.raises(ValueError, match="text is a textbook public key"):
        P.ShortExponentPublicKey.from_json(tpk.to_json(), insecure=True)
    with pytest.raises(ValueError, match="phe"):
        spk.to_phe()


def test_ciphertext_bytes_refuse_the_other_variant(short, textbook):
    spk, tpk = short[0], textbook[0]
    # the same modulus under both variants: only the tag tells them apart
    same_n = P.PublicKey(spk.n, insecure=True)
    s_bytes = P.ciphertexts_to_bytes(spk.encrypt([1, 2]), spk)
    t_bytes = P.ciphertexts_to_bytes(same_n.encrypt([1, 2]), same_n)
    with pytest.raises(ValueError, match="data holds short-exponent ciphertexts but pk is a textbook key"):
        P.ciphertexts_from_bytes(s_bytes, same_n)
    with pytest.raises(ValueError, match="data holds no short-exponent ciphertexts"):
        P.ciphertexts_from_bytes(t_bytes, spk)
    with pytest.raises(ValueError):
        P.ciphertexts_from_bytes(s_bytes, tpk)
    # control: the tag is all that tells them apart (without it a textbook key takes them)
    from secea_fast.paillier import _serial
    untagged = s_bytes[len(_serial.SHORT_CT_TAG):]
    assert P.ciphertexts_from_bytes(untagged, same_n) == P.ciphertexts_from_bytes(s_bytes, spk)
