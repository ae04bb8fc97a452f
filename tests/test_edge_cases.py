"""docs/semantics.md section 5, the cases about the core model (1, 2, 9, 11, 12, 13, 15; and the core's
answers for 5, 8 and 16). Expected values are worked out by hand here or come from the float64
reference; none is copied from the library's output."""

import numpy as np
import pytest

import avgpool
from avgpool import AveragePoolingDesc as Desc
from reference import ref_average_pool
from strategies import (
    BFLOAT16,
    DTYPE_IDS,
    DTYPES,
    FLOAT16,
    LAYOUTS,
    assert_matches,
    make_data,
    reference_adaptive,
    reference_pool,
    to_layout,
    to_nchw,
)

all_dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
all_layouts = pytest.mark.parametrize("layout", LAYOUTS)


def run(x_nchw, desc, dtype, layout):
    """Pool a channels-first float64 array as ``dtype`` in ``layout``; channels-first float64."""
    x = to_layout(np.asarray(x_nchw, dtype=np.float64).astype(dtype), layout)
    y = avgpool.average_pool(x, desc, layout=layout)
    assert y.dtype == dtype
    return to_nchw(y, layout).astype(np.float64)


def run_adaptive(x_nchw, sizes, dtype, layout):
    x = to_layout(np.asarray(x_nchw, dtype=np.float64).astype(dtype), layout)
    y = avgpool.adaptive_average_pool(x, sizes, layout=layout)
    assert y.dtype == dtype
    return to_nchw(y, layout).astype(np.float64)


def assert_exact_or_rounded(got, want, dtype):
    """``want`` is exact in float64: the library must return it rounded to ``dtype``."""
    want = np.asarray(want, dtype=np.float64)
    np.testing.assert_array_equal(got, want.astype(dtype).astype(np.float64))


# 1. 1x1x4x4, k 2x2, s 2: exact block means ----------------------------------------------------


@all_layouts
@all_dtypes
def test_case1_block_means(dtype, layout):
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    y = run(x, Desc((2, 2), strides=(2, 2)), dtype, layout)
    # blocks {0,1,4,5}, {2,3,6,7}, {8,9,12,13}, {10,11,14,15}
    np.testing.assert_array_equal(y[0, 0], [[2.5, 4.5], [10.5, 12.5]])


@all_layouts
@all_dtypes
def test_case1_block_means_random(dtype, layout):
    x = make_data(1, (2, 3, 4, 4), dtype).astype(np.float64)
    y = run(x, Desc((2, 2), strides=(2, 2)), dtype, layout)
    want = x.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5))
    tol = {np.dtype(np.float64): 1e-15, np.dtype(np.float32): 1e-6}.get(np.dtype(dtype))
    if tol is None:  # 16-bit test data: sums exact, one rounding
        assert_exact_or_rounded(y, want, dtype)
    else:
        np.testing.assert_allclose(y, want, rtol=tol, atol=tol)


# 2. 1x1x5x5, k 3x3, s 1, pads 1: corners divide by 4 (exclude) vs 9 (include) -----------------


@all_layouts
@all_dtypes
def test_case2_ones(dtype, layout):
    x = np.ones((1, 1, 5, 5))
    desc_ex = Desc((3, 3), start_padding=(1, 1), end_padding=(1, 1))
    desc_in = Desc((3, 3), start_padding=(1, 1), end_padding=(1, 1), include_padding=True)
    y_ex = run(x, desc_ex, dtype, layout)
    y_in = run(x, desc_in, dtype, layout)
    assert y_ex.shape == y_in.shape == (1, 1, 5, 5)
    np.testing.assert_array_equal(y_ex, 1.0)
    valid = np.array([2, 3, 3, 3, 2], dtype=np.float64)  # valid taps per row / column
    assert_exact_or_rounded(y_in[0, 0], np.outer(valid, valid) / 9.0, dtype)


@all_layouts
@all_dtypes
def test_case2_values(dtype, layout):
    x = np.arange(1.0, 26.0).reshape(1, 1, 5, 5)  # x[i, j] = 5 i + j + 1
    desc_ex = Desc((3, 3), start_padding=(1, 1), end_padding=(1, 1))
    desc_in = Desc((3, 3), start_padding=(1, 1), end_padding=(1, 1), include_padding=True)
    y_ex = run(x, desc_ex, dtype, layout)[0, 0]
    y_in = run(x, desc_in, dtype, layout)[0, 0]
    # corner (0, 0): {1, 2, 6, 7} = 16
    assert_exact_or_rounded(y_ex[0, 0], 16 / 4, dtype)
    assert_exact_or_rounded(y_in[0, 0], 16 / 9, dtype)
    # corner (4, 4): {19, 20, 24, 25} = 88
    assert_exact_or_rounded(y_ex[4, 4], 88 / 4, dtype)
    assert_exact_or_rounded(y_in[4, 4], 88 / 9, dtype)
    # top edge (0, 2): {2, 3, 4, 7, 8, 9} = 33
    assert_exact_or_rounded(y_ex[0, 2], 33 / 6, dtype)
    assert_exact_or_rounded(y_in[0, 2], 33 / 9, dtype)
    # interior (2, 2): mean of the 3x3 block around 13 is 13
    assert_exact_or_rounded(y_ex[2, 2], 13, dtype)
    assert_exact_or_rounded(y_in[2, 2], 13, dtype)


