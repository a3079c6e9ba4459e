/* Exact matrix product over F_p, C = A * B mod p (any prime p < 2^64).
 *
 * Front end: picks a variant (tuning assumptions below), packs B once, splits
 * the rows of A into contiguous ranges, one per thread, and runs them as the
 * units of secea__pool_run (csrc/common/threads.c; the Python caller has
 * released the GIL).
 *
 * Variants (chosen at run time, docs/ARCHITECTURE.md "Run-time CPU dispatch"),
 * measured on AMD Zen 4 (EPYC Genoa) (figures in docs/PERFORMANCE.md,
 * "Matrix product"):
 *   ifma1     p <= 2^52: AVX-512 IFMA, one 52-bit limb, 2 IFMA per multiply-add
 *   ifma2     p <  2^64: AVX-512 IFMA, limbs 52 + 12 bits, 7 IFMA per multiply-add
 *   neon      64-bit ARM, p < 2^50: NEON UMLAL on 25-bit limbs (matmul_neon.c;
 *             not measured on ARM hardware); other p take the scalar kernel
 *   portable  scalar 64x64->128 products, 192-bit sums or chunked 128-bit
 *             sums (below); also the AVX2 route's kernel: compiled for
 *             AVX2+BMI2 (mulx) it was no faster, its products bound by the
 *             multiplier, and GCC kept more of its sums on the stack
 * IFMA vectorises 16 rows of A: products with fewer than IFMA_MIN_ROWS rows,
 * or shorter sums than IFMA2_MIN_K for p > 2^52, take the variant the CPU
 * would run without it (secea_fp_mat_mul; a PackedRight keeps IFMA).
 * Products are accumulated exactly and reduced once per output element, so
 * the result never depends on the route.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "matmul_internal.h"

/* ---- scalar kernel: B in column pairs, 192-bit or chunked 128-bit sums ----
 * B is packed as column pairs, Bp[g][t][c] = B[t][2g + c] (a zero column pads
 * an odd n), so one pointer walks both columns of a pair.  Register blocks
 * are sized for the 15 usable general registers of x86-64: the former 2x2
 * block of 192-bit sums needed 12 registers for the sums alone, and GCC kept
 * some of them in stack slots whose loop-carried add/adc through memory
 * bounded the loop (docs/PERFORMANCE.md, "Matrix product").
 *   wide    (p - 1)^2 * CH128 >= 2^128: 1 row x 2 columns of 192-bit sums
 *           (6 registers);
 *   narrow  otherwise: 2 rows x 2 columns of 128-bit sums (8 registers),
 *           folded into 192-bit totals every CH128 steps, at most
 *           (2^128 - 1) / (p - 1)^2 of them; the job interleaves each pair of
 *           rows of A into a scratch so both rows sit behind one pointer. */
#define CH128 1024
#define IFMA_MIN_ROWS 8   /* fewer rows of A take choose_narrow's variant */
#define IFMA2_MIN_K 16    /* as do shorter sums for p > 2^52 */

static void *pack_pairs(const uint64_t *B, size_t k, size_t n, uint64_t p)
{
    (void)p;
    size_t groups = (n + 1) / 2;
    uint64_t *Bp = malloc((groups && k ? 2 * groups * k : 1) * sizeof(uint64_t));
    if (!Bp) return NULL;
    for (size_t t = 0; t < k; t++) {
        const uint64_t *row = B + t * n;
        uint64_t *d = Bp + 2 * t;
        for (size_t j = 0; j + 1 < n; j += 2, d += 2 * k) { d[0] = row[j]; d[1] = row[j + 1]; }
        if (n & 1) { d[0] = row[n - 1]; d[1] = 0; }
    }
    return Bp;
}

/* steps of 128-bit products whose sum cannot overflow 128 bits, capped */
static size_t chunk128(uint64_t p)
{
    secea_u128 sq = (secea_u128)(p - 1) * (p - 1);
    if (sq == 0) return (size_t)-1;
    secea_u128 l = ~(secea_u128)0 / sq;
    return l > (secea_u128)((size_t)-1 >> 1) ? (size_t)-1 >> 1 : (size_t)l;
}

#define ACC(acc, top, x, y) do { secea_u128 t_ = (secea_u128)(x) * (y); acc += t_; top += acc < t_; } while (0)
#define FIN(acc, top) secea__mm_fin192(&c, top, (uint64_t)((acc) >> 64), (uint64_t)(acc))
/* a 192-bit total (top, s) += a 128-bit chunk sum x */
#define FOLD(s, top, x) do { secea_u128 x_ = (x); s += x_; top += s < x_; } while (0)

