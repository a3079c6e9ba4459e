/* Tangent Graeffe transforms over Goldilocks (root finding; see
 * secea_fast/poly/_graeffe.py for the method and the references).
 *
 * A + eps B is held as two coefficient arrays of length D = 2^logn (degree
 * < D).  Every product is a pointwise product of length-D transforms; the
 * transforms are the plan's (natural order in, bit-reversed out) so that the
 * values of A on mu_2D, laid out as the bit-reversed length-2D transform,
 * put x and -x at adjacent positions.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"
#include "ntt_internal.h"

#define GL SECEA_GOLDILOCKS

static void gl_powers(uint64_t *out, uint64_t h, size_t n)
{
    if (n == 0) return;
    out[0] = 1;
    size_t filled = 1;
    uint64_t hk = h;
    while (filled < n) {
        size_t take = filled < n - filled ? filled : n - filled;
        secea_fp_mul_scalar(out + filled, out, hk, take, GL);
        filled += take;
        hk = secea_gl_mul(hk, hk);
    }
}

/* The fused AVX-512 loops of ntt_avx512.c: the NTT dispatch chose its
 * AVX-512 kernels (so the CPU has them and portable mode is off) and D is a
 * multiple of their 8 lanes. */
static int simd_ok(size_t D)
{
    return SECEA_X86 && D % 8 == 0 && secea__kernels_now()->ntt_avx512;
}

/* Order r (odd, r | p - 1, zeta a primitive r-th root of unity), in place:
 *   G_r(A)(z^r) = prod_{c<r} A(zeta^c z),  z in mu_D,
 *   (P + eps Q) = prod_c (A_c + eps B_c), A_c(z) = A(zeta^c z),
 * each A_c on mu_D the transform of a_k zeta^(ck); the inverse transform of
 * values at y_j = z_j^r holds coefficient k at index r k mod D. */
int secea_gl_graeffe_odd(const secea_ntt_plan *pl, uint64_t *a, uint64_t *b, unsigned r, uint64_t zeta)
{
    const size_t D = pl->n;
    if (pl->p != GL || r < 3 || !(r & 1)) return SECEA_EINVAL;
    uint64_t *mem = malloc(6 * D * sizeof(uint64_t));
    if (!mem) return SECEA_ENOMEM;
    uint64_t *P = mem, *Q = mem + D, *ac = mem + 2 * D, *bc = mem + 3 * D, *tw = mem + 4 * D,
             *step = mem + 5 * D;
    gl_powers(step, zeta, D);
    memcpy(P, a, D * sizeof(uint64_t));
    memcpy(Q, b, D * sizeof(uint64_t));
    secea_ntt_forward(pl, P, 1);
    secea_ntt_forward(pl, Q, 1);
    memcpy(tw, step, D * sizeof(uint64_t));
    const int vec = simd_ok(D);
    for (unsigned c = 1; c < r; c++) {
#if SECEA_X86
        if (vec) {
            secea__gl_graeffe_twist_avx512(ac, bc, a, b, tw, step, D);
            secea_ntt_forward(pl, ac, 1);
            secea_ntt_forward(pl, bc, 1);
            secea__gl_graeffe_acc_avx512(P, Q, ac, bc, D);
            continue;
        }
#endif
        secea_fp_mul(ac, a, tw, D, GL);
        secea_fp_mul(bc, b, tw, D, GL);
        secea_fp_mul(tw, tw, step, D, GL);
        secea_ntt_forward(pl, ac, 1);
        secea_ntt_forward(pl, bc, 1);
        secea_fp_mul(bc, bc, P, D, GL);        /* P B_c */
        secea_fp_mul(Q, Q, ac, D, GL);         /* Q A_c */
        secea_fp_add(Q, Q, bc, D, GL);
        secea_fp_mul(P, P, ac, D, GL);
    }
    secea_ntt_inverse(pl, P, 1);
    secea_ntt_inverse(pl, Q, 1);
    const size_t mask = D - 1;
    for (size_t k = 0; k < D; k++) {
        size_t i = ((size_t)r * k) & mask;
        a[k] = P[i];
        b[k] = Q[i];
    }
    free(mem);
    return 0;
}

/* `steps` transforms of order 2, in place.  The plan's root must be
 * 7^((p - 1) / D) (what secea_fast.poly._core.plan builds: 7 generates
 * F_p^*), since the odd coset is taken as omega_2D = 7^((p - 1) / 2D) and
 * omega_2D^2 must be the plan's root.  With [E | O] the values on mu_D
 * (bit-reversed) and on omega_2D mu_D (the transform of a_k omega_2D^k),
 * G_2(A)(x^2) = A(x) A(-x) is the product of neighbours 2i, 2i+1 and lands
 * on mu_D in bit-reversed order: the next step's E. */
int secea_gl_graeffe2(const secea_ntt_plan *pl, uint64_t *a, uint64_t *b, unsigned steps)
{
    const size_t D = pl->n;
    if (pl->p != GL) return SECEA_EINVAL;
    if (steps == 0) return 0;
    uint64_t *mem = malloc(7 * D * sizeof(uint64_t));
    if (!mem) return SECEA_ENOMEM;
    uint64_t *XA = mem, *XB = mem + 2 * D, *tw = mem + 4 * D, *e0 = mem + 5 * D, *e1 = mem + 6 * D;
    secea_modctx c;
    secea_modctx_init(&c, GL);
    gl_powers(tw, secea_powmod(&c, 7, (GL - 1) / (2 * D)), D);   /* omega_2D^k (7 generates F_p^*) */
    memcpy(XA, a, D * sizeof(uint64_t));
    memcpy(XB, b, D * sizeof(uint64_t));
    secea_ntt_forward(pl, XA, 1);
    secea_ntt_forward(pl, XB, 1);
    for (unsigned t = 0; t < steps; t++) {
        secea_fp_mul(XA + D, a, tw, D, GL);
        secea_fp_mul(XB + D, b, tw, D, GL);
        secea_ntt_forward(pl, XA + D, 1);
        secea_ntt_forward(pl, XB + D, 1);
        for (size_t i = 0; i < D; i++) {          /* deinterleave the neighbours */
            e0[i] = XA[2 * i];
            e1[i] = XA[2 * i + 1];
        }
        for (size_t i = 0; i < D; i++) {
            a[i] = XB[2 * i];                     /* a, b as scratch: B's neighbours */
            b[i] = XB[2 * i + 1];
        }
        secea_fp_mul(b, b, e0, D, GL);            /* A(x) B(-x) */
        secea_fp_mul(a, a, e1, D, GL);            /* B(x) A(-x) */
        secea_fp_add(XB, a, b, D, GL);
        secea_fp_mul(XA, e0, e1, D, GL);          /* A(x) A(-x) */
        memcpy(a, XA, D * sizeof(uint64_t));
        memcpy(b, XB, D * sizeof(uint64_t));
        secea_ntt_inverse(pl, a, 1);
        secea_ntt_inverse(pl, b, 1);
    }
    free(mem);
    return 0;
}
