/* plan.c - validation of descriptors and the per-axis plan.
 *
 * Every size is checked here, once, so kernels can index without checks:
 * after a successful plan, every product of sizes and every tap position
 * fits in int64 and every tap lies inside the input.
 */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AP_CHECK(expr)                \
    do {                              \
        ap_status ap_s_ = (expr);     \
        if (ap_s_ != AP_OK) return ap_s_; \
    } while (0)

static int64_t ap_floor_div(int64_t a, int64_t b) { /* b > 0 */
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Record where a rule broke (when err is given) and return status. */
static ap_status ap_fail(ap_error *err, ap_status status, int axis, const char *field,
                         const char *fmt, ...) {
    if (err) {
        err->status = status;
        err->axis = axis;
        err->field = field;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->detail, sizeof err->detail, fmt, ap);
        va_end(ap);
    }
    return status;
}

#define AP_LL(v) ((long long)(v))

static ap_status ap_check_tensor(const ap_tensor_desc *t, int32_t rank, int64_t *in_plane,
                                 ap_error *err) {
    if (t->rank < 1 || t->rank > AP_MAX_SPATIAL || t->rank != rank)
        return ap_fail(err, AP_ERR_RANK, -1, "rank", "tensor rank %d, descriptor rank %d",
                       (int)t->rank, (int)rank);
    if (t->layout != AP_LAYOUT_NCHW && t->layout != AP_LAYOUT_NHWC)
        return ap_fail(err, AP_ERR_LAYOUT, -1, "layout", "layout %d", (int)t->layout);
    if (t->batch < 0) return ap_fail(err, AP_ERR_TENSOR_SIZE, -1, "batch", "batch %lld < 0", AP_LL(t->batch));
    if (t->channels < 0)
        return ap_fail(err, AP_ERR_TENSOR_SIZE, -1, "channels", "channels %lld < 0",
                       AP_LL(t->channels));
    /* every size first: a zero size is the error to report, even when the
     * product of the sizes before it overflows */
    for (int a = 0; a < rank; ++a)
        if (t->sizes[a] < 1)
            return ap_fail(err, AP_ERR_TENSOR_SIZE, a, "sizes", "size %lld < 1", AP_LL(t->sizes[a]));
    int64_t n = 1;
    for (int a = 0; a < rank; ++a)
        if (ap_mul_overflow(n, t->sizes[a], &n))
            return ap_fail(err, AP_ERR_OVERFLOW, -1, "sizes",
                           "the product of the spatial sizes overflows int64");
    /* Total elements times the widest element (8 bytes) must fit, so byte
     * offsets computed by callers and kernels cannot overflow. */
    int64_t total;
    if (ap_mul_overflow(n, t->batch, &total) || ap_mul_overflow(total, t->channels, &total) ||
        ap_mul_overflow(total, 8, &total))
        return ap_fail(err, AP_ERR_OVERFLOW, -1, "sizes",
                       "input of %lld x %lld x %lld elements x 8 bytes overflows int64",
                       AP_LL(t->batch), AP_LL(t->channels), AP_LL(n));
    *in_plane = n;
    return AP_OK;
}

ap_status ap_tensor_check(const ap_tensor_desc *t, int64_t *plane) {
    return ap_check_tensor(t, t->rank, plane, NULL);
}

/* The output's elements (times 8 bytes) must fit; `field` is blamed. */
static ap_status ap_check_output(const ap_tensor_desc *t, const int64_t *out, int64_t *out_plane,
                                 const char *field, ap_error *err) {
    int64_t n = 1, total;
    for (int a = 0; a < t->rank; ++a)
        if (ap_mul_overflow(n, out[a], &n))
            return ap_fail(err, AP_ERR_OVERFLOW, -1, field,
                           "the product of the output sizes overflows int64");
    if (ap_mul_overflow(n, t->batch, &total) || ap_mul_overflow(total, t->channels, &total) ||
        ap_mul_overflow(total, 8, &total))
        return ap_fail(err, AP_ERR_OVERFLOW, -1, field,
                       "output of %lld x %lld x %lld elements x 8 bytes overflows int64",
                       AP_LL(t->batch), AP_LL(t->channels), AP_LL(n));
    *out_plane = n;
    return AP_OK;
}

