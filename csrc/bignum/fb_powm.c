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
