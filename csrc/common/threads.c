/* The one thread launcher of the C kernels (DPF evaluation, matrix products).
 *
 * secea__pool_run runs fn(ctx, u, scratch) for every work unit u < units on
 * up to `threads` POSIX threads, the calling thread included (the Python
 * caller has released the GIL).  Units are taken from an atomic counter, so
 * a thread that cannot be started costs speed, not work: the others, the
 * caller at least, take its units.  Each thread owns a 64-byte-aligned
 * scratch buffer of scratch_bytes (none if 0) for its whole run. */
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

typedef struct {
    secea__unit_fn fn;
    void *ctx;
    size_t units, scratch_bytes;
    size_t next;
    int status;
} pool_t;

int secea__pool_threads(int threads, size_t units)
{
    if (threads < 1) threads = 1;
    if (threads > SECEA_POOL_MAX_THREADS) threads = SECEA_POOL_MAX_THREADS;
    if ((size_t)threads > units) threads = units ? (int)units : 1;
    return threads;
}

static void *pool_worker(void *arg)
{
    pool_t *p = arg;
    void *scr = NULL;
    if (p->scratch_bytes) {
        scr = aligned_alloc(64, (p->scratch_bytes + 63) & ~(size_t)63);
        if (!scr) {
            __atomic_store_n(&p->status, -1, __ATOMIC_RELAXED);
            return NULL;
        }
    }
    for (;;) {
        size_t u = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (u >= p->units) break;
        int s = p->fn(p->ctx, u, scr);
        if (s) __atomic_store_n(&p->status, s, __ATOMIC_RELAXED);
    }
    free(scr);
    return NULL;
}

int secea__pool_run(secea__unit_fn fn, void *ctx, size_t units, size_t scratch_bytes, int threads)
{
    if (units == 0) return 0;
    pool_t p = {fn, ctx, units, scratch_bytes, 0, 0};
    threads = secea__pool_threads(threads, units);
    pthread_t tid[SECEA_POOL_MAX_THREADS];
    int started[SECEA_POOL_MAX_THREADS] = {0};
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&tid[t], NULL, pool_worker, &p) == 0;
    pool_worker(&p);
    for (int t = 1; t < threads; t++)
        if (started[t]) pthread_join(tid[t], NULL);
    return p.status;
}
