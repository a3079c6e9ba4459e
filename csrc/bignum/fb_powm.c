/* Fixed-base exponentiation: h^a mod m for one public base h and a batch of
 * secret exponents a, from a table of the powers h^(d 2^(W i)) made once per
 * key (secea_fast.paillier's short-exponent variant: the randomizer
 * hs^alpha of each encryption).  Portable C (64-bit limbs, 128-bit
 * products): it runs on every CPU the package builds for.
 *
 * With the exponent cut into nwin digits of W bits, a = sum_i d_i 2^(W i),
 * h^a = prod_i T[i][d_i]: nwin - 1 Montgomery products and no squaring
 * (Brickell, Gordon, McCurley, Wilson, "Fast exponentiation with
 * precomputation", EUROCRYPT 1992, the simplest of their schemes).
 *
 * Constant time in the exponents: each digit selects its table entry by
 * reading every entry of the window and keeping one with a mask computed
 * without branches; the Montgomery product (CIOS, Koc, Acar, Kaliski,
 * "Analyzing and comparing Montgomery multiplication algorithms", IEEE
 * Micro 1996) ends with a masked subtraction of m that is always computed.
 * Table entries are h^(d 2^(W i)) R mod m, R = 2^(64 L), canonical; every
 * product of two values below m is below m, and the last product by 1
 * leaves Montgomery form.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"

#define FB_MAX_LIMBS 256          /* moduli up to 16384 bits (n^2 of the largest key) */
#define FB_MAX_W 8

/* r = a b R^-1 mod m (a, b < m; r < m); t: L + 2 words of scratch.  r may
 * alias a or b. */
