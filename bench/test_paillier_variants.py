"""Paillier encryption per core: textbook (r^n), the short-exponent variant
(hs^alpha, fixed-base table) at its default exponent (2 lambda bits) and at
bits(n) / 2 (Damgard-Jurik-Nielsen's and pypaillier's length), against
pypaillier 0.8 (its short-exponent encryption, Rust on GMP) and phe, with
decryption; and the floors the encryptions are measured against.  One
run, 2048-bit keys, one core everywhere (``RAYON_NUM_THREADS=1`` for
pypaillier; ours with ``processes=1``).

Floors (same run, per encryption):

* textbook r^n mod n^2: the same exponentiation with the exponent
  2^(bits(n) - 1), i.e. the bits(n) - 1 modular squarings every
  left-to-right method needs, at the rate of the kernel that runs it here
  (GMP's ``powmod`` where the CPU has no AVX-512 IFMA);
* short-exponent hs^alpha: nwin chained Montgomery products of the
  fixed-base kernel (csrc/bignum/fb_powm.c: four AVX2 lanes where the CPU
  has them, ``secea_fb4_mul_bench``, else portable C,
  ``secea_fb_mul_bench``; both are measured), the products it does per
  encryption without the table reads.

On a loaded machine, time CPU rather than wall:

    python -m pytest bench/test_paillier_variants.py --benchmark-only \\
        --benchmark-timer=time.process_time --benchmark-json=bench/results/paillier_variants.json
    secea-fast bench summary bench/results/paillier_variants.json

pypaillier (``pip install pypaillier==0.8.0``, import name ``paillier``)
and phe are optional: their entries skip with the reason when absent.
"""
import importlib
import os
import secrets

import gmpy2
import pytest
from gmpy2 import mpz

from secea_fast import backend_info
from secea_fast import paillier as P
from secea_fast.paillier import _core, _fixedbase

os.environ.setdefault("RAYON_NUM_THREADS", "1")      # pypaillier's thread pool: one core

BITS = 2048
BATCH = 64
ROUNDS = 3


def _optional(name, why):
    try:
        return importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{why} is not installed", allow_module_level=False)


