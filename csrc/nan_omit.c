/* nan_omit.c - AP_NAN_OMIT on the SIMD kernels.
 *
 * A window's omit-mean is S / (divisor - M), S the sum of its non-NaN taps
 * and M the number of its NaN taps, both window sums: of the input with
 * NaN read as 0, and of its NaN indicator (exact integers in float32, in
 * any summation order). So the vector kernels of every path compute both,
 * as float32 window sums (divisor_override 1), over a group of planes at a
 * time (a large plane in bands of output rows); a last pass divides,
 * applies min_count and stores in the input's dtype. The scalar kernels
 * (scalar_impl.inc) test each tap instead; they serve float64 and the
 * scalar instruction set. The box path omits NaN itself (simd_box.inc).
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
    float *restrict clean = c->clean, *restrict nan = c->nan;
    if (c->p->dtype == AP_DTYPE_F32) { /* one flat loop, vectorized */
        const float *restrict x = (const float *)c->x;
        for (int64_t i = lo; i < hi; ++i) {
            const float v = x[i];
            clean[i] = v != v ? 0.0f : v;
            nan[i] = v != v ? 1.0f : 0.0f;
        }
        return;
    }
    for (int64_t i = lo; i < hi; ++i) {
        const float v = ap_omit_load(c->p, c->x, i);
        const int is_nan = v != v;
        clean[i] = is_nan ? 0.0f : v;
        nan[i] = is_nan ? 1.0f : 0.0f;
    }
}

/* A window's omit-mean: sum over its non-NaN taps, m its NaN taps, divisor
 * and taps its divisor and valid taps (as ap_mean_ of scalar_impl.inc). */
static inline float ap_omit_mean(const ap_plan *p, float sum, float m, double divisor,
                                 double taps) {
    const float d = p->divisor_override != 0 ? (float)p->divisor_override
                                             : (float)(divisor - (double)m);
    return taps - (double)m < (double)p->min_count || d == 0.0f ? NAN : sum / d;
}

/* output rows lo .. hi of the group: (unit, od, oh), each OW x lanes */
static void ap_omit_finish(void *arg, int64_t lo, int64_t hi) {
    const ap_omit_ctx *c = arg;
    const ap_plan *p = c->p;
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    const int64_t OW = aw->out, lanes = c->lanes;
    for (int64_t r = lo; r < hi; ++r) {
        const int64_t od = (r / ah->out) % ad->out, oh = r % ah->out;
        const double dh = (double)(ad->count[od] * ah->count[oh]);
        const double th = (double)(ad->taps[od] * ah->taps[oh]);
        const float *restrict sum = c->sum + r * OW * lanes, *restrict nans = c->nans + r * OW * lanes;
        if (p->dtype == AP_DTYPE_F32 && lanes == 1) { /* one flat loop, vectorized */
            float *restrict y = (float *)c->y + r * OW;
            for (int64_t ow = 0; ow < OW; ++ow)
                y[ow] = ap_omit_mean(p, sum[ow], nans[ow], dh * (double)aw->count[ow],
                                     th * (double)aw->taps[ow]);
            continue;
        }
        for (int64_t ow = 0; ow < OW; ++ow) {
            const double divisor = dh * (double)aw->count[ow], taps = th * (double)aw->taps[ow];
            const int64_t base = (r * OW + ow) * lanes;
            for (int64_t l = 0; l < lanes; ++l)
                ap_omit_store(p, c->y, base + l,
                              ap_omit_mean(p, sum[ow * lanes + l], nans[ow * lanes + l], divisor,
                                           taps));
        }
    }
}

/* One block: split x (p's batch x channels x input, p->dtype) into the
 * NaN-free input and the NaN indicator, take both window sums with the
 * float32 kernel of `sums` (p with divisor_override 1, its path chosen),
 * and finish into y. buf holds 2 * p's input + 2 * p's output floats. */
