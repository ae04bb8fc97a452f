/* test_api.c - the C API contract of avgpool.h and hand-computed results.
 *
 *   - every status code is produced by some invalid input, and
 *     ap_status_string describes each;
 *   - NULL pointers, sizes that overflow int64, nothing written on error;
 *   - hand-computed results on every instruction set this machine runs:
 *     block means, exclude vs include padding, adaptive windows,
 *     count_overhang, divisor_override, empty windows, round-to-nearest-even
 *     float16 / bfloat16 stores, channels-last vs channels-first, tiles.
 *
 * `test_api --bad-isa-env` is run with AVGPOOL_ISA naming no instruction set:
 * every computing call must then fail with AP_ERR_ISA.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define N_STATUS (AP_ERR_ALIGNMENT + 1)
static int seen[N_STATUS]; /* status codes some invalid input produced */

/* A call that must fail (or succeed) with `want`; records the code. */
#define EXPECT(expr, want)                              \
    do {                                                \
        const ap_status e_got_ = (expr);                \
        CHECK_STATUS(e_got_, want);                     \
        if (e_got_ == (want)) seen[(int)(want)] = 1;    \
    } while (0)

static const int64_t BIG = INT64_C(1) << 62;

static ap_tensor_desc tensor(int64_t n, int64_t c, int32_t rank, int64_t s0, int64_t s1,
                             int64_t s2, ap_layout layout) {
    ap_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.batch = n, t.channels = c, t.rank = rank, t.layout = layout;
    t.sizes[0] = s0, t.sizes[1] = s1, t.sizes[2] = s2;
    return t;
}

/* Same window / stride / padding on every axis. */
static ap_pool_desc pool(int32_t rank, int64_t k, int64_t s, int64_t pb, int64_t pe) {
    ap_pool_desc d;
    const int64_t w[3] = {k, k, k};
    if (ap_pool_desc_init(&d, rank, w) != AP_OK) abort();
    for (int a = 0; a < rank && a < AP_MAX_SPATIAL; ++a) {
        d.strides[a] = s;
        d.start_padding[a] = pb;
        d.end_padding[a] = pe;
    }
    return d;
}

static ap_adaptive_desc adaptive(int32_t rank, int64_t o0, int64_t o1, int64_t o2) {
    ap_adaptive_desc d;
    memset(&d, 0, sizeof d);
    d.rank = rank;
    d.output_sizes[0] = o0, d.output_sizes[1] = o1, d.output_sizes[2] = o2;
    return d;
}

static int64_t numel(const ap_tensor_desc *t, const int64_t *sizes) {
    int64_t n = t->batch * t->channels;
    for (int a = 0; a < t->rank; ++a) n *= sizes[a];
    return n;
}

/* ---- status codes ----------------------------------------------------------- */

static void test_status_strings(void) {
    for (int s = 0; s < N_STATUS; ++s) {
        const char *m = ap_status_string((ap_status)s);
        CHECK(m && *m, "ap_status_string(%d) is empty", s);
        for (int u = 0; u < s; ++u)
            CHECK(strcmp(m, ap_status_string((ap_status)u)) != 0,
                  "statuses %d and %d share the message \"%s\"", u, s, m);
    }
    const char *m = ap_status_string((ap_status)12345);
    CHECK(m && *m, "ap_status_string(12345) is empty");
}

/* One invalid input (at least) per status code, and the valid neighbours. */
static void test_invalid_inputs(void) {
    const ap_tensor_desc t = tensor(1, 2, 2, 8, 8, 0, AP_LAYOUT_NCHW);
    const ap_pool_desc d = pool(2, 2, 2, 0, 0);
    float x[128] = {0}, y[32];
    int64_t out[AP_MAX_SPATIAL];
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_OK);
    CHECK(out[0] == 4 && out[1] == 4, "8x8 k2 s2 gives %lldx%lld", (long long)out[0],
          (long long)out[1]);
    EXPECT(ap_avgpool(&d, &t, AP_DTYPE_F32, x, y, 1), AP_OK);

    ap_tensor_desc tb;
    ap_pool_desc db;
    ap_adaptive_desc ab;
    /* AP_ERR_RANK */
    db = d, db.rank = 0;
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_RANK);
    db = d, db.rank = 4;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_RANK);
    tb = t, tb.rank = 1;
    EXPECT(ap_avgpool(&d, &tb, AP_DTYPE_F32, x, y, 1), AP_ERR_RANK); /* desc and tensor differ */
    tb = t, tb.rank = 3, tb.sizes[2] = 1;
    EXPECT(ap_pool_output_sizes(&d, &tb, out), AP_ERR_RANK);
    ab = adaptive(0, 1, 1, 1);
    EXPECT(ap_adaptive_output_sizes(&ab, &t, out), AP_ERR_RANK);
    ab = adaptive(-1, 1, 1, 1);
    EXPECT(ap_adaptive_avgpool(&ab, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_RANK);
    /* AP_ERR_NAN_POLICY */
    db = d, db.nan_policy = 2;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_NAN_POLICY);
    db = d, db.nan_policy = AP_NAN_OMIT, db.min_count = -1;
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_NAN_POLICY);
    ab = adaptive(2, 2, 2, 0), ab.nan_policy = -1;
    EXPECT(ap_adaptive_avgpool(&ab, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_NAN_POLICY);
    db = d, db.nan_policy = AP_NAN_OMIT;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_OK);
    EXPECT(ap_avgpool_backward(&db, &t, AP_DTYPE_F32, y, x, 1), AP_ERR_NAN_POLICY);
    const int64_t w[3] = {1, 1, 1};
    EXPECT(ap_pool_desc_init(&db, 0, w), AP_ERR_RANK);
    EXPECT(ap_pool_desc_init(&db, 4, w), AP_ERR_RANK);
    /* AP_ERR_LAYOUT */
    tb = t, tb.layout = (ap_layout)2;
    EXPECT(ap_pool_output_sizes(&d, &tb, out), AP_ERR_LAYOUT);
    tb = t, tb.layout = (ap_layout)-1;
    EXPECT(ap_avgpool(&d, &tb, AP_DTYPE_F32, x, y, 1), AP_ERR_LAYOUT);
    /* AP_ERR_DTYPE */
    EXPECT(ap_avgpool(&d, &t, (ap_dtype)4, x, y, 1), AP_ERR_DTYPE);
    EXPECT(ap_avgpool(&d, &t, (ap_dtype)-1, x, y, 1), AP_ERR_DTYPE);
    ab = adaptive(2, 2, 2, 0);
    EXPECT(ap_adaptive_avgpool(&ab, &t, (ap_dtype)7, x, y, 1), AP_ERR_DTYPE);
    /* AP_ERR_TENSOR_SIZE */
    tb = t, tb.batch = -1;
    EXPECT(ap_avgpool(&d, &tb, AP_DTYPE_F32, x, y, 1), AP_ERR_TENSOR_SIZE);
    tb = t, tb.channels = -5;
    EXPECT(ap_pool_output_sizes(&d, &tb, out), AP_ERR_TENSOR_SIZE);
    tb = t, tb.sizes[1] = 0;
    EXPECT(ap_pool_output_sizes(&d, &tb, out), AP_ERR_TENSOR_SIZE);
    tb = t, tb.sizes[0] = -3;
    ab = adaptive(2, 2, 2, 0);
    EXPECT(ap_adaptive_output_sizes(&ab, &tb, out), AP_ERR_TENSOR_SIZE);
    /* AP_ERR_WINDOW */
    db = d, db.window[1] = 0;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_WINDOW);
    db = d, db.window[0] = INT64_MIN;
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_WINDOW);
    /* AP_ERR_STRIDE */
    db = d, db.strides[0] = 0;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_STRIDE);
    db = d, db.strides[1] = -2;
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_STRIDE);
    /* AP_ERR_DILATION */
    db = d, db.dilations[1] = 0;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_DILATION);
    /* AP_ERR_PADDING */
    db = d, db.start_padding[0] = -1;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_PADDING);
    db = d, db.end_padding[1] = -1;
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_PADDING);
    /* AP_ERR_WINDOW_TOO_LARGE: effective window > padded input */
    db = d, db.window[1] = 9;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_WINDOW_TOO_LARGE);
    db = d, db.window[1] = 3, db.dilations[1] = 4; /* ek = 9 */
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_WINDOW_TOO_LARGE);
    db.end_padding[1] = 1; /* 9 <= 8 + 1 */
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_OK);
    CHECK(out[1] == 1, "ek 9 over padded 9 gives %lld outputs", (long long)out[1]);
    /* AP_ERR_OUTPUT_SIZE */
    db = d, db.output_sizes[0] = -1;
    EXPECT(ap_avgpool(&db, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_OUTPUT_SIZE);
    db = d, db.output_sizes[0] = 5; /* window 4 would start at 8 = in + pe */
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_ERR_OUTPUT_SIZE);
    db.count_overhang = 1; /* OpenVINO ceil rounding keeps it */
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_OK);
    CHECK(out[0] == 5 && out[1] == 4, "explicit output sizes %lldx%lld", (long long)out[0],
          (long long)out[1]);
    db = d, db.output_sizes[1] = 4, db.end_padding[1] = 1;
    EXPECT(ap_pool_output_sizes(&db, &t, out), AP_OK);
    ab = adaptive(2, 3, 0, 0);
    EXPECT(ap_adaptive_output_sizes(&ab, &t, out), AP_ERR_OUTPUT_SIZE);
    ab = adaptive(2, -1, 3, 0);
    EXPECT(ap_adaptive_avgpool(&ab, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_OUTPUT_SIZE);
    ab = adaptive(2, 20, 3, 0); /* more outputs than inputs: overlapping windows */
    EXPECT(ap_adaptive_output_sizes(&ab, &t, out), AP_OK);
    /* AP_ERR_OVERFLOW: see test_overflow */
    tb = tensor(1, 1, 2, BIG, BIG, 0, AP_LAYOUT_NCHW);
    EXPECT(ap_pool_output_sizes(&d, &tb, out), AP_ERR_OVERFLOW);
    /* AP_ERR_OUT_OF_MEMORY: 2^59 outputs along an axis are valid sizes
     * (2^62 bytes fit in int64), but the per-axis plan tables (24 bytes per
     * output) cannot be allocated; the call fails before touching y. An
     * empty batch with the same sizes has nothing to compute: AP_OK. */
    float one = 1.0f, sink = 0.0f;
    tb = tensor(1, 1, 1, 1, 0, 0, AP_LAYOUT_NCHW);
    ab = adaptive(1, INT64_C(1) << 59, 0, 0);
    EXPECT(ap_adaptive_output_sizes(&ab, &tb, out), AP_OK);
    EXPECT(ap_adaptive_avgpool(&ab, &tb, AP_DTYPE_F32, &one, &sink, 1), AP_ERR_OUT_OF_MEMORY);
    db = pool(1, 1, 1, 0, 0);
    db.output_sizes[0] = INT64_C(1) << 59, db.count_overhang = 1;
    EXPECT(ap_avgpool(&db, &tb, AP_DTYPE_F32, &one, &sink, 1), AP_ERR_OUT_OF_MEMORY);
    tb = tensor(0, 3, 1, 1, 0, 0, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_adaptive_avgpool(&ab, &tb, AP_DTYPE_F32, NULL, NULL, 1), AP_OK);
    CHECK_STATUS(ap_avgpool(&db, &tb, AP_DTYPE_F32, NULL, NULL, 1), AP_OK);
    /* AP_ERR_ISA */
    EXPECT(ap_set_isa("no-such-isa"), AP_ERR_ISA);
    EXPECT(ap_set_isa("AVX2 "), AP_ERR_ISA);
#if defined(__x86_64__) || defined(_M_X64)
    EXPECT(ap_set_isa("neon"), AP_ERR_ISA);
#elif defined(__aarch64__)
    EXPECT(ap_set_isa("avx2"), AP_ERR_ISA);
#endif
    CHECK_STATUS(ap_set_isa(NULL), AP_OK);
    CHECK_STATUS(ap_set_isa(""), AP_OK);
    CHECK_STATUS(ap_set_isa("auto"), AP_OK);
    /* AP_ERR_THREAD_POOL: the choice stays as it was */
    const char *pool = ap_thread_pool();
    EXPECT(ap_set_thread_pool("no-such-pool"), AP_ERR_THREAD_POOL);
    EXPECT(ap_set_thread_pool("OpenMP"), AP_ERR_THREAD_POOL);
    if (!ap_openmp_enabled()) EXPECT(ap_set_thread_pool("openmp"), AP_ERR_THREAD_POOL);
    CHECK(strcmp(ap_thread_pool(), pool) == 0, "ap_thread_pool() = %s after refusals, was %s",
          ap_thread_pool(), pool);
}

