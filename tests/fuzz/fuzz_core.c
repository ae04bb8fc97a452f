/* fuzz_core.c - libFuzzer harness over the C entry points.
 *
 * The fuzzer's bytes become a descriptor (windowed or adaptive), a tensor
 * description and the input values. Every status must be a valid code; when
 * the call succeeds, the output buffer is allocated to exactly the size the
 * core reported (so AddressSanitizer catches any write past it), and every
 * instruction-set path must agree with the scalar oracle (and its compiled
 * operators, one writing the other layout, with the one-shot call). Sizes
 * are mostly small, sometimes huge or negative, to reach the overflow
 * checks; a recipe byte (apply_recipe) steers a share of the inputs to each
 * kernel path and to the edges that raw bytes rarely build. ap_*_check must
 * agree with ap_*_output_sizes.
 *
 * Build and run: scripts/fuzz_c.sh [seconds]
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avgpool.h"
#include "../../csrc/convert.h"
#include "../../csrc/isa.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t take8(reader *r) {
    if (!r->n) return 0;
    --r->n;
    return *r->p++;
}

/* A size: mostly 0..15, sometimes an edge value. */
static int64_t take_size(reader *r) {
    const uint8_t b = take8(r);
    switch (b >> 4) {
    case 15: {
        static const int64_t edge[] = {-1, 0, INT64_MAX, INT64_MIN, (int64_t)1 << 62,
                                       ((int64_t)1 << 31) + 1, 65536, 255};
        return edge[b & 7];
    }
    case 14: return (int64_t)(b & 15) * 17 + 16; /* 16..271 */
    default: return b & 15;
    }
}

/* A size next to a multiple of 8 or 16 (vector tails of 4, 8 and 16 lanes). */
static int64_t tail_size(reader *r) {
    static const int64_t t[16] = {3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 47, 49};
    return t[take8(r) & 15];
}

/* Reshape the fuzzer's descriptor towards a path or an edge that raw bytes
 * rarely build (a 'same' window on depth 1 was such a gap): the recipe
 * byte (the input's second), applied once the descriptor is read; the
 * values it needs come last.
 *   bits 0-2  0-1 as read; 2 'same' windows < 8 on the last two axes;
 *             3 windows as large as the padded input; 4 strides 2 / 4 with
 *             window 4 (2 or 3 sometimes); 5 a row buffer past int32
 *             indices (dilation 2^28 over end padding 2^28); 6 a window
 *             wider than two vectors along W; 7 channels last, windows of
 *             more than 16 taps
 *   bit 3     depth 1 (rank 3) and height 1 (rank >= 2, every other time)
 *   bit 4     channels next to a multiple of 8 or 16
 *   bit 5     W next to a multiple of 8 or 16 */
static void apply_recipe(uint8_t b, reader *r, ap_tensor_desc *t, ap_pool_desc *d,
                         ap_adaptive_desc *ad) {
    const int rank = t->rank;
    if (rank < 1 || rank > AP_MAX_SPATIAL) return;
    const int w = rank - 1;
    if (b & 8) {
        if (rank == 3) t->sizes[0] = 1;
        if (rank >= 2 && (b & 64)) t->sizes[rank - 2] = 1;
    }
    if (b & 16) t->channels = tail_size(r);
    if (b & 32) t->sizes[w] = tail_size(r);
    for (int a = 0; a < rank; ++a) {
        const int64_t in = t->sizes[a];
        if (in < 0 || in > 4096) continue; /* edge sizes stay as read (no overflow here) */
        switch (b & 7) {
        case 2: /* 'same': the depth axis of rank 3 keeps the fuzzer's window */
            if (rank == 3 && a == 0) break;
            d->window[a] = 1 + take8(r) % 7;
            d->strides[a] = d->dilations[a] = 1;
            d->start_padding[a] = take8(r) % d->window[a];
            d->end_padding[a] = d->window[a] - 1 - d->start_padding[a];
            d->output_sizes[a] = 0;
            break;
        case 3:
            d->dilations[a] = 1;
            d->window[a] = in + d->start_padding[a] + d->end_padding[a];
            ad->output_sizes[a] = 1;
            break;
        case 4:
            d->strides[a] = take8(r) & 1 ? 4 : 2;
            d->window[a] = take8(r) & 3 ? 4 : 2 + (take8(r) & 1);
            break;
        case 5:
            if (a == w) {
                d->window[a] = 2, d->dilations[a] = (int64_t)1 << 28;
                d->end_padding[a] = (int64_t)1 << 28;
                d->output_sizes[a] = 0;
            }
            break;
        case 6:
            if (a == w) {
                t->sizes[a] = 40 + take8(r) % 90;
                d->window[a] = 33 + take8(r) % 8;
                d->strides[a] = 1 + (take8(r) & 3) / 3;
                d->dilations[a] = 1;
            }
            break;
        case 7:
            t->layout = AP_LAYOUT_NHWC;
            d->window[a] = rank == 1 ? 17 + take8(r) % 16 : 3 + take8(r) % 4;
            if (in + d->start_padding[a] + d->end_padding[a] < d->window[a])
                t->sizes[a] = d->window[a];
            break;
        default: break;
        }
    }
}

