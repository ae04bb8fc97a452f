/* threading.h - threads over independent work items, with a minimum grain
 * so small tensors stay on one thread. Every kernel runs its threads through
 * ap_parallel / ap_parallel_for (avgpool's own pool, threading.c: it
 * survives fork(), which libgomp's does not). Builds without OpenMP run
 * everything on the calling thread; OpenMP still gives the default thread
 * count (ap_max_threads: OMP_NUM_THREADS, threadpoolctl). The public thread
 * queries (ap_openmp_enabled, ap_max_threads) are in threading.c. */
#ifndef AP_THREADING_H
#define AP_THREADING_H

#include <stdint.h>

#include "plan.h"

/* Elements of input per thread below which more threads do not pay. The
 * sanitizer build of the C tests (scripts/test_c.sh) sets this and
 * AP_MIN_CHUNK_ELEMS to 8, so that their small calls split between threads
 * too, and checks their bits against one thread. */
#ifndef AP_MIN_ELEMS_PER_THREAD
#define AP_MIN_ELEMS_PER_THREAD 16384
#endif

/* Threads for work_elems elements of input: one per AP_MIN_ELEMS_PER_THREAD,
 * at least 1, at most `most`. */
static inline int ap_threads_within(int most, int64_t work_elems) {
    int64_t t = work_elems / AP_MIN_ELEMS_PER_THREAD;
    if (t < 1) t = 1;
    return t < most ? (int)t : most;
}

/* nt, but no more than the call's work items: a thread without one would still be woken, and
 * set up a path's buffers, while the call waits for it (box 7 x 7 on 1x28x28x256 channels
 * last, one item: 152 us on 1 thread, 191 on 2). */
static inline int ap_threads_cap(int nt, int64_t items) {
    return items > 0 && items < nt ? (int)items : nt;
}

/* The threads of a plan's call that splits work_elems elements of input into `items` work
 * items (rows, planes, bands): ap_threads_within the plan's count, capped at the items. */
static inline int ap_threads_for(const ap_plan *plan, int64_t items, int64_t work_elems) {
    return ap_threads_cap(ap_threads_within(plan->num_threads, work_elems), items);
}

/* Elements of input that a chunk carries at least, up to 8 chunks per
 * thread. Each take of a chunk moves the shared counter's cache line between
 * cores (a few hundred ns at 2 threads): 3x3 s1 on 1x35x35x192 channels last,
 * 2 threads, Intel, took 27.7 us in 8 chunks per thread, 25.6 in one (each
 * thread alone on its half: 25). */
#ifndef AP_MIN_CHUNK_ELEMS
#define AP_MIN_CHUNK_ELEMS 65536
#endif

/* Work sharing by chunks taken from a shared counter: a thread that the OS
 * deschedules (a shared or busy machine) does not hold up the others, who
 * take its share. `next` is shared by the team and starts at 0. n items
 * holding work_elems elements of input in all go in 1 to 8 chunks per
 * thread, AP_MIN_CHUNK_ELEMS each at least. */
static inline int64_t ap_chunk_size(int64_t n, int nthreads, int64_t work_elems) {
    int64_t per_thread = work_elems / ((int64_t)nthreads * AP_MIN_CHUNK_ELEMS);
    per_thread = per_thread < 1 ? 1 : per_thread > 8 ? 8 : per_thread;
    const int64_t c = n / ((int64_t)nthreads * per_thread);
    return c < 1 ? 1 : c;
}

/* The calling thread's place in the team running the current job (threading.c
 * sets them: 0 for the caller, 1.. for the helpers; the team's size). */
extern _Thread_local int ap_team_slot, ap_team_size;

/* The chunks are split into up to AP_HOME_BLOCKS home blocks, one per team
 * member: each thread takes the chunks of its own block first, in order, then
 * those left in the others. The same member gets the same block on every
 * call, so an input that fits in the cores' private caches stays in the
 * cache of the core that read it last time (with one shared counter, which
 * thread got which chunk changed from call to call: 1x64x112x112 channels
 * last at 2 threads, Intel, 44 us against TFLite's 32). `next` holds one
 * 16-bit count of chunks taken per block; more chunks than those counts hold
 * (thread counts in the thousands) take one plain counter instead. */
