/* Eight modular exponentiations at once, one per AVX-512 lane, in radix 2^52
 * with IFMA (vpmadd52luq / vpmadd52huq): the Paillier private-key
 * exponentiations (secea_fast.paillier, decryption c^(p-1) mod p^2 and the
 * CRT obfuscators s^p mod p^2).
 *
 * Each lane has its own odd modulus m < R / 4, R = 2^(52 L), its own base and
 * its own exponent; operands are limb-major: x[j * 8 + lane] is limb j (52
 * bits) of lane `lane`.
 *
 * Almost Montgomery multiplication (operand scanning, one reduction digit per
 * limb of b): for a, b < 2m it returns a b R^-1 mod m up to one m, below 2m,
 * because (a b + m Y) / R < (4 m^2 + m R) / R < 2m when 4m < R.  No final
 * subtraction inside the loop, so the running time does not depend on any
 * value.  Accumulator slot k collects at most 4 (L + 1) 52-bit terms (plus
 * small carries): below 2^62 for L <= 128, so 64-bit lanes never overflow
 * before the normalisation at the end of each product.
 *
 * Exponentiation: fixed windows of W bits from the top (W from 1 to 6, the
 * one with the fewest products for the public exponent length: 4 for 64-bit
 * exponents, 5-6 for 1024-bit ones), the table of the 2^W powers read in full
 * at every window with lane masks (no exponent-dependent
 * address or branch: GMP's mpn_sec_powm discipline), squarings by the same
 * product.  The final product by 1 maps out of Montgomery form and, for an
 * input below 2m, gives a result of at most m: it equals m exactly when the
 * power is 0 mod m (a base sharing a factor with a composite modulus), so a
 * last masked subtraction of m (lane-wise, no branch) makes it canonical.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"

#define MB_LANES 8
#define MB_MAX_LIMBS 128
#define MB_MAX_W 6

static int mb_enabled = 0;

void secea__bignum_select(int force_portable)
{
    mb_enabled = !force_portable && secea__cpu_allowed("avx512ifma");
}

/* "portable": Python falls back to gmpy2.powmod_sec */
const char *secea__bignum_variant(void) { return mb_enabled ? "ifma" : "portable"; }

int secea_mb8_available(void) { return mb_enabled; }

#if SECEA_X86
#include <immintrin.h>

#define ATTR SECEA_TARGET("avx512f,avx512ifma")
typedef __m512i V;
#define MASK52 0xFFFFFFFFFFFFFULL

/* r = the L-limb value in acc (64-bit slots) as 52-bit limbs; the value is
 * below 2^(52 L), so the last carry is 0. */
ATTR static inline void normalise(V *r, const V *acc, size_t L)
{
    const V mask = _mm512_set1_epi64((long long)MASK52);
    V carry = _mm512_setzero_si512();
    for (size_t j = 0; j < L; j++) {
        V x = _mm512_add_epi64(acc[j], carry);
        r[j] = _mm512_and_si512(x, mask);
        carry = _mm512_srli_epi64(x, 52);
    }
}

/* x = x - m in the lanes where x >= m (x <= m here, so only x = m becomes
 * 0): the subtraction is always computed and kept by a lane mask. */
ATTR static void canonical(V *x, const V *m, size_t L)
{
    const V mask = _mm512_set1_epi64((long long)MASK52);
    V borrow = _mm512_setzero_si512();
    V d[MB_MAX_LIMBS];
    for (size_t j = 0; j < L; j++) {
        V t = _mm512_sub_epi64(_mm512_sub_epi64(x[j], m[j]), borrow);
        borrow = _mm512_srli_epi64(t, 63);                /* limbs < 2^52: negative = top bit */
        d[j] = _mm512_and_si512(t, mask);
    }
    const __mmask8 keep = _mm512_cmpeq_epu64_mask(borrow, _mm512_setzero_si512());
    for (size_t j = 0; j < L; j++) x[j] = _mm512_mask_mov_epi64(x[j], keep, d[j]);
}

/* r = a b R^-1 (mod m), r < 2m for a, b < 2m.  acc: 2L scratch vectors.
 * r may alias a or b. */
