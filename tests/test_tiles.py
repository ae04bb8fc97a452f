"""Tiles of a larger array: avgpool.tile_input_region and avgpool.pool_tile (ap_avgpool_tile).

Pooling every tile of a partition of the output must give the whole call's result bit for bit
(docs/semantics.md "Tiles"): a tile runs the whole call's kernel path, and its sums follow the
whole array's positions. One exception is allowed and named: sums carried in float32 from
output to output (the channels-last separable sums along W, the vertical running sums of tall
channels-first windows) restart every 16 outputs of the whole array, so a tile that does not
start on such outputs may differ there by rounding; those tiles are held to the float64
reference (the partitions here start on multiples of 16 half of the time, and then must be
bitwise; avgpool.dask always does). The input regions are checked against a brute force over
the windows' taps written from the definition.
"""

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import avgpool
from strategies import (
    FLOAT32,
    adaptive_cases,
    assert_matches,
    assert_same,
    make_data,
    pool_cases,
    reference_adaptive,
    reference_pool,
    split_bounds,
)


def _spatial(shape, layout):
    return shape[2:] if layout == "NCHW" else shape[1:-1]


def _index(region, layout):
    """Index of a spatial region (slices) in an array of this layout."""
    return (slice(None), slice(None)) + tuple(region) if layout == "NCHW" else (
        (slice(None),) + tuple(region) + (slice(None),))


# Paths whose float32 sums carry from output to output and restart every 16 outputs.
CARRIED = ("nhwc-separable", "rows-s1", "rows-s2", "rows-s4k4", "rows-running", "rows-gather")


def _partition(draw, sizes):
    """Random cut points per axis: the tiles of a partition of the output; half of the time they
    fall on multiples of 16."""
    anchor = 16 if draw(st.booleans()) else 1
    per_axis = []
    for n in sizes:
        bounds = split_bounds(draw, n, anchor)
        per_axis.append([slice(a, b) for a, b in zip(bounds, bounds[1:])])
    return per_axis


def _carries(desc, x, layout):
    """Whether the whole call's path carries float32 sums from output to output."""
    line = avgpool.explain(desc, x.shape, layout=layout, dtype=x.dtype)
    path = line.split(": ", 1)[1].split(" (", 1)[0]
    return path == "nhwc-separable" and "sliding" in line or (
        path in CARRIED and "vertical: running" in line)


def _ref_region(kwargs, ins, region):
    """Input region of the outputs in region, from the definition: every tap o * s - pb + j * d
    inside the input, of every output o of the region (one position near the windows when they
    hold only padding)."""
    rank = len(ins)
    s = kwargs.get("strides") or (1,) * rank
    d = kwargs.get("dilations") or (1,) * rank
    pb = kwargs.get("start_padding") or (0,) * rank
    out = []
    for a in range(rank):
        taps = [o * s[a] - pb[a] + j * d[a] for o in range(region[a].start, region[a].stop)
                for j in range(kwargs["window_size"][a])]
        valid = [p for p in taps if 0 <= p < ins[a]]
        if valid:
            out.append(slice(min(valid), max(valid) + 1))
        else:
            lo = min(max(region[a].start * s[a] - pb[a], 0), ins[a] - 1)
            out.append(slice(lo, lo + 1))
    return tuple(out)


