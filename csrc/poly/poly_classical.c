/* Classical (quadratic) polynomial kernels over F_p, any prime p < 2^64.
 *
 * These are the base cases under the fast algorithms of secea_fast.poly
 * (NTT products, subproduct trees, half-GCD): below the crossovers recorded in
 * secea_fast/tuning.py (measured in docs/PERFORMANCE.md) they are faster than the asymptotically fast routes.
 * Products accumulate exactly in 192 bits (one reduction per coefficient);
 * division and Euclid steps use one modular inverse per step.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"

/* z (length la+lb-1) = x * y, one exact 192-bit sum and reduction per coefficient. */
static void conv_exact(uint64_t *z, const uint64_t *x, size_t la, const uint64_t *y, size_t lb,
                       const secea_modctx *c)
{
    size_t lo = la + lb - 1;
    for (size_t i = 0; i < lo; i++) {
        size_t j0 = i >= lb - 1 ? i - (lb - 1) : 0;     /* j < la, i - j < lb */
        size_t j1 = i < la - 1 ? i : la - 1;
        secea_u128 acc = 0;
        uint64_t top = 0;
        for (size_t j = j0; j <= j1; j++) {
            secea_u128 pr = (secea_u128)x[j] * y[i - j];
            acc += pr;
            top += acc < pr;
        }
        z[i] = secea_mod192(c, top, (uint64_t)(acc >> 64), (uint64_t)acc);
    }
}

void secea_fp_poly_mul_classical(uint64_t *out, const uint64_t *a, size_t la, const uint64_t *b,
                                 size_t lb, size_t b_stride, size_t count, uint64_t p)
{
    secea_modctx c;
    secea_modctx_init(&c, p);
    for (size_t t = 0; t < count; t++)
        conv_exact(out + t * (la + lb - 1), a + t * la, la, b + t * b_stride, lb, &c);
}

void secea_fp_poly_midprod_batch(uint64_t *out, const uint64_t *a, size_t la, const uint64_t *m,
                                 size_t lm, size_t m_stride, size_t count, uint64_t p)
{
    secea_modctx c;
    secea_modctx_init(&c, p);
    size_t lo = la - lm + 1;
    for (size_t t = 0; t < count; t++) {
        const uint64_t *x = a + t * la, *y = m + t * m_stride;
        uint64_t *z = out + t * lo;
        for (size_t k = 0; k < lo; k++) {
            secea_u128 acc = 0;
            uint64_t top = 0;
            for (size_t j = 0; j < lm; j++) {
                secea_u128 pr = (secea_u128)y[j] * x[k + j];
                acc += pr;
                top += acc < pr;
            }
            z[k] = secea_mod192(&c, top, (uint64_t)(acc >> 64), (uint64_t)acc);
        }
    }
}

/* In place: a (length la) becomes its remainder mod b (first lb-1 entries),
 * quotient written to q (length la-lb+1) when q != NULL. */
static void divrem_inplace(uint64_t *q, uint64_t *a, size_t la, const uint64_t *b, size_t lb,
                           const secea_modctx *c)
{
    uint64_t p = c->p;
    uint64_t inv = secea_invmod(c, b[lb - 1]);
    for (size_t i = la; i-- >= lb;) {
        uint64_t coef = secea_mulmod_any(c, a[i], inv);
        if (q) q[i - (lb - 1)] = coef;
        a[i] = 0;
        if (coef == 0) continue;
        uint64_t neg = p - coef;
        uint64_t *dst = a + i - (lb - 1);
        for (size_t j = 0; j + 1 < lb; j++)
            dst[j] = secea_addmod(dst[j], secea_mulmod_any(c, neg, b[j]), p);
    }
}

int secea_fp_poly_divrem_classical(uint64_t *q, uint64_t *r, const uint64_t *a, size_t la,
                                   const uint64_t *b, size_t lb, uint64_t p)
{
    secea_modctx c;
    secea_modctx_init(&c, p);
    uint64_t *w = malloc(la * sizeof(uint64_t));
    if (!w) return SECEA_ENOMEM;
    memcpy(w, a, la * sizeof(uint64_t));
    divrem_inplace(q, w, la, b, lb, &c);
    if (r && lb > 1) memcpy(r, w, (lb - 1) * sizeof(uint64_t));
    free(w);
    return 0;
}

