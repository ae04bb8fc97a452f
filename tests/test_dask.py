"""avgpool.dask against the in-memory calls, over random chunkings (needs dask and distributed,
installed by the test extras).

Every output chunk is one avgpool.pool_tile call whose W start is a multiple of 16, so the
chunked result equals the in-memory call bit for bit on every kernel path (tests/test_tiles.py),
and also matches the float64 reference. The distributed test runs a LocalCluster of 2 worker
processes on float64 data, so its result must be bitwise the in-memory one whichever kernels
the workers pick.
"""

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
)

da = pytest.importorskip("dask.array", reason="dask is a test extra")
import avgpool.dask  # noqa: E402  (after the importorskip)
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


def test_zarr_source_is_read_per_tile():
    """Chunks that are reads of one array-like (here zarr, as da.from_zarr and xarray.open_zarr
    make them): each task reads its own tile, halo included, from the source, and depends on
    nothing else, so no task holds a neighbour's chunk; the result is the whole call's."""
    zarr = pytest.importorskip("zarr", reason="zarr is a test extra")
    x = make_data(3, (1, 2, 300, 260), FLOAT32)
    source = zarr.array(x, chunks=(1, 1, 64, 64))
    dx = da.from_zarr(source)
    lazy = avgpool.dask.average_pool(dx, _WINDOW_15)
    layer = lazy.dask.layers[lazy.name]
    assert all(key[0] == lazy.name for key in layer)  # no halo slices
    graph = dict(lazy.dask)
    deps = {frozenset(get_dependencies(graph, key)) for key in layer}
    assert len(deps) == 1  # every task depends on one key: the source, not a chunk
    (source,) = deps.pop()
    assert not isinstance(source, tuple) and source in graph
    reads = [task[1] for task in layer.values()]
    assert len(reads) == lazy.npartitions and all(t[0].__name__ == "_read" for t in reads)
    for key, task in layer.items():
        # the tile: its output chunk's rows / columns and 7 more on each side, read in one
        # part per input chunk it overlaps (at most 3 x 3 here)
        parts = task[1][6]
        assert 1 <= len(parts) <= 9
        for axis in (2, 3):
            lo = sum(lazy.chunks[axis][:key[1 + axis]])
            hi = lo + lazy.chunks[axis][key[1 + axis]]
            read = (min(w[axis].start for w, _ in parts), max(w[axis].stop for w, _ in parts))
            assert read == (max(lo - 7, 0), min(hi + 7, x.shape[axis]))
        assert sum(np.prod([s.stop - s.start for s in w]) for w, _ in parts) == np.prod(task[1][4])
    assert_same(lazy.compute(), avgpool.average_pool(x, _WINDOW_15))
    # an in-memory dask array (chunks are data, not reads) takes the general path
    general = avgpool.dask.average_pool(da.from_array(x, chunks=(1, 1, 64, 64)), _WINDOW_15)
    assert any(key[0] != general.name for key in general.dask.layers[general.name])
    assert_same(general.compute(), avgpool.average_pool(x, _WINDOW_15))


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


def test_distributed_local_cluster(cluster_client):
    """Descriptors and tiles travel to 2 worker processes; float64 results are bitwise the
    in-memory ones."""
    x = make_data(7, (2, 3, 61, 47), FLOAT64)
    dx = da.from_array(x, chunks=(1, 2, 17, 13))
    desc = avgpool.AveragePoolingDesc((5, 3), strides=(2, 2), start_padding=(2, 1),
                                      end_padding=(2, 1), include_padding=True)
    windowed = avgpool.dask.average_pool(dx, desc)
    adaptive = avgpool.dask.adaptive_average_pool(dx, (7, 5))
    got_w, got_a = cluster_client.compute([windowed, adaptive], sync=True)
    workers = cluster_client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2
    assert_same(got_w, avgpool.average_pool(x, desc))
    assert_same(got_a, avgpool.adaptive_average_pool(x, (7, 5)))
