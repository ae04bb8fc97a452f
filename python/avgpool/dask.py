"""Pooling of dask arrays: one task per output chunk, each a tile of the whole array.

Every output chunk is pooled by :func:`avgpool.pool_tile` from the input box its windows read
(the chunk's own input and the halo around it, gathered from the input chunks that hold it, or
read straight from the store when the chunks are reads of one, as ``da.from_zarr`` and
``xarray.open_zarr`` make them), so padding, divisors and ceil-rule or adaptive windows are those
of the whole array and the result does not depend on the chunking. The graph is ordinary dask: it runs on the threaded scheduler,
on processes, or on a ``dask.distributed`` cluster (descriptors pickle).

>>> import dask.array as da, numpy as np, avgpool, avgpool.dask
>>> x = da.from_array(np.arange(32, dtype=np.float32).reshape(1, 1, 4, 8), chunks=(1, 1, 2, 3))
>>> desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
>>> avgpool.dask.average_pool(x, desc).compute()[0, 0]
array([[ 4.5,  6.5,  8.5, 10.5],
       [20.5, 22.5, 24.5, 26.5]], dtype=float32)
"""

from __future__ import annotations

import itertools
import operator
from bisect import bisect_right
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

import dask.array as da
import numpy as np
from dask.highlevelgraph import HighLevelGraph
from dask.base import tokenize

from ._api import _any_desc, _on_axes, _shape_tuple, pool_tile, tile_input_region
from ._desc import AdaptiveAveragePoolingDesc, AveragePoolingDesc

__all__ = ["average_pool", "adaptive_average_pool", "global_average_pool"]

Desc = Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc]


def average_pool(x: Any, desc: AveragePoolingDesc, *, layout: str = "NCHW",
                 num_threads: Optional[int] = 1) -> da.Array:
    """:func:`avgpool.average_pool` of a dask array (or anything ``dask.array.asarray`` takes),
    lazily: one task per output chunk, equal to the in-memory call on the same data.

    ``x`` may be chunked along any axes. Output chunks follow the input's: along a spatial axis,
    an output chunk holds the outputs whose windows are centred in one input chunk (so a
    stride-1 'same' window keeps chunks of multiples of 16), its start rounded to a multiple of
    16 outputs, where the kernels that slide sums restart them. Each task reads
    its windows' input (its chunk's share plus the halo) and writes one output chunk, so its
    memory is a chunk, its halo and its output, whatever the chunking. ``num_threads`` is per
    task (default 1: dask runs tasks side by side).
    """
    if not isinstance(desc, AveragePoolingDesc):
        raise TypeError(f"desc must be an AveragePoolingDesc, got {type(desc).__name__}")
    return _pool(x, desc, layout, num_threads)


def adaptive_average_pool(x: Any,
                          desc_or_output_sizes: Union[AdaptiveAveragePoolingDesc, Sequence[int]],
                          *, layout: str = "NCHW", num_threads: Optional[int] = 1) -> da.Array:
    """:func:`avgpool.adaptive_average_pool` of a dask array; chunks and tasks as in
    :func:`average_pool`."""
    desc = _any_desc(desc_or_output_sizes)
    if not isinstance(desc, AdaptiveAveragePoolingDesc):
        raise TypeError(f"desc_or_output_sizes must be an AdaptiveAveragePoolingDesc or output "
                        f"sizes, got {type(desc_or_output_sizes).__name__}")
    return _pool(x, desc, layout, num_threads)


