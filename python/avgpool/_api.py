"""average_pool and adaptive_average_pool: input coercion, layout and ``out=``.

The one place where arrays meet descriptors; every front end ends here.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, Union, overload

import ml_dtypes
import numpy as np

from . import _core
from ._desc import AdaptiveAveragePoolingDesc, AveragePoolingDesc
from ._frontend import adaptive_desc

if TYPE_CHECKING:
    import torch

__all__ = ["average_pool", "adaptive_average_pool", "average_pool_backward",
           "adaptive_average_pool_backward", "compile_operator", "tile_input_region", "pool_tile"]

_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_core.register_bfloat16(_BFLOAT16)


def is_torch(x: object) -> bool:
    return type(x).__module__.startswith("torch")


def _torch_to_numpy(t: "torch.Tensor") -> np.ndarray:
    """A numpy view of a CPU torch tensor (bfloat16 through an int16 view)."""
    import torch

    if t.requires_grad:  # checked first: detach() alone costs more than the rest of this
        t = t.detach()
    if not t.is_cpu:
        raise ValueError(f"x: only CPU tensors are supported, got device {t.device}")
    if t.is_neg():  # a negative view (the imaginary part of a conjugate), which numpy cannot see
        t = t.resolve_neg()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy().view(_BFLOAT16)
    return t.numpy()


def numpy_to_torch(a: np.ndarray) -> "torch.Tensor":
    import torch

    if a.dtype == _BFLOAT16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def as_array(x: Any) -> np.ndarray:
    """Any array-like as an ndarray without copying when possible."""
    if type(x) is np.ndarray:
        return x
    if is_torch(x):
        return _torch_to_numpy(x)
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError, ValueError):
            pass
    if isinstance(x, np.ndarray) or hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return np.asarray(x)
    raise TypeError(
        f"x must be a numpy array or an object with __array__ or __dlpack__, got {type(x).__name__}"
    )


_core.register_converters(as_array, is_torch, numpy_to_torch)


def _run(core_desc: Union[_core.PoolDesc, _core.AdaptiveDesc], x: Any, layout: str,
         out: Optional[np.ndarray], num_threads: Optional[int]) -> Any:
    """Run a core descriptor on x; the Cython ``run`` checks everything else in one call."""
    if type(x) is np.ndarray:
        return core_desc.run(x, layout, out, num_threads)
    y = core_desc.run(as_array(x), layout, out, num_threads)
    return numpy_to_torch(y) if out is None and is_torch(x) else y


# x: a numpy array, a CPU torch tensor, or any object with __array__ / __dlpack__ (hence Any).
# A numpy array in gives a numpy array out (the first overload); a torch tensor gives a tensor.
@overload
def average_pool(x: np.ndarray, desc: AveragePoolingDesc, *, layout: str = ...,
                 out: Optional[np.ndarray] = ..., num_threads: Optional[int] = ...) -> np.ndarray: ...
@overload
def average_pool(x: Any, desc: AveragePoolingDesc, *, layout: str = ...,
                 out: Optional[np.ndarray] = ..., num_threads: Optional[int] = ...) -> Any: ...


def average_pool(x: Any, desc: AveragePoolingDesc, *, layout: str = "NCHW",
                 out: Optional[np.ndarray] = None, num_threads: Optional[int] = None) -> Any:
    """Windowed average pooling of ``x`` as described by ``desc``.

    ``x`` has shape ``(N, C, *spatial)`` (``layout="NCHW"``) or ``(N, *spatial, C)``
    (``layout="NHWC"``) with 1 to 3 spatial axes, and dtype float32, float64, float16 or
    bfloat16 (``ml_dtypes.bfloat16``); numpy arrays, torch tensors and anything with
    ``__array__`` / ``__dlpack__`` are accepted and never modified. The result has the same
    layout and dtype, spatial sizes from ``desc.output_shape``; it is a torch tensor when ``x``
    is one, else a numpy array. ``out`` (a C-contiguous ndarray of that shape and dtype)
    receives the result in place and is returned. ``num_threads`` caps the OpenMP threads of
    this call (default: ``AVGPOOL_NUM_THREADS``, then ``OMP_NUM_THREADS``).

    See :class:`AveragePoolingDesc` for the formula.

    >>> import numpy as np, avgpool
    >>> x = np.ones((1, 1, 3, 3), np.float32)
    >>> desc = avgpool.AveragePoolingDesc((3, 3), start_padding=(1, 1), end_padding=(1, 1))
    >>> avgpool.average_pool(x, desc)[0, 0, 0]
    array([1., 1., 1.], dtype=float32)
    """
    if not isinstance(desc, AveragePoolingDesc):
        raise TypeError(f"desc must be an AveragePoolingDesc, got {type(desc).__name__}")
    return _run(desc._c, x, layout, out, num_threads)


@overload
def adaptive_average_pool(x: np.ndarray,
                          desc_or_output_sizes: Union[AdaptiveAveragePoolingDesc, Sequence[int]],
                          *, layout: str = ..., out: Optional[np.ndarray] = ...,
                          num_threads: Optional[int] = ...) -> np.ndarray: ...
@overload
def adaptive_average_pool(x: Any,
                          desc_or_output_sizes: Union[AdaptiveAveragePoolingDesc, Sequence[int]],
                          *, layout: str = ..., out: Optional[np.ndarray] = ...,
                          num_threads: Optional[int] = ...) -> Any: ...


def adaptive_average_pool(x: Any,
                          desc_or_output_sizes: Union[AdaptiveAveragePoolingDesc, Sequence[int]],
                          *, layout: str = "NCHW", out: Optional[np.ndarray] = None,
                          num_threads: Optional[int] = None) -> Any:
    """Adaptive average pooling of ``x`` to the given output sizes.

    ``desc_or_output_sizes`` is an :class:`AdaptiveAveragePoolingDesc` or a sequence with one
    output size per spatial axis. Shapes, dtypes, ``layout``, ``out`` and ``num_threads`` are as
    in :func:`average_pool`; see :class:`AdaptiveAveragePoolingDesc` for the formula.

    >>> import numpy as np, avgpool
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> avgpool.adaptive_average_pool(x, (1, 1))[0, 0]
    array([[7.5]], dtype=float32)
    """
    desc = desc_or_output_sizes
    if not isinstance(desc, AdaptiveAveragePoolingDesc):
        desc = _adaptive_desc(tuple(desc) if isinstance(desc, list) else desc)
    return _run(desc._c, x, layout, out, num_threads)


def _adaptive_desc(sizes: Any) -> AdaptiveAveragePoolingDesc:
    """Descriptors for plain output sizes, built once per distinct tuple of ints (only exact
    ints: 2.0 or True hash like 2 and 1 but must raise TypeError)."""
    if type(sizes) is tuple and all(type(v) is int for v in sizes):
        return adaptive_desc(sizes, "output_sizes")
    return AdaptiveAveragePoolingDesc(sizes)


def _run_backward(core_desc: Union[_core.PoolDesc, _core.AdaptiveDesc], grad_out: Any,
                  input_shape: Sequence[int], layout: str, out: Optional[np.ndarray],
                  num_threads: Optional[int]) -> Any:
    shape = _shape_tuple(input_shape)
    if type(grad_out) is np.ndarray:
        return core_desc.run_backward(grad_out, shape, layout, out, num_threads)
    g = core_desc.run_backward(as_array(grad_out), shape, layout, out, num_threads)
    return numpy_to_torch(g) if out is None and is_torch(grad_out) else g


def average_pool_backward(grad_out: Any, desc: AveragePoolingDesc, input_shape: Sequence[int],
                          *, layout: str = "NCHW", out: Optional[np.ndarray] = None,
                          num_threads: Optional[int] = None) -> Any:
    """The gradient of :func:`average_pool` with respect to its input.

    ``grad_out`` is the gradient of a loss with respect to the output of
    ``average_pool(x, desc, layout=layout)`` for an ``x`` of shape ``input_shape``; the result,
    of shape ``input_shape`` and the dtype of ``grad_out``, is the gradient with respect to
    ``x``. Every input position that a window ``o`` counts (a valid tap, not padding) receives
    ``grad_out[o] / divisor(o)`` from each such window, with the forward's divisor::

        grad_in[i] = sum over the windows o that count i of grad_out[o] / divisor(o)

    float16 and bfloat16 sum in float32. The result does not depend on ``num_threads`` (each
    element is gathered by one thread, in a fixed order). ``layout``, ``out`` and
    ``num_threads`` are as in :func:`average_pool`; a torch tensor in gives a tensor out.

    >>> import numpy as np, avgpool
    >>> desc = avgpool.AveragePoolingDesc((2,), strides=(1,))
    >>> avgpool.average_pool_backward(np.ones((1, 1, 2), np.float32), desc, (1, 1, 3))
    array([[[0.5, 1. , 0.5]]], dtype=float32)
    """
    if not isinstance(desc, AveragePoolingDesc):
        raise TypeError(f"desc must be an AveragePoolingDesc, got {type(desc).__name__}")
    return _run_backward(desc._c, grad_out, input_shape, layout, out, num_threads)


def adaptive_average_pool_backward(
        grad_out: Any, desc_or_output_sizes: Union[AdaptiveAveragePoolingDesc, Sequence[int]],
        input_shape: Sequence[int], *, layout: str = "NCHW", out: Optional[np.ndarray] = None,
        num_threads: Optional[int] = None) -> Any:
    """The gradient of :func:`adaptive_average_pool` with respect to its input.

    As :func:`average_pool_backward`, with adaptive windows: each input position receives
    ``grad_out[o] / len(window o)`` from every window ``o`` that covers it.

    >>> import numpy as np, avgpool
    >>> avgpool.adaptive_average_pool_backward(np.ones((1, 1, 1), np.float32), (1,), (1, 1, 4))
    array([[[0.25, 0.25, 0.25, 0.25]]], dtype=float32)
    """
    desc = desc_or_output_sizes
    if not isinstance(desc, AdaptiveAveragePoolingDesc):
        desc = _adaptive_desc(tuple(desc) if isinstance(desc, list) else desc)
    return _run_backward(desc._c, grad_out, input_shape, layout, out, num_threads)


def _shape_tuple(input_shape: Any) -> Tuple[int, ...]:
    if isinstance(input_shape, (str, bytes)) or not hasattr(input_shape, "__iter__"):
        raise TypeError(f"input_shape must be a sequence of ints, got {input_shape!r}")
    return tuple(_shape_entry(v) for v in input_shape)


def compile_operator(desc: Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc, Sequence[int]],
                     input_shape: Sequence[int], dtype: Any, *, layout: str = "NCHW",
                     output_layout: Optional[str] = None,
                     num_threads: Optional[int] = None) -> _core.CompiledOperator:
    """Pooling compiled once for inputs of one shape, dtype and layout, to call many times.

    ``desc`` is an :class:`AveragePoolingDesc`, an :class:`AdaptiveAveragePoolingDesc` or a
    sequence of adaptive output sizes. Everything a call of :func:`average_pool` /
    :func:`adaptive_average_pool` would check about the descriptor and the shape is checked
    here, and the plan is made: per-axis window tables, the kernel path and the kernel of the
    instruction set in use now (a later ``AVGPOOL_ISA``-style switch does not change it), and
    the thread count (``num_threads``, else ``AVGPOOL_NUM_THREADS``, else the OpenMP default,
    read now). ``output_layout`` (default: ``layout``) stores the result in the other layout,
    e.g. channels first from a channels-last input, in one pass where the kernel path allows
    (PyTorch's 3-D pools return that for channels_last_3d tensors). The returned operator has
    ``input_shape``, ``output_shape`` (in ``output_layout``), ``dtype``, ``layout``,
    ``output_layout`` and ``num_threads``; ``op(x, out=None)`` checks only what may change
    between calls (x's type, dtype and shape; ``out``'s shape, dtype, memory order and overlap)
    and returns the same result as the plain call, bit for bit (transposed when
    ``output_layout`` differs). ``op.backward(grad_out, out=None)`` returns the gradient with
    respect to the input, as :func:`average_pool_backward` (with the window tables inverted
    once, at compilation; ``grad_out`` in ``output_layout``). Several Python threads may call
    one operator at once.

    >>> import numpy as np, avgpool
    >>> op = avgpool.compile_operator(avgpool.AveragePoolingDesc((2, 2), strides=(2, 2)),
    ...                               (1, 1, 4, 4), np.float32)
    >>> op.output_shape
    (1, 1, 2, 2)
    >>> op(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))[0, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    desc = _any_desc(desc)
    core = desc._c
    shape = _shape_tuple(input_shape)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: {dtype!r} is not a numpy dtype") from None
    return core.compile(shape, layout, output_layout, dt, num_threads, desc)


def _shape_entry(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(f"input_shape must hold ints, got {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"input_shape must hold ints, got {v!r}") from None


def _on_axes(x: np.ndarray, axes: Sequence[int], run: Any) -> np.ndarray:
    """``run`` on ``x`` seen as (N, 1, pooled axes...): ``axes`` moved last in their order and
    every other axis folded into N; the result unfolded back to x's axis order. How
    avgpool.xarray pools named dims of an array of any rank."""
    k = len(axes)
    ends = tuple(range(-k, 0))
    moved = np.moveaxis(x, axes, ends)
    lead = moved.shape[:-k]
    y: np.ndarray = run(moved.reshape((int(np.prod(lead)), 1) + moved.shape[-k:]))
    return np.moveaxis(y.reshape(lead + y.shape[2:]), ends, axes)


def _any_desc(desc: Any) -> Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc]:
    """A windowed or adaptive descriptor; a sequence of ints is adaptive output sizes."""
    if isinstance(desc, (AveragePoolingDesc, AdaptiveAveragePoolingDesc)):
        return desc
    if isinstance(desc, (tuple, list)):
        return _adaptive_desc(tuple(desc))
    raise TypeError(f"desc must be an AveragePoolingDesc, an AdaptiveAveragePoolingDesc or "
                    f"a sequence of output sizes, got {type(desc).__name__}")


def _out_box(desc: Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc],
             whole: Tuple[int, ...], out_region: Any,
             layout: str) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """(start, size) per spatial axis of an output region given as slices or (start, stop)."""
    if isinstance(out_region, (str, bytes)) or not hasattr(out_region, "__iter__"):
        raise TypeError(f"out_region must be a sequence of slices or (start, stop) pairs, got "
                        f"{type(out_region).__name__}")
    region = tuple(out_region)
    if len(region) != desc.rank:
        raise ValueError(f"out_region must have {desc.rank} entries (one per spatial axis), got "
                         f"{len(region)}")
    out_shape = desc.output_shape(whole, layout)
    spatial = out_shape[2:] if layout.upper() == "NCHW" else out_shape[1:-1]
    starts, sizes = [], []
    for i, (r, n) in enumerate(zip(region, spatial)):
        if isinstance(r, slice):
            if r.step not in (None, 1):
                raise ValueError(f"out_region[{i}] must have step 1, got {r.step}")
            start = 0 if r.start is None else _shape_entry(r.start)
            stop = n if r.stop is None else _shape_entry(r.stop)
        else:
            start, stop = (_shape_entry(v) for v in r)
        if not 0 <= start < stop <= n:
            raise ValueError(f"out_region[{i}] must satisfy 0 <= start < stop <= {n} (the whole "
                             f"output's size along spatial axis {i}), got {start}:{stop}")
        starts.append(start)
        sizes.append(stop - start)
    return tuple(starts), tuple(sizes)


def tile_input_region(desc: Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc, Sequence[int]],
                      whole_shape: Sequence[int], out_region: Sequence[Any], *,
                      layout: str = "NCHW") -> Tuple[slice, ...]:
    """The input region, one slice per spatial axis, that an output region of the whole array
    reads: the taps of its windows, halo included (one position if they hold only padding).

    ``whole_shape`` is the whole input's shape in ``layout``; ``out_region`` gives one slice
    (step 1) or ``(start, stop)`` pair per spatial axis of the whole output. Slicing the whole
    input's spatial axes with the result gives the tile that :func:`pool_tile` takes.

    >>> import avgpool
    >>> desc = avgpool.AveragePoolingDesc((3,), strides=(2,), start_padding=(1,))
    >>> avgpool.tile_input_region(desc, (1, 1, 20), [slice(4, 8)])
    (slice(7, 16, None),)
    """
    d = _any_desc(desc)
    whole = _shape_tuple(whole_shape)
    start, size = _out_box(d, whole, out_region, layout)
    in_start, in_size = d._c.tile_input(whole, start, size, layout)
    return tuple(slice(a, a + n) for a, n in zip(in_start, in_size))


