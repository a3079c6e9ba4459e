/* The DPF family's fixed keys and variant tables: which table of
 * dpf_internal.h the evaluators use ("vaes", "aesni", "armce", "portable"),
 * chosen once by secea__dpf_select (secea_dispatch_init) and published with
 * one atomic store, or forced by name for tests; plus the fixed-key hash as
 * a C entry point for known-answer tests. */
#include <pthread.h>
#include "dpf_tree.h"
#include "../prg/aes_internal.h"

/* ------------------------------------------------------------------ keys */

/* The public fixed AES-128 keys, nothing up the sleeve:
 * SHA-256(label)[0:16] for the labels "secea_fast.dpf.v1/prg-left",
 * "secea_fast.dpf.v1/prg-right" and "secea_fast.dpf.v1/convert"
 * (tests/test_dpf.py recomputes them). */
static const uint8_t DPF_FIXED_KEYS[3][16] = {
    {0x3b, 0xdb, 0x5f, 0x2a, 0x9f, 0x17, 0x49, 0x8a, 0x5a, 0x6e, 0x63, 0xf8, 0x1b, 0xe8, 0x91, 0xe7},
    {0x63, 0x48, 0x03, 0x7c, 0x9b, 0x25, 0x67, 0xe2, 0x69, 0x65, 0xf2, 0x3d, 0x6a, 0x5d, 0xcd, 0xac},
    {0x54, 0x10, 0xf3, 0x74, 0xa3, 0x13, 0x23, 0x29, 0x37, 0xb0, 0x56, 0xb9, 0x60, 0xdb, 0x3d, 0x47},
};

_Alignas(64) uint8_t secea__dpf_rk[3][176];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void keys_init_once(void)
{
    for (int i = 0; i < 3; i++) secea__aes_impl_portable.expand(secea__dpf_rk[i], DPF_FIXED_KEYS[i]);
}

void secea__dpf_keys_init(void)
{
    pthread_once(&keys_once, keys_init_once);
}

/* -------------------------------------------------------------- dispatch */

static const secea__dpf_impl *dpf_impl = &secea__dpf_impl_portable;
static int dpf_mac512 = 0;

const secea__dpf_impl *secea__dpf_impl_cur(void)
{
    secea__dpf_keys_init();
    return __atomic_load_n(&dpf_impl, __ATOMIC_ACQUIRE);
}

/* The one place the DPF chooses its variant table (and the dot product's
 * multiply-accumulate) from the CPU's allowed features. */
void secea__dpf_select(int force_portable)
{
    secea__dpf_keys_init();
    const secea__dpf_impl *p = &secea__dpf_impl_portable;
    int mac = 0;
#if SECEA_X86
    if (!force_portable) {
        if (secea__dpf_has_vaes()) p = &secea__dpf_impl_vaes;
        else if (secea__dpf_has_aesni()) p = &secea__dpf_impl_aesni;
        mac = secea__cpu_allowed("avx512dq");
    }
#elif SECEA_ARMCE
    if (!force_portable && secea__dpf_has_armce()) p = &secea__dpf_impl_armce;
#else
    (void)force_portable;
#endif
    __atomic_store_n(&dpf_mac512, mac, __ATOMIC_RELEASE);
    __atomic_store_n(&dpf_impl, p, __ATOMIC_RELEASE);
}

int secea_dpf_select_variant(const char *name)
{
    const secea__dpf_impl *p = NULL;
    secea__dpf_keys_init();
    if (!strcmp(name, "portable")) p = &secea__dpf_impl_portable;
#if SECEA_X86
    else if (!strcmp(name, "aesni") && secea__dpf_has_aesni()) p = &secea__dpf_impl_aesni;
    else if (!strcmp(name, "vaes") && secea__dpf_has_vaes()) p = &secea__dpf_impl_vaes;
#endif
#if SECEA_ARMCE
    else if (!strcmp(name, "armce") && secea__dpf_has_armce()) p = &secea__dpf_impl_armce;
#endif
    if (!p) return -1;
    __atomic_store_n(&dpf_impl, p, __ATOMIC_RELEASE);
    return 0;
}

const char *secea__dpf_variant(void)
{
    return secea__dpf_impl_cur()->name;
}

int secea__dpf_mac512(void)
{
    return __atomic_load_n(&dpf_mac512, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------ hash (test) */

void secea_dpf_hash(uint8_t *out, const uint8_t *in, size_t nblocks, int which)
{
    const secea__dpf_impl *im = secea__dpf_impl_cur();
    blk tmp[64];
    while (nblocks) {
        size_t m = nblocks < 64 ? nblocks : 64;
        memcpy(tmp, in, 16 * m);
        im->hash(tmp, tmp, m, which, 0);
        memcpy(out, tmp, 16 * m);
        in += 16 * m;
        out += 16 * m;
        nblocks -= m;
    }
}

