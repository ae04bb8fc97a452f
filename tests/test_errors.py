"""Invalid inputs to the core API: each raises ValueError / TypeError naming the argument.

docs/semantics.md section 4: every message names the argument and the rule it broke.
"""

import numpy as np
import pytest

from avgpool import AdaptiveAveragePoolingDesc as ADesc
from avgpool import AveragePoolingDesc as Desc
from avgpool import adaptive_average_pool, average_pool
from avgpool import functional as F
from strategies import unaligned_empty

X1 = np.ones((1, 2, 5), dtype=np.float32)
X2 = np.ones((1, 2, 5, 5), dtype=np.float32)
D22 = Desc((2, 2))
BIG = 2**62


def _out(shape=(1, 2, 4, 4), dtype=np.float32):
    return np.empty(shape, dtype=dtype)


def _readonly_out():
    out = _out()
    out.flags.writeable = False
    return out


def _same_buffer_call():
    x = np.ones((1, 2, 5, 5), dtype=np.float32)
    return average_pool(x, Desc((1, 1)), out=x)


def _partial_overlap_call():
    buf = np.ones((1, 1, 6, 5), dtype=np.float32)
    x = buf[:, :, :5]  # rows 0..4
    out = buf[:, :, 1:5]  # rows 1..4: C-contiguous, the output shape of window (2, 1)
    assert x.flags.c_contiguous and out.flags.c_contiguous
    return average_pool(x, Desc((2, 1)), out=out)