/* a x mod p for a fixed x, with xs = floor(x 2^64 / p) (Shoup): for p < 2^63
 * and any 64-bit a, a x - floor(a xs / 2^64) p lies in [0, 2p).  Two
 * independent products and a third: shorter latency than a 128-bit
 * division-free reduction of a x. */
static inline uint64_t shoup_mul(uint64_t a, uint64_t x, uint64_t xs, uint64_t p)
{
    uint64_t q = (uint64_t)(((secea_u128)a * xs) >> 64);
    uint64_t r = a * x - q * p;
    return r - (p & (0 - (uint64_t)(r >= p)));
}

/* a + b mod p for a, b < p without a branch: Horner's chains run over
 * random data, where a branch on the carry would be mispredicted half the
 * time (secea_addmod's branch costs 2.5x on long evaluations). */
static inline uint64_t addmod_nb(uint64_t a, uint64_t b, uint64_t p)
{
    uint64_t s = a + b;
    return s - (p & (0 - (uint64_t)((s < a) | (s >= p))));
}

/* Shoup's product without its last subtraction: in [0, 2p) for any 64-bit a
 * (p < 2^63).  With p < 2^62 a Horner chain can stay in [0, 3p) (this plus a
 * coefficient below p) and be reduced once at its end. */
static inline uint64_t lazy_shoup_mul(uint64_t a, uint64_t x, uint64_t xs, uint64_t p)
{
    uint64_t q = (uint64_t)(((secea_u128)a * xs) >> 64);
    return a * x - q * p;
}

static inline uint64_t reduce_3p(uint64_t r, uint64_t p)            /* r < 3p -> r mod p */
{
    r -= p & (0 - (uint64_t)(r >= 2 * p));
    return r - (p & (0 - (uint64_t)(r >= p)));
}

/* a x + g mod Goldilocks for any 64-bit a and g < p, returned as a 64-bit
 * representative, not necessarily below p: secea_gl_reduce128 without its
 * final subtraction, and the addition folds its carry (2^64 = 2^32 - 1 mod
 * p; r + g < 2p, so after the fold no second carry).  Fewer operations per
 * step than a canonical product and addition. */
static inline uint64_t gl_lazy_step(uint64_t a, uint64_t x, uint64_t g)
{
    const uint64_t eps = 0xFFFFFFFFULL;
    secea_u128 prod = (secea_u128)a * x;
    uint64_t lo = (uint64_t)prod, hi = (uint64_t)(prod >> 64);
    uint64_t hh = hi >> 32, hl = hi & eps;
    uint64_t t0 = lo - hh;
    t0 -= eps & (0 - (uint64_t)(lo < hh));
    uint64_t t1 = (hl << 32) - hl;
    uint64_t t2 = t0 + t1;
    t2 += eps & (0 - (uint64_t)(t2 < t1));
    uint64_t s = t2 + g;
    return s + (eps & (0 - (uint64_t)(s < g)));
}

#define HORNER_CHAINS 8
#define INL static inline __attribute__((always_inline))

/* How a Horner chain is reduced, chosen once per call from p. */
enum { H_GL, H_LAZY, H_SHOUP, H_ANY };

static inline uint64_t shoup_const(uint64_t x, uint64_t p)
{
    return p < ((uint64_t)1 << 63) ? (uint64_t)(((secea_u128)x << 64) / p) : 0;
}

/* One Horner step a x + g for a chain value a (any representative the kind
 * keeps) and a coefficient g < p; xs = shoup_const(x, p).
 *   H_GL    Goldilocks: any 64-bit representative (gl_lazy_step);
 *   H_LAZY  p < 2^62: Shoup without its last subtraction, [0, 3p);
 *   H_SHOUP p < 2^63: Shoup, canonical;  H_ANY: any p, canonical. */
INL uint64_t h_step(int kind, const secea_modctx *c, uint64_t a, uint64_t x, uint64_t xs, uint64_t g)
{
    uint64_t p = c->p;
    if (kind == H_GL) return gl_lazy_step(a, x, g);
    if (kind == H_LAZY) return lazy_shoup_mul(a, x, xs, p) + g;
    if (kind == H_SHOUP) return addmod_nb(shoup_mul(a, x, xs, p), g, p);
    return addmod_nb(secea_mulmod(c, a, x), g, p);
}

