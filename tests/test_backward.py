"""average_pool_backward and adaptive_average_pool_backward against the float64 reference (the
transpose of the forward reference), on every kernel path, dtype and layout."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import avgpool
from reference import (ref_adaptive_average_pool_backward, ref_average_pool_backward,
                       ref_output_size, ref_scatter_backward)
from strategies import (
    DTYPES,
    FLOAT32,
    FLOAT64,
    LAYOUTS,
    adaptive_cases,
    assert_matches,
    make_data,
    pool_cases,
    scaled,
    to_layout,
)


def _grad_out(seed, shape, dtype):
    return make_data(seed, shape, dtype)


def _channels_last(shape):
    """A channels-first shape (N, C, *spatial) as channels last (N, *spatial, C)."""
    return (shape[0],) + tuple(shape[2:]) + (shape[1],)


def _assert_grad(got, ref, ref_abs, dtype):
    """float32 / float64 as the forward (assert_matches: relative to the sum of |terms|).
    float16 / bfloat16 sum in float32 and round once, so within one rounding of the dtype plus
    float32's error on the sum of |terms|: a sum that cancels to about 0 in float64 may round
    to a tiny non-zero in float32, which the forward's 1-ulp rule would call many ulps."""
    dtype = np.dtype(dtype)
    if dtype in (FLOAT32, FLOAT64):
        assert_matches(got, ref, ref_abs, dtype)
        return
    assert got.dtype == dtype and got.shape == ref.shape
    info = ml_dtypes.finfo(dtype)
    eps = float(info.eps)
    err = np.abs(got.astype(np.float64) - ref)
    tol = eps * np.abs(ref) + 1e-6 * ref_abs + float(info.smallest_subnormal)
    bad = ~(err <= tol)
    assert not bad.any(), (f"{int(bad.sum())} elements off; first at "
                           f"{np.argwhere(bad)[0].tolist()}: got {got[bad][0]!r}, "
                           f"want {ref[bad][0]!r}")


def _check_pool(x, kwargs, layout, seed, **call):
    desc = avgpool.AveragePoolingDesc(**kwargs)
    gy = _grad_out(seed, desc.output_shape(x.shape, layout), x.dtype)
    before = gy.copy()
    gx = avgpool.average_pool_backward(gy, desc, x.shape, layout=layout, **call)
    np.testing.assert_array_equal(gy, before)  # grad_out is read only
    args = dict(kwargs)
    window = args.pop("window_size")
    g64 = gy.astype(np.float64)
    ref = ref_average_pool_backward(g64, x.shape, window, layout=layout, **args)
    ref_abs = np.abs(ref_average_pool_backward(np.abs(g64), x.shape, window, layout=layout,
                                               **args))
    assert gx.shape == x.shape
    _assert_grad(gx, ref, ref_abs, x.dtype)
    return desc, gy, gx


# --------------------------------------------------------------------------------------------
# The reference itself, by hand.


def test_reference_backward_by_hand():
    # in 3, k 2, s 1: windows {0,1}, {1,2}; the middle input is in both
    g = ref_average_pool_backward(np.array([[[2.0, 4.0]]]), (1, 1, 3), (2,), strides=(1,))
    np.testing.assert_array_equal(g[0, 0], [1.0, 3.0, 2.0])
    # pads 1/1, exclude pad: divisors 1, 2, 1 (windows {-1,0}, {0,1}, {1,2}... in 2)
    g = ref_average_pool_backward(np.array([[[1.0, 1.0, 1.0]]]), (1, 1, 2), (2,), strides=(1,),
                                  start_padding=(1,), end_padding=(1,))
    np.testing.assert_array_equal(g[0, 0], [1.5, 1.5])
    # include pad: every divisor 2
    g = ref_average_pool_backward(np.array([[[1.0, 1.0, 1.0]]]), (1, 1, 2), (2,), strides=(1,),
                                  start_padding=(1,), end_padding=(1,), include_padding=True)
    np.testing.assert_array_equal(g[0, 0], [1.0, 1.0])
    # adaptive 5 -> 2: windows [0, 3) and [2, 5), position 2 in both
    g = ref_adaptive_average_pool_backward(np.array([[[3.0, 6.0]]]), (1, 1, 5), (2,))
    np.testing.assert_array_equal(g[0, 0], [1.0, 1.0, 3.0, 2.0, 2.0])


