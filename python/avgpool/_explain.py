"""explain: which kernel path a call takes, and why (the C core's ap_explain_pool /
ap_explain_adaptive); and the ``--explain`` syntax of ``python -m avgpool info``."""

from __future__ import annotations

from typing import Any, Dict, Sequence, Union

import ml_dtypes
import numpy as np

from ._desc import AdaptiveAveragePoolingDesc, AveragePoolingDesc

__all__ = ["explain", "explain_spec", "SPEC_HELP"]


def _dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def explain(desc: Union[AveragePoolingDesc, AdaptiveAveragePoolingDesc, Sequence[int]],
            input_shape: Sequence[int], *, layout: str = "NCHW", dtype: Any = "float32") -> str:
    """The kernel path that pooling an input of ``input_shape`` (in ``layout``, of ``dtype``) with
    ``desc`` takes on the instruction set in use, and why, as one line, e.g.
    ``"isa avx2, layout NCHW, f32: rows-s2 (stride 2 along W, ...)"``; nothing is pooled.

    ``desc`` is an :class:`AveragePoolingDesc`, an :class:`AdaptiveAveragePoolingDesc` or a
    sequence of adaptive output sizes. Raises the errors a call would raise for the shape. The
    path names (``global``, ``same-flat``, ``rows-s1``, ``rows-s2``, ``rows-s4k4``,
    ``rows-running``, ``rows-gather``, ``plane-flat``, ``planes-cl``, ``scalar-fallback``,
    ``nhwc-direct``, ``nhwc-separable``, ``box``, ``f64-separable``, ``f64-direct``,
    ``f64-global``, ``scalar``, ``none``) describe the implementation and may change between versions.

    >>> import avgpool
    >>> line = avgpool.explain(avgpool.AveragePoolingDesc((9, 9)), (1, 2, 9, 9))
    >>> line.split(": ")[1].split(" (")[0]
    'global'
    """
    if not isinstance(desc, (AveragePoolingDesc, AdaptiveAveragePoolingDesc)):
        desc = AdaptiveAveragePoolingDesc(tuple(desc))
    shape = tuple(int(n) for n in input_shape)
    return desc._c.explain(shape, layout, _dtype(dtype))


SPEC_HELP = """\
--explain SPEC: which kernel path a call takes on this machine, and why. SPEC is a list of
key=value words, values comma-separated per spatial axis:
  shape=N,C,H,W (required; in the order of layout)   layout=NCHW|NHWC   dtype=float32|float64|
  float16|bfloat16; windowed: window=KH,KW  strides=  dilations=  start_padding=  end_padding=
  padding= (both ends)  output_sizes=  include_padding=0|1  count_overhang=0|1
  divisor_override=D; adaptive: adaptive=OH,OW (instead of window). Example:
  python -m avgpool info --explain "window=3,3 strides=2,2 padding=1,1 shape=1,64,56,56"
"""

_PER_AXIS = ("window", "strides", "dilations", "start_padding", "end_padding", "padding",
             "output_sizes", "adaptive", "shape")
_FLAGS = ("include_padding", "count_overhang")


def explain_spec(spec: str) -> str:
    """:func:`explain` for a SPEC as ``python -m avgpool info --explain`` takes it (see
    ``SPEC_HELP``)."""
    fields: Dict[str, Any] = {}
    for word in spec.replace(";", " ").split():
        key, sep, value = word.partition("=")
        key = key.strip().lower()
        if not sep or not value:
            raise ValueError(f"--explain: expected key=value, got {word!r}")
        if key in _PER_AXIS:
            try:
                fields[key] = tuple(int(v) for v in value.split(",") if v)
            except ValueError:
                raise ValueError(f"--explain: {key} takes integers separated by commas, "
                                 f"got {value!r}") from None
        elif key in _FLAGS:
            fields[key] = value.lower() in ("1", "true", "yes")
        elif key == "divisor_override":
            fields[key] = int(value)
        elif key in ("layout", "dtype"):
            fields[key] = value
        else:
            raise ValueError(f"--explain: unknown key {key!r}\n{SPEC_HELP}")
    if "shape" not in fields:
        raise ValueError(f"--explain: shape= is required\n{SPEC_HELP}")
    if ("window" in fields) == ("adaptive" in fields):
        raise ValueError(f"--explain: give window= or adaptive=, not both or neither\n{SPEC_HELP}")
    layout = fields.pop("layout", "NCHW").upper()
    dtype = fields.pop("dtype", "float32")
    shape = fields.pop("shape")
    if "adaptive" in fields:
        return explain(AdaptiveAveragePoolingDesc(fields["adaptive"]), shape, layout=layout,
                       dtype=dtype)
    padding = fields.pop("padding", None)
    if padding is not None:
        fields.setdefault("start_padding", padding)
        fields.setdefault("end_padding", padding)
    window = fields.pop("window")
    return explain(AveragePoolingDesc(window, **fields), shape, layout=layout, dtype=dtype)