def global_average_pool(x: Any, *, layout: str = "NCHW") -> da.Array:
    """The mean over every spatial axis (ONNX GlobalAveragePool) of a dask array, keeping them as
    size 1: ``(N, C, 1, ...)`` or ``(N, 1, ..., C)``.

    One window covers each whole plane, so no tile holds it: each chunk's sum goes into a
    float64 tree reduction (dask's ``mean``), whatever the input dtype, and the result is cast
    back to it. It equals the in-memory call within float tolerance (the summation order
    differs), not bit for bit.
    """
    arr = da.asarray(x)
    axes = _spatial_axes(arr.ndim, layout, "x")
    if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
        raise TypeError(f"x: dtype {arr.dtype} is not supported; use float32, float64, float16 or "
                        f"bfloat16")
    for a in axes:
        if arr.shape[a] < 1:
            raise ValueError(f"x: spatial sizes must be >= 1, got shape {arr.shape}")
    mean = arr.astype(np.float64).mean(axis=axes, keepdims=True)
    return mean.astype(arr.dtype)


def _spatial_axes(ndim: int, layout: str, name: str) -> Tuple[int, ...]:
    if not isinstance(layout, str) or layout.upper() not in ("NCHW", "NHWC"):
        raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
    if not 3 <= ndim <= 5:
        raise ValueError(f"{name} must have 3 to 5 dimensions (N, C and 1 to 3 spatial axes), got "
                         f"{ndim}")
    return tuple(range(2, ndim)) if layout.upper() == "NCHW" else tuple(range(1, ndim - 1))


def _bounds(chunks: Sequence[int]) -> List[int]:
    out = [0]
    for c in chunks:
        out.append(out[-1] + c)
    return out


# Output chunks start at multiples of this many outputs: where the kernels that carry float32
# sums from output to output restart them in the whole call (channels-last sliding sums along W,
# vertical running sums along H: every 16 outputs), so a chunk's sums are the whole call's.
ANCHOR = 16


