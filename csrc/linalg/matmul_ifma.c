/* AVX-512 IFMA variants of the exact product C = A * B mod p.
 *
 * vpmadd52luq / vpmadd52huq multiply the low 52 bits of two lanes and add the
 * low / high 52 bits of the 104-bit product to a 64-bit accumulator.
 *
 * Layout: rows of A are vectorised, 8 rows per zmm lane group; a micro tile is
 * MR = 16 rows x NC columns of C.  For a k-block of KC steps the packed A
 * micro panel (KC x 16, limb-split) stays in L2 and is reused for every column
 * tile; the packed B panel (KC x n) comes from L2/L3 as broadcasts.
 *
 * Exactness: register accumulators collect one k-block; they are then added
 * to an in-memory accumulator (M0, M1, M2) kept in radix 2^52 by a carry
 * normalisation (M0, M1 < 2^52 after each block), so no word can overflow:
 *   ifma1 (p <= 2^52, one limb):  ab = lo + hi 2^52,  lo, hi < 2^52
 *   ifma2 (p < 2^64, a = a0 + a1 2^52 with a0 < 2^52, a1 < 2^12):
 *     ab = lo(a0b0)
 *        + [hi(a0b0) + lo(a0b1) + lo(a1b0)] 2^52            (each < 2^52)
 *        + [hi(a0b1) + hi(a1b0) + lo(a1b1)] 2^104           (< 2^12, 2^12, 2^24)
 *   so per step word 0 grows by < 2^52, word 1 by < 3 * 2^52, word 2 by < 2^25;
 *   with KC = 512 every register sum stays below 2^63.
 * Each output is reduced once, at the end: M0 + M1 2^52 + M2 2^104 mod p.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "matmul_internal.h"

#define MR 16    /* rows per micro tile: two zmm of 8 lanes */
#define KC 512   /* k-block: A's micro panel and B's k-panel stay in L2, register sums stay < 2^63 */
#define NB 480   /* columns per block (a multiple of both column tiles, 6 and 4): a 180 KB memory accumulator */
#define M52 ((1ULL << 52) - 1)

#if SECEA_X86
#include <immintrin.h>

static size_t round_up(size_t x, size_t r) { return (x + r - 1) / r * r; }

/* B packed as one allocation (the front end free()s it): a 64-byte header
 * holding n_pad, then [t][j][limbs] with n padded to a multiple of nc. */
static void *pack_b_flat(const uint64_t *B, size_t k, size_t n, size_t nc, int limbs)
{
    size_t n_pad = round_up(n, nc), words = k * n_pad * (size_t)limbs;
    uint64_t *flat = aligned_alloc(64, 64 + round_up(words * 8, 64));
    if (!flat) return NULL;
    flat[0] = n_pad;
    for (size_t t = 0; t < k; t++) {
        uint64_t *dst = flat + 8 + t * n_pad * (size_t)limbs;
        for (size_t j = 0; j < n_pad; j++) {
            uint64_t v = j < n ? B[t * n + j] : 0;
            if (limbs == 1) dst[j] = v;
            else { dst[2 * j] = v & M52; dst[2 * j + 1] = v >> 52; }
        }
    }
    return flat;
}

static void *pack_b1(const uint64_t *B, size_t k, size_t n, uint64_t p) { (void)p; return pack_b_flat(B, k, n, 6, 1); }
static void *pack_b2(const uint64_t *B, size_t k, size_t n, uint64_t p) { (void)p; return pack_b_flat(B, k, n, 4, 2); }

/* Transpose rows [r0, r0+rows) x cols [kb, kb+kl) of A into ap[t][rv][limb][8]
 * (rows past `rows` are zero).  The t-outer order writes ap sequentially and
 * reads MR row streams of A, about 3x faster than row-by-row scattering. */
static void pack_a(uint64_t *ap, const uint64_t *A, size_t k, size_t r0, size_t rows,
                   size_t kb, size_t kl, int limbs)
{
    const uint64_t *src[MR];
    for (size_t r = 0; r < MR; r++) src[r] = A + (r0 + (r < rows ? r : 0)) * k + kb;
    if (limbs == 1) {
        for (size_t t = 0; t < kl; t++, ap += MR)
            for (size_t r = 0; r < MR; r++) ap[r] = r < rows ? src[r][t] : 0;
    } else {
        for (size_t t = 0; t < kl; t++, ap += 2 * MR)
            for (size_t r = 0; r < MR; r++) {
                uint64_t v = r < rows ? src[r][t] : 0;
                ap[(r / 8) * 16 + (r % 8)] = v & M52;
                ap[(r / 8) * 16 + 8 + (r % 8)] = v >> 52;
            }
    }
}