static ap_status ap_omit_block(const ap_plan *p, const ap_plan *sums, ap_kernel_fn kernel,
                               const void *x, void *y, float *buf) {
    const int nhwc = p->layout == AP_LAYOUT_NHWC;
    const int64_t lanes = nhwc ? p->channels : 1, units = nhwc ? p->batch : p->batch * p->channels;
    const int64_t n_in = units * p->in_plane * lanes, n_out = units * p->out_plane * lanes;
    float *clean = buf, *nan = buf + n_in, *sum = nan + n_in, *nans = sum + n_out;
    ap_omit_ctx c = {p, x, clean, nan, sum, nans, y, lanes};
    ap_parallel_for(ap_threads_for(p, n_in), n_in, n_in, ap_omit_split, &c);
    ap_status s = kernel(sums, clean, sum);
    if (s == AP_OK) s = kernel(sums, nan, nans);
    if (s == AP_OK)
        ap_parallel_for(ap_threads_for(p, n_out), units * p->axis[0].out * p->axis[1].out, n_out,
                        ap_omit_finish, &c);
    return s;
}

/* The float32 window-sum plan of p: same tables, divisor 1 (its path still
 * to choose). */
static ap_plan ap_sums_of(const ap_plan *p) {
    ap_plan sums = *p; /* shares p's tables; never freed */
    sums.dtype = AP_DTYPE_F32;
    sums.divisor_override = 1;
    sums.nan_omit = 0;
    return sums;
}

/* ap_sums_of(p) with its path chosen. */
static ap_plan ap_sums_plan(const ap_plan *p, const ap_kernel_table *table) {
    ap_plan sums = ap_sums_of(p);
    ap_choose_path(&sums, table->lanes[AP_DTYPE_F32], NULL, 0);
    return sums;
}

/* A plane (or image) too large for one group goes in bands of AP_OMIT_BAND
 * outputs along its outermost axis that has more than one (when the axes
 * outside it have one input position, so a band's input is contiguous),
 * each a tile of the plane (ap_plan_tile) whose sums take the plane's path;
 * bands start at multiples of AP_OMIT_BAND of the whole array, so a tile of
 * the whole array gets the same bands. Returns -1 when no axis fits (the
 * plane then goes whole). */
#define AP_OMIT_BAND 256
static int ap_omit_band_axis(const ap_plan *p) {
    for (int a = 0; a < 3; ++a) {
        if (p->axis[a].out > 1) return a;
        if (p->axis[a].in > 1) return -1;
    }
    return -1;
}

static ap_status ap_omit_banded(const ap_plan *unit, const ap_kernel_table *table, int a,
                                const void *x, void *y, size_t esize) {
    const int64_t lanes = unit->layout == AP_LAYOUT_NHWC ? unit->channels : 1;
    int64_t in_inner = lanes, out_inner = lanes; /* elements per position along axis a */
    for (int b = a + 1; b < 3; ++b) in_inner *= unit->axis[b].in, out_inner *= unit->axis[b].out;
    const ap_axis_plan *ax = &unit->axis[a];
    /* A band: the tile of its outputs along axis a, whole along the others
     * (their input rows are contiguous and read whole). */
    ap_tile tile;
    for (int b = 0; b < 3; ++b) {
        tile.out_start[b] = tile.in_start[b] = 0;
        tile.out_size[b] = unit->axis[b].out;
        tile.in_size[b] = unit->axis[b].in;
    }
#define AP_BAND_END(o0) ((o0 + ax->origin) / AP_OMIT_BAND * AP_OMIT_BAND + AP_OMIT_BAND - ax->origin)
    int64_t span = 1; /* the largest band's input along axis a */
    for (int64_t o0 = 0; o0 < ax->out;) {
        const int64_t o1 = AP_BAND_END(o0) < ax->out ? AP_BAND_END(o0) : ax->out;
        ap_tile t = tile;
        t.out_start[a] = o0, t.out_size[a] = o1 - o0;
        const ap_status s = ap_plan_tile_input(unit, 3, &t);
        if (s != AP_OK) return s;
        if (t.in_size[a] > span) span = t.in_size[a];
        o0 = o1;
    }
    const int64_t n_in = span * in_inner, n_out = AP_OMIT_BAND * out_inner;
    float *buf = (float *)malloc((size_t)(2 * n_in + 2 * n_out) * sizeof(float));
    if (!buf) return AP_ERR_OUT_OF_MEMORY;
    const ap_plan sums_unit = ap_sums_plan(unit, table);
    ap_status s = AP_OK;
    for (int64_t o0 = 0; o0 < ax->out && s == AP_OK;) {
        const int64_t o1 = AP_BAND_END(o0) < ax->out ? AP_BAND_END(o0) : ax->out;
        ap_tile t = tile, box = tile;
        box.out_start[a] = o0, box.out_size[a] = o1 - o0;
        s = ap_plan_tile_input(unit, 3, &box);
        t.out_start[a] = o0, t.out_size[a] = o1 - o0;
        t.in_start[a] = box.in_start[a], t.in_size[a] = box.in_size[a];
        ap_plan band;
        band.storage = NULL;
        if (s == AP_OK) s = ap_plan_tile(&band, unit, 3, &t);
        if (s == AP_OK) {
            ap_plan sums = ap_sums_of(&band);
            ap_choose_tile_path(&sums, &sums_unit, table->lanes[AP_DTYPE_F32]);
            const ap_kernel_fn k = ap_tile_table(&sums, table)->pool[unit->layout][AP_DTYPE_F32];
            s = ap_omit_block(&band, &sums, k,
                              (const char *)x + (size_t)(t.in_start[a] * in_inner) * esize,
                              (char *)y + (size_t)(o0 * out_inner) * esize, buf);
        }
        ap_plan_free(&band);
        o0 = o1;
    }
#undef AP_BAND_END
    free(buf);
    return s;
}

