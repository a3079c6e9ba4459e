/* Internal helpers shared by the kernel families (not part of the C API). */
#ifndef SECEA_INTERNAL_H
#define SECEA_INTERNAL_H
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include <stdatomic.h>
#include "secea.h"

#if defined(__x86_64__) || defined(__i386__)
#define SECEA_X86 1
#define SECEA_TARGET(s) __attribute__((target(s)))
#else
#define SECEA_X86 0
#define SECEA_TARGET(s)
#endif

/* 64-bit ARM.  Advanced SIMD (NEON) is part of the AArch64 baseline; the
 * ARMv8 Crypto Extensions AES instructions are not, so the kernels using
 * them carry SECEA_TARGET_ARMCE and run only after a run-time check
 * (dispatch.c: HWCAP_AES on Linux, hw.optional.arm.FEAT_AES on macOS). */
#if defined(__aarch64__)
#define SECEA_ARM64 1
/* SECEA_ARMCE: this compiler can build the Crypto Extensions kernels with
 * baseline flags (arm_neon.h's AES intrinsics usable inside a target
 * attribute: gcc 8+, clang 16+; older clang declares them only when the
 * whole translation unit targets the extension).  Otherwise the portable
 * AES runs. */
#if defined(__ARM_FEATURE_AES) || defined(__ARM_FEATURE_CRYPTO)
#define SECEA_ARMCE 1
#define SECEA_TARGET_ARMCE                  /* the baseline has it (Apple arm64) */
#elif defined(__clang__) && __clang_major__ >= 16
#define SECEA_ARMCE 1
#define SECEA_TARGET_ARMCE __attribute__((target("aes")))
#elif !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8
#define SECEA_ARMCE 1
#define SECEA_TARGET_ARMCE __attribute__((target("+crypto")))
#else
#define SECEA_ARMCE 0
#endif
#else
#define SECEA_ARM64 0
#define SECEA_ARMCE 0
#endif

typedef unsigned __int128 secea_u128;

/* A hot inner loop of at most 64 bytes of code starts on a 64-byte line, so
 * one iteration is decoded from one fetch window whatever the rest of the
 * library's layout.  GCC aligns loops to 16 bytes by default, so where such
 * a loop lands relative to a 64-byte line moved with every unrelated edit to
 * the files linked before it: the scalar matmul's 49-byte loop (dot12)
 * straddled a line after the kernel-layer restructuring and the Goldilocks
 * product ran 6-11% slower with identical instructions (docs/PERFORMANCE.md,
 * "Before and after the kernel-layer restructuring").  Only GCC has the
 * per-function form; other compilers keep their default alignment. */
#if defined(__GNUC__) && !defined(__clang__)
#define SECEA_ALIGN_LOOPS __attribute__((optimize("align-loops=64")))
#else
#define SECEA_ALIGN_LOOPS
#endif

/* ---- run-time CPU dispatch (dispatch.c) ----
 * The CPU is probed once into a secea__cpu_features (what it has); the
 * ceiling of secea_dispatch_init (SECEA_FAST_BACKEND=avx2: no VAES, no
 * AVX-512) masks it, and each kernel family chooses its variant from the
 * result alone.  The whole choice is one secea__kernels table, never written
 * after it is published by a single atomic store: a kernel reads the table
 * once per call and sees one consistent choice even while another thread
 * calls secea_dispatch_init (cffi releases the GIL around every call). */
typedef struct {
    unsigned char aes;         /* x86: AES-NI and SSE4.1; ARM: Crypto Extensions AES and ASIMD */
    unsigned char vaes;        /* VAES, AVX-512F/BW/VL/DQ, AES-NI and AVX2: the one definition,
                                * what the AES and the DPF VAES kernels are compiled for */
    unsigned char avx2;
    unsigned char bmi2;
    unsigned char avx512f;
    unsigned char avx512dq;    /* with AVX-512F and VL */
    unsigned char avx512ifma;  /* with AVX-512F and VL */
    unsigned char asimd;       /* ARM Advanced SIMD (NEON) */
    unsigned char pmull;
    unsigned char vaes256;     /* VAES on 256-bit registers with AVX2 and AES-NI (no AVX-512 needed);
                                * masked with vaes under the AVX2 ceiling */
} secea__cpu_features;