/* kept out of line: inlined into the callers, with the reductions around
 * them, GCC kept the sums in stack slots */
__attribute__((noinline)) SECEA_ALIGN_LOOPS static void dot12(const uint64_t *a, const uint64_t *b, size_t k, uint64_t out[6])
{
    secea_u128 s0 = 0, s1 = 0;
    uint64_t t0 = 0, t1 = 0;
    for (size_t t = 0; t < k; t++) {
        uint64_t x = a[t];
        ACC(s0, t0, x, b[2 * t]); ACC(s1, t1, x, b[2 * t + 1]);
    }
    out[0] = (uint64_t)s0; out[1] = (uint64_t)(s0 >> 64); out[2] = t0;
    out[3] = (uint64_t)s1; out[4] = (uint64_t)(s1 >> 64); out[5] = t1;
}

__attribute__((noinline)) SECEA_ALIGN_LOOPS static void dot22(const uint64_t *ap, const uint64_t *b, size_t t0,
                                                              size_t t1, secea_u128 out[4])
{
    secea_u128 s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    for (size_t t = t0; t < t1; t++) {
        uint64_t x0 = ap[2 * t], x1 = ap[2 * t + 1];
        uint64_t y0 = b[2 * t], y1 = b[2 * t + 1];
        s00 += (secea_u128)x0 * y0; s01 += (secea_u128)x0 * y1;
        s10 += (secea_u128)x1 * y0; s11 += (secea_u128)x1 * y1;
    }
    out[0] = s00; out[1] = s01; out[2] = s10; out[3] = s11;
}

static void wide(secea__mm_job *jb, const secea_modctx *cc)
{
    secea_modctx c = *cc;
    const uint64_t *Bp = jb->Bpacked;
    size_t k = jb->k, n = jb->n;
    for (size_t i = jb->row0; i < jb->row1; i++) {
        const uint64_t *a = jb->A + i * k;
        uint64_t *out = jb->C + i * n;
        for (size_t j = 0; j < n; j += 2) {
            uint64_t s[6];
            dot12(a, Bp + j * k, k, s);
            out[j] = secea__mm_fin192(&c, s[2], s[1], s[0]);
            if (j + 1 < n) out[j + 1] = secea__mm_fin192(&c, s[5], s[4], s[3]);
        }
    }
}

static void narrow(secea__mm_job *jb, const secea_modctx *cc, uint64_t *ap, size_t ch)
{
    secea_modctx c = *cc;
    const uint64_t *Bp = jb->Bpacked;
    size_t k = jb->k, n = jb->n;
    for (size_t i = jb->row0; i < jb->row1; i += 2) {
        int two = i + 1 < jb->row1;
        const uint64_t *a0 = jb->A + i * k, *a1 = a0 + k;
        for (size_t t = 0; t < k; t++) { ap[2 * t] = a0[t]; ap[2 * t + 1] = two ? a1[t] : 0; }
        uint64_t *o0 = jb->C + i * n, *o1 = o0 + n;
        for (size_t j = 0; j < n; j += 2) {
            const uint64_t *b = Bp + j * k;
            secea_u128 S00 = 0, S01 = 0, S10 = 0, S11 = 0;
            uint64_t T00 = 0, T01 = 0, T10 = 0, T11 = 0;
            for (size_t t0 = 0; t0 < k; t0 += ch) {
                secea_u128 s[4];
                dot22(ap, b, t0, k - t0 < ch ? k : t0 + ch, s);
                FOLD(S00, T00, s[0]); FOLD(S01, T01, s[1]);
                FOLD(S10, T10, s[2]); FOLD(S11, T11, s[3]);
            }
            o0[j] = FIN(S00, T00);
            if (j + 1 < n) o0[j + 1] = FIN(S01, T01);
            if (two) {
                o1[j] = FIN(S10, T10);
                if (j + 1 < n) o1[j + 1] = FIN(S11, T11);
            }
        }
    }
}

static void run_scalar(secea__mm_job *jb)
{
    secea_modctx c; secea_modctx_init(&c, jb->p);
    size_t ch = chunk128(jb->p);
    if (ch < CH128) { wide(jb, &c); jb->status = 0; return; }
    uint64_t *ap = malloc(2 * jb->k * sizeof(uint64_t));
    if (!ap) { jb->status = -1; return; }
    narrow(jb, &c, ap, ch);
    secea_wipe(ap, 2 * jb->k * sizeof(uint64_t));   /* rows of A: decrypted queries */
    free(ap);
    jb->status = 0;
}

