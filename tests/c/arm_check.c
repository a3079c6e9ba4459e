/* Cross-architecture check of the C kernels, linked straight against every
 * csrc/ source (no Python): .ci/arm-check builds it for aarch64 and runs it
 * under qemu-aarch64, and builds and runs it natively on x86-64.
 *
 *  1. Known answers (FIPS-197 Appendix B and C.1; NIST SP 800-38A F.1.1
 *     ECB-AES128 and F.5.1 CTR-AES128) for every AES variant this CPU runs.
 *  2. Every non-portable AES variant against the portable one on random
 *     inputs: CTR over lengths 0..300 bytes and longer, with IVs whose low
 *     64-bit word (and the whole 128-bit counter) wraps; ECB, also in place;
 *     the fused ctr_xor (flags 0, CHECK, STREAM) against in XOR keystream, and
 *     ctr_field's rejection sampling against sampling the portable keystream
 *     here; secea_prg_xor and secea_prg_field end to end.
 *  3. Every non-portable DPF variant against the portable one: the fixed-key
 *     hashes, key generation (byte-identical keys from the same randomness),
 *     point, full-domain, path and dot-product evaluation; the two parties'
 *     full-domain outputs add up to the point function (beta at alpha, 0
 *     elsewhere) in Z_2^64, Z_2^32 and F_p.
 *  4. The field vector kernels and the matrix product of the selected
 *     variants (on ARM the NEON product for p < 2^50) against the portable C
 *     and against 128-bit schoolbook arithmetic, for the Goldilocks prime, the
 *     embedding prime 63 2^44 + 1 and other moduli.
 *
 * SECEA_FAST_BACKEND=portable|avx2|auto caps dispatch as in Python.
 * ARM_CHECK_EXPECT=NAME makes the run fail unless dispatch picked NAME for
 * both the AES and the DPF kernels (so a CI run proves the Crypto Extensions
 * path was the one exercised).  Exit status 0 only if every check passed;
 * the last line is "arm-check: N passed, M failed".  An argument seeds the
 * random inputs (default fixed); --cpu-aes prints whether the CPU has AES. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"
#include "aes_internal.h"

static long n_pass, n_fail;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) n_pass++;                                                 \
        else {                                                              \
            n_fail++;                                                       \
            if (n_fail <= 40) {                                             \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
                fprintf(stderr, __VA_ARGS__);                               \
                fputc('\n', stderr);                                        \
            }                                                               \
        }                                                                   \
    } while (0)

/* ------------------------------------------------------------ randomness */

static uint64_t rng_state = 0x243F6A8885A308D3ULL;

static uint64_t rnd(void)                /* SplitMix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void rnd_bytes(void *p, size_t n)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rnd();
}

static uint64_t rnd_below(uint64_t p)
{
    return (uint64_t)(((secea_u128)rnd() * p) >> 64);
}

static void hex(uint8_t *out, const char *s)
{
    for (size_t i = 0; s[2 * i]; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* ------------------------------------------------------------------ AES */

static const char *const AES_NAMES[] = {"portable", "aesni", "vaes", "armce"};
#define N_AES (sizeof AES_NAMES / sizeof *AES_NAMES)

