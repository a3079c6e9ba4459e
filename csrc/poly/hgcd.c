/* Half-GCD over F_p entirely in C (secea_fp_poly_hgcd): the recursion of
 * secea_fast/poly/_euclid.py (Thull & Yap, "A unified approach to HGCD
 * algorithms for polynomials and integers", 1990; von zur Gathen & Gerhard,
 * Modern Computer Algebra, Sec. 11.1) without the Python overhead.
 *
 * For deg a = n > deg b, hgcd(a, b) is the matrix M of the Euclidean steps
 * taking (a, b) to consecutive remainders (c, d) with deg c >= m > deg d,
 * m = ceil(n/2).  M is unique, so every route below (classical base case,
 * transforms, any crossover) returns the matrix of the Python recursion.
 *
 *   hgcd(a, b):  R = hgcd(a div x^m, b div x^m);  (c, d) = R (a, b)
 *                if deg d < m: return R
 *                c = q d + e;  R' = [[0, 1], [1, -q]] R
 *                if deg e < m: return R'
 *                k = 2m - deg d;  S = hgcd(d div x^k, e div x^k);  return S R'
 *
 * Products.  With M = [[s, t], [s', t']] the Euclid matrix of steps with
 * quotients q_1..q_j, deg t' = n - deg c exactly (degrees of Euclid
 * matrices add up without cancellation), so len c = n - deg R11 + 1 is known
 * before the product and len d < len c.  (c, d) = R (a, b) is therefore
 * taken cyclically of length N1 = 2^ceil(log2 len c) (a, b folded mod
 * x^N1 - 1): the top coefficients of the two products cancel in the sum, so
 * nothing wraps.  That is 4 + 2 forward transforms, the pointwise 2x2 times
 * 2x1 product and 2 inverse transforms.  For S R' (length N2 <= N1) the
 * transforms of R' are not recomputed: the first N2 entries of a
 * bit-reversed length-N1 transform are the length-N2 transform (the roots of
 * unity are chosen consistently, w_N2 = w_N1^(N1/N2)), so
 *     T(R'_0j) = T(R_1j),  T(R'_1j) = T(R_0j) - T(q) T(R_1j)
 * costs one forward transform (of q) instead of four; then 4 forward (S),
 * 8 pointwise products in 4 sums (one fused pass, R' formed on the fly),
 * 4 inverse transforms.
 *
 * Base case (degree <= base): classical Euclid, fraction free (see
 * base_euclid: one inversion per call instead of one per step, which was
 * 14% of the run time), only the coefficients that still influence the
 * remaining quotients updated.  The inner loops are vectorised for
 * Goldilocks with AVX-512F (a 64 x 64 -> 128-bit product from four vpmuludq
 * partial products, then the reduction 2^64 = 2^32 - 1, 2^96 = -1); the
 * remaining inversions use an addition chain for p - 2 (64 squarings,
 * 9 multiplications).
 *
 * Quotients: classical division when the quotient or divisor is short
 * (HG_DIV_CLASSICAL), else Newton inversion of the reversed divisor (five
 * transforms per doubling) and r = (c - q d) mod (x^N - 1), N >= deg d
 * (rare: non-normal remainder sequences).
 *
 * Primes: Goldilocks (vectorised, or portable scalar when the NTT runs its
 * portable variant), and any prime p < 2^63 whose 2-adicity covers the
 * transform lengths (scalar arithmetic plus the library's pointwise kernel).
 *
 * Memory: one arena per call (chunks reused after release, LIFO marks);
 * NTT plans are cached per (p, log length) for the process lifetime, behind
 * a mutex (plans are read only once built).
 *
 * Length (about 1,300 lines): one algorithm. The recursion, its Euclid
 * base case and the products, series inverses and divisions it calls all
 * allocate from the call's arena (above) and reuse its cached NTT plans;
 * the general poly kernels allocate per call, so moving these routines out
 * would export arena-taking variants with this file as their only caller.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"
#include "gl_avx512.h"

#if SECEA_X86
#include <immintrin.h>
#endif

#define GL SECEA_GOLDILOCKS

#define SECEA_HG_MAXLOG (SECEA_HGCD_MAX_LOG + 1)   /* transform lengths 2^0 .. 2^30 */
#define HG_BASE_DEFAULT 128    /* classical Euclid at and below this degree */
#define HG_NTT_MIN 32          /* transform length below which products are classical */
#define HG_DIV_CLASSICAL 64    /* classical division if min(len q, len d) <= this */

enum { HG_GENERIC = 0, HG_GL_PORTABLE = 1, HG_GL_AVX512 = 2 };

/* ------------------------------------------------------------------ */
/* arena                                                               */

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds: every allocation is its own exact-size malloc, so
 * AddressSanitizer sees overruns between sub-buffers. */
typedef struct {
    size_t n;
} hg_mark;

typedef struct {
    uint64_t **ptr;
    size_t n, cap;
} hg_arena;

static uint64_t *ar_alloc(hg_arena *ar, size_t n)
{
    if (ar->n == ar->cap) {
        size_t cap = ar->cap ? 2 * ar->cap : 256;
        uint64_t **np = realloc(ar->ptr, cap * sizeof *np);
        if (!np) return NULL;
        ar->ptr = np;
        ar->cap = cap;
    }
    uint64_t *r = malloc((n ? n : 1) * sizeof(uint64_t));
    if (r) ar->ptr[ar->n++] = r;
    return r;
}

static hg_mark ar_mark(const hg_arena *ar)
{
    hg_mark m = {ar->n};
    return m;
}

static void ar_release(hg_arena *ar, hg_mark m)
{
    while (ar->n > m.n) free(ar->ptr[--ar->n]);
}

static void ar_free(hg_arena *ar)
{
    ar_release(ar, (hg_mark){0});
    free(ar->ptr);
    ar->ptr = NULL;
    ar->cap = 0;
}

static int ar_reserve(hg_arena *ar, size_t n)
{
    (void)ar;
    (void)n;
    return 0;
}
#else
#define HG_MAXCHUNK 40

typedef struct {
    uint64_t *mem;
    size_t cap, used;     /* words */
} hg_chunk;

typedef struct {
    size_t idx, used;
} hg_mark;

typedef struct {
    hg_chunk ch[HG_MAXCHUNK];
    size_t nch, idx;
} hg_arena;

static uint64_t *ar_alloc(hg_arena *ar, size_t n)
{
    n = (n + 15) & ~(size_t)7;      /* >= 8 words of slack, 64-byte granules */
    if (ar->nch) {
        hg_chunk *h = &ar->ch[ar->idx];
        if (h->used + n <= h->cap) {
            uint64_t *r = h->mem + h->used;
            h->used += n;
            return r;
        }
    }
    size_t nx = ar->nch ? ar->idx + 1 : 0;
    if (nx >= HG_MAXCHUNK) return NULL;
    if (nx < ar->nch && ar->ch[nx].cap < n) {      /* unused and too small: replace */
        free(ar->ch[nx].mem);
        ar->ch[nx].mem = NULL;
        ar->ch[nx].cap = 0;
    }
    if (nx >= ar->nch || !ar->ch[nx].mem) {
        size_t want = ar->nch ? 2 * ar->ch[ar->nch - 1].cap : 0;
        if (want < n) want = n;
        if (want < ((size_t)1 << 14)) want = (size_t)1 << 14;
        uint64_t *m = aligned_alloc(64, want * sizeof(uint64_t));
        if (!m) return NULL;
        ar->ch[nx].mem = m;
        ar->ch[nx].cap = want;
        if (nx >= ar->nch) ar->nch = nx + 1;
    }
    ar->idx = nx;
    ar->ch[nx].used = n;
    return ar->ch[nx].mem;
}

