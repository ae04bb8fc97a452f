"""The rulings R1-R9 of docs/semantics.md: configurations on which the peers disagree, the side
avgpool takes, and a test per ruling against the peer it follows.

Each ruling has a pinned 1-D row (input, attributes, the values the followed peer gives, measured
with onnxruntime 1.32, onnx 1.23, torch 2.13 and OpenVINO 2026.4) checked against avgpool, and the
same configuration run through the peer itself (the peers are test extras, installed in CI); R3
and R8 are also swept over many sizes against the peer.
"""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest

import avgpool
import peers
from avgpool import functional as F
from avgpool import onnx as O
from avgpool import openvino as V
from reference import ref_average_pool


def seq(n: int) -> np.ndarray:
    """1..n as a (1, 1, n) float32 row."""
    return np.arange(1, n + 1, dtype=np.float32).reshape(1, 1, n)


def same_bits(got, expected, atol: float = 0.0) -> None:
    """Equal values (to float32 rounding), NaN where expected has NaN, and zeros of the same
    sign."""
    got, expected = np.asarray(got, np.float32), np.asarray(expected, np.float32)
    assert got.shape == expected.shape, (got, expected)
    assert np.array_equal(np.isnan(got), np.isnan(expected)), (got, expected)
    fin = ~np.isnan(expected)
    np.testing.assert_allclose(got[fin], expected[fin], rtol=1e-6, atol=atol)
    zero = fin & (expected == 0)
    assert np.array_equal(np.signbit(got[zero]), np.signbit(expected[zero])), (got, expected)


def ort(x, **attrs):
    pytest.importorskip("onnxruntime")
    return peers.onnxruntime_run(x, **attrs)


def onnx_ref(x, **attrs):
    pytest.importorskip("onnx.reference")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return peers.onnx_reference(x, **attrs)


def ov(x, kernel, opset=1, **kw):
    pytest.importorskip("openvino")
    return peers.openvino_avg_pool(x, kernel, opset=opset, **kw)


def torch_pool(x, rank, *args, **kwargs):
    pytest.importorskip("torch")
    return peers.torch_avg_pool(x, rank, *args, **kwargs).numpy()


# ---- R1: ceil rounding with a window larger than the padded input ---------------------------

