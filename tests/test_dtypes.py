"""float16 / bfloat16 specifics, NaN and inf propagation, unsupported dtypes.

Expected values are computed here with numpy / ml_dtypes casts (round to nearest even), never
taken from the library.
"""

import ml_dtypes
import numpy as np
import pytest

import avgpool
from reference import ref_average_pool
from strategies import BFLOAT16, DTYPE_IDS, DTYPES, FLOAT16, LAYOUTS, to_layout, to_nchw

HALF_TYPES = [FLOAT16, BFLOAT16]
HALF_IDS = ["float16", "bfloat16"]


def pool1d(values, dtype, k, s=1, **kw):
    x = np.asarray(values, dtype=np.float64).astype(dtype).reshape(1, 1, -1)
    return avgpool.average_pool(x, avgpool.AveragePoolingDesc((k,), strides=(s,), **kw))[0, 0]


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


# --------------------------------------------------------------------------------------------
# float32 accumulation


def test_float16_accumulates_in_float32():
    # A float16 running sum sticks at 2048 (spacing 2 there): 2048 + 1 == 2048. The float32 sum
    # is 2052 and 2052 / 5 = 410.4 rounds to 410.5 in float16; the float16 running sum would give
    # 2048 / 5 = 409.6 -> 409.5.
    y = pool1d([2048, 1, 1, 1, 1], FLOAT16, 5)
    assert y.dtype == FLOAT16
    assert float(y[0]) == 410.5
    assert float(y[0]) == float(np.float16(np.float32(2052) / np.float32(5)))
    running = np.float16(0)
    for v in [2048, 1, 1, 1, 1]:
        running = np.float16(running + np.float16(v))
    assert float(np.float16(np.float32(running) / 5)) != float(y[0])  # the test means something


def test_bfloat16_accumulates_in_float32():
    # bfloat16 spacing at 256 is 2: a bfloat16 running sum of 256 + 1 * 7 stays 256.
    # float32: 263 / 8 = 32.875 -> bfloat16 33 (tie between 32.75 and 33 goes to the even 33).
    y = pool1d([256, 1, 1, 1, 1, 1, 1, 1], BFLOAT16, 8)
    assert y.dtype == BFLOAT16
    assert float(y[0]) == 33.0
    assert float(y[0]) == float(ml_dtypes.bfloat16(np.float32(263) / np.float32(8)))
    # 2-D NHWC version of the same window
    x = np.array([256, 1, 1, 1, 1, 1, 1, 1], dtype=BFLOAT16).reshape(1, 2, 4, 1)
    y2 = avgpool.average_pool(x, avgpool.AveragePoolingDesc((2, 4)), layout="NHWC")
    assert float(y2[0, 0, 0, 0]) == 33.0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_float16_2d_accumulation(layout):
    # 3x3 windows of 2048 and eight 1s: float32 mean 2056/9 = 228.44 -> float16 228.5
    x = np.ones((1, 1, 3, 6), dtype=np.float64)
    x[0, 0, 0, 0] = 2048
    x[0, 0, 1, 4] = 2048
    x = to_layout(x.astype(FLOAT16), layout)
    y = to_nchw(avgpool.average_pool(x, avgpool.AveragePoolingDesc((3, 3), strides=(1, 3)),
                                     layout=layout), layout)
    want = float(np.float16(np.float32(2056) / np.float32(9)))
    assert want == 228.5
    np.testing.assert_array_equal(y[0, 0].astype(np.float64), [[want, want]])


def test_float16_no_intermediate_overflow():
    # 65504 + 65504 overflows float16 but not float32; the mean 65504 is representable
    y = pool1d([65504, 65504, 65504], FLOAT16, 3)
    assert float(y[0]) == 65504.0
    y = pool1d([65504, -65504, 65504, 65504], FLOAT16, 4)
    assert float(y[0]) == float(np.float16(np.float32(65504 * 2) / np.float32(4)))


# --------------------------------------------------------------------------------------------
# Output rounding: to nearest, ties to even


@pytest.mark.parametrize("values,expected", [
    # ties at 1 + 2^-11: between 1 (even) and 1 + 2^-10 (odd) -> 1
    ([1.0, 1.0 + 2**-10], 1.0),
    # 1 + 3 * 2^-11: between 1 + 2^-10 (odd) and 1 + 2^-9 (even) -> 1 + 2^-9
    ([1.0 + 2**-10, 1.0 + 2**-9], 1.0 + 2**-9),
    ([-1.0, -1.0 - 2**-10], -1.0),
    ([-1.0 - 2**-10, -1.0 - 2**-9], -1.0 - 2**-9),
    # not a tie: 1 + 0.75 * 2^-10 rounds up to 1 + 2^-10
    ([1.0, 1.0, 1.0 + 2**-10, 1.0 + 2**-9], 1.0 + 2**-10),
    # 1 + 0.25 * 2^-10 rounds down to 1
    ([1.0, 1.0, 1.0, 1.0 + 2**-10], 1.0),
    # subnormals: 2^-25 ties between 0 (even) and 2^-24 (odd) -> 0
    ([0.0, 2**-24], 0.0),
    # 1.5 * 2^-24 ties between 2^-24 (odd) and 2^-23 (even) -> 2^-23
    ([2**-24, 2**-23], 2**-23),
    # 2.5 * 2^-24 -> 2^-23 (even); 3.5 * 2^-24 -> 2^-22 (even)
    ([2**-23, 3 * 2**-24], 2**-23),
    ([3 * 2**-24, 2**-22], 2**-22),
    # the smallest normal
    ([2**-14, 2**-14], 2**-14),
])
def test_float16_round_nearest_even(values, expected):
    y = pool1d(values, FLOAT16, len(values))
    assert float(y[0]) == expected
    assert float(y[0]) == float(np.float16(np.float32(sum(values)) / np.float32(len(values))))