static void check_all_statuses_seen(void) {
    for (int s = 1; s < N_STATUS; ++s)
        CHECK(seen[s], "no invalid input produced status %d (%s)", s,
              ap_status_string((ap_status)s));
}

/* ---- NULL pointers, nothing written on error ------------------------------- */

static void test_null_pointers(void) {
    const ap_tensor_desc t = tensor(1, 1, 1, 6, 0, 0, AP_LAYOUT_NCHW);
    const ap_pool_desc d = pool(1, 2, 2, 0, 0);
    const ap_adaptive_desc a = adaptive(1, 3, 0, 0);
    float x[6] = {1, 2, 3, 4, 5, 6}, y[3];
    double xd[6] = {0}, yd[3];
    uint16_t xh[6] = {0}, yh[3];
    int64_t out[AP_MAX_SPATIAL];
    const int64_t w[1] = {2};
    ap_pool_desc dd;

    EXPECT(ap_pool_desc_init(NULL, 1, w), AP_ERR_NULL_POINTER);
    EXPECT(ap_pool_desc_init(&dd, 1, NULL), AP_ERR_NULL_POINTER);
    EXPECT(ap_pool_output_sizes(NULL, &t, out), AP_ERR_NULL_POINTER);
    EXPECT(ap_pool_output_sizes(&d, NULL, out), AP_ERR_NULL_POINTER);
    EXPECT(ap_pool_output_sizes(&d, &t, NULL), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_output_sizes(NULL, &t, out), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_output_sizes(&a, NULL, out), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_output_sizes(&a, &t, NULL), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool(NULL, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool(&d, NULL, AP_DTYPE_F32, x, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool(&d, &t, AP_DTYPE_F32, NULL, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool(&d, &t, AP_DTYPE_F32, x, NULL, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_backward(NULL, &t, AP_DTYPE_F32, y, x, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_backward(&d, NULL, AP_DTYPE_F32, y, x, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_backward(&d, &t, AP_DTYPE_F32, NULL, x, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_backward(&d, &t, AP_DTYPE_F32, y, NULL, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_backward(NULL, &t, AP_DTYPE_F32, y, x, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_backward(&a, NULL, AP_DTYPE_F32, y, x, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_backward(&a, &t, AP_DTYPE_F32, NULL, x, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_backward(&a, &t, AP_DTYPE_F32, y, NULL, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool(NULL, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool(&a, NULL, AP_DTYPE_F32, x, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool(&a, &t, AP_DTYPE_F32, NULL, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool(&a, &t, AP_DTYPE_F32, x, NULL, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_f32(&d, &t, NULL, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_f64(&d, &t, xd, NULL, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_f16(NULL, &t, xh, yh, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_bf16(&d, NULL, xh, yh, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_f32(&a, &t, x, NULL, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_f64(&a, &t, NULL, yd, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_f16(&a, &t, NULL, yh, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_adaptive_avgpool_bf16(NULL, &t, xh, yh, 1), AP_ERR_NULL_POINTER);
    /* An invalid descriptor is reported before a NULL buffer. */
    ap_pool_desc bad = d;
    bad.strides[0] = 0;
    EXPECT(ap_avgpool(&bad, &t, AP_DTYPE_F32, NULL, NULL, 1), AP_ERR_STRIDE);

    /* Empty tensors need no buffers. */
    ap_tensor_desc e = t;
    e.batch = 0;
    CHECK_STATUS(ap_avgpool(&d, &e, AP_DTYPE_F32, NULL, NULL, 1), AP_OK);
    CHECK_STATUS(ap_adaptive_avgpool_bf16(&a, &e, NULL, NULL, 0), AP_OK);
    e = t, e.channels = 0;
    CHECK_STATUS(ap_avgpool_f16(&d, &e, NULL, NULL, 4), AP_OK);
    e = tensor(0, 7, 3, 5, 6, 7, AP_LAYOUT_NHWC);
    const ap_pool_desc d3 = pool(3, 2, 1, 1, 1);
    CHECK_STATUS(ap_avgpool_f64(&d3, &e, NULL, NULL, 1), AP_OK);

    /* Nothing is written on error: out sizes and output buffer untouched. */
    for (int i = 0; i < 3; ++i) y[i] = -7.0f, out[i] = -7;
    EXPECT(ap_avgpool_f32(&d, &t, NULL, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_f32(&bad, &t, x, y, 1), AP_ERR_STRIDE);
    EXPECT(ap_pool_output_sizes(&bad, &t, out), AP_ERR_STRIDE);
    for (int i = 0; i < 3; ++i)
        CHECK(y[i] == -7.0f && out[i] == -7, "element %d written on error", i);
    /* Success writes out_sizes[0 .. rank-1] only. */
    CHECK_STATUS(ap_pool_output_sizes(&d, &t, out), AP_OK);
    CHECK(out[0] == 3 && out[1] == -7 && out[2] == -7, "out sizes %lld %lld %lld",
          (long long)out[0], (long long)out[1], (long long)out[2]);
}

/* Buffers not aligned for their element type: AP_ERR_ALIGNMENT from every call that takes
 * them, before anything is written; empty tensors need no alignment, as they need no buffers. */
static void test_misaligned_buffers(void) {
    _Alignas(16) unsigned char xb[16 * 8 + 8], yb[8 * 8 + 8];
    const ap_tensor_desc t = tensor(1, 2, 1, 8, 0, 0, AP_LAYOUT_NCHW);
    const ap_pool_desc d = pool(1, 2, 2, 0, 0);
    const ap_adaptive_desc a = adaptive(1, 4, 0, 0);
    const ap_dtype dtypes[4] = {AP_DTYPE_F32, AP_DTYPE_F64, AP_DTYPE_F16, AP_DTYPE_BF16};
    memset(xb, 0, sizeof xb);
    for (int k = 0; k < 4; ++k) {
        const ap_dtype dt = dtypes[k];
        const size_t es = dt == AP_DTYPE_F64 ? 8 : dt == AP_DTYPE_F32 ? 4 : 2;
        for (size_t off = 1; off < es; ++off) {
            unsigned char *xm = xb + off, *ym = yb + off;
            memset(yb, 0x5a, sizeof yb);
            EXPECT(ap_avgpool(&d, &t, dt, xm, yb, 1), AP_ERR_ALIGNMENT);
            EXPECT(ap_avgpool(&d, &t, dt, xb, ym, 1), AP_ERR_ALIGNMENT);
            EXPECT(ap_adaptive_avgpool(&a, &t, dt, xm, yb, 2), AP_ERR_ALIGNMENT);
            EXPECT(ap_avgpool_backward(&d, &t, dt, yb, xm, 1), AP_ERR_ALIGNMENT);
            EXPECT(ap_adaptive_avgpool_backward(&a, &t, dt, ym, xb, 1), AP_ERR_ALIGNMENT);
            EXPECT(ap_relayout(&t, dt, xm, yb, 1), AP_ERR_ALIGNMENT);
            ap_operator *op = NULL;
            CHECK_STATUS(ap_operator_create_pool(&d, &t, dt, 1, &op, NULL), AP_OK);
            if (op) {
                EXPECT(ap_operator_run(op, xb, ym), AP_ERR_ALIGNMENT);
                EXPECT(ap_operator_run_backward(op, ym, xb), AP_ERR_ALIGNMENT);
                ap_operator_destroy(op);
            }
            int untouched = 1;
            for (size_t i = 0; i < sizeof yb; ++i) untouched &= yb[i] == 0x5a;
            for (size_t i = 0; i < sizeof xb; ++i) untouched &= xb[i] == 0;
            CHECK(untouched, "dtype %d offset %zu: a buffer written on AP_ERR_ALIGNMENT", (int)dt,
                  off);
            ap_tensor_desc e = t;
            e.batch = 0;
            CHECK_STATUS(ap_avgpool(&d, &e, dt, xm, ym, 1), AP_OK);
        }
        /* aligned for the element, not for a vector: accepted */
        CHECK_STATUS(ap_avgpool(&d, &t, dt, xb + es, yb + es, 1), AP_OK);
    }
}

/* ---- sizes that overflow int64 ---------------------------------------------- */

static void test_overflow(void) {
    int64_t out[AP_MAX_SPATIAL];
    float x[4] = {0}, y[4];
    ap_tensor_desc t;
    ap_pool_desc d;
    ap_adaptive_desc a;
    /* spatial product */
    t = tensor(1, 1, 3, INT64_C(1) << 30, INT64_C(1) << 30, INT64_C(1) << 30, AP_LAYOUT_NCHW);
    d = pool(3, 1, 1, 0, 0);
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    EXPECT(ap_avgpool(&d, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_OVERFLOW);
    /* elements x 8 bytes: 2^59 elements fit, 2^60 do not */
    t = tensor(INT64_C(1) << 59, 1, 1, 1, 0, 0, AP_LAYOUT_NHWC);
    d = pool(1, 1, 1, 0, 0);
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_OK);
    t.batch = INT64_C(1) << 60;
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    t = tensor(INT64_C(1) << 30, INT64_C(1) << 30, 1, 16, 0, 0, AP_LAYOUT_NCHW);
    EXPECT(ap_avgpool(&d, &t, AP_DTYPE_F64, x, y, 1), AP_ERR_OVERFLOW);
    t = tensor(INT64_MAX, INT64_MAX, 1, 1, 0, 0, AP_LAYOUT_NCHW);
    EXPECT(ap_adaptive_avgpool(&(ap_adaptive_desc){.rank = 1, .output_sizes = {1, 0, 0}}, &t,
                               AP_DTYPE_F32, x, y, 1),
           AP_ERR_OVERFLOW);
    /* effective window (k - 1) * d + 1 */
    t = tensor(1, 1, 1, 4, 0, 0, AP_LAYOUT_NCHW);
    d = pool(1, BIG, 1, 0, 0);
    d.dilations[0] = 4;
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    d = pool(1, 2, 1, 0, 0);
    d.dilations[0] = INT64_MAX;
    EXPECT(ap_avgpool(&d, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_OVERFLOW);
    /* padded input in + pb + pe */
    d = pool(1, 1, 1, INT64_MAX, 1);
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    d = pool(1, 1, 1, BIG, BIG);
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    /* last window: (out - 1) * s, and its last tap (out - 1) * s + ek */
    d = pool(1, 1, 4, 0, 0);
    d.output_sizes[0] = BIG, d.count_overhang = 1;
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    d = pool(1, 4, 4, 0, 0);
    d.output_sizes[0] = INT64_C(1) << 61, d.count_overhang = 1;
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_ERR_OVERFLOW);
    /* default output size with a huge stride: one window */
    d = pool(1, 1, INT64_MAX, 0, 0);
    EXPECT(ap_pool_output_sizes(&d, &t, out), AP_OK);
    CHECK(out[0] == 1, "stride INT64_MAX gives %lld outputs", (long long)out[0]);
    /* output elements: product of huge explicit output sizes */
    t = tensor(1, 1, 3, 1, 1, 1, AP_LAYOUT_NCHW);
    a = adaptive(3, INT64_C(1) << 21, INT64_C(1) << 21, INT64_C(1) << 22);
    EXPECT(ap_adaptive_output_sizes(&a, &t, out), AP_ERR_OVERFLOW);
    a = adaptive(3, INT64_C(1) << 20, INT64_C(1) << 20, INT64_C(1) << 20);
    t.batch = INT64_C(1) << 4;
    EXPECT(ap_adaptive_avgpool(&a, &t, AP_DTYPE_F32, x, y, 1), AP_ERR_OVERFLOW);
    /* adaptive window ends ((o + 1) * in + out - 1) / out */
    t = tensor(1, 1, 1, 2, 0, 0, AP_LAYOUT_NCHW);
    a = adaptive(1, BIG, 0, 0);
    EXPECT(ap_adaptive_output_sizes(&a, &t, out), AP_ERR_OVERFLOW);
    t = tensor(1, 1, 1, INT64_C(1) << 59, 0, 0, AP_LAYOUT_NCHW);
    a = adaptive(1, 3, 0, 0);
    EXPECT(ap_adaptive_output_sizes(&a, &t, out), AP_OK);
    CHECK(out[0] == 3, "adaptive 2^59 -> 3 gives %lld", (long long)out[0]);
}

/* ---- hand-computed results ---------------------------------------------------- */

static ap_dtype const DTYPES[4] = {AP_DTYPE_F32, AP_DTYPE_F64, AP_DTYPE_F16, AP_DTYPE_BF16};

/* Relative tolerance of one rounding to dtype after a float32 sum. */
static double rel_tol(ap_dtype dt) {
    switch (dt) {
    case AP_DTYPE_F32: return 1e-6;
    case AP_DTYPE_F64: return 1e-14;
    case AP_DTYPE_F16: return 1e-3;
    case AP_DTYPE_BF16: return 8e-3;
    }
    return 0;
}

static const char *cur_isa = "?";

static void check_values(const char *what, ap_dtype dt, const double *got, const double *want,
                         int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        int ok;
        if (isnan(want[i]))
            ok = isnan(got[i]);
        else if (isinf(want[i]))
            ok = got[i] == want[i];
        else if (want[i] == 0) /* the sign of a zero too (-0 is OpenVINO's, ruling R8) */
            ok = got[i] == 0 && signbit(got[i]) == signbit(want[i]);
        else
            ok = fabs(got[i] - want[i]) <= rel_tol(dt) * fabs(want[i]) + 1e-300;
        CHECK(ok, "[%s] %s %s: y[%lld] = %.9g, expected %.9g", cur_isa, what, tu_dtype_name(dt),
              (long long)i, got[i], want[i]);
    }
}

/* Pool the doubles x (converted to dt) and return the outputs as doubles. */
static ap_status run(const ap_pool_desc *d, const ap_adaptive_desc *a, const ap_tensor_desc *t,
                     ap_dtype dt, const double *x, double *y, int64_t *ny) {
    int64_t out[AP_MAX_SPATIAL];
    ap_status s = d ? ap_pool_output_sizes(d, t, out) : ap_adaptive_output_sizes(a, t, out);
    if (s != AP_OK) return s;
    const int64_t nx = numel(t, t->sizes);
    *ny = numel(t, out);
    void *xb = malloc((size_t)(nx ? nx : 1) * tu_elem_size(dt));
    void *yb = malloc((size_t)(*ny ? *ny : 1) * tu_elem_size(dt));
    if (!xb || !yb) abort();
    for (int64_t i = 0; i < nx; ++i) tu_set(dt, xb, i, x[i]);
    s = d ? ap_avgpool(d, t, dt, xb, yb, 1) : ap_adaptive_avgpool(a, t, dt, xb, yb, 1);
    for (int64_t i = 0; s == AP_OK && i < *ny; ++i) y[i] = tu_get(dt, yb, i);
    free(xb);
    free(yb);
    return s;
}

/* Run and compare with `want` for every dtype. */
static void expect_all(const char *what, const ap_pool_desc *d, const ap_adaptive_desc *a,
                       const ap_tensor_desc *t, const double *x, const double *want,
                       int64_t nwant) {
    for (int i = 0; i < 4; ++i) {
        double y[256];
        int64_t ny = 0;
        CHECK_STATUS(run(d, a, t, DTYPES[i], x, y, &ny), AP_OK);
        CHECK(ny == nwant, "[%s] %s: %lld outputs, expected %lld", cur_isa, what, (long long)ny,
              (long long)nwant);
        if (ny == nwant) check_values(what, DTYPES[i], y, want, ny);
    }
}

static void test_block_means(void) {
    double x[16];
    for (int i = 0; i < 16; ++i) x[i] = i;
    const ap_tensor_desc t = tensor(1, 1, 2, 4, 4, 0, AP_LAYOUT_NCHW);
    ap_pool_desc d = pool(2, 2, 2, 0, 0);
    const double want[4] = {2.5, 4.5, 10.5, 12.5};
    expect_all("1x1x4x4 k2 s2", &d, NULL, &t, x, want, 4);
    d.divisor_override = 3;
    const double over[4] = {10.0 / 3, 18.0 / 3, 42.0 / 3, 50.0 / 3};
    expect_all("divisor_override 3", &d, NULL, &t, x, over, 4);
    d.divisor_override = -2;
    const double neg[4] = {-5, -9, -21, -25};
    expect_all("divisor_override -2", &d, NULL, &t, x, neg, 4);
}

static void test_padding_divisors(void) {
    double ones[25], ramp[25];
    for (int i = 0; i < 25; ++i) ones[i] = 1.0, ramp[i] = i;
    const ap_tensor_desc t = tensor(1, 1, 2, 5, 5, 0, AP_LAYOUT_NCHW);
    ap_pool_desc d = pool(2, 3, 1, 1, 1);
    double want[25];
    for (int i = 0; i < 25; ++i) want[i] = 1.0;
    expect_all("5x5 k3 s1 pad1 exclude, ones", &d, NULL, &t, ones, want, 25);
    /* ramp: corner (0,0) sums x[0,1,5,6] = 12 over 4 (exclude) or 9 */
    for (int oh = 0; oh < 5; ++oh)
        for (int ow = 0; ow < 5; ++ow) {
            double s = 0;
            int n = 0;
            for (int ih = oh - 1; ih <= oh + 1; ++ih)
                for (int iw = ow - 1; iw <= ow + 1; ++iw)
                    if (ih >= 0 && ih < 5 && iw >= 0 && iw < 5) s += ramp[ih * 5 + iw], ++n;
            want[oh * 5 + ow] = s / n;
        }
    CHECK(want[0] == 3.0 && want[24] == 21.0, "hand-computed corners");
    expect_all("5x5 k3 s1 pad1 exclude, ramp", &d, NULL, &t, ramp, want, 25);
    d.include_padding = 1;
    for (int oh = 0; oh < 5; ++oh)
        for (int ow = 0; ow < 5; ++ow) {
            const int rows = (oh == 0 || oh == 4) ? 2 : 3, cols = (ow == 0 || ow == 4) ? 2 : 3;
            want[oh * 5 + ow] = rows * cols / 9.0; /* corners 4/9, edges 6/9 */
        }
    expect_all("5x5 k3 s1 pad1 include, ones", &d, NULL, &t, ones, want, 25);
}

/* The backward pass by hand: 1-D, in 5, window 3, stride 2, pads 1/1 (windows {-1,0,1},
 * {1,2,3}, {3,4,5}), exclude pad (divisors 2, 3, 2) and include pad (3, 3, 3); adaptive 5 -> 2
 * (windows [0, 3) and [2, 5)). */
static void test_backward_by_hand(void) {
    const ap_tensor_desc t = tensor(1, 1, 1, 5, 0, 0, AP_LAYOUT_NCHW);
    ap_pool_desc d = pool(1, 3, 2, 1, 1);
    const double gy[3] = {6, 12, 6};
    double gx[5];
    EXPECT(ap_avgpool_backward(&d, &t, AP_DTYPE_F64, gy, gx, 1), AP_OK);
    const double want[5] = {3, 3 + 4, 4, 4 + 3, 3};
    for (int i = 0; i < 5; ++i)
        CHECK(gx[i] == want[i], "[%s] backward exclude pad gx[%d] = %g, want %g", cur_isa, i,
              gx[i], want[i]);
    d.include_padding = 1;
    EXPECT(ap_avgpool_backward(&d, &t, AP_DTYPE_F64, gy, gx, 1), AP_OK);
    const double want_incl[5] = {2, 2 + 4, 4, 4 + 2, 2};
    for (int i = 0; i < 5; ++i)
        CHECK(gx[i] == want_incl[i], "[%s] backward include pad gx[%d] = %g, want %g", cur_isa,
              i, gx[i], want_incl[i]);
    const ap_adaptive_desc a = adaptive(1, 2, 0, 0);
    const float gya[2] = {3, 6};
    float gxa[5];
    EXPECT(ap_adaptive_avgpool_backward(&a, &t, AP_DTYPE_F32, gya, gxa, 2), AP_OK);
    const float want_a[5] = {1, 1, 3, 2, 2};
    for (int i = 0; i < 5; ++i)
        CHECK(gxa[i] == want_a[i], "[%s] adaptive backward gx[%d] = %g, want %g", cur_isa, i,
              (double)gxa[i], (double)want_a[i]);
    /* an invalid descriptor: the forward's status */
    ap_pool_desc bad = pool(1, 9, 1, 0, 0);
    EXPECT(ap_avgpool_backward(&bad, &t, AP_DTYPE_F64, gy, gx, 1), AP_ERR_WINDOW_TOO_LARGE);
}

static void test_adaptive_windows(void) {
    double x[10];
    for (int i = 0; i < 10; ++i) x[i] = i * i;
    const ap_tensor_desc t = tensor(1, 1, 1, 10, 0, 0, AP_LAYOUT_NCHW);
    const ap_adaptive_desc a = adaptive(1, 3, 0, 0);
    /* windows [0,4), [3,7), [6,10) */
    const double want[3] = {(0 + 1 + 4 + 9) / 4.0, (9 + 16 + 25 + 36) / 4.0,
                            (36 + 49 + 64 + 81) / 4.0};
    expect_all("adaptive 10 -> 3", NULL, &a, &t, x, want, 3);
    /* 2-D, 10x3 -> 3x2: rows as above, columns [0,2), [1,3) */
    double x2[30], want2[6];
    for (int i = 0; i < 30; ++i) x2[i] = i;
    const ap_tensor_desc t2 = tensor(1, 1, 2, 10, 3, 0, AP_LAYOUT_NCHW);
    const ap_adaptive_desc a2 = adaptive(2, 3, 2, 0);
    const int r0[3] = {0, 3, 6}, c0[2] = {0, 1};
    for (int o = 0; o < 3; ++o)
        for (int p = 0; p < 2; ++p) {
            double s = 0;
            for (int i = r0[o]; i < r0[o] + 4; ++i)
                for (int j = c0[p]; j < c0[p] + 2; ++j) s += x2[i * 3 + j];
            want2[o * 2 + p] = s / 8;
        }
    expect_all("adaptive 10x3 -> 3x2", NULL, &a2, &t2, x2, want2, 6);
    /* more outputs than inputs: 3 -> 5 windows [0,1) [0,2) [1,2) [1,3) [2,3) */
    const double x3[3] = {1, 2, 4}, want3[5] = {1, 1.5, 2, 3, 4};
    const ap_tensor_desc t3 = tensor(1, 1, 1, 3, 0, 0, AP_LAYOUT_NCHW);
    const ap_adaptive_desc a3 = adaptive(1, 5, 0, 0);
    expect_all("adaptive 3 -> 5", NULL, &a3, &t3, x3, want3, 5);
}

static void test_count_overhang(void) {
    const double x[5] = {1, 2, 3, 4, 5};
    const ap_tensor_desc t = tensor(1, 1, 1, 5, 0, 0, AP_LAYOUT_NCHW);
    int64_t out[AP_MAX_SPATIAL];
    ap_pool_desc d = pool(1, 2, 2, 0, 0);
    CHECK_STATUS(ap_pool_output_sizes(&d, &t, out), AP_OK);
    CHECK(out[0] == 2, "floor rule gives %lld", (long long)out[0]);
    d.output_sizes[0] = 3; /* ceil: the last window [4, 6) overhangs */
    const double excl[3] = {1.5, 3.5, 5};
    expect_all("k2 s2 ceil exclude", &d, NULL, &t, x, excl, 3);
    d.include_padding = 1; /* only positions < in + pe count */
    expect_all("k2 s2 ceil include", &d, NULL, &t, x, excl, 3);
    d.count_overhang = 1; /* OpenVINO: the whole kernel counts */
    const double over[3] = {1.5, 3.5, 2.5};
    expect_all("k2 s2 ceil include count_overhang", &d, NULL, &t, x, over, 3);
    d.include_padding = 0; /* without include_padding, count_overhang changes only windows
                            * starting at or past the input's end (below) */
    expect_all("k2 s2 ceil exclude count_overhang", &d, NULL, &t, x, excl, 3);

    /* k3 s2 pe1, out 3: the last window {4, 5, 6} has 1 valid position,
     * 2 inside the padded range, 3 in the kernel. */
    d = pool(1, 3, 2, 0, 1);
    d.output_sizes[0] = 3;
    const double w3e[3] = {2, 4, 5};
    expect_all("k3 s2 pe1 exclude", &d, NULL, &t, x, w3e, 3);
    d.include_padding = 1;
    const double w3i[3] = {2, 4, 2.5};
    expect_all("k3 s2 pe1 include", &d, NULL, &t, x, w3i, 3);
    d.count_overhang = 1;
    const double w3o[3] = {2, 4, 5.0 / 3};
    expect_all("k3 s2 pe1 include count_overhang", &d, NULL, &t, x, w3o, 3);

    /* A window starting at or past the padded end exists only with
     * count_overhang: its sum is 0, divided by k (include) or, without
     * include_padding, by OpenVINO's in - start (ruling R8): negative past the
     * input's end (-0), 0 exactly at the end (NaN). */
    const ap_tensor_desc t4 = tensor(1, 1, 1, 4, 0, 0, AP_LAYOUT_NCHW);
    d = pool(1, 1, 5, 0, 0);
    d.output_sizes[0] = 2;
    EXPECT(ap_pool_output_sizes(&d, &t4, out), AP_ERR_OUTPUT_SIZE);
    d.count_overhang = 1;
    const double past_excl[2] = {1, -0.0}, past_incl[2] = {1, 0};
    expect_all("window past the end, exclude", &d, NULL, &t4, x, past_excl, 2);
    d.include_padding = 1;
    expect_all("window past the end, include", &d, NULL, &t4, x, past_incl, 2);
    const ap_tensor_desc t5 = tensor(1, 1, 1, 5, 0, 0, AP_LAYOUT_NCHW);
    d = pool(1, 1, 5, 0, 0);
    d.output_sizes[0] = 2;
    d.count_overhang = 1;
    const double at_end[2] = {1, NAN};
    expect_all("window starting at the end, exclude", &d, NULL, &t5, x, at_end, 2);
}

static void test_empty_windows(void) {
    const double x[3] = {3, 6, 9};
    const ap_tensor_desc t = tensor(1, 1, 1, 3, 0, 0, AP_LAYOUT_NCHW);
    ap_pool_desc d = pool(1, 1, 1, 2, 0); /* windows {-2}, {-1}, {0}, {1}, {2} */
    const double excl[5] = {NAN, NAN, 3, 6, 9}, incl[5] = {0, 0, 3, 6, 9};
    expect_all("empty windows exclude", &d, NULL, &t, x, excl, 5);
    d.include_padding = 1;
    expect_all("empty windows include", &d, NULL, &t, x, incl, 5);
    d.include_padding = 0, d.divisor_override = 2; /* the override wins: 0 / 2 */
    const double over[5] = {0, 0, 1.5, 3, 4.5};
    expect_all("empty windows divisor_override", &d, NULL, &t, x, over, 5);
    /* 2-D: a padded row and column of outputs around a 2x2 input */
    const ap_tensor_desc t2 = tensor(1, 1, 2, 2, 2, 0, AP_LAYOUT_NHWC);
    d = pool(2, 1, 1, 1, 0);
    const double x2[4] = {1, 2, 3, 4}, want2[9] = {NAN, NAN, NAN, NAN, 1, 2, NAN, 3, 4};
    expect_all("2-D empty windows", &d, NULL, &t2, x2, want2, 9);
}

/* Stores round to nearest, ties to even: each pair's mean lies exactly
 * half-way between two neighbours of the 16-bit format. */
static void test_round_to_nearest_even(void) {
    for (int bf = 0; bf < 2; ++bf) {
        const ap_dtype dt = bf ? AP_DTYPE_BF16 : AP_DTYPE_F16;
        const uint16_t one = bf ? 0x3F80 : 0x3C00; /* 1.0; one + i is i ulps above */
        /* (input pair offsets, expected output offset) */
        static const int cases[][3] = {
            {0, 1, 0}, /* 1 + ulp/2: tie, to even 0        */
            {1, 2, 2}, /* 1 + 3ulp/2: tie, to even 2       */
            {0, 3, 2}, /* 1 + 3ulp/2 again                 */
            {2, 3, 2}, /* 1 + 5ulp/2: tie, to even 2       */
            {3, 4, 4}, /* 1 + 7ulp/2: tie, to even 4       */
            {1, 1, 1}, /* exact                            */
        };
        enum { NC = sizeof cases / sizeof cases[0] };
        for (int layout = 0; layout < 2; ++layout)
            for (int reps = 1; reps <= 7; reps += 6) {
                /* NCHW: one row of 2 * NC * reps inputs, k2 s2.
                 * NHWC: length 2, NC * reps channels, k2. */
                const int64_t n = NC * reps;
                uint16_t x[2 * 6 * 7], y[6 * 7];
                ap_tensor_desc t;
                for (int64_t i = 0; i < n; ++i) {
                    const int c = (int)(i % NC);
                    const uint16_t a = (uint16_t)(one + cases[c][0]), b = (uint16_t)(one + cases[c][1]);
                    const int sign = (i / NC) % 2 ? 0x8000 : 0; /* negative ties too */
                    if (layout == 0)
                        x[2 * i] = (uint16_t)(a | sign), x[2 * i + 1] = (uint16_t)(b | sign);
                    else
                        x[i] = (uint16_t)(a | sign), x[n + i] = (uint16_t)(b | sign);
                }
                t = layout == 0 ? tensor(1, 1, 1, 2 * n, 0, 0, AP_LAYOUT_NCHW)
                                : tensor(1, n, 1, 2, 0, 0, AP_LAYOUT_NHWC);
                const ap_pool_desc d = pool(1, 2, 2, 0, 0);
                CHECK_STATUS(bf ? ap_avgpool_bf16(&d, &t, x, y, 1) : ap_avgpool_f16(&d, &t, x, y, 1),
                             AP_OK);
                for (int64_t i = 0; i < n; ++i) {
                    const int c = (int)(i % NC);
                    const int sign = (i / NC) % 2 ? 0x8000 : 0;
                    const uint16_t want = (uint16_t)((one + cases[c][2]) | sign);
                    CHECK(y[i] == want, "[%s] %s %s mean of +%d and +%d ulps: 0x%04x, expected 0x%04x",
                          cur_isa, tu_dtype_name(dt), layout ? "NHWC" : "NCHW", cases[c][0],
                          cases[c][1], y[i], want);
                }
            }
        /* NaN stays NaN (quiet); an input sNaN pattern included. */
        const uint16_t snan = bf ? 0x7F81 : 0x7C01, inf = bf ? 0x7F80 : 0x7C00;
        uint16_t x[4] = {snan, one, inf, one}, y[2];
        const ap_tensor_desc t = tensor(1, 1, 1, 4, 0, 0, AP_LAYOUT_NCHW);
        const ap_pool_desc d = pool(1, 2, 2, 0, 0);
        CHECK_STATUS(bf ? ap_avgpool_bf16(&d, &t, x, y, 1) : ap_avgpool_f16(&d, &t, x, y, 1), AP_OK);
        const uint16_t quiet = bf ? 0x0040 : 0x0200;
        CHECK((y[0] & inf) == inf && (y[0] & (quiet - 1u + quiet)) && (y[0] & quiet),
              "[%s] %s NaN stored as 0x%04x", cur_isa, tu_dtype_name(dt), y[0]);
        CHECK(y[1] == inf, "[%s] %s inf stored as 0x%04x", cur_isa, tu_dtype_name(dt), y[1]);
    }
}

/* Channels last gives the transpose of channels first. */
static void test_nhwc_transpose(void) {
    tu_seed(7);
    for (int rank = 1; rank <= 3; ++rank)
        for (int kind = 0; kind < 3; ++kind) {
            const int64_t N = 2, C = 1 + rank * 6; /* 7, 13, 19: vector tails */
            int64_t sizes[3] = {1, 1, 1}, plane = 1;
            for (int a = 0; a < rank; ++a) sizes[a] = 9 - rank, plane *= sizes[a];
            ap_tensor_desc tc = tensor(N, C, rank, sizes[0], sizes[1], sizes[2], AP_LAYOUT_NCHW);
            ap_tensor_desc tl = tc;
            tl.layout = AP_LAYOUT_NHWC;
            ap_pool_desc d = pool(rank, 3, 2, 1, 1);
            d.include_padding = kind == 1;
            if (kind == 2) d = pool(rank, 5, 1, 0, 0); /* wider window: other kernel paths */
            const ap_adaptive_desc a = adaptive(rank, 4, 3, 2);
            for (int ad = 0; ad < 2; ++ad) {
                const ap_pool_desc *dp = ad ? NULL : &d;
                const ap_adaptive_desc *ap = ad ? &a : NULL;
                const int64_t nx = N * C * plane;
                double *x = malloc((size_t)nx * sizeof(double));
                double *xt = malloc((size_t)nx * sizeof(double));
                double yc[2 * 19 * 64], yl[2 * 19 * 64];
                for (int64_t i = 0; i < nx; ++i) x[i] = tu_uniform() * 2 - 1;
                for (int64_t n = 0; n < N; ++n) /* xt[n, p, c] = x[n, c, p] */
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t p = 0; p < plane; ++p)
                            xt[(n * plane + p) * C + c] = x[(n * C + c) * plane + p];
                for (int i = 0; i < 4; ++i) {
                    int64_t nc = 0, nl = 0;
                    CHECK_STATUS(run(dp, ap, &tc, DTYPES[i], x, yc, &nc), AP_OK);
                    CHECK_STATUS(run(dp, ap, &tl, DTYPES[i], xt, yl, &nl), AP_OK);
                    CHECK(nc == nl && nc <= 2 * 19 * 64, "output sizes differ");
                    const int64_t op = nc / (N * C);
                    for (int64_t n = 0; n < N; ++n)
                        for (int64_t c = 0; c < C; ++c)
                            for (int64_t p = 0; p < op; ++p) {
                                const double u = yc[(n * C + c) * op + p];
                                const double v = yl[(n * op + p) * C + c];
                                const int exact = strcmp(cur_isa, "scalar") == 0;
                                const double tol = exact ? 0 : 4 * rel_tol(DTYPES[i]);
                                CHECK(fabs(u - v) <= tol, "[%s] rank %d %s %s: NHWC %.9g != NCHW %.9g",
                                      cur_isa, rank, ad ? "adaptive" : "pool",
                                      tu_dtype_name(DTYPES[i]), v, u);
                            }
                }
                free(x);
                free(xt);
            }
        }
}

/* ap_relayout: the index map NCHW <-> NHWC for every element width, with
 * sizes around the 16-row tiles and several threads; a round trip gives the
 * same bits; its errors. */
static void test_relayout(void) {
    tu_seed(11);
    static const int64_t shapes[][5] = {/* N, C, rank, size0, size1 */
                                        {1, 1, 1, 1, 1},     {2, 3, 1, 17, 1},
                                        {1, 64, 2, 7, 9},    {3, 17, 2, 16, 16},
                                        {2, 33, 1, 1000, 1}, {1, 130, 2, 31, 5}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si)
        for (int i = 0; i < 4; ++i)
            for (int layout = 0; layout < 2; ++layout) {
                const int64_t *sh = shapes[si];
                const int64_t N = sh[0], C = sh[1], plane = sh[3] * sh[4];
                ap_tensor_desc t = tensor(N, C, (int)sh[2], sh[3], sh[4], 1, (ap_layout)layout);
                if (sh[2] == 1) t.sizes[0] = plane;
                const ap_dtype dt = DTYPES[i];
                const size_t es = dt == AP_DTYPE_F64 ? 8 : dt == AP_DTYPE_F32 ? 4 : 2;
                const int64_t nx = N * C * plane;
                char *x = malloc((size_t)nx * es), *y = malloc((size_t)nx * es),
                     *z = malloc((size_t)nx * es);
                if (!x || !y || !z) abort();
                for (int64_t k = 0; k < nx; ++k) tu_set(dt, x, k, (double)(k % 2003) - 1000);
                CHECK_STATUS(ap_relayout(&t, dt, x, y, (int)(1 + si % 3)), AP_OK);
                long bad = 0;
                for (int64_t n = 0; n < N; ++n)
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t p = 0; p < plane; ++p) {
                            const int64_t first = (n * C + c) * plane + p;
                            const int64_t last = (n * plane + p) * C + c;
                            const int64_t from = layout == AP_LAYOUT_NCHW ? first : last;
                            const int64_t to = layout == AP_LAYOUT_NCHW ? last : first;
                            bad += memcmp(x + from * (int64_t)es, y + to * (int64_t)es, es) != 0;
                        }
                CHECK(bad == 0, "ap_relayout %s N%lld C%lld plane %lld from %s: %ld misplaced",
                      tu_dtype_name(dt), (long long)N, (long long)C, (long long)plane,
                      layout ? "NHWC" : "NCHW", bad);
                ap_tensor_desc back = t;
                back.layout = layout ? AP_LAYOUT_NCHW : AP_LAYOUT_NHWC;
                CHECK_STATUS(ap_relayout(&back, dt, y, z, 2), AP_OK);
                CHECK(memcmp(x, z, (size_t)nx * es) == 0, "ap_relayout round trip differs");
                free(x);
                free(y);
                free(z);
            }
    float one = 1, out = 0;
    ap_tensor_desc t = tensor(1, 1, 2, 1, 1, 1, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_relayout(NULL, AP_DTYPE_F32, &one, &out, 1), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_relayout(&t, AP_DTYPE_F32, NULL, &out, 1), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_relayout(&t, (ap_dtype)9, &one, &out, 1), AP_ERR_DTYPE);
    t.layout = (ap_layout)5;
    CHECK_STATUS(ap_relayout(&t, AP_DTYPE_F32, &one, &out, 1), AP_ERR_LAYOUT);
    t = tensor(1, 1, 4, 1, 1, 1, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_relayout(&t, AP_DTYPE_F32, &one, &out, 1), AP_ERR_RANK);
    t = tensor(1, 1, 2, 0, 1, 1, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_relayout(&t, AP_DTYPE_F32, &one, &out, 1), AP_ERR_TENSOR_SIZE);
    t = tensor(INT64_MAX / 2, 4, 1, 1, 1, 1, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_relayout(&t, AP_DTYPE_F32, &one, &out, 1), AP_ERR_OVERFLOW);
    t = tensor(0, 4, 1, 3, 1, 1, AP_LAYOUT_NHWC); /* no element: nothing read or written */
    CHECK_STATUS(ap_relayout(&t, AP_DTYPE_F32, NULL, NULL, 1), AP_OK);
    CHECK(out == 0, "ap_relayout wrote on error");
}

static void test_build_info(void) {
    char v[64];
    snprintf(v, sizeof v, "%d.%d.%d", AP_VERSION_MAJOR, AP_VERSION_MINOR, AP_VERSION_PATCH);
    CHECK(strcmp(ap_version(), v) == 0, "ap_version() = %s, header says %s", ap_version(), v);
    CHECK(ap_openmp_enabled() == 0 || ap_openmp_enabled() == 1, "ap_openmp_enabled");
    CHECK(ap_max_threads() >= 1, "ap_max_threads() = %d", ap_max_threads());
    const char *isa = ap_isa();
    int known = 0;
    for (int i = 0; i < TU_N_ISAS; ++i) known |= strcmp(isa, tu_isas[i]) == 0;
    CHECK(known, "ap_isa() = %s", isa);
    /* the ISA in use was compiled in; OpenMP is reported as the library saw it */
    const char *build = ap_build_info();
    CHECK(strstr(build, "kernels: ") && strstr(build, isa), "ap_build_info() = %s", build);
    CHECK((strstr(build, "openmp: off") == NULL) == (ap_openmp_enabled() == 1),
          "ap_build_info() = %s, ap_openmp_enabled() = %d", build, ap_openmp_enabled());
    /* ap_compiled_isas: names from the one list, scalar first, the one in use
     * among them, and every one ap_set_isa accepts among them */
    const char *compiled = ap_compiled_isas();
    CHECK(strncmp(compiled, "scalar", 6) == 0 && strstr(compiled, isa) && strstr(build, compiled),
          "ap_compiled_isas() = %s (isa %s, build %s)", compiled, isa, build);
    for (int i = 0; i < TU_N_ISAS; ++i) {
        const char *p = strstr(compiled, tu_isas[i]);
        const size_t n = strlen(tu_isas[i]);
        const int listed = p && (p[n] == ' ' || p[n] == 0);
        CHECK(listed || ap_set_isa(tu_isas[i]) == AP_ERR_ISA, "%s not in ap_compiled_isas() = %s",
              tu_isas[i], compiled);
    }
    ap_set_isa("auto");
    /* ap_thread_pool: "own" by default (ctest sets no AVGPOOL_THREAD_POOL), "openmp" once
     * chosen where OpenMP is built in, "own" again for NULL and "" */
    CHECK(strcmp(ap_thread_pool(), "own") == 0, "ap_thread_pool() = %s", ap_thread_pool());
    if (ap_openmp_enabled()) {
        CHECK_STATUS(ap_set_thread_pool("openmp"), AP_OK);
        CHECK(strcmp(ap_thread_pool(), "openmp") == 0, "ap_thread_pool() = %s", ap_thread_pool());
    }
    CHECK_STATUS(ap_set_thread_pool(NULL), AP_OK);
    CHECK(strcmp(ap_thread_pool(), "own") == 0, "ap_thread_pool() = %s", ap_thread_pool());
    CHECK_STATUS(ap_set_thread_pool(""), AP_OK);
    CHECK(strcmp(ap_thread_pool(), "own") == 0, "ap_thread_pool() = %s", ap_thread_pool());
    CHECK_STATUS(ap_set_thread_pool("own"), AP_OK);
    printf("version %s, isa %s, openmp %d, max threads %d\nbuild %s\n", ap_version(), isa,
           ap_openmp_enabled(), ap_max_threads(), build);
}

/* ap_pool_check / ap_adaptive_check: the axis, field and numbers of the
 * rule that broke, and the same status as ap_*_output_sizes. */
static void expect_error(const ap_error *e, ap_status status, int axis, const char *field,
                         const char *detail, const char *what) {
    CHECK(e->status == status && e->axis == axis && e->field && strcmp(e->field, field) == 0 &&
              strstr(e->detail, detail) != NULL,
          "%s: status %d axis %d field '%s' detail '%s', expected %d %d '%s' '...%s...'", what,
          (int)e->status, (int)e->axis, e->field ? e->field : "(null)", e->detail, (int)status,
          axis, field, detail);
}

static void test_check_errors(void) {
    ap_error e;
    int64_t out[3] = {-7, -7, -7}, o2[3];
    ap_tensor_desc t = tensor(1, 2, 2, 5, 5, 0, AP_LAYOUT_NCHW);
    ap_pool_desc d = pool(2, 2, 1, 0, 0);
    CHECK_STATUS(ap_pool_check(&d, &t, out, &e), AP_OK);
    expect_error(&e, AP_OK, -1, "", "", "valid");
    CHECK(out[0] == 4 && out[1] == 4 && out[2] == -7, "out_sizes %lld %lld %lld",
          (long long)out[0], (long long)out[1], (long long)out[2]);
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, NULL), AP_OK);
    /* window larger than the padded input on axis 1 (dilation 3, end padding 1) */
    d.window[1] = 3, d.dilations[1] = 3, d.end_padding[1] = 1;
    CHECK_STATUS(ap_pool_check(&d, &t, out, &e), AP_ERR_WINDOW_TOO_LARGE);
    expect_error(&e, AP_ERR_WINDOW_TOO_LARGE, 1, "window",
                 "effective window 7 > padded input 6 = 5 + 0 + 1", "too large");
    CHECK_STATUS(ap_pool_output_sizes(&d, &t, o2), e.status);
    d = pool(2, 2, 1, 0, 0);
    d.strides[0] = 0;
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, &e), AP_ERR_STRIDE);
    expect_error(&e, AP_ERR_STRIDE, 0, "strides", "stride 0 < 1", "stride");
    d = pool(2, 2, 1, 0, 0);
    d.end_padding[1] = -1;
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, &e), AP_ERR_PADDING);
    expect_error(&e, AP_ERR_PADDING, 1, "end_padding", "end padding -1 < 0", "padding");
    d = pool(2, 2, 1, 0, INT64_MAX);
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, &e), AP_ERR_OVERFLOW);
    expect_error(&e, AP_ERR_OVERFLOW, 0, "start_padding/end_padding", "overflows int64",
                 "padded overflow");
    d = pool(2, 2, 1, 0, 0);
    d.window[1] = INT64_C(1) << 40, d.dilations[1] = INT64_C(1) << 40;
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, &e), AP_ERR_OVERFLOW);
    expect_error(&e, AP_ERR_OVERFLOW, 1, "window/dilations", "effective window", "ek overflow");
    d = pool(2, 2, 2, 0, 0);
    d.output_sizes[0] = 4;
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, &e), AP_ERR_OUTPUT_SIZE);
    expect_error(&e, AP_ERR_OUTPUT_SIZE, 0, "output_sizes",
                 "output size 4 starts its last window past the padded end", "past the end");
    d = pool(2, 2, INT64_C(1) << 62, 0, 0);
    d.output_sizes[1] = 3, d.count_overhang = 1;
    CHECK_STATUS(ap_pool_check(&d, &t, NULL, &e), AP_ERR_OVERFLOW);
    expect_error(&e, AP_ERR_OVERFLOW, 1, "output_sizes/strides", "overflows", "last window");
    /* the tensor's fields */
    d = pool(2, 2, 1, 0, 0);
    ap_tensor_desc bad = tensor(1, 2, 2, 5, 0, 0, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_pool_check(&d, &bad, NULL, &e), AP_ERR_TENSOR_SIZE);
    expect_error(&e, AP_ERR_TENSOR_SIZE, 1, "sizes", "size 0 < 1", "zero size");
    bad = tensor(1, -2, 2, 5, 5, 0, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_pool_check(&d, &bad, NULL, &e), AP_ERR_TENSOR_SIZE);
    expect_error(&e, AP_ERR_TENSOR_SIZE, -1, "channels", "channels -2 < 0", "channels");
    bad = tensor(1, 2, 3, 5, 5, 5, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_pool_check(&d, &bad, NULL, &e), AP_ERR_RANK);
    expect_error(&e, AP_ERR_RANK, -1, "rank", "tensor rank 3, descriptor rank 2", "rank");
    bad = tensor(1, 2, 2, 5, 5, 0, (ap_layout)9);
    CHECK_STATUS(ap_pool_check(&d, &bad, NULL, &e), AP_ERR_LAYOUT);
    expect_error(&e, AP_ERR_LAYOUT, -1, "layout", "layout 9", "layout");
    bad = tensor(INT64_C(1) << 40, INT64_C(1) << 20, 2, 5, 5, 0, AP_LAYOUT_NCHW);
    CHECK_STATUS(ap_pool_check(&d, &bad, NULL, &e), AP_ERR_OVERFLOW);
    expect_error(&e, AP_ERR_OVERFLOW, -1, "sizes", "8 bytes overflows int64", "input bytes");
    CHECK_STATUS(ap_pool_check(NULL, &t, NULL, &e), AP_ERR_NULL_POINTER);
    expect_error(&e, AP_ERR_NULL_POINTER, -1, "desc", "", "NULL desc");
    /* adaptive */
    ap_adaptive_desc a = adaptive(2, 3, 0, 0);
    CHECK_STATUS(ap_adaptive_check(&a, &t, out, &e), AP_ERR_OUTPUT_SIZE);
    expect_error(&e, AP_ERR_OUTPUT_SIZE, 1, "output_sizes", "output size 0 < 1", "adaptive 0");
    a = adaptive(2, 3, INT64_MAX / 4, 0);
    CHECK_STATUS(ap_adaptive_check(&a, &t, out, &e), AP_ERR_OVERFLOW);
    expect_error(&e, AP_ERR_OVERFLOW, 1, "output_sizes", "overflows int64", "adaptive bound");
    CHECK_STATUS(ap_adaptive_output_sizes(&a, &t, o2), e.status);
    a = adaptive(2, 3, 2, 0);
    CHECK_STATUS(ap_adaptive_check(&a, &t, NULL, &e), AP_OK);
    expect_error(&e, AP_OK, -1, "", "", "adaptive valid");
}

/* ap_explain_*: the line's form, truncation, and the errors of the call. */
static void test_explain(void) {
    const ap_tensor_desc t = tensor(1, 2, 2, 17, 33, 0, AP_LAYOUT_NCHW);
    const ap_pool_desc d = pool(2, 3, 2, 1, 1);
    const ap_adaptive_desc a = adaptive(2, 4, 4, 0);
    char line[256], small[12], prefix[64];
    snprintf(prefix, sizeof prefix, "isa %s, layout NCHW, f32: ", ap_isa());
    CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F32, line, sizeof line), AP_OK);
    CHECK(strncmp(line, prefix, strlen(prefix)) == 0 && strstr(line, " ("), "explain: %s", line);
    CHECK(strcmp(ap_isa(), "scalar") != 0 || strstr(line, ": scalar ("), "explain: %s", line);
    CHECK_STATUS(ap_explain_adaptive(&a, &t, AP_DTYPE_BF16, line, sizeof line), AP_OK);
    CHECK(strstr(line, "bf16: "), "explain adaptive: %s", line);
    /* float64: its own kernel on a vector instruction set (a small plane: groups of planes
     * summed directly), the scalar one else */
    CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F64, line, sizeof line), AP_OK);
    CHECK(strstr(line, strcmp(ap_isa(), "scalar") == 0 ? "f64: scalar (" : "f64: f64-direct ("),
          "explain f64: %s", line);
    /* truncated to fit, NUL-terminated; len 0 writes nothing */
    memset(small, 'x', sizeof small);
    CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F32, small, sizeof small), AP_OK);
    CHECK(strlen(small) == sizeof small - 1 && strncmp(small, line, sizeof small - 1) == 0,
          "truncated explain: %s", small);
    CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F32, NULL, 0), AP_OK);
    CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F32, NULL, 8), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_explain_pool(NULL, &t, AP_DTYPE_F32, line, sizeof line), AP_ERR_NULL_POINTER);
    CHECK_STATUS(ap_explain_adaptive(&a, NULL, AP_DTYPE_F32, line, sizeof line),
                 AP_ERR_NULL_POINTER);
    /* the errors of the call it explains */
    ap_pool_desc bad = pool(2, 40, 1, 0, 0);
    CHECK_STATUS(ap_explain_pool(&bad, &t, AP_DTYPE_F32, line, sizeof line),
                 AP_ERR_WINDOW_TOO_LARGE);
    CHECK_STATUS(ap_explain_pool(&d, &t, (ap_dtype)7, line, sizeof line), AP_ERR_DTYPE);
    const ap_adaptive_desc a0 = adaptive(2, 0, 4, 0);
    CHECK_STATUS(ap_explain_adaptive(&a0, &t, AP_DTYPE_F32, line, sizeof line),
                 AP_ERR_OUTPUT_SIZE);
    /* an empty batch runs no kernel */
    const ap_tensor_desc t0 = tensor(0, 2, 2, 17, 33, 0, AP_LAYOUT_NHWC);
    CHECK_STATUS(ap_explain_pool(&d, &t0, AP_DTYPE_F16, line, sizeof line), AP_OK);
    CHECK(strstr(line, "layout NHWC, f16: none ("), "explain empty batch: %s", line);
}

