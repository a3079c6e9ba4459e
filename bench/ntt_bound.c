/* What bounds the Goldilocks NTT on this machine (the 4 ms target of
 * bench/test_poly.py): built and run by
 * bench/ntt_bound.py, which compiles it twice against the package's C
 * sources (ntt_avx512.c is included below, the rest linked):
 *
 *   -DNTT_COUNT  counts every arithmetic part one forward transform executes
 *                (the NTT_PART hooks of ntt_avx512.c) and prints the counts;
 *   otherwise    times each part alone on register-resident data (eight
 *                independent streams, no loads or stores) and the transform
 *                itself, in cycles per 8 entries.
 *
 * The script multiplies the two.  Their sum is a floor for this arithmetic:
 * it leaves out loads, stores, loop control and the single-op negations, and
 * mixing parts does not beat their separate rates (the "bf+mul" line below
 * measures one such mix against the sum of its parts). */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NTT_P_ADD, NTT_P_SUB, NTT_P_MUL, NTT_P_SHL_LO, NTT_P_SHL_MID, NTT_P_SHL_HI, NTT_P_SHL_RT,
       NTT_P_NEG, NTT_P_T8, NTT_P_KINDS };

#ifdef NTT_COUNT
static const char *const PART_NAMES[NTT_P_KINDS] = {"add", "sub", "mul", "shl_lo", "shl_mid", "shl_hi",
                                                    "shl_rt", "neg", "transpose8"};
static unsigned long long part_count[NTT_P_KINDS];
#define NTT_PART(kind) ((void)part_count[kind]++)
#endif

#include "ntt_avx512.c"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void fill(uint64_t *a, size_t n)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        a[i] = x % SECEA_GOLDILOCKS;
    }
}

/* the build's report on the transform of a[0, n) with plan pl */
static int report(const secea_ntt_plan *pl, uint64_t *a, size_t n);

/* usage: ntt_bound LOGN ROOT (ROOT of order 2^LOGN mod Goldilocks) */
int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    unsigned logn = (unsigned)atoi(argv[1]);
    size_t n = (size_t)1 << logn;
    secea_ntt_plan *pl = secea_ntt_plan_new(SECEA_GOLDILOCKS, strtoull(argv[2], NULL, 10), logn);
    uint64_t *a = aligned_alloc(64, n * 8);
    if (!pl || !a) return 1;
    fill(a, n);
    return report(pl, a, n);
}

#ifdef NTT_COUNT
static int report(const secea_ntt_plan *pl, uint64_t *a, size_t n)
{
    secea__ntt_gl_forward_avx512(pl, a);
    /* per 8 entries (transpose8: calls, each on 64 entries) */
    for (int k = 0; k < NTT_P_KINDS; k++) printf("count %s %.6f\n", PART_NAMES[k], part_count[k] / (n / 8.0));
    return 0;
}
#else

#define ITER 2000000L

/* cycles per nanosecond from a chain of dependent scalar adds (1 cycle each) */
static double ghz(void)
{
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        uint64_t x = 0;
        double t = now();
        for (long i = 0; i < ITER; i++)
            __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\t"
                             "add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0"
                             : "+r"(x));
        t = now() - t;
        if (t < best) best = t;
    }
    return ITER * 10.0 / best / 1e9;
}

/* one part applied to 8 independent registers per iteration; cycles per
 * iteration / 8 (= per application to 8 entries) */
#define PART_BENCH(NAME, ...)                                                                 \
    __attribute__((noinline)) ATTR static double NAME(double cyc_per_ns)                    \
    {                                                                                         \
        uint64_t init[64];                                                                    \
        fill(init, 64);                                                                       \
        V x[8], w = v_load(init + 56);                                                        \
        (void)w;                                                                              \
        for (int i = 0; i < 8; i++) x[i] = v_load(init + 8 * i);                            \
        double best = 1e30;                                                                   \
        for (int r = 0; r < 5; r++) {                                                         \
            double t = now();                                                                 \
            for (long it = 0; it < ITER / 8; it++) { __VA_ARGS__; }                             \
            t = now() - t;                                                                    \
            if (t < best) best = t;                                                           \
        }                                                                                     \
        V s = x[0];                                                                           \
        for (int i = 1; i < 8; i++) s = _mm512_xor_si512(s, x[i]);                          \
        volatile long long sink = _mm512_reduce_add_epi64(s);                                 \
        (void)sink;                                                                           \
        return best * 1e9 * cyc_per_ns / (ITER / 8) / 8;                                      \
    }
#define EACH(STMT) _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) { STMT; }

PART_BENCH(t_add, EACH(x[i] = v_add(x[i], x[(i + 1) & 7])))
PART_BENCH(t_sub, EACH(x[i] = v_sub(x[i], x[(i + 1) & 7])))
PART_BENCH(t_mul, EACH(x[i] = v_mul(x[i], w)))
PART_BENCH(t_shl_lo, EACH(x[i] = v_shl(x[i], 24)))
PART_BENCH(t_shl_mid, EACH(x[i] = v_shl(x[i], 48)))
PART_BENCH(t_shl_hi, EACH(x[i] = v_shl(x[i], 72)))
static shr_t shr48;                                  /* run-time exponent 48, set in main */
PART_BENCH(t_shl_rt, EACH(x[i] = v_shl_rt(x[i], &shr48)))
PART_BENCH(t_neg, EACH(x[i] = v_neg(x[i])))
PART_BENCH(t_t8, transpose8(x))
/* 4 butterflies (u + v, (u - v) w) with general twiddles: compare with
 * 4 add + 4 sub + 4 mul applications */
PART_BENCH(t_bfmul, _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
    V u = x[i], v = x[i + 4];
    x[i] = v_add(u, v);
    x[i + 4] = v_mul(v_sub(u, v), w);
})

static int report(const secea_ntt_plan *pl, uint64_t *a, size_t n)
{
    const unsigned logn = pl->logn;
    double c = ghz();
    printf("ghz %.4f\n", c);
    printf("cost add %.4f\ncost sub %.4f\ncost mul %.4f\n", t_add(c), t_sub(c), t_mul(c));
    printf("cost shl_lo %.4f\ncost shl_mid %.4f\ncost shl_hi %.4f\n", t_shl_lo(c), t_shl_mid(c), t_shl_hi(c));
    shr_init(&shr48, 48);
    printf("cost shl_rt %.4f\n", t_shl_rt(c));
    /* transpose8 and the mix: per call / per iteration, not per register */
    printf("cost neg %.4f\ncost transpose8 %.4f\n", t_neg(c), 8 * t_t8(c));
    printf("mix4 bf+mul %.4f\n", 8 * t_bfmul(c));
    double best = 1e30;
    int reps = (int)(((size_t)1 << 23) >> logn);
    if (reps < 1) reps = 1;
    for (int r = 0; r < 15; r++) {
        double t = now();
        for (int z = 0; z < reps; z++) secea__ntt_gl_forward_avx512(pl, a);
        t = (now() - t) / reps;
        if (t < best) best = t;
    }
    printf("transform_ms %.4f\ntransform_cycles_per_8 %.4f\n", best * 1e3, best * 1e9 * c / (n / 8.0));
    return 0;
}
#endif
