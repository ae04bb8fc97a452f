/* threading.c - the thread queries of avgpool.h, and the pool behind
 * ap_parallel (threading.h).
 *
 * The pool (pthreadpool's scheme, docs/performance.md): workers wait for a
 * job by spinning briefly, then sleep on a condition variable. A job is
 * published with a new generation number and an open flag; a worker joins
 * by incrementing the joined counts while the job is open, runs
 * work(ctx), and leaves. The caller runs work(ctx) itself, closes the job,
 * and waits only for the workers that joined: a worker that the OS has not
 * scheduled (another process busy on its core) misses the job instead of
 * holding up the call, as OpenMP's closing barrier did. One job at a time;
 * a second caller (another application thread) runs its work alone. After
 * fork() the child starts with no workers. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#endif

#include "threading.h"

_Thread_local int ap_team_slot, ap_team_size;

/* The pool in use (ap_thread_pool in avgpool.h): -1 until the first query
 * reads AVGPOOL_THREAD_POOL; AP_POOL_UNAVAILABLE when it named no pool
 * (the work then runs on the own pool, the Python package refuses to load). */
enum { AP_POOL_UNSET = -1, AP_POOL_OWN = 0, AP_POOL_OPENMP = 1, AP_POOL_UNAVAILABLE = 2 };
static int ap_pool_kind = AP_POOL_UNSET;

static int ap_pool_named(const char *name) {
    if (name == NULL || name[0] == '\0' || strcmp(name, "own") == 0) return AP_POOL_OWN;
#ifdef _OPENMP
    if (strcmp(name, "openmp") == 0) return AP_POOL_OPENMP;
#endif
    return AP_POOL_UNAVAILABLE;
}

#ifdef _OPENMP
static void ap_pool_watch_fork(void);
#endif

static void ap_pool_choose(int kind) {
#ifdef _OPENMP
    if (kind == AP_POOL_OPENMP) ap_pool_watch_fork(); /* before a fork can copy the choice */
#endif
    __atomic_store_n(&ap_pool_kind, kind, __ATOMIC_RELAXED);
}

static int ap_pool_in_use(void) {
    int kind = __atomic_load_n(&ap_pool_kind, __ATOMIC_RELAXED);
    if (kind == AP_POOL_UNSET) {
        kind = ap_pool_named(getenv("AVGPOOL_THREAD_POOL"));
        ap_pool_choose(kind);
    }
    return kind;
}

const char *ap_thread_pool(void) {
    switch (ap_pool_in_use()) {
    case AP_POOL_OWN: return "own";
    case AP_POOL_OPENMP: return "openmp";
    default: return "unavailable";
    }
}

ap_status ap_set_thread_pool(const char *name) {
    const int kind = ap_pool_named(name);
    if (kind == AP_POOL_UNAVAILABLE) return AP_ERR_THREAD_POOL;
    ap_pool_choose(kind);
    return AP_OK;
}

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

#ifdef _OPENMP

enum { AP_POOL_MAX = 256 };

/* state: generation << 33 | open << 32 | joined in total << 16 | active.
 * Workers join only while `open`, at most `want` of them per job. */
#define AP_ACTIVE_ONE UINT64_C(1)
#define AP_TOTAL_ONE (UINT64_C(1) << 16)
#define AP_OPEN (UINT64_C(1) << 32)
#define AP_GEN_SHIFT 33
#define AP_ACTIVE(s) ((s) & 0xffffu)
#define AP_TOTAL(s) (((s) >> 16) & 0xffffu)
#define AP_GEN(s) ((s) >> AP_GEN_SHIFT)

/* Pause instructions a worker spins before sleeping (some microseconds):
 * calls in a loop find their workers awake, idle workers soon free their
 * core. Measured with a busy process on one of two cores (bench
 * --contended), 1000 to 200000 gave slowdowns within noise of each other
 * and of TFLite's; longer spins made the quiet calls no faster. */
enum { AP_SPIN = 5000 };

static struct {
    pthread_mutex_t submit; /* held by the caller for its whole job        */
    pthread_mutex_t lock;   /* guards the sleep / wake-up of workers       */
    pthread_cond_t wake;
    int sleepers;           /* workers waiting on `wake`                   */
    int workers;            /* workers started                             */
    ap_work_fn work;        /* the job: written before the state publishes */
    void *ctx;
    int want;               /* workers that may join                        */
    uint64_t state;
} ap_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
             0, 0, 0, 0, 0, 0};

static inline void ap_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t ap_state(void) { return __atomic_load_n(&ap_pool.state, __ATOMIC_SEQ_CST); }