/* a chain value -> its canonical residue */
INL uint64_t h_finish(int kind, uint64_t p, uint64_t a)
{
    if (kind == H_GL) return a - (p & (0 - (uint64_t)(a >= p)));
    if (kind == H_LAZY) return reduce_3p(a, p);
    return a;
}

/* f(x) for one point with HORNER_CHAINS independent chains: f(x) =
 * sum_r x^r f_r(x^C), f_r holding the coefficients r, r + C, r + 2C, ...:
 * the chains in y = x^C run side by side, then C steps in x join them. */
INL uint64_t horner_split(int kind, const secea_modctx *c, const uint64_t *g, size_t lf, uint64_t x)
{
    uint64_t p = c->p, xs = shoup_const(x, p), acc = 0;
    if (lf < 4 * HORNER_CHAINS) {
        for (size_t i = lf; i-- > 0;) acc = h_step(kind, c, acc, x, xs, g[i]);
        return h_finish(kind, p, acc);
    }
    uint64_t y = x;                                   /* x^8 by three squarings */
    for (int s = 0; s < 3; s++) y = secea_mulmod_any(c, y, y);
    uint64_t ys = shoup_const(y, p), a[HORNER_CHAINS] = {0};
    size_t full = lf / HORNER_CHAINS;
    for (size_t r = 0; r < lf % HORNER_CHAINS; r++) a[r] = g[full * HORNER_CHAINS + r];
    for (size_t m = full; m-- > 0;) {
        const uint64_t *gm = g + m * HORNER_CHAINS;
        for (int r = 0; r < HORNER_CHAINS; r++) a[r] = h_step(kind, c, a[r], y, ys, gm[r]);
    }
    for (int r = HORNER_CHAINS; r-- > 0;) acc = h_step(kind, c, acc, x, xs, h_finish(kind, p, a[r]));
    return h_finish(kind, p, acc);
}

/* f at the nb <= 64 points xv: HORNER_CHAINS points per pass (independent
 * chains hide the latency of the modular product, which bounds one chain),
 * a point left over split into chains of its own.  Inlined once per kind,
 * so no step tests the kind. */
INL void horner_points(int kind, const secea_modctx *c, const uint64_t *g, size_t lf, const uint64_t *xv,
                       size_t nb, uint64_t *o)
{
    uint64_t xsh[64];                      /* Shoup constants of the points */
    for (size_t u = 0; u < nb; u++) xsh[u] = shoup_const(xv[u], c->p);
    size_t j = 0;
    for (; j + HORNER_CHAINS <= nb; j += HORNER_CHAINS) {
        uint64_t a[HORNER_CHAINS] = {0};
        for (size_t i = lf; i-- > 0;) {
            const uint64_t gi = g[i];
            for (int u = 0; u < HORNER_CHAINS; u++) a[u] = h_step(kind, c, a[u], xv[j + u], xsh[j + u], gi);
        }
        for (int u = 0; u < HORNER_CHAINS; u++) o[j + u] = h_finish(kind, c->p, a[u]);
    }
    for (; j < nb; j++) o[j] = horner_split(kind, c, g, lf, xv[j]);
}

void secea_fp_poly_eval_horner(uint64_t *out, const uint64_t *f, size_t lf, const uint64_t *x,
                               size_t npts, size_t x_stride, size_t count, uint64_t p)
{
    secea_modctx c;
    secea_modctx_init(&c, p);
    const int kind = p == SECEA_GOLDILOCKS ? H_GL : p < ((uint64_t)1 << 62) ? H_LAZY
                     : p < ((uint64_t)1 << 63) ? H_SHOUP : H_ANY;
    for (size_t t = 0; t < count; t++) {
        const uint64_t *g = f + t * lf, *xs = x + t * x_stride;
        for (size_t j0 = 0; j0 < npts; j0 += 64) {
            size_t nb = npts - j0 < 64 ? npts - j0 : 64;
            const uint64_t *xv = xs + j0;
            uint64_t *o = out + t * npts + j0;
            switch (kind) {                /* constant kinds: one specialised copy each */
            case H_GL: horner_points(H_GL, &c, g, lf, xv, nb, o); break;
            case H_LAZY: horner_points(H_LAZY, &c, g, lf, xv, nb, o); break;
            case H_SHOUP: horner_points(H_SHOUP, &c, g, lf, xv, nb, o); break;
            default: horner_points(H_ANY, &c, g, lf, xv, nb, o); break;
            }
        }
    }
}
#undef INL