static size_t elem_size(ap_dtype t) {
    return t == AP_DTYPE_F64 ? 8 : t == AP_DTYPE_F32 ? 4 : 2;
}

static double value_at(const void *buf, size_t i, ap_dtype t) {
    switch (t) {
    case AP_DTYPE_F64: return ((const double *)buf)[i];
    case AP_DTYPE_F32: return ((const float *)buf)[i];
    case AP_DTYPE_F16: return ap_f16_to_f32(((const uint16_t *)buf)[i]);
    default: return ap_bf16_to_f32(((const uint16_t *)buf)[i]);
    }
}

/* Compare two outputs of the same call: NaN where the other is NaN, inf
 * equal, else close (summation order may differ; 16-bit results may then
 * round to neighbouring values). */
static int same_values(const void *a, const void *b, size_t count, ap_dtype t) {
    const double tol = t == AP_DTYPE_F64 ? 1e-12 : t == AP_DTYPE_F32 ? 1e-5
                     : t == AP_DTYPE_F16 ? 2e-3 : 1.6e-2;
    for (size_t i = 0; i < count; ++i) {
        const double u = value_at(a, i, t), v = value_at(b, i, t);
        if (isnan(u) || isnan(v)) {
            if (isnan(u) != isnan(v)) goto differ;
            continue;
        }
        if (isinf(u) || isinf(v)) {
            if (u != v) goto differ;
            continue;
        }
        /* inputs are multiples of 1/8 below 16 in magnitude */
        if (fabs(u - v) > tol * (fabs(u) + fabs(v)) + 16 * tol) goto differ;
        continue;
    differ:
        fprintf(stderr, "element %zu: scalar %.9g, other %.9g\n", i, u, v);
        return 0;
    }
    return 1;
}

/* Bitwise equal, NaN equal to NaN (any payload). */
static int same_bits(const void *a, const void *b, size_t count, ap_dtype t) {
    for (size_t i = 0; i < count; ++i) {
        const double u = value_at(a, i, t), v = value_at(b, i, t);
        if (isnan(u) && isnan(v)) continue;
        if (memcmp((const uint8_t *)a + i * elem_size(t), (const uint8_t *)b + i * elem_size(t),
                   elem_size(t)) != 0)
            return 0;
    }
    return 1;
}

/* One tile of the call (an output box and a run of channels from the data):
 * it runs on the tile's input box, copied out of x, and gives the whole
 * call's outputs there, bit for bit on the scalar kernels (exact: the first
 * instruction set). */
