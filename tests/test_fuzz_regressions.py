"""Regression tests for the bugs the fuzz tests found, each with how it was found."""

from __future__ import annotations

import numpy as np
import pytest

import avgpool
from avgpool import functional, openvino
from avgpool import onnx as av_onnx
from fuzz_model import names_one_of

# =============================================================================================
# Regressions for the bugs the fuzzing found (all fixed; an open one would be a strict xfail
# here, tolerated by the model in fuzz_model.py where noted)
# =============================================================================================

X5 = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)


@pytest.mark.parametrize("good, bad", [((2,), (2.0,)), ((1,), (True,)), ((1,), [1 + 0j])])
def test_adaptive_cache_accepts_floats(good, bad):
    avgpool.adaptive_average_pool(X5, good)
    with pytest.raises(TypeError, match="output_sizes"):
        avgpool.adaptive_average_pool(X5, bad)


@pytest.mark.parametrize("call", [
    lambda f: av_onnx.average_pool(X5, [2], ceil_mode=f),
    lambda f: av_onnx.average_pool(X5, [2], count_include_pad=f),
    lambda f: openvino.avg_pool(X5, [2], strides=[1], pads_begin=[0], pads_end=[0],
                                exclude_pad=f),
    lambda f: functional.avg_pool1d(X5, 2, ceil_mode=f),
    lambda f: functional.avg_pool1d(X5, 2, count_include_pad=f),
], ids=["onnx-ceil_mode", "onnx-count_include_pad", "openvino-exclude_pad",
        "functional-ceil_mode", "functional-count_include_pad"])
def test_frontend_flags_accept_numpy_bool(call):
    np.testing.assert_array_equal(call(np.True_), call(True))


@pytest.mark.parametrize("value", [1.0, np.float64(0.0), np.array([1])], ids=repr)
@pytest.mark.parametrize("name", ["include_padding", "count_overhang"])
def test_desc_bool_fields_reject_non_integers(name, value):
    with pytest.raises(TypeError, match=name):
        avgpool.AveragePoolingDesc((2,), **{name: value})


def test_desc_bool_field_array_names_the_argument():
    with pytest.raises((TypeError, ValueError), match="include_padding"):
        avgpool.AveragePoolingDesc((2,), include_padding=np.array([0, 1]))


def test_adaptive_input_overflow_names_x():
    with pytest.raises(ValueError) as e:
        avgpool.AdaptiveAveragePoolingDesc((1, 1)).output_shape((1, 1, 1, 2**62))
    assert "output_sizes" not in str(e.value) and names_one_of(str(e.value), ["x", "input_shape"])


def test_window_product_overflow_names_window_size():
    with pytest.raises(ValueError, match="window_size"):
        desc = avgpool.AveragePoolingDesc((2**32, 2**32), start_padding=(2**32, 2**32))
        avgpool.average_pool(np.ones((1, 1, 2, 2), np.float32), desc)


@pytest.mark.parametrize("call, name", [
    (lambda: av_onnx.average_pool(X5, [2**63], pads=[2**63, 0]), "kernel_shape"),
    (lambda: av_onnx.average_pool(X5, [1], pads=[2**62, 2**62]), "pads"),
    (lambda: openvino.avg_pool(X5, [1], strides=[1], pads_begin=[2**62], pads_end=[2**62],
                               exclude_pad=False), "pads_begin"),
    (lambda: functional.avg_pool1d(X5, 2, 2**63), "stride"),
], ids=["onnx-kernel_shape", "onnx-pads", "openvino-pads", "functional-stride"])
def test_frontend_errors_name_core_arguments(call, name):
    with pytest.raises(ValueError) as e:
        call()
    assert names_one_of(str(e.value), [name]), str(e.value)


def test_onnx_same_zero_size_names_x():
    with pytest.raises(ValueError) as e:
        av_onnx.average_pool(np.zeros((1, 1, 0), np.float32), [2], auto_pad="SAME_UPPER")
    assert names_one_of(str(e.value), ["x"]), str(e.value)


def test_empty_output_numpy_cannot_hold():
    desc = avgpool.AveragePoolingDesc((1,), start_padding=(2**62,))
    with pytest.raises(ValueError) as e:
        avgpool.average_pool(np.zeros((0, 1, 1), np.float32), desc)
    assert names_one_of(str(e.value), ["x", "start_padding", "output_sizes"]), str(e.value)