static const secea__mm_variant mm_portable = {"portable", 2, pack_pairs, run_scalar};

/* ---- dispatch ---- */
void secea__matmul_choose(secea__kernels *k)
{
    k->matmul = SECEA__MM_PORTABLE;
    if (k->portable) return;
#if SECEA_X86
    if (k->cpu.avx512ifma) k->matmul = SECEA__MM_IFMA;
#elif SECEA_ARM64
    if (k->cpu.asimd) k->matmul = SECEA__MM_NEON;
#endif
}

const char *secea__matmul_variant(const secea__kernels *k)
{
    return k->matmul == SECEA__MM_IFMA ? "ifma" : k->matmul == SECEA__MM_NEON ? "neon" : "portable";
}

/* the variant without IFMA: NEON limbs for p < 2^50, else the scalar kernel */
static const secea__mm_variant *choose_narrow(int mm, uint64_t p)
{
    (void)p; (void)mm;
#if SECEA_ARM64
    if (mm == SECEA__MM_NEON && p < (1ULL << 50)) return &secea__mm_neon50;
#endif
    return &mm_portable;
}

static const secea__mm_variant *choose(int mm, uint64_t p)
{
    if (mm == SECEA__MM_IFMA) return p <= (1ULL << 52) ? &secea__mm_ifma1 : &secea__mm_ifma2;
    return choose_narrow(mm, p);
}

typedef struct { const secea__mm_variant *v; secea__mm_job job; } mm_task;

/* Unit t of secea__pool_run is task t: a fixed row range, whichever thread runs it. */
static int mm_task_run(void *ctx, size_t t, void *scratch)
{
    (void)scratch;
    mm_task *x = (mm_task *)ctx + t;
    x->v->run(&x->job);
    return 0;
}

/* Rows of A split over threads (thread 0 is the caller), B already packed by v. */
static int run_packed(const secea__mm_variant *v, uint64_t *C, const uint64_t *A, const void *Bp,
                      size_t m, size_t k, size_t n, uint64_t p, int threads)
{
    size_t tiles = (m + v->row_align - 1) / v->row_align;
    threads = secea__pool_threads(threads, tiles);
    mm_task tasks[SECEA_POOL_MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        size_t t0 = tiles * (size_t)t / (size_t)threads, t1 = tiles * (size_t)(t + 1) / (size_t)threads;
        tasks[t] = (mm_task){v, {C, A, Bp, m, k, n, t0 * v->row_align,
                                 t1 * v->row_align < m ? t1 * v->row_align : m, p, -1}};
    }
    secea__pool_run(mm_task_run, tasks, (size_t)threads, 0, threads);
    int status = 0;
    for (int t = 0; t < threads; t++)
        if (tasks[t].job.status) status = tasks[t].job.status;
    return status;
}

int secea_fp_mat_mul(uint64_t *C, const uint64_t *A, const uint64_t *B,
                     size_t m, size_t k, size_t n, uint64_t p, int threads)
{
    if (m == 0 || n == 0) return 0;
    if (k == 0) { memset(C, 0, m * n * sizeof(uint64_t)); return 0; }
    /* IFMA vectorises rows of A, 16 per tile: fewer rows leave lanes idle;
     * with two limbs, short sums do not pay for its packing and finalisation */
    int narrow_shape = m < IFMA_MIN_ROWS || (p > (1ULL << 52) && k < IFMA2_MIN_K);
    const int mm = secea__kernels_now()->matmul;
    const secea__mm_variant *v = mm == SECEA__MM_IFMA && narrow_shape ? choose_narrow(mm, p) : choose(mm, p);
    void *Bp = v->pack_b(B, k, n, p);
    if (!Bp) return SECEA_ENOMEM;
    int status = run_packed(v, C, A, Bp, m, k, n, p, threads);
    free(Bp);
    return status;
}

/* A right operand packed once for many products (the SecEA responder's
 * shares y_v, multiplied by every query block of a round).  The handle keeps
 * the variant it was packed for, so a later set_backend cannot mismatch. */
struct secea_mat_packed {
    const secea__mm_variant *v;
    void *Bp;
    size_t k, n;
    uint64_t p;
};

