"""average_pool and adaptive_average_pool against the float64 brute-force reference."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import avgpool
from reference import ref_adaptive_average_pool, ref_average_pool
from strategies import (
    BFLOAT16,
    DTYPE_IDS,
    DTYPES,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    LAYOUTS,
    adaptive_cases,
    assert_matches,
    assert_same,
    make_data,
    make_desc_kwargs,
    pool_cases,
    reference_adaptive,
    reference_pool,
    scaled,
    to_layout,
    to_nchw,
    unaligned_empty,
)


def _pool(x, kwargs, layout, **call):
    desc = avgpool.AveragePoolingDesc(**kwargs)
    return avgpool.average_pool(x, desc, layout=layout, **call)


# --------------------------------------------------------------------------------------------
# The reference itself, on a few values computed by hand (so a bug in it cannot hide one in
# the library).


def test_reference_by_hand():
    x = np.arange(1.0, 7.0).reshape(1, 1, 6)
    # k 2, s 1, pads 1/1: windows {-1,0},{0,1},...,{5,6}
    np.testing.assert_array_equal(
        ref_average_pool(x, (2,), (1,), (1,), (1,), (1,), False)[0, 0],
        [1, 1.5, 2.5, 3.5, 4.5, 5.5, 6])
    np.testing.assert_array_equal(
        ref_average_pool(x, (2,), (1,), (1,), (1,), (1,), True)[0, 0],
        [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 3])
    # dilation 2, pads 1, include pad (docs/semantics.md 3b): [1, 2, 3, 4, 5, 2.5]
    np.testing.assert_array_equal(
        ref_average_pool(x, (2,), (1,), (1,), (1,), (2,), True)[0, 0], [1, 2, 3, 4, 5, 2.5])
    # in 6, k 3, s 3, p 1, three outputs (ceil), include pad: overhang counted or not
    np.testing.assert_array_equal(
        ref_average_pool(x, (3,), (3,), (1,), (1,), (1,), True, output_sizes=(3,))[0, 0],
        [1, 4, 3])
    np.testing.assert_array_equal(
        ref_average_pool(x, (3,), (3,), (1,), (1,), (1,), True, output_sizes=(3,),
                         count_overhang=True)[0, 0],
        [1, 4, 2])
    # empty window: in 2, k 2, s 2, pads [3, 0], exclude pad
    y = ref_average_pool(np.array([[[1.0, 2.0]]]), (2,), (2,), (3,), (0,), (1,), False)[0, 0]
    assert np.isnan(y[0]) and y[1] == 1
    np.testing.assert_array_equal(
        ref_adaptive_average_pool(np.arange(10.0).reshape(1, 1, 10), (3,))[0, 0], [1.5, 4.5, 7.5])
    # layouts
    x2 = np.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    a = ref_average_pool(x2, (2, 3), (1, 2), (1, 0), (0, 1), (1, 1), True)
    b = ref_average_pool(to_layout(x2, "NHWC"), (2, 3), (1, 2), (1, 0), (0, 1), (1, 1), True,
                         layout="NHWC")
    np.testing.assert_array_equal(a, to_nchw(b, "NHWC"))


# --------------------------------------------------------------------------------------------
# Properties against the reference


@given(pool_cases())
def test_average_pool_matches_reference(case):
    x, kwargs, layout = case
    before = x.copy()
    desc = avgpool.AveragePoolingDesc(**kwargs)
    y = avgpool.average_pool(x, desc, layout=layout)
    ref, ref_abs = reference_pool(x, kwargs, layout)
    assert type(y) is np.ndarray
    assert y.shape == desc.output_shape(x.shape, layout) == ref.shape
    assert_matches(y, ref, ref_abs, x.dtype)
    assert np.array_equal(x.view(np.uint8), before.view(np.uint8)), "input was modified"


@given(adaptive_cases())
def test_adaptive_matches_reference(case):
    x, outs, layout = case
    before = x.copy()
    y = avgpool.adaptive_average_pool(x, outs, layout=layout)
    ref, ref_abs = reference_adaptive(x, outs, layout)
    desc = avgpool.AdaptiveAveragePoolingDesc(outs)
    assert y.shape == desc.output_shape(x.shape, layout) == ref.shape
    assert_matches(y, ref, ref_abs, x.dtype)
    y2 = avgpool.adaptive_average_pool(x, desc, layout=layout)
    assert_same(y, y2)
    assert np.array_equal(x.view(np.uint8), before.view(np.uint8)), "input was modified"


@given(pool_cases(layouts=("NCHW",)))
def test_layouts_agree(case):
    x, kwargs, _ = case
    y_first = _pool(x, kwargs, "NCHW")
    y_last = _pool(to_layout(x, "NHWC"), kwargs, "NHWC")
    y_last = to_nchw(y_last, "NHWC")
    if x.dtype in (FLOAT16, BFLOAT16):
        # window sums of the test data are exact in float32: no room for a difference
        assert_same(y_first, y_last)
    else:
        ref, ref_abs = reference_pool(x, kwargs, "NCHW")
        assert_matches(y_last, y_first.astype(np.float64), ref_abs, x.dtype)


@given(adaptive_cases(layouts=("NCHW",)))
def test_adaptive_layouts_agree(case):
    x, outs, _ = case
    y_first = avgpool.adaptive_average_pool(x, outs, layout="NCHW")
    y_last = to_nchw(avgpool.adaptive_average_pool(to_layout(x, "NHWC"), outs, layout="NHWC"),
                     "NHWC")
    if x.dtype in (FLOAT16, BFLOAT16):
        assert_same(y_first, y_last)
    else:
        _, ref_abs = reference_adaptive(x, outs, "NCHW")
        assert_matches(y_last, y_first.astype(np.float64), ref_abs, x.dtype)


def _non_contiguous(x, how):
    """A view of ``x``'s values that is not C-contiguous (or a copy in another memory order)."""
    if how == "fortran":
        return np.asfortranarray(x)
    if how == "strided":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    if how == "reversed":
        return np.ascontiguousarray(x[:, ::-1])[:, ::-1]
    if how == "transposed":
        # x as a transposed view of a buffer with N and C swapped
        return np.ascontiguousarray(np.swapaxes(x, 0, 1)).swapaxes(0, 1)
    if how == "sliced":
        big = np.zeros((x.shape[0] + 1, x.shape[1] + 2) + x.shape[2:], dtype=x.dtype)
        big[1:, 1:-1] = x
        return big[1:, 1:-1]
    raise ValueError(how)