@all_layouts
@pytest.mark.parametrize("rank", [1, 3])
def test_case2_other_ranks(rank, layout):
    # case 10's version of case 2: ones, so the include-pad value is (valid taps / 27 or 3)
    x = np.ones((1, 2) + (5,) * rank)
    desc = Desc((3,) * rank, start_padding=(1,) * rank, end_padding=(1,) * rank,
                include_padding=True)
    y = run(x, desc, np.float64, layout)
    valid = np.array([2, 3, 3, 3, 2], dtype=np.float64) / 3
    want = valid
    for _ in range(rank - 1):
        want = np.multiply.outer(want, valid)
    np.testing.assert_allclose(y[0, 1], want, rtol=1e-15)
    desc = Desc((3,) * rank, start_padding=(1,) * rank, end_padding=(1,) * rank)
    np.testing.assert_array_equal(run(x, desc, np.float64, layout), 1.0)


# 9. Asymmetric pads [0, 1, 2, 0] (ONNX order: H begin, W begin, H end, W end) ------------------


@all_layouts
@all_dtypes
@pytest.mark.parametrize("include", [False, True])
def test_case9_asymmetric_pads(dtype, layout, include):
    x = np.arange(16.0).reshape(1, 1, 4, 4)  # x[i, j] = 4 i + j
    desc = Desc((3, 3), start_padding=(0, 1), end_padding=(2, 0), include_padding=include)
    y = run(x, desc, dtype, layout)
    # H: (4 + 0 + 2 - 3) / 1 + 1 = 4; W: (4 + 1 + 0 - 3) / 1 + 1 = 3
    assert y.shape == (1, 1, 4, 3)
    y = y[0, 0]
    # (0, 0): rows 0..2, columns -1..1 -> {0,1,4,5,8,9} = 27, 6 valid, 9 in the padded range
    assert_exact_or_rounded(y[0, 0], 27 / (9 if include else 6), dtype)
    # (3, 2): rows 3..5 (only 3 valid), columns 1..3 -> {13, 14, 15} = 42
    assert_exact_or_rounded(y[3, 2], 42 / (9 if include else 3), dtype)
    # (2, 1): rows 2..4 (2, 3 valid), columns 0..2 -> {8,9,10,12,13,14} = 66
    assert_exact_or_rounded(y[2, 1], 66 / (9 if include else 6), dtype)
    # (1, 1): rows 1..3, columns 0..2: fully inside, mean of {4..6, 8..10, 12..14} = 9
    assert_exact_or_rounded(y[1, 1], 9, dtype)
    ref = ref_average_pool(x, (3, 3), (1, 1), (0, 1), (2, 0), (1, 1), include)[0, 0]
    np.testing.assert_allclose(y, ref, rtol=1e-2 if dtype in (FLOAT16, BFLOAT16) else 1e-6)


# 11. Adaptive 10->3, 7->7, 5->8 (out > in), 13->1 (global) -------------------------------------


@all_layouts
@all_dtypes
@pytest.mark.parametrize("n_in,n_out,expected", [
    # windows [0,4), [3,7), [6,10)
    (10, 3, [1.5, 4.5, 7.5]),
    (7, 7, [0, 1, 2, 3, 4, 5, 6]),
    # windows [0,1) [0,2) [1,2) [1,3) [2,4) [3,4) [3,5) [4,5)
    (5, 8, [0, 0.5, 1, 1.5, 2.5, 3, 3.5, 4]),
    (13, 1, [6]),
])
def test_case11_adaptive_1d(dtype, layout, n_in, n_out, expected):
    x = np.arange(float(n_in)).reshape(1, 1, n_in)
    y = run_adaptive(x, (n_out,), dtype, layout)
    assert_exact_or_rounded(y[0, 0], expected, dtype)


