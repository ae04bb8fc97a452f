"""avgpool.dask against the in-memory calls, over random chunkings (needs dask and distributed,
installed by the test extras).

Every output chunk is one avgpool.pool_tile call whose W start is a multiple of 16, so the
chunked result equals the in-memory call bit for bit on every kernel path (tests/test_tiles.py),
and also matches the float64 reference. The distributed test runs a LocalCluster of 2 worker
processes on float64 data, so its result must be bitwise the in-memory one whichever kernels
the workers pick.
"""

import importlib.util
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import avgpool
from strategies import (
    FLOAT32,
    FLOAT64,
    adaptive_cases,
    assert_matches,
    assert_same,
    make_data,
    pool_cases,
    reference_adaptive,
    reference_pool,
    scaled,
    split_bounds,
    to_layout,
)

da = pytest.importorskip("dask.array", reason="dask is a test extra")
import avgpool.dask  # noqa: E402  (after the importorskip)
from avgpool.dask import _read_parts  # noqa: E402
from dask.core import get_dependencies  # noqa: E402


def _chunks(draw, shape):
    """A random chunking: per axis, one chunk or random cut points."""
    chunks = []
    for n in shape:
        bounds = split_bounds(draw, n)
        chunks.append(tuple(b - a for a, b in zip(bounds, bounds[1:])))
    return tuple(chunks)


def _check(got, whole, ref, ref_abs, dtype):
    assert_same(got, whole)
    assert_matches(got, ref, ref_abs, dtype)


@given(pool_cases(), st.data())
def test_average_pool_any_chunking(case, data):
    x, kwargs, layout = case
    desc = avgpool.AveragePoolingDesc(**kwargs)
    dx = da.from_array(x, chunks=_chunks(data.draw, x.shape))
    lazy = avgpool.dask.average_pool(dx, desc, layout=layout)
    whole = avgpool.average_pool(x, desc, layout=layout)
    assert lazy.shape == whole.shape and lazy.dtype == whole.dtype
    # one pooling task per output chunk in avgpool's layer (besides the halo slices)
    layer = lazy.dask.layers[lazy.name]
    assert sum(1 for key in layer if key[0] == lazy.name) == lazy.npartitions
    got = lazy.compute(scheduler="threads")
    ref, ref_abs = reference_pool(x, kwargs, layout)
    _check(got, whole, ref, ref_abs, x.dtype)


@given(adaptive_cases(), st.data())
def test_adaptive_average_pool_any_chunking(case, data):
    x, outs, layout = case
    dx = da.from_array(x, chunks=_chunks(data.draw, x.shape))
    got = avgpool.dask.adaptive_average_pool(dx, outs, layout=layout).compute(scheduler="sync")
    whole = avgpool.adaptive_average_pool(x, outs, layout=layout)
    ref, ref_abs = reference_adaptive(x, outs, layout)
    _check(got, whole, ref, ref_abs, x.dtype)


@pytest.mark.parametrize("channels,chunk", [(40, 8), (64, 24), (300, 37), (2048, 512)])
def test_adaptive_to_one_over_channel_chunks_same_bits(channels, chunk):
    """An adaptive pool to 1 x 1 channels last (the global kernels) chunked over channels gives
    the in-memory call's bits: every channel is summed the same way whatever the channel count
    (the strategies above draw at most 5 channels, fewer than one vector)."""
    x = make_data(channels, (2, 9, 11, channels), FLOAT32)
    dx = da.from_array(x, chunks=(1, 9, 11, chunk))
    got = avgpool.dask.adaptive_average_pool(dx, (1, 1), layout="NHWC").compute(scheduler="sync")
    assert_same(got, avgpool.adaptive_average_pool(x, (1, 1), layout="NHWC"))


