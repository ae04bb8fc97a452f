"""``python -m avgpool bench --scale-out``: avgpool.xarray on a dask.distributed cluster against
xarray's own coarsen / rolling and dask's ``map_overlap`` around ``scipy.ndimage.uniform_filter``
and OpenCV's ``cv2.boxFilter`` (the fastest box filter; both let NaN spread, so they are speed
peers, not equal results), with a floor per case: the same reads and writes around next to no
computation (a strided subsample, a multiplication by 1), what no method can beat.

A float32 raster with 1 % NaN (8 GiB by default, ``--scale-gib``) is written as zarr (no
compression, 4096 x 4096 chunks of 64 MiB) by a LocalCluster of 2 single-threaded worker
processes with a memory limit; each method then reads it, computes, and writes its result as
zarr, on a cluster of its own (fresh worker processes). Per method: wall time, and each worker's peak resident
memory above its idle size, in chunks. avgpool's results are compared with xarray's (NaN at
the same places, values within float32 rounding). A method still running at the timeout is
reported as such, not timed.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

CHUNK = 4096  # rows and columns per chunk: 64 MiB of float32
HALF = 7      # the 15 x 15 window's half width
COARSEN, ROLLING = "coarsen 2x2", "rolling 15x15"
CASES = (COARSEN, ROLLING)


def _peak_rss_mib() -> float:
    """This process's peak resident memory (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _uniform_nan(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.uniform_filter(block, size=2 * HALF + 1, mode="constant", cval=np.nan)


def _box_opencv(block: np.ndarray) -> np.ndarray:
    import cv2

    cv2.setNumThreads(1)  # one task per worker thread, as the others
    size = 2 * HALF + 1
    return cv2.boxFilter(block, -1, (size, size), normalize=True,
                         borderType=cv2.BORDER_CONSTANT)