@pytest.mark.parametrize("values,override,expected", [
    ([65504.0, 15.0], 1, 65504.0),       # 65519 rounds down to the largest float16
    ([65504.0, 16.0], 1, np.inf),        # 65520 is the tie with 65536: rounds to inf
    ([65504.0, 65504.0], 1, np.inf),
    ([-65504.0, -16.0], 1, -np.inf),
])
def test_float16_overflow_rounds_to_inf(values, override, expected):
    y = pool1d(values, FLOAT16, len(values), divisor_override=override)
    assert float(y[0]) == expected


@pytest.mark.parametrize("values,expected", [
    # bfloat16 spacing at 1 is 2^-7
    ([1.0, 1.0 + 2**-7], 1.0),
    ([1.0 + 2**-7, 1.0 + 2**-6], 1.0 + 2**-6),
    ([-1.0 - 2**-7, -1.0 - 2**-6], -1.0 - 2**-6),
    ([1.0, 1.0, 1.0 + 2**-7, 1.0 + 2**-6], 1.0 + 2**-7),
    ([1.0, 1.0, 1.0, 1.0 + 2**-7], 1.0),
    # float32 / bfloat16 subnormals (below 2^-126) are kept, not flushed to zero
    ([2.0**-130, 2.0**-130], 2.0**-130),
])
def test_bfloat16_round_nearest_even(values, expected):
    y = pool1d(values, BFLOAT16, len(values))
    assert float(y[0]) == expected
    assert float(y[0]) == float(ml_dtypes.bfloat16(
        np.float32(np.sum(np.float32(values))) / np.float32(len(values))))


def test_bfloat16_overflow_to_inf():
    big = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    y = pool1d([big, big], BFLOAT16, 2, divisor_override=1)
    assert float(y[0]) == np.inf
    # bfloat16 shares float32's range, so the float32 sum itself overflows: inf, as IEEE says
    y = pool1d([big, big], BFLOAT16, 2)
    assert float(y[0]) == np.inf
    y = pool1d([big, big, big], BFLOAT16, 3)
    assert float(y[0]) == np.inf
    # (whether big - big + big overflows depends on the order of the float32 sum, which the
    # specification leaves open, so it is not pinned here)


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=HALF_IDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_16bit_value_survives_window_1(dtype, layout):
    # Window 1: y = x / 1 exactly, so every finite value and inf must come back unchanged
    # (up to the sign of zero) and NaN must stay NaN: covers both conversions on all patterns.
    allbits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = allbits.view(dtype).reshape(4, 16, 1024)  # (N, C, L)
    x = to_layout(x, layout)
    y = avgpool.average_pool(x, avgpool.AveragePoolingDesc((1,)), layout=layout)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert np.array_equal(np.isnan(x64), np.isnan(y64))
    fin = ~np.isnan(x64)
    np.testing.assert_array_equal(y64[fin], x64[fin])
    nonzero = fin & (x64 != 0)
    np.testing.assert_array_equal(bits(y)[nonzero], bits(x)[nonzero])


@pytest.mark.parametrize("dtype", HALF_TYPES, ids=HALF_IDS)
def test_16bit_rounding_many_means(dtype):
    # All pairs of adjacent representable values in [1, 4]: each mean is a tie between them.
    # Expected: the exact float32 mean rounded by numpy / ml_dtypes (nearest even).
    lo = np.array(1.0, dtype=dtype).view(np.uint16)
    hi = np.array(4.0, dtype=dtype).view(np.uint16)
    vals = np.arange(int(lo), int(hi) + 1, dtype=np.uint32).astype(np.uint16).view(dtype)
    x = np.stack([vals[:-1], vals[1:]], axis=-1).reshape(1, 1, -1)  # pairs
    y = avgpool.average_pool(x, avgpool.AveragePoolingDesc((2,), strides=(2,)))[0, 0]
    means = (vals[:-1].astype(np.float32) + vals[1:].astype(np.float32)) / np.float32(2)
    np.testing.assert_array_equal(bits(y), bits(means.astype(dtype)))
    # ties went to the even mantissa
    assert np.all(bits(y) % 2 == 0)
    # means of three (mostly not ties): float32 sum (exact), float32 division, one rounding
    x = vals.reshape(1, 1, -1)
    y = avgpool.average_pool(x, avgpool.AveragePoolingDesc((3,)))[0, 0]
    v32 = vals.astype(np.float32)
    means = (v32[:-2] + v32[1:-1] + v32[2:]) / np.float32(3)
    np.testing.assert_array_equal(bits(y), bits(means.astype(dtype)))