static size_t trim(const uint64_t *a, size_t n)
{
    while (n && a[n - 1] == 0) n--;
    return n;
}

/* row -= q * other_row for one polynomial of a matrix row (lengths tracked). */
static void sub_mul(uint64_t *dst, size_t *ldst, const uint64_t *q, size_t lq, const uint64_t *src,
                    size_t lsrc, const secea_modctx *c)
{
    if (!lq || !lsrc) return;
    uint64_t p = c->p;
    size_t lnew = lq + lsrc - 1;
    for (size_t i = *ldst; i < lnew; i++) dst[i] = 0;
    for (size_t i = 0; i < lq; i++) {
        if (!q[i]) continue;
        uint64_t neg = p - q[i];
        for (size_t j = 0; j < lsrc; j++)
            dst[i + j] = secea_addmod(dst[i + j], secea_mulmod_any(c, neg, src[j]), p);
    }
    if (lnew > *ldst) *ldst = lnew;
    *ldst = trim(dst, *ldst);
}

int secea_fp_poly_hgcd_classical(uint64_t *r0, uint64_t *r1, uint64_t *m00, uint64_t *m01,
                                 uint64_t *m10, uint64_t *m11, size_t *lens, const uint64_t *a,
                                 size_t la, const uint64_t *b, size_t lb, size_t stop_deg, uint64_t p)
{
    secea_modctx c;
    secea_modctx_init(&c, p);
    /* six work polynomials of capacity la, plus a quotient buffer */
    uint64_t *buf = calloc(7 * la, sizeof(uint64_t));
    if (!buf) return SECEA_ENOMEM;
    uint64_t *A = buf, *B = buf + la, *M[2][2] = {{buf + 2 * la, buf + 3 * la}, {buf + 4 * la, buf + 5 * la}};
    uint64_t *q = buf + 6 * la;
    size_t lA = la, lB = trim(b, lb), lM[2][2] = {{1, 0}, {0, 1}};
    memcpy(A, a, la * sizeof(uint64_t));
    memcpy(B, b, lB * sizeof(uint64_t));
    M[0][0][0] = 1;
    M[1][1][0] = 1;
    while (lB > stop_deg) {          /* deg B = lB - 1 >= stop_deg */
        /* A = qB + R: A becomes R */
        size_t lq = lA - lB + 1;
        divrem_inplace(q, A, lA, B, lB, &c);
        size_t lR = trim(A, lB - 1);
        /* M row 0 -= q * row 1, then swap rows (new row1 = old row0 - q row1) */
        for (int col = 0; col < 2; col++)
            sub_mul(M[0][col], &lM[0][col], q, lq, M[1][col], lM[1][col], &c);
        for (int col = 0; col < 2; col++) {
            uint64_t *t = M[0][col]; M[0][col] = M[1][col]; M[1][col] = t;
            size_t tl = lM[0][col]; lM[0][col] = lM[1][col]; lM[1][col] = tl;
        }
        uint64_t *t = A; A = B; B = t;
        lA = lB;
        lB = lR;
    }
    memcpy(r0, A, lA * sizeof(uint64_t));
    memcpy(r1, B, lB * sizeof(uint64_t));
    memcpy(m00, M[0][0], lM[0][0] * sizeof(uint64_t));
    memcpy(m01, M[0][1], lM[0][1] * sizeof(uint64_t));
    memcpy(m10, M[1][0], lM[1][0] * sizeof(uint64_t));
    memcpy(m11, M[1][1], lM[1][1] * sizeof(uint64_t));
    lens[0] = lA; lens[1] = lB;
    lens[2] = lM[0][0]; lens[3] = lM[0][1]; lens[4] = lM[1][0]; lens[5] = lM[1][1];
    free(buf);
    return 0;
}

