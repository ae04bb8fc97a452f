"""PyTorch-style functions: avg_pool1d/2d/3d and adaptive_avg_pool1d/2d/3d.

Names and arguments follow ``torch.nn.functional``; inputs are channels first, batched
(N, C, *spatial) or unbatched (C, *spatial); torch tensors in give torch tensors out.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _api
from ._api import as_array, is_torch, numpy_to_torch
from ._desc import AveragePoolingDesc, as_int
from ._frontend import CEIL_DROP, FLOOR, adaptive_desc, flag, pooled_size, renamed, spatial_size

# an int, or one int per spatial axis (a 1-sequence is broadcast)
Size = Union[int, Sequence[int]]

# the core's argument names in error messages, as torch calls them
_NAMES = {"window_size": "kernel_size", "strides": "stride", "start_padding": "padding",
          "end_padding": "padding", "output_sizes": "kernel_size/stride/padding"}

__all__ = ["avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]


def _expand(value: Any, name: str, rank: int, allow_none: bool = False) -> Tuple[Any, ...]:
    """An int or a sequence of ``rank`` ints; a 1-sequence is broadcast, as torch's pools do
    for their window arguments, but not an adaptive output size (``allow_none``), which torch
    rejects."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1 and not allow_none:
            value = tuple(value) * rank
        if len(value) != rank:
            raise ValueError(f"{name} must be an int or a sequence of {rank} ints, got {value!r}")
        return tuple(None if (allow_none and v is None) else as_int(v, f"{name}[{i}]")
                     for i, v in enumerate(value))
    if allow_none and value is None:
        return (None,) * rank
    return (as_int(value, name),) * rank


def _batched(x: Any, rank: int, fname: str) -> Tuple[np.ndarray, bool]:
    """(x as an ndarray with a batch axis, whether one was added); checks the rank."""
    a = as_array(x)
    if a.ndim == rank + 1:
        return a[None], True
    if a.ndim != rank + 2:
        raise ValueError(f"{fname}: x must be {rank + 1}-D (C, ...) or {rank + 2}-D (N, C, ...), "
                         f"got shape {a.shape}")
    return a, False


def _finish(x: Any, y: np.ndarray, unbatched: bool) -> Any:
    """Drop an added batch axis; torch tensors in give torch tensors out."""
    y = y[0] if unbatched else y
    return numpy_to_torch(y) if is_torch(x) else y


def pool_desc_for(spatial: Tuple[int, ...], rank: int, kernel_size: Size,
                  stride: Optional[Size], padding: Size, ceil_mode: Any, count_include_pad: Any,
                  divisor_override: Optional[int]) -> AveragePoolingDesc:
    """The descriptor of a torch-style call on an input of these spatial sizes (every argument
    checked, torch's names in the errors); shared with :mod:`avgpool.torch`."""
    args = pool_args_for(rank, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)
    with renamed(_NAMES):
        desc = _pool_desc(tuple(spatial), *args)
    return desc


def pool_args_for(rank: int, kernel_size: Size, stride: Optional[Size], padding: Size,
                  ceil_mode: Any, count_include_pad: Any, divisor_override: Optional[int]
                  ) -> Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...], bool, bool,
                             Optional[int]]:
    """The arguments of a torch-style pool that do not depend on the input's sizes, expanded
    to ``rank`` axes and checked: (kernel, strides, pads, ceil_mode, count_include_pad,
    divisor_override)."""
    kernel = _expand(kernel_size, "kernel_size", rank)
    strides = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _expand(stride, "stride", rank)
    pads = _expand(padding, "padding", rank)
    override = None if divisor_override is None else as_int(divisor_override, "divisor_override")
    ceil = flag(ceil_mode, "ceil_mode")
    include = flag(count_include_pad, "count_include_pad")
    for k, s, p in zip(kernel, strides, pads):
        if k < 1:
            raise ValueError(f"kernel_size must be >= 1, got {k}")
        if s < 1:
            raise ValueError(f"stride must be >= 1, got {s}")
        if p < 0:
            raise ValueError(f"padding must be >= 0, got {p}")
        if p > k // 2:
            raise ValueError(f"padding should be at most half of the kernel size, got padding {p} "
                             f"for kernel_size {k}")
    if override == 0:
        raise ValueError("divisor_override must be non-zero")
    return kernel, strides, pads, ceil, include, override