@pytest.mark.parametrize("shape,window,strides,start,end,dil", [
    ((2, 3, 9, 11), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    ((1, 2, 10, 7), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1)),
    ((1, 1, 10, 11), (3, 2), (3, 3), (1, 1), (2, 0), (1, 1)),
    ((2, 2, 13), (4,), (4,), (0,), (3,), (1,)),
    ((1, 1, 5, 6, 7), (2, 3, 2), (2, 1, 3), (1, 1, 0), (1, 1, 1), (1, 1, 1)),
    ((1, 2, 12, 13), (3, 3), (1, 1), (2, 1), (2, 3), (2, 3)),
])
def test_scatter_reference_equals_transpose(shape, window, strides, start, end, dil):
    """The large images' reference (a scatter) and the dense transpose of the forward agree."""
    outs = [ref_output_size(n, k, s, b, e, d)
            for n, k, s, b, e, d in zip(shape[2:], window, strides, start, end, dil)]
    gy = np.random.default_rng(3).standard_normal(shape[:2] + tuple(outs))
    np.testing.assert_allclose(
        ref_scatter_backward(gy, shape, window, strides, start, dilations=dil),
        ref_average_pool_backward(gy, shape, window, strides=strides, start_padding=start,
                                  end_padding=end, dilations=dil), rtol=1e-13, atol=1e-13)


# --------------------------------------------------------------------------------------------
# Against the reference.


@given(pool_cases(), st.integers(0, 2**32 - 1))
def test_backward_matches_reference(case, seed):
    x, kwargs, layout = case
    _check_pool(x, kwargs, layout, seed)


@given(adaptive_cases(), st.integers(0, 2**32 - 1))
def test_adaptive_backward_matches_reference(case, seed):
    x, outs, layout = case
    gy = _grad_out(seed, avgpool.AdaptiveAveragePoolingDesc(outs).output_shape(x.shape, layout),
                   x.dtype)
    gx = avgpool.adaptive_average_pool_backward(gy, outs, x.shape, layout=layout)
    g64 = gy.astype(np.float64)
    ref = ref_adaptive_average_pool_backward(g64, x.shape, outs, layout=layout)
    ref_abs = ref_adaptive_average_pool_backward(np.abs(g64), x.shape, outs, layout=layout)
    _assert_grad(gx, ref, ref_abs, x.dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_backward_of_larger_images(layout):
    """Beyond the hypothesis sizes: a stride-2 3 x 3 window with padding on 2 x 19 x 23 x 37."""
    x = to_layout(make_data(1, (2, 19, 23, 37), np.float32), layout)
    _check_pool(x, dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                        end_padding=(1, 1)), layout, 7)


# Channels first, overlapping windows along W with a stride of 2 or more: the W pass runs by
# phases (each phase's windows are fixed offsets from its position), checked against the
# inverse table; odd and even W, ceil windows past the end, dilation, a negative offset.
PHASE_CASES = {
    "3x3s2p1": ((2, 3, 9, 37), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                                    end_padding=(1, 1))),
    "3x3s2-ceil": ((1, 2, 11, 56), dict(window_size=(3, 3), strides=(2, 2),
                                       output_sizes=(5, 28))),
    "k5s2p2-exclude": ((1, 2, 7, 40), dict(window_size=(2, 5), strides=(1, 2),
                                           start_padding=(0, 2), end_padding=(0, 2))),
    "k4s3d2": ((1, 1, 5, 50), dict(window_size=(1, 4), strides=(1, 3), dilations=(1, 2),
                                   start_padding=(0, 3), end_padding=(0, 1),
                                   include_padding=True)),
    "k9s8": ((1, 2, 3, 70), dict(window_size=(2, 9), strides=(2, 8), end_padding=(0, 3))),
    "1d-k3s2": ((2, 3, 31), dict(window_size=(3,), strides=(2,), start_padding=(1,))),
}