ATTR static void amm(V *r, const V *a, const V *b, const V *m, V k0, size_t L, V *acc)
{
    const V mask = _mm512_set1_epi64((long long)MASK52);
    const V zero = _mm512_setzero_si512();
    for (size_t j = 0; j < 2 * L; j++) acc[j] = zero;
    for (size_t i = 0; i < L; i++) {
        const V bi = b[i];
        V *t = acc + i;
        /* the reduction digit needs slot 0 after a_0 b_i */
        V t0 = _mm512_madd52lo_epu64(t[0], a[0], bi);
        const V y = _mm512_and_si512(_mm512_madd52lo_epu64(zero, t0, k0), mask);
        V cur = _mm512_madd52lo_epu64(t0, m[0], y);
        V nxt = _mm512_madd52hi_epu64(_mm512_madd52hi_epu64(t[1], a[0], bi), m[0], y);
        /* slot 0 is now 0 mod 2^52: carry it into slot 1 */
        nxt = _mm512_add_epi64(nxt, _mm512_srli_epi64(cur, 52));
        for (size_t j = 1; j < L; j++) {
            V s = _mm512_madd52lo_epu64(_mm512_madd52lo_epu64(nxt, a[j], bi), m[j], y);
            nxt = _mm512_madd52hi_epu64(_mm512_madd52hi_epu64(t[j + 1], a[j], bi), m[j], y);
            t[j] = s;
        }
        t[L] = nxt;
    }
    normalise(r, acc + L, L);
}

/* r = a^2 R^-1 (mod m), r < 2m for a < 2m: the full square first (each cross
 * product once, the accumulators doubled, then the diagonal), then L
 * reduction digits: 3 L^2 IFMA instead of 4 L^2.  Slots stay below 2^62
 * (2L cross terms doubled, the diagonal, 2L reduction terms, each < 2^52,
 * L <= 128).  r may alias a. */
ATTR static void ams(V *r, const V *a, const V *m, V k0, size_t L, V *acc)
{
    const V mask = _mm512_set1_epi64((long long)MASK52);
    const V zero = _mm512_setzero_si512();
    for (size_t j = 0; j < 2 * L; j++) acc[j] = zero;
    for (size_t i = 0; i + 1 < L; i++) {
        const V ai = a[i];
        V *t = acc + 2 * i + 1;
        V nxt = t[0];
        for (size_t j = i + 1; j < L; j++, t++) {
            V s = _mm512_madd52lo_epu64(nxt, ai, a[j]);
            nxt = _mm512_madd52hi_epu64(t[1], ai, a[j]);
            t[0] = s;
        }
        t[0] = nxt;
    }
    for (size_t i = 0; i < L; i++) {
        acc[2 * i] = _mm512_madd52lo_epu64(_mm512_slli_epi64(acc[2 * i], 1), a[i], a[i]);
        acc[2 * i + 1] = _mm512_madd52hi_epu64(_mm512_slli_epi64(acc[2 * i + 1], 1), a[i], a[i]);
    }
    for (size_t i = 0; i < L; i++) {
        V *t = acc + i;
        const V y = _mm512_and_si512(_mm512_madd52lo_epu64(zero, t[0], k0), mask);
        V cur = _mm512_madd52lo_epu64(t[0], m[0], y);
        V nxt = _mm512_add_epi64(_mm512_madd52hi_epu64(t[1], m[0], y), _mm512_srli_epi64(cur, 52));
        for (size_t j = 1; j < L; j++) {
            V s = _mm512_madd52lo_epu64(nxt, m[j], y);
            nxt = _mm512_madd52hi_epu64(t[j + 1], m[j], y);
            t[j] = s;
        }
        t[L] = nxt;
    }
    normalise(r, acc + L, L);
}

/* The W-bit digit of each lane's exponent at bit position pos (bits beyond
 * ebits read as 0). exp: ewords words per lane, word-major. */
static inline void digits_at(uint64_t out[MB_LANES], const uint64_t *exp, size_t ewords, size_t pos,
                             unsigned W)
{
    size_t w = pos / 64, s = pos % 64;
    for (int l = 0; l < MB_LANES; l++) {
        uint64_t lo = w < ewords ? exp[w * MB_LANES + l] >> s : 0;
        uint64_t hi = (s && w + 1 < ewords) ? exp[(w + 1) * MB_LANES + l] << (64 - s) : 0;
        out[l] = (lo | hi) & ((1u << W) - 1);
    }
}

