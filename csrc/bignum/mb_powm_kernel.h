/* The lane-parallel exponentiation of mb8_powm.c, written once for any
 * vector width: included by mb8_powm.c once per width with
 *   V, VMASK, MB_W_LANES, ATTR, MB_FN(name) and the V* intrinsic macros
 * defined (8 lanes on zmm registers; 4 lanes on ymm registers with
 * AVX-512VL, which a pair of exponentiations, one decryption, fills without
 * paying for eight lanes).  See mb8_powm.c for the arithmetic and its bounds.
 * No include guard: it is meant to be included more than once. */

/* r = the L-limb value in acc (64-bit slots) as 52-bit limbs; the value is
 * below 2^(52 L), so the last carry is 0. */
ATTR static inline void MB_FN(normalise)(V *r, const V *acc, size_t L)
{
    const V mask = VSET1((long long)MASK52);
    V carry = VZERO();
    for (size_t j = 0; j < L; j++) {
        V x = VADD(acc[j], carry);
        r[j] = VAND(x, mask);
        carry = VSRLI(x, 52);
    }
}

/* x = x - m in the lanes where x >= m (x <= m here, so only x = m becomes
 * 0): the subtraction is always computed and kept by a lane mask. */
ATTR static void MB_FN(canonical)(V *x, const V *m, size_t L)
{
    const V mask = VSET1((long long)MASK52);
    V borrow = VZERO();
    V d[MB_MAX_LIMBS];
    for (size_t j = 0; j < L; j++) {
        V t = VSUB(VSUB(x[j], m[j]), borrow);
        borrow = VSRLI(t, 63);                /* limbs < 2^52: negative = top bit */
        d[j] = VAND(t, mask);
    }
    const VMASK keep = VCMPEQ(borrow, VZERO());
    for (size_t j = 0; j < L; j++) x[j] = VMASKMOV(x[j], keep, d[j]);
}

/* r = a b R^-1 (mod m), r < 2m for a, b < 2m.  acc: 2L scratch vectors.
 * r may alias a or b. */
ATTR static void MB_FN(amm)(V *r, const V *a, const V *b, const V *m, V k0, size_t L, V *acc)
{
    const V mask = VSET1((long long)MASK52);
    const V zero = VZERO();
    for (size_t j = 0; j < 2 * L; j++) acc[j] = zero;
    for (size_t i = 0; i < L; i++) {
        const V bi = b[i];
        V *t = acc + i;
        /* the reduction digit needs slot 0 after a_0 b_i */
        V t0 = VMADDLO(t[0], a[0], bi);
        const V y = VAND(VMADDLO(zero, t0, k0), mask);
        V cur = VMADDLO(t0, m[0], y);
        V nxt = VMADDHI(VMADDHI(t[1], a[0], bi), m[0], y);
        /* slot 0 is now 0 mod 2^52: carry it into slot 1 */
        nxt = VADD(nxt, VSRLI(cur, 52));
        for (size_t j = 1; j < L; j++) {
            V s = VMADDLO(VMADDLO(nxt, a[j], bi), m[j], y);
            nxt = VMADDHI(VMADDHI(t[j + 1], a[j], bi), m[j], y);
            t[j] = s;
        }
        t[L] = nxt;
    }
    MB_FN(normalise)(r, acc + L, L);
}

/* r = a^2 R^-1 (mod m), r < 2m for a < 2m: the full square first (each cross
 * product once, the accumulators doubled, then the diagonal), then L
 * reduction digits: 3 L^2 IFMA instead of 4 L^2.  Slots stay below 2^62
 * (2L cross terms doubled, the diagonal, 2L reduction terms, each < 2^52,
 * L <= 128).  r may alias a. */
