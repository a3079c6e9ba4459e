/* Radix-2/4 transform body for generic primes, included twice by
 * ntt_avx512.c: with R2V_MUL = s_mul (Shoup via vpmuludq/vpmullq, p < 2^63)
 * and with R2V_MUL = s_mul52 (Shoup in 52-bit IFMA arithmetic, p < 2^51).
 * Expects R2V(name) (suffixing), R2V_ATTR and R2V_MUL to be defined. */

/* DIF levels h = hmax .. hmin (>= 8) on blocks of 2h of a[0, len) */
R2V_ATTR static void R2V(fwd_levels)(const secea_ntt_plan *pl, uint64_t *a, size_t len, size_t hmax, size_t hmin)
{
    const V P = _mm512_set1_epi64((long long)pl->p);
    const uint64_t *tw = pl->fw, *tws = pl->fws;
    for (size_t h = hmax; h >= hmin; h /= 2)
        for (size_t b = 0; b < len; b += 2 * h) {
            uint64_t *x = a + b, *y = a + b + h;
            for (size_t j = 0; j < h; j += 8) {
                V u = v_load(x + j), v = v_load(y + j);
                v_store(x + j, s_add(u, v, P));
                V d = _mm512_add_epi64(_mm512_sub_epi64(u, v), P);      /* (0, 2p) */
                v_store(y + j, R2V_MUL(d, v_load(tw + h + j), v_load(tws + h + j), P));
            }
        }
}

/* DIT levels h = hmin .. hmax (>= 8); h = n/2 uses the n^-1-scaled
 * twiddles and scales the upper input */
R2V_ATTR static void R2V(inv_levels)(const secea_ntt_plan *pl, uint64_t *a, size_t len, size_t hmin, size_t hmax)
{
    const V P = _mm512_set1_epi64((long long)pl->p);
    const uint64_t *tw = pl->iw, *tws = pl->iws;
    const V NI = _mm512_set1_epi64((long long)pl->ninv), NIS = _mm512_set1_epi64((long long)pl->ninv_s);
    for (size_t h = hmin; h <= hmax; h *= 2) {
        const int last = h == pl->n / 2;
        for (size_t b = 0; b < len; b += 2 * h) {
            uint64_t *x = a + b, *y = a + b + h;
            for (size_t j = 0; j < h; j += 8) {
                V u = v_load(x + j);
                if (last) u = R2V_MUL(u, NI, NIS, P);
                V v = R2V_MUL(v_load(y + j), v_load(tw + h + j), v_load(tws + h + j), P);
                v_store(x + j, s_add(u, v, P));
                v_store(y + j, s_sub(u, v, P));
            }
        }
    }
}

/* levels h = 4, 2, 1 on a[0, len), len a multiple of 64 */
R2V_ATTR static void R2V(last3)(const secea_ntt_plan *pl, uint64_t *a, size_t len, int inverse)
{
    const V P = _mm512_set1_epi64((long long)pl->p);
    const uint64_t *tw = inverse ? pl->iw : pl->fw, *tws = inverse ? pl->iws : pl->fws;
    V W[8], WS[8];               /* W[h + i] = broadcast tw[h + i], h = 2, 4 */
    for (unsigned i = 2; i < 8; i++) {
        W[i] = _mm512_set1_epi64((long long)tw[i]);
        WS[i] = _mm512_set1_epi64((long long)tws[i]);
    }
    for (size_t g = 0; g < len; g += 64) {
        V x[8];
#pragma GCC unroll 8
        for (unsigned i = 0; i < 8; i++) x[i] = v_load(a + g + 8 * i);
        transpose8(x);
        if (!inverse) {
#pragma GCC unroll 4
            for (unsigned h = 4; h >= 1; h /= 2)
#pragma GCC unroll 4
                for (unsigned b = 0; b < 8; b += 2 * h)
#pragma GCC unroll 4
                    for (unsigned i = 0; i < h; i++) {
                        V u = x[b + i], v = x[b + i + h];
                        x[b + i] = s_add(u, v, P);
                        x[b + i + h] = i ? R2V_MUL(_mm512_add_epi64(_mm512_sub_epi64(u, v), P), W[h + i], WS[h + i], P)
                                         : s_sub(u, v, P);
                    }
        } else {
#pragma GCC unroll 4
            for (unsigned h = 1; h <= 4; h *= 2)
#pragma GCC unroll 4
                for (unsigned b = 0; b < 8; b += 2 * h)
#pragma GCC unroll 4
                    for (unsigned i = 0; i < h; i++) {
                        V u = x[b + i], v = x[b + i + h];
                        if (i) v = R2V_MUL(v, W[h + i], WS[h + i], P);
                        x[b + i] = s_add(u, v, P);
                        x[b + i + h] = s_sub(u, v, P);
                    }
        }
        transpose8(x);
#pragma GCC unroll 8
        for (unsigned i = 0; i < 8; i++) v_store(a + g + 8 * i, x[i]);
    }
}