/* AVGPOOL_ISA names no instruction set: computing calls fail until
 * ap_set_isa picks one; validation still comes first. */
static int bad_isa_env(void) {
    const ap_tensor_desc t = tensor(1, 1, 1, 4, 0, 0, AP_LAYOUT_NCHW);
    const ap_pool_desc d = pool(1, 2, 2, 0, 0);
    const ap_adaptive_desc a = adaptive(1, 2, 0, 0);
    float x[4] = {1, 2, 3, 4}, y[2] = {-1, -1};
    CHECK(strcmp(ap_isa(), "unavailable") == 0, "ap_isa() = %s", ap_isa());
    CHECK_STATUS(ap_avgpool_f32(&d, &t, x, y, 1), AP_ERR_ISA);
    CHECK_STATUS(ap_adaptive_avgpool_f32(&a, &t, x, y, 1), AP_ERR_ISA);
    ap_tile tile = {.out_start = {0}, .out_size = {2}, .in_start = {0}, .in_size = {4}};
    CHECK_STATUS(ap_avgpool_tile(&d, &t, AP_DTYPE_F32, &tile, x, y, 1), AP_ERR_ISA);
    CHECK(y[0] == -1 && y[1] == -1, "output written on AP_ERR_ISA");
    char line[128];
    CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F32, line, sizeof line), AP_ERR_ISA);
    ap_pool_desc bad = d;
    bad.window[0] = 0;
    CHECK_STATUS(ap_avgpool_f32(&bad, &t, x, y, 1), AP_ERR_WINDOW);
    CHECK_STATUS(ap_set_isa("no-such-isa"), AP_ERR_ISA);
    CHECK_STATUS(ap_avgpool_f32(&d, &t, x, y, 1), AP_ERR_ISA);
    CHECK_STATUS(ap_set_isa("scalar"), AP_OK);
    CHECK_STATUS(ap_avgpool_f32(&d, &t, x, y, 1), AP_OK);
    CHECK(y[0] == 1.5f && y[1] == 3.5f, "after ap_set_isa: %g %g", y[0], y[1]);
    return tu_exit("test_api --bad-isa-env");
}