static hg_mark ar_mark(const hg_arena *ar)
{
    hg_mark m = {ar->idx, ar->nch ? ar->ch[ar->idx].used : 0};
    return m;
}

static void ar_release(hg_arena *ar, hg_mark m)
{
    ar->idx = m.idx;
    if (ar->nch) ar->ch[m.idx].used = m.used;
}

static void ar_free(hg_arena *ar)
{
    for (size_t i = 0; i < ar->nch; i++) free(ar->ch[i].mem);
    ar->nch = ar->idx = 0;
}

/* one chunk of n words up front (the usual peak of a call) */
static int ar_reserve(hg_arena *ar, size_t n)
{
    if (!ar_alloc(ar, n)) return SECEA_ENOMEM;
    ar->ch[0].used = 0;
    return 0;
}
#endif

/* ------------------------------------------------------------------ */
/* context, NTT plans                                                   */

typedef struct {
    uint64_t p;
    int kind;
    secea_modctx mc;
    size_t base;                               /* classical at degree <= base */
    const secea_ntt_plan *plan[SECEA_HG_MAXLOG];
    secea_ntt_plan *own[SECEA_HG_MAXLOG];      /* plans this call must free */
    hg_arena ar;
} hctx;

#define HG_CACHE_PRIMES 8
static pthread_mutex_t hg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t p;
    secea_ntt_plan *pl[SECEA_HG_MAXLOG];
} hg_cache[HG_CACHE_PRIMES];

/* A primitive 2^logn-th root of unity, the same power chain for every logn
 * (w_logn = w_v^(2^(v - logn)), w_v = g^((p-1)/2^v), g a non-residue). */
static uint64_t hg_root(const secea_modctx *mc, uint64_t p, unsigned logn)
{
    uint64_t pm1 = p - 1;
    unsigned v = (unsigned)__builtin_ctzll(pm1);
    uint64_t g = 2;
    while (secea_powmod(mc, g, pm1 >> 1) != p - 1) g++;
    uint64_t w = secea_powmod(mc, g, pm1 >> v);
    for (unsigned i = logn; i < v; i++) w = secea_mulmod_any(mc, w, w);
    return w;
}

static const secea_ntt_plan *hg_plan(hctx *c, unsigned logn)
{
    if (c->plan[logn]) return c->plan[logn];
    secea_ntt_plan *pl = NULL;
    pthread_mutex_lock(&hg_lock);
    int slot = -1;
    for (int i = 0; i < HG_CACHE_PRIMES; i++) {
        if (hg_cache[i].p == c->p) { slot = i; break; }
        if (slot < 0 && hg_cache[i].p == 0) slot = i;
    }
    if (slot >= 0) {
        hg_cache[slot].p = c->p;
        if (!hg_cache[slot].pl[logn])
            hg_cache[slot].pl[logn] = secea_ntt_plan_new(c->p, hg_root(&c->mc, c->p, logn), logn);
        pl = hg_cache[slot].pl[logn];
    }
    pthread_mutex_unlock(&hg_lock);
    if (slot < 0) {      /* cache full of other primes: a plan for this call only */
        pl = secea_ntt_plan_new(c->p, hg_root(&c->mc, c->p, logn), logn);
        c->own[logn] = pl;
    }
    c->plan[logn] = pl;
    return pl;
}

/* ------------------------------------------------------------------ */
/* scalar arithmetic                                                    */

static inline uint64_t s_mul(const hctx *c, uint64_t x, uint64_t y)
{
    return c->kind != HG_GENERIC ? secea_gl_mul(x, y) : secea_mulmod(&c->mc, x, y);
}

static inline uint64_t gl_sqn(uint64_t x, unsigned k)
{
    while (k--) x = secea_gl_mul(x, x);
    return x;
}

/* x^(p-2) for Goldilocks: p - 2 = (2^31 - 1) 2^33 + (2^32 - 1); with
 * t_k = x^(2^k - 1): t_2k = t_k^(2^k) t_k. */
static uint64_t gl_inv(uint64_t x)
{
    uint64_t t1 = x;
    uint64_t t2 = secea_gl_mul(gl_sqn(t1, 1), t1);
    uint64_t t3 = secea_gl_mul(gl_sqn(t2, 1), t1);
    uint64_t t6 = secea_gl_mul(gl_sqn(t3, 3), t3);
    uint64_t t12 = secea_gl_mul(gl_sqn(t6, 6), t6);
    uint64_t t24 = secea_gl_mul(gl_sqn(t12, 12), t12);
    uint64_t t30 = secea_gl_mul(gl_sqn(t24, 6), t6);
    uint64_t t31 = secea_gl_mul(gl_sqn(t30, 1), t1);
    uint64_t t32 = secea_gl_mul(gl_sqn(t31, 1), t1);
    return secea_gl_mul(gl_sqn(t31, 33), t32);
}

static inline uint64_t s_inv(const hctx *c, uint64_t x)
{
    return c->kind != HG_GENERIC ? gl_inv(x) : secea_invmod(&c->mc, x);
}

static inline size_t trimlen(const uint64_t *a, size_t n)
{
    while (n && !a[n - 1]) n--;
    return n;
}

static inline unsigned clog2(size_t n)
{
    unsigned k = 0;
    while (((size_t)1 << k) < n) k++;
    return k;
}

/* ------------------------------------------------------------------ */
/* vector kernels (Goldilocks, AVX-512F)                                */

#if SECEA_X86
#define HG_AVX SECEA_TARGET("avx512f")
#define HG_INL static inline __attribute__((always_inline)) HG_AVX
typedef __m512i hv;

HG_INL hv hv_p(void) { return _mm512_set1_epi64((long long)GL); }
HG_INL hv hv_eps(void) { return _mm512_set1_epi64(0xFFFFFFFFLL); }

/* hi 2^64 + lo mod p: with hi = h1 2^32 + h0, hi 2^64 = h0 (2^32 - 1) - h1 */
HG_INL hv hv_reduce(hv lo, hv hi)
{
    hv P = hv_p(), E = hv_eps();
    hv h1 = _mm512_srli_epi64(hi, 32);
    hv t = _mm512_sub_epi64(lo, h1);
    t = _mm512_mask_add_epi64(t, _mm512_cmplt_epu64_mask(lo, h1), t, P);  /* borrow: -2^64 = +p */
    hv u = _mm512_mul_epu32(hi, E);                                       /* h0 (2^32 - 1) < 2^64 */
    hv s = _mm512_add_epi64(t, u);
    s = _mm512_mask_add_epi64(s, _mm512_cmplt_epu64_mask(s, u), s, E);   /* carry: 2^64 = eps */
    return _mm512_mask_sub_epi64(s, _mm512_cmpge_epu64_mask(s, P), s, P);
}

/* x y mod p; yh = y >> 32 (hoisted for constant y) */
HG_INL hv hv_mul(hv x, hv y, hv yh)
{
    hv M = hv_eps();
    hv xh = _mm512_srli_epi64(x, 32);
    hv ll = _mm512_mul_epu32(x, y), lh = _mm512_mul_epu32(x, yh);
    hv hl = _mm512_mul_epu32(xh, y), hh = _mm512_mul_epu32(xh, yh);
    hv t = _mm512_add_epi64(lh, _mm512_srli_epi64(ll, 32));      /* < 2^64 */
    hv u = _mm512_add_epi64(hl, _mm512_and_si512(t, M));          /* < 2^64 */
    hv lo = _mm512_or_si512(_mm512_slli_epi64(u, 32), _mm512_and_si512(ll, M));
    hv hi = _mm512_add_epi64(hh, _mm512_add_epi64(_mm512_srli_epi64(t, 32), _mm512_srli_epi64(u, 32)));
    return hv_reduce(lo, hi);
}

