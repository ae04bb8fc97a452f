"""nan_policy="omit" and min_count (docs/semantics.md, "NaN-aware averaging") against the float64
reference of tests/reference.py, on every kernel path: the scalar kernels skip NaN taps; the SIMD
paths sum the NaN-free input and the NaN indicator with their vector kernels (csrc/nan_omit.c).
"""

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import avgpool
from reference import ref_adaptive_average_pool, ref_average_pool
from strategies import (
    BFLOAT16,
    DTYPES,
    DTYPE_IDS,
    FLOAT32,
    adaptive_cases,
    assert_matches,
    assert_same,
    make_data,
    pool_cases,
)


def _with_nans(x, data):
    """x with NaN at a random fraction of positions (none, some, all), sometimes +-inf."""
    frac = data.draw(st.sampled_from([0.0, 0.1, 0.4, 0.9, 1.0]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = x.copy()
    x[rng.random(x.shape) < frac] = np.nan
    if data.draw(st.booleans()):
        x[rng.random(x.shape) < 0.02] = np.inf
        x[rng.random(x.shape) < 0.02] = -np.inf
    return x


def _assert_omit(y, ref, ref_abs, dtype):
    """assert_matches, after the infinite results: those must be equal (sign included)."""
    y64 = np.asarray(y).astype(np.float64)
    inf = np.isinf(ref)
    assert np.array_equal(np.isinf(y64), inf) and np.array_equal(y64[inf], ref[inf])
    finite = lambda a: np.where(inf, 0.0, a)  # noqa: E731
    assert_matches(np.where(inf, 0, y).astype(dtype), finite(ref), finite(ref_abs), dtype)


def _refs(fn, x, *args, **kwargs):
    """(reference, reference of |x|), NaN-omitting, in float64."""
    x64 = np.asarray(x).astype(np.float64)
    return fn(x64, *args, **kwargs), np.abs(fn(np.abs(x64), *args, **kwargs))


@given(pool_cases(), st.integers(0, 5), st.data())
def test_omit_matches_reference(case, min_count, data):
    x, kwargs, layout = case
    x = _with_nans(x, data)
    before = x.copy()
    desc = avgpool.AveragePoolingDesc(**kwargs, nan_policy="omit", min_count=min_count)
    y = avgpool.average_pool(x, desc, layout=layout)
    assert_same(x, before)  # the input is not changed
    args = dict(kwargs)
    window = args.pop("window_size")
    ref, ref_abs = _refs(ref_average_pool, x, window, layout=layout, nan_policy="omit",
                         min_count=min_count, **args)
    _assert_omit(y, ref, ref_abs, x.dtype)
    # the compiled operator runs the same plan, bit for bit
    op = avgpool.compile_operator(desc, x.shape, x.dtype, layout=layout)
    assert_same(op(x), y)


@given(adaptive_cases(), st.integers(0, 3), st.data())
def test_adaptive_omit_matches_reference(case, min_count, data):
    x, outs, layout = case
    x = _with_nans(x, data)
    desc = avgpool.AdaptiveAveragePoolingDesc(outs, nan_policy="omit", min_count=min_count)
    y = avgpool.adaptive_average_pool(x, desc, layout=layout)
    ref, ref_abs = _refs(ref_adaptive_average_pool, x, outs, layout=layout, nan_policy="omit",
                         min_count=min_count)
    _assert_omit(y, ref, ref_abs, x.dtype)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_omit_without_nan_is_the_plain_mean(dtype, layout):
    """No NaN: omit gives the propagating result (within the path's rounding), whatever the
    window; min_count above a window's valid positions still gives NaN."""
    shape = (2, 3, 30, 41) if layout == "NCHW" else (2, 30, 41, 3)
    x = make_data(3, shape, dtype)
    for kw in (dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1)),
               dict(window_size=(17, 17), start_padding=(8, 8), end_padding=(8, 8),
                    include_padding=True),
               dict(window_size=(2, 2), strides=(2, 2))):
        plain = avgpool.average_pool(x, avgpool.AveragePoolingDesc(**kw), layout=layout)
        omit = avgpool.average_pool(x, avgpool.AveragePoolingDesc(**kw, nan_policy="OMIT"),
                                    layout=layout)
        args = dict(kw)
        window = args.pop("window_size")
        ref, ref_abs = _refs(ref_average_pool, x, window, layout=layout, **args)
        assert_matches(plain, ref, ref_abs, dtype)
        assert_matches(omit, ref, ref_abs, dtype)
    corner = avgpool.AveragePoolingDesc((3, 3), start_padding=(1, 1), end_padding=(1, 1),
                                        nan_policy="omit", min_count=5)
    y = avgpool.average_pool(x, corner, layout=layout).astype(np.float64)
    corners = y[:, :, [0, 0, -1, -1], [0, -1, 0, -1]] if layout == "NCHW" else (
        y[:, [0, 0, -1, -1], [0, -1, 0, -1], :])
    assert np.isnan(corners).all()  # 4 valid positions < 5
    assert not np.isnan(y[:, :, 1:-1, 1:-1] if layout == "NCHW" else y[:, 1:-1, 1:-1]).any()