/* nan_policy omit by hand on {1, NaN, 3, NaN, NaN, 6}: window 2 stride 1
 * gives 1, 3, 3, NaN (no value left), 6; window 3, pads 1/1, include padding
 * (padding counts, NaN does not): 1/2, 4/2, 3/1, 3/1, 6/1, 6/2; with
 * min_count 2 only the second window keeps two values. Every dtype and
 * instruction set (the SIMD ones through nan_omit.c). */
static void test_nan_omit(void) {
    const double nan = NAN;
    const double x[6] = {1, nan, 3, nan, nan, 6};
    const ap_tensor_desc t = tensor(1, 1, 1, 6, 0, 0, AP_LAYOUT_NCHW);
    ap_pool_desc d = pool(1, 2, 1, 0, 0);
    d.nan_policy = AP_NAN_OMIT;
    const double pairs[5] = {1, 3, 3, nan, 6};
    expect_all("omit k2 s1", &d, NULL, &t, x, pairs, 5);
    d = pool(1, 3, 1, 1, 1);
    d.nan_policy = AP_NAN_OMIT;
    d.include_padding = 1;
    const double include[6] = {0.5, 2, 3, 3, 6, 3};
    expect_all("omit k3 pad 1 include", &d, NULL, &t, x, include, 6);
    d.min_count = 2;
    const double two[6] = {nan, 2, nan, nan, nan, nan};
    expect_all("omit k3 pad 1 include min_count 2", &d, NULL, &t, x, two, 6);
    /* adaptive 6 -> 2: [0, 3) and [3, 6): 4/2 and 6/1 */
    ap_adaptive_desc a = adaptive(1, 2, 0, 0);
    a.nan_policy = AP_NAN_OMIT, a.min_count = 1;
    const double halves[2] = {2, 6};
    expect_all("omit adaptive 6 -> 2", NULL, &a, &t, x, halves, 2);
}