def test_out_overlapping_noncontiguous_x():
    buf = np.arange(100, dtype=np.float32)
    x = buf[:40].reshape(1, 1, 40)[:, :, ::2]   # non-contiguous view of buf[0:40]
    before = x.copy()
    out = buf[:19].reshape(1, 1, 19)             # C-contiguous, the right shape, inside x
    try:
        with pytest.raises(ValueError, match="overlap"):
            avgpool.average_pool(x, avgpool.AveragePoolingDesc((2,)), out=out)
    finally:
        np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("call", [
    lambda nt: avgpool.average_pool(X5, avgpool.AveragePoolingDesc((1,), end_padding=(2**40,)),
                                    num_threads=nt),
    lambda nt: avgpool.adaptive_average_pool(X5, (2**40,), num_threads=nt),
], ids=["average_pool", "adaptive_average_pool"])
def test_num_threads_checked_before_allocating(call):
    with pytest.raises(ValueError, match="num_threads"):
        call(0)


def test_openvino_zero_size_names_x():
    with pytest.raises(ValueError) as e:
        openvino.avg_pool(np.zeros((1, 1, 0), np.float32), [3], strides=[1], pads_begin=[0],
                          pads_end=[3], exclude_pad=False, rounding_type="ceil_torch")
    assert names_one_of(str(e.value), ["x"]), str(e.value)


def test_onnx_ceil_zero_size_names_x():
    # found by the fuzz: ceil_mode dropped the only window and the error named the attributes
    with pytest.raises(ValueError) as e:
        av_onnx.average_pool(np.zeros((1, 1, 0), np.float32), [1], pads=[0, 1], ceil_mode=1)
    assert names_one_of(str(e.value), ["x"]), str(e.value)


def test_zero_size_named_before_size_product_overflow():
    # found by a 30 000-example run: the sizes before the zero overflowed int64 first, and the
    # message blamed output_sizes
    with pytest.raises(ValueError) as e:
        avgpool.AdaptiveAveragePoolingDesc((1, 1, 1)).output_shape((0, 2, 2**62, 0, 0), "NHWC")
    assert names_one_of(str(e.value), ["x", "input_shape"]), str(e.value)


def test_adaptive_bound_is_out_times_in_plus_out():
    # the core needs out * in + out to fit in int64 (1 * 2**62 + 1 does); an empty batch
    desc = avgpool.AdaptiveAveragePoolingDesc((1, 1, 1))
    assert desc.output_shape((0, 1, 1, 2**62, 0), "NHWC") == (0, 1, 1, 1, 0)


def test_empty_batch_with_overflowing_plane_names_x():
    # found by a 30 000-example run: the spatial plane 2 * 2**62 overflows on its own; with an
    # empty batch the message blamed output_sizes
    with pytest.raises(ValueError) as e:
        avgpool.AdaptiveAveragePoolingDesc((1, 1, 1)).output_shape((0, 0, 1, 2, 2**62))
    assert names_one_of(str(e.value), ["x", "input_shape"]), str(e.value)


@pytest.mark.parametrize("shape", [(0, 1), (1, 0, 1), (2, 0, 5, 5), (0, 3, 4, 4), (0, 2, 3, 4, 4)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_torch_empty_results_keep_their_shape(shape, channels_last):
    """test_fuzz_functional_adaptive_avg_pool found functional.adaptive_avg_pool1d of a
    torch.zeros(0, 1) (unbatched, no channel) returning shape (1, 0) instead of (0, 1): its
    result's strides differ from the wanted ones only on empty axes, and the conversion between
    layouts (ap_relayout) was taken for a result already in the wanted layout. Empty results
    now keep their shape and take torch's strides."""
    torch = pytest.importorskip("torch")
    x = torch.zeros(shape)
    if channels_last and x.dim() in (4, 5):
        x = x.contiguous(memory_format=torch.channels_last if x.dim() == 4
                         else torch.channels_last_3d)
    rank = max(x.dim() - 2, 1)
    ours = getattr(functional, f"adaptive_avg_pool{rank}d")(x, [2] * rank)
    want = getattr(torch.nn.functional, f"adaptive_avg_pool{rank}d")(x, [2] * rank)
    assert ours.shape == want.shape and ours.stride() == want.stride()
    # torch's windowed pools refuse empty channels (avgpool's rulings accept them): the shape
    assert getattr(functional, f"avg_pool{rank}d")(x, 1).shape == x.shape


@pytest.mark.parametrize("shape", [(0, 0), (1, 0), (2, 3, 0)])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_functional_zero_spatial_size_names_x(shape, kind):
    # found by the long fuzz (HYPOTHESIS_PROFILE=long, 4000 examples): avg_pool1d of an input
    # of length 0 with kernel_size 1, stride 2, ceil_mode blamed kernel_size/stride/padding
    # (an output size of 0) instead of the input, which torch rejects as it is
    if kind == "torch":
        torch = pytest.importorskip("torch")
        x = torch.zeros(shape)
    else:
        x = np.zeros(shape, np.float32)
    with pytest.raises(ValueError) as e:
        functional.avg_pool1d(x, [1], [2], [0], ceil_mode=True, count_include_pad=False)
    assert names_one_of(str(e.value), ["x"]) and "kernel_size" not in str(e.value), str(e.value)