# Channels first, windows that do not overlap, small planes: each input element is its window's
# gy / divisor through a per-plane owner map, for float32 one lane permute per vector when each
# vector's owners lie within two vectors of outputs; else a gather (the gaps of k2s3 send the
# uncovered positions to a 0 far from their neighbours). Planes that are not whole vectors, every
# element owned, go in groups of planes that are (4 of 196 on AVX-512 with a short group after,
# 16 of 279 as one short group), scaled by one divisor for all (2x2s2-14x14 by its exact
# reciprocal, 3x3s3-12x15 by division), a power of two per element (2x2s2-odd: 4, 2 and 1,
# multiplied) or any divisor per element (3x3s3-ceil: 9, 6 and 4, divided; overrides of -4 and
# 2^30 divide too). One window over the whole plane (the global cases, 1-3-D, one with a divisor
# override) groups the same way where planes are not whole vectors (16 planes of 49 as one
# vector of values; 120 planes: full groups and a short one), and fills each plane with its one
# value where they are (global-8x8).
OWNER_MAP_CASES = {
    "2x2s2-14x14": ((2, 3, 14, 14), dict(window_size=(2, 2), strides=(2, 2))),
    "2x2s2-odd": ((1, 2, 9, 31), dict(window_size=(2, 2), strides=(2, 2), end_padding=(1, 1))),
    "3x3s3-12x15": ((2, 3, 12, 15), dict(window_size=(3, 3), strides=(3, 3))),
    "3x3s3-ceil": ((2, 5, 14, 14), dict(window_size=(3, 3), strides=(3, 3), end_padding=(1, 1))),
    "2x2s2-override-neg": ((2, 3, 14, 14), dict(window_size=(2, 2), strides=(2, 2),
                                                divisor_override=-4)),
    "2x2s2-override-2^30": ((2, 3, 14, 14), dict(window_size=(2, 2), strides=(2, 2),
                                                 divisor_override=2 ** 30)),
    "k2s3-gaps": ((1, 2, 8, 40), dict(window_size=(2, 2), strides=(3, 3))),
    "global-7x7": ((2, 3, 7, 7), dict(window_size=(7, 7), strides=(7, 7))),
    "global-7x7-120": ((3, 40, 7, 7), dict(window_size=(7, 7), strides=(7, 7))),
    "global-8x8": ((2, 3, 8, 8), dict(window_size=(8, 8), strides=(8, 8))),
    "global-1d-37": ((2, 5, 37), dict(window_size=(37,), strides=(37,))),
    "global-3d-override": ((1, 3, 3, 5, 6), dict(window_size=(3, 5, 6), strides=(3, 5, 6),
                                                 divisor_override=7)),
}

# Channels first, small planes (input and output of at most 2048 elements), windows that
# overlap and not stride 1 everywhere, at least a vector of planes: float32 goes as groups of up
# to 128 planes transposed into the channels of a channels-last image (a group of all 80 planes,
# 128 and a short 22, 33 planes, 1-D, 3-D, dilated, an override with padding counted); float16
# and bfloat16 through the float32 backward, so the same way.
PLANES_CL_CASES = {
    "3x3s2p1-7x7": ((2, 40, 7, 7), dict(window_size=(3, 3), strides=(2, 2),
                                        start_padding=(1, 1), end_padding=(1, 1))),
    "3x3s2-ceil-13x13": ((3, 50, 13, 13), dict(window_size=(3, 3), strides=(2, 2),
                                               end_padding=(1, 1))),
    "5x5s3-17x17": ((1, 33, 17, 17), dict(window_size=(5, 5), strides=(3, 3))),
    "1d-k5s2p2": ((4, 20, 37), dict(window_size=(5,), strides=(2,), start_padding=(2,),
                                     end_padding=(2,))),
    "3d-3x3x3s2p1": ((2, 24, 5, 6, 6), dict(window_size=(3, 3, 3), strides=(2, 2, 2),
                                             start_padding=(1, 1, 1), end_padding=(1, 1, 1))),
    "3x3d2s2": ((2, 20, 9, 11), dict(window_size=(3, 3), strides=(2, 2), dilations=(2, 2))),
    "override-include": ((2, 16, 10, 10), dict(window_size=(4, 4), strides=(2, 3),
                                               start_padding=(1, 2), include_padding=True,
                                               divisor_override=-6)),
}

CHANNELS_FIRST_ROUTES = {**{f"phases-{k}": v for k, v in PHASE_CASES.items()},
                         **{f"owner-map-{k}": v for k, v in OWNER_MAP_CASES.items()},
                         **{f"planes-cl-{k}": v for k, v in PLANES_CL_CASES.items()}}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case_id", list(CHANNELS_FIRST_ROUTES))
def test_backward_channels_first_routes(case_id, dtype):
    shape, kwargs = CHANNELS_FIRST_ROUTES[case_id]
    _check_pool(make_data(3, shape, dtype), kwargs, "NCHW", 11)