/* Add one block's register sums to the radix-2^52 memory accumulator. */
SECEA_TARGET("avx512f")
static inline void acc_store(uint64_t *m, __m512i s0, __m512i s1, __m512i s2, int first)
{
    const __m512i mask = _mm512_set1_epi64((long long)M52);
    /* the first k-block initialises the accumulator (no memset, no load) */
    __m512i m0 = first ? s0 : _mm512_add_epi64(_mm512_load_si512(m), s0);
    __m512i m1 = first ? s1 : _mm512_add_epi64(_mm512_load_si512(m + 16), s1);
    __m512i m2 = first ? s2 : _mm512_add_epi64(_mm512_load_si512(m + 32), s2);
    m1 = _mm512_add_epi64(m1, _mm512_srli_epi64(m0, 52));
    m0 = _mm512_and_si512(m0, mask);
    m2 = _mm512_add_epi64(m2, _mm512_srli_epi64(m1, 52));
    m1 = _mm512_and_si512(m1, mask);
    _mm512_store_si512(m, m0);
    _mm512_store_si512(m + 16, m1);
    _mm512_store_si512(m + 32, m2);
}
/* memory accumulator layout: macc[j][w][rv][8]  -> offset (j*3 + w)*16 + rv*8 */

SECEA_TARGET("avx512f,avx512ifma")
static void micro1(const uint64_t *ap, const uint64_t *bp, size_t bstride, size_t kl, uint64_t *macc, int first)
{
    /* 16 rows x 6 columns, two accumulators (lo, hi) each: 24 zmm */
    __m512i lo[2][6], hi[2][6];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 6; c++) { lo[r][c] = _mm512_setzero_si512(); hi[r][c] = _mm512_setzero_si512(); }
    for (size_t t = 0; t < kl; t++) {
        __m512i a0 = _mm512_load_si512(ap + t * 16), a1 = _mm512_load_si512(ap + t * 16 + 8);
        const uint64_t *b = bp + t * bstride;
#pragma GCC unroll 6
        for (int c = 0; c < 6; c++) {
            __m512i bc = _mm512_set1_epi64((long long)b[c]);
            lo[0][c] = _mm512_madd52lo_epu64(lo[0][c], a0, bc);
            hi[0][c] = _mm512_madd52hi_epu64(hi[0][c], a0, bc);
            lo[1][c] = _mm512_madd52lo_epu64(lo[1][c], a1, bc);
            hi[1][c] = _mm512_madd52hi_epu64(hi[1][c], a1, bc);
        }
    }
    const __m512i z = _mm512_setzero_si512();
    for (int c = 0; c < 6; c++)
        for (int r = 0; r < 2; r++) acc_store(macc + c * 48 + r * 8, lo[r][c], hi[r][c], z, first);
}

SECEA_TARGET("avx512f,avx512ifma")
static void micro2(const uint64_t *ap, const uint64_t *bp, size_t bstride, size_t kl, uint64_t *macc, int first)
{
    /* 16 rows x 4 columns, three radix-2^52 words each: 24 zmm */
    __m512i w0[2][4], w1[2][4], w2[2][4];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++)
            w0[r][c] = w1[r][c] = w2[r][c] = _mm512_setzero_si512();
    for (size_t t = 0; t < kl; t++) {
        const uint64_t *a = ap + t * 32;
        __m512i x0[2] = {_mm512_load_si512(a), _mm512_load_si512(a + 16)};       /* low limbs */
        __m512i x1[2] = {_mm512_load_si512(a + 8), _mm512_load_si512(a + 24)};   /* high limbs */
        const uint64_t *b = bp + t * bstride;
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m512i y0 = _mm512_set1_epi64((long long)b[2 * c]);
            __m512i y1 = _mm512_set1_epi64((long long)b[2 * c + 1]);
#pragma GCC unroll 2
            for (int r = 0; r < 2; r++) {
                w0[r][c] = _mm512_madd52lo_epu64(w0[r][c], x0[r], y0);
                w1[r][c] = _mm512_madd52hi_epu64(w1[r][c], x0[r], y0);
                w1[r][c] = _mm512_madd52lo_epu64(w1[r][c], x0[r], y1);
                w1[r][c] = _mm512_madd52lo_epu64(w1[r][c], x1[r], y0);
                w2[r][c] = _mm512_madd52hi_epu64(w2[r][c], x0[r], y1);
                w2[r][c] = _mm512_madd52hi_epu64(w2[r][c], x1[r], y0);
                w2[r][c] = _mm512_madd52lo_epu64(w2[r][c], x1[r], y1);
            }
        }
    }
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 2; r++) acc_store(macc + c * 48 + r * 8, w0[r][c], w1[r][c], w2[r][c], first);
}