/* sums and differences: the shared helpers of csrc/common/gl_avx512.h (the
 * same instructions); the product above keeps its own reduction (carry
 * then one compare with p, where gl_avx512.h compares t0 >= p - t1) and
 * takes y >> 32 hoisted for a constant multiplier. */
HG_INL hv hv_sub(hv a, hv b) { return secea_glv_sub(a, b); }
HG_INL hv hv_add(hv a, hv b) { return secea_glv_add(a, b); }

HG_INL __mmask8 hv_tail(size_t r) { return (__mmask8)((1u << r) - 1); }

/* dst[i] -= k src[i] */
HG_AVX static void gl_submul_avx(uint64_t *dst, const uint64_t *src, size_t n, uint64_t k)
{
    hv vk = _mm512_set1_epi64((long long)k), vkh = _mm512_set1_epi64((long long)(k >> 32));
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        hv x0 = _mm512_loadu_si512(src + i), x1 = _mm512_loadu_si512(src + i + 8);
        hv y0 = _mm512_loadu_si512(dst + i), y1 = _mm512_loadu_si512(dst + i + 8);
        _mm512_storeu_si512(dst + i, hv_sub(y0, hv_mul(x0, vk, vkh)));
        _mm512_storeu_si512(dst + i + 8, hv_sub(y1, hv_mul(x1, vk, vkh)));
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? 0xFF : hv_tail(n - i);
        hv x = _mm512_maskz_loadu_epi64(m, src + i), y = _mm512_maskz_loadu_epi64(m, dst + i);
        _mm512_mask_storeu_epi64(dst + i, m, hv_sub(y, hv_mul(x, vk, vkh)));
    }
}

/* dst[i] = s dst[i] - c0 src[i] - c1 src[i-1] for 1 <= i0 <= i < n, with
 * src[j] = 0 for j >= ns */
HG_AVX static void gl_step_avx(uint64_t *dst, size_t i0, size_t n, const uint64_t *src, size_t ns, uint64_t s,
                               uint64_t c0, uint64_t c1)
{
    hv vs = _mm512_set1_epi64((long long)s), vsh = _mm512_set1_epi64((long long)(s >> 32));
    hv v0 = _mm512_set1_epi64((long long)c0), v0h = _mm512_set1_epi64((long long)(c0 >> 32));
    hv v1 = _mm512_set1_epi64((long long)c1), v1h = _mm512_set1_epi64((long long)(c1 >> 32));
    size_t i = i0, full = n < ns ? n : ns;    /* src[i .. i+7] and src[i-1 .. i+6] readable */
    for (; i + 8 <= full; i += 8) {
        hv x = hv_mul(_mm512_loadu_si512(dst + i), vs, vsh);
        x = hv_sub(x, hv_mul(_mm512_loadu_si512(src + i), v0, v0h));
        x = hv_sub(x, hv_mul(_mm512_loadu_si512(src + i - 1), v1, v1h));
        _mm512_storeu_si512(dst + i, x);
    }
    for (; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? 0xFF : hv_tail(n - i);
        __mmask8 m0 = ns <= i ? 0 : (ns - i >= 8 ? 0xFF : hv_tail(ns - i));
        __mmask8 m1 = ns < i ? 0 : (ns - i + 1 >= 8 ? 0xFF : hv_tail(ns - i + 1));
        m0 &= m;
        m1 &= m;
        hv x = hv_mul(_mm512_maskz_loadu_epi64(m, dst + i), vs, vsh);
        x = hv_sub(x, hv_mul(_mm512_maskz_loadu_epi64(m0, src + i), v0, v0h));
        x = hv_sub(x, hv_mul(_mm512_maskz_loadu_epi64(m1, src + i - 1), v1, v1h));
        _mm512_mask_storeu_epi64(dst + i, m, x);
    }
}

/* dst[i] *= s */
HG_AVX static void gl_scale_avx(uint64_t *dst, size_t n, uint64_t s)
{
    hv vs = _mm512_set1_epi64((long long)s), vsh = _mm512_set1_epi64((long long)(s >> 32));
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? 0xFF : hv_tail(n - i);
        _mm512_mask_storeu_epi64(dst + i, m, hv_mul(_mm512_maskz_loadu_epi64(m, dst + i), vs, vsh));
    }
}

/* out = A B + C D */
HG_AVX static void gl_fma2_avx(uint64_t *out, const uint64_t *A, const uint64_t *B, const uint64_t *C,
                               const uint64_t *D, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? 0xFF : hv_tail(n - i);
        hv b = _mm512_maskz_loadu_epi64(m, B + i), d = _mm512_maskz_loadu_epi64(m, D + i);
        hv x = hv_mul(_mm512_maskz_loadu_epi64(m, A + i), b, _mm512_srli_epi64(b, 32));
        hv y = hv_mul(_mm512_maskz_loadu_epi64(m, C + i), d, _mm512_srli_epi64(d, 32));
        _mm512_mask_storeu_epi64(out + i, m, hv_add(x, y));
    }
}

/* The 2x2 transform-domain product of combine(), in place over S (4 rows of
 * n): S <- S P with P = [[R2, R3], [R0 - Q R2, R1 - Q R3]] (Q == NULL:
 * P = [[R0, R1], [R2, R3]]). */
HG_AVX static void gl_mat22_avx(uint64_t *S, size_t n, const uint64_t *R0, const uint64_t *R1, const uint64_t *R2,
                                const uint64_t *R3, const uint64_t *Q)
{
    for (size_t i = 0; i < n; i += 8) {
        hv p0, p1, p2, p3;
        if (Q) {
            hv q = _mm512_loadu_si512(Q + i), qh = _mm512_srli_epi64(q, 32);
            p0 = _mm512_loadu_si512(R2 + i);
            p1 = _mm512_loadu_si512(R3 + i);
            p2 = hv_sub(_mm512_loadu_si512(R0 + i), hv_mul(p0, q, qh));
            p3 = hv_sub(_mm512_loadu_si512(R1 + i), hv_mul(p1, q, qh));
        } else {
            p0 = _mm512_loadu_si512(R0 + i);
            p1 = _mm512_loadu_si512(R1 + i);
            p2 = _mm512_loadu_si512(R2 + i);
            p3 = _mm512_loadu_si512(R3 + i);
        }
        hv h0 = _mm512_srli_epi64(p0, 32), h1 = _mm512_srli_epi64(p1, 32);
        hv h2 = _mm512_srli_epi64(p2, 32), h3 = _mm512_srli_epi64(p3, 32);
        for (int r = 0; r < 2; r++) {
            uint64_t *s0 = S + 2 * r * n + i, *s1 = S + (2 * r + 1) * n + i;
            hv a = _mm512_loadu_si512(s0), b = _mm512_loadu_si512(s1);
            _mm512_storeu_si512(s0, hv_add(hv_mul(a, p0, h0), hv_mul(b, p2, h2)));
            _mm512_storeu_si512(s1, hv_add(hv_mul(a, p1, h1), hv_mul(b, p3, h3)));
        }
    }
}