NARROW_CASES = {
    "2x2s2": ((3, 8, 20, 22), dict(window_size=(2, 2), strides=(2, 2))),  # owner map
    "3x3s1p1": ((2, 8, 30, 31), dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1),
                                     end_padding=(1, 1))),  # stride 1
    "5x5s2-1d": ((2, 24, 61), dict(window_size=(5,), strides=(2,))),  # phases of 3 windows
    "planes-cl": PLANES_CL_CASES["3x3s2p1-7x7"],
    "3d-blocks": ((40, 3, 6, 20, 20), dict(window_size=(3, 3, 3), strides=(2, 2, 2))),
}


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("case_id", list(NARROW_CASES))
def test_narrow_backward_is_the_float32_one_rounded(case_id, dtype, layout):
    """float16 and bfloat16 gradients are the float32 backward of the widened gy, rounded once
    (the SIMD paths run it in blocks of images: 3d-blocks spans several), infinities
    included."""
    shape, kwargs = NARROW_CASES[case_id]
    if layout == "NHWC":
        shape = _channels_last(shape)
    desc = avgpool.AveragePoolingDesc(**kwargs)
    gy = _grad_out(9, desc.output_shape(shape, layout), np.float32).astype(dtype)
    gy.flat[::97] = np.inf
    got = avgpool.average_pool_backward(gy, desc, shape, layout=layout)
    want = avgpool.average_pool_backward(gy.astype(np.float32), desc, shape, layout=layout)
    np.testing.assert_array_equal(got.view(np.uint16), want.astype(dtype).view(np.uint16))


# Stride 1, one divisor u for every output: (shape, descriptor's arguments, u)
ONE_DIVISOR_CASES = {
    "3x3s1p1-include": ((2, 8, 17, 19), dict(window_size=(3, 3), start_padding=(1, 1),
                                             end_padding=(1, 1), include_padding=True), 9),
    "3x3-valid": ((2, 8, 17, 19), dict(window_size=(3, 3)), 9),
    "5x4-override": ((1, 5, 12, 30), dict(window_size=(5, 4), start_padding=(2, 1),
                                          end_padding=(2, 2), divisor_override=7), 7),
    "2x2x3-3d-include": ((2, 3, 5, 6, 7), dict(window_size=(2, 2, 3), start_padding=(0, 1, 1),
                                               end_padding=(1, 0, 1), include_padding=True), 12),
    "3-d2-1d": ((2, 16, 40), dict(window_size=(3,), dilations=(2,)), 3),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case_id,layout", [
    (case_id, layout) for case_id in ONE_DIVISOR_CASES for layout in ("NCHW", "NHWC")
    # (channels-last dilated windows take the per-axis passes, not the pool)
    if not (layout == "NHWC" and "dilations" in ONE_DIVISOR_CASES[case_id][1])])
def test_stride1_one_divisor_backward_is_the_pool_of_gy(isa, case_id, dtype, layout):
    """Stride 1 with one divisor u for every output: the vector kernels give the forward pool of
    gy with the window mirrored (padding counted, divisor_override u) bit for bit, each
    element's sum divided once (docs/semantics.md); the scalar oracle divides each term and
    agrees with it to rounding. Both against the float64 reference."""
    shape, kwargs, u = ONE_DIVISOR_CASES[case_id]
    rank = len(shape) - 2
    desc = avgpool.AveragePoolingDesc(**kwargs)
    k, dil = kwargs["window_size"], kwargs.get("dilations", (1,) * rank)
    pb, pe = kwargs.get("start_padding", (0,) * rank), kwargs.get("end_padding", (0,) * rank)
    mirror = avgpool.AveragePoolingDesc(
        k, (1,) * rank, tuple((kk - 1) * d - b for kk, d, b in zip(k, dil, pb)),
        tuple((kk - 1) * d - e for kk, d, e in zip(k, dil, pe)), dilations=dil,
        include_padding=True, divisor_override=u)
    if layout == "NHWC":
        shape = _channels_last(shape)
    gy = _grad_out(11, desc.output_shape(shape, layout), dtype)
    got = avgpool.average_pool_backward(gy, desc, shape, layout=layout)
    if isa != "scalar":
        np.testing.assert_array_equal(got, avgpool.average_pool(gy, mirror, layout=layout))
    args = dict(kwargs)
    window = args.pop("window_size")
    g64 = gy.astype(np.float64)
    ref = ref_average_pool_backward(g64, shape, window, layout=layout, **args)
    ref_abs = np.abs(ref_average_pool_backward(np.abs(g64), shape, window, layout=layout,
                                               **args))
    _assert_grad(got, ref, ref_abs, dtype)