static void kat(const char *v)
{
    uint8_t key[16], pt[64], ct[64], out[64], iv[16];
    /* FIPS-197 Appendix C.1 */
    hex(key, "000102030405060708090a0b0c0d0e0f");
    hex(pt, "00112233445566778899aabbccddeeff");
    hex(ct, "69c4e0d86a7b0430d8cdb78070b4c55a");
    secea_aes128_ecb_encrypt(out, pt, 1, key);
    CHECK(!memcmp(out, ct, 16), "%s: FIPS-197 C.1", v);
    /* FIPS-197 Appendix B */
    hex(key, "2b7e151628aed2a6abf7158809cf4f3c");
    hex(pt, "3243f6a8885a308d313198a2e0370734");
    hex(ct, "3925841d02dc09fbdc118597196a0b32");
    secea_aes128_ecb_encrypt(out, pt, 1, key);
    CHECK(!memcmp(out, ct, 16), "%s: FIPS-197 Appendix B", v);
    /* SP 800-38A F.1.1 ECB-AES128.Encrypt and F.5.1 CTR-AES128.Encrypt */
    hex(pt, "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
            "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
    hex(ct, "3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf"
            "43b1cd7f598ece23881b00e3ed0306887b0c785e27e8ad3f8223207104725dd4");
    secea_aes128_ecb_encrypt(out, pt, 4, key);
    CHECK(!memcmp(out, ct, 64), "%s: SP 800-38A F.1.1", v);
    memcpy(out, pt, 64);
    secea_aes128_ecb_encrypt(out, out, 4, key);                 /* in place */
    CHECK(!memcmp(out, ct, 64), "%s: SP 800-38A F.1.1 in place", v);
    hex(iv, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
    hex(ct, "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
            "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee");
    secea_aes128_ctr(out, 64, key, iv);
    for (int i = 0; i < 64; i++) out[i] ^= pt[i];
    CHECK(!memcmp(out, ct, 64), "%s: SP 800-38A F.5.1", v);
}

static void rand_iv(uint8_t iv[16], int kind)
{
    rnd_bytes(iv, 16);
    if (kind == 1) memset(iv + 8, 0xFF, 8), iv[15] = (uint8_t)(0xFF - rnd() % 40);   /* low word wraps */
    if (kind == 2) memset(iv, 0xFF, 16), iv[15] = (uint8_t)(0xFF - rnd() % 40);      /* 128-bit wrap */
}

/* the reference twins, on the portable variant */
static void ref_ctr(uint8_t *out, size_t nbytes, const uint8_t *key, const uint8_t *iv)
{
    secea__aes_select_named("portable");
    secea_aes128_ctr(out, nbytes, key, iv);
}

static void ld_words(uint64_t *w, const uint8_t *b, size_t n)
{
    memcpy(w, b, 8 * n);                 /* the hosts here are little-endian */
}

static void aes_vs_portable(const char *v)
{
    static const size_t extra[] = {511, 1024, 1031, 4096 + 13};
    uint8_t key[16], iv[16];
    size_t maxb = 16 * (4096 + 13) + 15 + 8;       /* + room for misaligned pointers */
    uint8_t *a = xmalloc(maxb), *b = xmalloc(maxb), *in = xmalloc(maxb), *c = xmalloc(maxb);
    /* ctr */
    for (size_t len = 0; len < 300 + 4; len++) {
        size_t n = len < 300 ? len : 16 * extra[len - 300] + len % 3;
        rnd_bytes(key, 16);
        rand_iv(iv, (int)(len % 3));
        ref_ctr(a, n, key, iv);
        secea__aes_select_named(v);
        uint8_t *o = b + len % 5;                               /* any alignment */
        memset(o, 0xA5, n);
        secea_aes128_ctr(o, n, key, iv);
        CHECK(!memcmp(a, o, n), "%s: ctr of %zu bytes (iv kind %zu)", v, n, len % 3);
    }
    /* ecb, separate and in place */
    for (size_t nb = 0; nb < 45 + 3; nb++) {
        size_t n = nb < 45 ? nb : extra[nb - 45];
        rnd_bytes(key, 16);
        rnd_bytes(in, 16 * n);
        secea__aes_select_named("portable");
        secea_aes128_ecb_encrypt(a, in, n, key);
        secea__aes_select_named(v);
        secea_aes128_ecb_encrypt(b, in, n, key);
        CHECK(!memcmp(a, b, 16 * n), "%s: ecb of %zu blocks", v, n);
        uint8_t *o = b + nb % 7;                                /* in place, any alignment */
        memcpy(o, in, 16 * n);
        secea_aes128_ecb_encrypt(o, o, n, key);
        CHECK(!memcmp(a, o, 16 * n), "%s: ecb of %zu blocks in place", v, n);
    }
    /* fused ctr_xor against in XOR keystream, with the >= p check */
    secea__aes_select_named(v);
    uint64_t dummy = 0;
    int has_xor = secea__aes128_ctr_xor(a, a, 0, key, iv, 0, 0, &dummy) == 0;
    for (size_t nb = 0; has_xor && nb < 70 + 4; nb++) {
        size_t n = nb < 70 ? nb : extra[nb - 70];
        static const uint64_t ps[] = {SECEA_GOLDILOCKS, 63ULL * (1ULL << 44) + 1, 97};
        uint64_t p = ps[nb % 3];
        rnd_bytes(key, 16);
        rand_iv(iv, (int)(nb % 3));
        ref_ctr(c, 16 * n, key, iv);                            /* the keystream */
        /* plaintext words < p, one of them >= p for every fourth n */
        uint64_t *pw = (uint64_t *)(void *)in;
        for (size_t i = 0; i < 2 * n; i++) pw[i] = rnd_below(p);
        int want_bad = n && nb % 4 == 1;
        if (want_bad) pw[rnd() % (2 * n)] = p + rnd_below(~(uint64_t)0 - p);
        for (size_t i = 0; i < 16 * n; i++) in[i] ^= c[i];      /* in = plaintext XOR keystream */
        for (int fl = 0; fl < 4; fl++) {
            int flags = fl == 3 ? SECEA_PRG_XOR_CHECK | SECEA_PRG_XOR_STREAM : fl;
            uint64_t bad = 0;
            secea__aes_select_named(v);
            int alias = fl == 2;
            if (alias) memcpy(b, in, 16 * n);
            int st = secea__aes128_ctr_xor(b, alias ? b : in, n, key, iv, p, flags, &bad);
            CHECK(st == 0, "%s: ctr_xor status", v);
            for (size_t i = 0; i < 16 * n; i++) a[i] = in[i] ^ c[i];
            CHECK(!memcmp(a, b, 16 * n), "%s: ctr_xor of %zu blocks, flags %d", v, n, flags);
            if (flags & SECEA_PRG_XOR_CHECK)
                CHECK((bad != 0) == want_bad, "%s: ctr_xor check flag, %zu blocks", v, n);
        }
    }
    /* rejection sampling against the portable keystream, sampled here */
    secea__aes_select_named(v);
    uint64_t cons = 0;
    int has_field = secea__aes128_ctr_field((uint64_t *)(void *)a, 0, key, iv, 1, 1, &cons) == 0;
    static const uint64_t fp[][2] = {
        {SECEA_GOLDILOCKS, ~(uint64_t)0},
        {63ULL * (1ULL << 44) + 1, (1ULL << 50) - 1},
        {(1ULL << 32) + 15, (1ULL << 33) - 1},                 /* about half rejected */
        {97, 127},
    };
    for (size_t t = 0; has_field && t < 120 + 4; t++) {
        size_t count = t < 120 ? t : extra[t - 120] * 2;
        uint64_t p = fp[t % 4][0], mask = fp[t % 4][1];
        rnd_bytes(key, 16);
        rand_iv(iv, (int)(t % 3));
        size_t kswords = 4 * count + 64;                        /* acceptance >= 1/2 */
        uint8_t *ks = xmalloc(8 * kswords);
        uint64_t *kw = xmalloc(8 * kswords), *want = xmalloc(8 * count + 8), *got = xmalloc(8 * count + 8);
        ref_ctr(ks, 8 * kswords, key, iv);
        ld_words(kw, ks, kswords);
        size_t kept = 0, read = 0;
        while (kept < count && read < kswords) {
            uint64_t x = kw[read++] & mask;
            if (x < p) want[kept++] = x;
        }
        CHECK(kept == count, "reference keystream too short");
        secea__aes_select_named(v);
        cons = 0;
        CHECK(secea__aes128_ctr_field(got, count, key, iv, mask, p, &cons) == 0, "%s: ctr_field status", v);
        CHECK(!memcmp(want, got, 8 * count) && cons == read,
              "%s: ctr_field of %zu words (p %llu): consumed %llu, want %zu", v, count,
              (unsigned long long)p, (unsigned long long)cons, read);
        free(ks), free(kw), free(want), free(got);
    }
    /* the public PRG entry points, end to end */
    for (size_t t = 0; t < 60; t++) {
        size_t nw = t < 50 ? t * 3 + t % 2 : 5000 + t;
        uint64_t p = t % 2 ? SECEA_GOLDILOCKS : 63ULL * (1ULL << 44) + 1;
        unsigned skip = (unsigned)(t % 4 < 2 ? 0 : 8);
        rnd_bytes(key, 16);
        rand_iv(iv, (int)(t % 3));
        uint64_t *x = xmalloc(8 * nw), *r0 = xmalloc(8 * nw), *r1 = xmalloc(8 * nw);
        for (size_t i = 0; i < nw; i++) x[i] = rnd_below(p);
        uint64_t coef = t % 3 ? 1 : rnd_below(p);
        secea__aes_select_named("portable");
        int s0 = secea_prg_xor(r0, x, nw, key, iv, skip, p, coef, SECEA_PRG_XOR_CHECK);
        secea__aes_select_named(v);
        int s1 = secea_prg_xor(r1, x, nw, key, iv, skip, p, coef, SECEA_PRG_XOR_CHECK);
        CHECK(s0 == s1 && !memcmp(r0, r1, 8 * nw), "%s: secea_prg_xor, %zu words", v, nw);
        secea__aes_select_named("portable");
        uint64_t c0 = secea_prg_field(r0, nw, key, iv, skip, p, t % 5 ? x : NULL, coef, (int)(t & 1));
        secea__aes_select_named(v);
        uint64_t c1 = secea_prg_field(r1, nw, key, iv, skip, p, t % 5 ? x : NULL, coef, (int)(t & 1));
        CHECK(c0 == c1 && !memcmp(r0, r1, 8 * nw), "%s: secea_prg_field, %zu words", v, nw);
        free(x), free(r0), free(r1);
    }
    free(a), free(b), free(in), free(c);
}

/* ------------------------------------------------------------------ DPF */

static const char *const DPF_NAMES[] = {"portable", "aesni", "vaes256", "vaes", "armce"};
#define N_DPF (sizeof DPF_NAMES / sizeof *DPF_NAMES)

static size_t body_size(unsigned L, size_t ncw, unsigned group)
{
    return 32 + 16 * (size_t)L + ncw * (group == 1 ? 4 : 8);
}

/* everything a variant computes for one key set */
typedef struct {
    uint8_t *k0, *k1, *hash;
    uint64_t *full0, *full1, *pts, *dot;
    uint8_t *states;
} dpf_out;

static void dpf_run(const char *v, dpf_out *o, unsigned L, unsigned e, unsigned group, uint64_t p, size_t ncw,
                    size_t count, const uint64_t *alphas, const uint64_t *betas, const uint8_t *rnd32,
                    const uint8_t *hin, size_t hn, const uint64_t *xs, size_t npts, const uint64_t *table,
                    size_t d, int threads)
{
    secea_dpf_select_variant(v);
    size_t kb = body_size(L, ncw, group);
    uint64_t m = (uint64_t)1 << (L + e);
    uint8_t party0[64] = {0}, party1[64];
    memset(party1, 1, sizeof party1);
    for (int w = 0; w < 3; w++) secea_dpf_hash(o->hash + 16 * hn * (size_t)w, hin, hn, w);
    const secea_dpf_shape key = {.levels = L, .early = e, .group = group, .modulus = p, .ncw = ncw, .stride = kb};
    const secea_dpf_shape path = {.levels = L, .stride = kb};     /* the path part of the same bodies */
    CHECK(secea_dpf_gen(&key, o->k0, o->k1, NULL, alphas, betas, rnd32, count, threads) == 0, "%s: dpf gen", v);
    CHECK(secea_dpf_eval_full(&key, o->full0, o->k0, party0, count, m, threads) == 0, "%s: eval_full", v);
    CHECK(secea_dpf_eval_full(&key, o->full1, o->k1, party1, count, m, threads) == 0, "%s: eval_full", v);
    CHECK(secea_dpf_eval_points(&key, o->pts, o->k0, party0, xs, npts, npts / count, threads) == 0,
          "%s: eval_points", v);
    if (!e) {
        CHECK(secea_dpf_path_eval_full(&path, o->states, o->k1, count, m, threads) == 0, "%s: path_eval_full", v);
    }
    if (group == 0 && ncw == 1)
        CHECK(secea_dpf_eval_full_dot(&key, o->dot, o->k0, party0, count, table, m, d, threads) == 0,
              "%s: eval_full_dot", v);
}

static void dpf_checks(void)
{
    static const struct { unsigned L, e, group; size_t ncw; } cfg[] = {
        {9, 0, 0, 1}, {10, 0, 0, 2}, {7, 0, 0, 4}, {8, 0, 1, 1}, {8, 0, 2, 3},
        {8, 2, 0, 4}, {7, 3, 0, 8}, {6, 4, 1, 16}, {1, 0, 0, 1}, {12, 0, 0, 1},
    };
    const uint64_t P = 63ULL * (1ULL << 44) + 1;
    for (size_t ci = 0; ci < sizeof cfg / sizeof *cfg; ci++) {
        unsigned L = cfg[ci].L, e = cfg[ci].e, group = cfg[ci].group;
        size_t ncw = cfg[ci].ncw, count = 3 + ci % 3, d = 5;
        uint64_t m = (uint64_t)1 << (L + e);
        size_t outw = e ? 1 : ncw;
        uint64_t emask = group == 1 ? 0xFFFFFFFFULL : ~(uint64_t)0;
        uint64_t *alphas = xmalloc(8 * count), *betas = xmalloc(8 * count * ncw), *x = xmalloc(8 * count);
        uint8_t *rnd32 = xmalloc(32 * count);
        memset(betas, 0, 8 * count * ncw);
        for (size_t c = 0; c < count; c++) {
            x[c] = rnd() % m;                                  /* the point of the function */
            alphas[c] = x[c] >> e;
            for (size_t k = 0; k < (e ? 1 : ncw); k++) {
                uint64_t b = group == 2 ? rnd_below(P) : rnd() & emask;
                betas[c * ncw + (e ? (x[c] & (ncw - 1)) : k)] = b;
            }
        }
        rnd_bytes(rnd32, 32 * count);
        size_t hn = 37 + ci;
        uint8_t *hin = xmalloc(16 * hn);
        rnd_bytes(hin, 16 * hn);
        size_t per = 9, npts = per * count;
        uint64_t *xs = xmalloc(8 * npts);
        for (size_t i = 0; i < npts; i++) xs[i] = i % per == 0 ? x[i / per] : rnd() % m;
        uint64_t *table = xmalloc(8 * m * d);
        for (size_t i = 0; i < m * d; i++) table[i] = rnd();
        size_t kb = body_size(L, ncw, group);
        dpf_out o[N_DPF];
        int ran[N_DPF] = {0};
        for (size_t vi = 0; vi < N_DPF; vi++) {
            if (secea_dpf_select_variant(DPF_NAMES[vi]) != 0) continue;
            ran[vi] = 1;
            o[vi].k0 = xmalloc(kb * count), o[vi].k1 = xmalloc(kb * count), o[vi].hash = xmalloc(48 * hn);
            o[vi].full0 = xmalloc(8 * count * m * outw), o[vi].full1 = xmalloc(8 * count * m * outw);
            o[vi].pts = xmalloc(8 * npts * outw), o[vi].dot = xmalloc(8 * count * d);
            o[vi].states = xmalloc(16 * count * m);
            memset(o[vi].dot, 0, 8 * count * d);
            memset(o[vi].states, 0, 16 * count * m);
            dpf_run(DPF_NAMES[vi], &o[vi], L, e, group, P, ncw, count, alphas, betas, rnd32, hin, hn, xs, npts,
                    table, d, 1 + (int)(ci & 1));
        }
        /* the portable variant's outputs are a point function, bit for bit */
        dpf_out *r = &o[0];
        for (size_t c = 0; c < count; c++)
            for (uint64_t j = 0; j < m; j++)
                for (size_t k = 0; k < outw; k++) {
                    size_t at = (c * m + j) * outw + k;
                    uint64_t s = r->full0[at] + r->full1[at], want = 0;
                    if (group == 2) s = (uint64_t)(((secea_u128)r->full0[at] + r->full1[at]) % P);
                    s &= emask;
                    if (e) want = j == x[c] ? betas[c * ncw + (x[c] & (ncw - 1))] : 0;
                    else want = j == x[c] ? betas[c * ncw + k] : 0;
                    CHECK(s == want, "dpf config %zu: shares at %llu do not add up", ci, (unsigned long long)j);
                }
        for (size_t i = 0; i < npts; i++)
            for (size_t k = 0; k < outw; k++)
                CHECK(r->pts[i * outw + k] == r->full0[((i / per) * m + xs[i]) * outw + k],
                      "dpf config %zu: eval_points against eval_full", ci);
        if (group == 0 && ncw == 1)
            for (size_t c = 0; c < count; c++)
                for (size_t k = 0; k < d; k++) {
                    uint64_t s = 0;
                    for (uint64_t j = 0; j < m; j++) s += r->full0[(c * m + j)] * table[j * d + k];
                    CHECK(r->dot[c * d + k] == s, "dpf config %zu: eval_full_dot", ci);
                }
        for (size_t vi = 1; vi < N_DPF; vi++) {
            if (!ran[vi]) continue;
            const char *v = DPF_NAMES[vi];
            dpf_out *q = &o[vi];
            CHECK(!memcmp(q->hash, r->hash, 48 * hn), "%s: dpf hash (config %zu)", v, ci);
            CHECK(!memcmp(q->k0, r->k0, kb * count) && !memcmp(q->k1, r->k1, kb * count),
                  "%s: dpf keys differ from portable (config %zu)", v, ci);
            CHECK(!memcmp(q->full0, r->full0, 8 * count * m * outw) &&
                  !memcmp(q->full1, r->full1, 8 * count * m * outw), "%s: eval_full (config %zu)", v, ci);
            CHECK(!memcmp(q->pts, r->pts, 8 * npts * outw), "%s: eval_points (config %zu)", v, ci);
            CHECK(!memcmp(q->states, r->states, 16 * count * m), "%s: path_eval_full (config %zu)", v, ci);
            CHECK(!memcmp(q->dot, r->dot, 8 * count * d), "%s: eval_full_dot (config %zu)", v, ci);
        }
        for (size_t vi = 0; vi < N_DPF; vi++) {
            if (!ran[vi]) continue;
            free(o[vi].k0), free(o[vi].k1), free(o[vi].hash), free(o[vi].full0), free(o[vi].full1);
            free(o[vi].pts), free(o[vi].dot), free(o[vi].states);
        }
        free(alphas), free(betas), free(x), free(rnd32), free(hin), free(xs), free(table);
    }
}

/* ------------------------------------------------------- field, matmul */

static uint64_t mm(uint64_t a, uint64_t b, uint64_t p) { return (uint64_t)(((secea_u128)a * b) % p); }

typedef struct { uint64_t *add, *sub, *neg, *mul, *mulk, *dot; } fp_res;

static void fp_run(fp_res *o, const uint64_t *a, const uint64_t *b, uint64_t k, size_t n, size_t rows,
                   size_t len, uint64_t p)
{
    secea_fp_add(o->add, a, b, n, p);
    secea_fp_sub(o->sub, a, b, n, p);
    secea_fp_neg(o->neg, a, n, p);
    secea_fp_mul(o->mul, a, b, n, p);
    secea_fp_mul_scalar(o->mulk, a, k, n, p);
    secea_fp_dot_rows(o->dot, a, b, rows, len, len, p);
}

static void field_checks(int level)
{
    static const uint64_t ps[] = {SECEA_GOLDILOCKS, 63ULL * (1ULL << 44) + 1, (1ULL << 61) - 1,
                                  0xFFFFFFFFFFFFFFC5ULL /* 2^64 - 59 */, 2147483647, 97,
                                  (1ULL << 50) - 27 /* largest prime < 2^50: full 25-bit limbs */};
    const char *fv = NULL;
    for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
        uint64_t p = ps[pi];
        for (size_t t = 0; t < 40; t++) {
            size_t n = t < 36 ? t * 3 + pi : 4099;
            size_t len = 1 + t % 7, rows = n / len;
            uint64_t *a = xmalloc(8 * n), *b = xmalloc(8 * n), k = rnd_below(p);
            for (size_t i = 0; i < n; i++) {
                a[i] = rnd_below(p), b[i] = rnd_below(p);
                if (i % 11 == 0) a[i] = p - 1 - (i % 3);       /* near the top */
                if (i % 13 == 0) b[i] = i % 2 ? 0 : p - 1;
            }
            fp_res o[2];
            for (int r = 0; r < 2; r++) {
                o[r].add = xmalloc(8 * n), o[r].sub = xmalloc(8 * n), o[r].neg = xmalloc(8 * n);
                o[r].mul = xmalloc(8 * n), o[r].mulk = xmalloc(8 * n), o[r].dot = xmalloc(8 * rows + 8);
            }
            secea_dispatch_init(level);
            fv = secea_kernel_variant("field");
            fp_run(&o[0], a, b, k, n, rows, len, p);
            secea_dispatch_init(1);
            fp_run(&o[1], a, b, k, n, rows, len, p);
            secea_dispatch_init(level);
            int ok = 1;
            for (size_t i = 0; i < n; i++) {
                ok &= o[0].add[i] == (uint64_t)(((secea_u128)a[i] + b[i]) % p);
                ok &= o[0].sub[i] == (uint64_t)(((secea_u128)a[i] + p - b[i]) % p);
                ok &= o[0].neg[i] == (p - a[i]) % p;
                ok &= o[0].mul[i] == mm(a[i], b[i], p);
                ok &= o[0].mulk[i] == mm(a[i], k, p);
            }
            for (size_t r = 0; r < rows; r++) {
                uint64_t s = 0;
                for (size_t i = 0; i < len; i++) s = (uint64_t)(((secea_u128)s + mm(a[r * len + i], b[r * len + i], p)) % p);
                ok &= o[0].dot[r] == s;
            }
            CHECK(ok, "field (%s) against schoolbook arithmetic, p %llu, n %zu", fv, (unsigned long long)p, n);
            CHECK(!memcmp(o[0].add, o[1].add, 8 * n) && !memcmp(o[0].sub, o[1].sub, 8 * n) &&
                  !memcmp(o[0].neg, o[1].neg, 8 * n) && !memcmp(o[0].mul, o[1].mul, 8 * n) &&
                  !memcmp(o[0].mulk, o[1].mulk, 8 * n) && !memcmp(o[0].dot, o[1].dot, 8 * rows),
                  "field (%s) against portable, p %llu, n %zu", fv, (unsigned long long)p, n);
            for (int r = 0; r < 2; r++) {
                free(o[r].add), free(o[r].sub), free(o[r].neg), free(o[r].mul), free(o[r].mulk), free(o[r].dot);
            }
            free(a), free(b);
        }
    }
    /* matrix products: selected variant, portable, schoolbook; packed and fused-decrypt forms */
    /* k > 4096 crosses the NEON kernel's exact-sum chunks; odd m and n leave partial tiles */
    static const size_t dims[][3] = {{1, 1, 1}, {2, 3, 4}, {5, 40, 3}, {7, 9, 13}, {16, 33, 17}, {33, 64, 9},
                                     {3, 300, 2}, {40, 17, 31}, {3, 4097, 5}, {2, 9000, 6}};
    for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
        uint64_t p = ps[pi];
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
            size_t m = dims[di][0], k = dims[di][1], n = dims[di][2];
            uint64_t *A = xmalloc(8 * m * k), *B = xmalloc(8 * k * n), *C0 = xmalloc(8 * m * n),
                     *C1 = xmalloc(8 * m * n), *C2 = xmalloc(8 * m * n), *E = xmalloc(8 * m * k);
            int worst = di + 1 == sizeof dims / sizeof *dims;    /* all p - 1: the largest sums */
            for (size_t i = 0; i < m * k; i++) A[i] = i % 7 && !worst ? rnd_below(p) : p - 1;
            for (size_t i = 0; i < k * n; i++) B[i] = i % 5 && !worst ? rnd_below(p) : p - 1;
            secea_dispatch_init(level);
            const char *mv = secea_kernel_variant("matmul");
            CHECK(secea_fp_mat_mul(C0, A, B, m, k, n, p, 1 + (int)(di & 1)) == 0, "matmul status");
            secea_mat_packed *h = secea_fp_mat_pack(B, k, n, p);
            CHECK(h && secea_fp_mat_mul_packed(C2, A, h, m, 2) == 0 && !memcmp(C0, C2, 8 * m * n),
                  "matmul (%s) packed against unpacked, p %llu", mv, (unsigned long long)p);
            /* fused decryption: E = A XOR keystream, then C = (E XOR keystream) B */
            uint8_t key[16], iv[16] = {0};
            rnd_bytes(key, 16);
            uint64_t block0 = rnd() >> 8;
            for (int i = 0; i < 8; i++) iv[15 - i] = (uint8_t)(block0 >> (8 * i));
            secea_prg_xor(E, A, m * k, key, iv, 0, p, 1, 0);
            memset(C2, 0, 8 * m * n);
            int sx = h ? secea_fp_mat_mul_packed_xor(C2, E, h, m, 2, key, block0, 0) : -1;
            CHECK(sx == 0 && !memcmp(C0, C2, 8 * m * n), "matmul (%s) fused decryption, p %llu", mv,
                  (unsigned long long)p);
            secea_fp_mat_pack_free(h);
            secea_dispatch_init(1);
            CHECK(secea_fp_mat_mul(C1, A, B, m, k, n, p, 1) == 0, "matmul status");
            secea_dispatch_init(level);
            CHECK(!memcmp(C0, C1, 8 * m * n), "matmul (%s) against portable, p %llu, %zux%zux%zu", mv,
                  (unsigned long long)p, m, k, n);
            int ok = 1;
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++) {
                    uint64_t s = 0;
                    for (size_t t = 0; t < k; t++) s = (uint64_t)(((secea_u128)s + mm(A[i * k + t], B[t * n + j], p)) % p);
                    ok &= C0[i * n + j] == s;
                }
            CHECK(ok, "matmul (%s) against schoolbook, p %llu, %zux%zux%zu", mv, (unsigned long long)p, m, k, n);
            free(A), free(B), free(C0), free(C1), free(C2), free(E);
        }
    }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--cpu-aes")) {      /* probe for .ci/arm-check */
        printf("%d\n", secea_cpu_supports("aes"));
        return 0;
    }
    if (argc > 1) rng_state = strtoull(argv[1], NULL, 0);
    const char *env = getenv("SECEA_FAST_BACKEND");
    int level = 0;
    if (env && !strcmp(env, "portable")) level = 1;
    else if (env && !strcmp(env, "avx2")) level = 2;
    else if (env && *env && strcmp(env, "auto")) {
        fprintf(stderr, "SECEA_FAST_BACKEND must be auto, portable or avx2\n");
        return 2;
    }
    secea_dispatch_init(level);
    const char *aes_auto = secea_kernel_variant("aes"), *dpf_auto = secea_kernel_variant("dpf");
    printf("arm-check: backend %s; selected aes=%s dpf=%s field=%s matmul=%s; cpu aes=%d\n",
           env && *env ? env : "auto", aes_auto, dpf_auto, secea_kernel_variant("field"),
           secea_kernel_variant("matmul"), secea_cpu_supports("aes"));
    const char *expect = getenv("ARM_CHECK_EXPECT");
    if (expect && *expect) {
        CHECK(!strcmp(aes_auto, expect), "dispatch chose aes=%s, expected %s", aes_auto, expect);
        CHECK(!strcmp(dpf_auto, expect), "dispatch chose dpf=%s, expected %s", dpf_auto, expect);
    }
    char ran[128] = "";
    for (size_t vi = 0; vi < N_AES; vi++) {
        if (secea__aes_select_named(AES_NAMES[vi]) != 0) continue;
        strcat(ran, " "), strcat(ran, AES_NAMES[vi]);
        kat(AES_NAMES[vi]);
        if (vi) aes_vs_portable(AES_NAMES[vi]);
    }
    printf("arm-check: AES variants run:%s\n", ran);
    secea_dispatch_init(level);
    ran[0] = 0;
    for (size_t vi = 0; vi < N_DPF; vi++)
        if (secea_dpf_select_variant(DPF_NAMES[vi]) == 0) strcat(ran, " "), strcat(ran, DPF_NAMES[vi]);
    printf("arm-check: DPF variants run:%s\n", ran);
    dpf_checks();
    secea_dispatch_init(level);
    field_checks(level);
    secea_dispatch_init(level);
    printf("arm-check: %ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
