/* avx512.c - AVX-512 (F, BW, VL, DQ) kernels: 16 float lanes, masked loads
 * and stores for every tail, F16C-style conversion in zmm registers.
 * Compiled with those flags only; chosen at run time by dispatch.c. */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../convert.h"
#include "../threading.h"
#include "kernels.h"

#define VL 16
typedef __m512 vf;
typedef __m512i vi;

static inline __mmask16 ap_tail(int n) { return (__mmask16)((1u << n) - 1u); } /* n < 16 */
static inline vf v_zero(void) { return _mm512_setzero_ps(); }
static inline vf v_set1(float f) { return _mm512_set1_ps(f); }
static inline vf v_loadu(const float *p) { return _mm512_loadu_ps(p); }
static inline vf v_loadu_n(const float *p, int n) { return _mm512_maskz_loadu_ps(ap_tail(n), p); }
static inline void v_storeu(float *p, vf v) { _mm512_storeu_ps(p, v); }
/* A store that bypasses the caches (p aligned to a vector), and the fence that orders such
 * stores before the thread reports its work done. */
static inline void v_stream(float *p, vf v) { _mm512_stream_ps(p, v); }
static inline void v_fence(void) { _mm_sfence(); }
static inline void v_storeu_n(float *p, vf v, int n) { _mm512_mask_storeu_ps(p, ap_tail(n), v); }
static inline vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf v_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline float v_hsum(vf v) { return _mm512_reduce_add_ps(v); }
/* Half vectors, for rows streamed from DRAM that start inside a cache line (row_add_): each
 * 64-byte load there spans two lines, and those loads came in slower than 32-byte ones. */
#define AP_HALF_VL 8
typedef __m256 vhalf;
static inline vhalf vhalf_loadu(const float *p) { return _mm256_loadu_ps(p); }
static inline void vhalf_storeu(float *p, vhalf v) { _mm256_storeu_ps(p, v); }
static inline vhalf vhalf_add(vhalf a, vhalf b) { return _mm256_add_ps(a, b); }
/* Even lanes of the 32-lane concatenation (a, b): the stride-2 taps. */
static inline vf v_even(vf a, vf b) {
    const vi idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, idx, b);
}
/* Odd lanes of the concatenation (a, b): the second tap of each stride-2 window. */
static inline vf v_odd(vf a, vf b) {
    const vi idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(a, idx, b);
}
/* r[i][j] <-> r[j][i]: a 16 x 16 block in registers (pairs, quads, then 128-bit lanes twice). */
static inline void v_transpose(vf r[VL]) {
    vf t[VL];
    for (int i = 0; i < VL; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < VL; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}
static inline vi vi_loadu(const int32_t *p) { return _mm512_loadu_si512((const void *)p); }
/* Lane i of the result: lane idx[i] of the 2 VL lanes a then b (0 <= idx[i] < 2 VL). */
static inline vf v_perm2(vf a, vf b, vi idx) { return _mm512_permutex2var_ps(a, idx, b); }
static inline vi vi_set1(int32_t v) { return _mm512_set1_epi32(v); }
static inline vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
/* base[idx] in lanes where j < ntaps, 0 elsewhere (no access there). */
static inline vf v_gather_lt(const float *base, vi idx, vi ntaps, int32_t j) {
    const __mmask16 m = _mm512_cmpgt_epi32_mask(ntaps, _mm512_set1_epi32(j));
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, base, 4);
}

static inline vf v_load_f16(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline vf v_load_f16_n(const uint16_t *p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(ap_tail(n), p));
}
static inline __m256i ap_to_f16(vf v) {
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline void v_store_f16(uint16_t *p, vf v) { _mm256_storeu_si256((__m256i *)p, ap_to_f16(v)); }
static inline void v_store_f16_n(uint16_t *p, vf v, int n) {
    _mm256_mask_storeu_epi16(p, ap_tail(n), ap_to_f16(v));
}

static inline vf v_load_bf16(const uint16_t *p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
static inline vf v_load_bf16_n(const uint16_t *p, int n) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(ap_tail(n), p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
/* Round to nearest even on the upper 16 bits; NaN stays a quiet NaN. */
static inline __m256i ap_to_bf16(vf v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
static inline void v_store_bf16(uint16_t *p, vf v) { _mm256_storeu_si256((__m256i *)p, ap_to_bf16(v)); }
static inline void v_store_bf16_n(uint16_t *p, vf v, int n) {
    _mm256_mask_storeu_epi16(p, ap_tail(n), ap_to_bf16(v));
}

#define AP_STR_(x) #x
#define AP_STR(x) AP_STR_(x)
#define AP_ISA_SUFFIX _avx512
#define AP_ISA_NAME avx512
#include "simd_dtypes.inc"
