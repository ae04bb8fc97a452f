"""ONNX AveragePool (opsets 1 to 22) and GlobalAveragePool.

Inputs are channels first (N, C, D1, ..., Dn) as ONNX defines them. Where the ONNX reference
evaluator and onnxruntime differ, this front end follows (docs/semantics.md, rulings R1-R9):

- ``ceil_mode=1``: a last window that would start inside the right padding is dropped (both agree);
  positions past the padded end never count in the divisor; a last window two or more positions
  past the padded end is placed as the core model places it (onnxruntime, R6); a window larger
  than the padded input gives the one window the ceil formula allows (R1); an end pad >= the
  window takes the core model's windows (R9).
- An empty window (``count_include_pad=0`` and a padding >= the kernel) gives NaN, and pads >= the
  kernel with ``count_include_pad=1`` count in the divisor, as ``onnx.reference`` does (R5;
  onnxruntime rejects such pads).
- ``auto_pad="VALID"`` with ``ceil_mode=1`` is explicit zero pads with the ceil rule, as
  onnxruntime computes it (``onnx.reference`` refuses the combination); VALID sizes the output
  with the dilated window (R7).
- ``SAME_UPPER`` / ``SAME_LOWER`` ignore ``ceil_mode`` (R4) and apply a negative total padding
  (stride > window) as onnxruntime does, by cropping the input (R3).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Optional, Sequence, Tuple

from . import _api
from ._api import as_array, is_torch
from ._desc import INT64_MAX, AdaptiveAveragePoolingDesc, AveragePoolingDesc, as_ints
from ._frontend import (CEIL_DROP, FLOOR, choice, crop, flag, per_axis, pooled_size, renamed,
                        same_padding, spatial_shape, spatial_size)

__all__ = ["average_pool", "global_average_pool"]

_AUTO_PAD = ("notset", "valid", "same_upper", "same_lower")
# the core's argument names in error messages, as ONNX calls them
_NAMES = {"window_size": "kernel_shape", "start_padding": "pads", "end_padding": "pads",
          "output_sizes": "kernel_shape/strides/pads"}


def average_pool(x: Any, kernel_shape: Sequence[int], *, strides: Optional[Sequence[int]] = None,
                 pads: Optional[Sequence[int]] = None, auto_pad: str = "NOTSET",
                 ceil_mode: int = 0, count_include_pad: int = 0,
                 dilations: Optional[Sequence[int]] = None) -> Any:
    """ONNX ``AveragePool``: average over windows of ``kernel_shape`` (any opset).

    Per spatial axis with ``ek = (k - 1) * dilation + 1`` and ``pads = [b1, .., bn, e1, .., en]``::

        NOTSET: out = floor_or_ceil((in + b + e - ek) / stride) + 1   (ceil when ceil_mode=1,
                dropping a last window that would start at or past in + b)
        VALID:  as NOTSET with zero pads
        SAME_*: out = ceil(in / stride), total pad (out - 1) * stride + ek - in, the odd one at
                the end (SAME_UPPER) or the start (SAME_LOWER); a negative total crops the input

    Padded positions count in the divisor when ``count_include_pad=1`` (opset 1 behaves as 0).
    ``x`` is a numpy array, a torch tensor (a tensor comes back) or any array-like.

    >>> import numpy as np
    >>> from avgpool import onnx
    >>> x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    >>> onnx.average_pool(x, [3], strides=[3], pads=[1, 1], ceil_mode=1, count_include_pad=1)
    array([[[1., 4., 3.]]], dtype=float32)
    """
    a = as_array(x)
    kernel = as_ints(kernel_shape, "kernel_shape")
    with renamed(_NAMES):
        desc, cropped = _pool_desc(
            tuple(spatial_shape(a, len(kernel), "kernel_shape")), kernel,
            None if strides is None else as_ints(strides, "strides"),
            None if pads is None else as_ints(pads, "pads"),
            choice(auto_pad, "auto_pad", _AUTO_PAD), flag(ceil_mode, "ceil_mode"),
            flag(count_include_pad, "count_include_pad"),
            None if dilations is None else as_ints(dilations, "dilations"))
        if cropped is not None:  # negative SAME pads (R3): pool the cropped input
            x = crop(x if is_torch(x) else a, *cropped)
        return _api.average_pool(x, desc)


@lru_cache(maxsize=256)
def _pool_desc(spatial: Tuple[int, ...], kernel: Tuple[int, ...],
               strides: Optional[Tuple[int, ...]], pads: Optional[Tuple[int, ...]], auto_pad: str,
               ceil_mode: bool, count_include_pad: bool, dilations: Optional[Tuple[int, ...]]
               ) -> Tuple[AveragePoolingDesc, Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]]]:
    """The descriptor, and the (begin, end) pads whose negative entries crop the input (None
    when no pad is negative)."""
    rank = len(kernel)
    if not 1 <= rank <= 3:
        raise ValueError(f"kernel_shape must have 1, 2 or 3 entries, got {rank}")
    kernel = per_axis(kernel, "kernel_shape", rank, low=1)
    strides = per_axis(strides, "strides", rank, 1, low=1)
    dilations = per_axis(dilations, "dilations", rank, 1, low=1)
    pads = per_axis(pads, "pads", 2 * rank, 0, low=0)
    begin, end, outs = [], [], []
    for a in range(rank):
        size, k, s = spatial_size(spatial, a), kernel[a], strides[a]
        ek = (k - 1) * dilations[a] + 1
        if ek > INT64_MAX:
            raise ValueError(f"kernel_shape/dilations: the effective kernel (kernel_shape[{a}] - 1) "
                             f"* dilations[{a}] + 1 must fit in int64")
        if auto_pad in ("same_upper", "same_lower"):  # ceil_mode plays no part (R4)
            pb, pe, out = same_padding(size, ek, s, auto_pad == "same_upper", negative=True)
        else:
            pb, pe = (0, 0) if auto_pad == "valid" else (pads[a], pads[a + rank])
            # VALID with ceil_mode: onnxruntime's rule, zero pads
            out = pooled_size(size, ek, s, pb, pe, CEIL_DROP if ceil_mode else FLOOR,
                              "kernel_shape", a, large_window=True)
        begin.append(pb)
        end.append(pe)
        outs.append(out)
    cropped = None
    if min(begin + end) < 0:
        cropped = (tuple(begin), tuple(end))
        begin, end = [max(0, p) for p in begin], [max(0, p) for p in end]
    desc = AveragePoolingDesc(kernel, strides, tuple(begin), tuple(end), dilations,
                              include_padding=count_include_pad, output_sizes=tuple(outs))
    return desc, cropped


def global_average_pool(x: Any) -> Any:
    """ONNX ``GlobalAveragePool``: the mean over all spatial axes, keeping them as size 1.

    ``y[n, c, 1, ..., 1] = mean(x[n, c, ...])``

    >>> import numpy as np
    >>> from avgpool import onnx
    >>> onnx.global_average_pool(np.arange(8, dtype=np.float32).reshape(1, 2, 4)).ravel()
    array([1.5, 5.5], dtype=float32)
    """
    a = as_array(x)
    if not 3 <= a.ndim <= 5:
        raise ValueError(f"x: expected a 3-D, 4-D or 5-D input (N, C, spatial...), got shape {a.shape}")
    return _api.adaptive_average_pool(x, _global_desc(a.ndim - 2))


@lru_cache(maxsize=None)
def _global_desc(rank: int) -> AdaptiveAveragePoolingDesc:
    return AdaptiveAveragePoolingDesc((1,) * rank)