# --------------------------------------------------------------------------------------------
# NaN and inf


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_nan_stays_in_its_windows(dtype, layout):
    x = np.arange(1.0, 37.0).reshape(1, 1, 6, 6)
    x[0, 0, 2, 3] = np.nan
    # non-overlapping 2x2: only the window holding (2, 3) is NaN
    xl = to_layout(x.astype(dtype), layout)
    y = to_nchw(avgpool.average_pool(xl, avgpool.AveragePoolingDesc((2, 2), strides=(2, 2)),
                                     layout=layout), layout).astype(np.float64)
    expected_nan = np.zeros((3, 3), bool)
    expected_nan[1, 1] = True
    np.testing.assert_array_equal(np.isnan(y[0, 0]), expected_nan)
    assert np.isfinite(y[0, 0][~expected_nan]).all()
    # overlapping 3x3 s1 p1: NaN exactly in outputs whose window contains (2, 3)
    desc = avgpool.AveragePoolingDesc((3, 3), start_padding=(1, 1), end_padding=(1, 1))
    y = to_nchw(avgpool.average_pool(xl, desc, layout=layout), layout).astype(np.float64)
    expected_nan = np.zeros((6, 6), bool)
    expected_nan[1:4, 2:5] = True
    np.testing.assert_array_equal(np.isnan(y[0, 0]), expected_nan)
    ref = ref_average_pool(x, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), False)
    np.testing.assert_allclose(y, ref, rtol=1e-2, equal_nan=True)
    # adaptive
    ya = to_nchw(avgpool.adaptive_average_pool(xl, (3, 3), layout=layout), layout)
    assert np.isnan(ya[0, 0, 1, 1]) and np.isnan(ya.astype(np.float64)).sum() == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_nan_other_channels_finite(dtype):
    # channels-last: a NaN in channel 1 must not leak into channels 0 and 2
    x = np.ones((1, 4, 4, 3))
    x[0, 1, 1, 1] = np.nan
    y = avgpool.average_pool(x.astype(dtype), avgpool.AveragePoolingDesc((2, 2), strides=(2, 2)),
                             layout="NHWC").astype(np.float64)
    assert np.isnan(y[0, 0, 0, 1])
    assert np.isnan(y).sum() == 1
    np.testing.assert_array_equal(y[~np.isnan(y)], 1.0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_inf_propagates(dtype, layout):
    x = np.ones((1, 1, 2, 8))
    x[0, 0, 0, 0] = np.inf           # window 0: +inf
    x[0, 0, 0, 2] = np.inf           # window 1: +inf and -inf -> NaN
    x[0, 0, 1, 3] = -np.inf
    x[0, 0, 1, 5] = -np.inf          # window 2: -inf
    xl = to_layout(x.astype(dtype), layout)
    y = to_nchw(avgpool.average_pool(xl, avgpool.AveragePoolingDesc((2, 2), strides=(2, 2)),
                                     layout=layout), layout).astype(np.float64)[0, 0, 0]
    assert y[0] == np.inf
    assert np.isnan(y[1])
    assert y[2] == -np.inf
    assert y[3] == 1.0               # window 3 untouched
    # with a divisor override and with include padding the sign of inf is kept
    desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2), divisor_override=-2)
    y = to_nchw(avgpool.average_pool(xl, desc, layout=layout), layout).astype(np.float64)[0, 0, 0]
    assert y[0] == -np.inf and np.isnan(y[1]) and y[2] == np.inf and y[3] == -2.0


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_empty_window_is_nan_for_every_dtype(dtype):
    # in 2, k 2, s 2, pads [3, 0], exclude pad: window 0 covers only padding
    y = pool1d([1.0, 2.0], dtype, 2, s=2, start_padding=(3,)).astype(np.float64)
    assert np.isnan(y[0]) and y[1] == 1.0
    # the same with include padding divides 0 by 2
    y = pool1d([1.0, 2.0], dtype, 2, s=2, start_padding=(3,), include_padding=True)
    np.testing.assert_array_equal(y.astype(np.float64), [0.0, 0.5])


# --------------------------------------------------------------------------------------------
# Unsupported dtypes


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.complex64, np.uint16, object,
                                   np.int8, np.float128 if hasattr(np, "float128") else np.int16])
def test_unsupported_dtype_raises(dtype):
    x = np.ones((1, 1, 4, 4), dtype=dtype)
    name = np.dtype(dtype).name
    with pytest.raises(TypeError, match=f"dtype {name}"):
        avgpool.average_pool(x, avgpool.AveragePoolingDesc((2, 2)))
    with pytest.raises(TypeError, match=f"dtype {name}"):
        avgpool.adaptive_average_pool(x, (2, 2))
    with pytest.raises(TypeError, match="float32, float64, float16 or bfloat16"):
        avgpool.average_pool(x, avgpool.AveragePoolingDesc((2, 2)))