static void fb_mont(uint64_t *r, const uint64_t *a, const uint64_t *b, const uint64_t *m, uint64_t k0,
                    size_t L, uint64_t *t)
{
    memset(t, 0, (L + 2) * sizeof *t);
    for (size_t i = 0; i < L; i++) {
        const uint64_t bi = b[i];
        secea_u128 c = 0;
        for (size_t j = 0; j < L; j++) {
            c += (secea_u128)a[j] * bi + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[L];
        t[L] = (uint64_t)c;
        t[L + 1] = (uint64_t)(c >> 64);
        const uint64_t y = t[0] * k0;
        c = (secea_u128)y * m[0] + t[0];
        c >>= 64;
        for (size_t j = 1; j < L; j++) {
            c += (secea_u128)y * m[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[L];
        t[L - 1] = (uint64_t)c;
        t[L] = t[L + 1] + (uint64_t)(c >> 64);
    }
    /* t < 2m: r = t - m when that does not borrow, else t; both computed */
    uint64_t borrow = 0;
    for (size_t j = 0; j < L; j++) {
        const secea_u128 d = (secea_u128)t[j] - m[j] - borrow;
        r[j] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) & 1;
    }
    const uint64_t keep_t = 0 - (uint64_t)(borrow > t[L]);     /* t[L] - borrow < 0: t < m */
    for (size_t j = 0; j < L; j++) r[j] = (t[j] & keep_t) | (r[j] & ~keep_t);
}

/* the W-bit digit of exp (ewords words) at bit pos */
static inline uint64_t fb_digit(const uint64_t *exp, size_t ewords, size_t pos, unsigned W)
{
    const size_t w = pos / 64, s = pos % 64;
    uint64_t lo = w < ewords ? exp[w] >> s : 0;
    uint64_t hi = (s && w + 1 < ewords) ? exp[w + 1] << (64 - s) : 0;
    return (lo | hi) & (((uint64_t)1 << W) - 1);
}

/* sel = win[d] (2^W entries of L words), reading every entry */
static void fb_select(uint64_t *sel, const uint64_t *win, uint64_t d, size_t L, unsigned W)
{
    memset(sel, 0, L * sizeof *sel);
    for (uint64_t k = 0; k < ((uint64_t)1 << W); k++) {
        const uint64_t x = k ^ d;
        const uint64_t hit = ((x | (0 - x)) >> 63) - 1;        /* all ones iff k == d */
        const uint64_t *e = win + k * L;
        for (size_t j = 0; j < L; j++) sel[j] |= e[j] & hit;
    }
}

int secea_fb_powm(uint64_t *out, const uint64_t *table, unsigned W, size_t nwin, const uint64_t *mod,
                  uint64_t k0, const uint64_t *exp, size_t ewords, size_t count, size_t L)
{
    if (L == 0 || L > FB_MAX_LIMBS || W == 0 || W > FB_MAX_W || nwin == 0 || !(mod[0] & 1)) return -2;
    if (count == 0) return 0;
    const size_t words = 3 * L + 2;
    uint64_t *mem = malloc(words * sizeof *mem);
    if (!mem) return -1;
    uint64_t *sel = mem, *one = sel + L, *t = one + L;
    const size_t wstride = ((size_t)1 << W) * L;
    uint64_t d = 0;
    for (size_t n = 0; n < count; n++) {
        uint64_t *x = out + n * L;
        const uint64_t *e = exp + n * ewords;
        d = fb_digit(e, ewords, 0, W);
        fb_select(x, table, d, L, W);
        for (size_t i = 1; i < nwin; i++) {
            d = fb_digit(e, ewords, i * W, W);
            fb_select(sel, table + i * wstride, d, L, W);
            fb_mont(x, x, sel, mod, k0, L, t);
        }
        memset(one, 0, L * sizeof *one);
        one[0] = 1;
        fb_mont(x, x, one, mod, k0, L, t);              /* out of Montgomery form */
    }
    /* the digits, the selected entries and partial products were secret */
    secea_wipe(&d, sizeof d);
    secea_wipe(mem, words * sizeof *mem);
    free(mem);
    return 0;
}

uint64_t secea_fb_mul_bench(size_t L, size_t reps)
{
    if (L < 2 || L > FB_MAX_LIMBS) return UINT64_MAX;
    uint64_t *mem = malloc((4 * L + 2) * sizeof *mem);
    if (!mem) return UINT64_MAX;
    uint64_t *m = mem, *x = m + L, *y = x + L, *t = y + L;
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (size_t j = 0; j < L; j++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        m[j] = s | ((uint64_t)1 << 63);
        x[j] = s >> 2;
        y[j] = s >> 3;
    }
    m[0] |= 1;
    uint64_t inv = m[0];                                 /* Newton: m^-1 mod 2^64 */
    for (int i = 0; i < 6; i++) inv *= 2 - m[0] * inv;
    for (size_t r = 0; r < reps; r++) fb_mont(x, x, y, m, 0 - inv, L, t);
    const uint64_t out = x[0];
    free(mem);
    return out;
}

/* ---- four lanes on AVX2: four exponents at once, radix 2^26 ----
 * The same fixed-base method, one exponent per 64-bit lane of a ymm
 * register, limbs of 26 bits so that vpmuludq (32 x 32 -> 64 bits) forms
 * each limb product exactly.  Almost Montgomery product by operand
 * scanning, as mb_powm_kernel.h's (one reduction digit per limb of b, no
 * subtraction inside): for a, b < 2m and 4m < R = 2^(26 L) the result is
 * below 2m; accumulator slot k collects at most 2 L products below 2^52
 * and the carries, below 2^62 for L <= 512.  The digit of each lane
 * selects its table entry by reading every entry of the window with a
 * lane mask; the last product by 1 and a masked subtraction of m give the
 * canonical result, which is repacked into 64-bit words. */
#if SECEA_X86
#include <immintrin.h>
#define FB4_MAX_LIMBS 512
#define FB4_ATTR SECEA_TARGET("avx2")
#define M26 ((1ULL << 26) - 1)

/* one row of the product: t[0..L] += a b_i + m y, y chosen so that slot 0
 * becomes 0 mod 2^26, whose carry goes to slot 1 */
/* The ``live`` lanes of ``lanes`` (L limbs of 26 bits, four lanes interleaved)
 * -> ``live`` numbers of L64 64-bit words at ``out``. */
static void fb4_unpack(uint64_t *out, const uint64_t *lanes, size_t live, size_t L, size_t L64)
{
    for (size_t l = 0; l < live; l++) {
        uint64_t *o = out + l * L64;
        memset(o, 0, L64 * sizeof *o);
        for (size_t j = 0; j < L; j++) {
            const uint64_t limb = lanes[4 * j + l];
            const size_t bit = 26 * j, w = bit / 64, s = bit % 64;
            if (w < L64) o[w] |= limb << s;
            if (s > 38 && w + 1 < L64) o[w + 1] |= limb >> (64 - s);
        }
    }
}

FB4_ATTR static inline void fb4_row(__m256i *t, const __m256i *a, __m256i bi, const __m256i *m, __m256i k0,
                                    size_t L)
{
    const __m256i mask = _mm256_set1_epi64x((long long)M26);
    __m256i t0 = _mm256_add_epi64(t[0], _mm256_mul_epu32(a[0], bi));
    const __m256i y = _mm256_and_si256(_mm256_mul_epu32(t0, k0), mask);
    t0 = _mm256_add_epi64(t0, _mm256_mul_epu32(m[0], y));              /* 0 mod 2^26 */
    t[1] = _mm256_add_epi64(t[1], _mm256_srli_epi64(t0, 26));
    for (size_t j = 1; j < L; j++)
        t[j] = _mm256_add_epi64(t[j], _mm256_add_epi64(_mm256_mul_epu32(a[j], bi), _mm256_mul_epu32(m[j], y)));
}

/* r = a b R^-1 (mod m), below 2m.  Two rows (b_i, b_i+1) per pass over the
 * accumulators: the second row's reduction digit needs only slot 1 after
 * the first row, computed before the pass; the slot each row leaves at 0
 * mod 2^26 carries into the next.  acc: 2L vectors (slots up to 2L - 2). */
FB4_ATTR static void fb4_amm(__m256i *r, const __m256i *a, const __m256i *b, const __m256i *m, __m256i k0,
                             size_t L, __m256i *acc)
{
    const __m256i mask = _mm256_set1_epi64x((long long)M26), zero = _mm256_setzero_si256();
    for (size_t j = 0; j < 2 * L; j++) acc[j] = zero;
    size_t i = 0;
    for (; i + 1 < L; i += 2) {
        const __m256i b0 = b[i], b1 = b[i + 1];
        __m256i *t = acc + i;
        __m256i t0 = _mm256_add_epi64(t[0], _mm256_mul_epu32(a[0], b0));
        const __m256i y0 = _mm256_and_si256(_mm256_mul_epu32(t0, k0), mask);
        t0 = _mm256_add_epi64(t0, _mm256_mul_epu32(m[0], y0));
        __m256i t1 = _mm256_add_epi64(
            _mm256_add_epi64(t[1], _mm256_srli_epi64(t0, 26)),
            _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(a[1], b0), _mm256_mul_epu32(m[1], y0)),
                             _mm256_mul_epu32(a[0], b1)));
        const __m256i y1 = _mm256_and_si256(_mm256_mul_epu32(t1, k0), mask);
        t1 = _mm256_add_epi64(t1, _mm256_mul_epu32(m[0], y1));
        t[2] = _mm256_add_epi64(t[2], _mm256_srli_epi64(t1, 26));
        __m256i ap = a[1], mp = m[1];
        for (size_t j = 2; j < L; j++) {
            const __m256i aj = a[j], mj = m[j];
            t[j] = _mm256_add_epi64(t[j], _mm256_add_epi64(
                _mm256_add_epi64(_mm256_mul_epu32(aj, b0), _mm256_mul_epu32(mj, y0)),
                _mm256_add_epi64(_mm256_mul_epu32(ap, b1), _mm256_mul_epu32(mp, y1))));
            ap = aj;
            mp = mj;
        }
        t[L] = _mm256_add_epi64(t[L], _mm256_add_epi64(_mm256_mul_epu32(ap, b1), _mm256_mul_epu32(mp, y1)));
    }
    if (i < L) fb4_row(acc + i, a, b[i], m, k0, L);
    __m256i c = zero;                                     /* below 2m < R: the last carry is 0 */
    for (size_t j = 0; j < L; j++) {
        const __m256i x = _mm256_add_epi64(acc[L + j], c);
        r[j] = _mm256_and_si256(x, mask);
        c = _mm256_srli_epi64(x, 26);
    }
}