/* Per-axis validation of a windowed descriptor; writes the output size. */
static ap_status ap_check_pool_axis(const ap_pool_desc *d, int a, int64_t in, int64_t *out,
                                    ap_error *err) {
    const int64_t k = d->window[a], s = d->strides[a], dil = d->dilations[a];
    const int64_t pb = d->start_padding[a], pe = d->end_padding[a];
    if (k < 1) return ap_fail(err, AP_ERR_WINDOW, a, "window", "window %lld < 1", AP_LL(k));
    if (s < 1) return ap_fail(err, AP_ERR_STRIDE, a, "strides", "stride %lld < 1", AP_LL(s));
    if (dil < 1)
        return ap_fail(err, AP_ERR_DILATION, a, "dilations", "dilation %lld < 1", AP_LL(dil));
    if (pb < 0)
        return ap_fail(err, AP_ERR_PADDING, a, "start_padding", "start padding %lld < 0", AP_LL(pb));
    if (pe < 0)
        return ap_fail(err, AP_ERR_PADDING, a, "end_padding", "end padding %lld < 0", AP_LL(pe));
    int64_t ek, padded;
    if (ap_mul_overflow(k - 1, dil, &ek) || ap_add_overflow(ek, 1, &ek))
        return ap_fail(err, AP_ERR_OVERFLOW, a, "window/dilations",
                       "effective window (%lld - 1) * %lld + 1 overflows int64", AP_LL(k),
                       AP_LL(dil));
    if (ap_add_overflow(in, pb, &padded) || ap_add_overflow(padded, pe, &padded))
        return ap_fail(err, AP_ERR_OVERFLOW, a, "start_padding/end_padding",
                       "padded input %lld + %lld + %lld overflows int64", AP_LL(in), AP_LL(pb),
                       AP_LL(pe));
    int64_t o = d->output_sizes[a];
    if (o < 0)
        return ap_fail(err, AP_ERR_OUTPUT_SIZE, a, "output_sizes", "output size %lld < 0", AP_LL(o));
    if (o == 0) {
        if (padded < ek)
            return ap_fail(err, AP_ERR_WINDOW_TOO_LARGE, a, "window",
                           "effective window %lld > padded input %lld = %lld + %lld + %lld",
                           AP_LL(ek), AP_LL(padded), AP_LL(in), AP_LL(pb), AP_LL(pe));
        o = (padded - ek) / s + 1;
    }
    /* The last window's first position, and its last tap, must be
     * representable; its start must lie before the padded end. */
    int64_t last_start, last_tap;
    if (ap_mul_overflow(o - 1, s, &last_start) || ap_add_overflow(last_start, ek, &last_tap))
        return ap_fail(err, AP_ERR_OVERFLOW, a, "output_sizes/strides",
                       "last window's end (%lld - 1) * %lld + %lld overflows int64", AP_LL(o),
                       AP_LL(s), AP_LL(ek));
    /* With count_overhang (OpenVINO ceil rounding) every window the output
     * size implies is kept, even one starting past the padded end. */
    if (!d->count_overhang && last_start - pb >= in + pe)
        return ap_fail(err, AP_ERR_OUTPUT_SIZE, a, "output_sizes",
                       "output size %lld starts its last window past the padded end: "
                       "(%lld - 1) * %lld - %lld >= %lld + %lld",
                       AP_LL(o), AP_LL(o), AP_LL(s), AP_LL(pb), AP_LL(in), AP_LL(pe));
    *out = o;
    return AP_OK;
}

/* nan_policy and min_count, shared by both descriptors. */
static ap_status ap_check_nan(int32_t policy, int64_t min_count, ap_error *err) {
    if (policy != AP_NAN_PROPAGATE && policy != AP_NAN_OMIT)
        return ap_fail(err, AP_ERR_NAN_POLICY, -1, "nan_policy",
                       "nan_policy %d is neither AP_NAN_PROPAGATE (0) nor AP_NAN_OMIT (1)",
                       (int)policy);
    if (min_count < 0)
        return ap_fail(err, AP_ERR_NAN_POLICY, -1, "min_count", "min_count %lld < 0",
                       AP_LL(min_count));
    return AP_OK;
}

