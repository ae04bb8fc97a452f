"""Pooling descriptors: frozen, DirectML-style, validated once when built."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _core

__all__ = ["AveragePoolingDesc", "AdaptiveAveragePoolingDesc"]

INT64_MAX = 2**63 - 1


def as_int(value: Any, name: str) -> int:
    """An integer attribute: ints and numpy integers pass, bools and floats raise TypeError."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None


def as_ints(values: Any, name: str, rank: Optional[int] = None) -> Tuple[int, ...]:
    """A per-axis integer attribute as a tuple, checked for length ``rank`` when given."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of integers, got {type(values).__name__}")
    out = tuple(as_int(v, f"{name}[{i}]") for i, v in enumerate(values))
    if rank is not None and len(out) != rank:
        raise ValueError(f"{name} must have {rank} entries (one per spatial axis), got {len(out)}")
    return out


def _at_least(values: Tuple[int, ...], low: int, name: str) -> None:
    for i, v in enumerate(values):
        if v < low:
            raise ValueError(f"{name}[{i}] must be >= {low}, got {v}")
        if v > INT64_MAX:
            raise ValueError(f"{name}[{i}] must fit in int64, got {v}")


def _as_bool(value: Any, name: str) -> bool:
    """A bool attribute: bool, numpy.bool_ or the integers 0 and 1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{name} must be a bool (or 0 / 1), got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class AveragePoolingDesc:
    """Windowed average pooling over 1 to 3 spatial axes (DirectML AVERAGE_POOLING1 fields).

    Per spatial axis, with window ``k``, stride ``s``, dilation ``d`` and paddings ``pb``/``pe``::

        ek  = (k - 1) * d + 1                          # effective window
        out = floor((in + pb + pe - ek) / s) + 1       # unless output_sizes is given
        y[o] = sum(x[p] for p in window(o) if 0 <= p < in) / divisor(o)
        window(o) = {o * s - pb + j * d : j = 0 .. k-1}

    The divisor is the product over axes of the valid positions (``include_padding=False``) or
    of the positions inside ``[-pb, in + pe)`` (``include_padding=True``; with
    ``count_overhang=True`` also those past ``in + pe``, as OpenVINO's ceil rounding counts
    them). ``divisor_override`` replaces the divisor (PyTorch). A window with divisor 0 gives NaN.

    ``nan_policy="omit"`` (default ``"propagate"``) leaves NaN inputs out of both the sum and
    the divisor, as if outside the window (padding still counts with ``include_padding``); a
    window with fewer than ``min_count`` non-NaN input positions gives NaN. The standards' front
    ends propagate; :mod:`avgpool.xarray` omits, as xarray's ``skipna`` does.

    Every argument is validated here, once; the descriptor is immutable and hashable.

    >>> import numpy as np, avgpool
    >>> desc = avgpool.AveragePoolingDesc((2, 2), strides=(2, 2))
    >>> desc.output_shape((1, 1, 4, 4))
    (1, 1, 2, 2)
    >>> avgpool.average_pool(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), desc)[0, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """

    window_size: Sequence[int]
    strides: Optional[Sequence[int]] = None
    start_padding: Optional[Sequence[int]] = None
    end_padding: Optional[Sequence[int]] = None
    dilations: Optional[Sequence[int]] = None
    include_padding: bool = False
    output_sizes: Optional[Sequence[int]] = None
    count_overhang: bool = False
    divisor_override: Optional[int] = None
    nan_policy: str = "propagate"
    min_count: int = 1
    _c: _core.PoolDesc = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        window = as_ints(self.window_size, "window_size")
        rank = len(window)
        if not 1 <= rank <= 3:
            raise ValueError(f"window_size must have 1, 2 or 3 entries, got {rank}")

        def per_axis(value: Optional[Sequence[int]], name: str, default: int) -> Tuple[int, ...]:
            return (default,) * rank if value is None else as_ints(value, name, rank)

        strides = per_axis(self.strides, "strides", 1)
        start = per_axis(self.start_padding, "start_padding", 0)
        end = per_axis(self.end_padding, "end_padding", 0)
        dilations = per_axis(self.dilations, "dilations", 1)
        outputs = None if self.output_sizes is None else as_ints(self.output_sizes, "output_sizes", rank)
        _at_least(window, 1, "window_size")
        _at_least(strides, 1, "strides")
        _at_least(start, 0, "start_padding")
        _at_least(end, 0, "end_padding")
        _at_least(dilations, 1, "dilations")
        if outputs is not None:
            _at_least(outputs, 1, "output_sizes")
        override = None
        if self.divisor_override is not None:
            override = as_int(self.divisor_override, "divisor_override")
            if override == 0:
                raise ValueError("divisor_override must be non-zero")
            if not -INT64_MAX <= override <= INT64_MAX:
                raise ValueError(f"divisor_override must fit in int64, got {override}")
        product = 1
        for k in window:
            product *= k
        if product > INT64_MAX:
            raise ValueError("window_size: the window's size (the product of its entries) must fit "
                             "in int64")
        for i, (k, d) in enumerate(zip(window, dilations)):
            if (k - 1) * d + 1 > INT64_MAX:
                raise ValueError(f"window_size/dilations: the effective window (window_size[{i}] - 1)"
                                 f" * dilations[{i}] + 1 must fit in int64")
        include = _as_bool(self.include_padding, "include_padding")
        overhang = _as_bool(self.count_overhang, "count_overhang")
        policy, min_count = _nan_fields(self.nan_policy, self.min_count)
        for name, value in (("window_size", window), ("strides", strides), ("start_padding", start),
                            ("end_padding", end), ("dilations", dilations), ("output_sizes", outputs),
                            ("include_padding", include), ("count_overhang", overhang),
                            ("divisor_override", override), ("nan_policy", policy),
                            ("min_count", min_count)):
            object.__setattr__(self, name, value)
        c = _core.PoolDesc(window, strides, dilations, start, end, outputs or (0,) * rank,
                           include, overhang, override or 0, _NAN_POLICIES.index(policy),
                           min_count)
        object.__setattr__(self, "_c", c)

    @property
    def rank(self) -> int:
        """Number of spatial axes."""
        return len(self.window_size)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return _reduce(self)

    def output_shape(self, input_shape: Sequence[int], layout: str = "NCHW") -> Tuple[int, ...]:
        """Shape of the output for an input of ``input_shape`` in ``layout``."""
        return self._c.output_shape(_shape_tuple(input_shape), layout)


