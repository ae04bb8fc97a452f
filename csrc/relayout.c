/* relayout.c - ap_relayout: a tensor copied between channels-first and
 * channels-last storage.
 *
 * Per image that is the transpose of a (C, spatial) matrix or back
 * (ap_transpose, which the channels-last kernels also use to write a
 * channels-first output row by row). A plain strided copy reads (or writes)
 * one element per cache line and walks through more lines than L1 holds
 * before it comes back to use the rest of them: numpy's and torch's copies
 * of a (2, 8, 28, 28, 64) result into (2, 64, 8, 28, 28) took 5.6-6.5x the
 * time of a contiguous copy, these tiles 2x (Intel Xeon VM, 1 thread). Each
 * image is cut into bands of AP_BAND rows of the source; a band is copied
 * tile by tile (AP_BAND x AP_BAND), so the lines read and written by a tile
 * stay in L1 and each is used whole. 4-byte elements go 4 x 4 blocks at a
 * time through SSE2 register transposes (part of every x86-64 CPU): a
 * (2, 8, 28, 28, 64) float32 result into (2, 64, 8, 28, 28) took 471 us one
 * by one and takes 229 at 1 thread (231 -> 102 at 2), the way back
 * 435 -> 367 (220 -> 169). */
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/kernels.h"
#include "threading.h"

enum { AP_BAND = 16 };

/* ap_transpose one element at a time, AP_BAND columns per pass over the rows. */
#define AP_TRANSPOSE_TILES(T)                                                          \
    do {                                                                               \
        const T *restrict s_ = (const T *)src;                                         \
        T *restrict d_ = (T *)dst;                                                     \
        for (int64_t c0 = 0; c0 < cols; c0 += AP_BAND) {                               \
            const int64_t c1 = c0 + AP_BAND < cols ? c0 + AP_BAND : cols;              \
            for (int64_t c = c0; c < c1; ++c)                                          \
                for (int64_t r = 0; r < rows; ++r)                                     \
                    d_[c * dst_ld + r] = s_[r * src_ld + c];                           \
        }                                                                              \
    } while (0)

#if defined(__SSE2__)
/* ap_transpose of 4-byte elements: whole 4 x 4 blocks through registers, the last
 * rows and each pass's last columns (fewer than 4) one by one. */
static void ap_transpose_4(const float *restrict src, int64_t src_ld, float *restrict dst,
                           int64_t dst_ld, int64_t rows, int64_t cols) {
    for (int64_t c0 = 0; c0 < cols; c0 += AP_BAND) {
        const int64_t c1 = c0 + AP_BAND < cols ? c0 + AP_BAND : cols;
        int64_t r = 0;
        for (; r + 4 <= rows; r += 4) {
            const float *s = src + r * src_ld;
            int64_t c = c0;
            for (; c + 4 <= c1; c += 4) {
                __m128 a = _mm_loadu_ps(s + c), b = _mm_loadu_ps(s + src_ld + c),
                       e = _mm_loadu_ps(s + 2 * src_ld + c), f = _mm_loadu_ps(s + 3 * src_ld + c);
                _MM_TRANSPOSE4_PS(a, b, e, f);
                _mm_storeu_ps(dst + c * dst_ld + r, a);
                _mm_storeu_ps(dst + (c + 1) * dst_ld + r, b);
                _mm_storeu_ps(dst + (c + 2) * dst_ld + r, e);
                _mm_storeu_ps(dst + (c + 3) * dst_ld + r, f);
            }
            for (; c < c1; ++c)
                for (int64_t k = 0; k < 4; ++k) dst[c * dst_ld + r + k] = s[k * src_ld + c];
        }
        for (; r < rows; ++r)
            for (int64_t c = c0; c < c1; ++c) dst[c * dst_ld + r] = src[r * src_ld + c];
    }
}
#endif

void ap_transpose(const void *src, int64_t src_ld, void *dst, int64_t dst_ld, int64_t rows,
                  int64_t cols, size_t es) {
    switch (es) {
    case 2: AP_TRANSPOSE_TILES(uint16_t); break;
#if defined(__SSE2__)
    case 4: ap_transpose_4((const float *)src, src_ld, (float *)dst, dst_ld, rows, cols); break;
#else
    case 4: AP_TRANSPOSE_TILES(uint32_t); break;
#endif
    default: AP_TRANSPOSE_TILES(uint64_t); break;
    }
}

typedef struct {
    const char *x;
    char *y;
    int64_t rows, cols;  /* per image: x is rows x cols, y is cols x rows */
    int64_t bands;       /* bands of AP_BAND rows per image                */
    size_t es;           /* bytes per element                              */
} ap_relayout_job;

static void ap_relayout_bands(void *ctx, int64_t lo, int64_t hi) {
    const ap_relayout_job *job = (const ap_relayout_job *)ctx;
    const int64_t rows = job->rows, cols = job->cols;
    for (int64_t b = lo; b < hi; ++b) {
        const int64_t n = b / job->bands;
        const int64_t r0 = (b % job->bands) * AP_BAND;
        const int64_t r1 = r0 + AP_BAND < rows ? r0 + AP_BAND : rows;
        const size_t image = (size_t)(n * rows * cols) * job->es;
        ap_transpose(job->x + image + (size_t)(r0 * cols) * job->es, cols,
                     job->y + image + (size_t)r0 * job->es, rows, r1 - r0, cols, job->es);
    }
}

ap_status ap_relayout(const ap_tensor_desc *input, ap_dtype dtype, const void *x, void *y,
                      int num_threads) {
    if (!input) return AP_ERR_NULL_POINTER;
    int64_t plane;
    ap_status s = ap_tensor_check(input, &plane);
    if (s != AP_OK) return s;
    if ((unsigned)dtype > AP_DTYPE_BF16) return AP_ERR_DTYPE;
    const int64_t total = input->batch * input->channels * plane;
    if (total == 0) return AP_OK;
    s = ap_check_buffers(x, total, y, total, dtype);
    if (s != AP_OK) return s;
    ap_relayout_job job;
    job.x = (const char *)x;
    job.y = (char *)y;
    /* channels first -> last: x is (C, plane) per image; last -> first: (plane, C) */
    job.rows = input->layout == AP_LAYOUT_NCHW ? input->channels : plane;
    job.cols = input->layout == AP_LAYOUT_NCHW ? plane : input->channels;
    job.bands = (job.rows + AP_BAND - 1) / AP_BAND;
    job.es = ap_dtype_bytes(dtype);
    const int nt = ap_threads_within(num_threads > 0 ? num_threads : ap_max_threads(), total);
    ap_parallel_for(nt, input->batch * job.bands, total, ap_relayout_bands, &job);
    return AP_OK;
}