def _output_chunks(desc: Desc, axis: int, n_in: int, n_out: int,
                   in_bounds: List[int]) -> Tuple[int, ...]:
    """Output chunks along one spatial axis: the outputs whose windows are centred in each input
    chunk, so 'same' windows keep the input's chunks, each start rounded to a multiple of ANCHOR
    (empty chunks dropped)."""
    cuts = [0]
    for b in in_bounds[1:-1]:
        if isinstance(desc, AveragePoolingDesc):
            # the descriptor has filled every per-axis field (None becomes the default)
            s = cast(Tuple[int, ...], desc.strides)[axis]
            pb = cast(Tuple[int, ...], desc.start_padding)[axis]
            d = cast(Tuple[int, ...], desc.dilations)[axis]
            half = (desc.window_size[axis] - 1) * d // 2
            o = -(-(b + pb - half) // s)  # first output whose window's centre is at or after b
        else:
            o = -(-(b * n_out) // n_in)  # first adaptive window starting at or after b
        o = (o + ANCHOR // 2) // ANCHOR * ANCHOR
        cuts.append(min(max(o, cuts[-1]), n_out))
    cuts.append(n_out)
    return tuple(b - a for a, b in zip(cuts, cuts[1:]) if b > a)


def _pool(x: Any, desc: Desc, layout: Optional[str], num_threads: Optional[int],
          pooled: Optional[Sequence[int]] = None) -> da.Array:
    """The graph of :func:`average_pool` / :func:`adaptive_average_pool`. With ``pooled`` (for
    :mod:`avgpool.xarray`), those axes of an array of any rank are pooled, in the descriptor's
    axis order, and every other axis is a batch axis; ``layout`` is then None."""
    arr = da.asarray(x)
    if pooled is None:
        axes = _spatial_axes(arr.ndim, cast(str, layout), "x")
        if len(axes) != desc.rank:
            raise ValueError(f"x: the descriptor has {desc.rank} spatial axes, so x must have "
                             f"{desc.rank + 2} dimensions, got shape {arr.shape}")
    else:
        axes = pooled = tuple(pooled)
    if any(n != n for n in arr.shape):  # NaN: dask's unknown size
        raise ValueError("x: chunk sizes must be known (call compute_chunk_sizes() first)")
    shape = _shape_tuple(arr.shape)
    # the whole array as pool_tile sees it: the array itself, or N = C = 1 and the pooled axes
    whole = shape if pooled is None else (1, 1) + tuple(shape[a] for a in axes)
    tile_axes = axes if pooled is None else tuple(range(2, 2 + len(axes)))
    tile_layout = cast(str, layout) if pooled is None else "NCHW"
    whole_out = desc.output_shape(whole, tile_layout)  # validates desc against the whole shape
    out_shape = list(shape)
    for a, t in zip(axes, tile_axes):
        out_shape[a] = whole_out[t]

    in_bounds = [_bounds(c) for c in arr.chunks]
    out_chunks = list(arr.chunks)
    for i, a in enumerate(axes):
        out_chunks[a] = _output_chunks(desc, i, shape[a], out_shape[a], in_bounds[a])
    out_bounds = [_bounds(c) for c in out_chunks]

    reader = _region_reader(arr, in_bounds)
    name = "avgpool-" + tokenize(arr, desc, layout, num_threads, pooled)
    dsk: Dict[Any, Any] = {}
    tiles = []
    for index in itertools.product(*(range(len(c)) for c in out_chunks)):
        box = [(out_bounds[d][i], out_bounds[d][i + 1]) for d, i in enumerate(index)]
        out_region = tuple(box[a] for a in axes)
        region = tile_input_region(desc, whole, list(out_region), layout=tile_layout)
        in_box = list(box)
        for a, r in zip(axes, region):
            in_box[a] = (r.start, r.stop)
        tiles.append((index, out_region, in_box))
    if reader is not None:
        reads = _read_tasks(dsk, name, reader, arr, in_bounds, [t[2] for t in tiles])
    for j, (index, out_region, in_box) in enumerate(tiles):
        tile = (reads[j] if reader is not None
                else _gather_task(dsk, name, index, arr, in_bounds, in_box))
        dsk[(name,) + index] = (_pool_block, tile, desc, whole, out_region, pooled, tile_layout,
                                num_threads)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[arr])
    return da.Array(graph, name, chunks=tuple(out_chunks), dtype=arr.dtype,
                    meta=np.empty((0,) * arr.ndim, arr.dtype))


def _read_tasks(dsk: Dict[Any, Any], name: str, reader: Tuple[Any, Any, Any], arr: da.Array,
                in_bounds: List[List[int]], boxes: List[List[Tuple[int, int]]]) -> List[Any]:
    """The tasks that read each tile (its input box, halo included) from the source, with no
    task holding a neighbour's chunk.

    A tile reads its home chunk (the one it overlaps most) itself. The parts it needs of other
    chunks (the halo) come from one task per chunk that reads the chunk once and keeps only
    the parts its neighbours need, when these are thin (at most half the chunk, summed):
    a store that reads whole chunks (zarr) then reads each chunk twice, not once per tile
    that overlaps it (up to 9 times for a 2-D halo). Other parts are read by the tile itself,
    one read per chunk it overlaps, one part in memory at a time.
    """
    source, getter, kwargs = reader
    layouts = []  # per tile: its parts as (chunk index, slices in the chunk, place in tile)
    wanted: Dict[Tuple[int, ...], List[Tuple[slice, ...]]] = {}  # halo parts per chunk
    for in_box in boxes:
        keys, src, dst = _pieces(arr.name, in_bounds, in_box)
        parts = [(key[1:], sl, d) for key, sl, d in zip(keys, src, dst)]
        home = max(range(len(parts)), key=lambda j: _volume(parts[j][1]))
        for j, (c, sl, _) in enumerate(parts):
            if j != home:
                wanted.setdefault(c, []).append(sl)
        layouts.append((parts, home))
    halo_name = name + "-halo"
    shared = {}
    for c, sls in wanted.items():
        where = _chunk_slices(in_bounds, c)
        if 2 * sum(_volume(sl) for sl in sls) <= _volume(where):
            shared[c] = 0
            dsk[(halo_name,) + c] = (_read_parts, source, getter, kwargs, where, tuple(sls))
    tasks = []
    for (parts, home), in_box in zip(layouts, boxes):
        direct, pieces, piece_dst = [], [], []
        for j, (c, sl, d) in enumerate(parts):
            if j != home and c in shared:
                pieces.append((operator.getitem, (halo_name,) + c, shared[c]))
                piece_dst.append(d)
                shared[c] += 1
            else:  # the part's slices in the source
                direct.append((tuple(slice(w.start + t.start, w.start + t.stop)
                                     for w, t in zip(_chunk_slices(in_bounds, c), sl)), d))
        tasks.append((_read, source, getter, kwargs, tuple(hi - lo for lo, hi in in_box),
                      arr.dtype, tuple(direct), pieces, tuple(piece_dst)))
    return tasks


def _volume(slices: Sequence[slice]) -> int:
    n = 1
    for s in slices:
        n *= s.stop - s.start
    return n


def _chunk_slices(bounds: List[List[int]], index: Tuple[int, ...]) -> Tuple[slice, ...]:
    """A chunk's slices within its array (``bounds``: each axis's chunk bounds)."""
    return tuple(slice(b[i], b[i + 1]) for b, i in zip(bounds, index))


def _gather_task(dsk: Dict[Any, Any], name: str, index: Tuple[int, ...], arr: da.Array,
                 in_bounds: List[List[int]], in_box: List[Tuple[int, int]]) -> Any:
    """The task that assembles a tile from the input chunks it overlaps. The parts of
    neighbouring chunks (the halo) come as slices of their own, so that the task holds its
    chunk and thin strips, not every chunk it touches."""
    keys, src, dst = _pieces(arr.name, in_bounds, in_box)
    pieces = []
    for j, (key, sl) in enumerate(zip(keys, src)):
        shape = _chunk_shape(arr.chunks, key[1:])
        if all(s.start == 0 and s.stop == n for s, n in zip(sl, shape)):
            pieces.append(key)
        else:
            piece = (name + "-halo",) + index + (j,)
            dsk[piece] = (operator.getitem, key, sl)
            pieces.append(piece)
    tile_shape = tuple(hi - lo for lo, hi in in_box)
    return (_assemble, pieces, dst, tile_shape, arr.dtype)


def _region_reader(arr: da.Array, bounds: List[List[int]]
                   ) -> Optional[Tuple[Any, Any, Tuple[Tuple[str, Any], ...]]]:
    """(source key, getter, keyword arguments) when every chunk of ``arr`` (its bounds per axis:
    ``bounds``) is one
    ``getter(source, chunk's slices)`` call on one source (``da.from_zarr``,
    ``xarray.open_zarr``, ``da.from_array`` of a lazy array-like), else None.

    Then a task can read its tile, halo included, from the source (one call per input chunk
    it overlaps) instead of waiting for its neighbours' chunks. This looks at dask's task objects
    (``dask._task_spec``); any other graph, or another version's, takes the general path.
    """
    try:
        from dask._task_spec import DataNode, Task, TaskRef
        from dask.array.core import getter, getter_inline, getter_nofancy

        layer = arr.dask.layers[arr.name]
        source = None
        for index in itertools.product(*(range(len(c)) for c in arr.chunks)):
            task = layer[(arr.name,) + index]
            if (not isinstance(task, Task) or task.func not in (getter, getter_nofancy,
                                                                getter_inline)
                    or len(task.args) != 2 or not isinstance(task.args[0], TaskRef)
                    or not isinstance(task.args[1], DataNode)):
                return None
            ref = task.args[0].key
            if source is None:
                source, func = ref, task.func
                kwargs = []
                for k, v in task.kwargs.items():
                    if not isinstance(v, DataNode):
                        return None
                    kwargs.append((k, v.value))
            if ref != source or task.func is not func:
                return None
            if tuple(task.args[1].value) != _chunk_slices(bounds, index):
                return None
        return source, func, tuple(kwargs)
    except Exception:  # another dask's graph objects: the general path is always right
        return None


def _pieces(name: str, bounds: List[List[int]], box: List[Tuple[int, int]]
            ) -> Tuple[List[Any], List[Tuple[slice, ...]], List[Tuple[slice, ...]]]:
    """The input chunks a box overlaps: their keys, the part of each inside the box, and where
    that part goes in the box."""
    per_axis = []
    for b, (lo, hi) in zip(bounds, box):
        first = bisect_right(b, lo) - 1
        parts = []
        for c in range(first, len(b) - 1):
            if b[c] >= hi:
                break
            a0, a1 = max(lo, b[c]), min(hi, b[c + 1])
            parts.append((c, slice(a0 - b[c], a1 - b[c]), slice(a0 - lo, a1 - lo)))
        per_axis.append(parts)
    keys, src, dst = [], [], []
    for combo in itertools.product(*per_axis):
        keys.append((name,) + tuple(c for c, _, _ in combo))
        src.append(tuple(s for _, s, _ in combo))
        dst.append(tuple(d for _, _, d in combo))
    return keys, src, dst


def _chunk_shape(chunks: Tuple[Tuple[int, ...], ...], index: Tuple[int, ...]) -> Tuple[int, ...]:
    return tuple(c[i] for c, i in zip(chunks, index))


def _read(source: Any, getter: Any, kwargs: Tuple[Tuple[str, Any], ...],
          tile_shape: Tuple[int, ...], dtype: np.dtype,
          parts: Tuple[Tuple[Tuple[slice, ...], Tuple[slice, ...]], ...],
          pieces: Sequence[np.ndarray] = (), piece_dst: Sequence[Tuple[slice, ...]] = ()
          ) -> np.ndarray:
    """A tile read from the source array: each part (the source's slices, where they go in the
    tile) with one getter call, one part in memory at a time, and the pieces (where they go:
    piece_dst) already read by other tasks."""
    kw = dict(kwargs)
    reads = (getter(source, where, **kw) for where, _ in parts)
    return _assemble(itertools.chain(pieces, reads), [*piece_dst, *(d for _, d in parts)],
                     tile_shape, dtype)


def _read_parts(source: Any, getter: Any, kwargs: Tuple[Tuple[str, Any], ...],
                where: Tuple[slice, ...], parts: Tuple[Tuple[slice, ...], ...]
                ) -> Tuple[np.ndarray, ...]:
    """One read of a chunk (the source's slices ``where``), of which only ``parts`` (slices in
    the chunk) are kept, as copies, so that the chunk itself is freed."""
    block = np.asarray(getter(source, where, **dict(kwargs)))
    return tuple(block[sl].copy() for sl in parts)


def _assemble(pieces: Iterable[Any], dst: Sequence[Tuple[slice, ...]],
              tile_shape: Tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A tile from the pieces that partition it (dst: where each goes), taken one at a time."""
    if len(dst) == 1:  # the one piece is the tile
        return np.asarray(next(iter(pieces)))
    tile = np.empty(tile_shape, dtype)
    for piece, d in zip(pieces, dst):
        tile[d] = piece
    return tile


def _pool_block(tile: np.ndarray, desc: Desc, whole: Tuple[int, ...],
                out_region: Tuple[Tuple[int, int], ...], pooled: Optional[Sequence[int]],
                layout: str, num_threads: Optional[int]) -> np.ndarray:
    """One output chunk from its tile. With ``pooled`` axes, the other axes are folded into N
    (C = 1) for the call and unfolded after it."""
    if pooled is None:
        return pool_tile(tile, desc, whole, out_region, layout=layout, num_threads=num_threads)
    return _on_axes(tile, pooled, lambda t: pool_tile(t, desc, whole, out_region, layout=layout,
                                                      num_threads=num_threads))