def _ref_region_adaptive(outs, ins, region):
    return tuple(slice(r.start * n // o, -(-(r.stop * n) // o)) for r, n, o in zip(region, ins, outs))


def _pool_by_tiles(x, desc, parts, whole, layout):
    """The whole result assembled from pool_tile over every box of the partition (parts: the
    output slices per spatial axis), each tile cut from x by tile_input_region and left
    unchanged by the call."""
    got = np.full_like(whole, np.nan)
    for box in itertools.product(*parts):
        region = avgpool.tile_input_region(desc, x.shape, box, layout=layout)
        tile = np.ascontiguousarray(x[_index(region, layout)])
        before = tile.copy()
        got[_index(box, layout)] = avgpool.pool_tile(tile, desc, x.shape, box, layout=layout)
        assert_same(tile, before)
    return got


def _check_tiles(x, desc, layout, whole, ref, ref_abs, draw_partition):
    """Pool each tile of the partition; compare with the whole call (bitwise, but for the named
    exception) and with the reference."""
    got = _pool_by_tiles(x, desc, draw_partition, whole, layout)
    starts = {r.start for axis in draw_partition for r in axis}
    exact = not _carries(desc, x, layout) or all(a % 16 == 0 for a in starts)
    if exact:
        assert_same(got, whole)
    assert_matches(got, ref, ref_abs, x.dtype)


@given(pool_cases(), st.data())
def test_tiles_give_the_whole_result(case, data):
    x, kwargs, layout = case
    if data.draw(st.booleans()):  # NaN-aware: NaN at a third of the positions
        kwargs = dict(kwargs, nan_policy="omit", min_count=data.draw(st.integers(0, 3)))
        x = x.copy()
        x[np.random.default_rng(data.draw(st.integers(0, 2**31))).random(x.shape) < 0.3] = np.nan
    desc = avgpool.AveragePoolingDesc(**kwargs)
    whole = avgpool.average_pool(x, desc, layout=layout)
    parts = _partition(data.draw, _spatial(whole.shape, layout))
    ins = _spatial(x.shape, layout)
    for axis_parts, axis in zip(parts, range(len(parts))):
        for r in axis_parts:
            box = tuple(r if a == axis else slice(0, 1) for a in range(len(parts)))
            region = avgpool.tile_input_region(desc, x.shape, box, layout=layout)
            assert region[axis] == _ref_region(kwargs, ins, box)[axis]
    ref, ref_abs = reference_pool(x, kwargs, layout)
    _check_tiles(x, desc, layout, whole, ref, ref_abs, parts)


@given(adaptive_cases(), st.data())
def test_adaptive_tiles_give_the_whole_result(case, data):
    x, outs, layout = case
    desc = avgpool.AdaptiveAveragePoolingDesc(outs)
    whole = avgpool.adaptive_average_pool(x, desc, layout=layout)
    parts = _partition(data.draw, outs)
    ins = _spatial(x.shape, layout)
    box = tuple(p[-1] for p in parts)
    assert (avgpool.tile_input_region(outs, x.shape, box, layout=layout)
            == _ref_region_adaptive(outs, ins, box))
    ref, ref_abs = reference_adaptive(x, outs, layout)
    _check_tiles(x, desc, layout, whole, ref, ref_abs, parts)


# The paths that carry sums from output to output, on shapes large enough for their restarts
# (box bands of 248 rows and prefix segments of 512 columns; running rows; vertical running
# sums; sliding channels-last sums), with values over 16 decades and some NaN and inf, in tiles
# that start on multiples of 16 outputs (as avgpool.dask's chunks do).
RUNNING = {
    "box": ("NCHW", (1, 1, 300, 1300),
            dict(window_size=(31, 31), start_padding=(15, 15), end_padding=(15, 15))),
    "box-nhwc": ("NHWC", (1, 200, 700, 3),
                 dict(window_size=(9, 9), start_padding=(4, 4), end_padding=(4, 4))),
    "rows-running": ("NCHW", (1, 2, 40, 1500), dict(window_size=(9, 60), strides=(2, 1))),
    "vertical-running": ("NCHW", (2, 3, 200, 70), dict(window_size=(40, 3), strides=(1, 2))),
    "nhwc-separable": ("NHWC", (1, 30, 400, 9), dict(window_size=(5, 9), strides=(2, 1))),
}


@pytest.mark.parametrize("name", list(RUNNING))
def test_running_sums_tiles_bitwise(name):
    layout, shape, kwargs = RUNNING[name]
    rng = np.random.default_rng(sorted(RUNNING).index(name))
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, size=shape)).astype(np.float32)
    x[rng.random(shape) < 0.001] = np.nan
    x[rng.random(shape) < 0.001] = np.inf
    desc = avgpool.AveragePoolingDesc(**kwargs)
    whole = avgpool.average_pool(x, desc, layout=layout)
    sizes = _spatial(whole.shape, layout)
    for trial in range(3):
        parts = []
        for n in sizes:
            cuts = sorted({c // 16 * 16 for c in rng.integers(1, n, size=3).tolist()} - {0})
            bounds = [0] + cuts + [n]
            parts.append([slice(a, b) for a, b in zip(bounds, bounds[1:])])
        assert_same(_pool_by_tiles(x, desc, parts, whole, layout), whole)


def test_tile_region_by_hand():
    # window 3, stride 2, start padding 1 on 20 positions: output o reads 2o - 1 .. 2o + 1
    desc = avgpool.AveragePoolingDesc((3,), strides=(2,), start_padding=(1,))
    assert avgpool.tile_input_region(desc, (1, 1, 20), [slice(4, 8)]) == (slice(7, 16),)
    assert avgpool.tile_input_region(desc, (1, 1, 20), [(0, 1)]) == (slice(0, 2),)
    # a window of padding only (count_overhang keeps it): one position at the end
    over = avgpool.AveragePoolingDesc((2,), strides=(2,), output_sizes=(4,), count_overhang=True)
    assert avgpool.tile_input_region(over, (1, 1, 5), [slice(3, 4)]) == (slice(4, 5),)
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    y = avgpool.pool_tile(x[..., 4:5], over, x.shape, [slice(3, 4)])
    assert_same(y, avgpool.average_pool(x, over)[..., 3:4])
    # adaptive 10 -> 3: windows [0, 4), [3, 7), [6, 10)
    assert avgpool.tile_input_region((3,), (1, 1, 10), [slice(1, 3)]) == (slice(3, 10),)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pool_tile_out_and_threads(layout):
    x = make_data(5, (2, 40, 50, 3) if layout == "NHWC" else (2, 3, 40, 50), FLOAT32)
    desc = avgpool.AveragePoolingDesc((5, 5), strides=(2, 2), start_padding=(2, 2),
                                      end_padding=(2, 2))
    box = [slice(3, 11), slice(7, 25)]
    tile = np.ascontiguousarray(x[_index(avgpool.tile_input_region(desc, x.shape, box,
                                                                   layout=layout), layout)])
    one = avgpool.pool_tile(tile, desc, x.shape, box, layout=layout, num_threads=1)
    out = np.empty_like(one)
    assert avgpool.pool_tile(tile, desc, x.shape, box, layout=layout, out=out,
                             num_threads=2) is out
    assert_same(out, one)


def test_tile_errors():
    desc = avgpool.AveragePoolingDesc((3, 3), strides=(2, 2))
    shape = (1, 2, 20, 20)  # output 9 x 9
    x = np.zeros((1, 2, 5, 5), np.float32)
    with pytest.raises(ValueError, match=r"out_region\[1\] must satisfy 0 <= start < stop <= 9"):
        avgpool.tile_input_region(desc, shape, [slice(0, 2), slice(3, 10)])
    with pytest.raises(ValueError, match=r"out_region\[0\] must satisfy"):
        avgpool.tile_input_region(desc, shape, [slice(2, 2), slice(0, 1)])
    with pytest.raises(ValueError, match="step 1"):
        avgpool.tile_input_region(desc, shape, [slice(0, 4, 2), slice(0, 1)])
    with pytest.raises(ValueError, match="out_region must have 2 entries"):
        avgpool.tile_input_region(desc, shape, [slice(0, 2)])
    with pytest.raises(TypeError, match="out_region must be a sequence"):
        avgpool.tile_input_region(desc, shape, 3)
    with pytest.raises(ValueError, match="window_size"):
        avgpool.tile_input_region(desc, (1, 2, 2, 20), [slice(0, 1), slice(0, 1)])
    # the tile must be exactly the region its outputs read: (0:5, 0:5) for outputs (0:2, 0:2)
    with pytest.raises(ValueError, match=r"holds the input box at \(0, 0\) of sizes \(5, 5\), "
                                         r"got spatial sizes \(5, 6\)"):
        avgpool.pool_tile(np.zeros((1, 2, 5, 6), np.float32), desc, shape,
                          [slice(0, 2), slice(0, 2)])
    with pytest.raises(ValueError, match=r"at most whole_shape's 2 channels, got 3"):
        avgpool.pool_tile(np.zeros((1, 3, 5, 5), np.float32), desc, shape,
                          [slice(0, 2), slice(0, 2)])
    with pytest.raises(TypeError, match="dtype int32 is not supported"):
        avgpool.pool_tile(x.astype(np.int32), desc, shape, [slice(0, 2), slice(0, 2)])
    with pytest.raises(TypeError, match="desc must be"):
        avgpool.pool_tile(x, "3x3", shape, [slice(0, 2), slice(0, 2)])
    assert avgpool.pool_tile(x, desc, shape, [slice(0, 2), slice(0, 2)]).shape == (1, 2, 2, 2)


FLATTENED = {  # channels last, fewer channels than a vector, stride-1 windows of <= 8 along W
    "rgb-5x5": ((1, 30, 40, 3), dict(window_size=(5, 5), start_padding=(2, 2), end_padding=(2, 2))),
    "c2-3x3-s2-h": ((2, 20, 25, 2), dict(window_size=(3, 3), strides=(2, 1), start_padding=(1, 1),
                                        end_padding=(1, 1), include_padding=True)),
    "1d-dilated": ((2, 50, 5), dict(window_size=(4,), start_padding=(2,), end_padding=(1,),
                                    dilations=(2,))),
}


@pytest.mark.parametrize("name", list(FLATTENED))
def test_flattened_channels_tiles_bitwise(name):
    """Calls that the core plans as one channel of W x C (csrc/api.c ap_flatten_channels) plan
    their tiles so too: the tiles of a partition give the whole call's bits."""
    shape, kwargs = FLATTENED[name]
    x = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    desc = avgpool.AveragePoolingDesc(**kwargs)
    assert "taken as one channel" in avgpool.explain(desc, shape, layout="NHWC") or \
        avgpool._core.isa() == "scalar"
    whole = avgpool.average_pool(x, desc, layout="NHWC")
    sizes = _spatial(whole.shape, "NHWC")
    parts = [[slice(0, n // 3), slice(n // 3, n - 2), slice(n - 2, n)] for n in sizes]
    assert_same(_pool_by_tiles(x, desc, parts, whole, "NHWC"), whole)


@pytest.mark.parametrize("dilations", [(2, 2), (3, 1), (1, 4)])
def test_dilated_same_flat_tiles_bitwise(dilations):
    """A dilated 'same' window on a small channels-first plane runs same-flat on the whole
    call and rows-s1 on tiles (csrc/paths.c ap_choose_tile_path); both sum each window in the
    same order, so the tiles give the whole call's bits (negative zeros included)."""
    span = [2 * d + 1 for d in dilations]  # 3 taps
    kwargs = dict(window_size=(3, 3), dilations=dilations,  # centred along H, left along W
                  start_padding=(span[0] // 2, span[1] - 1),
                  end_padding=(span[0] - 1 - span[0] // 2, 0))
    x = np.random.default_rng(sum(dilations)).standard_normal((2, 3, 19, 23)).astype(np.float32)
    x[0, 1, :3] = -0.0
    desc = avgpool.AveragePoolingDesc(**kwargs)
    assert "same-flat" in avgpool.explain(desc, x.shape) or avgpool._core.isa() == "scalar"
    whole = avgpool.average_pool(x, desc)
    parts = [[slice(0, 5), slice(5, n - 3), slice(n - 3, n)] for n in whole.shape[2:]]
    assert_same(_pool_by_tiles(x, desc, parts, whole, "NCHW"), whole)


PLANES_CL = {  # float32 channels first on small planes (csrc/kernels/simd_planes.inc)
    "same-7x7": ((2, 150, 7, 7), dict(window_size=(3, 3), start_padding=(1, 1),
                                      end_padding=(1, 1))),
    "3x3s2-14x14": ((1, 200, 14, 14), dict(window_size=(3, 3), strides=(2, 2),
                                           start_padding=(1, 1), end_padding=(1, 1))),
    "rowsums-20x30": ((1, 140, 20, 30), dict(window_size=(3, 5))),
    # nhwc-direct would sum a 2 x 4 window over a row of column sums for 1-2 vectors of
    # channels, directly for 128: the groups keep the latter
    "2x4-12x20": ((1, 140, 12, 20), dict(window_size=(2, 4))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("nan_policy", ["propagate", "omit"])
@pytest.mark.parametrize("name", list(PLANES_CL))
def test_planes_cl_tiles_and_channel_slices_bitwise(name, nan_policy, dtype):
    """planes-cl pools groups of up to 128 planes as the channels of a channels-last image,
    with nhwc-direct's switches chosen for 128 channels whatever a group holds: the tiles of a
    partition, and a call on a slice of the channels (other groups, a smaller last one), give
    the whole call's bits."""
    shape, kwargs = PLANES_CL[name]
    x = np.random.default_rng(len(name)).standard_normal(shape).astype(dtype)
    x[0, 3, :2] = -0.0
    if nan_policy == "omit":
        x.flat[::11] = np.nan
    desc = avgpool.AveragePoolingDesc(**kwargs, nan_policy=nan_policy)
    assert "planes-cl" in avgpool.explain(desc, shape, dtype=dtype) or \
        avgpool._core.isa() == "scalar"
    whole = avgpool.average_pool(x, desc)
    parts = [[slice(0, n // 3), slice(n // 3, n - 2), slice(n - 2, n)] for n in whole.shape[2:]]
    assert_same(_pool_by_tiles(x, desc, parts, whole, "NCHW"), whole)
    for c0 in (37, shape[1] - 5):
        assert_same(avgpool.average_pool(np.ascontiguousarray(x[:, c0:]), desc), whole[:, c0:])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,kwargs", [
    ((1, 40, 60, 60), dict(window_size=(3, 3), strides=(3, 3))),       # rows-gather
    ((1, 40, 60, 60), dict(window_size=(2, 5), strides=(1, 2))),       # rows-s2
    ((1, 140, 12, 12), dict(window_size=(2, 5), start_padding=(0, 2), end_padding=(1, 2))),
])
def test_nan_omitting_tiles_sum_as_the_whole_call(dtype, shape, kwargs):
    """NaN omission sums the input and its NaN indicator in float32 with a path of its own
    (csrc/nan_omit.c); a tile's sums follow the whole call's path, not one chosen for the
    tile's shape: tiles of a channels-first call on planes that planes-cl does not take
    (too large, or 'same' windows past 10 x 10 for same-flat) would otherwise take it and sum
    in nhwc-direct's order (float32 tiles differed in the last bits; float16 calls sum in
    float32 too, but their rounding to float16 hid the differences here)."""
    x = np.random.default_rng(9).standard_normal(shape).astype(dtype)
    x.flat[::7] = np.nan
    desc = avgpool.AveragePoolingDesc(**kwargs, nan_policy="omit")
    whole = avgpool.average_pool(x, desc)
    parts = [[slice(0, 2), slice(2, n)] for n in whole.shape[2:]]
    assert_same(_pool_by_tiles(x, desc, parts, whole, "NCHW"), whole)


def test_flattened_channels_tile_of_padding_only_windows():
    """test_dask's hypothesis run found a tile that failed with AP_ERR_TILE: a channels-last
    call the core flattens to one channel of W x C (here L = 1, C = 2) whose tile holds only
    windows of padding. Its input box is one position, which does not scale by C, so such a
    tile keeps the layout (its outputs sum nothing: the same bits)."""
    x = np.array([[[0.12573022, -0.13210486]]], dtype=np.float32)
    desc = avgpool.AveragePoolingDesc((1,), (1,), (1,), (0,), output_sizes=(1,))
    whole = avgpool.average_pool(x, desc, layout="NHWC")
    region = avgpool.tile_input_region(desc, x.shape, [slice(0, 1)], layout="NHWC")
    tile = np.ascontiguousarray(x[_index(region, "NHWC")])
    got = avgpool.pool_tile(tile, desc, x.shape, [slice(0, 1)], layout="NHWC")
    assert_same(got, whole)
    assert np.isnan(whole).all()  # windows of padding only, excluded: 0 / 0


@pytest.mark.parametrize("nan_policy", ["propagate", "omit"])
@pytest.mark.parametrize("shape,kwargs", [
    # the long hypothesis run's case (test_dask): a 4-wide window over W = 4 on 2 channels is
    # rows-s1 on the whole call (flattened: 4 taps of dilation 2 over rows of 8), but on one
    # channel alone it covers the whole flattened row, the global path
    ((1, 1, 4, 2), dict(window_size=(1, 4), output_sizes=(1, 1))),
    ((2, 5, 9, 3), dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1))),
    ((1, 6, 7, 5), dict(window_size=(2, 7), include_padding=True)),
    ((2, 12, 3), dict(window_size=(3,), start_padding=(1,), end_padding=(1,))),
])
def test_flattened_channel_slice_tiles_take_the_whole_path(shape, kwargs, nan_policy):
    """A channels-last call on fewer channels than a vector is planned as one channel of
    W x C, windows of dilation C (ap_flatten_channels); a tile of some of its channels is
    flattened with its own C, but must take the whole call's path, chosen with all of them:
    one channel chose for itself (dilation 1: the global path, planes-cl, 3 taps unrolled) and
    summed in another order, 1 ulp off."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    if nan_policy == "omit":
        x.flat[::5] = np.nan
    desc = avgpool.AveragePoolingDesc(**kwargs, nan_policy=nan_policy)
    whole = avgpool.average_pool(x, desc, layout="NHWC")
    box = [slice(0, n) for n in _spatial(whole.shape, "NHWC")]
    region = avgpool.tile_input_region(desc, x.shape, box, layout="NHWC")
    for c0, c1 in [(c, c + 1) for c in range(shape[-1])] + [(1, shape[-1])]:
        tile = np.ascontiguousarray(x[_index(region, "NHWC")][..., c0:c1])
        assert_same(avgpool.pool_tile(tile, desc, x.shape, box, layout="NHWC"),
                    whole[..., c0:c1])


@pytest.mark.parametrize("layout,shape,kwargs", [
    ("NCHW", (2, 34, 6, 9), dict(window_size=(4, 9), strides=(3, 6))),
    ("NCHW", (2, 29, 5, 7), dict(window_size=(4, 4), strides=(3, 4))),
    ("NHWC", (2, 8, 4, 24), dict(window_size=(5, 4), strides=(4, 4))),
    ("NHWC", (2, 4, 9, 10), dict(window_size=(3, 7), strides=(3, 4), include_padding=True)),
])
def test_nan_omitting_tiles_of_one_window_sum_as_the_whole_call(layout, shape, kwargs):
    """A tile of one output position of a NaN-omitting call: its sums chose a path for the
    tile's shape, one window over the whole tile (the global path), where the whole call's
    sums take the rows or nhwc-direct paths (csrc/nan_omit.c ap_sums_plan now follows the
    call's path). Found by a sweep of random tiles after the long hypothesis run."""
    x = np.random.default_rng(len(shape) + shape[1]).standard_normal(shape).astype(np.float32)
    x.flat[::7] = np.nan
    desc = avgpool.AveragePoolingDesc(**kwargs, nan_policy="omit")
    whole = avgpool.average_pool(x, desc, layout=layout)
    sizes = _spatial(whole.shape, layout)
    parts = [[slice(i, i + 1) for i in range(n)] for n in sizes]
    assert_same(_pool_by_tiles(x, desc, parts, whole, layout), whole)