static void *ap_worker(void *arg) {
    uint64_t seen = AP_GEN(ap_state());
    ap_team_slot = (int)(intptr_t)arg; /* its place in every team it joins: 1, 2, ... */
    for (;;) {
        uint64_t s = ap_state();
        for (int i = 0; AP_GEN(s) == seen && i < AP_SPIN; ++i) {
            ap_relax();
            s = ap_state();
        }
        if (AP_GEN(s) == seen) {
            pthread_mutex_lock(&ap_pool.lock);
            __atomic_add_fetch(&ap_pool.sleepers, 1, __ATOMIC_SEQ_CST);
            while (AP_GEN(s = ap_state()) == seen) pthread_cond_wait(&ap_pool.wake, &ap_pool.lock);
            __atomic_sub_fetch(&ap_pool.sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&ap_pool.lock);
        }
        seen = AP_GEN(s);
        /* join this generation's job if it is still open and wants us */
        while ((s & AP_OPEN) && AP_GEN(s) == seen &&
               AP_TOTAL(s) < (uint64_t)__atomic_load_n(&ap_pool.want, __ATOMIC_RELAXED)) {
            if (__atomic_compare_exchange_n(&ap_pool.state, &s, s + AP_TOTAL_ONE + AP_ACTIVE_ONE,
                                            0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
                ap_team_size = __atomic_load_n(&ap_pool.want, __ATOMIC_RELAXED) + 1;
                ap_pool.work(ap_pool.ctx);
                __atomic_sub_fetch(&ap_pool.state, AP_ACTIVE_ONE, __ATOMIC_SEQ_CST);
                break;
            }
        }
    }
    return NULL;
}

/* In a child after fork(): no workers, nothing held, and the own pool (the
 * parent's OpenMP team does not exist here, and libgomp would wait for it). */
static void ap_pool_after_fork(void) {
    if (__atomic_load_n(&ap_pool_kind, __ATOMIC_RELAXED) == AP_POOL_OPENMP)
        __atomic_store_n(&ap_pool_kind, AP_POOL_OWN, __ATOMIC_RELAXED);
    pthread_mutex_init(&ap_pool.submit, NULL);
    pthread_mutex_init(&ap_pool.lock, NULL);
    pthread_cond_init(&ap_pool.wake, NULL);
    ap_pool.sleepers = ap_pool.workers = 0;
    ap_pool.state = 0;
}

static pthread_once_t ap_pool_once = PTHREAD_ONCE_INIT;
static void ap_pool_init(void) { pthread_atfork(NULL, NULL, ap_pool_after_fork); }
static void ap_pool_watch_fork(void) { pthread_once(&ap_pool_once, ap_pool_init); }

void ap_pool_run(int nt, ap_work_fn work, void *ctx) {
    pthread_once(&ap_pool_once, ap_pool_init);
    if (ap_pool_in_use() == AP_POOL_OPENMP) {
        /* the team shares the work through ctx's counter as the pool does */
#pragma omp parallel num_threads(nt)
        {
            ap_team_slot = omp_get_thread_num();
            ap_team_size = omp_get_num_threads();
            work(ctx);
        }
        return;
    }
    if (pthread_mutex_trylock(&ap_pool.submit) != 0) { /* another job runs: alone */
        ap_team_slot = 0, ap_team_size = 1;
        work(ctx);
        return;
    }
    const int want = nt - 1 < AP_POOL_MAX ? nt - 1 : AP_POOL_MAX;
    while (ap_pool.workers < want) {
        pthread_t t;
        if (pthread_create(&t, NULL, ap_worker, (void *)(intptr_t)(ap_pool.workers + 1)) != 0)
            break; /* fewer helpers */
        pthread_detach(t);
        ++ap_pool.workers;
    }
    ap_pool.work = work, ap_pool.ctx = ctx;
    __atomic_store_n(&ap_pool.want, want, __ATOMIC_RELAXED);
    const uint64_t s = ap_state();
    __atomic_store_n(&ap_pool.state, ((AP_GEN(s) + 1) << AP_GEN_SHIFT) | AP_OPEN, __ATOMIC_SEQ_CST);
    ap_team_slot = 0, ap_team_size = want + 1;
    if (__atomic_load_n(&ap_pool.sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&ap_pool.lock);
        pthread_cond_broadcast(&ap_pool.wake);
        pthread_mutex_unlock(&ap_pool.lock);
    }
    work(ctx);
    /* close the job, then wait for the workers that joined it */
    __atomic_fetch_and(&ap_pool.state, ~AP_OPEN, __ATOMIC_SEQ_CST);
    for (int i = 0; AP_ACTIVE(ap_state()) != 0; ++i) {
        if (i < 1000)
            ap_relax();
        else
            sched_yield();
    }
    pthread_mutex_unlock(&ap_pool.submit);
}

#endif /* _OPENMP */