/* x mod p for x < 2^53 and p < 2^50, 8 lanes: double quotient estimate. */
SECEA_TARGET("avx512f,avx512dq")
static inline __m512i vred_f64(__m512i x, __m512i pv, __m512d pinv)
{
    __m512i q = _mm512_cvttpd_epu64(_mm512_mul_pd(_mm512_cvtepu64_pd(x), pinv));
    __m512i r = _mm512_sub_epi64(x, _mm512_mullo_epi64(q, pv));
    r = _mm512_mask_add_epi64(r, _mm512_cmplt_epi64_mask(r, _mm512_setzero_si512()), r, pv);
    return _mm512_mask_sub_epi64(r, _mm512_cmpge_epi64_mask(r, pv), r, pv);
}

/* a * b mod p for a, b < p < 2^50, 8 lanes (the vector form of
 * secea_mulmod_f64: the quotient estimate is off by at most one). */
SECEA_TARGET("avx512f,avx512dq")
static inline __m512i vmul_f64(__m512i a, __m512i b, __m512i pv, __m512d pinv)
{
    __m512d prod = _mm512_mul_pd(_mm512_cvtepu64_pd(a), _mm512_cvtepu64_pd(b));
    __m512i q = _mm512_cvttpd_epu64(_mm512_mul_pd(prod, pinv));
    __m512i r = _mm512_sub_epi64(_mm512_mullo_epi64(a, b), _mm512_mullo_epi64(q, pv));
    r = _mm512_mask_add_epi64(r, _mm512_cmplt_epi64_mask(r, _mm512_setzero_si512()), r, pv);
    return _mm512_mask_sub_epi64(r, _mm512_cmpge_epi64_mask(r, pv), r, pv);
}

/* C rows [0, rows) x columns [0, n) of a tile (row stride ldc) from the
 * radix-2^52 accumulator, for p < 2^50:
 * v = M0 + M1 2^52 + M2 2^104 = M0 + M1 c52 + M2 c104 (mod p), with every
 * word < 2^53 (M0, M1 < 2^52 after normalisation; M2 < k 2^-4). */
SECEA_TARGET("avx512f,avx512dq")
static void finalize_f64(uint64_t *C, size_t ldc, size_t n, size_t rows, const uint64_t *macc, uint64_t p,
                         uint64_t c52, uint64_t c104)
{
    const __m512i pv = _mm512_set1_epi64((long long)p);
    const __m512d pinv = _mm512_set1_pd(1.0 / (double)p);
    const __m512i k52 = _mm512_set1_epi64((long long)c52), k104 = _mm512_set1_epi64((long long)c104);
    /* AMD executes scatters slowly: results go to a column-major scratch of
     * 64 columns x 8 rows and are copied out row by row */
    uint64_t tmp[64 * 8] __attribute__((aligned(64)));
    for (size_t rv = 0; rv * 8 < rows; rv++) {
        size_t live = rows - rv * 8 < 8 ? rows - rv * 8 : 8;
        for (size_t j0 = 0; j0 < n; j0 += 64) {
            size_t nj = n - j0 < 64 ? n - j0 : 64;
            for (size_t jj = 0; jj < nj; jj++) {
                const uint64_t *mm = macc + (j0 + jj) * 48 + rv * 8;
                __m512i v0 = vred_f64(_mm512_load_si512(mm), pv, pinv);
                __m512i v1 = vmul_f64(vred_f64(_mm512_load_si512(mm + 16), pv, pinv), k52, pv, pinv);
                __m512i v2 = vmul_f64(vred_f64(_mm512_load_si512(mm + 32), pv, pinv), k104, pv, pinv);
                __m512i s = _mm512_add_epi64(v0, v1);
                s = _mm512_mask_sub_epi64(s, _mm512_cmpge_epi64_mask(s, pv), s, pv);
                s = _mm512_add_epi64(s, v2);
                s = _mm512_mask_sub_epi64(s, _mm512_cmpge_epi64_mask(s, pv), s, pv);
                _mm512_store_si512(tmp + 8 * jj, s);
            }
            for (size_t r = 0; r < live; r++) {
                uint64_t *dst = C + (rv * 8 + r) * ldc + j0;
                for (size_t jj = 0; jj < nj; jj++) dst[jj] = tmp[8 * jj + r];
            }
        }
    }
}