@all_layouts
@all_dtypes
def test_case11_adaptive_2d_3d(dtype, layout):
    i, j = np.meshgrid(np.arange(10.0), np.arange(7.0), indexing="ij")
    x = (10 * i + j).reshape(1, 1, 10, 7)
    y = run_adaptive(x, (3, 7), dtype, layout)[0, 0]
    # rows [0,4) [3,7) [6,10) average 10 i to 15, 45, 75; columns unchanged
    assert_exact_or_rounded(y, np.array([15.0, 45, 75])[:, None] + np.arange(7.0)[None, :],
                            dtype)
    # 3-D: 5 -> 8 along D, 13 -> 1 along H, 7 -> 7 along W on x = d + 0 h + 0 w
    x3 = np.broadcast_to(np.arange(5.0)[:, None, None], (5, 13, 7)).reshape(1, 1, 5, 13, 7)
    y3 = run_adaptive(x3, (8, 1, 7), dtype, layout)[0, 0]
    want = np.broadcast_to(np.array([0, 0.5, 1, 1.5, 2.5, 3, 3.5, 4])[:, None, None], (8, 1, 7))
    assert_exact_or_rounded(y3, want, dtype)


# 12. Global average pool on 1x2048x7x7, both layouts ------------------------------------------


@all_dtypes
def test_case12_global_pool(dtype):
    x = make_data(12, (1, 2048, 7, 7), dtype)
    want = x.astype(np.float64).mean(axis=(2, 3), keepdims=True)
    want_abs = np.abs(x.astype(np.float64)).mean(axis=(2, 3), keepdims=True)
    results = []
    for layout in LAYOUTS:
        xl = to_layout(x, layout)
        y = to_nchw(avgpool.average_pool(xl, Desc((7, 7)), layout=layout), layout)
        ya = to_nchw(avgpool.adaptive_average_pool(xl, (1, 1), layout=layout), layout)
        assert y.shape == ya.shape == (1, 2048, 1, 1)
        for got in (y, ya):
            if dtype in (FLOAT16, BFLOAT16):
                # 49 values k/64: the float32 sum is exact, float32 / 49, one rounding
                s = x.astype(np.float32).sum(axis=(2, 3), keepdims=True)
                np.testing.assert_array_equal(
                    got.astype(np.float64), (s / np.float32(49)).astype(dtype).astype(np.float64))
            else:
                assert_matches(got, want, want_abs, dtype)
        results.append(y)
    if dtype in (FLOAT16, BFLOAT16):
        np.testing.assert_array_equal(results[0], results[1])
    else:
        assert_matches(results[1], results[0].astype(np.float64), want_abs, dtype)


# 13. Window larger than the input, made valid by padding --------------------------------------


@all_layouts
@all_dtypes
def test_case13_window_larger_than_input(dtype, layout):
    x = np.array([1.0, 2.0, 3.0]).reshape(1, 1, 3)
    # in 3, k 5, pads 1/1: padded 5 = ek, one output over everything
    y = run(x, Desc((5,), start_padding=(1,), end_padding=(1,)), dtype, layout)
    assert_exact_or_rounded(y[0, 0], [2.0], dtype)
    y = run(x, Desc((5,), start_padding=(1,), end_padding=(1,), include_padding=True), dtype,
            layout)
    assert_exact_or_rounded(y[0, 0], [6 / 5], dtype)
    # dilated: in 2, k 3, d 2 (ek 5), pads 2/1: taps -2, 0, 2 -> only x[0] valid;
    # all three taps lie in the padded range [-2, 3)
    x2 = np.array([4.0, 7.0]).reshape(1, 1, 2)
    desc = Desc((3,), dilations=(2,), start_padding=(2,), end_padding=(1,))
    assert_exact_or_rounded(run(x2, desc, dtype, layout)[0, 0], [4.0], dtype)
    desc = Desc((3,), dilations=(2,), start_padding=(2,), end_padding=(1,), include_padding=True)
    assert_exact_or_rounded(run(x2, desc, dtype, layout)[0, 0], [4 / 3], dtype)
    # 2-D: 2x2 input, 4x4 window, pads 2 / 1: outputs at starts -2 and -1 per axis
    x4 = np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 1, 2, 2)
    desc = Desc((4, 4), start_padding=(2, 2), end_padding=(1, 1))
    y = run(x4, desc, dtype, layout)
    assert y.shape == (1, 1, 2, 2)
    assert_exact_or_rounded(y[0, 0], np.full((2, 2), 2.5), dtype)
    desc = Desc((4, 4), start_padding=(2, 2), end_padding=(1, 1), include_padding=True)
    assert_exact_or_rounded(run(x4, desc, dtype, layout)[0, 0], np.full((2, 2), 10 / 16), dtype)
    # without enough padding it is an error
    with pytest.raises(ValueError, match="window_size"):
        avgpool.average_pool(x4, Desc((4, 4), start_padding=(1, 1)))


# 15. NaN in one window leaves neighbouring windows finite -------------------------------------


