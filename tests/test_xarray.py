"""avgpool.xarray against xarray's own coarsen(...).mean() and rolling(...).mean() (a peer
library: values, NaN positions, dims, coordinates, name, attrs), on numpy- and dask-backed
DataArrays with NaN, over random dims, windows, boundaries, centring, min_periods and chunkings.
Needs xarray and dask (test extras).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies import scaled

xr = pytest.importorskip("xarray", reason="xarray is a test extra")
import avgpool.xarray as ax  # noqa: E402  (after the importorskip)

DIMS = ("t", "y", "x")


@st.composite
def data_arrays(draw):
    """A 1- to 3-D DataArray with coordinates, a non-dim coordinate and attrs; float32 or
    float64 with NaN at a random fraction of positions; backed by numpy, by dask, or by a zarr
    store through xarray.open_zarr (whose chunks avgpool.dask reads straight from the store)."""
    ndim = draw(st.integers(1, 3))
    dims = draw(st.permutations(DIMS))[:ndim]
    shape = tuple(draw(st.integers(1, 12)) for _ in dims)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    values = rng.standard_normal(shape).astype(dtype)
    values[rng.random(shape) < draw(st.sampled_from([0.0, 0.2, 0.7]))] = np.nan
    coords = {d: np.arange(n) * 1.5 + 3 for d, n in zip(dims, shape)}
    coords["label"] = ((dims[-1],), np.arange(shape[-1]) * 10.0)
    da = xr.DataArray(values, dims=dims, coords=coords, name="v", attrs={"units": "K"})
    backing = draw(st.sampled_from(["numpy", "dask", "zarr"]))
    if backing != "numpy":
        da = da.chunk({d: draw(st.integers(1, max(n, 1))) for d, n in zip(dims, shape)})
    if backing == "zarr":
        da = _through_zarr(da)
    return da


def _through_zarr(da):
    """da written to an in-memory zarr store and opened again, lazily (dask chunks that read
    the store)."""
    zarr = pytest.importorskip("zarr", reason="zarr is a test extra")
    store = zarr.storage.MemoryStore()
    da.to_dataset().to_zarr(store, consolidated=False)
    return xr.open_zarr(store, consolidated=False)[da.name]


def _windows(draw, da, dims, limit):
    return {d: draw(st.integers(1, max(1, min(da.sizes[d], limit)))) for d in dims}


def _same(got, want):
    """Equal to xarray's: dims, coordinates, name and attrs identical, values close (xarray sums
    in another order), NaN at the same positions."""
    assert got.dims == want.dims and got.name == want.name and got.attrs == want.attrs
    assert got.dtype == want.dtype
    xr.testing.assert_identical(got.coords.to_dataset(), want.coords.to_dataset())
    g, w = np.asarray(got.values, np.float64), np.asarray(want.values, np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    tol = 1e-5 if got.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@scaled(0.2)
@given(data_arrays(), st.data())
def test_coarsen_mean_matches_xarray(da, data):
    dims = data.draw(st.lists(st.sampled_from(da.dims), min_size=1, max_size=da.ndim, unique=True))
    boundary = data.draw(st.sampled_from(["exact", "trim", "pad"]))
    windows = _windows(data.draw, da, dims, 5)
    if boundary == "exact":
        windows = {d: k for d, k in windows.items() if da.sizes[d] % k == 0} or {dims[0]: 1}
    got = ax.coarsen_mean(da, windows, boundary=boundary)
    assert type(got.data) is type(da.data)  # dask stays lazy
    want = da.coarsen(windows, boundary=boundary).mean()
    _same(got.compute(), want.compute())


@scaled(0.2)
@given(data_arrays(), st.data())
def test_rolling_mean_matches_xarray(da, data):
    dims = data.draw(st.lists(st.sampled_from(da.dims), min_size=1, max_size=da.ndim, unique=True))
    windows = _windows(data.draw, da, dims, 6)
    center = data.draw(st.one_of(st.booleans(),
                                 st.fixed_dictionaries({d: st.booleans() for d in dims})))
    size = int(np.prod(list(windows.values())))
    min_periods = data.draw(st.one_of(st.none(), st.integers(1, size)))
    got = ax.rolling_mean(da, windows, center=center, min_periods=min_periods)
    assert type(got.data) is type(da.data)
    want = da.rolling(windows, center=center, min_periods=min_periods).mean()
    _same(got.compute(), want.compute())


def test_chunking_does_not_change_the_result(isa):
    """The same data, in memory and in three chunkings: bitwise equal where tiles are (the
    scalar kernels, float64); else within the kernels' rounding."""
    rng = np.random.default_rng(5)
    v = rng.standard_normal((4, 40, 33))
    v[rng.random(v.shape) < 0.1] = np.nan
    da = xr.DataArray(v, dims=("t", "y", "x"))
    whole = ax.rolling_mean(da, {"y": 5, "x": 4}, center=True, min_periods=3)
    for chunks in ({"y": 7, "x": 5}, {"t": 1, "y": 40, "x": 11}, {"y": 13}):
        for lazy in (da.chunk(chunks), _through_zarr(da.rename("v").chunk(chunks))):
            chunked = ax.rolling_mean(lazy, {"y": 5, "x": 4}, center=True, min_periods=3)
            if lazy.name == "v":  # from zarr: every task reads its tile from the store
                name = chunked.data.name
                tasks = [t for k, t in chunked.data.dask.layers[name].items() if k[0] == name]
                assert all(task[1][0].__name__ == "_read" for task in tasks)
            np.testing.assert_array_equal(chunked.compute().values, whole.values)


def test_integer_data_and_errors():
    da = xr.DataArray(np.arange(12).reshape(3, 4), dims=("y", "x"))
    got = ax.coarsen_mean(da, {"x": 2})
    _same(got, da.coarsen(x=2).mean())
    assert got.dtype == np.float64
    with pytest.raises(ValueError, match="is not a multiple of its window 3"):
        ax.coarsen_mean(da, {"x": 3})
    with pytest.raises(ValueError, match="boundary must be"):
        ax.coarsen_mean(da, {"x": 2}, boundary="side")
    with pytest.raises(ValueError, match="'z' is not a dim"):
        ax.rolling_mean(da, {"z": 2})
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        ax.rolling_mean(da, {"x": 0})
    with pytest.raises(ValueError, match="min_periods must be >= 1"):
        ax.rolling_mean(da, {"x": 2}, min_periods=0)
    with pytest.raises(ValueError, match="center names dims without a window"):
        ax.rolling_mean(da, {"x": 2}, center={"y": True})
    with pytest.raises(TypeError, match="da must be an xarray.DataArray"):
        ax.rolling_mean(da.values, {"x": 2})
    with pytest.raises(TypeError, match="non-empty mapping"):
        ax.rolling_mean(da, {})
