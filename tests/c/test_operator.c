/* test_operator.c - compiled operators (ap_operator_*): for random windowed
 * and adaptive descriptors on every instruction set, an operator's results
 * equal the one-shot call's bit for bit, run after run; four threads running
 * one operator at once get the serial result; the operator keeps the kernel
 * path of its creation when ap_set_isa switches; an output set to the other
 * layout is the result moved across (ap_relayout), and its backward takes
 * gy so; errors fill ap_error and leave *op NULL; destroy(NULL) is a no-op. Run under ASan by
 * scripts/test_c.sh. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct {
    ap_pool_desc pd;
    ap_adaptive_desc ad;
    int adaptive;
    ap_tensor_desc t;
    ap_dtype dtype;
    int threads;
} tcase;

static tcase random_case(void) {
    tcase c;
    memset(&c, 0, sizeof c);
    const int rank = (int)tu_range(1, 3);
    c.t.batch = tu_range(1, 2);
    c.t.channels = tu_range(1, 19);
    c.t.rank = rank;
    c.t.layout = tu_chance(0.5) ? AP_LAYOUT_NHWC : AP_LAYOUT_NCHW;
    for (int a = 0; a < rank; ++a) c.t.sizes[a] = tu_range(1, rank == 1 ? 60 : 14);
    c.dtype = (ap_dtype)tu_range(0, 3);
    c.threads = (int)tu_range(1, 3);
    c.adaptive = tu_chance(0.3);
    if (c.adaptive) {
        c.ad.rank = rank;
        for (int a = 0; a < rank; ++a) c.ad.output_sizes[a] = tu_range(1, c.t.sizes[a] + 2);
        return c;
    }
    c.pd.rank = rank;
    for (int a = 0; a < rank; ++a) {
        /* windows up to the padded input: every kernel path, large ones too */
        c.pd.start_padding[a] = tu_range(0, 3);
        c.pd.end_padding[a] = tu_range(0, 3);
        const int64_t padded = c.t.sizes[a] + c.pd.start_padding[a] + c.pd.end_padding[a];
        c.pd.dilations[a] = tu_chance(0.2) ? 2 : 1;
        c.pd.window[a] = tu_range(1, (padded - 1) / c.pd.dilations[a] + 1);
        c.pd.strides[a] = tu_range(1, 3);
    }
    c.pd.include_padding = tu_chance(0.5);
    return c;
}

static int64_t count(const ap_tensor_desc *t) {
    int64_t n = t->batch * t->channels;
    for (int a = 0; a < t->rank; ++a) n *= t->sizes[a];
    return n;
}

static ap_status create(const tcase *c, ap_operator **op, ap_error *err) {
    return c->adaptive ? ap_operator_create_adaptive(&c->ad, &c->t, c->dtype, c->threads, op, err)
                       : ap_operator_create_pool(&c->pd, &c->t, c->dtype, c->threads, op, err);
}

static ap_status one_shot(const tcase *c, const void *x, void *y) {
    return c->adaptive ? ap_adaptive_avgpool(&c->ad, &c->t, c->dtype, x, y, c->threads)
                       : ap_avgpool(&c->pd, &c->t, c->dtype, x, y, c->threads);
}

static ap_status one_shot_backward(const tcase *c, const void *gy, void *gx) {
    return c->adaptive
               ? ap_adaptive_avgpool_backward(&c->ad, &c->t, c->dtype, gy, gx, c->threads)
               : ap_avgpool_backward(&c->pd, &c->t, c->dtype, gy, gx, c->threads);
}

typedef struct {
    const ap_operator *op;
    const void *x;
    void *y;
    ap_status status;
    int backward; /* run the backward pass: x is gy, y is gx */
} job;

static void *run_job(void *arg) {
    job *j = (job *)arg;
    for (int i = 0; i < 5 && j->status == AP_OK; ++i)
        j->status = j->backward ? ap_operator_run_backward(j->op, j->x, j->y)
                                : ap_operator_run(j->op, j->x, j->y);
    return NULL;
}