/* x = x - m in the lanes where that does not borrow (x <= m here) */
FB4_ATTR static void fb4_canonical(__m256i *x, const __m256i *m, size_t L, __m256i *d)
{
    const __m256i mask = _mm256_set1_epi64x((long long)M26);
    __m256i borrow = _mm256_setzero_si256();
    for (size_t j = 0; j < L; j++) {
        const __m256i t = _mm256_sub_epi64(_mm256_sub_epi64(x[j], m[j]), borrow);
        borrow = _mm256_srli_epi64(t, 63);
        d[j] = _mm256_and_si256(t, mask);
    }
    const __m256i keep = _mm256_cmpeq_epi64(borrow, _mm256_setzero_si256());
    for (size_t j = 0; j < L; j++) x[j] = _mm256_blendv_epi8(x[j], d[j], keep);
}

FB4_ATTR static void fb4_select(__m256i *sel, const uint64_t *win, const uint64_t d[4], size_t L, unsigned W)
{
    const __m256i dv = _mm256_loadu_si256((const __m256i *)d);
    for (size_t j = 0; j < L; j++) sel[j] = _mm256_setzero_si256();
    for (uint64_t k = 0; k < ((uint64_t)1 << W); k++) {
        const __m256i hit = _mm256_cmpeq_epi64(dv, _mm256_set1_epi64x((long long)k));
        const uint64_t *e = win + k * L;
        for (size_t j = 0; j < L; j++)
            sel[j] = _mm256_or_si256(sel[j], _mm256_and_si256(hit, _mm256_set1_epi64x((long long)e[j])));
    }
}

