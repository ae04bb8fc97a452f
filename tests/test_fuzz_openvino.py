"""Fuzzing avgpool.openvino against its model."""

from __future__ import annotations

import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

from avgpool import openvino
from fuzz_model import (
    CORE_FIELDS,
    INT64_MAX,
    Expect,
    Viol,
    bool_attr,
    cdiv,
    front_names,
    fuzz,
    m_choice,
    m_flag,
    m_ints,
    model_core_adaptive,
    model_core_pool,
    run_case,
    seq_of,
    spatial_of,
    verdict,
    window_params,
    x_cases,
    x_violations,
)

OV_NAMES = front_names({"window_size": "kernel", "start_padding": "pads_begin",
                        "end_padding": "pads_end", "output_sizes": "kernel", "dilations": "kernel",
                        "strides": "strides"})


def model_openvino(v: Viol, x_shape, kernel, strides, pads_begin, pads_end, exclude_pad,
                   rounding_type, auto_pad):
    """openvino.avg_pool: docs/semantics.md section 2 (OpenVINO) and the choices its docstring documents."""
    k = v.attempt(m_ints, kernel, "kernel")
    rank = len(k) if k is not None else None
    if k is not None and not 1 <= rank <= 3:
        v.add("kernel")
        rank = None
    if rank is not None and len(x_shape) != rank + 2:
        v.add("x", "kernel")
    auto = v.attempt(m_choice, auto_pad, "auto_pad", ("explicit", "notset", "same_upper",
                                                       "same_lower", "valid"))
    vals = {}
    for name, value, low in (("kernel", kernel, 1), ("strides", strides, 1),
                             ("pads_begin", pads_begin, 0), ("pads_end", pads_end, 0)):
        e = v.attempt(m_ints, value, name, rank) if name != "kernel" else k
        if name.startswith("pads") and auto not in (None, "explicit", "notset"):
            pass  # ignored by the other auto_pad modes (only their type and length count)
        elif e is not None and any(i < low or i > INT64_MAX for i in e):
            v.add(name)  # >= low, and must fit in int64
        vals[name] = e
    excl = v.attempt(m_flag, exclude_pad, "exclude_pad")
    rounding = v.attempt(m_choice, rounding_type, "rounding_type", ("floor", "ceil", "ceil_torch"))
    if v:
        return None
    k, s = vals["kernel"], vals["strides"]
    sizes = x_shape[2:]
    pb, pe, outs = [], [], []
    for a in range(rank):
        n = sizes[a]
        if n < 1:
            v.add("x")  # checked first on each axis
            continue
        if auto in ("same_upper", "same_lower"):
            o = cdiv(n, s[a])
            t = max(0, (o - 1) * s[a] + k[a] - n)
            lo, hi = t // 2, t - t // 2
            b, e = (lo, hi) if auto == "same_upper" else (hi, lo)
        else:
            b, e = (0, 0) if auto == "valid" else (vals["pads_begin"][a], vals["pads_end"][a])
            if excl and (b >= k[a] or e >= k[a]):
                v.add("pads_begin", "pads_end")
        if k[a] > INT64_MAX or s[a] > INT64_MAX:
            v.add("kernel", "strides", *CORE_FIELDS)
            continue
        if b > INT64_MAX or e > INT64_MAX:
            v.add("pads_begin", "pads_end", *CORE_FIELDS)
            continue
        if n + b + e > INT64_MAX:
            v.add("pads_begin", "pads_end")  # the padded size must fit in int64
            continue
        span = n + b + e - k[a]
        if span < 0:
            v.add("kernel", "x", "pads_begin", "pads_end")
            continue
        out = (cdiv(span, s[a]) if rounding != "floor" else span // s[a]) + 1
        if rounding == "ceil_torch" and (out - 1) * s[a] >= n + b:
            out -= 1
        pb.append(b)
        pe.append(e)
        outs.append(out)
    if v:
        return None
    if any(e > INT64_MAX for e in pb + pe + outs):
        v.add("kernel", "pads_begin", "pads_end", "strides", *CORE_FIELDS)
        return None
    padded = any(pb) or any(pe)
    fields = dict(window=k, strides=s, pb=tuple(pb), pe=tuple(pe), dil=(1,) * rank,
                  include=padded and not excl, outs=tuple(outs), overhang=True, override=None)
    return model_core_pool(v, tuple(x_shape), "NCHW", fields, names=OV_NAMES)


@fuzz
@given(st.data())
def test_fuzz_openvino_avg_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    xcase = draw(x_cases(rank))
    shape = xcase.shape
    sizes = spatial_of(shape, "NCHW", rank)
    ks, ss, _, pbs, pes = window_params(draw, sizes, allow_dilation=False)
    kernel = seq_of(draw, ks)
    strides = seq_of(draw, ss)
    pads_begin = seq_of(draw, pbs)
    pads_end = seq_of(draw, pes)
    exclude_pad = draw(bool_attr())
    rounding = draw(st.sampled_from(["floor", "ceil", "ceil_torch", "CEIL"]))
    auto_pad = draw(st.sampled_from(["explicit"] * 4 + ["notset", "valid", "same_upper",
                                                        "same_lower"]))
    if draw(st.integers(0, 24)) == 0:
        rounding = draw(st.sampled_from(["round", None, 1, ""]))
    if draw(st.integers(0, 24)) == 0:
        auto_pad = draw(st.sampled_from(["same", None, b"valid", "SAME_UPPER"]))
    v = Viol()
    exp = model_openvino(v, shape, kernel, strides, pads_begin, pads_end, exclude_pad,
                                    rounding, auto_pad)
    x_violations(v, xcase)
    exp = verdict(v, exp)
    if isinstance(exp, Expect) and exp.too_big():
        return
    note(f"openvino.avg_pool(kernel={kernel!r}, strides={strides!r}, pads_begin={pads_begin!r}, "
         f"pads_end={pads_end!r}, exclude_pad={exclude_pad!r}, rounding_type={rounding!r}, "
         f"auto_pad={auto_pad!r})")
    run_case(lambda: openvino.avg_pool(
        xcase.x, kernel, strides=strides, pads_begin=pads_begin, pads_end=pads_end,
        exclude_pad=exclude_pad, rounding_type=rounding, auto_pad=auto_pad), xcase, exp)


@fuzz
@given(st.data())
def test_fuzz_openvino_adaptive_avg_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    xcase = draw(x_cases(rank))
    shape = xcase.shape
    sizes = spatial_of(shape, "NCHW", rank)
    outs = [draw(st.sampled_from([1, max(1, min(n, 40)), max(1, min(n, 40)) + 1,
                                  draw(st.integers(1, 9))])) for n in sizes]
    if draw(st.integers(0, 14)) == 0:
        outs[draw(st.integers(0, rank - 1))] = draw(st.sampled_from([0, -1, 2**40, 2**62]))
    form = draw(st.sampled_from(["int64", "int32", "list", "list", "float", "uint8", "2d"]))
    if form in ("int64", "int32", "float", "uint8", "2d"):
        dt = {"int64": np.int64, "int32": np.int32, "float": np.float64, "uint8": np.uint8,
              "2d": np.int64}[form]
        if (form == "int32" and max(outs) >= 2**31) or (form == "uint8" and max(outs) > 255):
            dt = np.int64
        arr = np.array(outs, dtype=dt) if min(outs) >= 0 or dt != np.uint8 else \
            np.array(outs, np.int64)
        output_size = arr[None] if form == "2d" else arr
    else:
        output_size = seq_of(draw, outs)
    v = Viol()
    x_violations(v, xcase)
    outs_m = None
    if isinstance(output_size, np.ndarray):
        if output_size.ndim != 1 or output_size.dtype not in (np.int32, np.int64):
            v.add("output_size")
        else:
            outs_m = tuple(int(e) for e in output_size)
    else:
        outs_m = v.attempt(m_ints, output_size, "output_size")
    exp = None
    if outs_m is not None:
        if not 1 <= len(outs_m) <= 3:
            v.add("output_size", "output_sizes")
        elif len(shape) != len(outs_m) + 2:
            v.add("x", "output_size")
        elif any(e < 1 for e in outs_m):
            v.add("output_size")
        elif any(e > INT64_MAX for e in outs_m):
            v.add("output_size", "output_sizes")
        else:
            exp = model_core_adaptive(v, shape, "NCHW", outs_m, ("output_size",))
    exp = verdict(v, exp)
    if isinstance(exp, Expect) and exp.too_big():
        return
    note(f"openvino.adaptive_avg_pool(output_size={output_size!r})")
    run_case(lambda: openvino.adaptive_avg_pool(xcase.x, output_size), xcase, exp)
