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
 *   avx2      scalar 64x64->128 products (mulx) with 192-bit accumulators,
 *             compiled for AVX2+BMI2
 *   neon      64-bit ARM, p < 2^50: NEON UMLAL on 25-bit limbs (matmul_neon.c;
 *             not measured on ARM hardware); other p take the scalar kernel
 *   portable  the same scalar kernel with baseline flags
 * Products are accumulated exactly and reduced once per output element, so
 * the result never depends on the route.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "matmul_internal.h"

/* ---- scalar kernel: B transposed, 2x2 register blocks of 192-bit sums ---- */
static void *pack_bt(const uint64_t *B, size_t k, size_t n, uint64_t p)
{
    (void)p;
    uint64_t *Bt = malloc((k * n ? k * n : 1) * sizeof(uint64_t));
    if (!Bt) return NULL;
    for (size_t t = 0; t < k; t++)
        for (size_t j = 0; j < n; j++) Bt[j * k + t] = B[t * n + j];
    return Bt;
}

#define ACC(acc, top, x, y) do { secea_u128 t_ = (secea_u128)(x) * (y); acc += t_; top += acc < t_; } while (0)
#define FIN(acc, top) secea_mod192(&c, top, (uint64_t)((acc) >> 64), (uint64_t)(acc))

#define SCALAR_KERNEL(SFX, ATTR)                                                        \
ATTR static void run_##SFX(secea__mm_job *jb)                                           \
{                                                                                       \
    const uint64_t *Bt = jb->Bpacked;                                                   \
    size_t k = jb->k, n = jb->n;                                                        \
    secea_modctx c; secea_modctx_init(&c, jb->p);                                       \
    size_t i = jb->row0;                                                                \
    for (; i + 1 < jb->row1; i += 2) {                                                  \
        const uint64_t *a0 = jb->A + i * k, *a1 = a0 + k;                               \
        size_t j = 0;                                                                   \
        for (; j + 1 < n; j += 2) {                                                     \
            const uint64_t *b0 = Bt + j * k, *b1 = b0 + k;                              \
            secea_u128 s00 = 0, s01 = 0, s10 = 0, s11 = 0;                              \
            uint64_t t00 = 0, t01 = 0, t10 = 0, t11 = 0;                                \
            for (size_t t = 0; t < k; t++) {                                            \
                ACC(s00, t00, a0[t], b0[t]); ACC(s01, t01, a0[t], b1[t]);               \
                ACC(s10, t10, a1[t], b0[t]); ACC(s11, t11, a1[t], b1[t]);               \
            }                                                                           \
            jb->C[i * n + j] = FIN(s00, t00); jb->C[i * n + j + 1] = FIN(s01, t01);     \
            jb->C[(i + 1) * n + j] = FIN(s10, t10);                                     \
            jb->C[(i + 1) * n + j + 1] = FIN(s11, t11);                                 \
        }                                                                               \
        for (; j < n; j++) {                                                            \
            const uint64_t *b0 = Bt + j * k;                                            \
            secea_u128 s0 = 0, s1 = 0; uint64_t t0 = 0, t1 = 0;                         \
            for (size_t t = 0; t < k; t++) { ACC(s0, t0, a0[t], b0[t]); ACC(s1, t1, a1[t], b0[t]); } \
            jb->C[i * n + j] = FIN(s0, t0); jb->C[(i + 1) * n + j] = FIN(s1, t1);       \
        }                                                                               \
    }                                                                                   \
    for (; i < jb->row1; i++) {                                                         \
        const uint64_t *a0 = jb->A + i * k;                                             \
        for (size_t j = 0; j < n; j++) {                                                \
            const uint64_t *b0 = Bt + j * k;                                            \
            secea_u128 s0 = 0; uint64_t t0 = 0;                                         \
            for (size_t t = 0; t < k; t++) ACC(s0, t0, a0[t], b0[t]);                   \
            jb->C[i * n + j] = FIN(s0, t0);                                             \
        }                                                                               \
    }                                                                                   \
    jb->status = 0;                                                                     \
}

SCALAR_KERNEL(portable, )
static const secea__mm_variant mm_portable = {"portable", 2, pack_bt, run_portable};
#if SECEA_X86
SCALAR_KERNEL(avx2, SECEA_TARGET("avx2,bmi2"))
static const secea__mm_variant mm_avx2 = {"avx2", 2, pack_bt, run_avx2};
#endif

/* ---- dispatch ---- */
static int use_ifma = 0, use_neon = 0;
static const secea__mm_variant *scalar_variant = &mm_portable;

void secea__matmul_select(int force_portable)
{
    use_ifma = 0;
    use_neon = 0;
    scalar_variant = &mm_portable;
    if (force_portable) return;
#if SECEA_X86
    if (secea__cpu_allowed("avx2") && secea__cpu_allowed("bmi2")) scalar_variant = &mm_avx2;
    use_ifma = secea__mm_ifma_available();
#elif SECEA_ARM64
    use_neon = secea__cpu_allowed("asimd");
#endif
}

const char *secea__matmul_variant(void)
{
    return use_ifma ? "ifma" : use_neon ? "neon" : scalar_variant->name;
}

static const secea__mm_variant *choose(uint64_t p)
{
    if (use_ifma) return p <= (1ULL << 52) ? &secea__mm_ifma1 : &secea__mm_ifma2;
#if SECEA_ARM64
    if (use_neon && p < (1ULL << 50)) return &secea__mm_neon50;
#endif
    return scalar_variant;
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
    const secea__mm_variant *v = choose(p);
    void *Bp = v->pack_b(B, k, n, p);
    if (!Bp) return -1;
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
    h->v = choose(p);
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
    if (skip0 != 0 && skip0 != 8) return -2;
    size_t tiles = (m + XOR_TILE_ROWS - 1) / XOR_TILE_ROWS;
    threads = secea__pool_threads(threads, tiles);
    xor_job jobs[SECEA_POOL_MAX_THREADS];
    for (int t = 0; t < threads; t++)
        jobs[t] = (xor_job){h, C, A, m, tiles * (size_t)t / (size_t)threads,
                            tiles * (size_t)(t + 1) / (size_t)threads, key, block0, skip0, -1};
    secea__pool_run(xor_run, jobs, (size_t)threads, 0, threads);
    int status = 0;
    for (int t = 0; t < threads; t++)       /* an allocation failure outranks a bad entry */
        if (jobs[t].status == -1 || (jobs[t].status && !status)) status = jobs[t].status;
    return status;
}