def _close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 where a and b agree (NaN at the same places, else within float32 rounding)."""
    same_nan = np.isnan(a) == np.isnan(b)
    ok = np.isnan(a) | (np.abs(a.astype(np.float64) - b) <= 1e-5 * (np.abs(b) + 1e-30) + 1e-7)
    return np.array([[bool((same_nan & ok).all())]])


def run_scale_out(gib: float, workdir: Optional[str] = None, timeout_s: float = 900.0,
                  memory_limit: str = "6GiB", cases: str = "") -> Dict[str, Any]:
    """Write the raster, run every method of the cases whose name contains ``cases`` (all when
    empty) on a cluster of its own, and compare avgpool's results with xarray's."""
    import dask
    import dask.array as da
    import xarray as xr
    from distributed import Client, LocalCluster, wait

    import avgpool.xarray as ax

    side = int((gib * 2**30 / 4) ** 0.5) // 16 * 16
    root = tempfile.mkdtemp(prefix="avgpool-scale-", dir=workdir)
    result: Dict[str, Any] = {"gib": side * side * 4 / 2**30, "side": side, "chunk": CHUNK,
                              "workers": 2, "memory_limit": memory_limit, "rows": []}

    def cluster() -> Any:
        return LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                            memory_limit=memory_limit, dashboard_address=None)

    try:
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            t0 = time.perf_counter()
            with cluster() as c, Client(c):
                rng = da.random.default_rng(0)
                x = rng.random((side, side), dtype=np.float32, chunks=CHUNK)
                x = da.where(rng.random((side, side), chunks=CHUNK) < 0.01, np.float32(np.nan),
                             x)
                xr.DataArray(x, dims=("y", "x"), name="v").to_dataset().to_zarr(
                    os.path.join(root, "raster.zarr"), mode="w", consolidated=False,
                    encoding={"v": {"compressors": None}})
            result["write_s"] = time.perf_counter() - t0

            def raster() -> Any:
                return xr.open_zarr(os.path.join(root, "raster.zarr"), consolidated=False)["v"]

            def overlap(filt: Callable) -> Callable:
                def run(a: Any) -> Any:
                    data = a.data.map_overlap(filt, depth=HALF, boundary=np.nan,
                                              dtype=np.float32)
                    return xr.DataArray(data, dims=a.dims, name="v")
                return run

            methods: List[tuple] = [
                # the floors: the same reads and writes around next to no computation
                (COARSEN, "floor: read, [::2, ::2], write",
                 lambda a: xr.DataArray(a.data[::2, ::2], dims=a.dims)),
                (COARSEN, "avgpool.xarray.coarsen_mean",
                 lambda a: ax.coarsen_mean(a, {"y": 2, "x": 2})),
                (COARSEN, "xarray coarsen().mean()",
                 lambda a: a.coarsen(y=2, x=2).mean()),
                (ROLLING, "floor: read, x * 1, write",
                 lambda a: xr.DataArray(a.data * np.float32(1), dims=a.dims)),
                (ROLLING, "avgpool.xarray.rolling_mean",
                 lambda a: ax.rolling_mean(a, {"y": 15, "x": 15}, center=True, min_periods=1)),
                (ROLLING, "xarray rolling().mean()",
                 lambda a: a.rolling(y=15, x=15, center=True, min_periods=1).mean()),
                (ROLLING, "map_overlap + scipy uniform_filter", overlap(_uniform_nan)),
                (ROLLING, "map_overlap + OpenCV boxFilter", overlap(_box_opencv)),
            ]
            for case, name, fn in (m for m in methods if cases in m[0]):
                # a cluster per method: fresh workers (a stopped method's may hang in a task)
                with cluster() as c, Client(c) as client:
                    result["rows"].append(_run_one(client, wait, root, case, name, fn, raster,
                                                   timeout_s))
            _compare(result, root, da)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


def _run_one(client: Any, wait: Callable, root: str, case: str, name: str, fn: Callable,
             raster: Callable, timeout_s: float) -> Dict[str, Any]:
    idle = max(client.run(_peak_rss_mib).values())
    out = os.path.join(root, re.sub(r"[^A-Za-z0-9]+", "_", f"{case}-{name}") + ".zarr")
    row: Dict[str, Any] = {"case": case, "method": name, "path": out, "idle_mib": idle}
    t0 = time.perf_counter()
    future = None
    try:
        res = fn(raster())
        if any(len(set(c[:-1])) > 1 or c[-1] > c[0] for c in res.chunks):  # zarr: uniform chunks
            res = res.chunk({d: c[0] for d, c in zip(res.dims, res.chunks)})
        lazy = res.to_dataset(name="v").to_zarr(out, mode="w", compute=False, consolidated=False)
        future = client.compute(lazy)
        wait(future, timeout=timeout_s)
        future.result()
        row["seconds"] = time.perf_counter() - t0
    except Exception as e:  # a timeout, or workers killed past their memory limit
        row["error"] = f"{type(e).__name__}: {str(e)[:120]}" if str(e) else type(e).__name__
        row["seconds"] = time.perf_counter() - t0
        if future is not None:
            client.cancel(future)
    peaks = client.run(_peak_rss_mib)
    row["peak_mib"] = max(peaks.values())
    row["peak_chunks"] = (row["peak_mib"] - idle) / (CHUNK * CHUNK * 4 / 2**20)
    return row


def _compare(result: Dict[str, Any], root: str, da: Any) -> None:
    """avgpool's result against xarray's, per case, where both finished."""
    import xarray as xr

    by_case: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for row in result["rows"]:
        by_case.setdefault(row["case"], {})[row["method"]] = row
    for case, rows in by_case.items():
        ours = next(r for m, r in rows.items() if m.startswith("avgpool"))
        theirs = next((r for m, r in rows.items() if m.startswith("xarray")), None)
        if theirs is None or "error" in ours or "error" in theirs:
            continue
        a = xr.open_zarr(ours["path"], consolidated=False)["v"].data
        b = xr.open_zarr(theirs["path"], consolidated=False)["v"].data.rechunk(a.chunks)
        agree = da.map_blocks(_close, a, b, dtype=bool, chunks=(1, 1)).all().compute()
        ours["equal_to_xarray"] = bool(agree)


def format_scale_table(result: Dict[str, Any]) -> str:
    lines = [["case", "method", "seconds", "vs avgpool", "peak MiB/worker", "above idle, chunks",
              "note"]]
    best: Dict[str, float] = {}
    for r in result["rows"]:
        if r["method"].startswith("avgpool") and "error" not in r:
            best[r["case"]] = r["seconds"]
    for r in result["rows"]:
        ratio = (f"{r['seconds'] / best[r['case']]:.1f}x" if r["case"] in best and "error" not in r
                 else "")
        note = r.get("error", "")
        if "equal_to_xarray" in r:
            note = "equal to xarray's" if r["equal_to_xarray"] else "DIFFERS from xarray's"
        secs = f"{r['seconds']:.1f}" if "error" not in r else f">{r['seconds']:.0f}"
        lines.append([r["case"], r["method"], secs, ratio, f"{r['peak_mib']:.0f}",
                      f"{r['peak_chunks']:.1f}", note])
    from . import _bench

    chunk_mib = result["chunk"] ** 2 * 4 / 2**20
    out = [f"scale-out: float32 raster {result['side']} x {result['side']} "
           f"({result['gib']:.1f} GiB, 1 % NaN) as zarr in {result['chunk']} x {result['chunk']} "
           f"chunks ({chunk_mib:g} MiB); LocalCluster of {result['workers']} worker processes x 1 thread, "
           f"memory limit {result['memory_limit']} each; writing it took "
           f"{result['write_s']:.0f} s", ""]
    out += _bench._columns(lines)
    out += ["", "seconds: read, compute, write the result as zarr (wall); vs avgpool: that time "
            f"over avgpool's; peak: the largest worker's peak resident memory, and how many "
            f"{chunk_mib:g} MiB chunks above its idle size; '>': stopped (timeout or workers "
            f"killed)"]
    return "\n".join(out)
