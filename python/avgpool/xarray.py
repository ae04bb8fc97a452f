"""xarray's block and moving means on avgpool's kernels: ``coarsen_mean`` and ``rolling_mean``.

Both take a DataArray backed by numpy or dask, dims by name in any order, and return what
``da.coarsen(...).mean()`` and ``da.rolling(...).mean()`` return (values, dims, coordinates,
name and attrs), skipping NaN as xarray does for float data (``nan_policy="omit"``, exclude
padding). Dask-backed arrays stay lazy and go through :mod:`avgpool.dask`: one task per output
chunk, the same result whatever the chunking.

>>> import numpy as np, xarray as xr, avgpool.xarray
>>> a = xr.DataArray(np.arange(6.0), dims="x", coords={"x": np.arange(6) * 10.0})
>>> avgpool.xarray.coarsen_mean(a, {"x": 2}).values
array([0.5, 2.5, 4.5])
>>> avgpool.xarray.rolling_mean(a, {"x": 3}, center=True).values
array([nan,  1.,  2.,  3.,  4., nan])
"""

from __future__ import annotations

import math
from typing import Any, Dict, Hashable, Literal, Mapping, Optional, Tuple, Union

import numpy as np
import xarray as xr

from ._api import _on_axes, average_pool
from ._desc import AveragePoolingDesc

__all__ = ["coarsen_mean", "rolling_mean"]


def coarsen_mean(da: xr.DataArray, windows: Mapping[Hashable, int], *,
                 boundary: Literal["exact", "trim", "pad"] = "exact") -> xr.DataArray:
    """``da.coarsen(windows, boundary=boundary).mean()``: the mean of each block of
    ``windows[dim]`` positions along each named dim, NaN skipped (an all-NaN block gives NaN).

    ``boundary``: ``"exact"`` requires each size to divide by its window; ``"trim"`` drops the
    positions past the last whole block; ``"pad"`` averages the last, partial block over the
    positions it has. Coordinates along the named dims are block means, as xarray's default
    ``coord_func="mean"`` makes them. In pooling terms: window = stride = block, exclude
    padding, floor (trim) or ceil (pad) rule, ``nan_policy="omit"``.
    """
    windows = _check_windows(da, windows, "windows")
    if boundary not in ("exact", "trim", "pad"):
        raise ValueError(f"boundary must be 'exact', 'trim' or 'pad', got {boundary!r}")
    end = []
    for dim, k in windows.items():
        n = da.sizes[dim]
        if boundary == "exact" and n % k:
            raise ValueError(f"windows: size {n} of dim {dim!r} is not a multiple of its window "
                             f"{k} (boundary='exact'; use 'trim' or 'pad')")
        if n < k and boundary != "pad":
            raise ValueError(f"windows: window {k} of dim {dim!r} exceeds its size {n}")
        end.append((-n) % k if boundary == "pad" else 0)
    ks = tuple(windows.values())
    desc = AveragePoolingDesc(ks, strides=ks, end_padding=tuple(end), nan_policy="omit")
    values = _pool(da, tuple(windows), desc)
    # coordinates: xarray's own coarsening of the coordinates alone (coord_func="mean"), with
    # a 1-D placeholder per dim so that dims without a coordinate exist too
    frame = xr.Dataset({f"size_of_{i}": (dim, np.zeros(da.sizes[dim], np.int8))
                        for i, dim in enumerate(windows)}, coords=da.coords)
    coords = frame.coarsen(windows, boundary=boundary).mean().coords
    return xr.DataArray(values, dims=da.dims, coords=coords, name=da.name, attrs=da.attrs)


def rolling_mean(da: xr.DataArray, windows: Mapping[Hashable, int], *,
                 center: Union[bool, Mapping[Hashable, bool]] = False,
                 min_periods: Optional[int] = None) -> xr.DataArray:
    """``da.rolling(windows, center=center, min_periods=min_periods).mean()``: the moving mean
    over ``windows[dim]`` positions along each named dim, NaN skipped.

    A window ends at its position (``center=False``) or is centred on it (``center=True``; an
    even window reaches one more position back than forward), per dim when ``center`` is a
    mapping; positions past the edges are missing values. A window with fewer than
    ``min_periods`` non-NaN values (default: the window's size, the product over the dims)
    gives NaN. Dims, coordinates, name and attrs are those of ``da``. In pooling terms: stride
    1, 'same' output, exclude padding, ``nan_policy="omit"``, ``min_count=min_periods``.
    """
    windows = _check_windows(da, windows, "windows")
    if isinstance(center, Mapping):
        unknown = set(center) - set(windows)
        if unknown:
            raise ValueError(f"center names dims without a window: {sorted(map(str, unknown))}")
        centred = {dim: bool(center.get(dim, False)) for dim in windows}
    else:
        centred = {dim: bool(center) for dim in windows}
    size = math.prod(windows.values())
    if min_periods is None:
        min_periods = size
    elif isinstance(min_periods, bool) or not isinstance(min_periods, (int, np.integer)):
        raise TypeError(f"min_periods must be an integer, got {min_periods!r}")
    elif min_periods < 1:
        raise ValueError(f"min_periods must be >= 1, got {min_periods}")
    before = tuple(k // 2 if centred[d] else k - 1 for d, k in windows.items())
    after = tuple(k - 1 - b for k, b in zip(windows.values(), before))
    desc = AveragePoolingDesc(tuple(windows.values()), start_padding=before, end_padding=after,
                              nan_policy="omit", min_count=int(min_periods))
    values = _pool(da, tuple(windows), desc)
    return xr.DataArray(values, dims=da.dims, coords=da.coords, name=da.name, attrs=da.attrs)


def _check_windows(da: Any, windows: Any, name: str) -> Dict[Hashable, int]:
    if not isinstance(da, xr.DataArray):
        raise TypeError(f"da must be an xarray.DataArray, got {type(da).__name__}")
    if not isinstance(windows, Mapping) or not windows:
        raise TypeError(f"{name} must be a non-empty mapping of dim names to window sizes")
    if len(windows) > 3:
        raise ValueError(f"{name}: at most 3 dims at once, got {len(windows)}")
    out = {}
    for dim, k in windows.items():
        if dim not in da.dims:
            raise ValueError(f"{name}: {dim!r} is not a dim of da (dims {da.dims})")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"{name}: the window of {dim!r} must be an integer >= 1, got {k!r}")
        out[dim] = int(k)
    return out


def _pool(da: xr.DataArray, dims: Tuple[Hashable, ...], desc: AveragePoolingDesc) -> Any:
    """Pool the named dims of da's data (numpy or dask) with desc; in da's dim order."""
    axes = [da.get_axis_num(d) for d in dims]
    data = da.data
    if data.dtype.kind != "f" or data.dtype.itemsize < 2:  # xarray's mean of ints, bools: float64
        data = data.astype(np.float64)
    if _is_dask(data):
        from . import dask as avgpool_dask

        # the named axes pooled where they are, the others batch axes: the graph starts from
        # da's own chunks (read straight from a zarr source, when that is what they are)
        return avgpool_dask._pool(data, desc, None, 1, axes)
    return _on_axes(np.asarray(data), axes, lambda x: average_pool(x, desc))


def _is_dask(x: Any) -> bool:
    return type(x).__module__.startswith("dask")