/* apply()'s product in place over U (2 rows of n): U <- T U, T 4 rows of n */
HG_AVX static void gl_mat21_avx(uint64_t *U, size_t n, const uint64_t *T)
{
    for (size_t i = 0; i < n; i += 8) {
        hv x = _mm512_loadu_si512(U + i), y = _mm512_loadu_si512(U + n + i);
        hv xh = _mm512_srli_epi64(x, 32), yh = _mm512_srli_epi64(y, 32);
        hv c = hv_add(hv_mul(_mm512_loadu_si512(T + i), x, xh), hv_mul(_mm512_loadu_si512(T + n + i), y, yh));
        hv d = hv_add(hv_mul(_mm512_loadu_si512(T + 2 * n + i), x, xh),
                      hv_mul(_mm512_loadu_si512(T + 3 * n + i), y, yh));
        _mm512_storeu_si512(U + i, c);
        _mm512_storeu_si512(U + n + i, d);
    }
}

/* out = X - Q Y */
HG_AVX static void gl_subm_avx(uint64_t *out, const uint64_t *X, const uint64_t *Q, const uint64_t *Y, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? 0xFF : hv_tail(n - i);
        hv y = _mm512_maskz_loadu_epi64(m, Y + i);
        hv t = hv_mul(_mm512_maskz_loadu_epi64(m, Q + i), y, _mm512_srli_epi64(y, 32));
        _mm512_mask_storeu_epi64(out + i, m, hv_sub(_mm512_maskz_loadu_epi64(m, X + i), t));
    }
}
#endif

/* dst[i] -= k src[i] for i < n */
static void v_submul(const hctx *c, uint64_t *dst, const uint64_t *src, size_t n, uint64_t k)
{
    if (!k || !n) return;
#if SECEA_X86
    if (c->kind == HG_GL_AVX512) { gl_submul_avx(dst, src, n, k); return; }
#endif
    const uint64_t p = c->p;
    if (c->kind == HG_GL_PORTABLE)
        for (size_t i = 0; i < n; i++) dst[i] = secea_submod(dst[i], secea_gl_mul(k, src[i]), p);
    else
        for (size_t i = 0; i < n; i++) dst[i] = secea_submod(dst[i], secea_mulmod(&c->mc, k, src[i]), p);
}

/* dst[i] = s dst[i] - c0 src[i] - c1 src[i-1] for i0 <= i < n, src[j] = 0
 * outside [0, ns) (src[i0 - 1] is read if i0 > 0) */
static void v_step(const hctx *c, uint64_t *dst, size_t i0, size_t n, const uint64_t *src, size_t ns, uint64_t s,
                   uint64_t c0, uint64_t c1)
{
    if (i0 >= n) return;
    const uint64_t p = c->p;
    if (i0 == 0) {
        dst[0] = secea_submod(s_mul(c, s, dst[0]), ns ? s_mul(c, c0, src[0]) : 0, p);
        i0 = 1;
    }
#if SECEA_X86
    if (c->kind == HG_GL_AVX512) { gl_step_avx(dst, i0, n, src, ns, s, c0, c1); return; }
#endif
    for (size_t i = i0; i < n; i++) {
        uint64_t x = s_mul(c, s, dst[i]);
        if (i < ns) x = secea_submod(x, s_mul(c, c0, src[i]), p);
        if (i <= ns) x = secea_submod(x, s_mul(c, c1, src[i - 1]), p);
        dst[i] = x;
    }
}

static void v_scale(const hctx *c, uint64_t *dst, size_t n, uint64_t s)
{
#if SECEA_X86
    if (c->kind == HG_GL_AVX512) { gl_scale_avx(dst, n, s); return; }
#endif
    for (size_t i = 0; i < n; i++) dst[i] = s_mul(c, s, dst[i]);
}

/* out = x + y, out = x - y (elementwise; out may alias x or y) */
static void v_add(const hctx *c, uint64_t *out, const uint64_t *x, const uint64_t *y, size_t n)
{
    const uint64_t p = c->p;
    for (size_t i = 0; i < n; i++) {
        uint64_t t = p - y[i];
        out[i] = x[i] - t + (p & (0 - (uint64_t)(x[i] < t)));
    }
}

static void v_sub(const hctx *c, uint64_t *out, const uint64_t *x, const uint64_t *y, size_t n)
{
    const uint64_t p = c->p;
    for (size_t i = 0; i < n; i++) out[i] = x[i] - y[i] + (p & (0 - (uint64_t)(x[i] < y[i])));
}

/* out = A B + C D (transform domain); tmp: n words (generic primes) */
static void t_fma2(const hctx *c, const secea_ntt_plan *pl, uint64_t *out, const uint64_t *A, const uint64_t *B,
                   const uint64_t *C, const uint64_t *D, size_t n, uint64_t *tmp)
{
#if SECEA_X86
    if (c->kind == HG_GL_AVX512) { gl_fma2_avx(out, A, B, C, D, n); return; }
#endif
    if (c->kind == HG_GL_PORTABLE) {
        for (size_t i = 0; i < n; i++)
            out[i] = secea_addmod(secea_gl_mul(A[i], B[i]), secea_gl_mul(C[i], D[i]), GL);
        return;
    }
    memcpy(out, A, n * sizeof(uint64_t));
    secea_ntt_pointwise(pl, out, B, n);
    memcpy(tmp, C, n * sizeof(uint64_t));
    secea_ntt_pointwise(pl, tmp, D, n);
    v_add(c, out, out, tmp, n);
}

/* out = X - Q Y (transform domain) */
static void t_subm(const hctx *c, const secea_ntt_plan *pl, uint64_t *out, const uint64_t *X, const uint64_t *Q,
                   const uint64_t *Y, size_t n, uint64_t *tmp)
{
#if SECEA_X86
    if (c->kind == HG_GL_AVX512) { gl_subm_avx(out, X, Q, Y, n); return; }
#endif
    if (c->kind == HG_GL_PORTABLE) {
        for (size_t i = 0; i < n; i++) out[i] = secea_submod(X[i], secea_gl_mul(Q[i], Y[i]), GL);
        return;
    }
    memcpy(tmp, Q, n * sizeof(uint64_t));
    secea_ntt_pointwise(pl, tmp, Y, n);
    v_sub(c, out, X, tmp, n);
}

/* ------------------------------------------------------------------ */
/* polynomial helpers                                                   */

#define ALLOC(ptr, n)                                       \
    do {                                                    \
        (ptr) = ar_alloc(&c->ar, (n));                      \
        if (!(ptr)) return SECEA_ENOMEM;                    \
    } while (0)
#define TRY(x)                                              \
    do {                                                    \
        int rc_ = (x);                                      \
        if (rc_) return rc_;                                \
    } while (0)

/* out = x mod (x^N - 1): the length-N cyclic fold (zero padded) */
static void fold(const hctx *c, uint64_t *out, const uint64_t *x, size_t lx, size_t N)
{
    size_t l0 = lx < N ? lx : N;
    memcpy(out, x, l0 * sizeof(uint64_t));
    memset(out + l0, 0, (N - l0) * sizeof(uint64_t));
    for (size_t s = N; s < lx; s += N) {
        size_t l = lx - s < N ? lx - s : N;
        v_add(c, out, out, x + s, l);
    }
}

/* out (length lx + ly - 1) = x y; lx, ly >= 1 */
static int poly_mul(hctx *c, uint64_t *out, const uint64_t *x, size_t lx, const uint64_t *y, size_t ly)
{
    size_t lo = lx + ly - 1;
    unsigned logN = clog2(lo);
    size_t N = (size_t)1 << logN;
    if ((lx < ly ? lx : ly) <= 32 || N < HG_NTT_MIN) {
        secea_fp_poly_mul_classical(out, x, lx, y, ly, 0, 1, c->p);
        return 0;
    }
    const secea_ntt_plan *pl = hg_plan(c, logN);
    if (!pl) return SECEA_ENOMEM;
    hg_mark mk = ar_mark(&c->ar);
    uint64_t *X;
    ALLOC(X, 2 * N);
    fold(c, X, x, lx, N);
    fold(c, X + N, y, ly, N);
    secea_ntt_forward(pl, X, 2);
    secea_ntt_pointwise(pl, X, X + N, N);
    secea_ntt_inverse(pl, X, 1);
    memcpy(out, X, lo * sizeof(uint64_t));
    ar_release(&c->ar, mk);
    return 0;
}