struct secea__field_ops;       /* fp_vec.c */
struct secea__ntt_ops;         /* ntt.c */
struct secea__aes_impl;        /* aes_internal.h */

enum { SECEA__MM_PORTABLE, SECEA__MM_IFMA, SECEA__MM_NEON };

typedef struct {
    secea__cpu_features cpu;   /* what kernels may use: the probe under the ceiling */
    unsigned char portable;    /* level 1: every family's default is its portable C */
    unsigned char level;       /* secea_dispatch_init's level */
    const struct secea__field_ops *field;
    unsigned char field_avx512; /* field chose its AVX-512 loops (prg_field.c follows) */
    const struct secea__ntt_ops *ntt;
    unsigned char ntt_avx512;  /* NTT chose its AVX-512 kernels (graeffe.c, hgcd.c follow) */
    unsigned char matmul;      /* SECEA__MM_* */
    unsigned char bignum_ifma; /* the 8-lane IFMA exponentiation */
    const struct secea__aes_impl *aes;
    const void *dpf;           /* const secea__dpf_impl * (dpf_internal.h) */
} secea__kernels;

/* The published table (first use without secea_dispatch_init: level 0). */
const secea__kernels *secea__kernels_slow(void);
extern _Atomic(const secea__kernels *) secea__kernels_cur;
static inline const secea__kernels *secea__kernels_now(void)
{
    const secea__kernels *k = atomic_load_explicit(&secea__kernels_cur, memory_order_acquire);
    return __builtin_expect(k != NULL, 1) ? k : secea__kernels_slow();
}

/* Publishes the current table with the AES or the DPF variant replaced
 * (NULL: kept); tests compare variants with it.  Returns 0. */
int secea__kernels_override(const struct secea__aes_impl *aes, const void *dpf);

/* Each family fills its fields of a table from k->cpu and k->portable
 * (called by dispatch.c, before the table is published) and names its
 * variant for backend_info(). */
void secea__field_choose(secea__kernels *k);
void secea__ntt_choose(secea__kernels *k);
void secea__matmul_choose(secea__kernels *k);
void secea__aes_choose(secea__kernels *k);
void secea__dpf_choose(secea__kernels *k);
void secea__bignum_choose(secea__kernels *k);
const char *secea__field_variant(const secea__kernels *k);
const char *secea__ntt_variant(const secea__kernels *k);
const char *secea__matmul_variant(const secea__kernels *k);
const char *secea__aes_variant(const secea__kernels *k);
const char *secea__dpf_variant(const secea__kernels *k);
const char *secea__bignum_variant(const secea__kernels *k);
/* the fixed-window width of the constant-time exponentiations (csrc/bignum) */
unsigned secea__powm_window(size_t ebits);

/* ---- the thread pool (threads.c) ----
 * secea__pool_run calls fn(ctx, u, scratch) once for each unit u < units on
 * secea__pool_threads(threads, units) threads, the caller's included; units
 * come from an atomic counter, so any thread may run any unit.  scratch is
 * the running thread's own 64-byte-aligned buffer of scratch_bytes (NULL if
 * 0).  Returns 0, -1 if a thread's scratch could not be allocated, or the
 * nonzero value of some fn call (the last stored). */
#define SECEA_POOL_MAX_THREADS SECEA_MAX_THREADS
typedef int (*secea__unit_fn)(void *ctx, size_t unit, void *scratch);
int secea__pool_threads(int threads, size_t units);   /* clamped to [1, min(units, 64)] */
int secea__pool_run(secea__unit_fn fn, void *ctx, size_t units, size_t scratch_bytes, int threads);