static ap_status ap_check_pool(const ap_pool_desc *d, const ap_tensor_desc *t, int64_t *out,
                               ap_error *err) {
    if (d->rank < 1 || d->rank > AP_MAX_SPATIAL)
        return ap_fail(err, AP_ERR_RANK, -1, "rank", "descriptor rank %d not in 1..3", (int)d->rank);
    AP_CHECK(ap_check_nan(d->nan_policy, d->min_count, err));
    int64_t in_plane;
    AP_CHECK(ap_check_tensor(t, d->rank, &in_plane, err));
    int64_t window_product = 1, explicit_out = 0;
    for (int a = 0; a < d->rank; ++a) {
        AP_CHECK(ap_check_pool_axis(d, a, t->sizes[a], &out[a], err));
        if (ap_mul_overflow(window_product, d->window[a], &window_product))
            return ap_fail(err, AP_ERR_OVERFLOW, a, "window",
                           "the product of the window sizes overflows int64");
        explicit_out |= d->output_sizes[a];
    }
    int64_t out_plane;
    /* floor-rule outputs follow from the input's sizes */
    return ap_check_output(t, out, &out_plane, explicit_out ? "output_sizes" : "sizes", err);
}

static ap_status ap_check_adaptive(const ap_adaptive_desc *d, const ap_tensor_desc *t,
                                   int64_t *out, ap_error *err) {
    if (d->rank < 1 || d->rank > AP_MAX_SPATIAL)
        return ap_fail(err, AP_ERR_RANK, -1, "rank", "descriptor rank %d not in 1..3", (int)d->rank);
    AP_CHECK(ap_check_nan(d->nan_policy, d->min_count, err));
    int64_t in_plane;
    AP_CHECK(ap_check_tensor(t, d->rank, &in_plane, err));
    for (int a = 0; a < d->rank; ++a) {
        int64_t o = d->output_sizes[a], bound;
        if (o < 1)
            return ap_fail(err, AP_ERR_OUTPUT_SIZE, a, "output_sizes", "output size %lld < 1",
                           AP_LL(o));
        /* end = ((i + 1) * in + o - 1) / o needs o * in + o to fit. */
        if (ap_mul_overflow(o, t->sizes[a], &bound) || ap_add_overflow(bound, o, &bound))
            return ap_fail(err, AP_ERR_OVERFLOW, a, "output_sizes",
                           "output size %lld x input %lld + %lld overflows int64", AP_LL(o),
                           AP_LL(t->sizes[a]), AP_LL(o));
        out[a] = o;
    }
    int64_t out_plane;
    return ap_check_output(t, out, &out_plane, "output_sizes", err);
}

static void ap_error_clear(ap_error *err) {
    if (err) {
        memset(err, 0, sizeof *err);
        err->axis = -1;
        err->field = "";
    }
}

ap_status ap_pool_check(const ap_pool_desc *desc, const ap_tensor_desc *input,
                        int64_t out_sizes[AP_MAX_SPATIAL], ap_error *err) {
    ap_error_clear(err);
    if (!desc || !input)
        return ap_fail(err, AP_ERR_NULL_POINTER, -1, desc ? "input" : "desc", "");
    int64_t out[AP_MAX_SPATIAL] = {0};
    AP_CHECK(ap_check_pool(desc, input, out, err));
    if (out_sizes) memcpy(out_sizes, out, sizeof(int64_t) * (size_t)desc->rank);
    return AP_OK;
}

ap_status ap_adaptive_check(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                            int64_t out_sizes[AP_MAX_SPATIAL], ap_error *err) {
    ap_error_clear(err);
    if (!desc || !input)
        return ap_fail(err, AP_ERR_NULL_POINTER, -1, desc ? "input" : "desc", "");
    int64_t out[AP_MAX_SPATIAL] = {0};
    AP_CHECK(ap_check_adaptive(desc, input, out, err));
    if (out_sizes) memcpy(out_sizes, out, sizeof(int64_t) * (size_t)desc->rank);
    return AP_OK;
}

ap_status ap_pool_output_sizes(const ap_pool_desc *desc, const ap_tensor_desc *input,
                               int64_t out_sizes[AP_MAX_SPATIAL]) {
    if (!out_sizes) return AP_ERR_NULL_POINTER;
    return ap_pool_check(desc, input, out_sizes, NULL);
}

ap_status ap_adaptive_output_sizes(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                   int64_t out_sizes[AP_MAX_SPATIAL]) {
    if (!out_sizes) return AP_ERR_NULL_POINTER;
    return ap_adaptive_check(desc, input, out_sizes, NULL);
}