@pytest.fixture(scope="module")
def keys():
    pk, sk = P.keygen(BITS)
    spk = P.ShortExponentPublicKey(pk.n, int(gmpy2.powmod(mpz(secrets.randbelow(pk.n - 2) + 2), pk.n,
                                                          pk.nsquare)))
    djn = P.ShortExponentPublicKey(pk.n, spk.hs, exponent_bits=BITS // 2)
    port = P.ShortExponentPublicKey(pk.n, spk.hs)
    spk.fixed_base()
    djn.fixed_base()                    # tables built once per key, outside the timing
    port._fb = _fixedbase.build(port._hs, port._n2, port.exponent_bits, portable=True)
    return pk, sk, spk, djn, port


KEY = {"2 lambda": 2, "bits/2": 3, "2 lambda, portable kernel": 4}


@pytest.fixture(scope="module")
def values():
    return [secrets.randbits(60) for _ in range(BATCH)]


def _mark(benchmark, group, impl, **extra):
    benchmark.group = f"paillier-{BITS} {group}"
    benchmark.extra_info.update(impl=impl, threads=1, values=BATCH, **extra)


ENC = f"encrypt {BATCH} values, one core"
DEC = f"decrypt {BATCH} ciphertexts, one core"
FLOOR = f"floor of {BATCH} randomizers, one core"


# ------------------------------------------------------------------ encryption


def test_encrypt_textbook(benchmark, keys, values):
    pk, sk = keys[:2]
    pk.clear_pool()
    _mark(benchmark, ENC, "secea_fast textbook (r^n)", kernel=backend_info()["kernels"]["bignum"])
    out = benchmark.pedantic(lambda: pk.encrypt(values, processes=1), rounds=ROUNDS, iterations=1)
    assert sk.decrypt(out) == values


@pytest.mark.parametrize("which", list(KEY))
def test_encrypt_short(benchmark, keys, values, which):
    sk = keys[1]
    spk = keys[KEY[which]]
    spk.clear_pool()
    fb = spk.fixed_base()
    kernel = "4 AVX2 lanes" if fb.radix == 26 else "portable"
    _mark(benchmark, ENC, f"secea_fast short-exponent ({spk.exponent_bits}-bit alpha, {kernel})",
          exponent_bits=spk.exponent_bits, window=fb.W, products=fb.nwin, kernel=kernel)
    out = benchmark.pedantic(lambda: spk.encrypt(values, processes=1), rounds=ROUNDS * 3, iterations=1)
    assert sk.decrypt(out) == values


@pytest.fixture(scope="module")
def pyp_keys():
    pyp = _optional("paillier", "pypaillier 0.8 (pip install pypaillier==0.8.0)")
    pub, sec = pyp.generate_keypair(BITS)
    return pyp, pub, sec


def test_encrypt_pypaillier(benchmark, pyp_keys, values):
    pyp, pub, sec = pyp_keys
    _mark(benchmark, ENC, "pypaillier 0.8 (short exponent)", exponent_bits=pub.exponent_bits)
    blobs = benchmark.pedantic(lambda: pyp.encrypt_integers(pub, values), rounds=ROUNDS * 3, iterations=1)
    assert [m for m, _ in pyp.decrypt_exact_many(sec, [bytes(b) for b in blobs])] == values


def test_encrypt_phe(benchmark, keys, values):
    phe = _optional("phe", "phe")
    ppk = phe.paillier.PaillierPublicKey(keys[0].n)
    _mark(benchmark, ENC, "phe (raw_encrypt, textbook)")
    benchmark.pedantic(lambda: [ppk.raw_encrypt(m) for m in values], rounds=2, iterations=1)


# ------------------------------------------------------------------ decryption


@pytest.mark.parametrize("variant", [P.TEXTBOOK, P.SHORT_EXPONENT])
def test_decrypt_ours(benchmark, keys, values, variant):
    pk, sk, spk = keys[:3]
    cts = (pk if variant == P.TEXTBOOK else spk).encrypt(values)
    _mark(benchmark, DEC, f"secea_fast ({variant} ciphertexts)", kernel=backend_info()["kernels"]["bignum"])
    out = benchmark.pedantic(lambda: sk.decrypt(cts, processes=1), rounds=ROUNDS, iterations=1)
    assert out == values


def test_decrypt_pypaillier(benchmark, pyp_keys, values):
    pyp, pub, sec = pyp_keys
    blobs = [bytes(b) for b in pyp.encrypt_integers(pub, values)]
    _mark(benchmark, DEC, "pypaillier 0.8 (decrypt_exact_many)")
    out = benchmark.pedantic(lambda: pyp.decrypt_exact_many(sec, blobs), rounds=ROUNDS, iterations=1)
    assert [m for m, _ in out] == values


def test_decrypt_phe(benchmark, keys, values):
    phe = _optional("phe", "phe")
    pk, sk = keys[:2]
    psk = sk.to_phe()
    cts = pk.encrypt(values)
    _mark(benchmark, DEC, "phe (raw_decrypt)")
    out = benchmark.pedantic(lambda: [psk.raw_decrypt(c) for c in cts], rounds=ROUNDS, iterations=1)
    assert out == values


# ------------------------------------------------------------------ floors


def test_floor_textbook_squarings(benchmark, keys):
    """bits(n) - 1 squarings mod n^2 per randomizer: r^(2^(bits-1)) by the
    kernel that computes r^n here."""
    pk = keys[0]
    n, n2 = mpz(pk.n), mpz(pk.nsquare)
    rs = [mpz(secrets.randbelow(pk.n - 1) + 1) for _ in range(BATCH)]
    e = mpz(1) << (pk.bits - 1)
    _mark(benchmark, FLOOR, "floor of r^n: bits(n) - 1 squarings", kernel=backend_info()["kernels"]["bignum"])
    benchmark.pedantic(lambda: _core.powmod_public(rs, [e] * BATCH, n2), rounds=ROUNDS, iterations=1)
    assert n > 0


def test_floor_textbook_rn(benchmark, keys):
    """r^n mod n^2 alone (the encryption without plaintext handling)."""
    pk = keys[0]
    n, n2 = mpz(pk.n), mpz(pk.nsquare)
    rs = [mpz(secrets.randbelow(pk.n - 1) + 1) for _ in range(BATCH)]
    _mark(benchmark, FLOOR, "r^n mod n^2 (textbook randomizer)", kernel=backend_info()["kernels"]["bignum"])
    benchmark.pedantic(lambda: _core.powmod_public(rs, [n] * BATCH, n2), rounds=ROUNDS, iterations=1)


@pytest.mark.parametrize("which", list(KEY))
def test_floor_fixed_base_products(benchmark, keys, which):
    """nwin chained products of the fixed-base kernel per randomizer (on
    four lanes a product makes four numbers)."""
    fb = keys[KEY[which]].fixed_base()
    reps = fb.nwin * BATCH // (4 if fb.radix == 26 else 1)
    _mark(benchmark, FLOOR, f"floor of hs^alpha ({fb.ebits}-bit alpha, radix 2^{fb.radix}): {fb.nwin} products",
          products=fb.nwin, window=fb.W)
    benchmark.pedantic(lambda: _fixedbase.product_rate(fb, reps), rounds=ROUNDS * 3, iterations=1)


@pytest.mark.parametrize("which", list(KEY))
def test_floor_fixed_base_kernel(benchmark, keys, which):
    """hs^alpha by the fixed-base kernel alone (products and table reads)."""
    fb = keys[KEY[which]].fixed_base()
    exps = [secrets.randbits(fb.ebits) for _ in range(BATCH)]
    _mark(benchmark, FLOOR, f"hs^alpha ({fb.ebits}-bit alpha, radix 2^{fb.radix}), fixed-base kernel",
          products=fb.nwin, window=fb.W)
    benchmark.pedantic(lambda: _fixedbase.powers(fb, exps), rounds=ROUNDS * 3, iterations=1)