/* ---- scalar modular arithmetic for any modulus 2 <= p < 2^64 ----
 * Division by an invariant integer with a precomputed reciprocal
 * (Moller & Granlund, "Improved division by invariant integers", IEEE TC
 * 2011, Algorithm 4).  p is normalised by a left shift so its top bit is set. */
typedef struct {
    uint64_t p;      /* the modulus */
    uint64_t d;      /* p << shift */
    uint64_t v;      /* floor((2^128 - 1) / d) - 2^64 */
    unsigned shift;  /* leading zeros of p */
} secea_modctx;

static inline void secea_modctx_init(secea_modctx *c, uint64_t p)
{
    c->p = p;
    c->shift = (unsigned)__builtin_clzll(p);
    c->d = p << c->shift;
    /* v = floor((2^128-1)/d) - 2^64 = floor(((~d) * 2^64 + (2^64-1)) / d) */
    secea_u128 num = ((secea_u128)(~c->d) << 64) | UINT64_MAX;
    c->v = (uint64_t)(num / c->d);
}

/* <u1,u0> mod d for u1 < d (d normalised). */
static inline uint64_t secea__rem_norm(uint64_t u1, uint64_t u0, uint64_t d, uint64_t v)
{
    secea_u128 q = (secea_u128)v * u1;
    q += ((secea_u128)u1 << 64) | u0;
    uint64_t q1 = (uint64_t)(q >> 64) + 1;
    uint64_t q0 = (uint64_t)q;
    uint64_t r = u0 - q1 * d;
    /* both corrections are data dependent: masks instead of branches (random
     * operands would mispredict about half the time) */
    r += d & (0 - (uint64_t)(r > q0));
    r -= d & (0 - (uint64_t)(r >= d));
    return r;
}

/* x mod p for any 128-bit x with x < p * 2^64 (e.g. a product of two
 * residues, or hi < p). */
static inline uint64_t secea_mod128(const secea_modctx *c, secea_u128 x)
{
    uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
    unsigned s = c->shift;
    uint64_t u1 = s ? (hi << s) | (lo >> (64 - s)) : hi;
    uint64_t u0 = lo << s;
    return secea__rem_norm(u1, u0, c->d, c->v) >> s;
}

/* x mod p for any 64-bit x. */
static inline uint64_t secea_mod64(const secea_modctx *c, uint64_t x)
{
    return secea_mod128(c, (secea_u128)x);
}

static inline uint64_t secea_mulmod(const secea_modctx *c, uint64_t a, uint64_t b)
{
    return secea_mod128(c, (secea_u128)a * b);
}

/* Zero n bytes of memory that held secrets (a memset the compiler cannot
 * drop as a dead store; vectorised, unlike a volatile word loop). */
static inline void secea_wipe(void *p, size_t n)
{
    static void *(*const volatile memset_v)(void *, int, size_t) = memset;
    memset_v(p, 0, n);
}

#define SECEA_GOLDILOCKS 0xFFFFFFFF00000001ULL
static inline uint64_t secea_gl_reduce128(secea_u128 x);

/* 192-bit value top*2^128 + hi*2^64 + lo reduced mod p. */
static inline uint64_t secea_mod192(const secea_modctx *c, uint64_t top, uint64_t hi, uint64_t lo)
{
    if (c->p == SECEA_GOLDILOCKS) {
        /* 2^128 = 2^96 2^32 = -2^32 (mod p): two special-form reductions
         * instead of three divisions (the classical products' bottleneck) */
        uint64_t r = secea_gl_reduce128(((secea_u128)hi << 64) | lo);
        uint64_t t = secea_gl_reduce128((secea_u128)top << 32);
        return r >= t ? r - t : r - t + SECEA_GOLDILOCKS;
    }
    uint64_t r = secea_mod64(c, top);
    r = secea_mod128(c, ((secea_u128)r << 64) | hi);
    return secea_mod128(c, ((secea_u128)r << 64) | lo);
}