enum { AP_HOME_BLOCKS = 4, AP_HOME_CHUNKS_MAX = 0x7000 };

static inline int ap_next_chunk(int64_t *next, int64_t n, int64_t chunk, int64_t *lo,
                                int64_t *hi) {
    const int64_t chunks = (n + chunk - 1) / chunk;
    int blocks = ap_team_size < AP_HOME_BLOCKS ? ap_team_size : AP_HOME_BLOCKS;
    if (blocks < 1 || chunks > AP_HOME_CHUNKS_MAX) blocks = 1;
    if (chunks < blocks) blocks = (int)chunks;
    if (blocks <= 1) {
        const int64_t start = __atomic_fetch_add(next, chunk, __ATOMIC_RELAXED);
        if (start >= n) return 0;
        *lo = start;
        *hi = n - start < chunk ? n : start + chunk;
        return 1;
    }
    const int me = ap_team_slot % blocks;
    for (int j = 0; j < blocks; ++j) {
        const int b = me + j < blocks ? me + j : me + j - blocks;
        const int64_t first = chunks * b / blocks, size = chunks * (b + 1) / blocks - first;
        const int shift = 16 * b;
        /* a full block is passed without an add, so a count exceeds its block's size by at
         * most the team's size: no carry into the next block's count */
        if (((__atomic_load_n(next, __ATOMIC_RELAXED) >> shift) & 0xffff) >= size) continue;
        const int64_t k =
            (__atomic_fetch_add(next, (int64_t)1 << shift, __ATOMIC_RELAXED) >> shift) & 0xffff;
        if (k < size) {
            *lo = (first + k) * chunk;
            *hi = n - *lo < chunk ? n : *lo + chunk;
            return 1;
        }
    }
    return 0;
}

/* A thread's allocation failed: the call returns AP_ERR_OUT_OF_MEMORY. */
static inline void ap_flag_failure(int *failed) { __atomic_store_n(failed, 1, __ATOMIC_RELAXED); }

/* Run work(ctx) on nt threads: the calling thread and up to nt - 1 workers
 * of avgpool's pool (threading.c). One thread runs it directly: even an
 * OpenMP region for one thread costs about 0.4 us (libgomp builds a team),
 * as much as a small kernel. The threads share the work through
 * ap_next_chunk on a counter in ctx, so a worker that the OS has not
 * scheduled leaves its share to the others, and the caller waits only for
 * workers that joined (not for an OpenMP barrier that every thread must
 * reach: with another process busy on a core, that wait took milliseconds). */
typedef void (*ap_work_fn)(void *ctx);

void ap_pool_run(int nt, ap_work_fn work, void *ctx);

static inline void ap_parallel(int nt, ap_work_fn work, void *ctx) {
#ifdef _OPENMP
    if (nt > 1) {
        ap_pool_run(nt, work, ctx);
        return;
    }
#endif
    (void)nt;
    work(ctx);
}

/* fn(ctx, lo, hi) over the chunks of [0, n) (work_elems in all, see
 * ap_chunk_size), on nt threads (ap_parallel). */
typedef void (*ap_range_fn)(void *ctx, int64_t lo, int64_t hi);

typedef struct {
    ap_range_fn fn;
    void *ctx;
    int64_t n, chunk, next;
} ap_range_job;

static inline void ap_range_work(void *arg) {
    ap_range_job *job = (ap_range_job *)arg;
    int64_t lo, hi;
    while (ap_next_chunk(&job->next, job->n, job->chunk, &lo, &hi)) job->fn(job->ctx, lo, hi);
}

static inline void ap_parallel_for(int nt, int64_t n, int64_t work_elems, ap_range_fn fn,
                                   void *ctx) {
    nt = ap_threads_cap(nt, n);
    ap_range_job job = {fn, ctx, n, ap_chunk_size(n, nt, work_elems), 0};
    ap_parallel(nt, ap_range_work, &job);
}

#endif /* AP_THREADING_H */