@pytest.mark.parametrize("case_id", list(PLANES_CL_CASES))
def test_backward_planes_as_channels_equals_channels_last(case_id):
    """The planes-as-channels route gives the channels-last route's bits, on 1 and 2 threads
    (the groups' size follows the thread count)."""
    shape, kwargs = PLANES_CL_CASES[case_id]
    desc = avgpool.AveragePoolingDesc(**kwargs)
    gy = _grad_out(5, desc.output_shape(shape), np.float32)
    gy_cl = np.ascontiguousarray(np.moveaxis(gy, 1, -1))
    shape_cl = _channels_last(shape)
    want = np.moveaxis(avgpool.average_pool_backward(gy_cl, desc, shape_cl, layout="NHWC"), -1, 1)
    for threads in (1, 2):
        got = avgpool.average_pool_backward(gy, desc, shape, num_threads=threads)
        np.testing.assert_array_equal(got, want)


# Channels first, windows that do not overlap, planes past 64 Ki elements: float32 rows as lane
# permutes of their s0 row (a masked tail where W is not whole vectors; inputs that no window
# reads at a row's end, as with an odd W, get 0); windows with gaps between them take the
# element loop. Planes this large are past the reference's dense transpose: the expected
# gradient is reference.ref_scatter_backward, the definition as a scatter.
ROW_PERMUTE_CASES = {
    "2x2s2": ((1, 2, 258, 262), (2, 2), (2, 2), (0, 0), None),
    "2x2s2-odd": ((1, 1, 257, 301), (2, 2), (2, 2), (0, 0), None),
    "3x3s3-pad-ceil": ((1, 1, 300, 301), (3, 3), (3, 3), (1, 1), (101, 101)),
    "1d-k4s4": ((2, 3, 70001), (4,), (4,), (0,), None),
    "k2s3-gaps": ((1, 1, 260, 300), (2, 2), (3, 3), (0, 0), None),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case_id", list(ROW_PERMUTE_CASES))
def test_backward_channels_first_large_planes(case_id, dtype):
    shape, window, strides, pads, outs = ROW_PERMUTE_CASES[case_id]
    desc = avgpool.AveragePoolingDesc(window, strides, pads, output_sizes=outs)
    gy = _grad_out(13, desc.output_shape(shape, "NCHW"), dtype)
    gx = avgpool.average_pool_backward(gy, desc, shape)
    ref = ref_scatter_backward(gy, shape, window, strides, pads)
    _assert_grad(gx, ref, np.abs(ref), dtype)


# Stride 1: `gy / divisor` summed by the forward kernels. Channels first, planes of more than
# 16 Ki outputs share the division between threads in segments of 16 Ki; images whose `gy`
# passes 1 MiB go in bands of rows, each a tile of the forward (both layouts), unless the
# forward takes the box path (the 5 x 5 cases: the whole image). The expected gradient is
# reference.ref_scatter_backward (channels first); every thread count gives the same bits.
STRIDE1_CASES = {
    "nchw-segments": ((2, 3, 150, 170), "NCHW", 3, 1, {}),
    "nchw-bands": ((1, 1, 1450, 1451), "NCHW", 3, 1, {}),
    "nchw-bands-5x5p1": ((1, 1, 1450, 1451), "NCHW", 5, 1, {}),
    "nchw-bands-override": ((1, 1, 1450, 1451), "NCHW", 3, 1, dict(divisor_override=7)),
    "nchw-block-include-pad": ((1, 3, 300, 301), "NCHW", 3, 1, dict(include_padding=True)),
    "nhwc-bands": ((1, 260, 261, 32), "NHWC", 3, 1, {}),
    "nhwc-box-5x5p1": ((1, 260, 261, 32), "NHWC", 5, 1, {}),
    "nhwc-include-pad": ((1, 260, 261, 32), "NHWC", 3, 1, dict(include_padding=True)),
    "nchw-dilated-bands": ((1, 2, 600, 610), "NCHW", 3, 2, dict(dilations=(2, 2))),
    "nhwc-3ch-bands": ((1, 400, 401, 3), "NHWC", 3, 1, {}),
    "nhwc-3ch-block": ((2, 100, 101, 3), "NHWC", 5, 2, {}),
    "nhwc-3ch-dilated": ((2, 100, 101, 3), "NHWC", 3, 2, dict(dilations=(1, 2))),
}


@pytest.mark.parametrize("case_id", list(STRIDE1_CASES))
def test_backward_stride1_large_images(case_id):
    """Planes of more than 64 Ki outputs divide by the divisor's factors (rows times W), the
    rest by a table of the plane's divisors; a constant divisor (an override, or padding
    counted) too. Dilated windows channels first sum with the same dilation; channels last
    with fewer channels than a vector is planned flattened (rows of W * C, dilation C along
    them)."""
    shape, layout, k, p, kw = STRIDE1_CASES[case_id]
    desc = avgpool.AveragePoolingDesc((k, k), start_padding=(p, p), end_padding=(p, p), **kw)
    divisor = kw.get("divisor_override", k * k if kw.get("include_padding") else None)
    gy = _grad_out(17, desc.output_shape(shape, layout), np.float32)
    gxs = [avgpool.average_pool_backward(gy, desc, shape, layout=layout, num_threads=n)
           for n in (1, 2, 3)]
    for gx in gxs[1:]:
        np.testing.assert_array_equal(gx, gxs[0])
    first = (lambda a: a) if layout == "NCHW" else (lambda a: np.moveaxis(a, -1, 1))
    shape_cf = first(np.empty(shape, np.int8)).shape
    dil = kw.get("dilations")
    ref = ref_scatter_backward(first(gy), shape_cf, (k, k), (1, 1), (p, p), divisor, dil)
    ref_abs = ref_scatter_backward(np.abs(first(gy)), shape_cf, (k, k), (1, 1), (p, p), divisor,
                                   dil)
    _assert_grad(first(gxs[0]), ref, ref_abs, np.float32)


# Channels last, 2-D, images whose gy / divisor and W-pass sums pass 1 MiB: each row of both is
# made just before the first H-pass row that reads it (rows in step), the W pass's rows kept in
# a ring until no later row reads them; a stride-2 window with padding (a ring of 2 rows), a
# dilated ceil window whose last output rows read no input row of their own, a dilated window
# whose input rows read outputs out of order (input row 2m + 10 reads outputs m + 2 and m + 5,
# the next row m + 1 and m + 4: a ring of 5, though no row reads a span of more than 4), and a
# 5-row stride-1 window with divisors that vary.
IN_STEP_CASES = {
    "3x3s2p1": ((1, 37, 37, 256), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                                       end_padding=(1, 1))),
    "3x3s2d2-ceil": ((1, 42, 38, 256), dict(window_size=(3, 3), strides=(2, 2),
                                            dilations=(2, 1), output_sizes=(20, 19))),
    "4x3s2d3": ((1, 46, 40, 256), dict(window_size=(4, 3), strides=(2, 2), dilations=(3, 1))),
    "5x3s1p2-exclude": ((1, 30, 30, 256), dict(window_size=(5, 3), strides=(1, 2),
                                               start_padding=(2, 1), end_padding=(2, 1),
                                               include_padding=False)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case_id", list(IN_STEP_CASES))
def test_backward_channels_last_rows_in_step(case_id, dtype):
    shape, kwargs = IN_STEP_CASES[case_id]
    out = avgpool.AveragePoolingDesc(**kwargs).output_shape(shape, "NHWC")
    assert out[1] * (out[2] + shape[2]) * shape[3] * 4 > 1 << 20  # s0 and s1 in float32
    _check_pool(make_data(4, shape, dtype), kwargs, "NHWC", 13)


# Float32 gradients past 16 MiB, 64-byte aligned and already in memory, are written with
# cache-bypassing stores in their last pass (H, or D for 3-D; channels-last windows that do not
# overlap; rows of channels-first windows that do not overlap on large planes; past 64 MiB,
# the owner map of small channels-first planes): the same sums, so each image's gradient must
# equal, bit for bit, the one computed alone (below the threshold). The output buffer starts
# on a vector boundary (streamed) or off it (plain stores), and is written once before
# (streamed) or fresh from the allocator (plain stores where its pages are not in memory yet).
STREAM_CASES = {
    "2d-nchw": ((2, 1, 1500, 1500), "NCHW", dict(window_size=(3, 3), strides=(2, 2),
                                                 start_padding=(1, 1), end_padding=(1, 1))),
    "2d-nhwc": ((2, 750, 750, 4), "NHWC", dict(window_size=(3, 3), strides=(2, 2),
                                                start_padding=(1, 1), end_padding=(1, 1))),
    "3d-nchw": ((2, 1, 7, 600, 601), "NCHW", dict(window_size=(3, 3, 3), strides=(2, 2, 2),
                                                  start_padding=(1, 1, 1))),
    # stride 3 > window 2: rows and columns that no window reads get zeros
    "2d-nhwc-spread": ((2, 500, 500, 16), "NHWC", dict(window_size=(2, 2), strides=(3, 3))),
    # small channels-first planes take a per-call owner map, streamed past 64 MiB
    "2d-nchw-map": ((5, 300, 112, 112), "NCHW", dict(window_size=(2, 2), strides=(2, 2))),
    # planes of 54 x 54 (not whole vectors) in groups of 4 (2 on AVX2), streamed the same way
    "2d-nchw-map-groups": ((5, 1200, 54, 54), "NCHW", dict(window_size=(2, 2), strides=(2, 2))),
    # large ones lane permutes per row (rows of whole 64-byte lines streamed)
    "2d-nchw-rows": ((3, 1, 1500, 1504), "NCHW", dict(window_size=(2, 2), strides=(2, 2))),
}


@pytest.mark.parametrize("fresh", [False, True], ids=["written", "fresh"])
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "4-bytes-past"])
@pytest.mark.parametrize("case_id", list(STREAM_CASES))
def test_large_gradient_streamed_equals_per_image(case_id, offset, fresh):
    shape, layout, kwargs = STREAM_CASES[case_id]
    assert np.prod(shape) * 4 > 16 << 20 and np.prod(shape[1:]) * 4 < 16 << 20
    desc = avgpool.AveragePoolingDesc(**kwargs)
    gy = _grad_out(5, desc.output_shape(shape, layout), np.float32)
    raw = (np.empty if fresh else np.ones)(int(np.prod(shape)) + 16, np.float32)
    start = (-raw.ctypes.data % 64) // 4 + offset  # offset floats past a 64-byte boundary
    out = raw[start:start + int(np.prod(shape))].reshape(shape)
    whole = avgpool.average_pool_backward(gy, desc, shape, layout=layout, out=out)
    assert whole is out
    for n in range(shape[0]):
        alone = avgpool.average_pool_backward(gy[n:n + 1], desc, (1,) + shape[1:], layout=layout)
        np.testing.assert_array_equal(whole[n:n + 1], alone)