static void check_tile(int adaptive, const ap_pool_desc *d, const ap_adaptive_desc *ad,
                       const ap_tensor_desc *t, ap_dtype dtype, const int64_t *out,
                       const uint8_t *x, const uint8_t *whole_y, const reader *data, int threads,
                       int exact) {
    reader r = *data;
    ap_tile tile;
    memset(&tile, 0, sizeof tile);
    int64_t in_sz[3] = {1, 1, 1}, out_sz[3] = {1, 1, 1}, in0[3] = {0}, out0[3] = {0};
    for (int a = 0; a < t->rank; ++a) {
        tile.out_start[a] = take_size(&r) % out[a];
        tile.out_size[a] = 1 + take_size(&r) % (out[a] - tile.out_start[a]);
    }
    const ap_status s = adaptive ? ap_adaptive_tile_input(ad, t, &tile)
                                 : ap_pool_tile_input(d, t, &tile);
    if (s != AP_OK) abort();
    const int lead = 3 - t->rank;
    for (int a = 0; a < t->rank; ++a) {
        if (tile.in_start[a] < 0 || tile.in_size[a] < 1 ||
            tile.in_start[a] + tile.in_size[a] > t->sizes[a])
            abort();
        in_sz[lead + a] = tile.in_size[a], in0[lead + a] = tile.in_start[a];
        out_sz[lead + a] = tile.out_size[a], out0[lead + a] = tile.out_start[a];
    }
    const int64_t full_in[3] = {lead > 0 ? 1 : t->sizes[0], lead > 1 ? 1 : t->sizes[1 - lead],
                                t->sizes[t->rank - 1]};
    int64_t full_out[3] = {1, 1, 1};
    for (int a = 0; a < t->rank; ++a) full_out[lead + a] = out[a];
    const int nhwc = t->layout == AP_LAYOUT_NHWC;
    /* channels c0 .. c0 + cn of the whole's t->channels (all of them half the time) */
    if (t->channels < 1) return; /* no output to compare */
    const int64_t cn = (take8(&r) & 1) ? 1 + take_size(&r) % t->channels : t->channels;
    const int64_t c0 = take_size(&r) % (t->channels - cn + 1);
    tile.channels = cn;
    /* planes (channels first: the tile's (image, channel) pairs) or images, each with C
     * channels per position, and where tile plane p starts among the whole's */
    const int64_t planes = nhwc ? t->batch : t->batch * cn, C = nhwc ? cn : 1;
    const int64_t CW = nhwc ? t->channels : 1, cw0 = nhwc ? c0 : 0;
#define AP_WHOLE_PLANE(p) (nhwc ? (p) : (p) / cn * t->channels + c0 + (p) % cn)
    const int64_t tin = in_sz[0] * in_sz[1] * in_sz[2], tout = out_sz[0] * out_sz[1] * out_sz[2];
    const size_t es = elem_size(dtype);
    uint8_t *xt = (uint8_t *)malloc((size_t)(planes * tin * C) * es + 1);
    uint8_t *yt = (uint8_t *)malloc((size_t)(planes * tout * C) * es + 1);
    if (!xt || !yt) abort();
    /* copy the input box out of x, plane (or image) by plane, row by row (position by
     * position when the tile holds some of the channels last) */
    const int64_t run = C == CW ? in_sz[2] : 1; /* positions per copy */
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t i0 = 0; i0 < in_sz[0]; ++i0)
            for (int64_t i1 = 0; i1 < in_sz[1]; ++i1)
                for (int64_t i2 = 0; i2 < in_sz[2]; i2 += run) {
                    const int64_t src =
                        ((AP_WHOLE_PLANE(p) * full_in[0] + in0[0] + i0) * full_in[1] + in0[1] +
                         i1) * full_in[2] + in0[2] + i2;
                    const int64_t dst = ((p * in_sz[0] + i0) * in_sz[1] + i1) * in_sz[2] + i2;
                    memcpy(xt + (size_t)(dst * C) * es, x + (size_t)(src * CW + cw0) * es,
                           (size_t)(run * C) * es);
                }
    const ap_status st = adaptive ? ap_adaptive_avgpool_tile(ad, t, dtype, &tile, xt, yt, threads)
                                  : ap_avgpool_tile(d, t, dtype, &tile, xt, yt, threads);
    if (st != AP_OK) abort();
    const int64_t orun = C == CW ? out_sz[2] : 1; /* the same for the outputs */
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t o0 = 0; o0 < out_sz[0]; ++o0)
            for (int64_t o1 = 0; o1 < out_sz[1]; ++o1)
                for (int64_t o2 = 0; o2 < out_sz[2]; o2 += orun) {
                    const int64_t src =
                        ((AP_WHOLE_PLANE(p) * full_out[0] + out0[0] + o0) * full_out[1] +
                         out0[1] + o1) * full_out[2] + out0[2] + o2;
                    const int64_t dst = ((p * out_sz[0] + o0) * out_sz[1] + o1) * out_sz[2] + o2;
                    const size_t n = (size_t)(orun * C);
                    const uint8_t *a = whole_y + (size_t)(src * CW + cw0) * es,
                                  *b = yt + (size_t)(dst * C) * es;
                    if (exact ? !same_bits(a, b, n, dtype) : !same_values(a, b, n, dtype)) {
                        fprintf(stderr, "tile differs from the whole call (%s)\n",
                                exact ? "bits" : "values");
                        abort();
                    }
                }
