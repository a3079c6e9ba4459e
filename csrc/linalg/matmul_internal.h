/* Shared between the matmul front end (matmul.c) and its variants. */
#ifndef SECEA_MATMUL_INTERNAL_H
#define SECEA_MATMUL_INTERNAL_H
#include "internal.h"

/* A job is the product restricted to rows [row0, row1) of A and C. */
typedef struct {
    uint64_t *C;
    const uint64_t *A;
    const void *Bpacked;   /* variant-specific packing of B, shared by all threads */
    size_t m, k, n;
    size_t row0, row1;
    uint64_t p;
    int status;            /* 0 ok, -1 allocation failure */
} secea__mm_job;

/* Variant interface: pack B once (returns malloc'ed buffer or NULL), then
 * run jobs on row ranges, possibly in parallel. */
typedef struct {
    const char *name;
    size_t row_align;                                    /* rows per tile */
    void *(*pack_b)(const uint64_t *B, size_t k, size_t n, uint64_t p);
    void (*run)(secea__mm_job *job);
} secea__mm_variant;

/* secea_mod192 with one division instead of three when the value is below
 * p 2^64 (short k, or a chunk of 128-bit sums: then the reduction is most of
 * the work); Goldilocks keeps its special form. */
static inline uint64_t secea__mm_fin192(const secea_modctx *c, uint64_t top, uint64_t hi, uint64_t lo)
{
    if (top == 0 && hi < c->p && c->p != SECEA_GOLDILOCKS)
        return secea_mod128(c, ((secea_u128)hi << 64) | lo);
    return secea_mod192(c, top, hi, lo);
}

extern const secea__mm_variant secea__mm_ifma1;   /* p <= 2^52, one 52-bit limb */
extern const secea__mm_variant secea__mm_ifma2;   /* p < 2^64, two limbs */
#if SECEA_ARM64
extern const secea__mm_variant secea__mm_neon50;  /* p < 2^50, NEON UMLAL on 25-bit limbs (matmul_neon.c) */
#endif

#endif