/* two levels (h = 2Q, Q) in one sweep over a block of 4Q (Q >= 8): half the
 * memory traffic of two radix-2 sweeps on blocks that do not fit in cache */
R2V_ATTR static void R2V(r4_fwd)(const secea_ntt_plan *pl, uint64_t *a, size_t Q)
{
    const V P = _mm512_set1_epi64((long long)pl->p);
    const uint64_t *tw = pl->fw, *tws = pl->fws;
    uint64_t *a0 = a, *a1 = a + Q, *a2 = a + 2 * Q, *a3 = a + 3 * Q;
    for (size_t j = 0; j < Q; j += 8) {
        V x0 = v_load(a0 + j), x1 = v_load(a1 + j), x2 = v_load(a2 + j), x3 = v_load(a3 + j);
        V y0 = s_add(x0, x2, P), y1 = s_add(x1, x3, P);
        V y2 = R2V_MUL(_mm512_add_epi64(_mm512_sub_epi64(x0, x2), P), v_load(tw + 2 * Q + j), v_load(tws + 2 * Q + j), P);
        V y3 = R2V_MUL(_mm512_add_epi64(_mm512_sub_epi64(x1, x3), P), v_load(tw + 3 * Q + j), v_load(tws + 3 * Q + j), P);
        V w = v_load(tw + Q + j), ws = v_load(tws + Q + j);
        v_store(a0 + j, s_add(y0, y1, P));
        v_store(a1 + j, R2V_MUL(_mm512_add_epi64(_mm512_sub_epi64(y0, y1), P), w, ws, P));
        v_store(a2 + j, s_add(y2, y3, P));
        v_store(a3 + j, R2V_MUL(_mm512_add_epi64(_mm512_sub_epi64(y2, y3), P), w, ws, P));
    }
}

R2V_ATTR static void R2V(r4_inv)(const secea_ntt_plan *pl, uint64_t *a, size_t Q)
{
    const V P = _mm512_set1_epi64((long long)pl->p);
    const uint64_t *tw = pl->iw, *tws = pl->iws;
    const int last = 2 * Q == pl->n / 2;
    const V NI = _mm512_set1_epi64((long long)pl->ninv), NIS = _mm512_set1_epi64((long long)pl->ninv_s);
    uint64_t *a0 = a, *a1 = a + Q, *a2 = a + 2 * Q, *a3 = a + 3 * Q;
    for (size_t j = 0; j < Q; j += 8) {
        V w = v_load(tw + Q + j), ws = v_load(tws + Q + j);
        V x0 = v_load(a0 + j), x1 = R2V_MUL(v_load(a1 + j), w, ws, P);
        V x2 = v_load(a2 + j), x3 = R2V_MUL(v_load(a3 + j), w, ws, P);
        V y0 = s_add(x0, x1, P), y1 = s_sub(x0, x1, P), y2 = s_add(x2, x3, P), y3 = s_sub(x2, x3, P);
        if (last) { y0 = R2V_MUL(y0, NI, NIS, P); y1 = R2V_MUL(y1, NI, NIS, P); }
        y2 = R2V_MUL(y2, v_load(tw + 2 * Q + j), v_load(tws + 2 * Q + j), P);
        y3 = R2V_MUL(y3, v_load(tw + 3 * Q + j), v_load(tws + 3 * Q + j), P);
        v_store(a0 + j, s_add(y0, y2, P));
        v_store(a2 + j, s_sub(y0, y2, P));
        v_store(a1 + j, s_add(y1, y3, P));
        v_store(a3 + j, s_sub(y1, y3, P));
    }
}

static void R2V(fwd_rec)(const secea_ntt_plan *pl, uint64_t *a, size_t len)
{
    if (len <= R2V_BLOCK) {
        R2V(fwd_levels)(pl, a, len, len / 2, 8);
        R2V(last3)(pl, a, len, 0);
        return;
    }
    if (len / 4 >= R2V_BLOCK / 2) {
        R2V(r4_fwd)(pl, a, len / 4);
        for (unsigned i = 0; i < 4; i++) R2V(fwd_rec)(pl, a + i * (len / 4), len / 4);
        return;
    }
    R2V(fwd_levels)(pl, a, len, len / 2, len / 2);
    R2V(fwd_rec)(pl, a, len / 2);
    R2V(fwd_rec)(pl, a + len / 2, len / 2);
}

static void R2V(inv_rec)(const secea_ntt_plan *pl, uint64_t *a, size_t len)
{
    if (len <= R2V_BLOCK) {
        R2V(last3)(pl, a, len, 1);
        R2V(inv_levels)(pl, a, len, 8, len / 2);
        return;
    }
    if (len / 4 >= R2V_BLOCK / 2) {
        for (unsigned i = 0; i < 4; i++) R2V(inv_rec)(pl, a + i * (len / 4), len / 4);
        R2V(r4_inv)(pl, a, len / 4);
        return;
    }
    R2V(inv_rec)(pl, a, len / 2);
    R2V(inv_rec)(pl, a + len / 2, len / 2);
    R2V(inv_levels)(pl, a, len, len / 2, len / 2);
}