static void run_common(secea__mm_job *jb, int limbs)
{
    const uint64_t *flat = jb->Bpacked;
    size_t n_pad = (size_t)flat[0], nc = limbs == 1 ? 6 : 4;
    const uint64_t *bpk = flat + 8;
    size_t k = jb->k, n = jb->n, bstride = n_pad * (size_t)limbs;
    uint64_t *ap = aligned_alloc(64, (size_t)KC * MR * (size_t)limbs * 8);
    size_t nb = n_pad < NB ? n_pad : NB;
    uint64_t *macc = aligned_alloc(64, nb * 48 * 8);
    if (!ap || !macc) { free(ap); free(macc); jb->status = -1; return; }
    secea_modctx c; secea_modctx_init(&c, jb->p);
    /* vector finalisation for p < 2^50 (the default embedding prime) when the
     * top word is small enough to be an exact double: always, unless k is huge */
    int f64_ok = jb->p < SECEA_F64_MAX_P && jb->k < ((size_t)1 << 40) && secea__kernels_now()->cpu.avx512dq;
    uint64_t c52 = secea_mod64(&c, 1ULL << 52);
    uint64_t c104 = secea_mulmod(&c, c52, c52);
    for (size_t r0 = jb->row0; r0 < jb->row1; r0 += MR) {
        size_t rows = jb->row1 - r0 < MR ? jb->row1 - r0 : MR;
        /* column blocks of NB keep the memory accumulator in L2 whatever n is */
        for (size_t j0 = 0; j0 < n_pad; j0 += NB) {
            size_t j1 = n_pad - j0 < NB ? n_pad : j0 + NB, cols = (j1 < n ? j1 : n) - j0;
            for (size_t kb = 0; kb < k; kb += KC) {
                size_t kl = k - kb < KC ? k - kb : KC;
                pack_a(ap, jb->A, k, r0, rows, kb, kl, limbs);
                for (size_t j = j0; j < j1; j += nc) {
                    const uint64_t *bp = bpk + kb * bstride + j * (size_t)limbs;
                    if (limbs == 1) micro1(ap, bp, bstride, kl, macc + (j - j0) * 48, kb == 0);
                    else micro2(ap, bp, bstride, kl, macc + (j - j0) * 48, kb == 0);
                }
            }
            uint64_t *ct = jb->C + r0 * n + j0;
            if (f64_ok) {
                finalize_f64(ct, n, cols, rows, macc, jb->p, c52, c104);
                continue;
            }
            for (size_t r = 0; r < rows; r++)
                for (size_t j = 0; j < cols; j++) {
                    const uint64_t *mm = macc + j * 48 + (r / 8) * 8 + (r % 8);
                    uint64_t m0 = mm[0], m1 = mm[16], m2 = mm[32];
                    secea_u128 low = (secea_u128)m0 + ((secea_u128)m1 << 52);   /* < 2^105 */
                    uint64_t w0 = (uint64_t)low, w1 = (uint64_t)(low >> 64);
                    uint64_t add = m2 << 40, w2 = m2 >> 24;                       /* m2 * 2^104 */
                    w1 += add;
                    w2 += w1 < add;
                    ct[r * n + j] = secea__mm_fin192(&c, w2, w1, w0);
                }
        }
    }
    /* the panels held rows of A (decrypted queries on the SecEA path) and
     * partial products: wipe before freeing */
    secea_wipe(ap, (size_t)KC * MR * (size_t)limbs * 8);
    secea_wipe(macc, nb * 48 * 8);
    free(ap);
    free(macc);
    jb->status = 0;
}

static void run1(secea__mm_job *jb) { run_common(jb, 1); }
static void run2(secea__mm_job *jb) { run_common(jb, 2); }

const secea__mm_variant secea__mm_ifma1 = {"ifma1", MR, pack_b1, run1};
const secea__mm_variant secea__mm_ifma2 = {"ifma2", MR, pack_b2, run2};

#else  /* not x86: never selected */
const secea__mm_variant secea__mm_ifma1 = {"ifma1", MR, 0, 0};
const secea__mm_variant secea__mm_ifma2 = {"ifma2", MR, 0, 0};
#endif