static inline uint64_t secea_addmod(uint64_t a, uint64_t b, uint64_t p)
{
    uint64_t s = a + b;
    /* a, b < p: the true sum is < 2p; reduce if it overflowed or reached p */
    if (s < a || s >= p) s -= p;
    return s;
}

static inline uint64_t secea_submod(uint64_t a, uint64_t b, uint64_t p)
{
    return a >= b ? a - b : a - b + p;
}

/* ---- p < 2^50 (the default embedding prime): a * b mod p from a
 * double-precision quotient estimate.  a, b < p are exact doubles; the
 * estimate of ab/p < 2^50 has relative error <= 3 * 2^-53, so an absolute
 * error < 3/8 and q is floor(ab/p) - 1, + 0 or + 1: r = ab - qp, computed
 * modulo 2^64, lies in [-p, 2p) and one masked correction each way makes it
 * canonical.  Branch free and vectorisable (AVX-512DQ). ---- */
#define SECEA_F64_MAX_P (1ULL << 50)

static inline uint64_t secea_mulmod_f64(uint64_t a, uint64_t b, uint64_t p, double pinv)
{
    uint64_t q = (uint64_t)((double)a * (double)b * pinv);
    int64_t r = (int64_t)(a * b - q * p);
    r += (int64_t)p & -(int64_t)(r < 0);
    r -= (int64_t)p & -(int64_t)(r >= (int64_t)p);
    return (uint64_t)r;
}

/* ---- Goldilocks p = 2^64 - 2^32 + 1:  2^64 = 2^32 - 1,  2^96 = -1
 * (SECEA_GOLDILOCKS is defined above, with secea_mod192) ---- */

static inline uint64_t secea_gl_reduce128(secea_u128 x)
{
    const uint64_t eps = 0xFFFFFFFFULL; /* 2^64 mod p */
    uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
    uint64_t hi_hi = hi >> 32, hi_lo = hi & eps;
    uint64_t t0 = lo - hi_hi;                     /* lo - hi_hi * 2^96 */
    t0 -= eps & (0 - (uint64_t)(lo < hi_hi));     /* borrow: -2^64 = -eps */
    uint64_t t1 = hi_lo * eps;                    /* hi_lo * 2^64 */
    uint64_t t2 = t0 + t1;
    t2 += eps & (0 - (uint64_t)(t2 < t1));        /* carry: 2^64 = eps */
    t2 -= SECEA_GOLDILOCKS & (0 - (uint64_t)(t2 >= SECEA_GOLDILOCKS));
    return t2;
}

#if SECEA_X86
/* Goldilocks products, 8 lanes at a time (csrc/common/gl_avx512.c; callers
 * check avx512f + avx512dq).  out may alias a or b. */
void secea__gl_mul_avx512(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n);
void secea__gl_mul_scalar_avx512(uint64_t *out, const uint64_t *a, uint64_t k, size_t n);
#endif

static inline uint64_t secea_gl_mul(uint64_t a, uint64_t b)
{
    return secea_gl_reduce128((secea_u128)a * b);
}

/* Either reduction, chosen by the modulus (latency-bound scalar code). */
static inline uint64_t secea_mulmod_any(const secea_modctx *c, uint64_t a, uint64_t b)
{
    return c->p == SECEA_GOLDILOCKS ? secea_gl_mul(a, b) : secea_mulmod(c, a, b);
}

static inline uint64_t secea_powmod(const secea_modctx *c, uint64_t a, uint64_t e)
{
    uint64_t r = 1, b = a;
    while (e) {
        if (e & 1) r = secea_mulmod_any(c, r, b);
        e >>= 1;
        if (e) b = secea_mulmod_any(c, b, b);
    }
    return r;
}

/* Inverse of a nonzero residue (Fermat). */
static inline uint64_t secea_invmod(const secea_modctx *c, uint64_t a)
{
    return secea_powmod(c, a, c->p - 2);
}
#endif
