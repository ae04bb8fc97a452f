/* threading.h - OpenMP over independent work items, with a minimum grain so
 * small tensors stay on one thread (a parallel region costs microseconds).
 * Builds without OpenMP run the same loops serially. */
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

/* This thread's share [lo, hi) of n items under a static, contiguous split;
 * call inside a parallel region (or outside one: everything). */
static inline void ap_thread_range(int64_t n, int64_t *lo, int64_t *hi) {
    int64_t t = 0, nth = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    nth = omp_get_num_threads();
#endif
    const int64_t q = n / nth, r = n % nth;
    *lo = t * q + (t < r ? t : r);
    *hi = *lo + q + (t < r ? 1 : 0);
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