/* Tiles by hand: 1-D, in 20, window 3, stride 2, start padding 1 (10
 * outputs, output o reads 2o - 1 .. 2o + 1): outputs 4..7 read 7..15 and
 * average ramp values to 8, 10, 12, 14; output 0 reads 0..1 (1 and the
 * padding: 0.5). Then the tile errors, recorded for the status census. */
/* The 1-D input box the tile input call filled is [start, start + size). */
static void check_in_box(const char *what, const ap_tile *t, int64_t start, int64_t size) {
    CHECK(t->in_start[0] == start && t->in_size[0] == size,
          "[%s] %s input %lld + %lld, expected %lld + %lld", cur_isa, what,
          (long long)t->in_start[0], (long long)t->in_size[0], (long long)start, (long long)size);
}

static void test_tiles(void) {
    const ap_tensor_desc whole = tensor(1, 1, 1, 20, 0, 0, AP_LAYOUT_NCHW);
    const ap_pool_desc d = pool(1, 3, 2, 1, 0);
    ap_tile t;
    memset(&t, 0, sizeof t);
    t.out_start[0] = 4, t.out_size[0] = 4;
    CHECK_STATUS(ap_pool_tile_input(&d, &whole, &t), AP_OK);
    check_in_box("tile", &t, 7, 9);
    float x[20], y[4];
    for (int i = 0; i < 20; ++i) x[i] = (float)i;
    CHECK_STATUS(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &t, x + 7, y, 1), AP_OK);
    CHECK(y[0] == 8 && y[1] == 10 && y[2] == 12 && y[3] == 14, "[%s] tile %g %g %g %g", cur_isa,
          y[0], y[1], y[2], y[3]);
    ap_tile first = t;
    first.out_start[0] = 0, first.out_size[0] = 1;
    CHECK_STATUS(ap_pool_tile_input(&d, &whole, &first), AP_OK);
    check_in_box("first tile", &first, 0, 2);
    CHECK_STATUS(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &first, x, y, 1), AP_OK);
    CHECK(y[0] == 0.5f, "[%s] first tile %g, expected 0.5", cur_isa, y[0]);
    /* adaptive 20 -> 3: windows [0, 7), [6, 14), [13, 20); the last two read 6..19 */
    const ap_adaptive_desc a = adaptive(1, 3, 0, 0);
    ap_tile at;
    memset(&at, 0, sizeof at);
    at.out_start[0] = 1, at.out_size[0] = 2;
    CHECK_STATUS(ap_adaptive_tile_input(&a, &whole, &at), AP_OK);
    check_in_box("adaptive tile", &at, 6, 14);
    CHECK_STATUS(ap_adaptive_avgpool_tile(&a, &whole, AP_DTYPE_F32, &at, x + 6, y, 1), AP_OK);
    CHECK(y[0] == 9.5f && y[1] == 16, "[%s] adaptive tile %g %g", cur_isa, y[0], y[1]);
    /* errors: output box empty or past the output, input box not the one read */
    ap_tile bad = t;
    bad.out_size[0] = 0;
    EXPECT(ap_pool_tile_input(&d, &whole, &bad), AP_ERR_TILE);
    bad = t;
    bad.out_start[0] = 8, bad.out_size[0] = 3;
    EXPECT(ap_pool_tile_input(&d, &whole, &bad), AP_ERR_TILE);
    bad.out_start[0] = -1, bad.out_size[0] = 1;
    EXPECT(ap_adaptive_tile_input(&a, &whole, &bad), AP_ERR_TILE);
    bad = t;
    bad.in_size[0] = 10;
    y[0] = -1;
    EXPECT(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &bad, x + 7, y, 1), AP_ERR_TILE);
    CHECK(y[0] == -1, "[%s] output written on AP_ERR_TILE", cur_isa);
    bad = t;
    bad.in_start[0] = 6;
    EXPECT(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &bad, x + 6, y, 1), AP_ERR_TILE);
    EXPECT(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, NULL, x, y, 1), AP_ERR_NULL_POINTER);
    EXPECT(ap_pool_tile_input(&d, &whole, NULL), AP_ERR_NULL_POINTER);
    EXPECT(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &t, NULL, y, 1), AP_ERR_NULL_POINTER);
    ap_pool_desc big = d;
    big.window[0] = 30;
    EXPECT(ap_pool_tile_input(&big, &whole, &t), AP_ERR_WINDOW_TOO_LARGE);
    /* a tile may claim at most whole's images and channels */
    bad = t;
    bad.channels = 2;
    EXPECT(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &bad, x + 7, y, 1), AP_ERR_TILE);
    bad = t;
    bad.batch = -1;
    EXPECT(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &bad, x + 7, y, 1), AP_ERR_TILE);
    at.batch = 2;
    EXPECT(ap_adaptive_avgpool_tile(&a, &whole, AP_DTYPE_F32, &at, x + 6, y, 1), AP_ERR_TILE);
}

