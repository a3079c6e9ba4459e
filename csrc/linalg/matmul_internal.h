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

extern const secea__mm_variant secea__mm_ifma1;   /* p <= 2^52, one 52-bit limb */
extern const secea__mm_variant secea__mm_ifma2;   /* p < 2^64, two limbs */
int secea__mm_ifma_available(void);
#if SECEA_ARM64
extern const secea__mm_variant secea__mm_neon50;  /* p < 2^50, NEON UMLAL on 25-bit limbs (matmul_neon.c) */
#endif

#endif
