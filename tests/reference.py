"""Float64 brute-force reference for the core model of docs/semantics.md section 1.

Written straight from the definitions, loops over output positions and window taps, numpy only
over the (N, C) plane. Independent of the library: it must not import avgpool.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

__all__ = ["ref_average_pool", "ref_adaptive_average_pool", "ref_output_size",
           "ref_average_pool_backward", "ref_adaptive_average_pool_backward",
           "ref_scatter_backward"]


def _to_channels_first(x, layout):
    if layout == "NCHW":
        return x
    if layout == "NHWC":
        r = x.ndim - 2
        return np.transpose(x, (0, x.ndim - 1) + tuple(range(1, r + 1)))
    raise ValueError(layout)


def _from_channels_first(y, layout):
    if layout == "NCHW":
        return y
    r = y.ndim - 2
    return np.transpose(y, (0,) + tuple(range(2, r + 2)) + (1,))


def ref_output_size(n, k, s, pb, pe, d):
    """Floor rule: floor((in + pb + pe - ek) / s) + 1, ek = (k - 1) * d + 1."""
    ek = (k - 1) * d + 1
    if n + pb + pe < ek:
        raise ValueError("effective window larger than the padded input")
    return (n + pb + pe - ek) // s + 1


def _window_sum(xc, positions, omit):
    """(sum, NaN count, positions) over the (N, C) vectors of xc at the given positions; with
    omit, NaN values leave the sum and are counted instead."""
    total = np.zeros(xc.shape[:2], dtype=np.float64)
    nans = np.zeros(xc.shape[:2], dtype=np.int64)
    count = 0
    for pos in positions:
        v = xc[(slice(None), slice(None)) + tuple(pos)]
        if omit:
            nans = nans + np.isnan(v)
            v = np.where(np.isnan(v), 0.0, v)
        total = total + v
        count += 1
    return total, nans, count


def ref_average_pool(x, window, strides=None, start_padding=None, end_padding=None,
                     dilations=None, include_padding=False, output_sizes=None,
                     count_overhang=False, divisor_override=None, layout="NCHW",
                     nan_policy="propagate", min_count=1):
    """Windowed average pooling of ``x`` (float64 result) per docs/semantics.md section 1;
    ``nan_policy="omit"``: a NaN tap leaves the sum and the divisor, and a window with fewer than
    ``min_count`` non-NaN taps gives NaN."""
    omit = nan_policy == "omit"
    x = np.asarray(x, dtype=np.float64)
    r = len(window)
    assert x.ndim == r + 2
    strides = tuple(strides) if strides is not None else (1,) * r
    pb_all = tuple(start_padding) if start_padding is not None else (0,) * r
    pe_all = tuple(end_padding) if end_padding is not None else (0,) * r
    dil = tuple(dilations) if dilations is not None else (1,) * r
    xc = _to_channels_first(x, layout)
    N, C = xc.shape[:2]
    ins = xc.shape[2:]
    if output_sizes is None:
        outs = tuple(ref_output_size(ins[a], window[a], strides[a], pb_all[a], pe_all[a], dil[a])
                     for a in range(r))
    else:
        outs = tuple(output_sizes)
        for a in range(r):
            assert outs[a] >= 1
            # with count_overhang (OpenVINO ceil) a window may start past the padded end
            assert count_overhang or (outs[a] - 1) * strides[a] - pb_all[a] < ins[a] + pe_all[a]

    y = np.empty((N, C) + outs, dtype=np.float64)
    for o in itertools.product(*(range(n) for n in outs)):
        # Positions of every tap, per axis.
        taps = [[o[a] * strides[a] - pb_all[a] + j * dil[a] for j in range(window[a])]
                for a in range(r)]
        total, nans, valid = _window_sum(
            xc, (pos for pos in itertools.product(*taps)
                 if all(0 <= pos[a] < ins[a] for a in range(r))), omit)
        if divisor_override is not None:
            divisor = divisor_override
        else:
            divisor = 1
            for a in range(r):
                if not include_padding and count_overhang and taps[a][0] >= ins[a]:
                    # OpenVINO's min(start + k, in) - max(start, 0): 0 for a window starting
                    # at the input's end, negative past it (0 / negative = -0)
                    count = ins[a] - taps[a][0]
                elif not include_padding:
                    count = sum(1 for p in taps[a] if 0 <= p < ins[a])
                elif count_overhang:
                    count = window[a]
                else:
                    count = sum(1 for p in taps[a] if -pb_all[a] <= p < ins[a] + pe_all[a])
                divisor *= count
        if omit:
            div = np.full((N, C), divisor, np.float64) if divisor_override is not None else (
                divisor - nans).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = np.where(div == 0, math.nan, total / np.where(div == 0, 1, div))
            y[(slice(None), slice(None)) + o] = np.where(valid - nans < min_count, math.nan, mean)
        elif divisor == 0:
            y[(slice(None), slice(None)) + o] = math.nan
        else:  # an empty window over a negative divisor: -0, as IEEE division gives
            y[(slice(None), slice(None)) + o] = total / divisor
    return _from_channels_first(y, layout)


def ref_adaptive_average_pool(x, output_sizes, layout="NCHW", nan_policy="propagate",
                              min_count=1):
    """Adaptive average pooling: window of i is [floor(i*in/out), ceil((i+1)*in/out)); NaN
    handling as in ref_average_pool."""
    omit = nan_policy == "omit"
    x = np.asarray(x, dtype=np.float64)
    r = len(output_sizes)
    assert x.ndim == r + 2
    xc = _to_channels_first(x, layout)
    N, C = xc.shape[:2]
    ins = xc.shape[2:]
    outs = tuple(output_sizes)
    y = np.empty((N, C) + outs, dtype=np.float64)
    for o in itertools.product(*(range(n) for n in outs)):
        bounds = []
        for a in range(r):
            start = (o[a] * ins[a]) // outs[a]
            end = -((-(o[a] + 1) * ins[a]) // outs[a])  # ceil
            bounds.append(range(start, end))
        total, nans, count = _window_sum(xc, itertools.product(*bounds), omit)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = total / (count - nans)
        if omit:
            mean = np.where(count - nans < min_count, math.nan, mean)
        y[(slice(None), slice(None)) + o] = mean
    return _from_channels_first(y, layout)


def _transpose_of(forward, grad_out, input_shape, layout):
    """grad_out pulled back through the linear map `forward` (channels first, float64): run it
    on every unit input e_i at once (the identity as the batch axis) to get the weight of input
    position i in each output o, then gx[n, c, i] = sum over o of weight[i, o] * g[n, c, o]."""
    gc = _to_channels_first(np.asarray(grad_out, dtype=np.float64), layout)
    ins = tuple(_to_channels_first(np.empty(input_shape, np.int8), layout).shape[2:])
    size = math.prod(ins)
    weights = forward(np.eye(size).reshape((size, 1) + ins))[:, 0]  # (i, *outs)
    # windows without a derivative (a divisor of 0 gives NaN whatever x holds) send nothing
    weights = np.where(np.isfinite(weights), weights, 0.0).reshape(size, -1)
    N, C = gc.shape[:2]
    gx = (gc.reshape(N, C, -1) @ weights.T).reshape((N, C) + ins)
    return _from_channels_first(gx, layout)


def ref_average_pool_backward(grad_out, input_shape, window, layout="NCHW", **kwargs):
    """Gradient of ref_average_pool (same keyword arguments) with respect to an x of
    input_shape, float64, per docs/semantics.md: every valid tap of window o receives
    grad_out[o] / divisor(o); a divisor of 0 sends nothing. Derived as the transpose of the
    forward reference, so it shares no code path with the library's gather."""
    return _transpose_of(lambda e: ref_average_pool(e, window, **kwargs), grad_out, input_shape,
                         layout)


