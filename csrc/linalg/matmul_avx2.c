/* Exact matrix product over F_p, p < 2^50 (the default embedding prime), with
 * AVX2: variant "avx2" (other p take the scalar kernel of matmul.c).
 *
 * AVX2 has no 64 x 64-bit multiply, but vpmuludq multiplies the low 32 bits
 * of four 64-bit lanes into 64-bit products, as NEON's UMLAL does for the
 * "neon" variant (matmul_neon.c).  Entries x < p < 2^50 are split into 25-bit
 * limbs, x = x_h 2^25 + x_l.  Packing B also splits b' = b 2^25 mod p, so
 *     a b = a_l b + a_h (b 2^25) = (a_l b_l + a_h b'_l) + (a_l b_h + a_h b'_h) 2^25  (mod p)
 * needs four limb products (each < 2^50) in two sums instead of the three
 * sums of the plain split.  A sum gains two products per step, so 64-bit
 * lanes run exactly over chunks of KCH = 2048 steps (< 2^62), then
 * s0 + s1 2^25 (< 2^88) is reduced once per chunk and added mod p.
 *
 * Layout: the columns of C are the vector lanes (4 columns per ymm), so each
 * output row is written in place and short or single-row products waste no
 * lanes.  A tile is RB = 4 rows x 4 columns: per step 4 loads of B (its four
 * limbs), 8 broadcasts of A limbs, 16 vpmuludq, 16 vpaddq; 8 sums + 4 B
 * limbs + 2 A limbs stay in the 16 ymm registers.  B is packed per column
 * group of 4 as [g][t][limb][lane] (zero columns pad n); each job packs the
 * limbs of its 4-row group chunk by chunk into a KCH x 4 x 2 scratch
 * (128 KB, in L2; wiped after: the fused-decryption path multiplies
 * plaintext queries), and each chunk of A meets every column group. */
#include <stdlib.h>
#include <string.h>
#include "matmul_internal.h"

#if SECEA_X86
#include <immintrin.h>

#define LIMB 25
#define LIMB_MASK ((1ULL << LIMB) - 1)
#define KCH 2048   /* steps per exact 64-bit lane sum: 2 * 2^11 * 2^50 = 2^62 */
#define RB 4       /* rows per tile */

static void *pack_b_avx2(const uint64_t *B, size_t k, size_t n, uint64_t p)
{
    size_t groups = (n + 3) / 4, words = groups * k * 16;
    uint64_t *Bp = aligned_alloc(32, (words ? words : 4) * sizeof(uint64_t));
    if (!Bp) return NULL;
    secea_modctx c;
    secea_modctx_init(&c, p);
    uint64_t r25 = secea_mod64(&c, 1ULL << LIMB);
    double pinv = 1.0 / (double)p;
    for (size_t t = 0; t < k; t++)
        for (size_t j = 0; j < groups * 4; j++) {
            uint64_t v = j < n ? B[t * n + j] : 0, w = secea_mulmod_f64(v, r25, p, pinv);
            uint64_t *d = Bp + ((j / 4) * k + t) * 16 + (j % 4);
            d[0] = v & LIMB_MASK;
            d[4] = v >> LIMB;
            d[8] = w & LIMB_MASK;
            d[12] = w >> LIMB;
        }
    return Bp;
}

/* sums over `steps` steps of a 4-row x 4-column tile: out[2 r] = s0, out[2 r + 1] = s1 of row r */
SECEA_TARGET("avx2")
static void tile_steps(__m256i out[8], const uint64_t *ap, const uint64_t *bp, size_t steps)
{
    __m256i s0[RB], s1[RB];
    for (int r = 0; r < RB; r++) s0[r] = s1[r] = _mm256_setzero_si256();
    for (size_t t = 0; t < steps; t++, ap += 2 * RB, bp += 16) {
        __m256i bl = _mm256_load_si256((const __m256i *)bp), bh = _mm256_load_si256((const __m256i *)(bp + 4));
        __m256i cl = _mm256_load_si256((const __m256i *)(bp + 8)), ch = _mm256_load_si256((const __m256i *)(bp + 12));
#pragma GCC unroll 4
        for (int r = 0; r < RB; r++) {
            __m256i al = _mm256_set1_epi64x((long long)ap[2 * r]), ah = _mm256_set1_epi64x((long long)ap[2 * r + 1]);
            s0[r] = _mm256_add_epi64(s0[r], _mm256_add_epi64(_mm256_mul_epu32(al, bl), _mm256_mul_epu32(ah, cl)));
            s1[r] = _mm256_add_epi64(s1[r], _mm256_add_epi64(_mm256_mul_epu32(al, bh), _mm256_mul_epu32(ah, ch)));
        }
    }
    for (int r = 0; r < RB; r++) { out[2 * r] = s0[r]; out[2 * r + 1] = s1[r]; }
}

SECEA_TARGET("avx2")
static void run_avx2(secea__mm_job *jb)
{
    const uint64_t *Bp = jb->Bpacked;
    size_t k = jb->k, n = jb->n, groups = (n + 3) / 4;
    uint64_t p = jb->p;
    secea_modctx mc;
    secea_modctx_init(&mc, p);
    size_t kch = k < KCH ? k : KCH;
    uint64_t *ap = aligned_alloc(32, kch * 2 * RB * sizeof(uint64_t));
    if (!ap) {
        jb->status = -1;
        return;
    }
    for (size_t i = jb->row0; i < jb->row1; i += RB) {
        size_t rows = jb->row1 - i < RB ? jb->row1 - i : RB;
        for (size_t t0 = 0; t0 < k; t0 += KCH) {
            size_t steps = k - t0 < KCH ? k - t0 : KCH;
            for (size_t t = 0; t < steps; t++)
                for (size_t r = 0; r < RB; r++) {
                    uint64_t x = r < rows ? jb->A[(i + r) * k + t0 + t] : 0;
                    ap[t * 2 * RB + 2 * r] = x & LIMB_MASK;
                    ap[t * 2 * RB + 2 * r + 1] = x >> LIMB;
                }
            for (size_t g = 0; g < groups; g++) {
                __m256i acc[8];
                uint64_t s[8][4];
                tile_steps(acc, ap, Bp + (g * k + t0) * 16, steps);
                for (int q = 0; q < 8; q++) _mm256_storeu_si256((__m256i *)s[q], acc[q]);
                size_t cols = n - 4 * g < 4 ? n - 4 * g : 4;
                for (size_t r = 0; r < rows; r++) {
                    uint64_t *dst = jb->C + (i + r) * n + 4 * g;
                    for (size_t l = 0; l < cols; l++) {
                        secea_u128 v = (secea_u128)s[2 * r][l] + ((secea_u128)s[2 * r + 1][l] << LIMB);
                        uint64_t m = secea__mm_fin192(&mc, 0, (uint64_t)(v >> 64), (uint64_t)v);
                        dst[l] = t0 ? secea_addmod(dst[l], m, p) : m;
                    }
                }
            }
        }
    }
    secea_wipe(ap, kch * 2 * RB * sizeof(uint64_t));
    free(ap);
    jb->status = 0;
}

const secea__mm_variant secea__mm_avx2_50 = {"avx2", RB, pack_b_avx2, run_avx2};
int secea__mm_avx2_available(void) { return secea__cpu_allowed("avx2"); }

#else  /* not x86: never selected */
int secea__mm_avx2_available(void) { return 0; }
const secea__mm_variant secea__mm_avx2_50 = {"avx2", RB, 0, 0};
#endif