/* out (N = 2^logN entries) = x y mod (x^N - 1) */
static int mul_cyclic(hctx *c, uint64_t *out, const uint64_t *x, size_t lx, const uint64_t *y, size_t ly,
                      unsigned logN)
{
    size_t N = (size_t)1 << logN;
    const secea_ntt_plan *pl = hg_plan(c, logN);
    if (!pl) return SECEA_ENOMEM;
    hg_mark mk = ar_mark(&c->ar);
    uint64_t *Y;
    ALLOC(Y, N);
    fold(c, out, x, lx, N);
    fold(c, Y, y, ly, N);
    secea_ntt_forward(pl, out, 1);
    secea_ntt_forward(pl, Y, 1);
    secea_ntt_pointwise(pl, out, Y, N);
    secea_ntt_inverse(pl, out, 1);
    ar_release(&c->ar, mk);
    return 0;
}

/* g (length n) = 1 / f mod x^n, f[0] != 0.  Newton: with f g = 1 + x^m e
 * (mod x^m2), g <- g - x^m (g e) mod x^m2.  Above the classical sizes each
 * doubling takes five transforms of length N >= m2: f g is wanted only in
 * [m, m2), which the cyclic product leaves intact (its wrap lands below m),
 * and the transform of g serves both products. */
static int inv_series(hctx *c, uint64_t *g, const uint64_t *f, size_t lf, size_t n)
{
    hg_mark mk = ar_mark(&c->ar);
    uint64_t *t, *h;
    ALLOC(t, 2 * n + 1);
    ALLOC(h, 2 * n + 1);
    g[0] = s_inv(c, f[0]);
    size_t m = 1;
    while (m < n) {
        size_t m2 = 2 * m < n ? 2 * m : n;
        size_t lff = lf < m2 ? lf : m2;
        unsigned lg = clog2(m2);
        size_t N = (size_t)1 << lg;
        if (m > 32 && N >= HG_NTT_MIN) {
            const secea_ntt_plan *pl = hg_plan(c, lg);
            if (!pl) return SECEA_ENOMEM;
            hg_mark mk2 = ar_mark(&c->ar);
            uint64_t *G, *F;
            ALLOC(G, N);
            ALLOC(F, N);
            memcpy(G, g, m * sizeof(uint64_t));
            memset(G + m, 0, (N - m) * sizeof(uint64_t));
            fold(c, F, f, lff, N);
            secea_ntt_forward(pl, G, 1);
            secea_ntt_forward(pl, F, 1);
            secea_ntt_pointwise(pl, F, G, N);
            secea_ntt_inverse(pl, F, 1);                 /* F[m .. m2) = e */
            memmove(F, F + m, (m2 - m) * sizeof(uint64_t));
            memset(F + (m2 - m), 0, (N - (m2 - m)) * sizeof(uint64_t));
            secea_ntt_forward(pl, F, 1);
            secea_ntt_pointwise(pl, F, G, N);
            secea_ntt_inverse(pl, F, 1);                 /* g e, no wrap: degree < m2 */
            for (size_t i = 0; i < m2 - m; i++) g[m + i] = F[i] ? c->p - F[i] : 0;
            ar_release(&c->ar, mk2);
            m = m2;
            continue;
        }
        TRY(poly_mul(c, t, f, lff, g, m));           /* f g = 1 + x^m e (mod x^m2) */
        size_t le = lff + m - 1 > m2 ? m2 - m : (lff + m - 1 > m ? lff + m - 1 - m : 0);
        if (le) {
            TRY(poly_mul(c, h, g, m, t + m, le));    /* g e */
            for (size_t i = 0; i < m2 - m; i++) g[m + i] = i < m + le - 1 ? (h[i] ? c->p - h[i] : 0) : 0;
        } else {
            for (size_t i = m; i < m2; i++) g[i] = 0;
        }
        m = m2;
    }
    ar_release(&c->ar, mk);
    return 0;
}

/* x = q y + r, deg r < deg y; q (lx - ly + 1 entries) and r (ly - 1 entries,
 * *lr its trimmed length) caller-allocated.  lx >= ly >= 1, y[ly-1] != 0. */
static int divrem(hctx *c, uint64_t *q, uint64_t *r, size_t *lr, const uint64_t *x, size_t lx,
                  const uint64_t *y, size_t ly)
{
    size_t lq = lx - ly + 1;
    hg_mark mk = ar_mark(&c->ar);
    if ((lq < ly ? lq : ly) <= HG_DIV_CLASSICAL) {
        uint64_t *w;
        ALLOC(w, lx);
        memcpy(w, x, lx * sizeof(uint64_t));
        uint64_t inv = s_inv(c, y[ly - 1]);
        for (size_t i = lq; i-- > 0;) {
            uint64_t co = s_mul(c, w[i + ly - 1], inv);
            q[i] = co;
            w[i + ly - 1] = 0;
            v_submul(c, w + i, y, ly - 1, co);
        }
        if (ly > 1) memcpy(r, w, (ly - 1) * sizeof(uint64_t));
        *lr = trimlen(r, ly - 1);
        ar_release(&c->ar, mk);
        return 0;
    }
    /* rev(q) = rev(x) / rev(y) mod x^lq */
    uint64_t *ry, *rx, *g, *t;
    size_t lyr = ly < lq ? ly : lq;
    ALLOC(ry, lyr);
    ALLOC(rx, lq);
    ALLOC(g, lq);
    ALLOC(t, (lx + ly > 2 * lq ? lx + ly : 2 * lq));
    for (size_t i = 0; i < lyr; i++) ry[i] = y[ly - 1 - i];
    for (size_t i = 0; i < lq; i++) rx[i] = x[lx - 1 - i];
    TRY(inv_series(c, g, ry, lyr, lq));
    TRY(poly_mul(c, t, rx, lq, g, lq));
    for (size_t i = 0; i < lq; i++) q[i] = t[lq - 1 - i];
    if (ly > 1) {
        /* r = (x - q y) mod (x^N - 1) for any N >= ly - 1 > deg r */
        unsigned lg = clog2(ly - 1);
        size_t N = (size_t)1 << lg;
        if (N < HG_NTT_MIN) {
            size_t lql = lq < ly - 1 ? lq : ly - 1;    /* (q y) mod x^(ly-1) needs q mod x^(ly-1) */
            TRY(poly_mul(c, t, q, lql, y, ly - 1));
            v_sub(c, r, x, t, ly - 1);
        } else {
            uint64_t *X;
            ALLOC(X, N);
            TRY(mul_cyclic(c, t, q, lq, y, ly, lg));
            fold(c, X, x, lx, N);
            v_sub(c, r, X, t, ly - 1);
        }
    }
    *lr = ly > 1 ? trimlen(r, ly - 1) : 0;
    ar_release(&c->ar, mk);
    return 0;
}

/* ------------------------------------------------------------------ */
/* matrices                                                             */

typedef struct {
    uint64_t *e[4];        /* (0,0) (0,1) (1,0) (1,1) */
    size_t l[4];
} hmat;

