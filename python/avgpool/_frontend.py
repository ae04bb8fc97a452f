"""Attribute helpers shared by the front ends: they translate, never pool."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional, Tuple

import numpy as np

from ._desc import as_int, as_ints

__all__ = ["per_axis", "flag", "choice", "ceil_div", "same_padding", "pooled_size", "spatial_size",
           "spatial_shape", "renamed"]


def per_axis(value, name: str, rank: int, default: Optional[int] = None, low: int = 0) -> Tuple[int, ...]:
    """A per-axis attribute with ``rank`` entries, each ``>= low`` (``None`` takes ``default``)."""
    if value is None:
        if default is None:
            raise TypeError(f"{name} is required")
        return (default,) * rank
    values = as_ints(value, name, rank)
    for i, v in enumerate(values):
        if v < low:
            raise ValueError(f"{name}[{i}] must be >= {low}, got {v}")
        if v > 2**63 - 1:
            raise ValueError(f"{name}[{i}] must fit in int64, got {v}")
    return values


def flag(value, name: str) -> bool:
    """A 0/1 or bool attribute."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    v = as_int(value, name)
    if v not in (0, 1):
        raise ValueError(f"{name} must be 0 or 1, got {v}")
    return bool(v)


def choice(value, name: str, choices) -> str:
    """A string attribute, matched case-insensitively against ``choices`` (lower case)."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    key = value.lower()
    if key not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return key


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def same_padding(size: int, ek: int, stride: int, upper: bool) -> Tuple[int, int, int]:
    """(start pad, end pad, output size) of SAME_UPPER / SAME_LOWER auto padding (``size`` from
    :func:`spatial_size`)."""
    out = ceil_div(size, stride)
    total = max(0, (out - 1) * stride + ek - size)
    small = total // 2
    return (small, total - small, out) if upper else (total - small, small, out)


def pooled_size(size: int, ek: int, stride: int, pb: int, pe: int, ceil: bool, name: str,
                axis: int, pads_name: str = "pads") -> int:
    """``floor`` or ``ceil`` of ``(size + pb + pe - ek) / stride``, plus one."""
    if size + pb + pe > 2**63 - 1:
        raise ValueError(f"{pads_name}: the padded size {size} + {pb} + {pe} of spatial axis "
                         f"{axis} must fit in int64")
    span = size + pb + pe - ek
    if span < 0:
        raise ValueError(
            f"{name}: the effective window {ek} on spatial axis {axis} is larger than the padded "
            f"input {size + pb + pe}")
    return (ceil_div(span, stride) if ceil else span // stride) + 1


def spatial_size(spatial, axis: int) -> int:
    """The input size on one spatial axis, which must be >= 1 (checked axis by axis, in the
    front ends' per-axis loops, so earlier axes' errors come first)."""
    size = spatial[axis]
    if size < 1:
        raise ValueError(f"x: spatial sizes must be >= 1, got {size} on spatial axis {axis}")
    return size


def spatial_shape(a, rank: int, name: str) -> Tuple[int, ...]:
    """Spatial sizes of a channels-first array whose spatial rank must be ``rank``."""
    if a.ndim != rank + 2:
        raise ValueError(
            f"x: expected a {rank + 2}-D input (N, C, {rank} spatial axes) to match {name} with "
            f"{rank} entries, got shape {a.shape}")
    return a.shape[2:]


class _Renamed:
    """Context manager behind :func:`renamed`; holds no per-use state, so one instance serves
    every call."""

    def __init__(self, names):
        self.names = dict(names)
        self.pattern = re.compile(r"\b(" + "|".join(map(re.escape, self.names)) + r")\b")

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind in (ValueError, TypeError):
            message = self.pattern.sub(lambda m: self.names[m.group(1)], str(exc))
            raise kind(message) from None
        return False


@lru_cache(maxsize=None)
def _renamer(items) -> _Renamed:
    return _Renamed(items)


def renamed(names):
    """A context manager that rewrites the core's argument names in a ValueError / TypeError
    (``window_size`` -> ``kernel_shape``, ...) into the front end's own. Built once per mapping:
    it sits on every front-end call."""
    return _renamer(tuple(names.items()))