ATTR static void MB_FN(ams)(V *r, const V *a, const V *m, V k0, size_t L, V *acc)
{
    const V mask = VSET1((long long)MASK52);
    const V zero = VZERO();
    for (size_t j = 0; j < 2 * L; j++) acc[j] = zero;
    for (size_t i = 0; i + 1 < L; i++) {
        const V ai = a[i];
        V *t = acc + 2 * i + 1;
        V nxt = t[0];
        for (size_t j = i + 1; j < L; j++, t++) {
            V s = VMADDLO(nxt, ai, a[j]);
            nxt = VMADDHI(t[1], ai, a[j]);
            t[0] = s;
        }
        t[0] = nxt;
    }
    for (size_t i = 0; i < L; i++) {
        acc[2 * i] = VMADDLO(VSLLI(acc[2 * i], 1), a[i], a[i]);
        acc[2 * i + 1] = VMADDHI(VSLLI(acc[2 * i + 1], 1), a[i], a[i]);
    }
    for (size_t i = 0; i < L; i++) {
        V *t = acc + i;
        const V y = VAND(VMADDLO(zero, t[0], k0), mask);
        V cur = VMADDLO(t[0], m[0], y);
        V nxt = VADD(VMADDHI(t[1], m[0], y), VSRLI(cur, 52));
        for (size_t j = 1; j < L; j++) {
            V s = VMADDLO(nxt, m[j], y);
            nxt = VMADDHI(t[j + 1], m[j], y);
            t[j] = s;
        }
        t[L] = nxt;
    }
    MB_FN(normalise)(r, acc + L, L);
}

/* The W-bit digit of each lane's exponent at bit position pos (bits beyond
 * ebits read as 0). exp: ewords words per lane, word-major. */
static inline void MB_FN(digits_at)(uint64_t out[MB_W_LANES], const uint64_t *exp, size_t ewords, size_t pos,
                             unsigned W)
{
    size_t w = pos / 64, s = pos % 64;
    for (int l = 0; l < MB_W_LANES; l++) {
        uint64_t lo = w < ewords ? exp[w * MB_W_LANES + l] >> s : 0;
        uint64_t hi = (s && w + 1 < ewords) ? exp[(w + 1) * MB_W_LANES + l] << (64 - s) : 0;
        out[l] = (lo | hi) & ((1u << W) - 1);
    }
}

/* sel = table[d_lane] in every lane, reading every entry. */
ATTR static void MB_FN(ct_select)(V *sel, const V *table, const uint64_t d[MB_W_LANES], size_t L, unsigned W)
{
    const V dv = VLOADU((const void *)d);
    for (size_t j = 0; j < L; j++) sel[j] = VZERO();
    for (unsigned k = 0; k < (1u << W); k++) {
        const VMASK hit = VCMPEQ(dv, VSET1(k));
        const V *e = table + (size_t)k * L;
        for (size_t j = 0; j < L; j++) sel[j] = VMASKMOV(sel[j], hit, e[j]);
    }
}

ATTR static void MB_FN(powm_ifma)(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                           const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L,
                           unsigned W, V *mem)
{
    V *m = mem, *rrv = m + L, *acc = rrv + L, *x = acc + 2 * L, *sel = x + L, *one = sel + L,
      *table = one + L;                                   /* 2^W entries of L vectors */
    const V k0v = VLOADU((const void *)k0);
    memcpy(m, mod, L * sizeof(V));
    memcpy(rrv, rr, L * sizeof(V));
    memcpy(x, base, L * sizeof(V));
    for (size_t j = 0; j < L; j++) one[j] = VZERO();
    one[0] = VSET1(1);
    MB_FN(amm)(table, rrv, one, m, k0v, L, acc);                 /* R mod m (Montgomery 1) */
    MB_FN(amm)(table + L, x, rrv, m, k0v, L, acc);               /* base R mod m */
    for (unsigned k = 2; k < (1u << W); k++)
        MB_FN(amm)(table + (size_t)k * L, table + (size_t)(k - 1) * L, table + L, m, k0v, L, acc);
    size_t nwin = (ebits + W - 1) / W;
    uint64_t d[MB_W_LANES];
    if (nwin == 0) {
        memcpy(x, table, L * sizeof(V));
    } else {
        MB_FN(digits_at)(d, exp, ewords, (nwin - 1) * W, W);
        MB_FN(ct_select)(x, table, d, L, W);
        for (size_t w = nwin - 1; w-- > 0;) {
            for (unsigned s = 0; s < W; s++) MB_FN(ams)(x, x, m, k0v, L, acc);
            MB_FN(digits_at)(d, exp, ewords, w * W, W);
            MB_FN(ct_select)(sel, table, d, L, W);
            MB_FN(amm)(x, x, sel, m, k0v, L, acc);
        }
    }
    MB_FN(amm)(x, x, one, m, k0v, L, acc);                       /* out of Montgomery form: <= m */
    MB_FN(canonical)(x, m, L);
    memcpy(out, x, L * sizeof(V));
    secea_wipe(d, sizeof d);                              /* digits of secret exponents */
}
