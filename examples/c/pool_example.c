/* pool_example.c - average pooling from C with libavgpool.
 *
 * Pools a 1 x 2 x 6 x 6 float tensor (N, C, H, W) with a 3 x 3 window,
 * stride 2 and padding 1 (padding excluded from the mean), then adaptively
 * to 2 x 2, and prints the results; then compiles the windowed pooling once
 * (ap_operator_create_pool) and runs it on a stream of inputs, as an
 * inference loop would.
 *
 * Build against an installation (scripts/test_c.sh does both):
 *   cmake -S . -B build -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build
 *   gcc pool_example.c $(pkg-config --cflags --libs avgpool) -o pool_example
 */
#include <stdio.h>
#include <stdlib.h>

#include <avgpool.h>

static void print_planes(const char *title, const float *y, int64_t channels, int64_t h,
                         int64_t w) {
    printf("%s (%lld x %lld per channel):\n", title, (long long)h, (long long)w);
    for (int64_t c = 0; c < channels; ++c) {
        printf("  channel %lld\n", (long long)c);
        for (int64_t i = 0; i < h; ++i) {
            printf("   ");
            for (int64_t j = 0; j < w; ++j) printf(" %7.3f", y[(c * h + i) * w + j]);
            printf("\n");
        }
    }
}

static int check(ap_status s, const char *what) {
    if (s == AP_OK) return 0;
    fprintf(stderr, "%s failed: %s\n", what, ap_status_string(s));
    return 1;
}

int main(void) {
    printf("avgpool %s, kernels: %s\n", ap_version(), ap_isa());

    /* Input: channel c holds 100 * c + (row * 6 + column). */
    ap_tensor_desc in = {0};
    in.batch = 1;
    in.channels = 2;
    in.rank = 2;
    in.sizes[0] = 6;
    in.sizes[1] = 6;
    in.layout = AP_LAYOUT_NCHW;
    float x[2 * 6 * 6];
    for (int i = 0; i < 2 * 6 * 6; ++i) x[i] = (float)(100 * (i / 36) + i % 36);

    /* Windowed: 3 x 3, stride 2, padding 1 on both ends of both axes. */
    const int64_t window[2] = {3, 3};
    ap_pool_desc pool;
    if (check(ap_pool_desc_init(&pool, 2, window), "ap_pool_desc_init")) return 1;
    for (int a = 0; a < 2; ++a) {
        pool.strides[a] = 2;
        pool.start_padding[a] = 1;
        pool.end_padding[a] = 1;
    }
    pool.include_padding = 0;
    int64_t out[AP_MAX_SPATIAL];
    if (check(ap_pool_output_sizes(&pool, &in, out), "ap_pool_output_sizes")) return 1;
    float *y = malloc(sizeof(float) * (size_t)(in.batch * in.channels * out[0] * out[1]));
    if (!y) return 1;
    /* num_threads 0: the OpenMP default (small tensors stay on one thread). */
    if (check(ap_avgpool_f32(&pool, &in, x, y, 0), "ap_avgpool_f32")) return 1;
    print_planes("avg_pool 3x3 stride 2 pad 1", y, in.channels, out[0], out[1]);
    free(y);

    /* Adaptive: windows [floor(i * 6 / 2), ceil((i + 1) * 6 / 2)) per axis. */
    ap_adaptive_desc adaptive = {0};
    adaptive.rank = 2;
    adaptive.output_sizes[0] = 2;
    adaptive.output_sizes[1] = 2;
    float z[2 * 2 * 2];
    if (check(ap_adaptive_avgpool_f32(&adaptive, &in, x, z, 1), "ap_adaptive_avgpool_f32"))
        return 1;
    print_planes("adaptive_avg_pool to 2x2", z, in.channels, 2, 2);

    /* Compiled once, run many times: the plan, kernel path and thread count
     * are fixed at creation; each run only pools. */
    ap_operator *op = NULL;
    ap_error err;
    if (ap_operator_create_pool(&pool, &in, AP_DTYPE_F32, 1, &op, &err) != AP_OK) {
        fprintf(stderr, "ap_operator_create_pool: %s (%s)\n", err.detail, err.field);
        return 1;
    }
    ap_tensor_desc out_desc;
    ap_operator_output(op, &out_desc);
    float frame[2 * 6 * 6], pooled[2 * 3 * 3];
    for (int t = 0; t < 3; ++t) { /* three frames: every input value plus t */
        for (int i = 0; i < 2 * 6 * 6; ++i) frame[i] = x[i] + (float)t;
        if (check(ap_operator_run(op, frame, pooled), "ap_operator_run")) return 1;
        printf("frame %d: first output %.3f, last %.3f (%lld x %lld per channel)\n", t, pooled[0],
               pooled[2 * 3 * 3 - 1], (long long)out_desc.sizes[0], (long long)out_desc.sizes[1]);
    }
    ap_operator_destroy(op);

    /* Errors are status codes, never crashes. */
    pool.strides[0] = 0;
    const ap_status s = ap_avgpool_f32(&pool, &in, x, z, 1);
    printf("stride 0: status %d (%s)\n", (int)s, ap_status_string(s));
    return s == AP_ERR_STRIDE ? 0 : 1;
}