# (id, call, exception type, fragment of the message)
CASES = [
    # window_size
    ("window-empty", lambda: Desc(()), ValueError, r"window_size must have 1, 2 or 3 entries"),
    ("window-4-entries", lambda: Desc((2, 2, 2, 2)), ValueError,
     r"window_size must have 1, 2 or 3 entries, got 4"),
    ("window-zero", lambda: Desc((2, 0)), ValueError, r"window_size\[1\] must be >= 1, got 0"),
    ("window-negative", lambda: Desc((-3,)), ValueError, r"window_size\[0\] must be >= 1, got -3"),
    ("window-float", lambda: Desc((2.0, 2)), TypeError, r"window_size\[0\] must be an integer"),
    ("window-bool", lambda: Desc((True, 2)), TypeError, r"window_size\[0\] must be an integer"),
    ("window-string", lambda: Desc("22"), TypeError, r"window_size must be a sequence of integers"),
    ("window-scalar", lambda: Desc(2), TypeError, r"window_size must be a sequence of integers"),
    ("window-none", lambda: Desc(None), TypeError, r"window_size must be a sequence of integers"),
    ("window-too-big-for-int64", lambda: Desc((2**63,)), ValueError, r"window_size.*int64"),
    # strides
    ("strides-zero", lambda: Desc((2, 2), strides=(1, 0)), ValueError,
     r"strides\[1\] must be >= 1, got 0"),
    ("strides-negative", lambda: Desc((2,), strides=(-1,)), ValueError,
     r"strides\[0\] must be >= 1"),
    ("strides-length", lambda: Desc((2, 2), strides=(1,)), ValueError,
     r"strides must have 2 entries \(one per spatial axis\), got 1"),
    ("strides-float", lambda: Desc((2,), strides=(1.5,)), TypeError,
     r"strides\[0\] must be an integer"),
    # paddings
    ("start-padding-negative", lambda: Desc((2, 2), start_padding=(0, -1)), ValueError,
     r"start_padding\[1\] must be >= 0, got -1"),
    ("end-padding-negative", lambda: Desc((2, 2), end_padding=(-2, 0)), ValueError,
     r"end_padding\[0\] must be >= 0, got -2"),
    ("start-padding-length", lambda: Desc((2, 2), start_padding=(1, 1, 1)), ValueError,
     r"start_padding must have 2 entries"),
    ("end-padding-length", lambda: Desc((2,), end_padding=()), ValueError,
     r"end_padding must have 1 entries"),
    # dilations
    ("dilations-zero", lambda: Desc((2, 2), dilations=(0, 1)), ValueError,
     r"dilations\[0\] must be >= 1, got 0"),
    ("dilations-length", lambda: Desc((2, 2), dilations=(1, 1, 1)), ValueError,
     r"dilations must have 2 entries"),
    # output_sizes
    ("output-sizes-zero", lambda: Desc((2,), output_sizes=(0,)), ValueError,
     r"output_sizes\[0\] must be >= 1, got 0"),
    ("output-sizes-length", lambda: Desc((2, 2), output_sizes=(3,)), ValueError,
     r"output_sizes must have 2 entries"),
    # in 5, k 2, s 2, pe 0: window 3 would start at 6 >= in + pe = 5
    ("output-sizes-past-padded-end", lambda: average_pool(X1, Desc((2,), strides=(2,),
                                                                   output_sizes=(4,))),
     ValueError, r"output_sizes: .*every window must start before the padded end"),
    ("output-sizes-past-padded-end-shape", lambda: Desc((2,), output_sizes=(6,)).output_shape(
        (1, 1, 5)), ValueError, r"output_sizes: .*spatial axis 0: output size 6"),
    ("output-sizes-huge", lambda: average_pool(X1, Desc((1,), output_sizes=(BIG,))), ValueError,
     r"output_sizes"),
    # divisor_override
    ("divisor-override-zero", lambda: Desc((2,), divisor_override=0), ValueError,
     r"divisor_override must be non-zero"),
    ("divisor-override-float", lambda: Desc((2,), divisor_override=2.0), TypeError,
     r"divisor_override must be an integer"),
    ("divisor-override-bool", lambda: Desc((2,), divisor_override=True), TypeError,
     r"divisor_override must be an integer"),
    # include_padding / count_overhang
    ("include-padding-int", lambda: Desc((2,), include_padding=2), TypeError,
     r"include_padding must be a bool"),
    ("count-overhang-string", lambda: Desc((2,), count_overhang="yes"), TypeError,
     r"count_overhang must be a bool"),
    # window larger than the padded input (floor rule)
    ("window-too-large", lambda: average_pool(X2, Desc((6, 2))), ValueError,
     r"window_size: the effective window .* exceeds the padded input .*spatial axis 0"),
    ("window-too-large-dilated", lambda: average_pool(X1, Desc((3,), dilations=(3,),
                                                               end_padding=(1,))),
     ValueError, r"window_size: .*effective window 7 > padded input 6 = 5 \+ 0 \+ 1"),
    ("window-too-large-shape", lambda: Desc((2, 9)).output_shape((1, 1, 5, 5)), ValueError,
     r"window_size: .*spatial axis 1"),
    # input rank vs descriptor
    ("x-rank-low", lambda: average_pool(X1, D22), ValueError,
     r"x/window_size: window_size has 2 entries \(2 spatial axes\), so x must be a 4-D input "
     r"\(N, C, H, W\), got shape \(1, 2, 5\)"),
    ("x-rank-high", lambda: average_pool(np.ones((1, 1, 2, 2, 2), np.float32), D22), ValueError,
     r"x/window_size: .* x must be a 4-D input"),
    ("x-rank-nhwc", lambda: average_pool(X1, D22, layout="NHWC"), ValueError,
     r"x must be a 4-D input \(N, H, W, C\)"),
    ("x-rank-2d", lambda: average_pool(np.ones((2, 5), np.float32), Desc((1,))), ValueError,
     r"x/window_size: window_size has 1 entry \(1 spatial axis\), so x must be a 3-D input"),
    ("x-rank-shape", lambda: Desc((2,)).output_shape((1, 5)), ValueError, r"3-D input"),
    # layout
    ("layout-misspelt", lambda: average_pool(X2, D22, layout="nchw "), ValueError,
     r"layout must be 'NCHW' \(channels first\) or 'NHWC' \(channels last\), in any letter "
     r"case, got 'nchw '"),
    ("layout-other", lambda: average_pool(X2, D22, layout="NDHWC"), ValueError, r"layout must be"),
    ("layout-none", lambda: average_pool(X2, D22, layout=None), ValueError, r"layout must be"),
    ("layout-shape", lambda: D22.output_shape((1, 1, 4, 4), "CHWN"), ValueError, r"layout must be"),
    ("layout-adaptive", lambda: adaptive_average_pool(X2, (2, 2), layout="NWHC"), ValueError,
     r"layout must be"),
    # out
    ("out-shape", lambda: average_pool(X2, D22, out=_out((1, 2, 5, 5))), ValueError,
     r"out has shape \(1, 2, 5, 5\), expected \(1, 2, 4, 4\)"),
    ("out-dtype", lambda: average_pool(X2, D22, out=_out(dtype=np.float64)), TypeError,
     r"out has dtype float64, expected float32"),
    ("out-byte-swapped", lambda: average_pool(X2, D22, out=_out(dtype=np.dtype(np.float32)
                                                                .newbyteorder("S"))),
     TypeError, r"out has dtype [<>]f4, expected float32"),
    ("out-non-contiguous", lambda: average_pool(X2, D22, out=np.empty((1, 2, 4, 8),
                                                                      np.float32)[..., ::2]),
     ValueError, r"out must be C-contiguous"),
    ("out-fortran", lambda: average_pool(X2, D22, out=np.asfortranarray(_out())), ValueError,
     r"out must be C-contiguous"),
    ("out-read-only", lambda: average_pool(X2, D22, out=_readonly_out()), ValueError,
     r"out must be writeable"),
    ("out-unaligned", lambda: average_pool(X2, D22, out=unaligned_empty((1, 2, 4, 4), np.float32)),
     ValueError, r"out must be aligned for its dtype: its data address a multiple of 4 bytes "
     r"\(it is 1 past one\)"),
    ("out-unaligned-float64", lambda: adaptive_average_pool(
        X2.astype(np.float64), (2, 2), out=unaligned_empty((1, 2, 2, 2), np.float64)),
     ValueError, r"out must be aligned for its dtype: its data address a multiple of 8 bytes"),
    ("out-is-x", _same_buffer_call, ValueError, r"out must not overlap x"),
    ("out-overlaps-x", _partial_overlap_call, ValueError, r"out must not overlap x"),
    ("out-list", lambda: average_pool(X2, D22, out=[[0.0]]), TypeError,
     r"out must be a numpy.ndarray"),
    ("out-adaptive-shape", lambda: adaptive_average_pool(X2, (2, 2), out=_out()), ValueError,
     r"out has shape"),
    # num_threads
    ("num-threads-zero", lambda: average_pool(X2, D22, num_threads=0), ValueError,
     r"num_threads must be between 1 and 65536, got 0"),
    ("num-threads-negative", lambda: average_pool(X2, D22, num_threads=-2), ValueError,
     r"num_threads must be between 1 and 65536, got -2"),
    ("num-threads-huge", lambda: average_pool(X2, D22, num_threads=65537), ValueError,
     r"num_threads must be between 1 and 65536"),
    ("num-threads-float", lambda: average_pool(X2, D22, num_threads=2.0), TypeError,
     r"num_threads must be an integer"),
    ("num-threads-string", lambda: adaptive_average_pool(X2, (2, 2), num_threads="2"), TypeError,
     r"num_threads must be an integer"),
    # adaptive
    ("adaptive-zero", lambda: ADesc((2, 0)), ValueError, r"output_sizes\[1\] must be >= 1, got 0"),
    ("adaptive-negative", lambda: adaptive_average_pool(X1, (-1,)), ValueError,
     r"output_sizes\[0\] must be >= 1"),
    ("adaptive-empty", lambda: ADesc(()), ValueError, r"output_sizes must have 1, 2 or 3 entries"),
    ("adaptive-4-entries", lambda: ADesc((1, 1, 1, 1)), ValueError,
     r"output_sizes must have 1, 2 or 3 entries, got 4"),
    # torch-style: a one-entry output size is not broadcast (torch rejects it), unlike the window
    ("functional-adaptive-one-entry", lambda: F.adaptive_avg_pool2d(X2, (3,)), ValueError,
     r"output_size must be an int or a sequence of 2 ints, got \(3,\)"),
    ("adaptive-wrong-length-for-x", lambda: adaptive_average_pool(X1, (2, 2)), ValueError,
     r"x/output_sizes: output_sizes has 2 entries \(2 spatial axes\), so x must be a 4-D"),
    ("adaptive-float", lambda: ADesc((2.5,)), TypeError, r"output_sizes\[0\] must be an integer"),
    ("adaptive-int64", lambda: ADesc((2**63,)), ValueError, r"output_sizes\[0\] must fit in int64"),
    ("adaptive-huge", lambda: adaptive_average_pool(X1, (BIG,)), ValueError, r"overflows int64"),
    # x itself
    ("x-string", lambda: average_pool("abc", D22), TypeError,
     r"x must be a numpy array or an object with __array__ or __dlpack__, got str"),
    ("x-none", lambda: average_pool(None, D22), TypeError, r"x must be a numpy array.*NoneType"),
    ("x-none-adaptive", lambda: adaptive_average_pool(None, (1,)), TypeError,
     r"x must be a numpy array"),
    ("x-int-dtype", lambda: average_pool(np.ones((1, 1, 4, 4), np.int32), D22), TypeError,
     r"x: dtype int32 is not supported"),
    ("x-zero-spatial", lambda: average_pool(np.ones((1, 2, 0, 5), np.float32), D22), ValueError,
     r"x: .*spatial sizes >= 1"),
    ("x-zero-spatial-nhwc", lambda: average_pool(np.ones((1, 5, 0, 2), np.float32), D22,
                                                 layout="NHWC"),
     ValueError, r"x: .*spatial sizes >= 1"),
    ("x-zero-spatial-adaptive", lambda: adaptive_average_pool(np.ones((1, 2, 0), np.float32),
                                                              (1,)),
     ValueError, r"x: .*spatial sizes >= 1"),
    ("input-shape-negative", lambda: D22.output_shape((1, 1, -1, 4)), ValueError,
     r"input_shape\[2\] must be >= 0 and fit in int64, got -1"),
    # desc
    ("desc-wrong-type", lambda: average_pool(X2, (2, 2)), TypeError,
     r"desc must be an AveragePoolingDesc, got tuple"),
    ("desc-adaptive-for-pool", lambda: average_pool(X2, ADesc((2, 2))), TypeError,
     r"desc must be an AveragePoolingDesc"),
]