secea_mat_packed *secea_fp_mat_pack(const uint64_t *B, size_t k, size_t n, uint64_t p)
{
    if (k == 0 || n == 0) return NULL;
    secea_mat_packed *h = malloc(sizeof *h);
    if (!h) return NULL;
    h->v = choose(secea__kernels_now()->matmul, p);
    h->Bp = h->v->pack_b(B, k, n, p);
    if (!h->Bp) { free(h); return NULL; }
    h->k = k; h->n = n; h->p = p;
    return h;
}

void secea_fp_mat_pack_free(secea_mat_packed *h)
{
    if (!h) return;
    free(h->Bp);
    free(h);
}

int secea_fp_mat_mul_packed(uint64_t *C, const uint64_t *A, const secea_mat_packed *h, size_t m, int threads)
{
    if (m == 0) return 0;
    return run_packed(h->v, C, A, h->Bp, m, h->k, h->n, h->p, threads);
}

/* ---- products of a stream-encrypted A (the SecEA responder's queries) ----
 * A is a message encrypted with a one-time pad (secea_prg_xor: A XOR an
 * AES-CTR keystream starting at byte skip0 of block block0).  Rows are
 * decrypted XOR_TILE_ROWS at a time into a per-thread scratch that stays in
 * L2 (16 rows of the MovieLens-1M union: 1.25 MB) and multiplied from there,
 * so the plaintext never goes to memory and is read once, from cache.  Every
 * decrypted entry is checked < p. */
#define XOR_TILE_ROWS 16

typedef struct {
    const secea_mat_packed *h;
    uint64_t *C;
    const uint64_t *A;
    size_t m, t0, t1;
    const uint8_t *key;
    uint64_t block0;
    unsigned skip0;
    int status;            /* 0, -1 allocation failure, 1 an entry >= p */
} xor_job;

static int xor_run(void *ctx, size_t t, void *unused)
{
    (void)unused;
    xor_job *x = (xor_job *)ctx + t;
    const secea_mat_packed *h = x->h;
    size_t k = h->k, n = h->n;
    uint64_t *scratch = aligned_alloc(64, (XOR_TILE_ROWS * k * 8 + 63) / 64 * 64);
    if (!scratch) { x->status = -1; return 0; }
    int status = 0;
    for (size_t t = x->t0; t < x->t1; t++) {
        size_t r0 = t * XOR_TILE_ROWS;
        size_t rows = x->m - r0 < XOR_TILE_ROWS ? x->m - r0 : XOR_TILE_ROWS;
        uint64_t pos = x->skip0 + 8 * (uint64_t)r0 * k;      /* byte offset in the stream */
        uint64_t blk = x->block0 + pos / 16;
        uint8_t iv[16] = {0};
        for (int i = 0; i < 8; i++) iv[15 - i] = (uint8_t)(blk >> (8 * i));
        if (secea_prg_xor(scratch, x->A + r0 * k, rows * k, x->key, iv, (unsigned)(pos % 16), h->p, 1, SECEA_PRG_XOR_CHECK))
            status = 1;
        secea__mm_job jb = {x->C + r0 * n, scratch, h->Bp, rows, k, n, 0, rows, h->p, -1};
        h->v->run(&jb);
        if (jb.status) { status = -1; break; }
    }
    secea_wipe(scratch, XOR_TILE_ROWS * k * 8);       /* plaintext queries */
    free(scratch);
    x->status = status;
    return 0;
}

int secea_fp_mat_mul_packed_xor(uint64_t *C, const uint64_t *A, const secea_mat_packed *h, size_t m, int threads,
                                const uint8_t *key, uint64_t block0, unsigned skip0)
{
    if (m == 0) return 0;
    if (skip0 != 0 && skip0 != 8) return SECEA_EINVAL;
    size_t tiles = (m + XOR_TILE_ROWS - 1) / XOR_TILE_ROWS;
    threads = secea__pool_threads(threads, tiles);
    xor_job jobs[SECEA_POOL_MAX_THREADS];
    for (int t = 0; t < threads; t++)
        jobs[t] = (xor_job){h, C, A, m, tiles * (size_t)t / (size_t)threads,
                            tiles * (size_t)(t + 1) / (size_t)threads, key, block0, skip0, -1};
    secea__pool_run(xor_run, jobs, (size_t)threads, 0, threads);
    int status = 0;
    for (int t = 0; t < threads; t++)       /* an allocation failure outranks a bad entry */
        if (jobs[t].status == SECEA_ENOMEM || (jobs[t].status && !status)) status = jobs[t].status;
    return status;
}