static int mat_alloc(hctx *c, hmat *M, size_t cap)
{
    for (int i = 0; i < 4; i++) {
        ALLOC(M->e[i], cap);
        M->l[i] = 0;
    }
    return 0;
}

static void mat_identity(const hctx *c, hmat *M)
{
    M->e[0][0] = M->e[3][0] = 1 % c->p;
    M->l[0] = M->l[3] = 1;
    M->l[1] = M->l[2] = 0;
}

static int mat_is_identity(const hmat *M)
{
    return M->l[0] == 1 && M->e[0][0] == 1 && M->l[1] == 0 && M->l[2] == 0 && M->l[3] == 1 && M->e[3][0] == 1;
}

static void mat_copy(hmat *D, const hmat *S)
{
    for (int i = 0; i < 4; i++) {
        memcpy(D->e[i], S->e[i], S->l[i] * sizeof(uint64_t));
        D->l[i] = S->l[i];
    }
}

/* Lengths of R' = [[0, 1], [1, -q]] R (upper bounds, exact for Euclid matrices) */
static void step_lens(const hmat *R, size_t lq, size_t out[4])
{
    out[0] = R->l[2];
    out[1] = R->l[3];
    for (int j = 0; j < 2; j++) {
        size_t lp = R->l[2 + j] ? lq + R->l[2 + j] - 1 : 0;
        out[2 + j] = lp > R->l[j] ? lp : R->l[j];
    }
}

/* D = [[0, 1], [1, -q]] R in coefficient form; D's entries must hold step_lens */
static int step_coeff(hctx *c, hmat *D, const hmat *R, const uint64_t *q, size_t lq)
{
    size_t L[4];
    step_lens(R, lq, L);
    memcpy(D->e[0], R->e[2], R->l[2] * sizeof(uint64_t));
    memcpy(D->e[1], R->e[3], R->l[3] * sizeof(uint64_t));
    D->l[0] = R->l[2];
    D->l[1] = R->l[3];
    for (int j = 0; j < 2; j++) {
        uint64_t *d = D->e[2 + j];
        const uint64_t *s = R->e[2 + j];
        size_t ls = R->l[2 + j];
        memcpy(d, R->e[j], R->l[j] * sizeof(uint64_t));
        memset(d + R->l[j], 0, (L[2 + j] - R->l[j]) * sizeof(uint64_t));
        if (ls) {
            if ((lq < ls ? lq : ls) <= HG_DIV_CLASSICAL) {
                for (size_t t = 0; t < lq; t++) v_submul(c, d + t, s, ls, q[t]);
            } else {
                hg_mark mk = ar_mark(&c->ar);
                uint64_t *t;
                ALLOC(t, lq + ls);
                TRY(poly_mul(c, t, q, lq, s, ls));
                v_sub(c, d, d, t, lq + ls - 1);
                ar_release(&c->ar, mk);
            }
        }
        D->l[2 + j] = trimlen(d, L[2 + j]);
    }
    return 0;
}

/* (X, Y) = R (a, b)^T where len X = lc exactly and len Y < lc (R an Euclid
 * matrix for (a, b), lc = len a - deg R11).  Outputs in the arena; *TR
 * receives the transforms of R at length 2^*logN (NULL on the classical
 * route). */
static int apply(hctx *c, const hmat *R, const uint64_t *a, size_t la, const uint64_t *b, size_t lb, size_t lc,
                 uint64_t **X, size_t *lX, uint64_t **Y, size_t *lY, uint64_t **TR, unsigned *logN)
{
    unsigned lg = clog2(lc);
    size_t N = (size_t)1 << lg;
    *TR = NULL;
    *logN = lg;
    if (N < HG_NTT_MIN) {
        uint64_t *out, *t;
        size_t lmax = la + N;
        ALLOC(out, 2 * lmax);
        ALLOC(t, lmax);
        const uint64_t *src[2] = {a, b};
        size_t ls[2] = {la, lb};
        for (int i = 0; i < 2; i++) {
            uint64_t *o = out + i * lmax;
            memset(o, 0, lmax * sizeof(uint64_t));
            for (int j = 0; j < 2; j++) {
                if (!R->l[2 * i + j] || !ls[j]) continue;
                size_t lt = R->l[2 * i + j] + ls[j] - 1;
                secea_fp_poly_mul_classical(t, R->e[2 * i + j], R->l[2 * i + j], src[j], ls[j], 0, 1, c->p);
                v_add(c, o, o, t, lt);
            }
        }
        *X = out;
        *Y = out + lmax;
        *lX = trimlen(out, lmax);
        *lY = trimlen(out + lmax, lmax);
        return *lX == lc && *lY < lc ? 0 : -3;
    }
    const secea_ntt_plan *pl = hg_plan(c, lg);
    if (!pl) return SECEA_ENOMEM;
    uint64_t *T, *U, *O, *tmp;
    ALLOC(T, 4 * N);
    for (int i = 0; i < 4; i++) {
        if (R->l[i] > N) return SECEA_EINTERNAL;
        memcpy(T + i * N, R->e[i], R->l[i] * sizeof(uint64_t));
        memset(T + i * N + R->l[i], 0, (N - R->l[i]) * sizeof(uint64_t));
    }
    secea_ntt_forward(pl, T, 4);
    ALLOC(O, 2 * N);
    hg_mark mk = ar_mark(&c->ar);
    ALLOC(U, 2 * N);
    fold(c, U, a, la, N);
    fold(c, U + N, b, lb, N);
    secea_ntt_forward(pl, U, 2);
#if SECEA_X86
    if (c->kind == HG_GL_AVX512 && N % 8 == 0) {
        gl_mat21_avx(U, N, T);
        memcpy(O, U, 2 * N * sizeof(uint64_t));
    } else
#endif
    {
        ALLOC(tmp, c->kind == HG_GENERIC ? N : 1);
        t_fma2(c, pl, O, T, U, T + N, U + N, N, tmp);
        t_fma2(c, pl, O + N, T + 2 * N, U, T + 3 * N, U + N, N, tmp);
    }
    secea_ntt_inverse(pl, O, 2);
    ar_release(&c->ar, mk);
    *X = O;
    *Y = O + N;
    *lX = trimlen(O, lc);
    *lY = trimlen(O + N, lc);
    *TR = T;
    return *lX == lc && *lY < lc ? 0 : -3;
}

/* M = S R', R' = [[0, 1], [1, -q]] R; TR: transforms of R at length 2^logN1
 * or NULL.  M's entries hold cap words. */
static int combine(hctx *c, hmat *M, size_t cap, const hmat *S, const hmat *R, const uint64_t *q, size_t lq,
                   const uint64_t *TR, unsigned logN1)
{
    size_t L[4];
    step_lens(R, lq, L);
    for (int i = 0; i < 4; i++)
        if (L[i] > cap) return SECEA_EINTERNAL;
    if (mat_is_identity(S)) return step_coeff(c, M, R, q, lq);
    size_t ms = 0, mr = 0;
    for (int i = 0; i < 4; i++) {
        if (S->l[i] > ms) ms = S->l[i];
        if (L[i] > mr) mr = L[i];
    }
    size_t n_out = ms + mr - 1;
    unsigned lg = clog2(n_out);
    size_t N = (size_t)1 << lg;
    hg_mark mk = ar_mark(&c->ar);
    if (N < HG_NTT_MIN) {
        hmat Rp;
        TRY(mat_alloc(c, &Rp, mr));
        TRY(step_coeff(c, &Rp, R, q, lq));
        uint64_t *t;
        ALLOC(t, n_out);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                uint64_t *o = M->e[2 * i + j];
                size_t lo = 0;
                for (int k = 0; k < 2; k++) {
                    size_t l1 = S->l[2 * i + k], l2 = Rp.l[2 * k + j];
                    if (!l1 || !l2) continue;
                    size_t lt = l1 + l2 - 1;
                    if (lt > cap) return SECEA_EINTERNAL;
                    secea_fp_poly_mul_classical(t, S->e[2 * i + k], l1, Rp.e[2 * k + j], l2, 0, 1, c->p);
                    if (lt > lo) {
                        memset(o + lo, 0, (lt - lo) * sizeof(uint64_t));
                        lo = lt;
                    }
                    v_add(c, o, o, t, lt);
                }
                M->l[2 * i + j] = trimlen(o, lo);
            }
        ar_release(&c->ar, mk);
        return 0;
    }
    const secea_ntt_plan *pl = hg_plan(c, lg);
    if (!pl) return SECEA_ENOMEM;
    uint64_t *tmp;
    ALLOC(tmp, c->kind == HG_GENERIC ? N : 1);
    const uint64_t *TP[4];
    int fused = 0;