@pytest.mark.parametrize("call,exc,match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_enough_cases():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


def test_errors_leave_out_untouched():
    out = np.full((1, 2, 4, 4), 7.0, np.float32)
    with pytest.raises(ValueError):
        average_pool(X2, D22, out=out, num_threads=0)
    np.testing.assert_array_equal(out, 7.0)


def test_avgpool_num_threads_env(monkeypatch):
    for bad in ("two", "1.5"):
        monkeypatch.setenv("AVGPOOL_NUM_THREADS", bad)
        with pytest.raises(ValueError, match=r"AVGPOOL_NUM_THREADS must be a positive integer"):
            average_pool(X2, D22)
    monkeypatch.setenv("AVGPOOL_NUM_THREADS", "0")
    with pytest.raises(ValueError, match=r"AVGPOOL_NUM_THREADS must be between 1 and 65536"):
        average_pool(X2, D22)
    # an explicit num_threads wins over the environment
    average_pool(X2, D22, num_threads=1)


# --------------------------------------------------------------------------------------------
# Sizes that overflow int64. Each raises ValueError mentioning the overflow; the messages
# should also name the argument that overflows (docs/semantics.md section 4).


@pytest.mark.parametrize("call", [
    # (k - 1) * d = (2^62 - 1) * 4 overflows
    lambda: average_pool(X1, Desc((BIG,), dilations=(4,))),
    lambda: Desc((BIG,), dilations=(4,)).output_shape((1, 1, 5)),
    # (out - 1) * s = (2^62 - 1) * 4 overflows
    lambda: average_pool(X1, Desc((1,), strides=(4,), output_sizes=(BIG,))),
    # in + pb + pe overflows
    lambda: average_pool(X1, Desc((1,), start_padding=(2**62,), end_padding=(2**62,))),
    # the output plane 2^62 * N * C * 8 bytes overflows
    lambda: average_pool(X1, Desc((1,), end_padding=(BIG,), output_sizes=(BIG,))),
    # adaptive: out * in overflows
    lambda: adaptive_average_pool(X1, (BIG,)),
], ids=["window-dilation", "window-dilation-shape", "output-stride", "paddings",
        "output-bytes", "adaptive"])
def test_overflow_int64(call):
    with pytest.raises(ValueError, match=r"overflows int64|must fit in int64"):
        call()


def test_overflow_window_dilation_names_argument():
    # (k - 1) * d overflows whatever the input: the descriptor itself is rejected.
    with pytest.raises(ValueError, match=r"window_size|dilations"):
        average_pool(X1, Desc((BIG,), dilations=(4,)))


def test_overflow_output_stride_names_argument():
    # (out - 1) * s depends only on output_sizes and strides, so the message names them.
    with pytest.raises(ValueError, match=r"output_sizes|strides"):
        average_pool(X1, Desc((1,), strides=(4,), output_sizes=(BIG,)))


def test_divisor_override_int64_names_argument():
    with pytest.raises(ValueError, match=r"divisor_override"):
        Desc((2,), divisor_override=2**63)


def test_string_attributes_ignore_letter_case():
    """One rule for every string attribute (layout, auto_pad, rounding_type): letter case does
    not matter (docs/semantics.md, errors)."""
    from avgpool import onnx, openvino

    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    for layout in ("nhwc", "Nhwc"):
        np.testing.assert_array_equal(average_pool(nhwc, D22, layout=layout),
                                      average_pool(nhwc, D22, layout="NHWC"))
        np.testing.assert_array_equal(adaptive_average_pool(nhwc, (2, 3), layout=layout),
                                      adaptive_average_pool(nhwc, (2, 3), layout="NHWC"))
    assert D22.output_shape((1, 5, 6, 2), "nhwc") == (1, 4, 5, 2)
    for spelling in ("SAME_UPPER", "same_upper", "Same_Upper"):
        np.testing.assert_array_equal(onnx.average_pool(x, [2, 3], auto_pad=spelling),
                                      onnx.average_pool(x, [2, 3], auto_pad="SAME_UPPER"))
    kw = dict(strides=[2, 2], pads_begin=[0, 0], pads_end=[1, 1], exclude_pad=True)
    for rounding, auto_pad in (("CEIL", "EXPLICIT"), ("Ceil", "explicit"), ("ceil", "Explicit")):
        np.testing.assert_array_equal(
            openvino.avg_pool(x, [2, 2], rounding_type=rounding, auto_pad=auto_pad, **kw),
            openvino.avg_pool(x, [2, 2], rounding_type="ceil", **kw))