def pool_output_sizes(spatial: Sequence[Any], kernel: Tuple[int, ...], strides: Tuple[int, ...],
                      pads: Tuple[int, ...], ceil_mode: bool,
                      symbolic: bool = False) -> Tuple[Any, ...]:
    """The output sizes of a torch-style pool of checked arguments (:func:`pool_args_for`) on
    spatial sizes that are ints or, with ``symbolic``, sizes torch.compile or torch.export
    traces (plain arithmetic and comparisons, which become the graph's expressions and
    guards)."""
    outs = []
    for a in range(len(kernel)):
        # ceil_mode: a window larger than the padded input is one window hanging past the end,
        # as torch computes it (ruling R1)
        outs.append(pooled_size(spatial_size(spatial, a), kernel[a], strides[a], pads[a], pads[a],
                                CEIL_DROP if ceil_mode else FLOOR, "kernel_size", a, "padding",
                                large_window=True, symbolic=symbolic))
    if len(kernel) == 3 and any(n < k for n, k in zip(spatial, kernel)):
        # torch's avg_pool3d (not 1-D / 2-D) requires the unpadded input to hold the kernel (R2)
        raise ValueError(f"avg_pool3d: x of spatial size {tuple(spatial)} is smaller than "
                         f"kernel_size {tuple(kernel)} (avg_pool3d needs every input size >= the "
                         f"kernel size, padding aside)")
    return tuple(outs)


@lru_cache(maxsize=256)
def _pool_desc(spatial: Tuple[int, ...], kernel: Tuple[int, ...], strides: Tuple[int, ...],
               pads: Tuple[int, ...], ceil_mode: bool, count_include_pad: bool,
               divisor_override: Optional[int]) -> AveragePoolingDesc:
    outs = pool_output_sizes(spatial, kernel, strides, pads, ceil_mode)
    return AveragePoolingDesc(kernel, strides, pads, pads, include_padding=count_include_pad,
                              output_sizes=outs, divisor_override=divisor_override)


def _avg_pool(x: Any, rank: int, fname: str, kernel_size: Size, stride: Optional[Size],
              padding: Size, ceil_mode: bool, count_include_pad: bool,
              divisor_override: Optional[int]) -> Any:
    if is_torch(x):  # through the torch operators: autograd, memory formats, torch.compile
        from . import torch as _torch_ops
        return _torch_ops._avg_pool(x, rank, fname, kernel_size, stride, padding, ceil_mode,
                                    count_include_pad, divisor_override, as_torch=False)
    a, unbatched = _batched(x, rank, fname)
    desc = pool_desc_for(a.shape[-rank:], rank, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override)
    with renamed(_NAMES):
        return _finish(x, _api.average_pool(a, desc), unbatched)


