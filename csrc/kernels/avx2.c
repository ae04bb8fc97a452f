/* avx2.c - AVX2 + FMA + F16C kernels: 8 float lanes; float tails use
 * vmaskmov, 16-bit tails go through a small stack buffer (AVX2 has no
 * 16-bit masked loads). Compiled with those flags only; chosen at run time
 * by dispatch.c. */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../convert.h"
#include "../threading.h"
#include "kernels.h"

#define VL 8
typedef __m256 vf;
typedef __m256i vi;

static const int32_t ap_mask_table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static inline __m256i ap_tail(int n) { /* first n lanes set, n < 8 */
    return _mm256_loadu_si256((const __m256i *)(ap_mask_table + 8 - n));
}
static inline vf v_zero(void) { return _mm256_setzero_ps(); }
static inline vf v_set1(float f) { return _mm256_set1_ps(f); }
static inline vf v_loadu(const float *p) { return _mm256_loadu_ps(p); }
static inline vf v_loadu_n(const float *p, int n) { return _mm256_maskload_ps(p, ap_tail(n)); }
static inline void v_storeu(float *p, vf v) { _mm256_storeu_ps(p, v); }
/* A store that bypasses the caches (p aligned to a vector), and the fence that orders such
 * stores before the thread reports its work done. */
static inline void v_stream(float *p, vf v) { _mm256_stream_ps(p, v); }
static inline void v_fence(void) { _mm_sfence(); }
static inline void v_storeu_n(float *p, vf v, int n) { _mm256_maskstore_ps(p, ap_tail(n), v); }
static inline vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf v_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline float v_hsum(vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* Even lanes of the 16-lane concatenation (a, b): the stride-2 taps. */
static inline vf v_even(vf a, vf b) {
    const __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 a4 a6 b4 b6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
/* Odd lanes of the concatenation (a, b): the second tap of each stride-2 window. */
static inline vf v_odd(vf a, vf b) {
    const __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); /* a1 a3 b1 b3 a5 a7 b5 b7 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
/* r[i][j] <-> r[j][i]: an 8 x 8 block in registers (pairs, quads, then 128-bit halves). */
static inline void v_transpose(vf r[VL]) {
    vf t[VL];
    for (int i = 0; i < VL; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < VL; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < VL; ++i) r[i] = t[i];
}
static inline vi vi_loadu(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
/* Lane i of the result: lane idx[i] of the 2 VL lanes a then b (0 <= idx[i] < 2 VL). */
static inline vf v_perm2(vf a, vf b, vi idx) {
    const vf lo = _mm256_permutevar8x32_ps(a, idx), hi = _mm256_permutevar8x32_ps(b, idx);
    const __m256i from_b = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(VL - 1));
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(from_b));
}
static inline vi vi_set1(int32_t v) { return _mm256_set1_epi32(v); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
/* base[idx] in lanes where j < ntaps, 0 elsewhere (no access there). */
static inline vf v_gather_lt(const float *base, vi idx, vi ntaps, int32_t j) {
    const __m256 m = _mm256_castsi256_ps(_mm256_cmpgt_epi32(ntaps, _mm256_set1_epi32(j)));
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, idx, m, 4);
}

/* The first n (0..8) of 8 16-bit lanes, the rest 0, touching p[0 .. n) only: the pairs of
 * lanes by a masked 32-bit load, an odd last lane blended in. A copy through a stack buffer
 * (memcpy of a variable length) made the float16 tail of each 49-element plane cost more
 * than the plane's six full vectors (global 32x2048x7x7 float16 channels first, 1 thread). */
static inline __m128i ap_load16_n(const uint16_t *p, int n) {
    const __m128i pairs = _mm_maskload_epi32(
        (const int *)(const void *)p,
        _mm_cmpgt_epi32(_mm_set1_epi32(n / 2), _mm_setr_epi32(0, 1, 2, 3)));
    if (!(n & 1)) return pairs;
    const __m128i last = _mm_cmpeq_epi16(_mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm_set1_epi16((short)(n - 1)));
    return _mm_blendv_epi8(pairs, _mm_set1_epi16((short)p[n - 1]), last);
}
static inline void ap_store16_n(uint16_t *p, __m128i v, int n) {
    _mm_maskstore_epi32((int *)(void *)p,
                        _mm_cmpgt_epi32(_mm_set1_epi32(n / 2), _mm_setr_epi32(0, 1, 2, 3)), v);
    if (n & 1) {
        uint16_t tmp[8];
        _mm_storeu_si128((__m128i *)tmp, v);
        p[n - 1] = tmp[n - 1];
    }
}

static inline vf v_load_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline vf v_load_f16_n(const uint16_t *p, int n) { return _mm256_cvtph_ps(ap_load16_n(p, n)); }
static inline __m128i ap_to_f16(vf v) {
    return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline void v_store_f16(uint16_t *p, vf v) { _mm_storeu_si128((__m128i *)p, ap_to_f16(v)); }
static inline void v_store_f16_n(uint16_t *p, vf v, int n) { ap_store16_n(p, ap_to_f16(v), n); }

static inline vf ap_bf16_widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline vf v_load_bf16(const uint16_t *p) {
    return ap_bf16_widen(_mm_loadu_si128((const __m128i *)p));
}
static inline vf v_load_bf16_n(const uint16_t *p, int n) { return ap_bf16_widen(ap_load16_n(p, n)); }
/* Round to nearest even on the upper 16 bits; NaN stays a quiet NaN. */
static inline __m128i ap_to_bf16(vf v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    r = _mm256_blendv_epi8(r, quiet, nan);
    r = _mm256_srli_epi32(r, 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
static inline void v_store_bf16(uint16_t *p, vf v) { _mm_storeu_si128((__m128i *)p, ap_to_bf16(v)); }
static inline void v_store_bf16_n(uint16_t *p, vf v, int n) { ap_store16_n(p, ap_to_bf16(v), n); }

#define AP_STR_(x) #x
#define AP_STR(x) AP_STR_(x)
#define AP_ISA_SUFFIX _avx2
#define AP_ISA_NAME avx2
#include "simd_dtypes.inc"
