"""avgpool.openvino against OpenVINO (CPU plugin): AvgPool-1, AvgPool-14 and AdaptiveAvgPool-8.

Disagreements found (OpenVINO 2026.4.1, CPU), see the pinned tests at the end:

- Ruling R8 (tests/test_rulings.py): with exclude_pad (or no padding), a kept ``ceil`` window with
  no position in the input divides 0 by OpenVINO's ``min(start + k, in) - max(start, 0)``: NaN
  when it starts at ``in`` exactly, -0 when it starts further right; avgpool returns the same,
  sign of zero included (``assert_close`` below compares the signs of zeros too).
- Pinned (test_zero_pads_include_pad_ceil_matches_openvino): with ``exclude_pad=False``,
  ``ceil``/``ceil_torch`` and every pad zero (explicit zeros or ``auto_pad="valid"``), OpenVINO
  divides an overhanging window by its positions inside the input and gives NaN for a window
  wholly past the input; with any non-zero pad it counts the overhang. avgpool follows both.
- Pinned (test_same_with_ceil_matches_openvino): ``auto_pad="same_*"`` with
  ``rounding_type="ceil"`` where the SAME total pad is negative (kernel < stride): OpenVINO applies
  the ceil formula to the clamped (zero) pads, ``ceil((in - k) / s) + 1`` outputs; so does avgpool.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("openvino")

from hypothesis import assume, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import avgpool.openvino as O  # noqa: E402
import peers  # noqa: E402
from reference import ref_adaptive_average_pool, ref_average_pool  # noqa: E402

RTOL, ATOL = 1e-5, 1e-5


@pytest.fixture(scope="session", autouse=True)
def _peer_report():
    yield
    peers.print_report_once()


def assert_close(got, expected, what=""):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=RTOL,
                               atol=ATOL, equal_nan=True, err_msg=what)
    zero = expected == 0  # -0 where OpenVINO gives -0 (ruling R8)
    assert np.array_equal(np.signbit(got[zero]), np.signbit(expected[zero])), what


def seq(*shape):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape)


def ov_pool(x, kernel, opset=1, **kw):
    return peers.openvino_avg_pool(x, kernel, opset=opset, **kw)


def both(x, kernel, expected=None, opsets=(1, 14), **kw):
    """avgpool == OpenVINO AvgPool-``opset`` for each opset (== ``expected``)."""
    got = O.avg_pool(x, kernel, **kw)
    for opset in opsets:
        if opset == 1 and kw.get("rounding_type") == "ceil_torch":
            continue
        assert_close(got, ov_pool(x, kernel, opset, **kw), f"AvgPool-{opset} {kw}")
        peers.COUNTS["compared: openvino AvgPool (explicit)"] += 1
    if expected is not None:
        assert_close(got, np.asarray(expected, np.float32), f"expected {kw}")
    return got


# ---------------------------------------------------------------------------------------------
# hypothesis

MAX_SIZE = {1: 10, 2: 7, 3: 5}
MAX_PAD = {1: 3, 2: 2, 3: 2}
MAX_KERNEL = {1: 4, 2: 4, 3: 3}


@st.composite
def ov_configs(draw):
    """(x, kernel, kwargs, opset) for avg_pool; pads mostly smaller than the kernel."""
    rank = draw(st.integers(1, 3))
    opset = draw(st.sampled_from([1, 14]))
    rounding = draw(st.sampled_from(["floor", "ceil"] + (["ceil_torch"] if opset == 14 else [])))
    auto_pad = draw(st.sampled_from(["explicit", "explicit", "explicit", "valid", "same_upper",
                                     "same_lower"]))
    exclude_pad = draw(st.booleans())
    clamp = draw(st.integers(0, 9)) < 8
    sizes, kernel, strides, pb, pe = [], [], [], [], []
    for _ in range(rank):
        n = draw(st.integers(1, MAX_SIZE[rank]))
        s = draw(st.integers(1, 4))
        b, e = draw(st.integers(0, MAX_PAD[rank])), draw(st.integers(0, MAX_PAD[rank]))
        room = n + (b + e if auto_pad == "explicit" else 0)
        if auto_pad.startswith("same"):
            room = 10 ** 6
        k = draw(st.integers(1, max(1, min(MAX_KERNEL[rank], room))))
        if clamp:
            b, e = min(b, k - 1), min(e, k - 1)
            n = max(n, k - (b + e if auto_pad == "explicit" else 0))
        sizes.append(n), kernel.append(k), strides.append(s), pb.append(b), pe.append(e)
    kw = dict(strides=strides, pads_begin=pb, pads_end=pe, exclude_pad=exclude_pad,
              rounding_type=rounding, auto_pad=auto_pad)
    n_batch = draw(st.integers(1, 2))
    channels = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal((n_batch, channels, *sizes)).astype(np.float32)
    return x, kernel, kw, opset


def _axes(x, kernel, kw):
    """Per axis (in, k, s, pb, pe, raw SAME total pad) with the pads OpenVINO uses."""
    out = []
    for a, k in enumerate(kernel):
        n, s = x.shape[2 + a], kw["strides"][a]
        raw = (-(-n // s) - 1) * s + k - n
        if kw["auto_pad"].startswith("same"):
            t = max(0, raw)
            b = t // 2 if kw["auto_pad"] == "same_upper" else t - t // 2
            out.append((n, k, s, b, t - b, raw))
        elif kw["auto_pad"] == "valid":
            out.append((n, k, s, 0, 0, raw))
        else:
            out.append((n, k, s, kw["pads_begin"][a], kw["pads_end"][a], raw))
    return out


def ov_rejects(x, kernel, kw):
    if kw["auto_pad"] != "explicit":
        return any(n < k for n, k, *_ in _axes(x, kernel, kw)) and kw["auto_pad"] == "valid"
    axes = _axes(x, kernel, kw)
    if any(n + b + e < k for n, k, s, b, e, _ in axes):
        return True
    return kw["exclude_pad"] and any(b >= k or e >= k for n, k, s, b, e, _ in axes)


@given(ov_configs())
def test_avg_pool_vs_openvino(cfg):
    x, kernel, kw, opset = cfg
    note(f"opset={opset} shape={x.shape} kernel={kernel} {kw}")
    if ov_rejects(x, kernel, kw):
        with pytest.raises(RuntimeError):
            ov_pool(x, kernel, opset, **kw)
        with pytest.raises(ValueError):
            O.avg_pool(x, kernel, **kw)
        peers.COUNTS["compared: openvino AvgPool rejections (hypothesis)"] += 1
        return
    got = O.avg_pool(x, kernel, **kw)
    expected = ov_pool(x, kernel, opset, **kw)
    peers.COUNTS["compared: openvino AvgPool (hypothesis)"] += 1
    assert_close(got, expected, f"AvgPool-{opset} {kernel} {kw}")


@given(st.integers(1, 3), st.integers(1, 2), st.integers(1, 3),
       st.sampled_from([np.int32, np.int64]), st.data())
def test_adaptive_avg_pool_vs_openvino(rank, n, c, index_dtype, data):
    sizes = data.draw(st.lists(st.integers(1, MAX_SIZE[rank]), min_size=rank, max_size=rank))
    outs = data.draw(st.lists(st.integers(1, MAX_SIZE[rank] + 3), min_size=rank, max_size=rank))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal((n, c, *sizes)).astype(np.float32)
    output_size = np.array(outs, dtype=index_dtype)
    got = O.adaptive_avg_pool(x, output_size)
    expected = peers.openvino_adaptive_avg_pool(x, output_size)
    peers.COUNTS["compared: openvino AdaptiveAvgPool (hypothesis)"] += 1
    assert_close(got, expected, f"{x.shape} -> {outs}")
    assert_close(got, ref_adaptive_average_pool(x, outs).astype(np.float32), "reference")


# ---------------------------------------------------------------------------------------------
# explicit cases: every rounding type, exclude_pad both ways, every auto_pad, ranks 1-3

_EXPLICIT = [
    # (shape, kernel, strides, pads_begin, pads_end)
    ((1, 2, 9), [3], [2], [1], [2]),
    ((2, 1, 6, 7), [3, 2], [2, 3], [1, 0], [2, 1]),
    ((1, 1, 5, 4, 6), [2, 3, 2], [2, 1, 3], [1, 1, 0], [1, 2, 1]),
    ((1, 3, 8, 8), [4, 4], [3, 3], [1, 2], [3, 1]),
]


@pytest.mark.parametrize("shape,kernel,strides,pb,pe", _EXPLICIT,
                         ids=["1d", "2d", "3d", "2d-k4s3"])
@pytest.mark.parametrize("rounding", ["floor", "ceil", "ceil_torch"])
@pytest.mark.parametrize("exclude_pad", [False, True])
@pytest.mark.parametrize("auto_pad", ["explicit", "notset", "valid", "same_upper", "same_lower"])
def test_avg_pool_explicit_grid(shape, kernel, strides, pb, pe, rounding, exclude_pad, auto_pad):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    kw = dict(strides=strides, pads_begin=pb, pads_end=pe, exclude_pad=exclude_pad,
              rounding_type=rounding, auto_pad=auto_pad)
    ov_kw = dict(kw, auto_pad="explicit" if auto_pad == "notset" else auto_pad)
    got = O.avg_pool(x, kernel, **kw)
    for opset in (1, 14):
        if opset == 1 and rounding == "ceil_torch":
            continue
        ref = ov_pool(x, kernel, opset, **ov_kw)
        assert_close(got, ref, f"AvgPool-{opset}")
        peers.COUNTS["compared: openvino AvgPool (explicit)"] += 1


def test_avg_pool_float16_and_float64_vs_openvino():
    for dtype, tol in ((np.float16, 2e-3), (np.float64, 1e-12)):
        x = np.random.default_rng(2).standard_normal((2, 3, 7, 6)).astype(dtype)
        for kw in (dict(strides=[2, 1], pads_begin=[1, 1], pads_end=[1, 0], exclude_pad=True,
                        rounding_type="ceil"),
                   dict(strides=[1, 2], pads_begin=[0, 1], pads_end=[1, 1], exclude_pad=False,
                        rounding_type="floor")):
            got = O.avg_pool(x, [2, 3], **kw)
            assert got.dtype == np.dtype(dtype)
            expected = ref_average_pool(x, (2, 3), kw["strides"], kw["pads_begin"],
                                        kw["pads_end"], include_padding=not kw["exclude_pad"],
                                        output_sizes=got.shape[2:], count_overhang=True)
            np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)
            ov = ov_pool(x, [2, 3], 1, **kw)
            assert ov.dtype == np.dtype(dtype)
            ov_tol = max(tol, 1e-6)  # the CPU plugin computes f64 in f32
            np.testing.assert_allclose(got.astype(np.float64), ov.astype(np.float64),
                                       rtol=ov_tol, atol=ov_tol)
            peers.COUNTS["compared: openvino AvgPool (explicit)"] += 1


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape,outs", [((1, 1, 10), [3]), ((1, 1, 7), [7]), ((1, 1, 5), [8]),
                                        ((1, 1, 13), [1]), ((2, 3, 10, 7), [3, 9]),
                                        ((1, 2, 5, 6, 7), [2, 6, 1])])
def test_adaptive_avg_pool_cases(index_dtype, shape, outs):
    """docs/semantics.md section 5 case 11 (10->3, 7->7, 5->8, 13->1) and 2-D / 3-D versions."""
    x = seq(*shape)
    size = np.array(outs, dtype=index_dtype)
    got = O.adaptive_avg_pool(x, size)
    assert_close(got, peers.openvino_adaptive_avg_pool(x, size))
    peers.COUNTS["compared: openvino AdaptiveAvgPool (explicit)"] += 1
    assert_close(got, ref_adaptive_average_pool(x, outs).astype(np.float32))
    assert_close(O.adaptive_avg_pool(x, list(outs)), got)


def test_adaptive_avg_pool_rejects_other_index_dtypes():
    x = seq(1, 1, 6)
    with pytest.raises(TypeError):
        O.adaptive_avg_pool(x, np.array([2], np.float32))
    with pytest.raises(TypeError):
        O.adaptive_avg_pool(x, np.array([[2]], np.int64))


# ---------------------------------------------------------------------------------------------
# docs/semantics.md section 3b (OpenVINO columns) and section 5 case 4


@pytest.mark.parametrize("exclude_pad,kept", [(True, [1, 2.5, 4.5, np.nan]),
                                              (False, [0.5, 2.5, 4.5, 0])])
def test_2b_ceil_keeps_window_starting_in_right_pad(exclude_pad, kept):
    x = seq(1, 1, 5)
    kw = dict(strides=[2], pads_begin=[1], pads_end=[1], exclude_pad=exclude_pad)
    both(x, [2], [[kept]], rounding_type="ceil", **kw)
    both(x, [2], [[kept[:3]]], opsets=(14,), rounding_type="ceil_torch", **kw)
    both(x, [2], [[kept[:3]]], rounding_type="floor", **kw)


def test_2b_overhang_counted_with_include_pad():
    x = seq(1, 1, 6)
    kw = dict(strides=[3], pads_begin=[1], pads_end=[1], exclude_pad=False)
    both(x, [3], [[[1, 4, 2]]], rounding_type="ceil", **kw)
    both(x, [3], [[[1, 4, 2]]], opsets=(14,), rounding_type="ceil_torch", **kw)
    # with exclude_pad only the one valid position counts
    both(x, [3], [[[1.5, 4, 6]]], rounding_type="ceil", **dict(kw, exclude_pad=True))


def test_2b_k3_s2_p1_ceil_include():
    kw = dict(strides=[2], pads_begin=[1], pads_end=[1], exclude_pad=False)
    both(seq(1, 1, 5), [3], [[[1, 3, 3]]], rounding_type="ceil", **kw)
    both(seq(1, 1, 5), [3], [[[1, 3, 3]]], opsets=(14,), rounding_type="ceil_torch", **kw)


def test_2b_exclude_pad_with_pad_not_smaller_than_kernel_rejected():
    x = np.array([[[1, 2]]], np.float32)
    kw = dict(strides=[2], pads_begin=[3], pads_end=[0], exclude_pad=True)
    for opset in (1, 14):
        with pytest.raises(RuntimeError, match="exclude_pad|Kernel after dilation"):
            ov_pool(x, [2], opset, **kw)
    with pytest.raises(ValueError, match="exclude_pad"):
        O.avg_pool(x, [2], **kw)
    # without exclude_pad both accept it: an all-pad window is 0
    both(x, [2], [[[0, 0.5]]], **dict(kw, exclude_pad=False))


def test_2b_same_upper_lower_odd_pad():
    x = seq(1, 1, 6)
    kw = dict(strides=[1], pads_begin=[0], pads_end=[0])
    for rounding in ("floor", "ceil"):
        both(x, [2], [[[1.5, 2.5, 3.5, 4.5, 5.5, 6]]], auto_pad="same_upper", exclude_pad=True,
             rounding_type=rounding, **kw)
        both(x, [2], [[[1, 1.5, 2.5, 3.5, 4.5, 5.5]]], auto_pad="same_lower", exclude_pad=True,
             rounding_type=rounding, **kw)
        both(x, [2], [[[1.5, 2.5, 3.5, 4.5, 5.5, 3]]], auto_pad="same_upper", exclude_pad=False,
             rounding_type=rounding, **kw)
        both(x, [2], [[[0.5, 1.5, 2.5, 3.5, 4.5, 5.5]]], auto_pad="same_lower",
             exclude_pad=False, rounding_type=rounding, **kw)


@pytest.mark.parametrize("exclude_pad", [True, False])
def test_case4_6x6_k3_s3_p1_ceil(exclude_pad):
    """1x1x6x6, k 3, s 3, pads 1, ceil: 3x3 for every rounding but floor (2x2); the last window
    (1 valid + 1 pad + 1 overhang per axis) starts inside the input, so ``ceil_torch`` keeps it too.
    With exclude_pad the corner is x[5, 5]; without, the divisor is the whole 3x3 kernel."""
    x = seq(1, 1, 6, 6)
    kw = dict(strides=[3, 3], pads_begin=[1, 1], pads_end=[1, 1], exclude_pad=exclude_pad)
    ceil = both(x, [3, 3], rounding_type="ceil", **kw)
    torch_like = both(x, [3, 3], opsets=(14,), rounding_type="ceil_torch", **kw)
    floor = both(x, [3, 3], rounding_type="floor", **kw)
    assert ceil.shape == torch_like.shape == (1, 1, 3, 3) and floor.shape == (1, 1, 2, 2)
    assert_close(ceil, torch_like)
    assert ceil[0, 0, 2, 2] == pytest.approx(36 if exclude_pad else 36 / 9, rel=1e-6)


@pytest.mark.parametrize("exclude_pad", [True, False])
def test_case4_window_starting_in_right_pad_2d(exclude_pad):
    """1x1x5x5, k 2, s 2, pads 1: ``ceil`` keeps a 4th row/column of windows that start in the
    right padding (NaN with exclude_pad, 0 without); ``ceil_torch`` drops them (3x3)."""
    x = seq(1, 1, 5, 5)
    kw = dict(strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1], exclude_pad=exclude_pad)
    ceil = both(x, [2, 2], rounding_type="ceil", **kw)
    torch_like = both(x, [2, 2], opsets=(14,), rounding_type="ceil_torch", **kw)
    assert ceil.shape == (1, 1, 4, 4) and torch_like.shape == (1, 1, 3, 3)
    assert_close(ceil[..., :3, :3], torch_like)
    edge = np.concatenate([ceil[0, 0, 3, :], ceil[0, 0, :, 3]])
    if exclude_pad:
        assert np.isnan(edge).all()
    else:
        assert (edge == 0).all()


# ---------------------------------------------------------------------------------------------
# pinned disagreements


_ZERO_PAD_CASES = [
    # (shape, kernel, strides, auto_pad, OpenVINO's output for x = 1..n)
    ((1, 1, 3), [2], [2], "explicit", [[[1.5, 3]]]),
    ((1, 1, 5), [2], [2], "valid", [[[1.5, 3.5, 5]]]),
    ((1, 1, 7), [3], [3], "explicit", [[[2, 5, 7]]]),
    ((1, 1, 2), [1], [2], "explicit", [[[1, np.nan]]]),
    ((1, 1, 3, 3), [2, 2], [2, 2], "explicit", [[[[3, 4.5], [7.5, 9]]]]),
]


_ZERO_PAD_IDS = ["1d-k2s2", "1d-valid", "1d-k3s3", "1d-past-end", "2d"]
_ZERO_PAD_PARAMS = [
    pytest.param(*case, rounding, opset, id=f"{name}-{rounding}-v{opset}")
    for case, name in zip(_ZERO_PAD_CASES, _ZERO_PAD_IDS)
    for rounding, opset in (("ceil", 1), ("ceil", 14), ("ceil_torch", 14))
    if not (rounding == "ceil_torch" and name == "1d-past-end")  # dropped: both give [1]
]


@pytest.mark.parametrize("shape,kernel,strides,auto_pad,ov_out,rounding,opset", _ZERO_PAD_PARAMS)
def test_zero_pads_include_pad_ceil_matches_openvino(shape, kernel, strides, auto_pad, ov_out,
                                                       rounding, opset):
    """With exclude_pad=False, rounding ceil/ceil_torch and every pad zero (explicit zeros or
    auto_pad='valid'), OpenVINO 2026.4 CPU divides an overhanging window by its positions inside
    the input and gives NaN for a window wholly past the input (exclude-pad semantics), and so
    does avgpool. With any non-zero pad OpenVINO counts the overhang, as avgpool does
    (test_nonzero_pad_counts_overhang_in_openvino)."""
    x = seq(*shape)
    rank = len(kernel)
    kw = dict(strides=strides, pads_begin=[0] * rank, pads_end=[0] * rank, exclude_pad=False,
              rounding_type=rounding, auto_pad=auto_pad)
    expected = np.array(ov_out, np.float32)
    assert_close(ov_pool(x, kernel, opset, **kw), expected, "OpenVINO (recorded)")
    assert_close(O.avg_pool(x, kernel, **kw), expected, "avgpool")


def test_nonzero_pad_counts_overhang_in_openvino():
    """Companion of the test above: one non-zero pad anywhere and OpenVINO counts the overhang."""
    x = seq(1, 1, 3, 3)
    for pb, pe in (([0, 0], [0, 1]), ([1, 0], [0, 0]), ([0, 1], [0, 0])):
        both(x, [2, 2], strides=[2, 2], pads_begin=pb, pads_end=pe, exclude_pad=False,
             rounding_type="ceil")


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower"])
@pytest.mark.parametrize("exclude_pad", [True, False])
def test_same_with_ceil_matches_openvino(auto_pad, exclude_pad):
    """auto_pad same_upper/same_lower with rounding_type='ceil' and a kernel smaller than the
    stride (negative SAME total pad, clamped to 0): OpenVINO 2026.4 gives ceil((in - k) / s) + 1
    outputs (here in 2, k 1, s 2: [1, NaN]), and so does avgpool."""
    x = seq(1, 1, 2)
    kw = dict(strides=[2], pads_begin=[0], pads_end=[0], exclude_pad=exclude_pad,
              rounding_type="ceil", auto_pad=auto_pad)
    for opset in (1, 14):
        ov = ov_pool(x, [1], opset, **kw)
        assert ov.shape == (1, 1, 2) and ov[0, 0, 0] == 1 and np.isnan(ov[0, 0, 1])
    assert_close(O.avg_pool(x, [1], **kw), ov)


def test_same_with_ceil_torch_and_floor_match_openvino():
    """The negative SAME pad case agrees for floor and ceil_torch."""
    x = seq(1, 1, 7)
    for auto_pad in ("same_upper", "same_lower"):
        for exclude_pad in (True, False):
            kw = dict(strides=[3], pads_begin=[0], pads_end=[0], exclude_pad=exclude_pad,
                      auto_pad=auto_pad)
            both(x, [1], [[[1, 4, 7]]], rounding_type="floor", **kw)
            both(x, [1], [[[1, 4, 7]]], opsets=(14,), rounding_type="ceil_torch", **kw)