def test_r1_ceil_window_larger_than_padded_input():
    """[1..6], k 7, s 2, ceil: onnxruntime, onnx.reference and torch give one overhanging window
    [3.5] (6 valid positions; the overhang is not counted, with or without include-pad)."""
    x = seq(6)
    row = [[[3.5]]]
    for cip in (0, 1):
        same_bits(O.average_pool(x, [7], strides=[2], ceil_mode=1, count_include_pad=cip), row)
        same_bits(ort(x, kernel_shape=[7], strides=[2], ceil_mode=1, count_include_pad=cip), row)
        same_bits(onnx_ref(x, kernel_shape=[7], strides=[2], ceil_mode=1,
                           count_include_pad=cip), row)
    for cip in (False, True):
        same_bits(F.avg_pool1d(x, 7, 2, 0, ceil_mode=True, count_include_pad=cip), row)
        same_bits(torch_pool(x, 1, 7, 2, 0, ceil_mode=True, count_include_pad=cip), row)
    # 2-D, padded: 5x5, k 8, s 3, p 1 (padded 7): one window over the whole input
    x2 = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    got = O.average_pool(x2, [8, 8], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1,
                         count_include_pad=1)
    np.testing.assert_allclose(got, ort(x2, kernel_shape=[8, 8], strides=[3, 3],
                                        pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.avg_pool2d(x2, 8, 3, 4, ceil_mode=True),
                               torch_pool(x2, 2, 8, 3, 4, ceil_mode=True), rtol=1e-5, atol=1e-6)


def test_r1_floor_and_openvino_still_reject():
    """Floor rounding rejects a window larger than the padded input everywhere, and OpenVINO
    rejects it in every rounding mode (so its front end does too)."""
    x = seq(6)
    with pytest.raises(ValueError, match="kernel_shape: the effective window 7"):
        O.average_pool(x, [7], strides=[2])
    with pytest.raises(ValueError, match="kernel_size: the effective window 7"):
        F.avg_pool1d(x, 7, 2)
    for rounding in ("floor", "ceil", "ceil_torch"):
        kw = dict(strides=[2], pads_begin=[0], pads_end=[0], exclude_pad=False,
                  rounding_type=rounding)
        with pytest.raises(ValueError, match="kernel: the effective window 7"):
            V.avg_pool(x, [7], **kw)
        with pytest.raises(RuntimeError):
            ov(x, [7], opset=14, **kw)


def test_r1_ceil_needs_one_output():
    """k 9 on 6 with s 2: ceil((6 - 9) / 2) + 1 = 0 outputs: still an error (torch too)."""
    x = seq(6)
    with pytest.raises(ValueError, match="kernel_shape: the effective window 9"):
        O.average_pool(x, [9], strides=[2], ceil_mode=1)
    with pytest.raises(ValueError, match="kernel_size: the effective window 9"):
        F.avg_pool1d(x, 9, 2, ceil_mode=True)
    with pytest.raises(RuntimeError):
        torch_pool(x, 1, 9, 2, ceil_mode=True)


# ---- R2: avg_pool3d with an input smaller than the kernel -----------------------------------

def test_r2_avg_pool3d_input_smaller_than_kernel():
    """torch's avg_pool3d requires every unpadded input size >= the kernel; avg_pool1d/2d don't."""
    x = np.ones((1, 1, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match=r"avg_pool3d: x of spatial size \(1, 3, 3\) is smaller "
                                         r"than kernel_size \(2, 1, 1\)"):
        F.avg_pool3d(x, (2, 1, 1), padding=(1, 0, 0))
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        torch_pool(x, 3, (2, 1, 1), padding=(1, 0, 0))
    # 2-D and 1-D accept the same axis: [1] padded to [0, 1, 0], k 2 -> windows (0, 1) and (1, 0)
    x1 = np.ones((1, 1, 1), np.float32)
    same_bits(F.avg_pool1d(x1, 2, 1, 1), [[[0.5, 0.5]]])
    same_bits(torch_pool(x1, 1, 2, 1, 1), [[[0.5, 0.5]]])
    x2 = np.ones((1, 1, 1, 3), np.float32)
    np.testing.assert_array_equal(F.avg_pool2d(x2, (2, 1), 1, (1, 0)),
                                  torch_pool(x2, 2, (2, 1), 1, (1, 0)))


# ---- R3: ONNX SAME_* with a negative total padding ------------------------------------------

def test_r3_same_negative_total_pad_row():
    """[1..8], k 1, s 4, SAME_UPPER: total pad (2 - 1) * 4 + 1 - 8 = -3, head -1: onnxruntime
    applies it (windows at 1 and 5) -> [2, 6]. onnx.reference raises in np.pad; onnxruntime's
    opset 7-11 kernels reject the negative pad."""
    x = seq(8)
    for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        attrs = dict(kernel_shape=[1], strides=[4], auto_pad=auto_pad)
        same_bits(O.average_pool(x, **attrs), [[[2, 6]]])
        same_bits(ort(x, **attrs), [[[2, 6]]])
    with pytest.raises(ValueError, match="negative"):
        onnx_ref(x, kernel_shape=[1], strides=[4], auto_pad="SAME_UPPER")


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("cip", [0, 1])
def test_r3_same_negative_total_pad_matches_onnxruntime(auto_pad, cip):
    """Every 1-D and some 2-D configurations with stride > window, against onnxruntime."""
    rng = np.random.default_rng(3)
    cases = [((n,), (k,), (s,)) for n, k, s in itertools.product(range(1, 12), range(1, 4),
                                                                 range(2, 7)) if s > k]
    cases += [((7, 9), (1, 2), (3, 4)), ((5, 8), (2, 1), (5, 3)), ((6, 6), (3, 3), (4, 5))]
    for spatial, k, s in cases:
        x = rng.standard_normal((2, 3, *spatial)).astype(np.float32)
        attrs = dict(kernel_shape=list(k), strides=list(s), auto_pad=auto_pad,
                     count_include_pad=cip)
        np.testing.assert_allclose(O.average_pool(x, **attrs), ort(x, **attrs), rtol=1e-5,
                                   atol=1e-6, err_msg=str((spatial, k, s)))


def test_r3_torch_input_stays_torch():
    """The crop is a view of the caller's tensor: a torch tensor in gives a torch tensor out."""
    torch = pytest.importorskip("torch")
    got = O.average_pool(torch.arange(1.0, 9.0).reshape(1, 1, 8), [1], strides=[4],
                         auto_pad="SAME_UPPER")
    assert isinstance(got, torch.Tensor) and got.tolist() == [[[2.0, 6.0]]]


# ---- R4: ONNX SAME_* with ceil_mode=1 -------------------------------------------------------

def test_r4_same_ignores_ceil_mode():
    """[1..7], k 2, s 3, SAME_UPPER, ceil_mode=1: onnxruntime keeps the SAME size (3 windows at
    0, 3, 6: [1.5, 4.5, 7]); onnx.reference refuses SAME with ceil_mode."""
    x = seq(7)
    attrs = dict(kernel_shape=[2], strides=[3], auto_pad="SAME_UPPER")
    row = [[[1.5, 4.5, 7]]]
    same_bits(O.average_pool(x, ceil_mode=1, **attrs), row)
    same_bits(O.average_pool(x, ceil_mode=0, **attrs), row)
    same_bits(ort(x, ceil_mode=1, **attrs), row)


# ---- R5: ONNX pads >= kernel with count_include_pad=1 ---------------------------------------

def test_r5_pads_not_smaller_than_kernel_include_pad():
    """[1..6], k 2, s 2, pads [3, 0], count_include_pad=1: onnx.reference [0, 0.5, 2.5, 4.5]
    (the all-pad window counts its 2 pads); onnxruntime rejects pads >= kernel."""
    x = seq(6)
    attrs = dict(kernel_shape=[2], strides=[2], pads=[3, 0], count_include_pad=1)
    row = [[[0, 0.5, 2.5, 4.5]]]
    same_bits(O.average_pool(x, **attrs), row)
    same_bits(onnx_ref(x, **attrs), row)
    with pytest.raises(peers.ort_errors()):
        ort(x, **attrs)


# ---- R6: ceil window 2+ positions past the padded end ---------------------------------------

def test_r6_ceil_window_two_past_padded_end():
    """[1..4], k 3, s 3, ceil: the last window (3, 4, 5) hangs 2 past the end. onnxruntime and
    torch: windows at 0 and 3 -> [2, 4]; onnx.reference splits the extra padding on both sides
    -> [1.5, 3]."""
    x = seq(4)
    same_bits(O.average_pool(x, [3], strides=[3], ceil_mode=1), [[[2, 4]]])
    same_bits(ort(x, kernel_shape=[3], strides=[3], ceil_mode=1), [[[2, 4]]])
    same_bits(torch_pool(x, 1, 3, 3, ceil_mode=True), [[[2, 4]]])
    same_bits(F.avg_pool1d(x, 3, 3, ceil_mode=True), [[[2, 4]]])
    same_bits(onnx_ref(x, kernel_shape=[3], strides=[3], ceil_mode=1), [[[1.5, 3]]])


# ---- R7: ONNX VALID with dilation -----------------------------------------------------------

def test_r7_valid_with_dilation():
    """[1..6], k 3, d 2, VALID: onnxruntime sizes the output with the dilated window (5):
    [3, 4]; onnx.reference sizes it without dilation: [3, 4, 0, 0]."""
    x = seq(6)
    attrs = dict(kernel_shape=[3], dilations=[2], auto_pad="VALID")
    same_bits(O.average_pool(x, **attrs), [[[3, 4]]])
    same_bits(ort(x, **attrs), [[[3, 4]]])
    assert onnx_ref(x, **attrs).shape == (1, 1, 4)


# ---- R8: OpenVINO ceil, exclude-pad, a window starting at or past the input's end -----------

def test_r8_row():
    """[1..7], k 4, s 4, pads [0, 3], exclude_pad, ceil: windows at 0, 4, 8; the last starts
    past the input's end: OpenVINO [2.5, 6, -0]. [1..5], k 2, s 2, pads [1, 1]: the last window
    starts exactly at the end: NaN in both."""
    kw = dict(pads_begin=[0], pads_end=[3], exclude_pad=True, rounding_type="ceil")
    row = [[[2.5, 6, -0.0]]]
    same_bits(V.avg_pool(seq(7), [4], strides=[4], **kw), row)
    for opset in (1, 14):
        same_bits(ov(seq(7), [4], opset=opset, strides=[4], **kw), row)
    kw = dict(strides=[2], pads_begin=[1], pads_end=[1], exclude_pad=True, rounding_type="ceil")
    same_bits(V.avg_pool(seq(5), [2], **kw), [[[1, 2.5, 4.5, np.nan]]])
    same_bits(ov(seq(5), [2], **kw), [[[1, 2.5, 4.5, np.nan]]])
    # no padding at all (auto_pad valid): windows at 0, 4, 8 of [1..7] with k 1
    kw = dict(strides=[4], pads_begin=[0], pads_end=[0], exclude_pad=True, rounding_type="ceil",
              auto_pad="valid")
    same_bits(V.avg_pool(seq(7), [1], **kw), [[[1, 5, -0.0]]])
    same_bits(ov(seq(7), [1], **kw), [[[1, 5, -0.0]]])


def test_r8_two_axes_past_the_end():
    """2-D: a window past the end on both axes divides 0 by the product of two negative counts,
    +0; past the end on one axis, -0; exactly at the end on one axis, NaN (OpenVINO)."""
    x = np.arange(1, 50, dtype=np.float32).reshape(1, 1, 7, 7)
    kw = dict(strides=[4, 4], pads_begin=[0, 0], pads_end=[3, 3], exclude_pad=True,
              rounding_type="ceil")
    got = V.avg_pool(x, [4, 4], **kw)
    same_bits(got, ov(x, [4, 4], **kw))
    assert got[0, 0, 2, 2] == 0 and not np.signbit(got[0, 0, 2, 2])
    assert got[0, 0, 0, 2] == 0 and np.signbit(got[0, 0, 0, 2])


@functools.lru_cache(maxsize=None)
def _r8_sweep(exclude_pad: bool):
    """Every 1-D configuration with in <= 9, k <= 4, s <= 5, pads <= 3 (pads < k with
    exclude_pad, as OpenVINO requires; the kernel within the padded input), ceil rounding, and
    OpenVINO's outputs (run once for every kernel path)."""
    cases = [(seq(n), [k], [s], [pb], [pe], exclude_pad, "ceil")
             for n, k, s, pb, pe in itertools.product(range(1, 10), range(1, 5), range(1, 6),
                                                      range(4), range(4))
             if not (exclude_pad and (pb >= k or pe >= k)) and n + pb + pe >= k]
    pytest.importorskip("openvino")
    return cases, peers.openvino_avg_pool_many(cases, opset=14)


@pytest.mark.parametrize("exclude_pad", [True, False])
def test_r8_matches_openvino_over_many_sizes(exclude_pad):
    """avgpool equals OpenVINO bit for bit in NaN positions and signs of zero over the sweep."""
    cases, expected = _r8_sweep(exclude_pad)
    assert len(cases) > 700
    for (x, k, s, pb, pe, excl, rounding), ov_out in zip(cases, expected):
        got = V.avg_pool(x, k, strides=s, pads_begin=pb, pads_end=pe, exclude_pad=excl,
                         rounding_type=rounding)
        same_bits(got, ov_out)


def test_r8_core_model():
    """The core rule behind R8 (count_overhang without include_padding) against the float64
    reference, on every kernel path's layouts and dtypes."""
    desc = avgpool.AveragePoolingDesc((4, 3), (4, 3), (0, 1), (3, 2), output_sizes=(3, 4),
                                      count_overhang=True)
    x = np.random.default_rng(8).standard_normal((2, 3, 7, 7))
    ref = ref_average_pool(x, (4, 3), (4, 3), (0, 1), (3, 2), output_sizes=(3, 4),
                           count_overhang=True)
    for dtype in (np.float32, np.float64):
        got = avgpool.average_pool(x.astype(dtype), desc)
        same_bits(got, ref.astype(np.float32), atol=1e-6)
        nhwc = avgpool.average_pool(np.ascontiguousarray(x.astype(dtype).transpose(0, 2, 3, 1)),
                                    desc, layout="NHWC")
        same_bits(nhwc.transpose(0, 3, 1, 2), ref.astype(np.float32), atol=1e-6)


# ---- R9: ONNX ceil_mode=1 with an end pad >= the window -------------------------------------

def test_r9_end_pad_not_smaller_than_window():
    """[1, 2, 3], k 2, pads [0, 2], ceil: the core model's windows (0-1, 1-2, 2-3; a fourth
    would start in the right padding and is dropped) -> [1.5, 2.5, 3]; onnx.reference raises
    IndexError, onnxruntime rejects pads >= kernel."""
    x = seq(3)
    attrs = dict(kernel_shape=[2], pads=[0, 2], ceil_mode=1)
    same_bits(O.average_pool(x, **attrs), [[[1.5, 2.5, 3]]])
    same_bits(O.average_pool(x, **attrs), ref_average_pool(x, (2,), (1,), (0,), (2,),
                                                           output_sizes=(3,)))
    with pytest.raises(peers.ort_errors()):
        ort(x, **attrs)
    with pytest.raises(IndexError):
        onnx_ref(x, **attrs)