# --------------------------------------------------------------------------------------------
# Properties.


@scaled(0.3)
@given(pool_cases(dtypes=(FLOAT64,)), st.integers(0, 2**32 - 1))
def test_backward_is_the_transpose_of_the_forward(case, seed):
    """<pool(x), g> == <x, pool_backward(g)>: the backward is the adjoint of the forward (where
    the forward is linear: windows with a divisor of 0 give NaN whatever x is)."""
    x, kwargs, layout = case
    desc = avgpool.AveragePoolingDesc(**kwargs)
    y = avgpool.average_pool(x, desc, layout=layout)
    gy = _grad_out(seed, y.shape, np.float64)
    finite = np.isfinite(y)
    gy = np.where(finite, gy, 0.0)
    gx = avgpool.average_pool_backward(gy, desc, x.shape, layout=layout)
    lhs = float(np.sum(np.where(finite, y, 0.0) * gy))
    rhs = float(np.sum(x * gx))
    scale = float(np.sum(np.abs(x)) * np.max(np.abs(gy), initial=0.0)) + 1e-300
    assert abs(lhs - rhs) <= 1e-12 * scale


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_backward_same_for_any_thread_count(layout, dtype):
    """Gathered per input element: bitwise the same result for 1, 2 and 3 threads."""
    x = to_layout(make_data(3, (3, 5, 17, 29), dtype), layout)
    desc = avgpool.AveragePoolingDesc((3, 3), strides=(2, 2), start_padding=(1, 1),
                                      end_padding=(1, 1))
    gy = _grad_out(4, desc.output_shape(x.shape, layout), dtype)
    results = [avgpool.average_pool_backward(gy, desc, x.shape, layout=layout, num_threads=n)
               for n in (1, 2, 3)]
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes()
    ga = _grad_out(5, avgpool.AdaptiveAveragePoolingDesc((4, 6)).output_shape(x.shape, layout),
                   dtype)
    a = [avgpool.adaptive_average_pool_backward(ga, (4, 6), x.shape, layout=layout,
                                                num_threads=n).tobytes() for n in (1, 2)]
    assert a[0] == a[1]


