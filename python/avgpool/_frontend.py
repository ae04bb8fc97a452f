"""Attribute helpers shared by the front ends: they translate, never pool."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._desc import INT64_MAX, AdaptiveAveragePoolingDesc, as_int, as_ints

__all__ = ["per_axis", "flag", "choice", "ceil_div", "same_padding", "crop", "pooled_size",
           "FLOOR", "CEIL", "CEIL_DROP", "spatial_size", "spatial_shape", "adaptive_desc",
           "renamed"]


def per_axis(value: Any, name: str, rank: int, default: Optional[int] = None,
             low: int = 0) -> Tuple[int, ...]:
    """A per-axis attribute with ``rank`` entries, each ``>= low`` (``None`` takes ``default``)."""
    if value is None:
        if default is None:
            raise TypeError(f"{name} is required")
        return (default,) * rank
    values = as_ints(value, name, rank)
    for i, v in enumerate(values):
        if v < low:
            raise ValueError(f"{name}[{i}] must be >= {low}, got {v}")
        if v > INT64_MAX:
            raise ValueError(f"{name}[{i}] must fit in int64, got {v}")
    return values


def flag(value: Any, name: str) -> bool:
    """A 0/1 or bool attribute."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    v = as_int(value, name)
    if v not in (0, 1):
        raise ValueError(f"{name} must be 0 or 1, got {v}")
    return bool(v)


def choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """A string attribute, matched against ``choices`` (lower case) without regard to letter case:
    the one rule for every string attribute (``layout`` follows it too, in the core)."""
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


def _trunc_div(a: int, b: int) -> int:
    """``a / b`` rounded toward zero (C's integer division), for ``b > 0``."""
    q = abs(a) // b
    return q if a >= 0 else -q


def same_padding(size: int, ek: int, stride: int, upper: bool,
                 negative: bool = False) -> Tuple[int, int, int]:
    """(start pad, end pad, output size) of SAME_UPPER / SAME_LOWER auto padding (``size`` from
    :func:`spatial_size`).

    ``out = ceil(size / stride)`` and the total padding ``(out - 1) * stride + ek - size`` is
    split with the odd one at the end (SAME_UPPER) or the start (SAME_LOWER). A negative total
    (stride > window) is clamped to 0, or with ``negative=True`` kept and split as onnxruntime
    splits it (start = total / 2, SAME_LOWER (total + 1) / 2, rounded toward zero): the pads are
    then <= 0 and :func:`crop` turns them into a crop of the input (ruling R3).
    """
    out = ceil_div(size, stride)
    total = (out - 1) * stride + ek - size
    if total < 0 and not negative:
        total = 0
    start = _trunc_div(total, 2) if upper else _trunc_div(total + 1, 2)
    return start, total - start, out


def crop(x: Any, pads_begin: Sequence[int], pads_end: Sequence[int]) -> Any:
    """``x`` (channels first) without the positions that the negative entries of the pads
    remove; the other entries leave their side as it is. A view (numpy or torch): the core
    copies it once, as any non-contiguous input."""
    index = [slice(None), slice(None)]
    for b, e in zip(pads_begin, pads_end):
        index.append(slice(max(0, -b), e if e < 0 else None))
    return x[tuple(index)]


FLOOR, CEIL, CEIL_DROP = "floor", "ceil", "ceil_drop"


def pooled_size(size: int, ek: int, stride: int, pb: int, pe: int, rounding: str, name: str,
                axis: int, pads_name: str = "pads", large_window: bool = False,
                symbolic: bool = False) -> int:
    """Output size of one axis: ``floor`` or ``ceil`` of ``(size + pb + pe - ek) / stride``,
    plus one.

    ``rounding``: ``FLOOR``; ``CEIL`` keeps every window the formula gives (OpenVINO ``ceil``);
    ``CEIL_DROP`` drops a last window that would start in the right padding, at or past
    ``size + pb`` (ONNX, PyTorch, OpenVINO ``ceil_torch``). An effective window larger than the
    padded input is an error, except with ceil rounding and ``large_window`` (ONNX and PyTorch,
    ruling R1) while the formula still gives an output: one window, hanging past the end.
    ``symbolic``: ``size`` may be a size torch.compile traces, which skips the int64 check (a
    tensor's size is far from it, and the bound would be a guard torch.export cannot prove for
    an unbounded dimension; the core checks the call's real sizes).
    """
    if not symbolic and size + pb + pe > INT64_MAX:
        raise ValueError(f"{pads_name}: the padded size {size} + {pb} + {pe} of spatial axis "
                         f"{axis} must fit in int64")
    span = size + pb + pe - ek
    ceil = rounding != FLOOR
    out = (ceil_div(span, stride) if ceil else span // stride) + 1
    if span < 0 and not (ceil and large_window and out >= 1):
        raise ValueError(
            f"{name}: the effective window {ek} on spatial axis {axis} is larger than the padded "
            f"input {size + pb + pe}")
    if rounding == CEIL_DROP and (out - 1) * stride >= size + pb:
        out -= 1  # the last window would start in the right padding
    return out


def spatial_size(spatial: Sequence[int], axis: int) -> int:
    """The input size on one spatial axis, which must be >= 1 (checked axis by axis, in the
    front ends' per-axis loops, so earlier axes' errors come first)."""
    size = spatial[axis]
    if size < 1:
        raise ValueError(f"x: spatial sizes must be >= 1, got {size} on spatial axis {axis}")
    return size


def spatial_shape(a: np.ndarray, rank: int, name: str) -> Tuple[int, ...]:
    """Spatial sizes of a channels-first array whose spatial rank must be ``rank``."""
    if a.ndim != rank + 2:
        raise ValueError(
            f"x/{name}: {name} has {rank} {'entry' if rank == 1 else 'entries'} ({rank} spatial "
            f"{'axis' if rank == 1 else 'axes'}), so x must be a {rank + 2}-D input (N, C, ...), "
            f"got shape {a.shape}")
    return a.shape[2:]


class _Renamed:
    """Context manager behind :func:`renamed`; holds no per-use state, so one instance serves
    every call."""

    def __init__(self, names: Iterable[Tuple[str, str]]) -> None:
        self.names = dict(names)
        self.pattern = re.compile(r"\b(" + "|".join(map(re.escape, self.names)) + r")\b")

    def __enter__(self) -> "_Renamed":
        return self

    def __exit__(self, kind: Optional[type], exc: Optional[BaseException], tb: Any) -> bool:
        if kind in (ValueError, TypeError):
            message = self.pattern.sub(lambda m: self.names[m.group(1)], str(exc))
            raise kind(message) from None
        return False


@lru_cache(maxsize=None)
def _renamer(items: Tuple[Tuple[str, str], ...]) -> _Renamed:
    return _Renamed(items)


def renamed(names: Mapping[str, str]) -> _Renamed:
    """A context manager that rewrites the core's argument names in a ValueError / TypeError
    (``window_size`` -> ``kernel_shape``, ...) into the front end's own. Built once per mapping:
    it sits on every front-end call."""
    return _renamer(tuple(names.items()))


@lru_cache(maxsize=256)
def adaptive_desc(sizes: Tuple[int, ...], name: str = "output_size") -> AdaptiveAveragePoolingDesc:
    """The adaptive descriptor of a front end's output sizes (a tuple of ints), built once per
    distinct tuple; an entry < 1 is reported under the front end's ``name``."""
    for i, v in enumerate(sizes):
        if v < 1:
            raise ValueError(f"{name}[{i}] must be >= 1, got {v}")
    return AdaptiveAveragePoolingDesc(sizes)