@scaled(0.3)
@given(pool_cases(), st.sampled_from(["fortran", "strided", "reversed", "transposed", "sliced"]))
def test_non_contiguous_input(case, how):
    x, kwargs, layout = case
    v = _non_contiguous(x, how)  # (degenerate shapes may still be contiguous: harmless)
    np.testing.assert_array_equal(v.astype(np.float64), x.astype(np.float64))
    before = v.copy()
    y = _pool(v, kwargs, layout)
    assert_same(y, _pool(x, kwargs, layout))
    ref, ref_abs = reference_pool(x, kwargs, layout)
    assert_matches(y, ref, ref_abs, x.dtype)
    np.testing.assert_array_equal(v.astype(np.float64), before.astype(np.float64))


@pytest.mark.parametrize("how", ["fortran", "strided", "reversed", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_non_contiguous_input_fixed(how, dtype):
    x = make_data(7, (2, 3, 5, 6), dtype)
    v = _non_contiguous(x, how)
    assert not v.flags.c_contiguous
    kwargs = dict(window_size=(3, 2), strides=(2, 1), start_padding=(1, 0), end_padding=(1, 1),
                  include_padding=True)
    y = _pool(v, kwargs, "NCHW")
    ref, ref_abs = reference_pool(x, kwargs, "NCHW")
    assert_matches(y, ref, ref_abs, dtype)
    ya = avgpool.adaptive_average_pool(v, (3, 4))
    ref, ref_abs = reference_adaptive(x, (3, 4), "NCHW")
    assert_matches(ya, ref, ref_abs, dtype)


def _unaligned_copy(x):
    """x's values in an array whose data starts one byte past its dtype's alignment."""
    u = unaligned_empty(x.shape, x.dtype)
    u[...] = x
    return u


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_unaligned_input_is_copied(dtype):
    """The C core takes elements at their alignment (AP_ERR_ALIGNMENT otherwise): an unaligned
    input is copied, like a non-contiguous one, and gives the aligned input's bits."""
    x = make_data(8, (2, 3, 7, 6), dtype)
    u = _unaligned_copy(x)
    before = u.copy()
    desc = avgpool.AveragePoolingDesc((3, 2), (2, 1), (1, 0), (1, 1))
    assert_same(avgpool.average_pool(u, desc), avgpool.average_pool(x, desc))
    assert_same(avgpool.adaptive_average_pool(u, (3, 4)), avgpool.adaptive_average_pool(x, (3, 4)))
    gy = make_data(9, desc.output_shape(x.shape), dtype)
    assert_same(avgpool.average_pool_backward(_unaligned_copy(gy), desc, x.shape),
                avgpool.average_pool_backward(gy, desc, x.shape))
    op = avgpool.compile_operator(desc, x.shape, dtype)
    assert_same(op(u), op(x))
    region = [slice(0, n) for n in desc.output_shape(x.shape)[2:]]
    assert_same(avgpool.pool_tile(u, desc, x.shape, region),
                avgpool.pool_tile(x, desc, x.shape, region))
    np.testing.assert_array_equal(u.view(np.uint8), before.view(np.uint8))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_out_in_place(dtype, layout):
    x = to_layout(make_data(3, (2, 3, 7, 5), dtype), layout)
    desc = avgpool.AveragePoolingDesc((3, 2), strides=(2, 1), start_padding=(1, 1),
                                      end_padding=(1, 0))
    expected = avgpool.average_pool(x, desc, layout=layout)
    out = np.full(desc.output_shape(x.shape, layout), np.nan, dtype=dtype)
    got = avgpool.average_pool(x, desc, layout=layout, out=out)
    assert got is out
    assert_same(out, expected)

    expected = avgpool.adaptive_average_pool(x, (4, 2), layout=layout)
    out = np.full(expected.shape, np.nan, dtype=dtype)
    got = avgpool.adaptive_average_pool(x, (4, 2), layout=layout, out=out)
    assert got is out
    assert_same(out, expected)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_zero_batch_and_channels(rank, dtype, layout):
    desc = avgpool.AveragePoolingDesc((2,) * rank, strides=(2,) * rank)
    spatial = (4,) * rank
    for n, c in [(0, 3), (2, 0), (0, 0)]:
        shape = (n, c) + spatial if layout == "NCHW" else (n,) + spatial + (c,)
        x = np.zeros(shape, dtype=dtype)
        y = avgpool.average_pool(x, desc, layout=layout)
        out_spatial = (2,) * rank
        want = (n, c) + out_spatial if layout == "NCHW" else (n,) + out_spatial + (c,)
        assert y.shape == want and y.dtype == dtype
        assert desc.output_shape(shape, layout) == want
        ya = avgpool.adaptive_average_pool(x, (3,) * rank, layout=layout)
        want = (n, c) + (3,) * rank if layout == "NCHW" else (n,) + (3,) * rank + (c,)
        assert ya.shape == want and ya.dtype == dtype
        out = np.empty(want, dtype=dtype)
        assert avgpool.adaptive_average_pool(x, (3,) * rank, layout=layout, out=out) is out


THREAD_DESCS = [
    dict(window_size=(3, 3), strides=(2, 1), start_padding=(1, 1), end_padding=(1, 1),
         dilations=(1, 2)),
    dict(window_size=(2, 2), strides=(2, 2)),
    dict(window_size=(3, 4), strides=(3, 3), start_padding=(0, 2), end_padding=(2, 1),
         include_padding=True),
    dict(window_size=(48, 48)),  # global
]


@pytest.mark.parametrize("kwargs", THREAD_DESCS, ids=["s1", "s2", "s3", "global"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_num_threads_identical(dtype, layout, kwargs):
    # large enough (> 2 * 16384 input elements) that two threads really split the work
    x = to_layout(make_data(11, (2, 8, 48, 48), dtype), layout)
    desc = avgpool.AveragePoolingDesc(**kwargs)
    y1 = avgpool.average_pool(x, desc, layout=layout, num_threads=1)
    y2 = avgpool.average_pool(x, desc, layout=layout, num_threads=2)
    y0 = avgpool.average_pool(x, desc, layout=layout)
    assert_same(y1, y2)
    assert_same(y1, y0)
    if dtype == FLOAT64:
        ref, ref_abs = reference_pool(x, kwargs, layout)
        assert_matches(y2, ref, ref_abs, dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_num_threads_identical_adaptive(dtype, layout):
    x = to_layout(make_data(11, (2, 8, 48, 48), dtype), layout)
    for outs in [(7, 5), (24, 16), (1, 1)]:
        a1 = avgpool.adaptive_average_pool(x, outs, layout=layout, num_threads=1)
        a2 = avgpool.adaptive_average_pool(x, outs, layout=layout, num_threads=2)
        assert_same(a1, a2)


def test_num_threads_env(monkeypatch):
    x = make_data(5, (2, 8, 48, 48), FLOAT32)
    desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
    y = avgpool.average_pool(x, desc, num_threads=1)
    monkeypatch.setenv("AVGPOOL_NUM_THREADS", "2")
    assert_same(avgpool.average_pool(x, desc), y)


@pytest.mark.parametrize("dtype_name", ["float32", "float64", "float16", "bfloat16"])
def test_torch_tensor(dtype_name):
    torch = pytest.importorskip("torch")
    tdtype = getattr(torch, dtype_name)
    npdtype = dict(zip(DTYPE_IDS, DTYPES))[dtype_name]
    x_np = make_data(13, (2, 3, 6, 5), npdtype)
    t = torch.tensor(x_np.astype(np.float64), dtype=tdtype)
    t_before = t.clone()
    desc = avgpool.AveragePoolingDesc((2, 3), strides=(2, 1), start_padding=(0, 1),
                                      end_padding=(1, 1))
    y = avgpool.average_pool(t, desc)
    assert isinstance(y, torch.Tensor)
    assert y.dtype == tdtype and tuple(y.shape) == desc.output_shape(x_np.shape)
    assert torch.equal(t, t_before)
    want = avgpool.average_pool(x_np, desc)
    np.testing.assert_array_equal(y.to(torch.float64).numpy(), want.astype(np.float64))
    # a non-contiguous (channels_last) tensor
    tc = t.contiguous(memory_format=torch.channels_last)
    assert not tc.is_contiguous()
    yc = avgpool.average_pool(tc, desc)
    assert isinstance(yc, torch.Tensor)
    np.testing.assert_array_equal(yc.to(torch.float64).numpy(), want.astype(np.float64))
    ya = avgpool.adaptive_average_pool(t, (4, 2))
    assert isinstance(ya, torch.Tensor) and ya.dtype == tdtype
    np.testing.assert_array_equal(
        ya.to(torch.float64).numpy(),
        avgpool.adaptive_average_pool(x_np, (4, 2)).astype(np.float64))


def test_array_like_input():
    class ArrayLike:
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    x = make_data(1, (1, 2, 4, 4), FLOAT32)
    desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
    assert_same(avgpool.average_pool(ArrayLike(x), desc), avgpool.average_pool(x, desc))


def test_descriptor_is_frozen_and_hashable():
    d = avgpool.AveragePoolingDesc([2, 2], strides=[1, 2])
    assert d.window_size == (2, 2) and d.strides == (1, 2)
    assert d == avgpool.AveragePoolingDesc((2, 2), strides=(1, 2))
    assert hash(d) == hash(avgpool.AveragePoolingDesc((2, 2), strides=(1, 2)))
    with pytest.raises(Exception):
        d.window_size = (3, 3)
    a = avgpool.AdaptiveAveragePoolingDesc([3])
    assert a.output_sizes == (3,) and a.rank == 1


def test_descriptors_pickle():
    """A pickled descriptor comes back equal and working (dask.distributed ships them to worker
    processes); unpickling validates the fields again."""
    x = make_data(3, (2, 3, 9, 10), FLOAT32)
    descs = [
        avgpool.AveragePoolingDesc((3, 2), strides=(2, 1), start_padding=(1, 0),
                                   end_padding=(1, 1), dilations=(1, 2), include_padding=True,
                                   divisor_override=-4),
        avgpool.AveragePoolingDesc((2, 2), strides=(2, 2), output_sizes=(5, 5),
                                   count_overhang=True),
        avgpool.AdaptiveAveragePoolingDesc((4, 3)),
    ]
    for desc in descs:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(desc, protocol))
            assert type(back) is type(desc) and back == desc and hash(back) == hash(desc)
            assert repr(back) == repr(desc)
            if isinstance(desc, avgpool.AdaptiveAveragePoolingDesc):
                assert_same(avgpool.adaptive_average_pool(x, back),
                            avgpool.adaptive_average_pool(x, desc))
            else:
                assert_same(avgpool.average_pool(x, back), avgpool.average_pool(x, desc))
    # unpickling calls the class on the public fields, so a tampered field is validated
    cls, args = descs[0].__reduce__()
    assert cls is avgpool.AveragePoolingDesc and args[0] == (3, 2)
    with pytest.raises(ValueError, match="window_size"):
        cls((0, 2), *args[1:])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_numpy_integer_attributes(dtype):
    d = avgpool.AveragePoolingDesc((np.int64(2), np.int32(2)), strides=(np.int16(2), 2),
                                   divisor_override=np.int64(3))
    x = make_data(2, (1, 1, 4, 4), dtype)
    y = avgpool.average_pool(x, d)
    ref, ref_abs = reference_pool(x, dict(window_size=(2, 2), strides=(2, 2),
                                          divisor_override=3), "NCHW")
    assert_matches(y, ref, ref_abs, dtype)


@st.composite
def wide_cases(draw):
    """Long rows (up to 70), tall windows (up to 6 rows) or many channels (up to 140): the vector
    widths, row tails, row groups and channel blocks of optimised kernels."""
    rank = draw(st.integers(1, 3))
    layout = draw(st.sampled_from(LAYOUTS))
    dtype = draw(st.sampled_from(DTYPES))
    if draw(st.booleans()):
        lead = (2, 7, 4)[rank - 1]  # sizes of the leading spatial axes
        ins = tuple(draw(st.integers(1, lead)) for _ in range(rank - 1))
        ins += (draw(st.integers(1, 70)),)
        c = draw(st.integers(1, 3))
    else:
        ins = tuple(draw(st.integers(1, 5)) for _ in range(rank))
        c = draw(st.integers(1, 140))
    kwargs = make_desc_kwargs(draw, rank, ins, max_window=(6, 6, 3)[rank - 1])
    seed = draw(st.integers(0, 2**32 - 1))
    x = to_layout(make_data(seed, (1, c) + ins, dtype), layout)
    return x, kwargs, layout


@scaled(0.4)
@given(wide_cases())
def test_wide_rows_and_many_channels(case):
    x, kwargs, layout = case
    y = _pool(x, kwargs, layout)
    ref, ref_abs = reference_pool(x, kwargs, layout)
    assert_matches(y, ref, ref_abs, x.dtype)


@scaled(0.3)
@given(st.integers(1, 3), st.integers(1, 40), st.integers(1, 12), st.sampled_from(DTYPES),
       st.sampled_from(LAYOUTS), st.integers(0, 2**32 - 1))
def test_adaptive_wide(rank, n_in, n_out, dtype, layout, seed):
    # long last axis, both divisible (uniform windows) and not
    ins = (3,) * (rank - 1) + (n_in,)
    outs = (2,) * (rank - 1) + (n_out,)
    x = to_layout(make_data(seed, (1, 2) + ins, dtype), layout)
    y = avgpool.adaptive_average_pool(x, outs, layout=layout)
    ref, ref_abs = reference_adaptive(x, outs, layout)
    assert_matches(y, ref, ref_abs, dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_many_channels(dtype, layout):
    # channels-last kernels work on blocks of channels: 130 = 2 blocks of 64 + 2
    x = to_layout(make_data(17, (2, 130, 5, 4), dtype), layout)
    kwargs = dict(window_size=(3, 2), strides=(1, 2), start_padding=(1, 1), end_padding=(1, 0),
                  include_padding=True)
    y = _pool(x, kwargs, layout)
    ref, ref_abs = reference_pool(x, kwargs, layout)
    assert_matches(y, ref, ref_abs, dtype)
    ya = avgpool.adaptive_average_pool(x, (3, 5), layout=layout)
    ref, ref_abs = reference_adaptive(x, (3, 5), layout)
    assert_matches(ya, ref, ref_abs, dtype)


def test_read_only_input():
    x = make_data(4, (1, 2, 6, 6), FLOAT32)
    x.flags.writeable = False
    kwargs = dict(window_size=(2, 3), strides=(2, 3))
    y = _pool(x, kwargs, "NCHW")
    ref, ref_abs = reference_pool(x, kwargs, "NCHW")
    assert_matches(y, ref, ref_abs, FLOAT32)
    assert_matches(avgpool.adaptive_average_pool(x, (2, 2)),
                   *reference_adaptive(x, (2, 2), "NCHW"), FLOAT32)


def test_more_threads_than_work():
    x = make_data(9, (3, 5, 7, 7), FLOAT64)
    kwargs = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    ys = [_pool(x, kwargs, "NCHW", num_threads=n) for n in (1, 3, 64, 65536)]
    for y in ys[1:]:
        assert_same(ys[0], y)


@scaled(0.5)
@given(st.one_of(pool_cases(), wide_cases()), st.integers(1, 40))
def test_out_writes_nothing_outside(case, guard):
    # out is a window into a larger buffer filled with a marker: the kernels must write every
    # element of out and nothing before or after it (masked tails, vector stores)
    x, kwargs, layout = case
    desc = avgpool.AveragePoolingDesc(**kwargs)
    shape = desc.output_shape(x.shape, layout)
    size = int(np.prod(shape))
    marker = np.array(-12345.0).astype(x.dtype)
    buf = np.full(size + 2 * guard, marker, dtype=x.dtype)
    out = buf[guard:guard + size].reshape(shape)
    assert out.flags.c_contiguous
    got = avgpool.average_pool(x, desc, layout=layout, out=out)
    assert got is out
    assert_same(out, avgpool.average_pool(x, desc, layout=layout))
    assert (buf[:guard] == marker).all() and (buf[guard + size:] == marker).all()


@scaled(0.25)
@given(adaptive_cases(), st.integers(1, 40))
def test_adaptive_out_writes_nothing_outside(case, guard):
    x, outs, layout = case
    shape = avgpool.AdaptiveAveragePoolingDesc(outs).output_shape(x.shape, layout)
    size = int(np.prod(shape))
    marker = np.array(-12345.0).astype(x.dtype)
    buf = np.full(size + 2 * guard, marker, dtype=x.dtype)
    out = buf[guard:guard + size].reshape(shape)
    assert avgpool.adaptive_average_pool(x, outs, layout=layout, out=out) is out
    assert_same(out, avgpool.adaptive_average_pool(x, outs, layout=layout))
    assert (buf[:guard] == marker).all() and (buf[guard + size:] == marker).all()


@given(st.integers(1, 3), st.integers(0, 3), st.integers(1, 70), st.data(),
       st.sampled_from(DTYPES), st.sampled_from(LAYOUTS), st.integers(1, 3))
def test_relayout_is_the_transpose(rank, n, c, data, dtype, layout, threads):
    """ap_relayout (avgpool.torch's result conversion) against numpy's transpose: every
    element in its place, for every element width, sizes around its 16-row tiles, threads."""
    from avgpool import _core

    spatial = tuple(data.draw(st.integers(1, 40 if rank == 1 else 12)) for _ in range(rank))
    x_nchw = make_data(rank * 100 + c, (n, c) + spatial, dtype)
    x = to_layout(x_nchw, layout)
    y = _core.relayout(x, layout, None, threads)
    want = to_layout(x_nchw, "NHWC") if layout == "NCHW" else np.ascontiguousarray(x_nchw)
    assert y.dtype == x.dtype and y.shape == want.shape and y.tobytes() == want.tobytes()
    out = np.full_like(want, 7)
    assert _core.relayout(x, layout, out, threads) is out and out.tobytes() == want.tobytes()


def test_relayout_errors():
    from avgpool import _core

    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="3 to 5 axes"):
        _core.relayout(np.zeros((2, 3), np.float32), "NCHW", None, None)
    with pytest.raises(TypeError, match="dtype int32 is not supported"):
        _core.relayout(x.astype(np.int32), "NCHW", None, None)
    with pytest.raises(ValueError, match="out has shape"):
        _core.relayout(x, "NCHW", np.zeros((2, 3, 4), np.float32), None)
    with pytest.raises(ValueError, match="out must not overlap"):
        _core.relayout(x.reshape(2, 4, 3), "NHWC", x.reshape(2, 3, 4), None)
    with pytest.raises(ValueError, match="layout must be"):
        _core.relayout(x, "CHW", None, None)