# One case per kernel path whose channel loops could order a sum by the channel's place in
# the call (vector blocks, masked heads and tails, planes grouped across channels), for
# test_windowed_over_channel_chunks_same_bits: (spatial sizes, descriptor keywords or adaptive
# output sizes); the path each takes at 40 and 300 channels is in the comment (12 channels:
# fewer than an AVX-512 vector, see "short rows").
CHANNEL_CHUNK_CASES = {
    # NHWC nhwc-direct by columns / NCHW same-flat
    "3x3s1p1": ((13, 17), dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1))),
    # nhwc-direct / plane-flat (planes grouped)
    "3x3s2p1": ((13, 17), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                               end_padding=(1, 1))),
    # nhwc-direct over a row of column sums / rows-s1
    "4x4s1": ((13, 17), dict(window_size=(4, 4))),
    # box (running sums) / same-flat
    "box5x5": ((13, 17), dict(window_size=(5, 5), start_padding=(2, 2), end_padding=(2, 2),
                              include_padding=True)),
    # nhwc-separable / plane-flat
    "7x7s3p3": ((13, 17), dict(window_size=(7, 7), strides=(3, 3), start_padding=(3, 3),
                               end_padding=(3, 3))),
    # rows of a few positions: channels last with fewer channels than a vector is planned as
    # one channel of W * C (api.c ap_flatten_channels), short flattened rows too
    "2x3s1-short-rows": ((4, 3), dict(window_size=(2, 3), start_padding=(0, 1),
                                      end_padding=(0, 1))),
    "1d-k4s4": ((40,), dict(window_size=(4,), strides=(4,))),
    "3d-2x2x2s2": ((6, 8, 10), dict(window_size=(2, 2, 2), strides=(2, 2, 2))),
    # NaN-aware sums (nan_omit.c)
    "3x3s2-omit": ((13, 17), dict(window_size=(3, 3), strides=(2, 2), nan_policy="omit")),
    "adaptive-13x17-4x5": ((13, 17), (4, 5)),  # nhwc-separable
    "adaptive-12x16-6x8": ((12, 16), (6, 8)),  # divisible: nhwc-direct
}


