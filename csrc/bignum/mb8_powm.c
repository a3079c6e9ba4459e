/* Eight (zmm) or four (ymm) modular exponentiations at once, one per vector
 * lane, in radix 2^52 with IFMA (vpmadd52luq / vpmadd52huq): the Paillier private-key
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

#define MB_MAX_LIMBS 128
#define MB_MAX_W 6

void secea__bignum_choose(secea__kernels *k)
{
    k->bignum_ifma = !k->portable && k->cpu.avx512ifma;       /* includes F and VL */
}

/* "portable": Python falls back to gmpy2.powmod_sec */
const char *secea__bignum_variant(const secea__kernels *k) { return k->bignum_ifma ? "ifma" : "portable"; }

int secea_mb8_available(void) { return secea__kernels_now()->bignum_ifma; }

#if SECEA_X86
#include <immintrin.h>

#define MASK52 0xFFFFFFFFFFFFFULL

/* 8 lanes on zmm registers */
#define V __m512i
#define VMASK __mmask8
#define MB_W_LANES 8
#define ATTR SECEA_TARGET("avx512f,avx512ifma")
#define MB_FN(name) name##_z
#define VSET1(x) _mm512_set1_epi64((long long)(x))
#define VZERO() _mm512_setzero_si512()
#define VADD _mm512_add_epi64
#define VSUB _mm512_sub_epi64
#define VAND _mm512_and_si512
#define VSRLI _mm512_srli_epi64
#define VSLLI _mm512_slli_epi64
#define VMADDLO _mm512_madd52lo_epu64
#define VMADDHI _mm512_madd52hi_epu64
#define VCMPEQ _mm512_cmpeq_epu64_mask
#define VMASKMOV _mm512_mask_mov_epi64
#define VLOADU _mm512_loadu_si512
#include "mb_powm_kernel.h"
#undef V
#undef VMASK
#undef MB_W_LANES
#undef ATTR
#undef MB_FN
#undef VSET1
#undef VZERO
#undef VADD
#undef VSUB
#undef VAND
#undef VSRLI
#undef VSLLI
#undef VMADDLO
#undef VMADDHI
#undef VCMPEQ
#undef VMASKMOV
#undef VLOADU

/* 4 lanes on ymm registers (AVX-512VL encodings of the same instructions) */
#define V __m256i
#define VMASK __mmask8
#define MB_W_LANES 4
#define ATTR SECEA_TARGET("avx512f,avx512vl,avx512ifma")
#define MB_FN(name) name##_y
#define VSET1(x) _mm256_set1_epi64x((long long)(x))
#define VZERO() _mm256_setzero_si256()
#define VADD _mm256_add_epi64
#define VSUB _mm256_sub_epi64
#define VAND _mm256_and_si256
#define VSRLI _mm256_srli_epi64
#define VSLLI _mm256_slli_epi64
#define VMADDLO _mm256_madd52lo_epu64
#define VMADDHI _mm256_madd52hi_epu64
#define VCMPEQ _mm256_cmpeq_epu64_mask
#define VMASKMOV _mm256_mask_mov_epi64
#define VLOADU(p) _mm256_loadu_si256((const __m256i *)(p))
#include "mb_powm_kernel.h"
#endif

/* the window width with the fewest products, 2^W + ceil(ebits/W) (W + 1),
 * W from 1 to 6 (also hz_powm.c's) */
unsigned secea__powm_window(size_t ebits)
{
    unsigned W = 1;
    for (unsigned w = 2; w <= MB_MAX_W; w++)
        if ((1u << w) + (ebits + w - 1) / w * (w + 1) < (1u << W) + (ebits + W - 1) / W * (W + 1)) W = w;
    return W;
}

/* out = base^exp mod mod, lane by lane, on `lanes` lanes (8: zmm, 4: ymm).
 * base, rr, mod, out: L limbs x lanes (limb-major, 52-bit limbs);
 * base < 2 mod; rr = R^2 mod m with R = 2^(52 L); k0 = -mod^-1 mod 2^52 per
 * lane; mod odd with 4 mod < R; exp: ewords 64-bit words x lanes
 * (word-major), of which the low ebits bits are used (the same count for
 * every lane: it is public).  Returns 0, -1 if memory runs out, -2 if IFMA
 * is unavailable or L is out of range. */
static int mb_powm(unsigned lanes, uint64_t *out, const uint64_t *base, const uint64_t *rr,
                   const uint64_t *mod, const uint64_t *k0, const uint64_t *exp, size_t ewords,
                   size_t ebits, size_t L)
{
#if SECEA_X86
    if (!secea__kernels_now()->bignum_ifma || L == 0 || L > MB_MAX_LIMBS || ebits > 64 * ewords) return -2;
    unsigned W = secea__powm_window(ebits);
    size_t vbytes = (size_t)lanes * 8;
    size_t nvec = (size_t)L * (7 + (1u << W));
    void *raw = NULL;
    if (posix_memalign(&raw, 64, nvec * vbytes)) return -1;
    if (lanes == 8)
        powm_ifma_z(out, base, rr, mod, k0, exp, ewords, ebits, L, W, (__m512i *)raw);
    else
        powm_ifma_y(out, base, rr, mod, k0, exp, ewords, ebits, L, W, (__m256i *)raw);
    /* the table and accumulators held secret powers: clear before freeing */
    secea_wipe(raw, nvec * vbytes);
    free(raw);
    return 0;
#else
    (void)lanes; (void)out; (void)base; (void)rr; (void)mod; (void)k0; (void)exp; (void)ewords;
    (void)ebits; (void)L;
    return -2;
#endif
}

int secea_mb8_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L)
{
    return mb_powm(8, out, base, rr, mod, k0, exp, ewords, ebits, L);
}

int secea_mb4_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L)
{
    return mb_powm(4, out, base, rr, mod, k0, exp, ewords, ebits, L);
}