#if SECEA_X86
    fused = c->kind == HG_GL_AVX512 && N % 8 == 0;
#endif
    const uint64_t *TQf = NULL;
    if (TR && lg <= logN1) {
        size_t N1 = (size_t)1 << logN1;
        uint64_t *TQ, *X;
        ALLOC(TQ, N);
        memcpy(TQ, q, lq * sizeof(uint64_t));
        memset(TQ + lq, 0, (N - lq) * sizeof(uint64_t));
        secea_ntt_forward(pl, TQ, 1);
        if (fused) {       /* R' formed inside the product kernel */
            TP[0] = TR;
            TP[1] = TR + N1;
            TP[2] = TR + 2 * N1;
            TP[3] = TR + 3 * N1;
            TQf = TQ;
            goto transforms_ready;
        }
        ALLOC(X, 2 * N);
        t_subm(c, pl, X, TR, TQ, TR + 2 * N1, N, tmp);
        t_subm(c, pl, X + N, TR + N1, TQ, TR + 3 * N1, N, tmp);
        TP[0] = TR + 2 * N1;
        TP[1] = TR + 3 * N1;
        TP[2] = X;
        TP[3] = X + N;
    } else {
        hmat Rp;
        TRY(mat_alloc(c, &Rp, mr));
        TRY(step_coeff(c, &Rp, R, q, lq));
        uint64_t *X;
        ALLOC(X, 4 * N);
        for (int i = 0; i < 4; i++) {
            memcpy(X + i * N, Rp.e[i], Rp.l[i] * sizeof(uint64_t));
            memset(X + i * N + Rp.l[i], 0, (N - Rp.l[i]) * sizeof(uint64_t));
            TP[i] = X + i * N;
        }
        secea_ntt_forward(pl, X, 4);
    }
transforms_ready:;
    uint64_t *TS, *O;
    ALLOC(TS, 4 * N);
    for (int i = 0; i < 4; i++) {
        memcpy(TS + i * N, S->e[i], S->l[i] * sizeof(uint64_t));
        memset(TS + i * N + S->l[i], 0, (N - S->l[i]) * sizeof(uint64_t));
    }
    secea_ntt_forward(pl, TS, 4);
#if SECEA_X86
    if (fused) {
        gl_mat22_avx(TS, N, TP[0], TP[1], TP[2], TP[3], TQf);
        O = TS;
    } else
#endif
    {
        ALLOC(O, 4 * N);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                t_fma2(c, pl, O + (2 * i + j) * N, TS + (2 * i) * N, TP[j], TS + (2 * i + 1) * N, TP[2 + j], N,
                       tmp);
    }
    secea_ntt_inverse(pl, O, 4);
    for (int i = 0; i < 4; i++) {
        size_t l = trimlen(O + i * N, n_out);
        if (l > cap) return SECEA_EINTERNAL;
        memcpy(M->e[i], O + i * N, l * sizeof(uint64_t));
        M->l[i] = l;
    }
    ar_release(&c->ar, mk);
    return 0;
}

/* ------------------------------------------------------------------ */
/* classical base case                                                  */

/* Euclid on (a, b) (la > lb, a[la-1] != 0, b trimmed) until the remainder
 * has degree < stop.  M (entries of capacity cap) receives the matrix; if
 * r0 != NULL the two last remainders are left in the arena.
 *
 * Fraction free: the stored remainders and matrix rows are the true ones
 * times scales (alpha for A and row 0, beta for B and row 1).  A step with
 * quotient degree 1 is a pseudo-division: with b = lc(B), s = b^2 and
 * Q = s (A div B), i.e. Q1 = b A_top, Q0 = b A_top-1 - A_top B_top-1,
 *     R = s A - Q B,   new row 1 = s row0 - Q row1,   scale s alpha,
 * three products per coefficient but no inversion; longer quotients divide
 * by b (one inversion; R = A - q B keeps the scale alpha).  The two scales
 * are divided out at the end (one inversion per call).  (lq = 1 cannot
 * occur: deg a > deg b on entry and every remainder is shorter.)
 *
 * When only M is wanted (r0 == NULL), the coefficients of a pair (A, B)
 * below 2 stop - deg A do not influence the remaining quotients (the top
 * parts from there have the same half-GCD), so each new remainder is
 * computed from index 2 stop - deg B on only: about 2/3 of the work on the
 * remainders.  Its degree is then known only if it is >= that index, which
 * is <= stop, enough for the loop test. */
