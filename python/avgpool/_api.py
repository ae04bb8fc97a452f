"""average_pool and adaptive_average_pool: input coercion, layout and ``out=``.

The one place where arrays meet descriptors; every front end ends here.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np

from . import _core
from ._desc import AdaptiveAveragePoolingDesc, AveragePoolingDesc, as_int, layout_code

__all__ = ["average_pool", "adaptive_average_pool"]

_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_UINT16 = np.dtype(np.uint16)
_DTYPE_CODES = {
    np.dtype(np.float32): _core.DTYPE_F32,
    np.dtype(np.float64): _core.DTYPE_F64,
    np.dtype(np.float16): _core.DTYPE_F16,
    _BFLOAT16: _core.DTYPE_BF16,
}


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _torch_to_numpy(t):
    """A numpy view of a CPU torch tensor (bfloat16 through an int16 view)."""
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        raise ValueError(f"x: only CPU tensors are supported, got device {t.device}")
    if t.dtype == torch.bfloat16:
        return np.from_dlpack(t.view(torch.int16)).view(_BFLOAT16)
    return np.from_dlpack(t)


def _numpy_to_torch(a):
    import torch

    if a.dtype == _BFLOAT16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def as_array(x) -> np.ndarray:
    """Any array-like as an ndarray without copying when possible."""
    if type(x) is np.ndarray:
        return x
    if _is_torch(x):
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


def _threads(num_threads) -> int:
    """num_threads, else AVGPOOL_NUM_THREADS, else 0 (the OpenMP default: OMP_NUM_THREADS)."""
    if num_threads is None:
        env = os.environ.get("AVGPOOL_NUM_THREADS")
        if not env:
            return 0
        try:
            num_threads = int(env)
        except ValueError:
            raise ValueError(f"AVGPOOL_NUM_THREADS must be a positive integer, got {env!r}") from None
        name = "AVGPOOL_NUM_THREADS"
    else:
        num_threads = as_int(num_threads, "num_threads")
        name = "num_threads"
    if not 1 <= num_threads <= 1 << 16:
        raise ValueError(f"{name} must be between 1 and 65536, got {num_threads}")
    return num_threads


def _run(core_desc, x, layout, out, num_threads):
    """Validate x and out, then run the core descriptor ``core_desc`` on them."""
    torch_in = _is_torch(x)
    a = as_array(x)
    code = _DTYPE_CODES.get(a.dtype)
    if code is None and a.dtype.byteorder == ">" and a.dtype.newbyteorder("=") in _DTYPE_CODES:
        a = a.astype(a.dtype.newbyteorder("="))  # byte-swapped float data: a native copy
        code = _DTYPE_CODES[a.dtype]
    if code is None:
        raise TypeError(
            f"x: dtype {a.dtype} is not supported; use float32, float64, float16 or bfloat16"
        )
    layout_id = layout_code(layout)
    try:
        shape = core_desc.output_shape(a.shape, layout_id)
    except OverflowError:
        raise ValueError("x: a size overflows int64") from None
    nthreads = _threads(num_threads)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if out is None:
        y = np.empty(shape, dtype=a.dtype)
    else:
        y = out
        if type(y) is not np.ndarray:
            raise TypeError(f"out must be a numpy.ndarray, got {type(y).__name__}")
        if y.shape != shape:
            raise ValueError(f"out has shape {y.shape}, expected {shape}")
        if y.dtype != a.dtype:
            raise ValueError(f"out has dtype {y.dtype}, expected {a.dtype} (the dtype of x)")
        if not y.flags.c_contiguous:
            raise ValueError("out must be C-contiguous")
        if not y.flags.writeable:
            raise ValueError("out must be writeable")
        if np.may_share_memory(a, y):
            raise ValueError("out must not overlap x")
    if code in (_core.DTYPE_F16, _core.DTYPE_BF16):
        core_desc(a.view(_UINT16), y.view(_UINT16), code, layout_id, nthreads)
    else:
        core_desc(a, y, code, layout_id, nthreads)
    if out is None and torch_in:
        return _numpy_to_torch(y)
    return y


def average_pool(x, desc: AveragePoolingDesc, *, layout: str = "NCHW", out=None, num_threads=None):
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


def adaptive_average_pool(x, desc_or_output_sizes, *, layout: str = "NCHW", out=None,
                          num_threads=None):
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
        desc = AdaptiveAveragePoolingDesc(desc)
    return _run(desc._c, x, layout, out, num_threads)
