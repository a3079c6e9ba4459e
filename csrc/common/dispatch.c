/* Runtime CPU dispatch: the package is compiled with portable baseline flags;
 * hot kernels carry __attribute__((target(...))) variants.  The CPU is
 * probed here, once (__builtin_cpu_supports, getauxval, sysctl), and nowhere
 * else; the families choose from that probe under the ceiling, into one
 * table published atomically (internal.h, "run-time CPU dispatch";
 * docs/ARCHITECTURE.md, "Run-time CPU dispatch"). */
#include <pthread.h>
#include <string.h>
#include "secea.h"
#include "internal.h"

#if SECEA_ARM64 && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)      /* the arm64 Linux ABI's bits (asm/hwcap.h) */
#endif
#ifndef HWCAP_AES
#define HWCAP_AES (1UL << 3)
#endif
#ifndef HWCAP_PMULL
#define HWCAP_PMULL (1UL << 4)
#endif
#elif SECEA_ARM64 && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#if SECEA_ARM64
/* ARM features by name: "asimd" (NEON), "aes" (ARMv8 Crypto Extensions
 * AESE/AESD/AESMC/AESIMC), "pmull".  On an OS without a query here, only
 * what the compiler's baseline promises. */
static int arm_supports(const char *f)
{
#if defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP);
    if (!strcmp(f, "asimd")) return (hw & HWCAP_ASIMD) ? 1 : 0;
    if (!strcmp(f, "aes")) return (hw & HWCAP_AES) && (hw & HWCAP_ASIMD) ? 1 : 0;
    if (!strcmp(f, "pmull")) return (hw & HWCAP_PMULL) ? 1 : 0;
#elif defined(__APPLE__)
    const char *key = !strcmp(f, "aes") ? "hw.optional.arm.FEAT_AES"
                      : !strcmp(f, "pmull") ? "hw.optional.arm.FEAT_PMULL"
                      : !strcmp(f, "asimd") ? "hw.optional.AdvSIMD" : NULL;
    if (key) {
        int v = 0;
        size_t len = sizeof v;
        if (sysctlbyname(key, &v, &len, NULL, 0) == 0) return v ? 1 : 0;
        /* older macOS without the FEAT_ names: every Apple arm64 core has
         * AES, PMULL and AdvSIMD, and the compiler says so */
#if defined(__ARM_FEATURE_AES) || defined(__ARM_FEATURE_CRYPTO)
        return 1;
#endif
    }
#else
#if defined(__ARM_NEON)
    if (!strcmp(f, "asimd")) return 1;
#endif
#if defined(__ARM_FEATURE_AES) || defined(__ARM_FEATURE_CRYPTO)
    if (!strcmp(f, "aes") || !strcmp(f, "pmull")) return 1;
#endif
#endif
    return 0;
}
#endif

/* What the CPU has, probed once (the only place that asks the CPU). */
static secea__cpu_features probed;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void)
{
    secea__cpu_features f;
    memset(&f, 0, sizeof f);
#if SECEA_X86
    __builtin_cpu_init();
    f.aes = __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
    f.avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    f.bmi2 = __builtin_cpu_supports("bmi2") ? 1 : 0;
    f.avx512f = __builtin_cpu_supports("avx512f") ? 1 : 0;
    f.avx512dq = f.avx512f && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    f.avx512ifma = f.avx512f && __builtin_cpu_supports("avx512ifma") && __builtin_cpu_supports("avx512vl");
    f.vaes = f.aes && f.avx2 && f.avx512dq && __builtin_cpu_supports("vaes") &&
             __builtin_cpu_supports("avx512bw");
    f.vaes256 = f.aes && f.avx2 && __builtin_cpu_supports("vaes");
#elif SECEA_ARM64
    f.asimd = (unsigned char)arm_supports("asimd");
    f.aes = (unsigned char)arm_supports("aes");
    f.pmull = (unsigned char)arm_supports("pmull");
#endif
    probed = f;
}

static const secea__cpu_features *cpu_probed(void)
{
    pthread_once(&probe_once, probe);
    return &probed;
}

int secea_cpu_supports(const char *f)
{
    const secea__cpu_features *c = cpu_probed();
    if (!strcmp(f, "aes")) return c->aes;
    if (!strcmp(f, "vaes")) return c->vaes;
    if (!strcmp(f, "vaes256")) return c->vaes256;
    if (!strcmp(f, "avx2")) return c->avx2;
    if (!strcmp(f, "bmi2")) return c->bmi2;
    if (!strcmp(f, "avx512f")) return c->avx512f;
    if (!strcmp(f, "avx512dq")) return c->avx512dq;
    if (!strcmp(f, "avx512ifma")) return c->avx512ifma;
    if (!strcmp(f, "asimd")) return c->asimd;
    if (!strcmp(f, "pmull")) return c->pmull;
    return 0;
}

