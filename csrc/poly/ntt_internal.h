/* Internal layout of number-theoretic transform plans (csrc/poly/ntt*.c).
 * Not part of the C API; see ntt.c for the mathematics. */
#ifndef SECEA_NTT_INTERNAL_H
#define SECEA_NTT_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "secea.h"
#include "internal.h"

/* The two auxiliary primes of the three-prime product (secea_ntt_crt3):
 * q = k 2^32 + 1 < 2^63, the two largest such primes (k = 2^31 - 7 and
 * 2^31 - 23; primality checked with gmpy2.is_prime).  Both have 2-adicity
 * exactly 32, so they support transforms of every length 2^logn with
 * logn <= 32 (this API caps logn at 30).  Generators: 3 for Q1, 19 for Q2,
 * so w = g^((q - 1) / 2^logn) is a primitive 2^logn-th root of unity.
 * q0 q1 q2 > 2^189 (q0 = Goldilocks). */
#define SECEA_NTT_Q1 0x7FFFFFF900000001ULL
#define SECEA_NTT_Q2 0x7FFFFFE900000001ULL

#define SECEA_NTT_MAX_LOGN 30
#define SECEA_NTT_MAX_STAGES 8

/* One stage of the Goldilocks stage algorithm (ntt.c, "Goldilocks"): a block
 * of N = R M entries, R = 2^k = R1 R2, transformed along stride M. */
typedef struct {
    unsigned k, k1, k2;     /* k = k1 + k2 levels; R1 = 2^k1, R2 = 2^k2 */
    size_t N, M;            /* block length and stride (M >= 8, multiple of 8) */
    unsigned eR;            /* w_R = 2^eR mod p, w_R = w^(n/R) primitive R-th root */
    uint64_t *tf;           /* [R1][M/8][R2][8]: tf = w_N^(j q), q = q1 + R1 q2,
                             * j = 8 jv + lane (secea__ntt_tw_index) */
    uint64_t *ti;           /* same with w^-1 (top stage: times n^-1) */
    int scale_q0;           /* ti's q = 0 column is not 1 (top stage) */
    /* inter-pass twiddles w_R^(+-m0 q1) = 2^ea, index m0 R1 + s, q1 = bitrev(s) */
    uint8_t ea_f[64], ea_i[64];
} secea__ntt_stage;

struct secea_ntt_plan {
    uint64_t p, w, winv, ninv;
    unsigned logn;
    size_t n;
    int gold_stages;        /* 1: Goldilocks stage algorithm (logn >= 6) */
    /* radix-2 path (generic primes; Goldilocks with logn < 6):
     * fw[h + j] = w_{2h}^j, iw[h + j] = w_{2h}^-j for 1 <= h < n, j < h,
     * with iw of the last level (h = n/2) multiplied by n^-1;
     * fws/iws the Shoup quotients floor(x 2^64 / p) (generic primes only). */
    uint64_t *fw, *iw, *fws, *iws;
    uint64_t ninv_s;        /* Shoup quotient of ninv */
    /* Goldilocks stage algorithm */
    unsigned nstages;
    unsigned e64;           /* w^(n/64) = 2^e64 mod p */
    secea__ntt_stage st[SECEA_NTT_MAX_STAGES];
    uint64_t pow2[192];     /* 2^e mod p (Goldilocks stages) */
    void *mem;              /* the one allocation holding every table */
};

static inline size_t secea__ntt_tw_index(const secea__ntt_stage *st, size_t j, unsigned q)
{
    size_t q1 = q & ((1u << st->k1) - 1), q2 = q >> st->k1;
    return ((q1 * (st->M / 8) + j / 8) * ((size_t)1 << st->k2) + q2) * 8 + (j & 7);
}

#if SECEA_X86
void secea__ntt_gl_forward_avx512(const secea_ntt_plan *pl, uint64_t *a);
void secea__ntt_gl_inverse_avx512(const secea_ntt_plan *pl, uint64_t *a);
void secea__ntt_gl_pointwise_avx512(uint64_t *a, const uint64_t *b, size_t n);
void secea__ntt_r2_forward_avx512(const secea_ntt_plan *pl, uint64_t *a);
void secea__ntt_r2_inverse_avx512(const secea_ntt_plan *pl, uint64_t *a);
void secea__ntt_pointwise_mont_avx512(uint64_t *a, const uint64_t *b, size_t n, uint64_t p,
                                      uint64_t pinv, uint64_t r1, uint64_t r1s);
void secea__ntt_r2_forward_ifma(const secea_ntt_plan *pl, uint64_t *a);
void secea__ntt_r2_inverse_ifma(const secea_ntt_plan *pl, uint64_t *a);
/* odd-order tangent Graeffe step (graeffe.c), Goldilocks, 8 lanes at a time */
void secea__gl_graeffe_twist_avx512(uint64_t *ac, uint64_t *bc, const uint64_t *a, const uint64_t *b,
                                    uint64_t *tw, const uint64_t *step, size_t n);
void secea__gl_graeffe_acc_avx512(uint64_t *P, uint64_t *Q, const uint64_t *ac, const uint64_t *bc, size_t n);
#endif

#endif