def avg_pool1d(x: Any, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Any:
    """1-D average pooling over (N, C, L) or (C, L), as ``torch.nn.functional.avg_pool1d``.

    ``out = floor_or_ceil((L + 2 * padding - kernel_size) / stride) + 1``; with ``ceil_mode`` a
    last window starting in the right padding is dropped, and a kernel larger than the padded
    input gives one window while that formula gives ``out >= 1``. With ``count_include_pad``
    the divisor counts the padded positions of a window (but not past the padded end).

    >>> import numpy as np
    >>> from avgpool import functional as F
    >>> F.avg_pool1d(np.array([[[1., 2., 3., 4.]]], np.float32), 2)
    array([[[1.5, 3.5]]], dtype=float32)
    """
    return _avg_pool(x, 1, "avg_pool1d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool2d(x: Any, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Any:
    """2-D average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.functional.avg_pool2d``.

    Per axis ``out = floor_or_ceil((in + 2 * padding - kernel_size) / stride) + 1``, see
    :func:`avg_pool1d`; ``divisor_override`` replaces the divisor.

    >>> import numpy as np
    >>> from avgpool import functional as F
    >>> F.avg_pool2d(np.ones((1, 1, 4, 4), np.float32), 2, divisor_override=2)[0, 0]
    array([[2., 2.],
           [2., 2.]], dtype=float32)
    """
    return _avg_pool(x, 2, "avg_pool2d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(x: Any, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Any:
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W), as
    ``torch.nn.functional.avg_pool3d``; the per-axis rule is that of :func:`avg_pool1d`. As in
    torch, every input size must be at least the kernel size, padding aside (1-D and 2-D
    pooling have no such rule).

    >>> import numpy as np
    >>> from avgpool import functional as F
    >>> F.avg_pool3d(np.ones((1, 1, 2, 2, 2), np.float32), 2).shape
    (1, 1, 1, 1, 1)
    """
    return _avg_pool(x, 3, "avg_pool3d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def adaptive_sizes_for(spatial: Tuple[int, ...], rank: int, output_size: Any) -> Tuple[int, ...]:
    """The output sizes of a torch-style adaptive call (``None`` keeps an input size), each
    checked >= 1; shared with :mod:`avgpool.torch`."""
    sizes = _expand(output_size, "output_size", rank, allow_none=True)
    sizes = tuple(spatial[i] if v is None else v for i, v in enumerate(sizes))
    adaptive_desc(sizes)  # checks every entry, naming output_size
    return sizes


def adaptive_args_for(rank: int, output_size: Any) -> Tuple[Optional[int], ...]:
    """``output_size`` expanded to ``rank`` entries, ``None`` where the input size is kept,
    the others checked >= 1: what :func:`adaptive_sizes_for` checks of the arguments alone
    (for sizes torch.compile traces)."""
    sizes = _expand(output_size, "output_size", rank, allow_none=True)
    adaptive_desc(tuple(1 if v is None else v for v in sizes))  # names output_size[i]
    return sizes


def _adaptive(x: Any, rank: int, fname: str, output_size: Any) -> Any:
    if is_torch(x):  # through the torch operators: autograd, memory formats, torch.compile
        from . import torch as _torch_ops
        return _torch_ops._adaptive(x, rank, fname, output_size, as_torch=False)
    a, unbatched = _batched(x, rank, fname)
    sizes = adaptive_sizes_for(a.shape[-rank:], rank, output_size)
    with renamed({"output_sizes": "output_size"}):
        return _finish(x, _api.adaptive_average_pool(a, adaptive_desc(sizes)), unbatched)


def adaptive_avg_pool1d(x: Any, output_size: Any) -> Any:
    """Adaptive 1-D average pooling, as ``torch.nn.functional.adaptive_avg_pool1d``.

    Output ``i`` averages ``x[floor(i * L / out) : ceil((i + 1) * L / out)]``.

    >>> import numpy as np
    >>> from avgpool import functional as F
    >>> F.adaptive_avg_pool1d(np.arange(10, dtype=np.float32).reshape(1, 1, 10), 3)
    array([[[1.5, 4.5, 7.5]]], dtype=float32)
    """
    return _adaptive(x, 1, "adaptive_avg_pool1d", output_size)


def adaptive_avg_pool2d(x: Any, output_size: Any) -> Any:
    """Adaptive 2-D average pooling, as ``torch.nn.functional.adaptive_avg_pool2d``; an entry
    ``None`` keeps that input size. See :func:`adaptive_avg_pool1d` for the windows.

    >>> import numpy as np
    >>> from avgpool import functional as F
    >>> F.adaptive_avg_pool2d(np.ones((1, 3, 5, 7), np.float32), (2, None)).shape
    (1, 3, 2, 7)
    """
    return _adaptive(x, 2, "adaptive_avg_pool2d", output_size)


def adaptive_avg_pool3d(x: Any, output_size: Any) -> Any:
    """Adaptive 3-D average pooling, as ``torch.nn.functional.adaptive_avg_pool3d``.

    >>> import numpy as np
    >>> from avgpool import functional as F
    >>> F.adaptive_avg_pool3d(np.ones((1, 1, 4, 4, 4), np.float32), 1).shape
    (1, 1, 1, 1, 1)
    """
    return _adaptive(x, 3, "adaptive_avg_pool3d", output_size)