FB4_ATTR static void fb4_run(uint64_t *out, const uint64_t *table, unsigned W, size_t nwin, const uint64_t *mod,
                             uint64_t k0, const uint64_t *exp, size_t ewords, size_t count, size_t L, size_t L64,
                             __m256i *mem, uint64_t *lanes)
{
    __m256i *m = mem, *acc = m + L, *x = acc + 2 * L, *sel = x + L, *one = sel + L;
    const __m256i k0v = _mm256_set1_epi64x((long long)k0);
    const size_t wstride = ((size_t)1 << W) * L;
    for (size_t j = 0; j < L; j++) {
        m[j] = _mm256_set1_epi64x((long long)mod[j]);
        one[j] = _mm256_setzero_si256();
    }
    one[0] = _mm256_set1_epi64x(1);
    uint64_t d[4];
    for (size_t g = 0; g < count; g += 4) {
        const size_t live = count - g < 4 ? count - g : 4;
        for (size_t i = 0; i < nwin; i++) {
            for (size_t l = 0; l < 4; l++) d[l] = l < live ? fb_digit(exp + (g + l) * ewords, ewords, i * W, W) : 0;
            fb4_select(i ? sel : x, table + i * wstride, d, L, W);
            if (i) fb4_amm(x, x, sel, m, k0v, L, acc);
        }
        fb4_amm(x, x, one, m, k0v, L, acc);                 /* out of Montgomery form: <= m */
        fb4_canonical(x, m, L, sel);
        for (size_t j = 0; j < L; j++) _mm256_storeu_si256((__m256i *)(lanes + 4 * j), x[j]);
        fb4_unpack(out + g * L64, lanes, live, L, L64);
    }
    secea_wipe(d, sizeof d);
}