@pytest.mark.parametrize("dtype", [FLOAT32, FLOAT64], ids=str)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("channels,chunk", [(12, 5), (40, 8), (300, 37)])
@pytest.mark.parametrize("name", list(CHANNEL_CHUNK_CASES))
def test_windowed_over_channel_chunks_same_bits(name, channels, chunk, layout, dtype):
    """Windowed and adaptive pools chunked over channels (batch and space too) give the
    in-memory call's bits on every kernel path, and the float64 reference's values: a channel
    sums the same way whatever its place among the channels of a call (a vector holds 8 or 16
    float32 lanes, 4 or 8 float64 ones; 16-bit data would not tell: make_data's sums of them
    are exact)."""
    spatial, how = CHANNEL_CHUNK_CASES[name]
    x = to_layout(make_data(channels + len(spatial), (3, channels) + spatial, dtype), layout)
    if name.endswith("omit"):
        x.reshape(-1)[::7] = np.nan
    # chunked over channels, batch and (in two) every spatial axis
    axis = 1 if layout == "NCHW" else x.ndim - 1
    chunks = tuple(chunk if a == axis else (2 if a == 0 else (n + 1) // 2)
                   for a, n in enumerate(x.shape))
    dx = da.from_array(x, chunks=chunks)
    if isinstance(how, dict):
        desc = avgpool.AveragePoolingDesc(**how)
        got = avgpool.dask.average_pool(dx, desc, layout=layout).compute(scheduler="sync")
        whole = avgpool.average_pool(x, desc, layout=layout)
        ref, ref_abs = reference_pool(x, how, layout)
    else:
        got = avgpool.dask.adaptive_average_pool(dx, how, layout=layout).compute(
            scheduler="sync")
        whole = avgpool.adaptive_average_pool(x, how, layout=layout)
        ref, ref_abs = reference_adaptive(x, how, layout)
    _check(got, whole, ref, ref_abs, x.dtype)


@scaled(0.3)
@given(st.sampled_from(["NCHW", "NHWC"]), st.integers(1, 3), st.data())
def test_global_average_pool(layout, rank, data):
    shape = (2,) + tuple(data.draw(st.integers(1, 9)) for _ in range(rank)) + (3,)
    if layout == "NCHW":
        shape = (2, 3) + shape[1:-1]
    x = make_data(data.draw(st.integers(0, 2**31)), shape, FLOAT32)
    dx = da.from_array(x, chunks=_chunks(data.draw, shape))
    got = avgpool.dask.global_average_pool(dx, layout=layout).compute()
    window = shape[2:] if layout == "NCHW" else shape[1:-1]
    ref, ref_abs = reference_pool(x, dict(window_size=window), layout)
    assert got.dtype == x.dtype
    assert_matches(got, ref, ref_abs, x.dtype)


def test_task_memory_is_a_chunk_and_its_halo():
    """A 15 x 15 centred window on 256 x 256 chunks: every task's tile is its output chunk's
    share of the input plus a 7-wide halo on each side, never more."""
    x = da.zeros((1, 1, 1024, 1024), dtype=np.float32, chunks=(1, 1, 256, 256))
    lazy = avgpool.dask.average_pool(x, _WINDOW_15)
    assert lazy.chunks == x.chunks
    layer = lazy.dask.layers[lazy.name]
    tiles = [task[1] for key, task in layer.items() if key[0] == lazy.name]
    assert len(tiles) == 16 and all(t[0].__name__ == "_assemble" for t in tiles)
    # the halo comes as slices of the neighbouring chunks, 7 wide (corners 7 x 7)
    strips = [layer[key] for key in layer if key[0] != lazy.name]
    assert strips and all(task[0].__name__ == "getitem" for task in strips)
    assert all(min(s.stop - s.start for s in task[2][2:]) == 7 for task in strips)
    assert max(t[3][2] for t in tiles) == 256 + 14 and min(t[3][2] for t in tiles) == 256 + 7
    assert_same(lazy.compute(), np.zeros((1, 1, 1024, 1024), np.float32))


_WINDOW_15 = avgpool.AveragePoolingDesc((15, 15), start_padding=(7, 7), end_padding=(7, 7))


class _CountingSource:
    """An array-like whose reads are recorded (each one a read of a store)."""

    def __init__(self, x):
        self.x, self.shape, self.dtype, self.ndim = x, x.shape, x.dtype, x.ndim
        self.reads = []

    def __getitem__(self, key):
        self.reads.append(key)
        return self.x[key]


def _chunk_of(bounds, where):
    """The chunk index that holds a read's slices (each read lies within one chunk)."""
    index = []
    for b, s in zip(bounds, where):
        i = int(np.searchsorted(b, s.start, side="right")) - 1
        assert b[i] <= s.start < s.stop <= b[i + 1]
        index.append(i)
    return tuple(index)


def test_source_is_read_per_tile_and_halo():
    """Chunks that are reads of one array-like (as da.from_zarr and xarray.open_zarr make them):
    each task reads its tile from the source, not from its neighbours' chunks, so no task holds
    a neighbour's chunk; the thin halo parts of a chunk come from one task that reads the chunk
    and keeps only them. Every chunk is read at most twice (its tile, its halo), where reading
    each tile's parts itself would read it up to 9 times; the result is the whole call's."""
    x = make_data(3, (1, 2, 288, 260), FLOAT32)  # chunks 96 x (96, 96, 68)
    source = _CountingSource(x)
    chunks = (1, 1, 96, 96)
    dx = da.from_array(source, chunks=chunks)
    lazy = avgpool.dask.average_pool(dx, _WINDOW_15)
    layer = lazy.dask.layers[lazy.name]
    if importlib.util.find_spec("dask._task_spec") is None:
        # a dask before 2024.12 (the last for Python 3.9) has no task objects to find the
        # chunks' source in: the general path, from the chunks, with the same values
        assert not any(layer[key][0] is _read_parts for key in layer)
        assert_same(lazy.compute(scheduler="sync"), avgpool.average_pool(x, _WINDOW_15))
        return
    graph = dict(lazy.dask)
    (source_key,) = {k for k in graph if k not in layer and not isinstance(k, tuple)}
    halo = {key for key in layer if key[0] != lazy.name}
    assert halo and all(layer[key][0] is _read_parts for key in halo)
    for key in halo:  # kept parts: 7 wide (corners 7 x 7)
        assert all(min(s.stop - s.start for s in sl[2:]) == 7 for sl in layer[key][5])
    for key in layer:  # tiles depend on the source and halo tasks, never on a chunk
        assert get_dependencies(graph, key) <= halo | {source_key}
    got = lazy.compute(scheduler="sync")
    bounds = [np.cumsum((0,) + c) for c in dx.chunks]
    per_chunk = Counter(_chunk_of(bounds, where) for where in source.reads
                        if all(isinstance(s, slice) and s.stop > s.start for s in where))
    assert len(per_chunk) == dx.npartitions and max(per_chunk.values()) == 2
    assert_same(got, avgpool.average_pool(x, _WINDOW_15))
    # windows wider than half a chunk: halo parts are not thin, so tiles read every part
    # themselves, one read per chunk they overlap
    source.reads.clear()
    small = avgpool.dask.average_pool(da.from_array(source, chunks=(1, 1, 24, 24)), _WINDOW_15)
    reads = [task[1] for key, task in small.dask.layers[small.name].items()
             if key[0] == small.name]
    assert max(len(task[6]) for task in reads) == 9  # the (_read ...) task's own parts
    assert_same(small.compute(scheduler="sync"), avgpool.average_pool(x, _WINDOW_15))
    # an in-memory dask array (chunks are data, not reads) takes the general path
    general = avgpool.dask.average_pool(da.from_array(x, chunks=(1, 1, 64, 64)), _WINDOW_15)
    assert any(key[0] != general.name for key in general.dask.layers[general.name])
    assert_same(general.compute(), avgpool.average_pool(x, _WINDOW_15))


def test_zarr_source_is_read_per_tile():
    """The same on a zarr array (da.from_zarr), the store the scale-out bench reads."""
    zarr = pytest.importorskip("zarr", reason="zarr is a test extra")
    x = make_data(3, (1, 2, 300, 260), FLOAT32)
    dx = da.from_zarr(zarr.array(x, chunks=(1, 1, 64, 64)))
    lazy = avgpool.dask.average_pool(dx, _WINDOW_15)
    layer = lazy.dask.layers[lazy.name]
    tiles = [task for key, task in layer.items() if key[0] == lazy.name]
    assert len(tiles) == lazy.npartitions and all(t[1][0].__name__ == "_read" for t in tiles)
    assert any(key[0] != lazy.name for key in layer)  # halo parts, read once per chunk
    assert_same(lazy.compute(), avgpool.average_pool(x, _WINDOW_15))


def test_numpy_input_and_errors():
    x = make_data(1, (1, 2, 10, 10), FLOAT32)
    desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
    assert_same(avgpool.dask.average_pool(x, desc).compute(), avgpool.average_pool(x, desc))
    with pytest.raises(TypeError, match="desc must be an AveragePoolingDesc"):
        avgpool.dask.average_pool(x, (2, 2))
    with pytest.raises(ValueError, match="layout must be 'NCHW' or 'NHWC'"):
        avgpool.dask.average_pool(x, desc, layout="CHW")
    with pytest.raises(ValueError, match="so x must have 5 dimensions"):
        avgpool.dask.average_pool(x, avgpool.AveragePoolingDesc((2, 2, 2)))
    with pytest.raises(ValueError, match="window_size"):
        avgpool.dask.average_pool(x, avgpool.AveragePoolingDesc((11, 2)))
    unknown = da.from_array(x, chunks=(1, 1, 5, 5))
    unknown = unknown[:, :, da.arange(10, chunks=5) >= 0]  # boolean index: unknown sizes
    with pytest.raises(ValueError, match="chunk sizes must be known"):
        avgpool.dask.average_pool(unknown, desc)
    with pytest.raises(TypeError, match="dtype int64 is not supported"):
        avgpool.dask.global_average_pool(da.zeros((1, 1, 4), dtype=np.int64))


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed", reason="distributed is a test extra")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def test_distributed_local_cluster(cluster_client, tmp_path):
    """Descriptors, tiles and the halo parts read from a store travel to 2 worker processes;
    float64 results are bitwise the in-memory ones."""
    zarr = pytest.importorskip("zarr", reason="zarr is a test extra")
    x = make_data(7, (2, 3, 61, 47), FLOAT64)
    dx = da.from_array(x, chunks=(1, 2, 17, 13))
    store = str(tmp_path / "x.zarr")
    zarr.open_array(store, mode="w", shape=x.shape, chunks=(1, 2, 17, 13), dtype=x.dtype)[...] = x
    desc = avgpool.AveragePoolingDesc((5, 3), strides=(2, 2), start_padding=(2, 1),
                                      end_padding=(2, 1), include_padding=True)
    windowed = avgpool.dask.average_pool(dx, desc)
    adaptive = avgpool.dask.adaptive_average_pool(dx, (7, 5))
    from_store = avgpool.dask.average_pool(da.from_zarr(store), desc)
    layer = from_store.dask.layers[from_store.name]
    assert any(layer[key][0].__name__ == "_read_parts" for key in layer)
    got_w, got_a, got_s = cluster_client.compute([windowed, adaptive, from_store], sync=True)
    workers = cluster_client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2
    assert_same(got_w, avgpool.average_pool(x, desc))
    assert_same(got_s, avgpool.average_pool(x, desc))
    assert_same(got_a, avgpool.adaptive_average_pool(x, (7, 5)))