def test_backward_out_and_torch():
    desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
    gy = np.ones((1, 2, 2, 2), np.float32)
    out = np.full((1, 2, 4, 4), 7.0, np.float32)
    got = avgpool.average_pool_backward(gy, desc, (1, 2, 4, 4), out=out)
    assert got is out
    np.testing.assert_array_equal(out, np.full((1, 2, 4, 4), 0.25, np.float32))
    torch = pytest.importorskip("torch")  # torch is a test extra: CI runs this
    t = avgpool.average_pool_backward(torch.ones(1, 2, 2, 2), desc, (1, 2, 4, 4))
    assert isinstance(t, torch.Tensor)
    assert torch.equal(t, torch.full((1, 2, 4, 4), 0.25))


def test_backward_positions_no_window_counts_get_zero():
    """Stride 3 with window 1 skips inputs: their gradient is 0 (every element written)."""
    desc = avgpool.AveragePoolingDesc((1,), strides=(3,))
    out = np.full((1, 1, 7), np.nan, np.float32)
    avgpool.average_pool_backward(np.array([[[1.0, 2.0, 3.0]]], np.float32), desc, (1, 1, 7),
                                  out=out)
    np.testing.assert_array_equal(out[0, 0], [1, 0, 0, 2, 0, 0, 3])