def pool_tile(x: Any, desc: Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc, Sequence[int]],
              whole_shape: Sequence[int], out_region: Sequence[Any], *, layout: str = "NCHW",
              out: Optional[np.ndarray] = None, num_threads: Optional[int] = None) -> np.ndarray:
    """Pool one tile of a larger array: the outputs ``out_region`` of the whole array's result.

    ``x`` is the whole input's tile ``tile_input_region(desc, whole_shape, out_region)``
    (any images, and any of the whole's channels: they need no halo); padding, divisors, ceil-rule
    and adaptive windows are decided by position in the whole array of shape ``whole_shape``,
    and its channel count chooses the kernels as for the whole call, so pooling every tile of
    a partition of the output (channels and batch included) gives the whole call's result::

        y_whole[..., out_region] == pool_tile(x_whole[..., tile_input_region(...)], ...)

    ``desc`` is windowed or adaptive (a sequence of ints: adaptive output sizes); ``layout``,
    ``out`` and ``num_threads`` are as in :func:`average_pool`. Returns a numpy array.

    >>> import numpy as np, avgpool
    >>> x = np.arange(20, dtype=np.float32).reshape(1, 1, 20)
    >>> desc = avgpool.AveragePoolingDesc((3,), strides=(2,), start_padding=(1,))
    >>> region = avgpool.tile_input_region(desc, x.shape, [slice(4, 8)])
    >>> avgpool.pool_tile(x[..., region[0]], desc, x.shape, [slice(4, 8)])
    array([[[ 8., 10., 12., 14.]]], dtype=float32)
    """
    d = _any_desc(desc)
    whole = _shape_tuple(whole_shape)
    start, size = _out_box(d, whole, out_region, layout)
    result: np.ndarray = d._c.run_tile(as_array(x), whole, start, size, layout, out, num_threads)
    return result
