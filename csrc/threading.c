/* threading.c - the thread queries of avgpool.h; the work sharing itself is
 * in threading.h. */
#ifdef _OPENMP
#include <omp.h>
#endif

#include "threading.h"

int ap_openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

int ap_max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