#undef AP_WHOLE_PLANE
    free(xt);
    free(yt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    const uint8_t mode = take8(&r);
    const uint8_t recipe = take8(&r);
    const int adaptive = mode & 1;
    const ap_dtype dtype = (ap_dtype)((mode >> 1) & 3);
    ap_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.rank = 1 + (mode >> 3) % 3;
    if ((mode >> 5) == 7) t.rank = (int32_t)take_size(&r) - 1; /* invalid ranks too */
    t.layout = (ap_layout)((mode >> 5) & 1);
    t.batch = take_size(&r) % 4;
    t.channels = take_size(&r);
    for (int a = 0; a < AP_MAX_SPATIAL; ++a) t.sizes[a] = take_size(&r);

    ap_pool_desc d;
    ap_adaptive_desc ad;
    memset(&d, 0, sizeof d);
    memset(&ad, 0, sizeof ad);
    d.rank = ad.rank = t.rank;
    for (int a = 0; a < AP_MAX_SPATIAL; ++a) {
        d.window[a] = take_size(&r);
        d.strides[a] = take_size(&r);
        d.dilations[a] = take_size(&r) % 4;
        d.start_padding[a] = take_size(&r) % 8;
        d.end_padding[a] = take_size(&r) % 8;
        d.output_sizes[a] = (take8(&r) & 3) ? 0 : take_size(&r);
        ad.output_sizes[a] = take_size(&r);
    }
    const uint8_t flags = take8(&r);
    d.include_padding = flags & 1;
    d.count_overhang = (flags >> 1) & 1;
    d.divisor_override = (flags >> 2) & 1 ? (int64_t)(int8_t)take8(&r) : 0;
    d.nan_policy = ad.nan_policy = (flags >> 6) == 3 ? 2 : (flags >> 3) & 1; /* 2: invalid */
    d.min_count = ad.min_count = (flags >> 4) & 3;
    if ((flags >> 6) == 2) d.min_count = ad.min_count = -1;
    apply_recipe(recipe, &r, &t, &d, &ad);

    int64_t out[AP_MAX_SPATIAL];
    ap_status s = adaptive ? ap_adaptive_output_sizes(&ad, &t, out)
                           : ap_pool_output_sizes(&d, &t, out);
    if (s > AP_ERR_ALIGNMENT || !*ap_status_string(s)) abort(); /* every status is a known one */
    /* ap_*_check: the same status, and a field (only) when a rule broke */
    ap_error err;
    const ap_status sc = adaptive ? ap_adaptive_check(&ad, &t, NULL, &err)
                                  : ap_pool_check(&d, &t, NULL, &err);
    if (sc != s || err.status != s || !err.field || (s != AP_OK) != (*err.field != 0) ||
        err.axis < -1 || err.axis >= AP_MAX_SPATIAL || strlen(err.detail) >= sizeof err.detail)
        abort();
    if (s != AP_OK) {
        /* an invalid call must fail the same way when run */
        ap_status s2 = adaptive ? ap_adaptive_avgpool(&ad, &t, dtype, NULL, NULL, 1)
                                : ap_avgpool(&d, &t, dtype, NULL, NULL, 1);
        if (s2 == AP_OK) abort();
        return 0;
    }
    /* element counts (validated: they fit in int64 and are small enough here?) */
    int64_t n_in = t.batch * t.channels, n_out = t.batch * t.channels;
    for (int a = 0; a < t.rank; ++a) {
        if (t.sizes[a] > 4096 || out[a] > 4096) return 0;
        n_in *= t.sizes[a];
        n_out *= out[a];
        if (n_in > (1 << 16) || n_out > (1 << 16)) return 0;
    }
    const size_t es = elem_size(dtype);
    uint8_t *x = (uint8_t *)malloc((size_t)n_in * es + 1);
    uint8_t *ref = (uint8_t *)malloc((size_t)n_out * es + 1);
    uint8_t *y = (uint8_t *)malloc((size_t)n_out * es + 1);
    if (!x || !ref || !y) abort();
    for (int64_t i = 0; i < n_in; ++i) { /* small values, sometimes inf / NaN */
        const uint8_t b = take8(&r);
        const float v = b == 255 ? INFINITY : b == 254 ? NAN : (float)((int)b - 128) / 8.0f;
        if (dtype == AP_DTYPE_F64) ((double *)x)[i] = v;
        else if (dtype == AP_DTYPE_F32) ((float *)x)[i] = v;
        else if (dtype == AP_DTYPE_BF16) {
            uint32_t u;
            memcpy(&u, &v, 4);
            ((uint16_t *)x)[i] = (uint16_t)(u >> 16);
        } else { /* f16 of a value that is exact there */
            const int q = (int)b - 128;
            uint16_t h = b == 255 ? 0x7c00 : b == 254 ? 0x7e00 : 0;
            if (b < 254 && q != 0) { /* q / 8 in binary16 */
                const int m = q < 0 ? -q : q;
                int e = 0;
                while ((m >> e) > 1) ++e; /* floor(log2 m) */
                const uint16_t mant = (uint16_t)(((m << 10) >> e) & 0x3ff);
                h = (uint16_t)((q < 0 ? 0x8000 : 0) | ((e - 3 + 15) << 10) | mant);
            }
            ((uint16_t *)x)[i] = h;
        }
    }
    reader tile_r = r; /* every instruction set pools the same tile */
#define AP_ISA_NAME(isa) #isa,
    static const char *const isas[] = {AP_ISAS(AP_ISA_NAME)}; /* scalar first */
    int ran = 0;
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; ++k) {
        if (ap_set_isa(isas[k]) != AP_OK) continue;
        uint8_t *dst = ran ? y : ref;
        const int threads = 1 + (int)(k & 1);
        s = adaptive ? ap_adaptive_avgpool(&ad, &t, dtype, x, dst, threads)
                     : ap_avgpool(&d, &t, dtype, x, dst, threads);
        if (s != AP_OK) abort(); /* valid sizes must run */
        if (ran && !same_values(ref, y, (size_t)n_out, dtype)) {
            fprintf(stderr, "path %s differs from scalar: %s dtype %d layout %d N %lld C %lld "
                    "rank %d\n", isas[k], adaptive ? "adaptive" : "pool", (int)dtype,
                    (int)t.layout, (long long)t.batch, (long long)t.channels, (int)t.rank);
            for (int a = 0; a < t.rank; ++a)
                fprintf(stderr, "  axis %d: in %lld out %lld k %lld s %lld d %lld pads %lld %lld "
                        "outsz %lld adaptive %lld\n", a, (long long)t.sizes[a], (long long)out[a],
                        (long long)d.window[a], (long long)d.strides[a], (long long)d.dilations[a],
                        (long long)d.start_padding[a], (long long)d.end_padding[a],
                        (long long)d.output_sizes[a], (long long)ad.output_sizes[a]);
            fprintf(stderr, "  include %d overhang %d override %lld\n", d.include_padding,
                    d.count_overhang, (long long)d.divisor_override);
            abort();
        }
        /* the compiled operator of the same call gives the same bits */
        ap_operator *op = NULL;
        s = adaptive ? ap_operator_create_adaptive(&ad, &t, dtype, threads, &op, NULL)
                     : ap_operator_create_pool(&d, &t, dtype, threads, &op, NULL);
        if (s != AP_OK || !op) abort();
        uint8_t *z = (uint8_t *)malloc((size_t)n_out * es + 1);
        if (!z || ap_operator_run(op, x, z) != AP_OK || memcmp(z, dst, (size_t)n_out * es) != 0) {
            fprintf(stderr, "path %s: the operator differs from the one-shot call\n", isas[k]);
            abort();
        }
        /* written in the other layout instead, then moved back: the same bits */
        ap_operator *other = NULL;
        s = adaptive ? ap_operator_create_adaptive(&ad, &t, dtype, threads, &other, NULL)
                     : ap_operator_create_pool(&d, &t, dtype, threads, &other, NULL);
        ap_tensor_desc moved;
        if (s != AP_OK || !other ||
            ap_operator_set_output_layout(other, t.layout == AP_LAYOUT_NCHW ? AP_LAYOUT_NHWC
                                                                            : AP_LAYOUT_NCHW) !=
                AP_OK ||
            ap_operator_output(other, &moved) != AP_OK)
            abort();
        uint8_t *zm = (uint8_t *)malloc((size_t)n_out * es + 1);
        if (!zm || ap_operator_run(other, x, zm) != AP_OK ||
            ap_relayout(&moved, dtype, zm, z, 1) != AP_OK ||
            memcmp(z, dst, (size_t)n_out * es) != 0) {
            fprintf(stderr, "path %s: the output in the other layout differs\n", isas[k]);
            abort();
        }
        free(zm);
        ap_operator_destroy(other);
        free(z);
        /* the backward pass with the output as the gradient: it runs (memory-checked by the
         * sanitizers) and the operator's equals the one-shot call's */
        uint8_t *gx = (uint8_t *)malloc((size_t)n_in * es + 1);
        uint8_t *gz = (uint8_t *)malloc((size_t)n_in * es + 1);
        if (!gx || !gz) abort();
        s = adaptive ? ap_adaptive_avgpool_backward(&ad, &t, dtype, dst, gx, threads)
                     : ap_avgpool_backward(&d, &t, dtype, dst, gx, threads);
        if (d.nan_policy == AP_NAN_OMIT) { /* no backward pass: its gradient depends on x */
            if (s != AP_ERR_NAN_POLICY || ap_operator_run_backward(op, dst, gz) != s) abort();
        } else if (s != AP_OK || ap_operator_run_backward(op, dst, gz) != AP_OK ||
                   memcmp(gx, gz, (size_t)n_in * es) != 0) {
            fprintf(stderr, "path %s: the backward failed or the operator's differs\n", isas[k]);
            abort();
        }
        free(gx);
        free(gz);
        ap_operator_destroy(op);
        check_tile(adaptive, &d, &ad, &t, dtype, out, x, dst, &tile_r, threads, !ran);
        ++ran;
    }
    ap_set_isa(NULL);
    /* ap_relayout: to the other layout and back gives x's bits again */
    uint8_t *w = (uint8_t *)malloc((size_t)n_in * es + 1);
    uint8_t *v = (uint8_t *)malloc((size_t)n_in * es + 1);
    if (!w || !v) abort();
    ap_tensor_desc back = t;
    back.layout = t.layout == AP_LAYOUT_NCHW ? AP_LAYOUT_NHWC : AP_LAYOUT_NCHW;
    if (ap_relayout(&t, dtype, x, w, 1) != AP_OK || ap_relayout(&back, dtype, w, v, 2) != AP_OK ||
        memcmp(x, v, (size_t)n_in * es) != 0)
        abort();
    free(w);
    free(v);
    free(x);
    free(ref);
    free(y);
    return 0;
}