def ref_adaptive_average_pool_backward(grad_out, input_shape, output_sizes, layout="NCHW"):
    """Gradient of ref_adaptive_average_pool with respect to an x of input_shape (float64), the
    transpose of the forward reference."""
    return _transpose_of(lambda e: ref_adaptive_average_pool(e, output_sizes), grad_out,
                         input_shape, layout)


def ref_scatter_backward(grad_out, input_shape, window, strides, start_padding, divisor=None,
                         dilations=None):
    """The same gradient for images too large for the transpose above (channels first,
    float64), straight from the definition as a scatter: window o covers inputs
    o * s - p + t * d for t < k on each axis, and each valid one gets grad_out[o] / divisor(o),
    o's valid taps (padding excluded) or the constant `divisor` (an override, or padding
    counted where no window reaches past it). The output sizes are grad_out's. One tap
    combination at a time, numpy over the outputs (within one, distinct outputs reach distinct
    inputs)."""
    g = np.asarray(grad_out, dtype=np.float64)
    ins, outs = tuple(input_shape[2:]), g.shape[2:]
    dilations = dilations or (1,) * len(window)
    # per axis and tap: every output's input index, and where it lies inside the input
    index = [[np.arange(m) * s - p + t * d for t in range(k)]
             for m, s, p, k, d in zip(outs, strides, start_padding, window, dilations)]
    inside = [[(i >= 0) & (i < n) for i in taps] for taps, n in zip(index, ins)]
    counts = [np.sum(ok, axis=0) for ok in inside]
    with np.errstate(divide="ignore", invalid="ignore"):  # windows of no valid tap send nothing
        share = g / (functools.reduce(np.multiply.outer, counts) if divisor is None else divisor)
    gx = np.zeros(tuple(input_shape))
    for taps in itertools.product(*[range(k) for k in window]):
        ok = [inside[a][t] for a, t in enumerate(taps)]
        to = np.ix_(*[index[a][t][o] for a, (t, o) in enumerate(zip(taps, ok))])
        gx[(...,) + to] += share[(...,) + np.ix_(*[np.nonzero(o)[0] for o in ok])]
    return gx