/* t (length 2d-1, destroyed) reduced mod monic g of degree d into r (length d). */
static void rem_monic(uint64_t *r, uint64_t *t, size_t lt, const uint64_t *g, size_t d,
                      const secea_modctx *c)
{
    uint64_t p = c->p;
    for (size_t i = lt; i-- > d;) {
        uint64_t coef = t[i];
        if (!coef) continue;
        uint64_t neg = p - coef;
        uint64_t *dst = t + i - d;
        for (size_t j = 0; j < d; j++)
            dst[j] = secea_addmod(dst[j], secea_mulmod_any(c, neg, g[j]), p);
    }
    memcpy(r, t, d * sizeof(uint64_t));
}

/* r = a * b mod g, all of length d (t: scratch of 2d-1). */
static void mulmod_small(uint64_t *r, const uint64_t *a, const uint64_t *b, uint64_t *t,
                         const uint64_t *g, size_t d, const secea_modctx *c)
{
    conv_exact(t, a, d, b, d, c);
    rem_monic(r, t, 2 * d - 1, g, d, c);
}

int secea_fp_poly_powmod_classical(uint64_t *out, const uint64_t *base, size_t lb, uint64_t e,
                                   const uint64_t *g, size_t lg, uint64_t p)
{
    secea_modctx c;
    secea_modctx_init(&c, p);
    size_t d = lg - 1;
    size_t lt = lb > 2 * d - 1 ? lb : 2 * d - 1;
    uint64_t *buf = calloc(2 * d + lt, sizeof(uint64_t));
    if (!buf) return SECEA_ENOMEM;
    uint64_t *b = buf, *r = buf + d, *t = buf + 2 * d;
    /* b = base mod g */
    memcpy(t, base, lb * sizeof(uint64_t));
    if (lb > d) rem_monic(b, t, lb, g, d, &c);
    else memcpy(b, base, lb * sizeof(uint64_t));
    memset(r, 0, d * sizeof(uint64_t));
    r[0] = d ? 1 % p : 0;
    if (d == 0) { free(buf); return 0; }
    int started = 0;
    for (int bit = 63; bit >= 0; bit--) {
        if (started) mulmod_small(r, r, r, t, g, d, &c);
        if ((e >> bit) & 1) {
            if (started) mulmod_small(r, r, b, t, g, d, &c);
            else { memcpy(r, b, d * sizeof(uint64_t)); started = 1; }
        }
    }
    memcpy(out, r, d * sizeof(uint64_t));
    free(buf);
    return 0;
}

/* ---- subproduct-tree sibling products (transform domain), rows of length N ----
 * pair_mul:  out[2i] = a[i] f[2i+1],  out[2i+1] = a[i] f[2i]
 *            (scaled remainder tree: one parent meets both children's siblings)
 * cross:     out[i] = t[2i] f[2i+1] + t[2i+1] f[2i]
 *            (tree interpolation: T_parent = T_left M_right + T_right M_left)
 * Row by row through the vectorised field kernels: no strided copies. */
void secea_fp_tree_pair_mul(uint64_t *out, const uint64_t *a, const uint64_t *f, size_t pairs, size_t N,
                            uint64_t p)
{
    for (size_t i = 0; i < pairs; i++) {
        secea_fp_mul(out + (2 * i) * N, a + i * N, f + (2 * i + 1) * N, N, p);
        secea_fp_mul(out + (2 * i + 1) * N, a + i * N, f + (2 * i) * N, N, p);
    }
}

int secea_fp_tree_cross(uint64_t *out, const uint64_t *t, const uint64_t *f, size_t pairs, size_t N, uint64_t p)
{
    uint64_t *tmp = malloc((N ? N : 1) * sizeof(uint64_t));
    if (!tmp) return SECEA_ENOMEM;
    for (size_t i = 0; i < pairs; i++) {
        secea_fp_mul(out + i * N, t + (2 * i) * N, f + (2 * i + 1) * N, N, p);
        secea_fp_mul(tmp, t + (2 * i + 1) * N, f + (2 * i) * N, N, p);
        secea_fp_add(out + i * N, out + i * N, tmp, N, p);
    }
    free(tmp);
    return 0;
}