/* A tile of some of the channels, every output position: the whole call's bits for those
 * channels. The whole array's channels choose the kernels: 40 channels take channel vectors,
 * 8 alone (fewer than an AVX-512 vector) would be planned as one channel of W * 8 and sum in
 * another order; 12 (fewer than a vector there, not on AVX2) and 5 of them. 4 x 4 s1 channels
 * last on 2 x 5 x 20 (its channel vectors sum a row of column sums in two chains, the
 * flattened rows by rows then columns). */
static void test_channel_tiles(void) {
    static const int64_t cases[2][3] = {{40, 8, 16}, {12, 5, 7}}; /* C, tile's C, first */
    for (int k = 0; k < 2; ++k) {
        const int64_t C = cases[k][0], TC = cases[k][1], c0 = cases[k][2];
        const ap_tensor_desc whole = tensor(2, C, 2, 5, 20, 0, AP_LAYOUT_NHWC);
        const ap_pool_desc d = pool(2, 4, 1, 0, 0);
        const int64_t n = 2 * 5 * 20, m = 2 * 2 * 17; /* input, output positions */
        float *x = malloc((size_t)(n * C) * sizeof *x), *y = malloc((size_t)(n * C) * sizeof *y);
        float *xt = malloc((size_t)(n * TC) * sizeof *x);
        float *yt = malloc((size_t)(n * TC) * sizeof *y);
        if (!x || !y || !xt || !yt) abort();
        for (int64_t i = 0; i < n * C; ++i) x[i] = (float)((i * 2654435761u) % 100003u) / 7.0f;
        for (int64_t i = 0; i < n; ++i)
            memcpy(xt + i * TC, x + i * C + c0, (size_t)TC * sizeof *x);
        CHECK_STATUS(ap_avgpool_f32(&d, &whole, x, y, 1), AP_OK);
        ap_tile t;
        memset(&t, 0, sizeof t);
        t.out_size[0] = 2, t.out_size[1] = 17, t.channels = TC;
        CHECK_STATUS(ap_pool_tile_input(&d, &whole, &t), AP_OK);
        CHECK_STATUS(ap_avgpool_tile(&d, &whole, AP_DTYPE_F32, &t, xt, yt, 2), AP_OK);
        int64_t differ = 0;
        for (int64_t i = 0; i < m; ++i)
            differ += memcmp(yt + i * TC, y + i * C + c0, (size_t)TC * sizeof *y) != 0;
        CHECK(differ == 0, "[%s] %lld of %lld positions of channels %lld..%lld of %lld differ "
              "from the whole call", cur_isa, (long long)differ, (long long)m, (long long)c0,
              (long long)(c0 + TC - 1), (long long)C);
        free(x), free(y), free(xt), free(yt);
    }
}

