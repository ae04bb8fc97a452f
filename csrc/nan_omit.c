/* nan_omit.c - AP_NAN_OMIT on the SIMD kernels.
 *
 * A window's omit-mean is S / (divisor - M), S the sum of its non-NaN taps
 * and M the number of its NaN taps, both window sums: of the input with
 * NaN read as 0, and of its NaN indicator (exact integers in float32, in
 * any summation order). So the vector kernels of every path compute both,
 * as float32 window sums (divisor_override 1), over a group of planes at a
 * time; a last pass divides, applies min_count and stores in the input's
 * dtype. The scalar kernels (scalar_impl.inc) test each tap instead; they
 * serve float64 and the scalar instruction set.
 */
#include <math.h>
#include <stdlib.h>

#include "convert.h"
#include "kernels/kernels.h"
#include "threading.h"

/* Input elements per group (two float32 copies: 32 MiB), at least one
 * plane (channels first) or image (channels last). */
#define AP_OMIT_GROUP_ELEMS (INT64_C(1) << 22)

typedef struct {
    const ap_plan *p;       /* the caller's plan (divisors, min_count)     */
    const void *x;          /* this group's input, the plan's dtype        */
    float *clean, *nan;     /* x with NaN as 0; 1 where x is NaN           */
    const float *sum, *nans; /* their window sums                          */
    void *y;                /* this group's output                         */
    int64_t lanes;          /* channels last: C; channels first: 1         */
} ap_omit_ctx;

static float ap_omit_load(const ap_plan *p, const void *x, int64_t i) {
    switch (p->dtype) {
    case AP_DTYPE_F16: return ap_f16_to_f32(((const uint16_t *)x)[i]);
    case AP_DTYPE_BF16: return ap_bf16_to_f32(((const uint16_t *)x)[i]);
    default: return ((const float *)x)[i];
    }
}

static void ap_omit_store(const ap_plan *p, void *y, int64_t i, float v) {
    switch (p->dtype) {
    case AP_DTYPE_F16: ((uint16_t *)y)[i] = ap_f32_to_f16(v); break;
    case AP_DTYPE_BF16: ((uint16_t *)y)[i] = ap_f32_to_bf16(v); break;
    default: ((float *)y)[i] = v; break;
    }
}

static void ap_omit_split(void *arg, int64_t lo, int64_t hi) {
    const ap_omit_ctx *c = arg;
    for (int64_t i = lo; i < hi; ++i) {
        const float v = ap_omit_load(c->p, c->x, i);
        const int is_nan = v != v;
        c->clean[i] = is_nan ? 0.0f : v;
        c->nan[i] = is_nan ? 1.0f : 0.0f;
    }
}

/* output rows lo .. hi of the group: (unit, od, oh), each OW x lanes */
static void ap_omit_finish(void *arg, int64_t lo, int64_t hi) {
    const ap_omit_ctx *c = arg;
    const ap_plan *p = c->p;
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    for (int64_t r = lo; r < hi; ++r) {
        const int64_t od = (r / ah->out) % ad->out, oh = r % ah->out;
        for (int64_t ow = 0; ow < aw->out; ++ow) {
            const int64_t divisor = ap_plan_divisor(p, od, oh, ow);
            const int64_t taps = ad->taps[od] * ah->taps[oh] * aw->taps[ow];
            const int64_t base = (r * aw->out + ow) * c->lanes;
            for (int64_t l = 0; l < c->lanes; ++l) {
                const int64_t m = (int64_t)c->nans[base + l];
                float v;
                if (taps - m < p->min_count)
                    v = NAN;
                else if (p->divisor_override != 0)
                    v = c->sum[base + l] / (float)p->divisor_override;
                else
                    v = divisor - m == 0 ? NAN : c->sum[base + l] / (float)(divisor - m);
                ap_omit_store(p, c->y, base + l, v);
            }
        }
    }
}

ap_status ap_omit_run(const ap_plan *p, const ap_kernel_table *table, const void *x, void *y) {
    const int nhwc = p->layout == AP_LAYOUT_NHWC;
    const int64_t units = nhwc ? p->batch : p->batch * p->channels;
    const int64_t lanes = nhwc ? p->channels : 1;
    const int64_t unit_in = p->in_plane * lanes, unit_out = p->out_plane * lanes;
    const size_t esize = p->dtype == AP_DTYPE_F32 ? 4 : 2;
    int64_t group = AP_OMIT_GROUP_ELEMS / unit_in;
    if (group < 1) group = 1;
    if (group > units) group = units;
    /* the plan has checked that every tensor's bytes fit in int64 */
    const int64_t n_in = group * unit_in, n_out = group * unit_out;
    if ((uint64_t)(2 * n_in + 2 * n_out) > SIZE_MAX / sizeof(float)) return AP_ERR_OUT_OF_MEMORY;
    float *buf = (float *)malloc((size_t)(2 * n_in + 2 * n_out) * sizeof(float));
    if (!buf) return AP_ERR_OUT_OF_MEMORY;
    float *clean = buf, *nan = buf + n_in, *sum = nan + n_in, *nans = sum + n_out;

    ap_plan sums = *p; /* shares p's tables; never freed */
    sums.dtype = AP_DTYPE_F32;
    sums.divisor_override = 1;
    sums.nan_omit = 0;
    const ap_kernel_fn kernel = table->pool[p->layout][AP_DTYPE_F32];
    const int nt_in = ap_threads_for(p, n_in);
    ap_status s = AP_OK;
    for (int64_t u0 = 0; u0 < units && s == AP_OK; u0 += group) {
        const int64_t g = units - u0 < group ? units - u0 : group;
        if (nhwc)
            sums.batch = g;
        else
            sums.batch = 1, sums.channels = g;
        ap_choose_path(&sums, table->lanes[AP_DTYPE_F32], NULL, 0);
        ap_omit_ctx c = {p, (const char *)x + (size_t)(u0 * unit_in) * esize, clean, nan,
                         sum, nans, (char *)y + (size_t)(u0 * unit_out) * esize, lanes};
        ap_parallel_for(nt_in, g * unit_in, ap_omit_split, &c);
        s = kernel(&sums, clean, sum);
        if (s == AP_OK) s = kernel(&sums, nan, nans);
        if (s == AP_OK)
            ap_parallel_for(ap_threads_for(p, g * unit_out), g * p->axis[0].out * p->axis[1].out,
                            ap_omit_finish, &c);
    }
    free(buf);
    return s;
}