/* sel = table[d_lane] in every lane, reading every entry. */
ATTR static void ct_select(V *sel, const V *table, const uint64_t d[MB_LANES], size_t L, unsigned W)
{
    const V dv = _mm512_loadu_si512((const void *)d);
    for (size_t j = 0; j < L; j++) sel[j] = _mm512_setzero_si512();
    for (unsigned k = 0; k < (1u << W); k++) {
        const __mmask8 hit = _mm512_cmpeq_epu64_mask(dv, _mm512_set1_epi64(k));
        const V *e = table + (size_t)k * L;
        for (size_t j = 0; j < L; j++) sel[j] = _mm512_mask_mov_epi64(sel[j], hit, e[j]);
    }
}

ATTR static void powm_ifma(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                           const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L,
                           unsigned W, V *mem)
{
    V *m = mem, *rrv = m + L, *acc = rrv + L, *x = acc + 2 * L, *sel = x + L, *one = sel + L,
      *table = one + L;                                   /* 2^W entries of L vectors */
    const V k0v = _mm512_loadu_si512((const void *)k0);
    memcpy(m, mod, L * sizeof(V));
    memcpy(rrv, rr, L * sizeof(V));
    memcpy(x, base, L * sizeof(V));
    for (size_t j = 0; j < L; j++) one[j] = _mm512_setzero_si512();
    one[0] = _mm512_set1_epi64(1);
    amm(table, rrv, one, m, k0v, L, acc);                 /* R mod m (Montgomery 1) */
    amm(table + L, x, rrv, m, k0v, L, acc);               /* base R mod m */
    for (unsigned k = 2; k < (1u << W); k++)
        amm(table + (size_t)k * L, table + (size_t)(k - 1) * L, table + L, m, k0v, L, acc);
    size_t nwin = (ebits + W - 1) / W;
    uint64_t d[MB_LANES];
    if (nwin == 0) {
        memcpy(x, table, L * sizeof(V));
    } else {
        digits_at(d, exp, ewords, (nwin - 1) * W, W);
        ct_select(x, table, d, L, W);
        for (size_t w = nwin - 1; w-- > 0;) {
            for (unsigned s = 0; s < W; s++) ams(x, x, m, k0v, L, acc);
            digits_at(d, exp, ewords, w * W, W);
            ct_select(sel, table, d, L, W);
            amm(x, x, sel, m, k0v, L, acc);
        }
    }
    amm(x, x, one, m, k0v, L, acc);                       /* out of Montgomery form: <= m */
    canonical(x, m, L);
    memcpy(out, x, L * sizeof(V));
    secea_wipe(d, sizeof d);                              /* digits of secret exponents */
}
#endif

/* out = base^exp mod mod, lane by lane.  base, rr, mod, out: L limbs x 8
 * lanes (limb-major, 52-bit limbs); base < 2 mod; rr = R^2 mod m with
 * R = 2^(52 L); k0 = -mod^-1 mod 2^52 per lane; mod odd with 4 mod < R;
 * exp: ewords 64-bit words x 8 lanes (word-major), of which the low ebits
 * bits are used (the same count for every lane: it is public).  Returns 0,
 * -1 if memory runs out, -2 if IFMA is unavailable or L is out of range. */
int secea_mb8_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L)
{
#if SECEA_X86
    if (!mb_enabled || L == 0 || L > MB_MAX_LIMBS || ebits > 64 * ewords) return -2;
    unsigned W = 1;                       /* fewest products: 2^W + ceil(ebits/W) (W + 1) */
    for (unsigned w = 2; w <= MB_MAX_W; w++)
        if ((1u << w) + (ebits + w - 1) / w * (w + 1) < (1u << W) + (ebits + W - 1) / W * (W + 1)) W = w;
    size_t nvec = (size_t)L * (7 + (1u << W));
    void *raw = NULL;
    if (posix_memalign(&raw, 64, nvec * 64)) return -1;
    powm_ifma(out, base, rr, mod, k0, exp, ewords, ebits, L, W, (V *)raw);
    /* the table and accumulators held secret powers: clear before freeing */
    secea_wipe(raw, nvec * 64);
    free(raw);
    return 0;
#else
    (void)out; (void)base; (void)rr; (void)mod; (void)k0; (void)exp; (void)ewords; (void)ebits; (void)L;
    return -2;
#endif
}