ap_status ap_omit_run(const ap_plan *p, const ap_kernel_table *table, const void *x, void *y) {
    const int nhwc = p->layout == AP_LAYOUT_NHWC;
    const int64_t units = nhwc ? p->batch : p->batch * p->channels;
    const int64_t lanes = nhwc ? p->channels : 1;
    const int64_t unit_in = p->in_plane * lanes, unit_out = p->out_plane * lanes;
    const size_t esize = p->dtype == AP_DTYPE_F32 ? 4 : 2;
    ap_plan unit = *p; /* one plane (channels first) or image (channels last) */
    unit.batch = 1;
    unit.channels = lanes;
    const int band_axis = ap_omit_band_axis(p);
    if (unit_in > AP_OMIT_GROUP_ELEMS && band_axis >= 0) {
        ap_status s = AP_OK;
        for (int64_t u = 0; u < units && s == AP_OK; ++u)
            s = ap_omit_banded(&unit, table, band_axis,
                               (const char *)x + (size_t)(u * unit_in) * esize,
                               (char *)y + (size_t)(u * unit_out) * esize, esize);
        return s;
    }
    int64_t group = AP_OMIT_GROUP_ELEMS / unit_in;
    if (group < 1) group = 1;
    if (group > units) group = units;
    /* the plan has checked that every tensor's bytes fit in int64 */
    const int64_t n_in = group * unit_in, n_out = group * unit_out;
    if ((uint64_t)(2 * n_in + 2 * n_out) > SIZE_MAX / sizeof(float)) return AP_ERR_OUT_OF_MEMORY;
    float *buf = (float *)malloc((size_t)(2 * n_in + 2 * n_out) * sizeof(float));
    if (!buf) return AP_ERR_OUT_OF_MEMORY;
    const ap_kernel_fn kernel = table->pool[p->layout][AP_DTYPE_F32];
    ap_status s = AP_OK;
    for (int64_t u0 = 0; u0 < units && s == AP_OK; u0 += group) {
        const int64_t g = units - u0 < group ? units - u0 : group;
        ap_plan part = *p;
        if (nhwc)
            part.batch = g;
        else
            part.batch = 1, part.channels = g;
        const ap_plan sums = ap_sums_plan(&part, table);
        s = ap_omit_block(&part, &sums, kernel, (const char *)x + (size_t)(u0 * unit_in) * esize,
                          (char *)y + (size_t)(u0 * unit_out) * esize, buf);
    }
    free(buf);
    return s;
}