# Box-path windows (more than 16 taps, stride 1): their running float64 sums carry NaN and
# +-inf as counts beside the finite sums (csrc/kernels/simd_box.inc); a row of more than 2048
# outputs restarts its prefix sums. The last case has too many rows in a window for exact
# counts: propagate sums such rows directly, omit goes through nan_omit.c.
BOX_CASES = [
    ("NCHW", (1, 1, 24, 20), dict(window_size=(11, 11), start_padding=(5, 5), end_padding=(5, 5))),
    ("NCHW", (1, 1, 1, 2100), dict(window_size=(1, 20), start_padding=(0, 9),
                                   end_padding=(0, 10), include_padding=True)),
    ("NCHW", (1, 2, 4, 20, 30), dict(window_size=(2, 9, 9), strides=(2, 1, 1))),
    ("NHWC", (1, 20, 24, 3), dict(window_size=(9, 9), start_padding=(4, 4), end_padding=(4, 4))),
    ("NHWC", (2, 30, 25, 7), dict(window_size=(5, 9), start_padding=(3, 3), end_padding=(1, 1),
                                  divisor_override=-7)),
    ("NCHW", (1, 1, 1036, 4), dict(window_size=(1030, 2), end_padding=(1, 0))),
]


@functools.lru_cache(maxsize=None)
def _box_case(i, policy):
    """Case i's inputs (NaN scattered and in a whole row and column; then also +-inf) and
    their float64 references, computed once for every kernel path."""
    layout, shape, kw = BOX_CASES[i]
    rng = np.random.default_rng(i)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.01] = np.nan
    h, w = (2, 3) if layout == "NCHW" else (1, 2)
    x[(slice(None),) * h + (shape[h] // 3,)] = np.nan
    x[(slice(None),) * w + (shape[w] // 2,)] = np.nan
    with_inf = x.copy()
    with_inf[rng.random(shape) < 0.003] = np.inf
    with_inf[rng.random(shape) < 0.003] = -np.inf
    args = dict(kw)
    window = args.pop("window_size")
    return [(data, _refs(ref_average_pool, data, window, layout=layout, nan_policy=policy,
                         min_count=3, **args)) for data in (x, with_inf)]


@pytest.mark.parametrize("policy", ["propagate", "omit"])
@pytest.mark.parametrize("i", range(len(BOX_CASES)), ids=[f"box{i}" for i in range(len(BOX_CASES))])
def test_box_path_counts_nan_and_inf(i, policy, isa):
    """NaN and +-inf on the box path, each policy, against the float64 reference: NaN, +-inf
    and values where the reference has them."""
    layout, shape, kw = BOX_CASES[i]
    desc = avgpool.AveragePoolingDesc(**kw, nan_policy=policy, min_count=3)
    if isa != "scalar":
        assert "box" in avgpool.explain(desc, shape, layout=layout)
    for data, (ref, ref_abs) in _box_case(i, policy):
        y = avgpool.average_pool(data, desc, layout=layout)
        assert np.array_equal(np.isnan(y), np.isnan(ref))
        _assert_omit(y, ref, ref_abs, data.dtype)


def test_omit_by_hand():
    nan = np.nan
    x = np.array([1, nan, 3, nan, nan, 6], np.float32).reshape(1, 1, 6)
    k3 = avgpool.AveragePoolingDesc((3,), start_padding=(1,), end_padding=(1,),
                                    include_padding=True, nan_policy="omit")
    # padding counts, NaN does not: 1/2, 4/2, 3/1, 3/1, 6/1, 6/2
    assert_same(avgpool.average_pool(x, k3)[0, 0], np.array([0.5, 2, 3, 3, 6, 3], np.float32))
    assert np.isnan(avgpool.average_pool(x, avgpool.AveragePoolingDesc((3,)))).all()
    # inf is a value: inf and -inf in one window give NaN, a lone inf gives inf
    z = np.array([np.inf, nan, -np.inf, 2], np.float32).reshape(1, 1, 4)
    y2 = avgpool.average_pool(z, avgpool.AveragePoolingDesc((2,), nan_policy="omit"))[0, 0]
    assert_same(y2, np.array([np.inf, -np.inf, -np.inf], np.float32))
    y3 = avgpool.average_pool(z, avgpool.AveragePoolingDesc((3,), nan_policy="omit"))[0, 0]
    assert np.isnan(y3[0]) and y3[1] == -np.inf


def test_front_ends_propagate():
    x = np.ones((1, 1, 4, 4), np.float32)
    x[0, 0, 0, 0] = np.nan
    import avgpool.functional as F

    assert np.isnan(F.avg_pool2d(x, 2)[0, 0, 0, 0])
    assert np.isnan(avgpool.average_pool(x, avgpool.AveragePoolingDesc((2, 2), (2, 2)))[0, 0, 0, 0])


def test_nan_fields_validated_and_pickled():
    import pickle

    d = avgpool.AveragePoolingDesc((2, 2), nan_policy="Omit", min_count=3)
    assert d.nan_policy == "omit" and d.min_count == 3
    assert pickle.loads(pickle.dumps(d)) == d
    assert d != avgpool.AveragePoolingDesc((2, 2))
    with pytest.raises(ValueError, match="nan_policy must be 'propagate' or 'omit'"):
        avgpool.AveragePoolingDesc((2, 2), nan_policy="ignore")
    with pytest.raises(ValueError, match="min_count must be >= 0"):
        avgpool.AdaptiveAveragePoolingDesc((2, 2), nan_policy="omit", min_count=-1)
    with pytest.raises(TypeError, match="min_count must be an integer"):
        avgpool.AdaptiveAveragePoolingDesc((2, 2), min_count=True)
    # the gradient of an omitting mean depends on where the NaN are: no backward pass
    with pytest.raises(ValueError, match="nan_policy: .*backward passes propagate only"):
        avgpool.average_pool_backward(np.ones((1, 1, 3, 3), np.float32), d, (1, 1, 4, 4))


# csrc/nan_omit.c's work items: one group of planes; several groups (of 128 Ki input elements);
# bands of 32 output rows of planes past 128 Ki elements
@pytest.mark.parametrize("nchw_shape", [(2, 5, 64, 70), (4, 40, 64, 70), (2, 3, 420, 330)],
                         ids=["one-group", "groups", "bands"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_omit_threads_identical(layout, nchw_shape):
    n, c, h, w = nchw_shape
    shape = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    x = make_data(11, shape, BFLOAT16)
    x[make_data(12, shape, FLOAT32) > 1.0] = np.nan
    desc = avgpool.AveragePoolingDesc((5, 5), strides=(2, 1), start_padding=(2, 2),
                                      end_padding=(2, 2), nan_policy="omit", min_count=2)
    one = avgpool.average_pool(x, desc, layout=layout, num_threads=1)
    assert_same(avgpool.average_pool(x, desc, layout=layout, num_threads=2), one)


@pytest.mark.parametrize("layout,shape", [("NCHW", (1, 1, 2100, 2050)), ("NHWC", (1, 1200, 1200, 3))])
def test_omit_large_plane_in_bands(layout, shape):
    """A plane of more than 128 Ki elements goes through csrc/nan_omit.c in bands of 32 output
    rows (scratch memory that stays in cache): against the scalar float64 kernels (the oracle;
    every instruction set runs float64 on them), with the float32 tolerance; and a tile starting
    on a multiple of 16 rows (here inside a band) gives the whole call's bits, as does one
    starting anywhere for the 2 x 2 windows (no running sums, whose restarts fall every 16
    outputs)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.05] = np.nan
    for kw in (dict(window_size=(15, 15), start_padding=(7, 7), end_padding=(7, 7),
                    include_padding=True),
               dict(window_size=(2, 2), strides=(2, 2), end_padding=(1, 1))):
        desc = avgpool.AveragePoolingDesc(**kw, nan_policy="omit", min_count=2)
        y = avgpool.average_pool(x, desc, layout=layout)
        ref = avgpool.average_pool(x.astype(np.float64), desc, layout=layout)
        ref_abs = avgpool.average_pool(np.abs(x).astype(np.float64), desc, layout=layout)
        assert_matches(y, ref, ref_abs, FLOAT32)
        for start in (272,) if kw["window_size"] == (15, 15) else (272, 283):
            box = [slice(start, 560), slice(0, y.shape[3] if layout == "NCHW" else y.shape[2])]
            region = avgpool.tile_input_region(desc, x.shape, box, layout=layout)
            index = (slice(None), slice(None)) + region if layout == "NCHW" else (
                (slice(None),) + region + (slice(None),))
            tile = avgpool.pool_tile(np.ascontiguousarray(x[index]), desc, x.shape, box,
                                     layout=layout)
            out_index = (slice(None), slice(None)) + tuple(box) if layout == "NCHW" else (
                (slice(None),) + tuple(box) + (slice(None),))
            assert_same(tile, y[out_index])


def test_omit_divisor_past_float32_exact_integers():
    """A window of more than 2^24 positions: its divisor minus the NaN count is an odd number no
    float32 holds, so the float32 divide pass (exact up to 2^24) must leave it to the double path,
    which rounds divisor - m once: 3 ones among zeros, 2 NaN, global mean = 3 / f32(4097^2 - 2)."""
    x = np.zeros((1, 1, 4097, 4097), np.float32)
    x[0, 0, 5, 7] = x[0, 0, 4000, 1] = x[0, 0, 17, 4096] = 1.0
    x[0, 0, 9, 9] = x[0, 0, 4096, 4096] = np.nan
    divisor = 4097 * 4097 - 2
    assert divisor > 2**24 and float(np.float32(divisor)) != divisor
    desc = avgpool.AdaptiveAveragePoolingDesc((1, 1), nan_policy="omit")
    y = avgpool.adaptive_average_pool(x, desc)
    expected = np.float32(3.0) / np.float32(divisor)
    assert y.shape == (1, 1, 1, 1)
    assert y[0, 0, 0, 0] == expected, (y[0, 0, 0, 0], expected)