@all_layouts
@all_dtypes
def test_case15_nan_one_window(dtype, layout):
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = np.nan
    y = run(x, Desc((2, 2), strides=(2, 2)), dtype, layout)[0, 0]
    assert np.isnan(y[0, 0])
    np.testing.assert_array_equal([y[0, 1], y[1, 0], y[1, 1]], [4.5, 10.5, 12.5])
    # adaptive 4 -> 2 has the same windows
    ya = run_adaptive(x, (2, 2), dtype, layout)[0, 0]
    np.testing.assert_array_equal(np.isnan(ya), [[True, False], [False, False]])
    np.testing.assert_array_equal([ya[0, 1], ya[1, 0], ya[1, 1]], [4.5, 10.5, 12.5])


# Core answers for cases 5, 8 and 16 ------------------------------------------------------------


@all_layouts
@all_dtypes
def test_case5_overhang_switch(dtype, layout):
    # in 6 [1..6], k 3, s 3, p 1, three outputs (a ceil rule): the last window is
    # {5 (x=6), 6 (pad), 7 (overhang)}: 6 / 2 without counting overhang, 6 / 3 with it
    x = np.arange(1.0, 7.0).reshape(1, 1, 6)
    base = dict(strides=(3,), start_padding=(1,), end_padding=(1,), include_padding=True,
                output_sizes=(3,))
    y = run(x, Desc((3,), **base), dtype, layout)[0, 0]
    np.testing.assert_array_equal(y, [1, 4, 3])
    y = run(x, Desc((3,), count_overhang=True, **base), dtype, layout)[0, 0]
    np.testing.assert_array_equal(y, [1, 4, 2])
    # in 5, k 3, s 2, p 1, ceil gives 3 outputs; the last {3, 4, 5(pad)}: include pad -> /3
    x = np.arange(1.0, 6.0).reshape(1, 1, 5)
    y = run(x, Desc((3,), strides=(2,), start_padding=(1,), end_padding=(1,),
                    include_padding=True, output_sizes=(3,)), dtype, layout)[0, 0]
    np.testing.assert_array_equal(y, [1, 3, 3])
    # exclude pad, in 5, k 2, s 2, p 1, a 4th window starting in the right padding (OpenVINO
    # ceil): it covers {5 (pad), 6 (overhang)} -> NaN; include pad -> 0
    y = run(x, Desc((2,), strides=(2,), start_padding=(1,), end_padding=(1,), output_sizes=(4,)),
            dtype, layout)[0, 0]
    np.testing.assert_array_equal(y, [1, 2.5, 4.5, np.nan])
    y = run(x, Desc((2,), strides=(2,), start_padding=(1,), end_padding=(1,), output_sizes=(4,),
                    include_padding=True), dtype, layout)[0, 0]
    np.testing.assert_array_equal(y, [0.5, 2.5, 4.5, 0])


@all_layouts
@all_dtypes
def test_case8_dilation_with_padding(dtype, layout):
    x = np.arange(1.0, 7.0).reshape(1, 1, 6)
    desc = Desc((2,), dilations=(2,), start_padding=(1,), end_padding=(1,), include_padding=True)
    np.testing.assert_array_equal(run(x, desc, dtype, layout)[0, 0], [1, 2, 3, 4, 5, 2.5])
    desc = Desc((2,), dilations=(2,), start_padding=(1,), end_padding=(1,))
    np.testing.assert_array_equal(run(x, desc, dtype, layout)[0, 0], [2, 2, 3, 4, 5, 5])


@all_layouts
@all_dtypes
def test_case16_empty_window(dtype, layout):
    x = np.array([1.0, 2.0]).reshape(1, 1, 2)
    y = run(x, Desc((2,), strides=(2,), start_padding=(3,)), dtype, layout)[0, 0]
    np.testing.assert_array_equal(y, [np.nan, 1])
    y = run(x, Desc((2,), strides=(2,), start_padding=(3,), include_padding=True), dtype,
            layout)[0, 0]
    np.testing.assert_array_equal(y, [0, 0.5])
    # a divisor override divides the empty sum: 0
    y = run(x, Desc((2,), strides=(2,), start_padding=(3,), divisor_override=4), dtype,
            layout)[0, 0]
    np.testing.assert_array_equal(y, [0, 0.25])


def test_reference_agrees_on_the_cases():
    # the hand values above also hold for the reference (guards the reference itself)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(ref_average_pool(x, (2, 2), (2, 2), None, None, None, False),
                                  [[[[2.5, 4.5], [10.5, 12.5]]]])
    r, _ = reference_pool(x, dict(window_size=(3, 3), start_padding=(0, 1), end_padding=(2, 0),
                                  include_padding=False), "NCHW")
    assert r[0, 0, 0, 0] == 27 / 6 and r[0, 0, 3, 2] == 14
    r, _ = reference_adaptive(np.arange(5.0).reshape(1, 1, 5), (8,), "NCHW")
    np.testing.assert_array_equal(r[0, 0], [0, 0.5, 1, 1.5, 2.5, 3, 3.5, 4])