/* ---- the kernel tables ----
 * A table is never written after it is published, so it cannot be reused
 * for another choice: each distinct (level, AES variant, DPF variant) gets
 * its own slot, built once under the lock, published by one atomic store.
 * Three levels, at most four AES and five DPF variants: 60 slots at most. */
#define N_TABLES 60
static secea__kernels tables[N_TABLES];
static int n_tables;
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic(const secea__kernels *) secea__kernels_cur = NULL;

/* the table equal to *want (caller holds the lock); NULL if the slots ran out */
static const secea__kernels *intern(const secea__kernels *want)
{
    for (int i = 0; i < n_tables; i++)
        if (tables[i].level == want->level && tables[i].aes == want->aes && tables[i].dpf == want->dpf)
            return &tables[i];
    if (n_tables == N_TABLES) return NULL;
    tables[n_tables] = *want;
    return &tables[n_tables++];
}

/* the default choice of every family at a level (caller holds the lock) */
static void build(secea__kernels *k, int level)
{
    memset(k, 0, sizeof *k);
    k->level = (unsigned char)(level == 1 || level == 2 ? level : 0);
    k->cpu = *cpu_probed();
    k->portable = k->level == 1;
    if (k->level == 2) {                   /* the ceiling: what an AVX2-only x86 has */
        k->cpu.vaes = k->cpu.vaes256 = 0;
        k->cpu.avx512f = k->cpu.avx512dq = k->cpu.avx512ifma = 0;
    }
    secea__field_choose(k);
    secea__ntt_choose(k);
    secea__matmul_choose(k);
    secea__aes_choose(k);
    secea__dpf_choose(k);
    secea__bignum_choose(k);
}

/* level 0: auto; 1: the portable C everywhere; 2: at most AVX2 / AES-NI */
void secea_dispatch_init(int level)
{
    secea__kernels k;
    pthread_mutex_lock(&tables_lock);
    build(&k, level);
    const secea__kernels *t = intern(&k);
    if (t) atomic_store_explicit(&secea__kernels_cur, t, memory_order_release);
    pthread_mutex_unlock(&tables_lock);
}

const secea__kernels *secea__kernels_slow(void)
{
    const secea__kernels *k = atomic_load_explicit(&secea__kernels_cur, memory_order_acquire);
    if (k) return k;
    pthread_mutex_lock(&tables_lock);
    k = atomic_load_explicit(&secea__kernels_cur, memory_order_acquire);
    if (!k) {
        secea__kernels b;
        build(&b, 0);
        k = intern(&b);                    /* the first table: a slot is free */
        atomic_store_explicit(&secea__kernels_cur, k, memory_order_release);
    }
    pthread_mutex_unlock(&tables_lock);
    return k;
}

int secea__kernels_override(const struct secea__aes_impl *aes, const void *dpf)
{
    (void)secea__kernels_now();            /* a table exists (kernels_slow takes the lock) */
    int rc = 0;
    pthread_mutex_lock(&tables_lock);
    /* the table current under the lock: a secea_dispatch_init that ran in
     * between is not undone by an override built on the table before it */
    secea__kernels k = *atomic_load_explicit(&secea__kernels_cur, memory_order_acquire);
    if (aes) k.aes = aes;
    if (dpf) k.dpf = dpf;
    const secea__kernels *t = intern(&k);
    if (t) atomic_store_explicit(&secea__kernels_cur, t, memory_order_release);
    else rc = -1;
    pthread_mutex_unlock(&tables_lock);
    return rc;
}

const char *secea_kernel_variant(const char *kernel)
{
    const secea__kernels *k = secea__kernels_now();
    if (!strcmp(kernel, "field")) return secea__field_variant(k);
    if (!strcmp(kernel, "matmul")) return secea__matmul_variant(k);
    if (!strcmp(kernel, "aes")) return secea__aes_variant(k);
    if (!strcmp(kernel, "bignum")) return secea__bignum_variant(k);
    if (!strcmp(kernel, "ntt")) return secea__ntt_variant(k);
    if (!strcmp(kernel, "dpf")) return secea__dpf_variant(k);
    return NULL;
}