ap_status ap_pool_desc_init(ap_pool_desc *desc, int32_t rank, const int64_t *window) {
    if (!desc || !window) return AP_ERR_NULL_POINTER;
    if (rank < 1 || rank > AP_MAX_SPATIAL) return AP_ERR_RANK;
    memset(desc, 0, sizeof *desc);
    desc->rank = rank;
    for (int a = 0; a < rank; ++a) {
        desc->window[a] = window[a];
        desc->strides[a] = 1;
        desc->dilations[a] = 1;
    }
    desc->min_count = 1;
    return AP_OK;
}

/* Allocate the per-axis tables of all three axes in one block. */
static ap_status ap_plan_alloc(ap_plan *plan) {
    int64_t n = 0, m;
    for (int a = 0; a < 3; ++a)
        if (ap_mul_overflow(plan->axis[a].out, 3, &m) || ap_add_overflow(n, m, &n))
            return AP_ERR_OUT_OF_MEMORY;
    if ((uint64_t)n > SIZE_MAX / sizeof(int64_t)) return AP_ERR_OUT_OF_MEMORY;
    plan->storage = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    if (!plan->storage) return AP_ERR_OUT_OF_MEMORY;
    int64_t *p = plan->storage;
    for (int a = 0; a < 3; ++a) {
        ap_axis_plan *ax = &plan->axis[a];
        ax->first = p;
        ax->taps = p + ax->out;
        ax->count = p + 2 * ax->out;
        p += 3 * ax->out;
    }
    return AP_OK;
}

/* Common part of both plans: trivial leading axes and plane sizes. */
static void ap_plan_begin(ap_plan *plan, const ap_tensor_desc *t, const int64_t *out,
                          ap_dtype dtype, int num_threads) {
    memset(plan, 0, sizeof *plan);
    plan->batch = t->batch;
    plan->channels = t->channels;
    plan->layout = t->layout;
    plan->dtype = dtype;
    plan->num_threads = num_threads > 0 ? num_threads : ap_max_threads();
    const int lead = 3 - t->rank;
    plan->in_plane = plan->out_plane = 1;
    for (int a = 0; a < 3; ++a) {
        ap_axis_plan *ax = &plan->axis[a];
        ax->in = a < lead ? 1 : t->sizes[a - lead];
        ax->out = a < lead ? 1 : out[a - lead];
        ax->step = ax->window = ax->stride = 1;
        plan->in_plane *= ax->in;
        plan->out_plane *= ax->out;
    }
}

static ap_status ap_check_dtype(ap_dtype dtype) {
    switch (dtype) {
    case AP_DTYPE_F32: case AP_DTYPE_F64: case AP_DTYPE_F16: case AP_DTYPE_BF16: return AP_OK;
    }
    return AP_ERR_DTYPE;
}