FB4_ATTR static uint64_t fb4_bench_run(size_t L, size_t reps, __m256i *mem)
{
    __m256i *m = mem, *acc = m + L, *x = acc + 2 * L, *y = x + L;
    uint64_t s = 0x9E3779B97F4A7C15ULL, m0 = 0;
    for (size_t j = 0; j < L; j++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        uint64_t mj = s & M26;
        if (j == 0) mj |= 1, m0 = mj;
        if (j == L - 1) mj = (mj >> 3) | (1ULL << 22);    /* 4 m < R */
        m[j] = _mm256_set1_epi64x((long long)mj);
        x[j] = _mm256_set1_epi64x((long long)(j == L - 1 ? mj >> 1 : (s >> 30) & M26));
        y[j] = _mm256_set1_epi64x((long long)(j == L - 1 ? mj >> 2 : (s >> 40) & M26));
    }
    uint64_t inv = m0;                                   /* m^-1 mod 2^26 */
    for (int i = 0; i < 5; i++) inv = inv * (2 - m0 * inv) & M26;
    const __m256i k0v = _mm256_set1_epi64x((long long)((0 - inv) & M26));
    for (size_t r = 0; r < reps; r++) fb4_amm(x, x, y, m, k0v, L, acc);
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, x[0]);
    return out[0];
}

/* ---- four lanes on AVX2, variable bases: b_l^e mod m for four bases, one
 * modulus and one (secret) exponent, as a decryption's c^(p-1) mod p^2 for
 * a batch.  Fixed windows from the top (secea__powm_window), the 2^W
 * powers of each lane's base in a table read in full at every window with
 * a mask from the (common) digit, squarings by the same product. */
FB4_ATTR static void vb4_select(__m256i *sel, const __m256i *table, uint64_t d, size_t L, unsigned W)
{
    const __m256i dv = _mm256_set1_epi64x((long long)d);
    for (size_t j = 0; j < L; j++) sel[j] = _mm256_setzero_si256();
    for (uint64_t k = 0; k < ((uint64_t)1 << W); k++) {
        const __m256i hit = _mm256_cmpeq_epi64(dv, _mm256_set1_epi64x((long long)k));
        const __m256i *e = table + k * L;
        for (size_t j = 0; j < L; j++) sel[j] = _mm256_or_si256(sel[j], _mm256_and_si256(hit, e[j]));
    }
}

FB4_ATTR static void vb4_run(uint64_t *out, const uint64_t *bases, size_t count, const uint64_t *mod,
                             const uint64_t *rr, uint64_t k0, const uint64_t *exp, size_t ewords, size_t ebits,
                             size_t L, size_t L64, unsigned W, __m256i *mem, uint64_t *lanes)
{
    __m256i *m = mem, *acc = m + L, *x = acc + 2 * L, *sel = x + L, *one = sel + L, *rrv = one + L,
            *table = rrv + L;
    const __m256i k0v = _mm256_set1_epi64x((long long)k0);
    for (size_t j = 0; j < L; j++) {
        m[j] = _mm256_set1_epi64x((long long)mod[j]);
        rrv[j] = _mm256_set1_epi64x((long long)rr[j]);
        one[j] = _mm256_setzero_si256();
    }
    one[0] = _mm256_set1_epi64x(1);
    const size_t nwin = (ebits + W - 1) / W;
    uint64_t d = 0;
    for (size_t g = 0; g < count; g += 4) {
        const size_t live = count - g < 4 ? count - g : 4;
        for (size_t j = 0; j < L; j++) {
            uint64_t v[4];
            for (size_t l = 0; l < 4; l++) v[l] = bases[(g + (l < live ? l : 0)) * L + j];
            x[j] = _mm256_loadu_si256((const __m256i *)v);
        }
        fb4_amm(table, rrv, one, m, k0v, L, acc);                        /* R mod m */
        fb4_amm(table + L, x, rrv, m, k0v, L, acc);                      /* b R mod m */
        for (size_t k = 2; k < ((size_t)1 << W); k++)
            fb4_amm(table + k * L, table + (k - 1) * L, table + L, m, k0v, L, acc);
        if (nwin == 0) {
            memcpy(x, table, L * sizeof *x);
        } else {
            d = fb_digit(exp, ewords, (nwin - 1) * W, W);
            vb4_select(x, table, d, L, W);
            for (size_t w = nwin - 1; w-- > 0;) {
                for (unsigned s = 0; s < W; s++) fb4_amm(x, x, x, m, k0v, L, acc);
                d = fb_digit(exp, ewords, w * W, W);
                vb4_select(sel, table, d, L, W);
                fb4_amm(x, x, sel, m, k0v, L, acc);
            }
        }
        fb4_amm(x, x, one, m, k0v, L, acc);
        fb4_canonical(x, m, L, sel);
        for (size_t j = 0; j < L; j++) _mm256_storeu_si256((__m256i *)(lanes + 4 * j), x[j]);
        fb4_unpack(out + g * L64, lanes, live, L, L64);
    }
    secea_wipe(&d, sizeof d);
}
#endif