/* Regression tests for bugs of the core found by this suite (ctest
 * api_core_bugs): arguments that passed validation but overflowed int64
 * inside the plan or the SIMD kernels, and a NaN from a running sum. */
static int core_bugs(void) {
    for (int i = 0; i < TU_N_ISAS; ++i) {
        if (ap_set_isa(tu_isas[i]) != AP_OK) continue;
        cur_isa = tu_isas[i];
        /* 1. plan.c ap_plan_alloc: n += 3 * out overflowed (UB) for an empty
         * batch with 2^62 - 1 adaptive outputs; now an empty batch plans
         * nothing (AP_OK) and the table size is overflow-checked. */
        ap_tensor_desc t = tensor(0, 1, 1, 1, 0, 0, AP_LAYOUT_NCHW);
        ap_adaptive_desc a = adaptive(1, (INT64_C(1) << 62) - 1, 0, 0);
        const ap_status s = ap_adaptive_avgpool(&a, &t, AP_DTYPE_F32, NULL, NULL, 1);
        CHECK(s == AP_OK, "[%s] 2^62 - 1 outputs, empty batch: %d", cur_isa, (int)s);
        /* 2. plan.c ap_plan_pool: jlo = (-base + d - 1) / d overflows when
         * pb + d > INT64_MAX; the window {-2^62} has no valid tap (NaN), but
         * the plan gets 2 taps from a wrapped position and the kernels read
         * x[-1] and x[0]. */
        struct {
            float before[4], x[1], after[4];
        } buf = {{1e30f, 1e30f, 1e30f, 1e30f}, {5.0f}, {1e30f, 1e30f, 1e30f, 1e30f}};
        float y[1] = {-1};
        t = tensor(1, 1, 1, 1, 0, 0, AP_LAYOUT_NCHW);
        ap_pool_desc d = pool(1, 1, 1, INT64_C(1) << 62, 0);
        d.dilations[0] = (INT64_C(1) << 62) + 1;
        d.output_sizes[0] = 1;
        CHECK_STATUS(ap_avgpool_f32(&d, &t, buf.x, y, 1), AP_OK);
        CHECK(isnan(y[0]), "[%s] window with no valid tap: %g, expected NaN", cur_isa, y[0]);
        /* 3. simd_impl.inc ap_avgpool_nhwc_*: the row length estimate
         * (out + 1) * (stride + 1) overflows for a huge stride (UB); the
         * SIMD paths then return AP_ERR_OUT_OF_MEMORY instead of {1, 0}. */
        t = tensor(1, 1, 1, 1, 0, 0, AP_LAYOUT_NHWC);
        d = pool(1, 17, INT64_C(1) << 62, 0, 0);
        d.output_sizes[0] = 2, d.count_overhang = 1, d.include_padding = 1;
        float x3[1] = {17}, y3[2] = {-1, -1};
        CHECK_STATUS(ap_avgpool_f32(&d, &t, x3, y3, 1), AP_OK);
        CHECK(y3[0] == 1 && y3[1] == 0, "[%s] huge stride NHWC: %g %g, expected 1 0", cur_isa,
              y3[0], y3[1]);
        /* 4. simd_impl.inc vertical_running_: windows 8 or more rows tall
         * (NCHW) update the previous row's sums; an entering row holding inf
         * makes the compensation NaN, and update_'s "not finite" result is
         * only checked for leaving rows. Near the top padding no row leaves,
         * so the output is NaN instead of inf. Window 8 rows, padding 3:
         * output row 1 adds input row 5 and removes none. */
        float x4[12 * 8], y4[8 * 8];
        for (int e = 0; e < 12 * 8; ++e) x4[e] = 1.0f;
        x4[5 * 8 + 3] = INFINITY;
        t = tensor(1, 1, 2, 12, 8, 0, AP_LAYOUT_NCHW);
        const int64_t w4[2] = {8, 1};
        ap_pool_desc_init(&d, 2, w4);
        d.start_padding[0] = 3;
        CHECK_STATUS(ap_avgpool_f32(&d, &t, x4, y4, 1), AP_OK);
        for (int oh = 0; oh < 8; ++oh)
            for (int ow = 0; ow < 8; ++ow) {
                const float want = ow == 3 && oh >= 1 ? INFINITY : 1.0f;
                CHECK(y4[oh * 8 + ow] == want, "[%s] inf in a tall window: y[%d][%d] = %g, expected %g",
                      cur_isa, oh, ow, y4[oh * 8 + ow], want);
            }
        /* 5. simd_impl.inc ap_avgpool_nchw_*: the row buffer length (last
         * window's extent + vector slack) overflowed int64 (UB) for an
         * effective window of INT64_MAX (found by libFuzzer); such rows now
         * go to the scalar kernel. Window 2^62 with dilation 2 from position
         * -2 sums x[0], x[2], ..., x[8]. */
        t = tensor(1, 1, 1, 9, 0, 0, AP_LAYOUT_NCHW);
        d = pool(1, INT64_C(1) << 62, 13, 2, INT64_MAX - 11);
        d.dilations[0] = 2;
        float x5[9] = {1, 100, 2, 100, 3, 100, 4, 100, 5}, y5[1] = {-1};
        CHECK_STATUS(ap_avgpool_f32(&d, &t, x5, y5, 1), AP_OK);
        CHECK(y5[0] == 3, "[%s] window of extent INT64_MAX: %g, expected 3", cur_isa, y5[0]);
        /* 6. simd_impl.inc same_flat_: the whole-plane path for small
         * "same" windows took 3-D inputs of depth 1 without looking at the
         * depth window (found by hypothesis): an empty depth window gave the
         * plane's values instead of NaN, and counted depth padding was left
         * out of the divisor. Depth 1, window 1 x 1 x 1 from depth -1
         * (stride 2): empty, NaN. Window 3 x 1 x 1, padding 1, include
         * padding: x / 3. */
        float x6[4] = {3, 6, 9, 12}, y6[4];
        t = tensor(1, 1, 3, 1, 2, 2, AP_LAYOUT_NCHW);
        d = pool(3, 1, 1, 0, 0);
        d.strides[0] = 2, d.start_padding[0] = 1;
        CHECK_STATUS(ap_avgpool_f32(&d, &t, x6, y6, 1), AP_OK);
        for (int e = 0; e < 4; ++e)
            CHECK(isnan(y6[e]), "[%s] empty depth window: y[%d] = %g, expected NaN", cur_isa, e,
                  y6[e]);
        d = pool(3, 1, 1, 0, 0);
        d.window[0] = 3, d.start_padding[0] = d.end_padding[0] = 1, d.include_padding = 1;
        CHECK_STATUS(ap_avgpool_f32(&d, &t, x6, y6, 1), AP_OK);
        for (int e = 0; e < 4; ++e)
            CHECK(y6[e] == x6[e] / 3, "[%s] depth padding counted: y[%d] = %g, expected %g",
                  cur_isa, e, y6[e], x6[e] / 3);
        /* 7. plan.c ap_check_tensor: sizes {2^62, 2, 0} overflowed in the
         * size product before the zero size was seen (AP_ERR_OVERFLOW);
         * the zero is the error to report. */
        t = tensor(0, 1, 3, INT64_C(1) << 62, 2, 0, AP_LAYOUT_NHWC);
        ap_adaptive_desc a7 = adaptive(3, 1, 1, 1);
        int64_t out7[3];
        CHECK_STATUS(ap_adaptive_output_sizes(&a7, &t, out7), AP_ERR_TENSOR_SIZE);
        /* 8. paths.c, float64's rule: the adds of the column sums, the window's rows
         * times the stride along W, overflowed int64 (UB) for a window 2^40 rows tall at
         * a stride of 2^40 (found by libFuzzer); now counted in double. Such a window,
         * padded 2^40 - 1 rows before a 1 x 1 image, holds one valid tap: the mean is x. */
        t = tensor(1, 2, 2, 1, 1, 0, AP_LAYOUT_NHWC);
        const int64_t w8[2] = {INT64_C(1) << 40, 1};
        ap_pool_desc_init(&d, 2, w8);
        d.strides[1] = INT64_C(1) << 40, d.start_padding[0] = (INT64_C(1) << 40) - 1;
        double x8[2] = {7, -3}, y8[2] = {0, 0};
        char line8[256];
        CHECK_STATUS(ap_explain_pool(&d, &t, AP_DTYPE_F64, line8, sizeof line8), AP_OK);
        CHECK_STATUS(ap_avgpool_f64(&d, &t, x8, y8, 1), AP_OK);
        CHECK(y8[0] == 7 && y8[1] == -3, "[%s] float64, window rows x stride past int64: %g %g, "
              "expected 7 -3", cur_isa, y8[0], y8[1]);
        /* 9. simd_nhwc_direct.inc: a row's run of full windows is summed in one call
         * with the step stride * C along W, which was computed for a lone window too
         * and overflowed int64 (UB) for a stride of 2^62 over 5 channels (found by
         * libFuzzer). 1-D, W = 2, window 1 at stride 2^62: one output, x's first
         * position. */
        t = tensor(1, 5, 1, 2, 0, 0, AP_LAYOUT_NHWC);
        d = pool(1, 1, INT64_C(1) << 62, 0, 0);
        float x9[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, y9[5] = {0, 0, 0, 0, 0};
        CHECK_STATUS(ap_avgpool_f32(&d, &t, x9, y9, 1), AP_OK);
        for (int e = 0; e < 5; ++e)
            CHECK(y9[e] == x9[e], "[%s] stride 2^62 over 5 channels: y[%d] = %g, expected %g",
                  cur_isa, e, y9[e], x9[e]);
    }
    ap_set_isa("auto");
    return tu_exit("test_api --core-bugs");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--bad-isa-env") == 0) return bad_isa_env();
    if (argc > 1 && strcmp(argv[1], "--core-bugs") == 0) return core_bugs();
    test_build_info();
    test_status_strings();
    test_invalid_inputs();
    test_null_pointers();
    test_misaligned_buffers();
    test_overflow();
    test_check_errors();
    test_tiles();
    test_relayout();
    check_all_statuses_seen();
    const long before = tu_checks;
    printf("API contract: %ld checks\n", before);
    for (int i = 0; i < TU_N_ISAS; ++i) {
        if (ap_set_isa(tu_isas[i]) != AP_OK) {
            printf("isa %-7s not available, skipped\n", tu_isas[i]);
            continue;
        }
        cur_isa = tu_isas[i];
        CHECK(strcmp(ap_isa(), cur_isa) == 0, "ap_isa() = %s after ap_set_isa(%s)", ap_isa(),
              cur_isa);
        const long c0 = tu_checks;
        test_block_means();
        test_padding_divisors();
        test_adaptive_windows();
        test_count_overhang();
        test_empty_windows();
        test_round_to_nearest_even();
        test_nhwc_transpose();
        test_explain();
        test_backward_by_hand();
        test_tiles();
        test_channel_tiles();
        test_nan_omit();
        printf("isa %-7s hand-computed results: %ld checks\n", cur_isa, tu_checks - c0);
    }
    ap_set_isa("auto");
    return tu_exit("test_api");
}
