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
#include <string.h>

#include "convert.h"
#include "kernels/kernels.h"
#include "threading.h"

/* Input elements per group (two float32 copies: 1 MiB, so that the four
 * passes over a group run in L2), at least one plane (channels first) or
 * image (channels last). Groups of 4 Mi elements, 32 MiB of copies
 * allocated per call, took 3x as long (3x3 s2 p1 omit on 32x64x56x56, 1
 * thread: 24.9 -> 8.4 ms). */
#define AP_OMIT_GROUP_ELEMS (INT64_C(1) << 17)

typedef struct {
    const ap_plan *p;       /* the caller's plan (divisors, min_count)     */
    const void *x;          /* this group's input, the plan's dtype        */
    float *clean, *nan;     /* x with NaN as 0; 1 where x is NaN           */
    const float *sum, *nans; /* their window sums                          */
    void *y;                /* this group's output                         */
    int64_t lanes;          /* channels last: C; channels first: 1         */
    float *wf;              /* 2 * OW floats of scratch (ap_omit_finish)   */
} ap_omit_ctx;

/* Counts up to 2^24 are exact in float32 (ap_omit_finish). */
#define AP_OMIT_EXACT 16777216.0

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

/* clean and nan for elements lo .. hi of x */
static void ap_omit_split(const ap_omit_ctx *c, int64_t lo, int64_t hi) {
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
 * and taps its divisor and valid taps (as ap_mean_float, kernels.h). */
static inline float ap_omit_mean(const ap_plan *p, float sum, float m, double divisor,
                                 double taps) {
    const float d = p->divisor_override != 0 ? (float)p->divisor_override
                                             : (float)(divisor - (double)m);
    return taps - (double)m < (double)p->min_count || d == 0.0f ? NAN : sum / d;
}

/* Output rows lo .. hi of the group: (unit, od, oh), each OW x lanes. Float32
 * rows whose divisors and taps are exact in float (at most 2^24, as good as
 * always) take ap_omit_mean's values in float, in loops that vectorize: with
 * the W axis's counts converted once, not per output (the double path was
 * half of a 2 x 2 omit-mean's time on 4096 x 4096). */
static void ap_omit_finish(const ap_omit_ctx *c, int64_t lo, int64_t hi) {
    const ap_plan *p = c->p;
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    const int64_t OW = aw->out, lanes = c->lanes;
    float *restrict wdiv = c->wf, *restrict wtap = c->wf + OW;
    double wmax = 0.0; /* the largest |count| or taps along W */
    if (p->dtype == AP_DTYPE_F32)
        for (int64_t ow = 0; ow < OW; ++ow) {
            wdiv[ow] = (float)aw->count[ow];
            wtap[ow] = (float)aw->taps[ow];
            const double a = fabs((double)aw->count[ow]), t = (double)aw->taps[ow];
            wmax = a > wmax ? a : wmax;
            wmax = t > wmax ? t : wmax;
        }
    const float over = (float)p->divisor_override;
    /* past 2^24, any min_count exceeds every exact taps count, as this does */
    const float minc = (double)p->min_count > AP_OMIT_EXACT ? (float)(AP_OMIT_EXACT + 2.0)
                                                             : (float)p->min_count;
    for (int64_t r = lo; r < hi; ++r) {
        const int64_t od = (r / ah->out) % ad->out, oh = r % ah->out;
        const double dh = (double)(ad->count[od] * ah->count[oh]);
        const double th = (double)(ad->taps[od] * ah->taps[oh]);
        const float *restrict sum = c->sum + r * OW * lanes;
        const float *restrict nans = c->nans + r * OW * lanes;
        if (p->dtype == AP_DTYPE_F32 && fabs(dh) * wmax <= AP_OMIT_EXACT &&
            th * wmax <= AP_OMIT_EXACT) {
            const float dhf = (float)dh, thf = (float)th;
            float *restrict y = (float *)c->y + r * OW * lanes;
            if (lanes == 1) { /* channels first: vectorized along the row */
                for (int64_t ow = 0; ow < OW; ++ow) {
                    const float m = nans[ow], d = over != 0.0f ? over : dhf * wdiv[ow] - m;
                    const float q = sum[ow] / d;
                    y[ow] = thf * wtap[ow] - m < minc || d == 0.0f ? NAN : q;
                }
                continue;
            }
            for (int64_t ow = 0; ow < OW; ++ow) {
                const float dw = dhf * wdiv[ow], tw = thf * wtap[ow];
                for (int64_t l = 0; l < lanes; ++l) {
                    const float m = nans[ow * lanes + l];
                    const float d = over != 0.0f ? over : dw - m;
                    const float q = sum[ow * lanes + l] / d;
                    y[ow * lanes + l] = tw - m < minc || d == 0.0f ? NAN : q;
                }
            }
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

/* One block, on the calling thread: split x (p's batch x channels x input,
 * p->dtype) into the NaN-free input and the NaN indicator, take both window
 * sums with the float32 kernel of `sums` (p with divisor_override 1, its
 * path chosen, one thread), and finish into y. buf holds 2 * p's input + 2 *
 * p's output + 2 * p's OW floats. */
static ap_status ap_omit_block(const ap_plan *p, const ap_plan *sums, ap_kernel_fn kernel,
                               const void *x, void *y, float *buf) {
    const int nhwc = p->layout == AP_LAYOUT_NHWC;
    const int64_t lanes = nhwc ? p->channels : 1, units = nhwc ? p->batch : p->batch * p->channels;
    const int64_t n_in = units * p->in_plane * lanes, n_out = units * p->out_plane * lanes;
    float *clean = buf, *nan = buf + n_in, *sum = nan + n_in, *nans = sum + n_out;
    ap_omit_ctx c = {p, x, clean, nan, sum, nans, y, lanes, nans + n_out};
    ap_omit_split(&c, 0, n_in);
    ap_status s = kernel(sums, clean, sum);
    if (s == AP_OK) s = kernel(sums, nan, nans);
    if (s == AP_OK) ap_omit_finish(&c, 0, units * p->axis[0].out * p->axis[1].out);
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

/* ap_sums_of(p) on the path of the call's plan `call`, p a part of it (its planes, images or
 * unit). A tile's plan holds the whole call's path, chosen for the whole array's shape, and
 * the paths sum a window's taps in orders of their own (the global path, rows-s1, planes-cl in
 * nhwc-direct's; nhwc-direct's nhwc_cols and nhwc_rowsums depend on the channel count): sums
 * that chose for the part's own shape took another path where a tile is one window (global)
 * or a smaller plane, and a tile of an omit call then differed from the whole call in the
 * last bits. Following the call, a tile sums as the whole call does. */
static ap_plan ap_sums_plan(const ap_plan *p, const ap_plan *call, const ap_kernel_table *table) {
    ap_plan sums = ap_sums_of(p);
    ap_choose_tile_path(&sums, call, table->lanes[AP_DTYPE_F32]);
    return sums;
}

/* A plane (or image) too large for one group goes in bands of AP_OMIT_BAND
 * outputs along its outermost axis that has more than one (when the axes
 * outside it have one input position, so a band's input is contiguous),
 * each a tile of the plane (ap_plan_tile) whose sums take the plane's path;
 * bands start at multiples of AP_OMIT_BAND of the whole array, so a tile of
 * the whole array gets the same bands. Returns -1 when no axis fits (the
 * plane then goes whole). 32 output rows of a 4096-wide 2 x 2 mean read 1 MiB,
 * whose passes run in L2 (Intel VM, 1 thread, 2 x 2 omit-mean of 4096 x 4096:
 * bands of 256 rows, 8 MiB, 23.4 ms, of 16 rows 18.5); each band is a tile
 * with tables of its own (Zen 5, the same mean: bands of 8 rows 13.1 ms, 16
 * 9.7, 32 8.1, 64 8.0; at 2 threads 16 5.4, 32 4.4; 15 x 15 the same). */
#define AP_OMIT_BAND 32
static int ap_omit_band_axis(const ap_plan *p) {
    for (int a = 0; a < 3; ++a) {
        if (p->axis[a].out > 1) return a;
        if (p->axis[a].in > 1) return -1;
    }
    return -1;
}

/* The work items of one call, each done whole by one thread with a buffer of
 * its own: groups of `group` units, or (banded) band b of unit u as item u *
 * bands + b. One thread per item, not per pass: a band's four passes are too
 * short to share out (4096 x 4096 at 2 threads took longer than at 1). */
typedef struct {
    const ap_plan *p;          /* the caller's plan                          */
    const ap_kernel_table *table;
    const void *x;
    void *y;
    size_t esize;
    ap_plan unit;              /* one plane or image, one thread             */
    ap_plan sums_unit;         /* banded: unit's sums plan, its path chosen  */
    int band_axis;             /* the axis of the bands; -1: groups of units */
    int64_t group;             /* units per group                            */
    int64_t first_band, bands; /* banded: the first band's index (from the
                                  whole array's origin), bands per unit     */
    int64_t unit_in, unit_out, in_inner, out_inner; /* elements              */
    int64_t buf_floats;        /* each thread's buffer                       */
    int64_t items, chunk, next;
    int failed;                /* an item failed: status holds its error     */
    ap_status status;
} ap_omit_job;

static void ap_omit_fail(ap_omit_job *j, ap_status s) {
    if (!__atomic_exchange_n(&j->failed, 1, __ATOMIC_RELAXED))
        __atomic_store_n(&j->status, s, __ATOMIC_RELAXED);
}

/* Band k (of the whole array's bands of axis a) as outputs [*o0, *o1) of the unit. */
static void ap_omit_band_range(const ap_omit_job *j, int64_t k, int64_t *o0, int64_t *o1) {
    const ap_axis_plan *ax = &j->unit.axis[j->band_axis];
    const int64_t lo = k * AP_OMIT_BAND - ax->origin, hi = lo + AP_OMIT_BAND;
    *o0 = lo < 0 ? 0 : lo;
    *o1 = hi < ax->out ? hi : ax->out;
}

/* Band k as a tile of the unit: its outputs along the band axis and the input
 * they read there, whole along the others (their input rows are contiguous and
 * read whole). */
static ap_status ap_omit_band_tile(const ap_omit_job *j, int64_t k, ap_tile *tile) {
    const int a = j->band_axis;
    for (int b = 0; b < 3; ++b) {
        tile->out_start[b] = tile->in_start[b] = 0;
        tile->out_size[b] = j->unit.axis[b].out;
        tile->in_size[b] = j->unit.axis[b].in;
    }
    int64_t o0, o1;
    ap_omit_band_range(j, k, &o0, &o1);
    tile->out_start[a] = o0, tile->out_size[a] = o1 - o0;
    ap_tile box = *tile;
    const ap_status s = ap_plan_tile_input(&j->unit, 3, &box);
    tile->in_start[a] = box.in_start[a], tile->in_size[a] = box.in_size[a];
    return s;
}

static ap_status ap_omit_band(const ap_omit_job *j, int64_t u, int64_t k, float *buf) {
    const int a = j->band_axis;
    ap_tile tile;
    ap_status s = ap_omit_band_tile(j, k, &tile);
    if (s != AP_OK) return s;
    const int64_t o0 = tile.out_start[a];
    ap_plan band;
    band.storage = NULL;
    s = ap_plan_tile(&band, &j->unit, 3, &tile);
    if (s == AP_OK) {
        ap_plan sums = ap_sums_of(&band);
        ap_choose_tile_path(&sums, &j->sums_unit, j->table->lanes[AP_DTYPE_F32]);
        const ap_kernel_fn kernel =
            ap_tile_table(&sums, j->table)->pool[j->unit.layout][AP_DTYPE_F32];
        s = ap_omit_block(&band, &sums, kernel,
                          (const char *)j->x +
                              (size_t)(u * j->unit_in + tile.in_start[a] * j->in_inner) * j->esize,
                          (char *)j->y + (size_t)(u * j->unit_out + o0 * j->out_inner) * j->esize,
                          buf);
    }
    ap_plan_free(&band);
    return s;
}

static ap_status ap_omit_group(const ap_omit_job *j, int64_t u0, float *buf) {
    const int64_t units = j->p->layout == AP_LAYOUT_NHWC ? j->p->batch
                                                          : j->p->batch * j->p->channels;
    const int64_t g = units - u0 < j->group ? units - u0 : j->group;
    ap_plan part = j->unit;
    if (part.layout == AP_LAYOUT_NHWC)
        part.batch = g;
    else
        part.channels = g;
    const ap_plan sums = ap_sums_plan(&part, j->p, j->table);
    return ap_omit_block(&part, &sums, j->table->pool[part.layout][AP_DTYPE_F32],
                         (const char *)j->x + (size_t)(u0 * j->unit_in) * j->esize,
                         (char *)j->y + (size_t)(u0 * j->unit_out) * j->esize, buf);
}

static void ap_omit_work(void *arg) {
    ap_omit_job *j = (ap_omit_job *)arg;
    float *buf = (float *)malloc((size_t)j->buf_floats * sizeof(float));
    if (!buf) {
        ap_omit_fail(j, AP_ERR_OUT_OF_MEMORY);
        return;
    }
    int64_t lo, hi;
    while (ap_next_chunk(&j->next, j->items, j->chunk, &lo, &hi))
        for (int64_t i = lo; i < hi && !__atomic_load_n(&j->failed, __ATOMIC_RELAXED); ++i) {
            const ap_status s = j->band_axis >= 0
                                    ? ap_omit_band(j, i / j->bands, j->first_band + i % j->bands,
                                                   buf)
                                    : ap_omit_group(j, i * j->group, buf);
            if (s != AP_OK) ap_omit_fail(j, s);
        }
    free(buf);
}

ap_status ap_omit_run(const ap_plan *p, const ap_kernel_table *table, const void *x, void *y) {
    const int nhwc = p->layout == AP_LAYOUT_NHWC;
    const int64_t units = nhwc ? p->batch : p->batch * p->channels;
    const int64_t lanes = nhwc ? p->channels : 1;
    if (units == 0) return AP_OK;
    ap_omit_job j;
    memset(&j, 0, sizeof j);
    j.p = p, j.table = table, j.x = x, j.y = y;
    j.esize = p->dtype == AP_DTYPE_F32 ? 4 : 2;
    j.unit = *p; /* one plane (channels first) or image (channels last), one thread */
    j.unit.batch = 1;
    j.unit.channels = lanes;
    j.unit.num_threads = 1;
    j.unit_in = p->in_plane * lanes, j.unit_out = p->out_plane * lanes;
    const int band_axis = ap_omit_band_axis(p);
    j.band_axis = j.unit_in > AP_OMIT_GROUP_ELEMS ? band_axis : -1;
    if (j.band_axis >= 0) {
        const int a = j.band_axis;
        const ap_axis_plan *ax = &p->axis[a];
        j.in_inner = j.out_inner = lanes; /* elements per position along axis a */
        for (int b = a + 1; b < 3; ++b)
            j.in_inner *= p->axis[b].in, j.out_inner *= p->axis[b].out;
        j.first_band = ax->origin / AP_OMIT_BAND;
        j.bands = (ax->origin + ax->out - 1) / AP_OMIT_BAND - j.first_band + 1;
        int64_t span = 1; /* the largest band's input along axis a */
        for (int64_t k = j.first_band; k < j.first_band + j.bands; ++k) {
            ap_tile t;
            const ap_status s = ap_omit_band_tile(&j, k, &t);
            if (s != AP_OK) return s;
            if (t.in_size[a] > span) span = t.in_size[a];
        }
        j.buf_floats = 2 * span * j.in_inner + 2 * AP_OMIT_BAND * j.out_inner + 2 * p->axis[2].out;
        j.sums_unit = ap_sums_plan(&j.unit, p, table);
        j.items = units * j.bands;
    } else {
        j.group = AP_OMIT_GROUP_ELEMS / j.unit_in;
        if (j.group < 1) j.group = 1;
        if (j.group > units) j.group = units;
        /* the plan has checked that every tensor's bytes fit in int64 */
        const int64_t n_in = j.group * j.unit_in, n_out = j.group * j.unit_out;
        if ((uint64_t)(2 * n_in + 2 * n_out + 2 * p->axis[2].out) > SIZE_MAX / sizeof(float))
            return AP_ERR_OUT_OF_MEMORY;
        j.buf_floats = 2 * n_in + 2 * n_out + 2 * p->axis[2].out;
        j.items = (units + j.group - 1) / j.group;
    }
    const int64_t work = units * j.unit_in;
    const int nt = ap_threads_for(p, j.items, work);
    j.chunk = ap_chunk_size(j.items, nt, work);
    ap_parallel(nt, ap_omit_work, &j);
    return j.failed ? j.status : AP_OK;
}