# --------------------------------------------------------------------------------------------
# Against torch's own gradients (torch is a test extra, installed by CI).


@scaled(0.3)
@given(st.integers(1, 3), st.integers(0, 2**32 - 1), st.sampled_from(LAYOUTS), st.data())
def test_backward_equals_torch_autograd(rank, seed, layout, data):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(seed)
    ins = tuple(int(v) for v in rng.integers(2, 9, size=rank))
    k = tuple(data.draw(st.integers(1, min(n, 4))) for n in ins)
    s = tuple(data.draw(st.integers(1, 3)) for _ in ins)
    p = tuple(data.draw(st.integers(0, kk // 2)) for kk in k)
    ceil = data.draw(st.booleans())
    include = data.draw(st.booleans())
    x = torch.tensor(rng.standard_normal((2, 3) + ins), dtype=torch.float32, requires_grad=True)
    pool = [F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][rank - 1]
    y = pool(x, k, s, p, ceil_mode=ceil, count_include_pad=include)
    gy = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=torch.float32)
    (want,) = torch.autograd.grad(y, x, gy)
    # the same configuration through the PyTorch-style front end's descriptor
    desc = avgpool.AveragePoolingDesc(k, strides=s, start_padding=p, end_padding=p,
                                      include_padding=include,
                                      output_sizes=tuple(y.shape[2:]))
    g = gy.numpy()
    if layout == "NHWC":
        g = to_layout(g, "NHWC")
    got = avgpool.average_pool_backward(g, desc, to_layout(x.detach().numpy(), layout).shape,
                                        layout=layout)
    if layout == "NHWC":
        got = np.moveaxis(got, -1, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Bad input.


def test_backward_errors():
    desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
    gy = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(ValueError, match=r"grad_out has shape \(1, 1, 3, 3\), expected "
                                         r"\(1, 1, 2, 2\)"):
        avgpool.average_pool_backward(np.ones((1, 1, 3, 3), np.float32), desc, (1, 1, 4, 4))
    with pytest.raises(TypeError, match="grad_out: dtype int32 is not supported"):
        avgpool.average_pool_backward(gy.astype(np.int32), desc, (1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"input_shape/window_size: .* input_shape must be a "
                                         r"4-D input"):
        avgpool.average_pool_backward(gy, desc, (1, 4, 4))
    with pytest.raises(TypeError, match="input_shape must hold ints"):
        avgpool.average_pool_backward(gy, desc, (1, 1, 4.0, 4))
    with pytest.raises(TypeError, match="input_shape must be a sequence of ints"):
        avgpool.average_pool_backward(gy, desc, 4)
    with pytest.raises(TypeError, match=r"out has dtype float64, expected float32 \(the dtype "
                                        r"of grad_out\)"):
        avgpool.average_pool_backward(gy, desc, (1, 1, 4, 4), out=np.empty((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="out must not overlap grad_out"):
        buf = np.zeros(64, np.float32)
        avgpool.average_pool_backward(buf[:4].reshape(1, 1, 2, 2), desc, (1, 1, 4, 4),
                                      out=buf[:16].reshape(1, 1, 4, 4))
    with pytest.raises(TypeError, match="desc must be an AveragePoolingDesc"):
        avgpool.average_pool_backward(gy, (2, 2), (1, 1, 4, 4))
    with pytest.raises(ValueError, match="window"):  # the window does not fit this input
        avgpool.average_pool_backward(gy, avgpool.AveragePoolingDesc((5, 5)), (1, 1, 4, 4))
    with pytest.raises(ValueError, match="num_threads must be between 1 and 65536"):
        avgpool.average_pool_backward(gy, desc, (1, 1, 4, 4), num_threads=0)