ap_status ap_plan_pool(ap_plan *plan, const ap_pool_desc *desc, const ap_tensor_desc *input,
                       ap_dtype dtype, int num_threads) {
    int64_t out[AP_MAX_SPATIAL] = {0};
    memset(plan, 0, sizeof *plan);
    AP_CHECK(ap_check_dtype(dtype));
    AP_CHECK(ap_check_pool(desc, input, out, NULL));
    ap_plan_begin(plan, input, out, dtype, num_threads);
    plan->divisor_override = desc->divisor_override;
    plan->nan_omit = desc->nan_policy == AP_NAN_OMIT;
    plan->min_count = desc->min_count;
    if (plan->batch == 0 || plan->channels == 0) return AP_OK; /* nothing to compute */
    const int lead = 3 - desc->rank;
    for (int a = lead; a < 3; ++a) {
        ap_axis_plan *ax = &plan->axis[a];
        ax->window = desc->window[a - lead];
        ax->stride = desc->strides[a - lead];
        ax->step = desc->dilations[a - lead];
        ax->pad_begin = desc->start_padding[a - lead];
    }
    AP_CHECK(ap_plan_alloc(plan));
    for (int a = 0; a < 3; ++a) {
        ap_axis_plan *ax = &plan->axis[a];
        const int64_t k = ax->window, s = ax->stride, d = ax->step, in = ax->in;
        const int64_t pe = a < lead ? 0 : desc->end_padding[a - lead];
        const int64_t padded_end = in + pe;
        for (int64_t o = 0; o < ax->out; ++o) {
            const int64_t base = o * s - ax->pad_begin; /* position of tap 0 */
            /* valid taps j: 0 <= base + j*d <= in - 1 */
            /* ceil(-base / d) without forming -base + d - 1, which can overflow */
            int64_t jlo = base < 0 ? -base / d + (-base % d != 0) : 0;
            int64_t jhi = base > in - 1 ? 0 : ap_floor_div(in - 1 - base, d) + 1;
            if (jhi > k) jhi = k;
            const int64_t taps = jhi > jlo ? jhi - jlo : 0;
            ax->first[o] = taps ? base + jlo * d : 0;
            ax->taps[o] = taps;
            int64_t count = taps;
            if (desc->count_overhang && !desc->include_padding && base >= in) {
                /* OpenVINO's divisor min(base + k, in) - max(base, 0) = in - base: 0 for a
                 * window starting at the input's end (NaN), negative past it (a zero whose
                 * sign is that of the product of the axes' divisors). Only the sign
                 * matters, the sum being 0, and -1 keeps the products small. */
                count = base == in ? 0 : -1;
            } else if (desc->include_padding) {
                /* taps j with base + j*d < padded_end (base >= -pb always) */
                if (desc->count_overhang)
                    count = k;
                else
                    count = base >= padded_end ? 0 : ap_floor_div(padded_end - 1 - base, d) + 1;
                if (count > k) count = k;
            }
            ax->count[o] = count;
        }
    }
    return AP_OK;
}

ap_status ap_plan_adaptive(ap_plan *plan, const ap_adaptive_desc *desc,
                           const ap_tensor_desc *input, ap_dtype dtype, int num_threads) {
    int64_t out[AP_MAX_SPATIAL] = {0};
    memset(plan, 0, sizeof *plan);
    AP_CHECK(ap_check_dtype(dtype));
    AP_CHECK(ap_check_adaptive(desc, input, out, NULL));
    ap_plan_begin(plan, input, out, dtype, num_threads);
    plan->adaptive = 1;
    plan->nan_omit = desc->nan_policy == AP_NAN_OMIT;
    plan->min_count = desc->min_count;
    if (plan->batch == 0 || plan->channels == 0) return AP_OK; /* nothing to compute */
    AP_CHECK(ap_plan_alloc(plan));
    for (int a = 0; a < 3; ++a) {
        ap_axis_plan *ax = &plan->axis[a];
        const int64_t in = ax->in, n = ax->out;
        /* When out divides in, the windows are uniform (k = s = in / out) and
         * kernels may take their windowed fast paths. */
        ax->stride = in % n == 0 ? in / n : 0;
        ax->window = 0;
        for (int64_t o = 0; o < n; ++o) {
            const int64_t start = (o * in) / n;
            const int64_t end = ((o + 1) * in + n - 1) / n;
            ax->first[o] = start;
            ax->taps[o] = ax->count[o] = end - start;
            if (end - start > ax->window) ax->window = end - start;
        }
    }
    return AP_OK;
}

ap_status ap_plan_tile_input(const ap_plan *whole, int rank, ap_tile *tile) {
    const int lead = 3 - rank;
    for (int a = 0; a < rank; ++a) {
        const ap_axis_plan *ax = &whole->axis[lead + a];
        const int64_t o0 = tile->out_start[a], n = tile->out_size[a];
        if (o0 < 0 || n < 1 || o0 > ax->out || n > ax->out - o0) return AP_ERR_TILE;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t o = o0; o < o0 + n; ++o) {
            if (ax->taps[o] == 0) continue;
            const int64_t last = ax->first[o] + (ax->taps[o] - 1) * ax->step;
            if (ax->first[o] < lo) lo = ax->first[o];
            if (last + 1 > hi) hi = last + 1;
        }
        if (lo == INT64_MAX) { /* only padding: one position near the windows */
            const int64_t base = ax->stride ? o0 * ax->stride - ax->pad_begin : 0;
            lo = base < 0 ? 0 : base >= ax->in ? ax->in - 1 : base;
            hi = lo + 1;
        }
        tile->in_start[a] = lo;
        tile->in_size[a] = hi - lo;
    }
    return AP_OK;
}

