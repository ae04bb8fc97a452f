/* threading.h - OpenMP over independent work items, with a minimum grain so
 * small tensors stay on one thread (a parallel region costs microseconds).
 * Builds without OpenMP run the same loops serially. The public thread
 * queries (ap_openmp_enabled, ap_max_threads) are in threading.c. */
#ifndef AP_THREADING_H
#define AP_THREADING_H

#include <stdint.h>

#include "plan.h"

/* Elements of input per thread below which more threads do not pay. */
#define AP_MIN_ELEMS_PER_THREAD 16384

static inline int ap_threads_for(const ap_plan *plan, int64_t work_elems) {
    int64_t t = work_elems / AP_MIN_ELEMS_PER_THREAD;
    if (t < 1) t = 1;
    return t < plan->num_threads ? (int)t : plan->num_threads;
}

#ifdef _OPENMP
#include <omp.h>
#endif

/* Work sharing by chunks taken from a shared counter: a thread that the OS
 * deschedules (a shared or busy machine) does not hold up the others, who
 * take its share. `next` is shared by the team and starts at 0. */
static inline int64_t ap_chunk_size(int64_t n, int nthreads) {
    const int64_t c = n / ((int64_t)nthreads * 8);
    return c < 1 ? 1 : c;
}

static inline int ap_next_chunk(int64_t *next, int64_t n, int64_t chunk, int64_t *lo,
                                int64_t *hi) {
    const int64_t start = __atomic_fetch_add(next, chunk, __ATOMIC_RELAXED);
    if (start >= n) return 0;
    *lo = start;
    *hi = n - start < chunk ? n : start + chunk;
    return 1;
}

/* A thread's allocation failed: the call returns AP_ERR_OUT_OF_MEMORY. */
static inline void ap_flag_failure(int *failed) { __atomic_store_n(failed, 1, __ATOMIC_RELAXED); }

/* Run work(ctx) on nt threads, or on the calling thread alone when nt <= 1:
 * entering an OpenMP region costs about 0.4 us even for one thread
 * (libgomp builds a team), as much as a small kernel takes. The threads
 * share the work through ap_next_chunk on a counter in ctx. */
typedef void (*ap_work_fn)(void *ctx);

static inline void ap_parallel(int nt, ap_work_fn work, void *ctx) {
#ifdef _OPENMP
    if (nt > 1) {
#pragma omp parallel num_threads(nt)
        work(ctx);
        return;
    }
#endif
    (void)nt;
    work(ctx);
}

#ifdef _OPENMP
/* Declares ap_nt_ and opens a statically scheduled parallel for loop. */
#define AP_OMP_PARALLEL_FOR(plan, work_elems)                     \
    const int ap_nt_ = ap_threads_for((plan), (work_elems));      \
    _Pragma("omp parallel for schedule(static) num_threads(ap_nt_) if (ap_nt_ > 1)")
#else
#define AP_OMP_PARALLEL_FOR(plan, work_elems) (void)(plan);
#endif

#endif /* AP_THREADING_H */