@dataclass(frozen=True)
class AdaptiveAveragePoolingDesc:
    """Adaptive average pooling to fixed output sizes (PyTorch adaptive_avg_pool, OpenVINO
    AdaptiveAvgPool-8).

    Per spatial axis with input ``in`` and output ``out``, output ``i`` averages the window::

        start = floor(i * in / out),  end = ceil((i + 1) * in / out)
        y[i]  = sum(x[start:end]) / (end - start)

    ``out > in`` is allowed (windows repeat). ``nan_policy`` and ``min_count`` are as in
    :class:`AveragePoolingDesc`.

    >>> import numpy as np, avgpool
    >>> x = np.arange(10, dtype=np.float64).reshape(1, 1, 10)
    >>> avgpool.adaptive_average_pool(x, avgpool.AdaptiveAveragePoolingDesc((3,)))[0, 0]
    array([1.5, 4.5, 7.5])
    """

    output_sizes: Sequence[int]
    nan_policy: str = "propagate"
    min_count: int = 1
    _c: _core.AdaptiveDesc = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        sizes = as_ints(self.output_sizes, "output_sizes")
        if not 1 <= len(sizes) <= 3:
            raise ValueError(f"output_sizes must have 1, 2 or 3 entries, got {len(sizes)}")
        _at_least(sizes, 1, "output_sizes")
        policy, min_count = _nan_fields(self.nan_policy, self.min_count)
        object.__setattr__(self, "output_sizes", sizes)
        object.__setattr__(self, "nan_policy", policy)
        object.__setattr__(self, "min_count", min_count)
        object.__setattr__(self, "_c", _core.AdaptiveDesc(sizes, _NAN_POLICIES.index(policy),
                                                          min_count))

    @property
    def rank(self) -> int:
        """Number of spatial axes."""
        return len(self.output_sizes)

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return _reduce(self)

    def output_shape(self, input_shape: Sequence[int], layout: str = "NCHW") -> Tuple[int, ...]:
        """Shape of the output for an input of ``input_shape`` in ``layout``."""
        return self._c.output_shape(_shape_tuple(input_shape), layout)


_NAN_POLICIES = ("propagate", "omit")  # the core's ap_nan_policy values, in order


def _nan_fields(policy: Any, min_count: Any) -> Tuple[str, int]:
    """nan_policy (either letter case) and min_count, checked."""
    if not isinstance(policy, str) or policy.lower() not in _NAN_POLICIES:
        raise ValueError(f"nan_policy must be 'propagate' or 'omit', got {policy!r}")
    count = as_int(min_count, "min_count")
    if not 0 <= count <= INT64_MAX:
        raise ValueError(f"min_count must be >= 0 and fit in int64, got {count}")
    return policy.lower(), count


def _reduce(desc: Any) -> Tuple[Any, Tuple[Any, ...]]:
    """Pickle a descriptor as its class and public fields: unpickling validates them again and
    rebuilds the core descriptor, which itself has no pickled form. Dask graphs that carry a
    descriptor to ``dask.distributed`` workers rely on this."""
    return type(desc), tuple(getattr(desc, f.name) for f in fields(desc) if f.init)


def _shape_tuple(shape: Sequence[int]) -> Tuple[int, ...]:
    shape = as_ints(shape, "input_shape")
    for i, v in enumerate(shape):
        if not 0 <= v <= INT64_MAX:
            raise ValueError(f"input_shape[{i}] must be >= 0 and fit in int64, got {v}")
    return shape