static int base_euclid(hctx *c, hmat *M, size_t cap, const uint64_t *a, size_t la, const uint64_t *b, size_t lb,
                       size_t stop, uint64_t **r0, size_t *lr0, uint64_t **r1, size_t *lr1)
{
    uint64_t *A, *B, *q;
    ALLOC(A, la);
    ALLOC(B, la);
    ALLOC(q, la);
    memcpy(A, a, la * sizeof(uint64_t));
    memcpy(B, b, lb * sizeof(uint64_t));
    size_t lA = la, lB = lb;
    uint64_t **E = M->e;
    size_t *L = M->l;
    uint64_t alpha = 1, beta = 1;
    mat_identity(c, M);
    while (lB > stop) {
        size_t lq = lA - lB + 1, lR;
        /* only coefficients >= 2 stop - deg B of the next pair matter when
         * just the matrix is wanted (hgcd of the top parts: see the header);
         * the lower ones are left stale */
        size_t lo = !r0 && 2 * stop > lB - 1 ? 2 * stop - (lB - 1) : 0;
        uint64_t gamma;
        uint64_t bt = B[lB - 1];
        if (lq == 2) {
            uint64_t at = A[lA - 1];
            uint64_t Q1 = s_mul(c, bt, at);
            uint64_t Q0 = s_mul(c, bt, A[lA - 2]);
            if (lB >= 2) Q0 = secea_submod(Q0, s_mul(c, at, B[lB - 2]), c->p);
            uint64_t s = s_mul(c, bt, bt);
            v_step(c, A, lo, lB - 1, B, lB - 1, s, Q0, Q1);
            lR = lB - 1;
            while (lR > lo && !A[lR - 1]) lR--;
            for (int col = 0; col < 2; col++) {
                size_t ls = L[2 + col], ln = ls + lq - 1;
                if (ln < L[col]) ln = L[col];
                if (ln > cap) return SECEA_EINTERNAL;
                uint64_t *d = E[col];
                if (ln > L[col]) memset(d + L[col], 0, (ln - L[col]) * sizeof(uint64_t));
                v_step(c, d, 0, ln, E[2 + col], ls, s, Q0, Q1);
                L[col] = trimlen(d, ln);
            }
            gamma = s_mul(c, s, alpha);
        } else {
            uint64_t inv = s_inv(c, bt);
            for (size_t i = lq; i-- > 0;) {
                uint64_t co = s_mul(c, A[i + lB - 1], inv);
                q[i] = co;
                A[i + lB - 1] = 0;
                v_submul(c, A + i, B, lB - 1, co);
            }
            lR = lB - 1;
            while (lR > lo && !A[lR - 1]) lR--;
            for (int col = 0; col < 2; col++) {
                uint64_t *d = E[col];
                const uint64_t *s = E[2 + col];
                size_t ls = L[2 + col];
                if (ls) {
                    size_t ln = ls + lq - 1;
                    if (ln > cap) return SECEA_EINTERNAL;
                    if (ln > L[col]) memset(d + L[col], 0, (ln - L[col]) * sizeof(uint64_t));
                    for (size_t t = 0; t < lq; t++) v_submul(c, d + t, s, ls, q[t]);
                    L[col] = trimlen(d, ln > L[col] ? ln : L[col]);
                }
            }
            gamma = alpha;
        }
        for (int col = 0; col < 2; col++) {
            uint64_t *te = E[col];
            E[col] = E[2 + col];
            E[2 + col] = te;
            size_t tl = L[col];
            L[col] = L[2 + col];
            L[2 + col] = tl;
        }
        uint64_t *t = A;
        A = B;
        B = t;
        lA = lB;
        lB = lR;
        alpha = beta;
        beta = gamma;
    }
    if (alpha != 1 || beta != 1) {
        uint64_t inv = s_inv(c, s_mul(c, alpha, beta));
        uint64_t ia = s_mul(c, inv, beta), ib = s_mul(c, inv, alpha);
        v_scale(c, E[0], L[0], ia);
        v_scale(c, E[1], L[1], ia);
        v_scale(c, E[2], L[2], ib);
        v_scale(c, E[3], L[3], ib);
        if (r0) {
            v_scale(c, A, lA, ia);
            v_scale(c, B, lB, ib);
        }
    }
    if (r0) {
        *r0 = A;
        *lr0 = lA;
        *r1 = B;
        *lr1 = lB;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* recursion                                                            */

/* M = hgcd(a, b): la > lb, a[la-1] != 0, b trimmed.  M's entries are
 * allocated here (capacity (la-1)/2 + 1), below the scratch released on
 * return, so they outlive the call. */
static int hgcd_rec(hctx *c, hmat *M, const uint64_t *a, size_t la, const uint64_t *b, size_t lb)
{
    size_t n = la - 1, m = (n + 1) / 2, cap = n / 2 + 1;
    TRY(mat_alloc(c, M, cap));
    if (lb == 0 || lb - 1 < m) {
        mat_identity(c, M);
        return 0;
    }
    hg_mark mk = ar_mark(&c->ar);
    if (n <= c->base) {
        TRY(base_euclid(c, M, cap, a, la, b, lb, m, NULL, NULL, NULL, NULL));
        ar_release(&c->ar, mk);
        return 0;
    }
    hmat R;
    TRY(hgcd_rec(c, &R, a + m, la - m, b + m, trimlen(b + m, lb - m)));
    const uint64_t *cc, *dd;
    size_t lcc, ldd;
    uint64_t *TR = NULL;
    unsigned logN1 = 0;
    if (mat_is_identity(&R)) {
        cc = a;
        lcc = la;
        dd = b;
        ldd = lb;
    } else {
        uint64_t *X, *Y;
        TRY(apply(c, &R, a, la, b, lb, la - R.l[3] + 1, &X, &lcc, &Y, &ldd, &TR, &logN1));
        cc = X;
        dd = Y;
    }
    if (ldd == 0 || ldd - 1 < m) {
        mat_copy(M, &R);
        ar_release(&c->ar, mk);
        return 0;
    }
    size_t lq = lcc - ldd + 1, le;
    uint64_t *q, *e;
    ALLOC(q, lq);
    ALLOC(e, ldd);
    TRY(divrem(c, q, e, &le, cc, lcc, dd, ldd));
    if (le == 0 || le - 1 < m) {
        size_t L[4];
        step_lens(&R, lq, L);
        for (int i = 0; i < 4; i++)
            if (L[i] > cap) return SECEA_EINTERNAL;
        TRY(step_coeff(c, M, &R, q, lq));
        ar_release(&c->ar, mk);
        return 0;
    }
    size_t k = 2 * m - (ldd - 1);
    hmat S;
    TRY(hgcd_rec(c, &S, dd + k, ldd - k, e + k, trimlen(e + k, le - k)));
    TRY(combine(c, M, cap, &S, &R, q, lq, TR, logN1));
    ar_release(&c->ar, mk);
    return 0;
}

/* ------------------------------------------------------------------ */
/* entry point                                                          */

int secea_fp_poly_hgcd(uint64_t *m00, uint64_t *m01, uint64_t *m10, uint64_t *m11, uint64_t *r0, uint64_t *r1,
                       size_t *lens, const uint64_t *a, size_t la, const uint64_t *b, size_t lb, uint64_t p,
                       size_t base_deg)
{
    if (la == 0 || lb >= la || a[la - 1] == 0) return SECEA_EINVAL;
    unsigned need = clog2(2 * la);
    if (need >= SECEA_HG_MAXLOG) return SECEA_EINVAL;
    if (p != GL) {
        if (p >= (1ULL << 63) || !(p & 1) || p < 3) return SECEA_EINVAL;
        if ((unsigned)__builtin_ctzll(p - 1) < need) return SECEA_EINVAL;
    }
    hctx *c = calloc(1, sizeof *c);
    if (!c) return SECEA_ENOMEM;
    c->p = p;
    secea_modctx_init(&c->mc, p);
    if (p == GL) {
        c->kind = HG_GL_PORTABLE;
#if SECEA_X86
        if (secea__kernels_now()->ntt_avx512) c->kind = HG_GL_AVX512;
#endif
    }
    c->base = base_deg ? base_deg : HG_BASE_DEFAULT;
    if (ar_reserve(&c->ar, 24 * la + 65536)) {      /* measured peak: 22-24 la words */
        free(c);
        return SECEA_ENOMEM;
    }
    int rc = 0;
    lb = trimlen(b, lb);
    hmat M;
    rc = hgcd_rec(c, &M, a, la, b, lb);
    if (!rc) {
        uint64_t *out[4] = {m00, m01, m10, m11};
        for (int i = 0; i < 4; i++) {
            memcpy(out[i], M.e[i], M.l[i] * sizeof(uint64_t));
            lens[i] = M.l[i];
        }
        if (r0 && r1) {
            if (mat_is_identity(&M)) {
                memcpy(r0, a, la * sizeof(uint64_t));
                memcpy(r1, b, lb * sizeof(uint64_t));
                lens[4] = la;
                lens[5] = lb;
            } else {
                uint64_t *X, *Y, *TR;
                size_t lX, lY;
                unsigned lg;
                rc = apply(c, &M, a, la, b, lb, la - M.l[3] + 1, &X, &lX, &Y, &lY, &TR, &lg);
                if (!rc) {
                    memcpy(r0, X, lX * sizeof(uint64_t));
                    memcpy(r1, Y, lY * sizeof(uint64_t));
                    lens[4] = lX;
                    lens[5] = lY;
                }
            }
        }
    }
    ar_free(&c->ar);
    for (unsigned i = 0; i < SECEA_HG_MAXLOG; i++)
        if (c->own[i]) secea_ntt_plan_free(c->own[i]);
    free(c);
    return rc;
}
