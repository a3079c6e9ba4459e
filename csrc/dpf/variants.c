/* The DPF family's fixed keys and variant tables: which table of
 * dpf_internal.h the evaluators use ("vaes", "vaes256", "aesni", "armce",
 * "portable"),
 * chosen by secea__dpf_choose into the one kernel table dispatch.c publishes
 * with one atomic store, or forced by name for tests; plus the fixed-key hash as
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

/* the variant of the kernel table in force (internal.h, "run-time CPU dispatch") */
const secea__dpf_impl *secea__dpf_impl_cur(void)
{
    secea__dpf_keys_init();
    return (const secea__dpf_impl *)secea__kernels_now()->dpf;
}

/* the variant named, if the features c allow it, else NULL */
static const secea__dpf_impl *dpf_by_name(const secea__cpu_features *c, const char *name)
{
    if (!strcmp(name, "portable")) return &secea__dpf_impl_portable;
#if SECEA_X86
    if (!strcmp(name, "aesni") && c->aes) return &secea__dpf_impl_aesni;
    if (!strcmp(name, "vaes") && c->vaes) return &secea__dpf_impl_vaes;
    if (!strcmp(name, "vaes256") && c->vaes256) return &secea__dpf_impl_vaes256;
#endif
#if SECEA_ARMCE
    if (!strcmp(name, "armce") && c->aes) return &secea__dpf_impl_armce;
#endif
    (void)c;
    return NULL;
}

/* The one place the DPF chooses its variant table, from the table's CPU
 * features (the probe under the ceiling); dispatch.c publishes the result. */
void secea__dpf_choose(secea__kernels *k)
{
    secea__dpf_keys_init();
    const secea__dpf_impl *p = &secea__dpf_impl_portable;
    static const char *const best[] = {"vaes", "vaes256", "aesni", "armce"};
    for (int i = 0; i < 4 && !k->portable && p == &secea__dpf_impl_portable; i++) {
        const secea__dpf_impl *q = dpf_by_name(&k->cpu, best[i]);
        if (q) p = q;
    }
    k->dpf = p;
}

int secea_dpf_select_variant(const char *name)
{
    secea__dpf_keys_init();
    const secea__dpf_impl *p = dpf_by_name(&secea__kernels_now()->cpu, name);
    if (!p) return -1;
    return secea__kernels_override(NULL, p);
}

const char *secea__dpf_variant(const secea__kernels *k)
{
    return ((const secea__dpf_impl *)k->dpf)->name;
}

/* the dot product's AVX-512 multiply-accumulate: the CPU's, under the ceiling */
int secea__dpf_mac512(void)
{
    const secea__kernels *k = secea__kernels_now();
    return !k->portable && k->cpu.avx512dq;
}

/* The AES ceiling of the DPF variant in force: VAES on ymm registers for
 * "vaes256" (twice the AES-NI ceiling of secea_aes_peak on such a CPU),
 * else secea_aes_peak (the AES variant's). */
uint64_t secea_dpf_aes_peak(size_t nblocks)
{
#if SECEA_X86
    if (secea__dpf_impl_cur() == &secea__dpf_impl_vaes256) return secea__dpf_aes_peak_v256(nblocks);
#endif
    return secea_aes_peak(nblocks);
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