int secea_vb4_powm(uint64_t *out, const uint64_t *bases, size_t count, const uint64_t *mod, const uint64_t *rr,
                   uint64_t k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L, size_t L64)
{
#if SECEA_X86
    if (!secea_fb4_available() || L < 2 || L > FB4_MAX_LIMBS || !(mod[0] & 1) || L64 == 0 ||
        ebits > 64 * ewords)
        return -2;
    if (count == 0) return 0;
    const unsigned W = secea__powm_window(ebits);
    const size_t nvec = (7 + ((size_t)1 << W)) * L;
    void *raw = NULL;
    if (posix_memalign(&raw, 32, nvec * sizeof(__m256i) + 4 * L * sizeof(uint64_t))) return -1;
    uint64_t *lanes = (uint64_t *)((__m256i *)raw + nvec);
    vb4_run(out, bases, count, mod, rr, k0, exp, ewords, ebits, L, L64, W, (__m256i *)raw, lanes);
    secea_wipe(raw, nvec * sizeof(__m256i) + 4 * L * sizeof(uint64_t));   /* powers of secret bases */
    free(raw);
    return 0;
#else
    (void)out; (void)bases; (void)count; (void)mod; (void)rr; (void)k0; (void)exp; (void)ewords; (void)ebits;
    (void)L; (void)L64;
    return -2;
#endif
}

int secea_fb4_available(void)
{
#if SECEA_X86
    const secea__kernels *k = secea__kernels_now();   /* the CPU under the ceiling (dispatch.c) */
    return !k->portable && k->cpu.avx2;
#else
    return 0;
#endif
}

int secea_fb4_powm(uint64_t *out, const uint64_t *table, unsigned W, size_t nwin, const uint64_t *mod,
                   uint64_t k0, const uint64_t *exp, size_t ewords, size_t count, size_t L, size_t L64)
{
#if SECEA_X86
    if (!secea_fb4_available() || L < 2 || L > FB4_MAX_LIMBS || W == 0 || W > FB_MAX_W || nwin == 0 ||
        !(mod[0] & 1) || L64 == 0)
        return -2;
    if (count == 0) return 0;
    const size_t nvec = 6 * L;
    void *raw = NULL;
    if (posix_memalign(&raw, 32, nvec * sizeof(__m256i) + 4 * L * sizeof(uint64_t))) return -1;
    uint64_t *lanes = (uint64_t *)((__m256i *)raw + nvec);
    fb4_run(out, table, W, nwin, mod, k0, exp, ewords, count, L, L64, (__m256i *)raw, lanes);
    secea_wipe(raw, nvec * sizeof(__m256i) + 4 * L * sizeof(uint64_t));
    free(raw);
    return 0;
#else
    (void)out; (void)table; (void)W; (void)nwin; (void)mod; (void)k0; (void)exp; (void)ewords; (void)count;
    (void)L; (void)L64;
    return -2;
#endif
}

uint64_t secea_fb4_mul_bench(size_t L, size_t reps)
{
#if SECEA_X86
    if (!secea_fb4_available() || L < 2 || L > FB4_MAX_LIMBS) return UINT64_MAX;
    void *raw = NULL;
    if (posix_memalign(&raw, 32, 5 * L * sizeof(__m256i))) return UINT64_MAX;
    const uint64_t r = fb4_bench_run(L, reps, (__m256i *)raw);
    free(raw);
    return r;
#else
    (void)L; (void)reps;
    return UINT64_MAX;
#endif
}
