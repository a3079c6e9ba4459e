/* The hash's first ten AES-128 rounds (the whitening and rounds 1-9) on
 * ymm registers with VAES, shared by the tree walk (dpf_x86_v256.c,
 * y_expand_group) and the retrieval's fused leaf level (xor4r.c): each
 * register b[j] holds one node's seed sigma(s), broadcast to both lanes
 * from memory, and the lanes run under the two round-key schedules k_L and
 * k_R interleaved in kq[0..10] (lane 0 k_L, lane 1 k_R).  The caller does
 * the last round: its XOR with sigma(s) differs between the two users.
 * secea__v256_keys_lr builds that key table (once per call).
 * A macro, not an inline function: the callers compile to the same
 * instructions in the same order as with the loops written out (an inline
 * function moved GCC's schedule); x86 only, the caller's target must
 * include VAES. */
#ifndef SECEA_AES_V256_H
#define SECEA_AES_V256_H
#include <immintrin.h>

/* k[r] = (k_L round r, k_R round r): the lanes of SECEA_V256_ROUNDS9's kq */
SECEA_TARGET("avx2") static inline void secea__v256_keys_lr(__m256i k[11])
{
    for (int r = 0; r < 11; r++)
        k[r] = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)secea__dpf_rk[DPF_KR] + r),
                                _mm_loadu_si128((const __m128i *)secea__dpf_rk[DPF_KL] + r));
}

#define SECEA_V256_ROUNDS9(b, sg, m, kq) do {                                                      \
        __m256i k0_ = _mm256_loadu_si256(kq);                                                       \
        for (int j_ = 0; j_ < (m); j_++)                                                            \
            (b)[j_] = _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_load_si128((sg) + j_)), k0_); \
        for (int r_ = 1; r_ < 10; r_++) {                                                           \
            __m256i kr_ = _mm256_loadu_si256((kq) + r_);                                            \
            for (int j_ = 0; j_ < (m); j_++) (b)[j_] = _mm256_aesenc_epi128((b)[j_], kr_);          \
        }                                                                                           \
    } while (0)

#endif