enum { THREADS = 4 };

/* THREADS threads run op (forward, or backward) on in at once, each 5 times into its own
 * part of outs (THREADS parts of `bytes`); each must equal want. */
static void run_threads(const ap_operator *op, int backward, const void *in, unsigned char *outs,
                        size_t bytes, const void *want, const char *isa, int i) {
    pthread_t th[THREADS];
    job jobs[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        jobs[t] = (job){op, in, outs + (size_t)t * bytes, AP_OK, backward};
        CHECK(pthread_create(&th[t], NULL, run_job, &jobs[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < THREADS; ++t) {
        pthread_join(th[t], NULL);
        CHECK_STATUS(jobs[t].status, AP_OK);
        CHECK(memcmp(jobs[t].y, want, bytes) == 0, "[%s] case %d: thread %d's %s differs", isa,
              i, t, backward ? "backward" : "result");
    }
}

/* Operator == one-shot, twice in a row, and from 4 threads at once; the same for the
 * backward pass. */
static void test_random(const char *isa, int cases) {
    for (int i = 0; i < cases; ++i) {
        const tcase c = random_case();
        ap_operator *op = NULL;
        ap_error err;
        if (create(&c, &op, &err) != AP_OK) {
            CHECK(op == NULL, "a failed create leaves *op NULL");
            continue; /* an invalid random descriptor: the error tests cover those */
        }
        ap_tensor_desc out;
        CHECK_STATUS(ap_operator_output(op, &out), AP_OK);
        const size_t es = tu_elem_size(c.dtype);
        const int64_t nx = count(&c.t), ny = count(&out);
        unsigned char *x = malloc((size_t)nx * es), *want = malloc((size_t)ny * es);
        unsigned char *got = malloc((size_t)ny * es * (THREADS + 1));
        for (int64_t k = 0; k < nx; ++k) tu_set(c.dtype, x, k, tu_uniform() * 8.0 - 4.0);
        CHECK_STATUS(one_shot(&c, x, want), AP_OK);
        for (int rep = 0; rep < 2; ++rep) {
            memset(got, 0xab, (size_t)ny * es);
            CHECK_STATUS(ap_operator_run(op, x, got), AP_OK);
            CHECK(memcmp(got, want, (size_t)ny * es) == 0,
                  "[%s] case %d run %d: the operator differs from the one-shot call", isa, i, rep);
        }
        run_threads(op, 0, x, got + (size_t)ny * es, (size_t)ny * es, want, isa, i);
        /* the backward pass: the operator's equals the one-shot call's, bit for bit, here
         * and from THREADS threads at once (gy: a random gradient of the output) */
        unsigned char *gy = malloc((size_t)ny * es), *gwant = malloc((size_t)nx * es);
        unsigned char *ggot = malloc((size_t)nx * es * (THREADS + 1));
        for (int64_t k = 0; k < ny; ++k) tu_set(c.dtype, gy, k, tu_uniform() * 2.0 - 1.0);
        CHECK_STATUS(one_shot_backward(&c, gy, gwant), AP_OK);
        memset(ggot, 0xab, (size_t)nx * es);
        CHECK_STATUS(ap_operator_run_backward(op, gy, ggot), AP_OK);
        CHECK(memcmp(ggot, gwant, (size_t)nx * es) == 0,
              "[%s] case %d: the operator's backward differs from the one-shot call", isa, i);
        run_threads(op, 1, gy, ggot + (size_t)nx * es, (size_t)nx * es, gwant, isa, i);
        ap_operator_destroy(op);
        /* the output in the other layout: the one-shot result moved across by ap_relayout,
         * bit for bit, from THREADS threads too; the backward takes gy in that layout */
        const ap_layout other = c.t.layout == AP_LAYOUT_NCHW ? AP_LAYOUT_NHWC : AP_LAYOUT_NCHW;
        CHECK_STATUS(create(&c, &op, NULL), AP_OK);
        CHECK_STATUS(ap_operator_set_output_layout(op, other), AP_OK);
        ap_tensor_desc out2;
        CHECK_STATUS(ap_operator_output(op, &out2), AP_OK);
        int same_sizes = out2.batch == out.batch && out2.channels == out.channels &&
                         out2.rank == out.rank && out2.layout == other;
        for (int a = 0; a < out.rank; ++a) same_sizes &= out2.sizes[a] == out.sizes[a];
        CHECK(same_sizes, "[%s] case %d: the output description in the other layout", isa, i);
        unsigned char *moved = malloc((size_t)ny * es), *gy_moved = malloc((size_t)ny * es);
        CHECK_STATUS(ap_relayout(&out, c.dtype, want, moved, 1), AP_OK);
        CHECK_STATUS(ap_relayout(&out, c.dtype, gy, gy_moved, 1), AP_OK);
        memset(got, 0xab, (size_t)ny * es);
        CHECK_STATUS(ap_operator_run(op, x, got), AP_OK);
        CHECK(memcmp(got, moved, (size_t)ny * es) == 0,
              "[%s] case %d: the result in the other layout differs", isa, i);
        run_threads(op, 0, x, got + (size_t)ny * es, (size_t)ny * es, moved, isa, i);
        memset(ggot, 0xab, (size_t)nx * es);
        CHECK_STATUS(ap_operator_run_backward(op, gy_moved, ggot), AP_OK);
        CHECK(memcmp(ggot, gwant, (size_t)nx * es) == 0,
              "[%s] case %d: the backward of gy in the other layout differs", isa, i);
        ap_operator_destroy(op);
        free(x), free(want), free(got), free(gy), free(gwant), free(ggot), free(moved),
            free(gy_moved);
    }
}

/* An operator keeps the kernel path of its creation: made on scalar, it
 * gives the scalar result after switching to a SIMD path (and the one-shot
 * call, now SIMD, may differ in float32 summation order only). */
static void test_isa_switch(void) {
    const char *simd = NULL; /* the widest SIMD path this CPU runs */
    for (int i = TU_N_ISAS - 1; i > 0 && !simd; --i)
        if (ap_set_isa(tu_isas[i]) == AP_OK) simd = tu_isas[i];
    if (!simd) {
        printf("test_operator: no SIMD path on this CPU, ISA switch not tested\n");
        return;
    }
    ap_pool_desc d;
    memset(&d, 0, sizeof d);
    d.rank = 2;
    for (int a = 0; a < 2; ++a) d.window[a] = 5, d.strides[a] = d.dilations[a] = 1;
    ap_tensor_desc t = {1, 3, 2, {20, 23, 0}, AP_LAYOUT_NCHW};
    float *x = malloc(20 * 23 * 3 * sizeof(float)), y0[16 * 19 * 3], y1[16 * 19 * 3],
          y2[16 * 19 * 3];
    for (int i = 0; i < 20 * 23 * 3; ++i) x[i] = (float)(tu_uniform() * 1e3);
    CHECK_STATUS(ap_set_isa("scalar"), AP_OK);
    ap_operator *op = NULL;
    CHECK_STATUS(ap_operator_create_pool(&d, &t, AP_DTYPE_F32, 1, &op, NULL), AP_OK);
    CHECK_STATUS(ap_avgpool_f32(&d, &t, x, y0, 1), AP_OK);
    CHECK_STATUS(ap_set_isa(simd), AP_OK);
    CHECK_STATUS(ap_operator_run(op, x, y1), AP_OK);
    CHECK(memcmp(y0, y1, sizeof y0) == 0, "the operator left its scalar kernel after ap_set_isa");
    /* the test means something: the SIMD path's rounding differs somewhere */
    CHECK_STATUS(ap_avgpool_f32(&d, &t, x, y2, 1), AP_OK);
    CHECK(memcmp(y0, y2, sizeof y0) != 0, "scalar and %s agree bit for bit on the test data",
          simd);
    ap_operator_destroy(op);
    free(x);
    CHECK_STATUS(ap_set_isa("auto"), AP_OK);
}

static void test_errors(void) {
    ap_pool_desc d;
    memset(&d, 0, sizeof d);
    d.rank = 2;
    for (int a = 0; a < 2; ++a) d.window[a] = 6, d.strides[a] = d.dilations[a] = 1;
    ap_tensor_desc t = {1, 2, 2, {5, 5, 0}, AP_LAYOUT_NCHW};
    ap_operator *op = (ap_operator *)&d; /* must become NULL */
    ap_error err;
    CHECK_STATUS(ap_operator_create_pool(&d, &t, AP_DTYPE_F32, 1, &op, &err),
                 AP_ERR_WINDOW_TOO_LARGE);
    CHECK(op == NULL, "failed create leaves *op NULL");
    CHECK(err.status == AP_ERR_WINDOW_TOO_LARGE && err.axis == 0 &&
              strcmp(err.field, "window") == 0 && err.detail[0],
          "err: status %d axis %d field %s", (int)err.status, (int)err.axis, err.field);
    d.window[0] = d.window[1] = 2;
    CHECK_STATUS(ap_operator_create_pool(&d, &t, (ap_dtype)9, 1, &op, NULL), AP_ERR_DTYPE);
    CHECK_STATUS(ap_operator_create_pool(NULL, &t, AP_DTYPE_F32, 1, &op, NULL),
                 AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_create_pool(&d, &t, AP_DTYPE_F32, 1, NULL, NULL),
                 AP_ERR_NULL_POINTER);
    ap_adaptive_desc a = {.rank = 2, .output_sizes = {0, 3, 0}};
    CHECK_STATUS(ap_operator_create_adaptive(&a, &t, AP_DTYPE_F32, 1, &op, &err),
                 AP_ERR_OUTPUT_SIZE);
    CHECK(err.axis == 0, "adaptive err axis %d", (int)err.axis);
    CHECK_STATUS(ap_operator_create_pool(&d, &t, AP_DTYPE_F32, 1, &op, NULL), AP_OK);
    float x[50] = {0}, y[32];
    CHECK_STATUS(ap_operator_run(op, NULL, y), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_run(op, x, NULL), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_run(NULL, x, y), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_run_backward(op, NULL, x), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_run_backward(op, y, NULL), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_run_backward(NULL, y, x), AP_ERR_NULL_POINTER);
    ap_tensor_desc out;
    CHECK_STATUS(ap_operator_output(op, &out), AP_OK);
    CHECK(out.batch == 1 && out.channels == 2 && out.rank == 2 && out.sizes[0] == 4 &&
              out.sizes[1] == 4 && out.layout == AP_LAYOUT_NCHW,
          "output description %lld x %lld x %lld x %lld", (long long)out.batch,
          (long long)out.channels, (long long)out.sizes[0], (long long)out.sizes[1]);
    CHECK_STATUS(ap_operator_output(op, NULL), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_set_output_layout(NULL, AP_LAYOUT_NHWC), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_operator_set_output_layout(op, (ap_layout)7), AP_ERR_LAYOUT);
    CHECK_STATUS(ap_operator_output(op, &out), AP_OK);
    CHECK(out.layout == AP_LAYOUT_NCHW, "a refused layout left the output's unchanged");
    ap_operator_destroy(op);
    ap_operator_destroy(NULL);
    /* an empty batch: runs nothing, NULL buffers allowed */
    t.batch = 0;
    CHECK_STATUS(ap_operator_create_pool(&d, &t, AP_DTYPE_F32, 1, &op, NULL), AP_OK);
    CHECK_STATUS(ap_operator_run(op, NULL, NULL), AP_OK);
    ap_operator_destroy(op);
}

int main(int argc, char **argv) {
    const int cases = argc > 1 ? atoi(argv[1]) : 300;
    tu_seed(11);
    for (int i = 0; i < TU_N_ISAS; ++i) {
        if (ap_set_isa(tu_isas[i]) != AP_OK) continue;
        test_random(tu_isas[i], cases);
    }
    ap_set_isa("auto");
    test_isa_switch();
    test_errors();
    return tu_exit("test_operator");
}
