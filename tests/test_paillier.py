"""secea_fast.paillier: keys, encryption, CRT decryption, homomorphic identities,
packing, pools, worker processes, phe interop and wire formats.

1024-bit keys with insecure=True keep this file fast; one smoke test uses a
2048-bit key.
"""
import json
import math
import pickle
import secrets

import gmpy2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import secea_fast
from secea_fast import paillier as P
from secea_fast.paillier import _core, _serial

HYP = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def keys():
    return P.keygen(1024, insecure=True)


@pytest.fixture(scope="module")
def pk(keys):
    return keys[0]


@pytest.fixture(scope="module")
def sk(keys):
    return keys[1]


@pytest.fixture(scope="module")
def cts(pk):
    ms = [0, 1, 2, 3, 5, 8, 13, pk.n - 1, 12345678901234567890]
    return ms, pk.encrypt(ms)


def carmichael(sk):
    return (sk.p - 1) * (sk.q - 1) // math.gcd(sk.p - 1, sk.q - 1)


# ------------------------------------------------------------------------------ keygen


def test_keygen_sizes_and_structure(no_insecure_rng):
    for bits in (512, 1024, 1026):
        pk, sk = P.keygen(bits, insecure=True)
        assert pk.n.bit_length() == bits == pk.bits
        assert sk.p * sk.q == pk.n and sk.p < sk.q
        assert gmpy2.is_prime(sk.p) and gmpy2.is_prime(sk.q)
        assert math.gcd(pk.n, (sk.p - 1) * (sk.q - 1)) == 1
        assert pk.g == pk.n + 1 and pk.nsquare == pk.n ** 2
        assert sk.public_key is pk


def test_keygen_refuses_small_and_bad_args():
    for bits in (512, 1024, 2047):
        with pytest.raises(ValueError, match="insecure"):
            P.keygen(bits)
    with pytest.raises(ValueError):
        P.keygen(64, insecure=True)
    with pytest.raises(ValueError):
        P.keygen(P.MAX_BITS + 2)
    for bad in ("2048", 2048.0, True, None):
        with pytest.raises(TypeError):
            P.keygen(bad)
    with pytest.raises(TypeError):
        P.keygen(1024, insecure=1)


def test_keygen_2048_smoke(no_insecure_rng):
    pk, sk = P.keygen(2048)
    assert pk.n.bit_length() == 2048
    ms = [0, 1, pk.n - 1, secrets.randbelow(pk.n)]
    assert sk.decrypt(pk.encrypt(ms)) == ms
    assert sk.decrypt(sk.encrypt(ms)) == ms
    assert sk.decrypt_packed(pk.encrypt_packed(list(range(40)), 64), 64, 40) == list(range(40))
    assert pk.slots(64) == (2048 - 1 - P.GUARD_BITS) // 64


def test_default_key_size_is_3072():
    import inspect
    assert inspect.signature(P.keygen).parameters["bits"].default == 3072


# ------------------------------------------------------------------------------ round trips