ap_status ap_plan_tile(ap_plan *sub, const ap_plan *whole, int rank, const ap_tile *tile) {
    *sub = *whole;
    sub->storage = NULL;
    sub->in_plane = sub->out_plane = 1;
    const int lead = 3 - rank;
    for (int a = lead; a < 3; ++a) {
        ap_axis_plan *ax = &sub->axis[a];
        ax->in = tile->in_size[a - lead];
        ax->out = tile->out_size[a - lead];
        sub->in_plane *= ax->in;
        sub->out_plane *= ax->out;
    }
    AP_CHECK(ap_plan_alloc(sub));
    for (int a = 0; a < 3; ++a) {
        const ap_axis_plan *wx = &whole->axis[a];
        ap_axis_plan *ax = &sub->axis[a];
        const int64_t o0 = a < lead ? 0 : tile->out_start[a - lead];
        const int64_t i0 = a < lead ? 0 : tile->in_start[a - lead];
        /* window o of the tile is window o0 + o of the whole: its first tap
         * o * s - pb' at o0 * s - pb - i0 in the tile */
        if (ax->stride) ax->pad_begin = wx->pad_begin + i0 - o0 * wx->stride;
        ax->origin = wx->origin + o0; /* a tile of a tile: still the whole array's index */
        if (whole->adaptive) ax->window = 0;
        for (int64_t o = 0; o < ax->out; ++o) {
            ax->taps[o] = wx->taps[o0 + o];
            ax->first[o] = ax->taps[o] ? wx->first[o0 + o] - i0 : 0;
            ax->count[o] = wx->count[o0 + o];
            if (whole->adaptive && ax->taps[o] > ax->window) ax->window = ax->taps[o];
        }
    }
    return AP_OK;
}

void ap_plan_free(ap_plan *plan) {
    free(plan->storage);
    plan->storage = NULL;
}

ap_status ap_inverse_make(ap_inverse *inv, const ap_plan *plan) {
    memset(inv, 0, sizeof *inv);
    /* sizes first, overflow-checked: in + 1 offsets and one entry per tap */
    int64_t total = 0, entries[3];
    for (int a = 0; a < 3; ++a) {
        const ap_axis_plan *ax = &plan->axis[a];
        int64_t e = 0;
        for (int64_t o = 0; o < ax->out; ++o)
            if (ap_add_overflow(e, ax->taps[o], &e)) return AP_ERR_OVERFLOW;
        entries[a] = e;
        if (ap_add_overflow(total, ax->in + 1, &total) || ap_add_overflow(total, e, &total))
            return AP_ERR_OVERFLOW;
    }
    if ((uint64_t)total > SIZE_MAX / sizeof(int64_t)) return AP_ERR_OVERFLOW;
    inv->storage = (int64_t *)calloc((size_t)total, sizeof(int64_t));
    if (!inv->storage) return AP_ERR_OUT_OF_MEMORY;
    int64_t *next = inv->storage;
    for (int a = 0; a < 3; ++a) {
        const ap_axis_plan *ax = &plan->axis[a];
        ap_axis_inverse *iv = &inv->axis[a];
        iv->off = next;
        iv->list = next + ax->in + 1;
        next = iv->list + entries[a];
        /* counting sort: count the windows of each input in off[i + 1],
         * prefix-sum (off[i]: where i's outputs start), fill in ascending
         * order with off[i] as the cursor */
        for (int64_t o = 0; o < ax->out; ++o)
            for (int64_t t = 0; t < ax->taps[o]; ++t) ++iv->off[ax->first[o] + t * ax->step + 1];
        for (int64_t i = 0; i < ax->in; ++i) iv->off[i + 1] += iv->off[i];
        for (int64_t o = 0; o < ax->out; ++o)
            for (int64_t t = 0; t < ax->taps[o]; ++t) {
                const int64_t i = ax->first[o] + t * ax->step;
                iv->list[iv->off[i]++] = o;
            }
        /* the fill moved each off[i] to the start of i + 1: shift back */
        for (int64_t i = ax->in; i > 0; --i) iv->off[i] = iv->off[i - 1];
        iv->off[0] = 0;
    }
    return AP_OK;
}

void ap_inverse_free(ap_inverse *inv) {
    free(inv->storage);
    inv->storage = NULL;
}
