"""OpenVINO AvgPool-1, AvgPool-14 and AdaptiveAvgPool-8.

Inputs are channels first, 3-D, 4-D or 5-D. Behaviour measured against OpenVINO 2026.4 (CPU):

- ``rounding_type="ceil"`` keeps every window the ceil formula gives, even one starting in the
  right padding (NaN with ``exclude_pad=True``, 0 without); ``"ceil_torch"`` (AvgPool-14) drops a
  last window that would start in the right padding, as PyTorch does.
- Without ``exclude_pad`` the divisor is the whole kernel, positions past the padded end included
  — but only when some padding is non-zero: with all pads zero OpenVINO divides by the valid
  positions (a ceil window past the input then gives NaN).
- ``exclude_pad=True`` with a padding >= the kernel is rejected, as OpenVINO rejects it.
- ``auto_pad="valid"`` uses zero pads, ``same_upper`` / ``same_lower`` the ONNX SAME pads; every
  mode then applies ``rounding_type`` to the padded size (so ``same_*`` with ``ceil`` and a kernel
  smaller than the stride gives ``ceil((in - kernel) / stride) + 1`` outputs, as OpenVINO does).
- A kept ``ceil`` window with no input position divides as OpenVINO does, by
  ``min(start + kernel, in) - max(start, 0)`` per axis with exclude-pad (or no padding): NaN when
  it starts exactly at the input's end, a zero signed by the product of the axes' negative
  divisors past it (-0 in 1-D; ruling R8); 0 with include-pad.
- A kernel larger than the padded input is rejected in every rounding mode (R1).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence, Tuple

import numpy as np

from ._api import adaptive_average_pool, as_array, average_pool
from ._desc import AveragePoolingDesc, as_ints
from ._frontend import (CEIL, CEIL_DROP, FLOOR, adaptive_desc, choice, flag, per_axis, pooled_size,
                        renamed, same_padding, spatial_shape, spatial_size)

__all__ = ["avg_pool", "adaptive_avg_pool"]

_AUTO_PAD = ("explicit", "notset", "same_upper", "same_lower", "valid")
_ROUNDING = {"floor": FLOOR, "ceil": CEIL, "ceil_torch": CEIL_DROP}
# the core's argument names in error messages, as OpenVINO calls them
_NAMES = {"window_size": "kernel", "start_padding": "pads_begin", "end_padding": "pads_end",
          "output_sizes": "kernel/strides/pads"}


def avg_pool(x: Any, kernel: Sequence[int], *, strides: Sequence[int], pads_begin: Sequence[int],
             pads_end: Sequence[int], exclude_pad: bool, rounding_type: str = "floor",
             auto_pad: str = "explicit") -> Any:
    """OpenVINO ``AvgPool`` (opset 1 and 14): average over windows of ``kernel``.

    Per spatial axis (no dilation in AvgPool)::

        out = floor_or_ceil((in + pads_begin + pads_end - kernel) / strides) + 1

    ``exclude_pad=True`` divides by the positions inside the input, else by the whole kernel.
    ``rounding_type``: ``"floor"``, ``"ceil"`` (all windows kept) or ``"ceil_torch"`` (AvgPool-14,
    the last window is dropped when it would start in the right padding). ``auto_pad``:
    ``"explicit"`` (``"notset"``), ``"valid"``, ``"same_upper"``, ``"same_lower"``.

    >>> import numpy as np
    >>> from avgpool import openvino
    >>> x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    >>> openvino.avg_pool(x, [3], strides=[3], pads_begin=[1], pads_end=[1], exclude_pad=False,
    ...                   rounding_type="ceil")
    array([[[1., 4., 2.]]], dtype=float32)
    """
    a = as_array(x)
    kernel = as_ints(kernel, "kernel")
    with renamed(_NAMES):
        desc = _pool_desc(
            tuple(spatial_shape(a, len(kernel), "kernel")), kernel, as_ints(strides, "strides"),
            as_ints(pads_begin, "pads_begin"), as_ints(pads_end, "pads_end"),
            flag(exclude_pad, "exclude_pad"), choice(rounding_type, "rounding_type", _ROUNDING),
            choice(auto_pad, "auto_pad", _AUTO_PAD))
        return average_pool(x, desc)


@lru_cache(maxsize=256)
def _pool_desc(spatial: Tuple[int, ...], kernel: Tuple[int, ...], strides: Tuple[int, ...],
               pads_begin: Tuple[int, ...], pads_end: Tuple[int, ...], exclude_pad: bool,
               rounding: str, auto_pad: str) -> AveragePoolingDesc:
    rank = len(kernel)
    if not 1 <= rank <= 3:
        raise ValueError(f"kernel must have 1, 2 or 3 entries, got {rank}")
    kernel = per_axis(kernel, "kernel", rank, low=1)
    strides = per_axis(strides, "strides", rank, low=1)
    if auto_pad in ("explicit", "notset"):
        pads_begin = per_axis(pads_begin, "pads_begin", rank, low=0)
        pads_end = per_axis(pads_end, "pads_end", rank, low=0)
    else:  # ignored, as OpenVINO ignores them: only their length is checked
        as_ints(pads_begin, "pads_begin", rank)
        as_ints(pads_end, "pads_end", rank)
    begin, end, outs = [], [], []
    for a in range(rank):
        size, k, s = spatial_size(spatial, a), kernel[a], strides[a]
        if auto_pad in ("same_upper", "same_lower"):
            pb, pe, _ = same_padding(size, k, s, auto_pad == "same_upper")
        else:
            pb, pe = (0, 0) if auto_pad == "valid" else (pads_begin[a], pads_end[a])
            if exclude_pad and (pb >= k or pe >= k):
                raise ValueError(
                    f"pads_begin/pads_end: with exclude_pad every padding must be smaller than the "
                    f"kernel, got pads {pb}, {pe} for kernel {k} on spatial axis {a}")
        # every auto_pad mode applies rounding_type to the padded size, as OpenVINO does
        out = pooled_size(size, k, s, pb, pe, _ROUNDING[rounding], "kernel", a,
                          "pads_begin/pads_end")
        begin.append(pb)
        end.append(pe)
        outs.append(out)
    # Without any padding OpenVINO divides by the valid positions even when exclude_pad is
    # False (a ceil window hanging past the input is not padded); with padding it divides by
    # the whole kernel, positions past the padded end included.
    padded = any(begin) or any(end)
    return AveragePoolingDesc(kernel, strides, tuple(begin), tuple(end),
                              include_padding=padded and not exclude_pad, output_sizes=tuple(outs),
                              count_overhang=True)


def adaptive_avg_pool(x: Any, output_size: Any) -> Any:
    """OpenVINO ``AdaptiveAvgPool`` (opset 8): average over adaptive windows.

    ``output_size`` is a 1-D sequence or int32/int64 array with one entry per spatial axis.
    Window ``i`` of an axis is ``[floor(i * in / out), ceil((i + 1) * in / out))``.

    >>> import numpy as np
    >>> from avgpool import openvino
    >>> x = np.arange(10, dtype=np.float32).reshape(1, 1, 10)
    >>> openvino.adaptive_avg_pool(x, np.array([3], dtype=np.int64))
    array([[[1.5, 4.5, 7.5]]], dtype=float32)
    """
    if isinstance(output_size, np.ndarray):
        if output_size.ndim != 1 or output_size.dtype not in (np.int32, np.int64):
            raise TypeError("output_size must be a 1-D int32 or int64 array, got "
                            f"{output_size.ndim}-D {output_size.dtype}")
        output_size = output_size.tolist()
    sizes = as_ints(output_size, "output_size")
    a = as_array(x)
    spatial_shape(a, len(sizes), "output_size")
    with renamed({"output_sizes": "output_size"}):
        return adaptive_average_pool(x, adaptive_desc(sizes))