def test_round_trip_edges_and_random(pk, sk, no_insecure_rng):
    ms = [0, 1, 2, pk.n - 2, pk.n - 1, pk.n // 2, pk.n // 2 + 1] + [secrets.randbelow(pk.n) for _ in range(8)]
    c = pk.encrypt(ms)
    assert all(type(x) is int and 0 < x < pk.nsquare for x in c)
    assert len(set(c)) == len(c)
    assert sk.decrypt(c) == ms
    assert sk.decrypt(sk.encrypt(ms)) == ms


def test_encryption_is_randomized(pk, sk):
    a, b = pk.encrypt([7, 7])
    assert a != b and sk.decrypt([a, b]) == [7, 7]


def test_signed_values(pk, sk):
    half = (pk.n - 1) // 2
    ms = [-1, -half, half, 0, -12345]
    c = pk.encrypt(ms)
    assert sk.decrypt(c) == [m % pk.n for m in ms]
    assert sk.decrypt(c, signed=True) == ms


def test_numpy_inputs(pk, sk):
    u = np.array([[0, 1], [2**64 - 1, 5]], dtype=np.uint64)
    assert sk.decrypt(pk.encrypt(u)) == [0, 1, 2**64 - 1, 5]
    i = np.array([-3, 4], dtype=np.int64)
    assert sk.decrypt(pk.encrypt(i), signed=True) == [-3, 4]
    o = np.array([pk.n - 1, 2**200], dtype=object)
    c = pk.encrypt(o)
    assert sk.decrypt(np.array(c, dtype=object)) == [pk.n - 1, 2**200]
    assert pk.encrypt([]) == [] and sk.decrypt([]) == []


def test_plaintext_range_and_types(pk):
    half = (pk.n - 1) // 2
    for bad in (pk.n, pk.n + 1, -half - 1, -pk.n):
        with pytest.raises(ValueError):
            pk.encrypt([bad])
    for bad in ([1.0], ["1"], [True], np.array([1.5]), np.array([True])):
        with pytest.raises(TypeError):
            pk.encrypt(bad)
    with pytest.raises(TypeError):
        pk.encrypt(5)            # batches only
    with pytest.raises(TypeError):
        pk.encrypt("123")


def test_decrypt_validates_ciphertexts(pk, sk):
    good = pk.encrypt([1])[0]
    for bad in (0, -1, pk.nsquare, pk.nsquare + good, sk.p, sk.q * 5, pk.n, pk.n * 7):
        with pytest.raises(ValueError):
            sk.decrypt([good, bad])
    with pytest.raises(TypeError):
        sk.decrypt([float(3)])
    with pytest.raises(TypeError):
        sk.decrypt(good)


def test_matches_textbook_decryption(pk, sk):
    """CRT + powmod_sec equals m = L(c^lambda mod n^2) * mu mod n."""
    lam = carmichael(sk)
    mu = pow((pow(pk.g, lam, pk.nsquare) - 1) // pk.n, -1, pk.n)
    ms = [secrets.randbelow(pk.n) for _ in range(5)]
    for m, c in zip(ms, pk.encrypt(ms)):
        assert (pow(c, lam, pk.nsquare) - 1) // pk.n * mu % pk.n == m


# ------------------------------------------------------------------------------ randomness


def test_encrypt_with_r_known_answer(pk, sk):
    r = secrets.randbelow(pk.n - 2) + 2
    m = secrets.randbelow(pk.n)
    expected = (1 + m * pk.n) * pow(r, pk.n, pk.nsquare) % pk.nsquare
    assert pk.encrypt_with_r([m], [r]) == [expected]
    assert sk.decrypt([expected]) == [m]


def test_r_not_a_unit_is_rejected(pk, sk):
    for r in (sk.p, sk.q, 2 * sk.p, pk.n - sk.q, 0, pk.n, -1, pk.n + 1):
        with pytest.raises(ValueError):
            pk.encrypt_with_r([1], [r])
    with pytest.raises(ValueError):
        pk.encrypt_with_r([1, 2], [3])


def test_sampler_resamples_non_units(pk, sk, monkeypatch):
    """A drawn r sharing a factor with n is never used (gcd(r, n) = 1 is checked)."""
    draws = iter([sk.p - 1, sk.q * 3 - 1, 41])           # r = draw + 1: p, 3q, then 42
    monkeypatch.setattr(_core.secrets, "randbelow", lambda bound: next(draws))
    x = _core.obfuscators_public(gmpy2.mpz(pk.n), gmpy2.mpz(pk.nsquare), 1)
    assert x == [pow(42, pk.n, pk.nsquare)]


def test_sampler_gives_up_on_a_broken_rng(pk, sk, monkeypatch):
    pk.clear_pool()
    monkeypatch.setattr(_core.secrets, "randbelow", lambda bound: sk.p - 1)
    with pytest.raises(RuntimeError):
        pk.encrypt([1])


def test_private_obfuscators_are_nth_residues(pk, sk, no_insecure_rng):
    lam = carmichael(sk)
    xs = _core.obfuscators_private(sk._ctx, 6)
    assert len(set(xs)) == 6
    for x in xs:
        assert 0 < x < pk.nsquare and pow(int(x), lam, pk.nsquare) == 1
    # an element that is not an n-th residue fails the same test
    assert pow(pk.n + 1, lam, pk.nsquare) != 1


def test_private_obfuscator_equals_rn_by_crt(pk, sk):
    """omega(r mod p)^q mod p^2 (and the same mod q^2) is r^n mod n^2."""
    r = secrets.randbelow(pk.n - 2) + 2
    p, q = sk.p, sk.q
    xp = pow(pow(r % p, p, p * p), q, p * p)
    xq = pow(pow(r % q, q, q * q), p, q * q)
    x = pow(r, pk.n, pk.nsquare)
    assert x % (p * p) == xp and x % (q * q) == xq


# ------------------------------------------------------------------------------ pool


def test_pool_consumed_once_and_fallback(no_insecure_rng):
    pk, sk = P.keygen(1024, insecure=True)
    assert pk.pool_size == 0
    assert pk.precompute(5, processes=1) == 5
    pooled = list(pk._pool)
    # E(0) = obfuscator, so the ciphertexts show which entries were used
    assert pk.encrypt([0, 0, 0]) == [int(x) for x in pooled[:3]]
    assert pk.pool_size == 2
    nxt = pk.encrypt([0, 0, 0])                      # 2 pooled, 1 fresh
    assert nxt[:2] == [int(x) for x in pooled[3:]] and nxt[2] not in map(int, pooled)
    assert pk.pool_size == 0
    assert sk.decrypt(pk.encrypt([9, 10])) == [9, 10]
    sk.precompute(4, processes=1)
    assert pk.pool_size == 4
    lam = carmichael(sk)
    assert all(pow(int(x), lam, pk.nsquare) == 1 for x in pk._pool)
    assert sk.decrypt(sk.encrypt([1, 2, 3, 4, 5])) == [1, 2, 3, 4, 5]
    assert pk.pool_size == 0
    pk.precompute(3, processes=1)
    pk.clear_pool()
    assert pk.pool_size == 0
    with pytest.raises(ValueError):
        pk.precompute(-1)
    with pytest.raises(ValueError):
        pk.precompute(1, processes=0)
    with pytest.raises(TypeError):
        pk.precompute(1, processes="2")


def test_pool_is_not_pickled(pk):
    pk.precompute(2, processes=1)
    clone = pickle.loads(pickle.dumps(pk))
    assert clone == pk and clone.pool_size == 0
    pk.clear_pool()


# ------------------------------------------------------------------------------ worker processes


def test_multiprocess_paths_equal_single_process(no_insecure_rng):
    pk, sk = P.keygen(1024, insecure=True)
    ms = [secrets.randbelow(pk.n) for _ in range(9)] + [0, 1, pk.n - 1]
    c = pk.encrypt(ms, processes=2)
    assert sk.decrypt(c) == ms
    assert sk.decrypt(c, processes=2) == sk.decrypt(c) == ms
    assert sk.decrypt(sk.encrypt(ms, processes=2), processes=3) == ms
    k = secrets.randbits(64)
    assert pk.mul_scalar(c, k, processes=2) == pk.mul_scalar(c, k)
    assert pk.mul_scalar(c, -k, processes=2) == pk.mul_scalar(c, -k)
    ks = [secrets.randbits(70) - 2**69 for _ in c]
    assert pk.mul_scalar(c, ks, processes=2) == pk.mul_scalar(c, ks)
    assert sk.decrypt(pk.rerandomize(c, processes=2)) == ms
    assert pk.precompute(6, processes=2) == 6
    assert sk.precompute(6, processes=2) == 12
    lam = carmichael(sk)
    assert all(pow(int(x), lam, pk.nsquare) == 1 for x in pk._pool)
    assert sk.decrypt(pk.encrypt(list(range(12)))) == list(range(12))
    assert pk.pool_size == 0
    pc = sk.encrypt_packed(list(range(50)), 32, processes=2)
    assert sk.decrypt_packed(pc, 32, 50, processes=2) == list(range(50))


def test_worker_batches_from_a_script_on_stdin():
    """``python - < script.py`` has no importable main file: the
    forkserver/spawn pool re-imported ``__main__`` in its workers and every
    batch with processes > 1 died with BrokenProcessPool.  Forked workers
    import nothing."""
    import subprocess
    import sys
    script = (
        "import os\n"
        "from secea_fast import paillier as P\n"
        "pk, sk = P.keygen(1024, insecure=True)\n"
        "assert pk.precompute(40, processes=2) == 40\n"
        "lam = (sk.p - 1) * (sk.q - 1)\n"
        "assert all(pow(int(x), lam, pk.nsquare) == 1 for x in pk._pool)\n"
        "ms = list(range(50))\n"
        "c = pk.encrypt(ms, processes=2)\n"
        "assert sk.decrypt(c, processes=3) == ms\n"
        "assert sk.decrypt(pk.mul_scalar(c, 7, processes=2), processes=2) == [7 * m for m in ms]\n"
        "assert sk.precompute(16, processes=2) == 16\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300)
    assert "BrokenProcessPool" not in out.stderr
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def _die_in_worker_once(marker):
    """A task wrapper: the first chunk run outside the test process kills
    its worker (transient, like an OOM kill)."""
    import os

    def task(n, count):
        if os.getpid() != _die_in_worker_once.parent and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(9)
        from secea_fast.paillier import _pool
        return _pool.task_obfuscators_public(n, count)
    return task


def test_worker_death_in_a_batch_loses_nothing(pk, tmp_path):
    import os
    from secea_fast.paillier import _pool
    _die_in_worker_once.parent = os.getpid()
    task = _die_in_worker_once(str(tmp_path / "m"))
    with pytest.warns(RuntimeWarning, match="worker process died"):
        xs = _pool.run_count(task, (pk.n,), 40, 3)
    assert len(xs) == 40 and len(set(xs)) == 40 and os.path.exists(tmp_path / "m")


def _last_job_dies_in_its_worker(state, job):
    import os
    import time
    parent, marker = state
    if os.getpid() == parent:
        time.sleep(0.5)                      # the caller's job: the worker takes the other meanwhile
    elif not os.path.exists(marker):         # the first job a worker takes kills it, whichever it is
        open(marker, "w").close()
        os._exit(9)
    return job


def test_worker_death_of_the_last_job_is_retried_in_a_worker(tmp_path):
    """The job that killed a worker is the only one left: it runs again in a
    new worker (never in the caller); the retry round used to have no
    worker, because the caller kept one job for itself, and raised."""
    import os
    from secea_fast._workers import run_shards
    got = []
    with pytest.warns(RuntimeWarning, match="worker process died"):
        run_shards(_last_job_dies_in_its_worker, [0, 1], (os.getpid(), str(tmp_path / "m")), got.append, 1,
                   caller_works=True)
    assert sorted(got) == [0, 1] and os.path.exists(tmp_path / "m")


def test_workers_restart_after_shutdown(pk, sk):
    c = pk.encrypt([1, 2, 3, 4], processes=2)
    P.shutdown_workers()
    assert sk.decrypt(c, processes=2) == [1, 2, 3, 4]


# ------------------------------------------------------------------------------ homomorphic identities

plain = st.integers(min_value=0, max_value=2**1023)
scalar = st.integers(min_value=-(2**200), max_value=2**200)


@HYP
@given(x=plain, y=plain)
def test_add_identity(pk, sk, x, y):
    x, y = x % pk.n, y % pk.n
    a, b = pk.encrypt([x, y])
    assert sk.decrypt([pk.add(a, b)]) == [(x + y) % pk.n]
    assert sk.decrypt([pk.sub(a, b)]) == [(x - y) % pk.n]
    assert P.add(pk, a, b) == pk.add(a, b)


@HYP
@given(x=plain, m=st.integers(min_value=-(2**1000), max_value=2**1000))
def test_add_plain_identity(pk, sk, x, m):
    x = x % pk.n
    (c,) = pk.encrypt([x])
    assert sk.decrypt([pk.add_plain(c, m)]) == [(x + m) % pk.n]


@HYP
@given(x=plain, k=scalar)
def test_mul_scalar_identity(pk, sk, x, k):
    x = x % pk.n
    (c,) = pk.encrypt([x])
    assert sk.decrypt([pk.mul_scalar(c, k)]) == [(k * x) % pk.n]
    if k >= 0:
        assert pk.mul_scalar(c, k) == pow(c, k, pk.nsquare)


@HYP
@given(x=plain)
def test_neg_identity(pk, sk, x):
    x = x % pk.n
    (c,) = pk.encrypt([x])
    nc = pk.neg(c)
    assert sk.decrypt([nc]) == [(-x) % pk.n]
    assert pk.add(c, nc) == 1 and sk.decrypt([1]) == [0]


def test_batch_ops_and_broadcast(pk, sk, cts):
    ms, c = cts
    n = pk.n
    assert sk.decrypt(pk.add(c, c)) == [2 * m % n for m in ms]
    assert sk.decrypt(pk.add(c, c[0])) == [(m + ms[0]) % n for m in ms]
    assert sk.decrypt(pk.add_plain(c, 5)) == [(m + 5) % n for m in ms]
    assert sk.decrypt(pk.add_plain(c, list(range(len(c))))) == [(m + i) % n for i, m in enumerate(ms)]
    assert sk.decrypt(pk.mul_scalar(c, 3)) == [3 * m % n for m in ms]
    assert sk.decrypt(pk.mul_scalar(c, np.arange(len(c)))) == [i * m % n for i, m in enumerate(ms)]
    assert sk.decrypt(pk.mul_scalar(c, -2)) == [-2 * m % n for m in ms]
    assert sk.decrypt(pk.mul_scalar(c, n - 1)) == [-m % n for m in ms]
    assert sk.decrypt(pk.mul_scalar(c, 2**5000 + 1)) == [(2**5000 + 1) * m % n for m in ms]
    assert sk.decrypt(pk.neg(c)) == [-m % n for m in ms]
    assert sk.decrypt(pk.mul_scalar(c, 0)) == [0] * len(c)
    assert isinstance(pk.mul_scalar(c[0], 2), int) and isinstance(pk.mul_scalar(c, 2), list)
    with pytest.raises(ValueError):
        pk.add(c, c[:-1])
    with pytest.raises(ValueError):
        pk.add([0], c[:1])
    with pytest.raises(ValueError):
        pk.neg([sk.p])
    with pytest.raises(ValueError):
        pk.mul_scalar([sk.q], -1)
    with pytest.raises(TypeError):
        pk.mul_scalar(c, 1.5)


def test_multi_exp(pk, sk, cts):
    ms, c = cts
    n = pk.n
    for bits in (1, 8, 64, 300):
        ks = [secrets.randbits(bits) - (1 << (bits - 1)) for _ in c]
        prod = pk.multi_exp(c, ks)
        naive = 1
        for ci, k in zip(c, ks):
            naive = naive * pow(ci, k, pk.nsquare) % pk.nsquare
        assert prod == naive
        assert sk.decrypt([prod]) == [sum(k * m for k, m in zip(ks, ms)) % n]
    big = pk.encrypt(list(range(70)))
    ks = [secrets.randbits(64) for _ in big]
    assert sk.decrypt([pk.multi_exp(big, ks)]) == [sum(k * m for k, m in zip(ks, range(70))) % n]
    assert pk.multi_exp([], []) == 1 and pk.multi_exp(c, [0] * len(c)) == 1
    assert P.multi_exp(pk, c[:2], [1, 1]) == pk.add(c[0], c[1])
    with pytest.raises(ValueError):
        pk.multi_exp(c, [1])


# ------------------------------------------------------------------------------ packing


def test_packed_round_trip(pk, sk, no_insecure_rng):
    for slot_bits, count in ((8, 1), (17, 200), (64, 61), (120, 8), (pk.bits - 1 - P.GUARD_BITS, 3)):
        vals = [secrets.randbits(slot_bits) for _ in range(count)]
        vals[0] = (1 << slot_bits) - 1
        c = pk.encrypt_packed(vals, slot_bits)
        assert len(c) == -(-count // pk.slots(slot_bits))
        assert sk.decrypt_packed(c, slot_bits, count) == vals
        assert sk.decrypt_packed(sk.encrypt_packed(vals, slot_bits), slot_bits, count) == vals
    assert pk.encrypt_packed([], 16) == [] and sk.decrypt_packed([], 16, 0) == []


def test_packed_operations_within_capacity(pk, sk):
    value_bits, additions, scalar_bits = 20, 5, 10
    slot_bits = P.check_packing(value_bits + 3 + scalar_bits, value_bits, additions, scalar_bits)
    assert slot_bits == 33
    rows = [[(1 << value_bits) - 1 - j * i for i in range(70)] for j in range(additions)]
    k = (1 << scalar_bits) - 1
    acc = None
    for row in rows:
        c = pk.mul_scalar(pk.encrypt_packed(row, slot_bits), k)
        acc = c if acc is None else pk.add(acc, c)
    expected = [k * sum(r[i] for r in rows) for i in range(70)]
    assert sk.decrypt_packed(acc, slot_bits, 70) == expected


def test_check_packing_rule():
    assert P.check_packing(64, 40, 1000, 10) == 60
    assert P.check_packing(64, 64) == 64
    assert P.check_packing(65, 64, 2) == 65
    for args in ((63, 64), (64, 64, 2), (64, 40, 1025, 14), (64, 32, 1, 33), (10, 9, 3)):
        with pytest.raises(ValueError, match="overflow"):
            P.check_packing(*args)
    for args in ((0, 1), (8, -1), (8, 4, 0), (8, 4, 1, -1)):
        with pytest.raises(ValueError):
            P.check_packing(*args)
    with pytest.raises(TypeError):
        P.check_packing(8.0, 4)


def test_packing_errors(pk, sk):
    with pytest.raises(ValueError):
        pk.encrypt_packed([256], 8)
    with pytest.raises(ValueError):
        pk.encrypt_packed([-1], 8)
    with pytest.raises(ValueError):
        pk.encrypt_packed([1], pk.bits)             # no slot fits
    with pytest.raises(ValueError):
        pk.encrypt_packed([1], 0)
    c = pk.encrypt_packed(list(range(10)), 16)
    with pytest.raises(ValueError):
        sk.decrypt_packed(c, 16, 1000)              # wrong ciphertext count
    # overflow of the top used slot lands in the guard band / unused slots: detected
    over = pk.mul_scalar(c, 1 << 16)
    with pytest.raises(ValueError, match="overflow"):
        sk.decrypt_packed(over, 16, 10)
    full = pk.slots(16)
    cf = pk.encrypt_packed([0xFFFF] * full, 16)
    with pytest.raises(ValueError, match="overflow"):
        sk.decrypt_packed(pk.add(cf, cf), 16, full)


# ------------------------------------------------------------------------------ phe interop


def test_phe_interop_both_ways(pk, sk):
    phe = pytest.importorskip("phe")
    ppk, psk = pk.to_phe(), sk.to_phe()
    assert isinstance(ppk, phe.PaillierPublicKey) and ppk.n == pk.n
    assert psk.p == sk.p and psk.q == sk.q and psk.hp == sk._ctx.hp and psk.hq == sk._ctx.hq
    ms = [0, 1, pk.n - 1, secrets.randbelow(pk.n), 2**64 + 7]
    ours = pk.encrypt(ms)
    assert [psk.raw_decrypt(c) for c in ours] == ms
    small = [5, -7, 2**40]
    for v, c in zip(small, pk.encrypt(small)):
        assert psk.decrypt(phe.EncryptedNumber(ppk, c, exponent=0)) == v
    theirs = [ppk.raw_encrypt(m) for m in ms]
    assert sk.decrypt(theirs) == ms
    r = secrets.randbelow(pk.n - 1) + 1
    assert pk.encrypt_with_r([ms[3]], [r]) == [ppk.raw_encrypt(ms[3], r_value=r)]
    # homomorphic ops agree
    e1, e2 = phe.EncryptedNumber(ppk, ours[3]), phe.EncryptedNumber(ppk, ours[4])
    assert (e1 + e2).ciphertext(be_secure=False) == pk.add(ours[3], ours[4])
    assert (e1 * 12345).ciphertext(be_secure=False) == pk.mul_scalar(ours[3], 12345)
    # keys from phe
    pk2 = P.PublicKey.from_phe(ppk, insecure=True)
    sk2 = P.PrivateKey.from_phe(psk, insecure=True)
    assert pk2 == pk and sk2 == sk
    assert sk2.decrypt(theirs) == ms


def test_phe_generated_keys():
    phe = pytest.importorskip("phe")
    ppk, psk = phe.generate_paillier_keypair(n_length=1024)
    sk = P.PrivateKey.from_phe(psk, insecure=True)
    c = [ppk.raw_encrypt(7), ppk.encrypt(-3).ciphertext()]
    assert sk.decrypt(c, signed=True) == [7, -3]
    assert psk.decrypt(phe.EncryptedNumber(ppk, sk.public_key.encrypt([99])[0])) == 99
    with pytest.raises(ValueError):
        P.PublicKey.from_phe(ppk)                    # 1024 bits: insecure=True required
    with pytest.raises(TypeError):
        P.PublicKey.from_phe(object())
    with pytest.raises(TypeError):
        P.PrivateKey.from_phe(ppk)


# ------------------------------------------------------------------------------ serialization


def test_key_serialization_round_trip(pk, sk):
    assert P.PublicKey.from_bytes(pk.to_bytes(), insecure=True) == pk
    assert P.PublicKey.from_json(pk.to_json(), insecure=True) == pk
    sk2 = P.PrivateKey.from_bytes(sk.to_bytes(), insecure=True)
    sk3 = P.PrivateKey.from_json(sk.to_json().encode(), insecure=True)
    assert sk2 == sk3 == sk and sk2.public_key == pk
    assert json.loads(sk.to_json())["p"] == format(sk.p, "x")
    c = pk.encrypt([42])
    assert sk2.decrypt(c) == [42]
    with pytest.raises(ValueError, match="insecure"):
        P.PublicKey.from_bytes(pk.to_bytes())        # 1024-bit key needs insecure=True
    with pytest.raises(ValueError, match="insecure"):
        P.PrivateKey.from_json(sk.to_json())


def test_malformed_key_bytes(pk, sk):
    for good, cls in ((pk.to_bytes(), P.PublicKey), (sk.to_bytes(), P.PrivateKey)):
        for cut in (0, 5, len(_serial.PUBLIC_MAGIC), len(_serial.PUBLIC_MAGIC) + 1,
                    len(_serial.PUBLIC_MAGIC) + 3, len(good) // 2, len(good) - 1):
            with pytest.raises(ValueError):
                cls.from_bytes(good[:cut], insecure=True)
        with pytest.raises(ValueError):
            cls.from_bytes(good + b"\x00", insecure=True)
        bad_version = bytearray(good)
        bad_version[len(_serial.PUBLIC_MAGIC)] = 2
        with pytest.raises(ValueError):
            cls.from_bytes(bytes(bad_version), insecure=True)
        bad_len = bytearray(good)
        bad_len[len(_serial.PUBLIC_MAGIC) + 1:len(_serial.PUBLIC_MAGIC) + 5] = (10**6).to_bytes(4, "big")
        with pytest.raises(ValueError):
            cls.from_bytes(bytes(bad_len), insecure=True)
        with pytest.raises(TypeError):
            cls.from_bytes(good.hex(), insecure=True)
    with pytest.raises(ValueError):
        P.PublicKey.from_bytes(sk.to_bytes(), insecure=True)       # wrong magic
    with pytest.raises(ValueError):
        P.PrivateKey.from_bytes(pk.to_bytes(), insecure=True)
    # non-minimal encoding
    n_raw = pk.n.to_bytes((pk.bits + 7) // 8, "big")
    padded = _serial.PUBLIC_MAGIC + b"\x01" + (len(n_raw) + 1).to_bytes(4, "big") + b"\x00" + n_raw
    with pytest.raises(ValueError):
        P.PublicKey.from_bytes(padded, insecure=True)
    # well-formed but not a valid key
    for n in (pk.n + 1, sk.p, sk.p ** 2, 3):
        with pytest.raises(ValueError):
            P.PublicKey.from_bytes(_serial.encode_key(_serial.PUBLIC_MAGIC, n), insecure=True)
    for p, q in ((sk.p, sk.p), (sk.p, sk.q + 1), (sk.p * sk.q, 1), (sk.p, 3 * sk.q)):
        with pytest.raises(ValueError):
            P.PrivateKey.from_bytes(_serial.encode_key(_serial.PRIVATE_MAGIC, p, q), insecure=True)


def test_malformed_key_json(pk, sk):
    good_pub, good_priv = json.loads(pk.to_json()), json.loads(sk.to_json())
    bad_texts = ["", "{", "[]", "null", "42", '"x"', "\xff", pk.to_json()[:-1], "{" * 100000]
    for text in bad_texts:
        with pytest.raises(ValueError):
            P.PublicKey.from_json(text, insecure=True)
    with pytest.raises(ValueError):
        P.PublicKey.from_json(b"\xff\xfe", insecure=True)

    def variants(obj):
        yield {k: v for k, v in obj.items() if k != "n"}                   # missing
        yield {**obj, "extra": 1}                                            # unknown member
        yield {**obj, "kind": "phe"}
        yield {**obj, "version": 2}
        yield {**obj, "version": "1"}
        yield {**obj, "version": True}
        yield {**obj, "n": int(obj["n"], 16)}                                # not a string
        yield {**obj, "n": "0x" + obj["n"]}
        yield {**obj, "n": obj["n"].upper()}
        yield {**obj, "n": "0" + obj["n"]}
        yield {**obj, "n": obj["n"] + "g"}
        yield {**obj, "n": ""}
        yield {**obj, "n": "-" + obj["n"]}
        yield {**obj, "n": format(int(obj["n"], 16) + 2, "x")}              # wrong n

    for v in variants(good_pub):
        if v.get("n") == format(pk.n + 2, "x"):
            continue   # n + 2 may happen to be a valid-looking modulus for a public key
        with pytest.raises(ValueError):
            P.PublicKey.from_json(json.dumps(v), insecure=True)
    for v in variants(good_priv):
        with pytest.raises(ValueError):
            P.PrivateKey.from_json(json.dumps(v), insecure=True)
    with pytest.raises(ValueError):
        P.PrivateKey.from_json(pk.to_json(), insecure=True)
    with pytest.raises(ValueError):
        P.PrivateKey.from_json(json.dumps({**good_priv, "q": format(sk.q + 2, "x")}), insecure=True)
    with pytest.raises(TypeError):
        P.PublicKey.from_json(123, insecure=True)


def test_ciphertext_bytes(pk, sk, cts):
    ms, c = cts
    width = 2 * ((pk.bits + 7) // 8)
    b = P.ciphertexts_to_bytes(c, pk)
    assert len(b) == width * len(c)
    assert b[:width] == c[0].to_bytes(width, "big")
    assert P.ciphertexts_from_bytes(b, pk) == c
    assert P.ciphertexts_from_bytes(b"", pk) == [] and P.ciphertexts_to_bytes([], pk) == b""
    assert sk.decrypt(P.ciphertexts_from_bytes(bytearray(b), pk)) == ms
    for cut in (1, width - 1, width + 1, len(b) - 1):
        with pytest.raises(ValueError):
            P.ciphertexts_from_bytes(b[:cut], pk)
    with pytest.raises(ValueError):
        P.ciphertexts_from_bytes(bytes(width), pk)                       # c = 0
    with pytest.raises(ValueError):
        P.ciphertexts_from_bytes(pk.nsquare.to_bytes(width, "big"), pk)  # c = n^2
    with pytest.raises(ValueError):
        P.ciphertexts_from_bytes(b"\xff" * width, pk)
    with pytest.raises(ValueError):
        P.ciphertexts_to_bytes([0], pk)
    with pytest.raises(ValueError):
        P.ciphertexts_to_bytes([pk.nsquare], pk)
    with pytest.raises(TypeError):
        P.ciphertexts_from_bytes(b.hex(), pk)
    with pytest.raises(TypeError):
        P.ciphertexts_to_bytes(c, sk)


def test_public_key_pickles_private_key_never(pk, sk):
    """A public key pickles as n; the private key is a secret holder
    (secea_fast._secrets): never pickled or copied, not even inside an
    executor's transfer (batch workers inherit it by fork)."""
    import copy
    from secea_fast.executor import party_transfer
    assert pickle.loads(pickle.dumps(pk)) == pk
    for f in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="PrivateKey holds a secret"):
            f(sk)
    with party_transfer(), pytest.raises(TypeError, match="PrivateKey holds a secret"):
        pickle.dumps(sk)
    assert sk.decrypt(pk.encrypt([5], processes=2), processes=2) == [5]
    assert str(sk.p) not in repr(sk) and format(sk.p, "x") not in repr(sk)


def test_public_key_validation():
    with pytest.raises(ValueError):
        P.PublicKey(2 * (2**1100 + 1), insecure=True)          # even
    with pytest.raises(ValueError):
        P.PublicKey(int(gmpy2.next_prime(2**1100)), insecure=True)   # prime
    with pytest.raises(ValueError):
        P.PublicKey(int(gmpy2.next_prime(2**600)) ** 2, insecure=True)   # square
    with pytest.raises(ValueError):
        P.PublicKey(15, insecure=True)                           # too small
    with pytest.raises(TypeError):
        P.PublicKey("12345")


# ---- 8-lane IFMA exponentiation (csrc/bignum/mb8_powm.c) -----------------------------
from secea_fast.paillier import _mb  # noqa: E402


@pytest.mark.parametrize("mod_bits, exp_bits, count", [(3, 2, 1), (60, 64, 8), (300, 1, 9), (1100, 1024, 3),
                                                       (2048, 1024, 17), (4096, 64, 8), (4100, 2048, 2)])
def test_mb8_powmod_matches_gmpy2(mod_bits, exp_bits, count, backend):
    mods = [gmpy2.mpz(secrets.randbits(mod_bits)) | (1 << (mod_bits - 1)) | 1 for _ in range(count)]
    mods[0] = gmpy2.mpz((1 << mod_bits) - 1)                 # all-ones modulus
    bases = [gmpy2.mpz(secrets.randbelow(int(m))) for m in mods]
    exps = [gmpy2.mpz(secrets.randbits(exp_bits)) for _ in mods]
    bases[0], exps[0] = mods[0] - 1, gmpy2.mpz((1 << exp_bits) - 1)   # edge values
    if count > 2:
        bases[1], bases[2] = gmpy2.mpz(0), gmpy2.mpz(1)
        exps[1] = gmpy2.mpz(0)
    got = _mb.powmod_sec_batch(bases, exps, mods)
    assert got == [gmpy2.powmod(b, e, m) for b, e, m in zip(bases, exps, mods)]


def test_mb8_mixed_moduli_in_one_call_and_fallbacks():
    mods = [gmpy2.next_prime(gmpy2.mpz(secrets.randbits(b))) for b in (100, 700, 1500, 2000)] * 3
    bases = [gmpy2.mpz(secrets.randbits(2100)) for _ in mods]          # reduced first
    exps = [gmpy2.mpz(secrets.randbits(300)) for _ in mods]
    want = [gmpy2.powmod(b, e, m) for b, e, m in zip(bases, exps, mods)]
    assert _mb.powmod_sec_batch(bases, exps, mods) == want
    even = [m + 1 for m in mods[:3]]                                      # not Montgomery-friendly
    assert _mb.powmod_sec_batch(bases[:3], exps[:3], even) == [gmpy2.powmod(b, e, m) for b, e, m in
                                                                zip(bases, exps, even)]
    before = secea_fast.get_backend()
    secea_fast.set_backend("portable")
    try:
        assert not _mb.available()
        assert _mb.powmod_sec_batch(bases, exps, mods) == want
    finally:
        secea_fast.set_backend(before)


def test_mb8_zero_results_negative_exponents_and_chunk_conversion():
    # a base sharing a factor with a composite modulus: the power is 0 mod m
    # (the last Montgomery step gives m itself unless the result is made canonical)
    p = gmpy2.next_prime(gmpy2.mpz(secrets.randbits(1000)))
    m = p * p
    bases = [p, p, 3, p * 5 % m] + [gmpy2.mpz(secrets.randbelow(int(m))) for _ in range(4)]
    exps = [gmpy2.mpz(2), gmpy2.mpz(1), gmpy2.mpz(2), gmpy2.mpz(7)] + [gmpy2.mpz(secrets.randbits(900)) for _ in range(4)]
    got = _mb.powmod_sec_batch(bases, exps, [m] * 8)
    assert got == [gmpy2.powmod(b, e, m) for b, e in zip(bases, exps)]
    assert got[0] == 0 and got[1] == p
    assert _mb.powmod_sec_batch([3], [2], [9]) == [0]
    with pytest.raises(ValueError, match=">= 0"):
        _mb.powmod_sec_batch([3] * 4, [-1] * 4, [7] * 4)
    # exponents much longer than the moduli, unequal lengths in one call
    long_e = [gmpy2.mpz(secrets.randbits(5000)), gmpy2.mpz(1), gmpy2.mpz(0)]
    ms = [gmpy2.mpz(1000003), gmpy2.mpz(1000033), gmpy2.mpz(999983)]
    assert _mb.powmod_sec_batch([2, 3, 5], long_e, ms) == [gmpy2.powmod(b, e, mm) for b, e, mm in
                                                          zip([2, 3, 5], long_e, ms)]


def test_mb4_and_mb8_lanes_at_every_chunk_size(monkeypatch):
    """Chunks of one or two exponentiations run with each number across the
    zmm lanes, of three or four on the 4-lane (ymm) kernel,
    larger ones on the 8-lane (zmm) one: both give gmpy2's results at every
    count, and a caller's cache keeps the moduli's constants unwiped."""
    if not _mb.available():
        pytest.skip("no AVX-512 IFMA here: the gmpy2 fallback is tested elsewhere")
    used = []
    for name in ("secea_mb4_powm", "secea_mb8_powm", "secea_hz_powm", "secea_hz2_powm"):
        real = getattr(_mb.lib, name)
        monkeypatch.setattr(_mb, "lib", _LibSpy(_mb.lib, name, real, used), raising=True)
    p, q = (gmpy2.next_prime(gmpy2.mpz(secrets.randbits(520))) for _ in range(2))
    for count in range(1, 10):
        mods = [p * p, q * q] * count
        mods = mods[:count]
        bases = [gmpy2.mpz(secrets.randbelow(int(m))) for m in mods]
        exps = [gmpy2.mpz(secrets.randbits(520)) for _ in mods]
        cache: dict = {}
        got = _mb.powmod_sec_batch(bases, exps, mods, cache=cache)
        assert got == [gmpy2.powmod(b, e, m) for b, e, m in zip(bases, exps, mods)]
        assert got == _mb.powmod_sec_batch(bases, exps, mods, cache=cache)      # from the cache
        assert all(c[0].any() for c in cache.values())                          # not wiped
    # 1, 2: across the lanes (hz_powm.c); 3-4: one ymm call each; 5-8: one zmm
    # call; 9: zmm then one across the lanes (twice: the cached rerun)
    assert used == [w for c in range(1, 10) for w in 2 * (["secea_hz_powm"] if c == 1 else
                                                         ["secea_hz2_powm"] if c == 2 else
                                                         ["secea_mb4_powm"] if c <= 4 else
                                                         ["secea_mb8_powm"] if c <= 8 else
                                                         ["secea_mb8_powm", "secea_hz_powm"])]


class _LibSpy:
    """The cffi lib with one or more kernels recorded by name."""
    def __init__(self, lib, name, fn, used):
        self._lib, self._fns, self._used = lib, {name: fn}, used
        if isinstance(lib, _LibSpy):
            self._lib, self._fns = lib._lib, {**lib._fns, name: fn}

    def __getattr__(self, name):
        if name in self._fns:
            fn, used = self._fns[name], self._used
            return lambda *a: (used.append(name), fn(*a))[1]
        return getattr(self._lib, name)


def test_mb8_mixed_exponent_lengths_keep_their_order():
    """Lanes are grouped by exponent length (a call costs its longest exponent
    in every lane); results come back in the caller's order."""
    m = gmpy2.next_prime(gmpy2.mpz(secrets.randbits(1500)))
    exps = [gmpy2.mpz(secrets.randbits(b)) for b in (1, 2000, 5, 64, 3, 1024, 0, 17, 900, 2, 33)]
    bases = [gmpy2.mpz(secrets.randbelow(int(m))) for _ in exps]
    assert _mb.powmod_sec_batch(bases, exps, [m] * len(exps)) == [gmpy2.powmod(b, e, m) for b, e in zip(bases, exps)]


# ---- one or two exponentiations across the zmm lanes (csrc/bignum/hz_powm.c) ----------
def _hz_cases(L):
    """Moduli needing exactly L limbs (4 m < 2^(52 L)): the largest (all ones,
    2^(52 L - 2) - 1), one just above the previous limb boundary, a random one;
    bases m - 1, 0, 1 and random; exponents 0, 1, all ones and random."""
    top = 52 * L - 2
    low = max(2, 52 * (L - 1) - 1)                   # the fewest bits that need L limbs
    mods = [gmpy2.mpz((1 << top) - 1), gmpy2.mpz((1 << (low - 1)) + 1) | 1,
            gmpy2.mpz(secrets.randbits(top)) | (1 << (top - 1)) | 1]
    cases = []
    for m in mods:
        assert _mb.limbs_for(m.bit_length()) == L
        for b in (m - 1, gmpy2.mpz(0), gmpy2.mpz(1), gmpy2.mpz(secrets.randbelow(int(m)))):
            for eb in (0, 1, 5, 61):
                e = gmpy2.mpz((1 << eb) - 1) if eb in (1, 5) else gmpy2.mpz(secrets.randbits(61)) if eb else eb
                cases.append((b, gmpy2.mpz(e), m))
    return cases


def _hz_check(L, cases):
    consts = {int(m): _mb._modulus(int(m), L) for _, _, m in cases}
    want = [gmpy2.powmod(b, e, m) for b, e, m in cases]
    for i, (b, e, m) in enumerate(cases):
        ebits = max(1, int(e).bit_length())
        assert _mb._run_hz([b], [e], [m], L, ebits, consts) == [want[i]], (L, i)
    # the pairs kernel on neighbouring cases (different moduli and exponents)
    for i in range(0, len(cases) - 1, 2):
        (b0, e0, m0), (b1, e1, m1) = cases[i], cases[i + 1]
        ebits = max(1, int(e0).bit_length(), int(e1).bit_length())
        assert _mb._run_hz([b0, b1], [e0, e1], [m0, m1], L, ebits, consts) == want[i:i + 2], (L, i)
    # the lane-parallel kernel as the twin, four lanes per call
    for i in range(0, len(cases), 4):
        chunk = cases[i:i + 4]
        ebits = max(1, max(int(e).bit_length() for _, e, _ in chunk))
        got = _mb._run_chunk(*[list(x) for x in zip(*chunk)], L, ebits, consts)
        assert got == want[i:i + len(chunk)], (L, i)


needs_ifma = pytest.mark.skipif(not _mb.available(), reason="no AVX-512 IFMA here")


@needs_ifma
def test_hz_edge_cases_at_every_limb_count_up_to_80_match_gmpy2_and_lane_kernel():
    for L in range(1, 81):
        _hz_check(L, _hz_cases(L))


@needs_ifma
def test_hz_random_sizes_and_paillier_shapes_match_gmpy2():
    for _ in range(150):
        bits = 3 + secrets.randbelow(4200)
        m = gmpy2.mpz(secrets.randbits(bits)) | (1 << (bits - 1)) | 1
        b = gmpy2.mpz(secrets.randbelow(int(m)))
        e = gmpy2.mpz(secrets.randbits(secrets.randbelow(400)))
        assert _mb.powmod_sec_batch([b], [e], [m]) == [gmpy2.powmod(b, e, m)], (bits, e)
    # one encryption's r^n mod n^2 and one decryption's pair mod p^2, q^2
    p, q = (gmpy2.next_prime(gmpy2.mpz(secrets.randbits(1024)) | (1 << 1023)) for _ in range(2))
    n = p * q
    r = gmpy2.mpz(secrets.randbelow(int(n)))
    assert _mb.powmod_sec_batch([r], [n], [n * n]) == [gmpy2.powmod(r, n, n * n)]
    c = gmpy2.mpz(secrets.randbelow(int(n * n)))
    got = _mb.powmod_sec_batch([c % (p * p), c % (q * q)], [p - 1, q - 1], [p * p, q * q], cache={})
    assert got == [gmpy2.powmod(c, p - 1, p * p), gmpy2.powmod(c, q - 1, q * q)]


@needs_ifma
def test_hz_zero_powers_are_canonical_and_portable_backend_refuses():
    # a base sharing a factor with the modulus: the last Montgomery step gives
    # m itself unless the masked subtraction makes it 0
    p = gmpy2.next_prime(gmpy2.mpz(secrets.randbits(700)))
    m = p * p
    consts = {int(m): _mb._modulus(int(m), _mb.limbs_for(m.bit_length()))}
    L = _mb.limbs_for(m.bit_length())
    assert _mb._run_hz([p], [gmpy2.mpz(2)], [m], L, 2, consts) == [0]
    assert _mb._run_hz([p, p * 3], [gmpy2.mpz(2), gmpy2.mpz(3)], [m, m], L, 2, consts) == [0, 0]
    assert _mb._run_hz([p], [gmpy2.mpz(1)], [m], L, 1, consts) == [p]
    # the kernel takes bases up to 2m - 1 (outputs of almost Montgomery products)
    e = gmpy2.mpz(secrets.randbits(300))
    assert _mb._run_hz([2 * m - 1], [e], [m], L, 300, consts) == [gmpy2.powmod(2 * m - 1, e, m)]
    assert _mb._run_hz([2 * m - 1, m], [e, e], [m, m], L, 300, consts) == [gmpy2.powmod(m - 1, e, m), 0]
    before = secea_fast.get_backend()
    secea_fast.set_backend("portable")
    try:
        with pytest.raises(RuntimeError, match="unavailable"):
            _mb._run_hz([p], [gmpy2.mpz(2)], [m], L, 2, consts)
    finally:
        secea_fast.set_backend(before)


@needs_ifma
def test_single_public_power_takes_hz_only_for_long_exponents(monkeypatch):
    from secea_fast import tuning
    used = []
    monkeypatch.setattr(_mb, "lib", _LibSpy(_mb.lib, "secea_hz_powm", _mb.lib.secea_hz_powm, used))
    n = gmpy2.next_prime(gmpy2.mpz(secrets.randbits(600))) * gmpy2.next_prime(gmpy2.mpz(secrets.randbits(600)))
    n2 = n * n
    c = gmpy2.mpz(secrets.randbelow(int(n2)))
    assert _core.powmod_public([c], [n], n2) == [gmpy2.powmod(c, n, n2)]
    assert used == ["secea_hz_powm"]
    short = gmpy2.mpz((1 << (tuning.PAILLIER_HZ_MIN_EBITS - 1)) - 1)
    assert _core.powmod_public([c], [short], n2) == [gmpy2.powmod(c, short, n2)]
    assert _core.powmod_broadcast([c], -int(short), n2) == [gmpy2.powmod(gmpy2.invert(c, n2), short, n2)]
    assert used == ["secea_hz_powm"]                                   # gmpy2 for short exponents
    assert _core.powmod_broadcast([c], -int(n), n2) == [gmpy2.powmod(gmpy2.invert(c, n2), n, n2)]
    assert used == ["secea_hz_powm"] * 2
    assert _core.powmod_public([], [], n2) == []


def test_forked_child_never_reuses_the_parents_obfuscators(pk):
    """A child forked after precompute starts with an empty pool: the same
    r^n in two processes would give m1 - m2 from c1 / c2."""
    import os
    pk.clear_pool()
    pk.precompute(3, processes=1)
    pooled = list(pk._pool)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                           # child
        try:
            c = pk.encrypt([0], processes=1)[0]
            os.write(w, f"{pk.pool_size} {int(c in pooled)}".encode())
        finally:
            os._exit(0)
    os.close(w)
    msg = os.read(r, 64).decode()
    os.close(r)
    os.waitpid(pid, 0)
    assert msg == "0 0"
    assert pk.pool_size == 3                              # the parent keeps its own
    pk.clear_pool()


def test_worker_jobs_do_not_consume_inherited_pools(pk, sk):
    """Encryptions done in the package's forked workers draw fresh randomness:
    no ciphertext equals an encryption of 0 with a pooled obfuscator."""
    pk.clear_pool()
    pk.precompute(4, processes=1)
    pooled = set(pk._pool)
    cts = pk.encrypt([0] * 8, processes=2)
    assert not pooled.intersection(int(c) for c in cts[4:])
    assert sk.decrypt(cts) == [0] * 8
    pk.clear_pool()
