"""Fuzzing avgpool.onnx against its model (and onnx.reference where the peers agree)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

from avgpool import onnx as av_onnx
from fuzz_model import (
    CORE_FIELDS,
    INT64_MAX,
    SUPPORTED,
    Expect,
    Invalid,
    Viol,
    assert_close,
    bool_attr,
    cdiv,
    front_names,
    fuzz,
    m_choice,
    m_flag,
    m_ints,
    model_core_adaptive,
    model_core_pool,
    reference,
    run_case,
    seq_of,
    small_cfg,
    spatial_of,
    verdict,
    window_params,
    x_cases,
    x_violations,
)

ONNX_NAMES = front_names({"window_size": "kernel_shape", "start_padding": "pads",
                          "end_padding": "pads", "output_sizes": "kernel_shape",
                          "strides": "strides", "dilations": "dilations"})


def model_onnx(v: Viol, x_shape, kernel_shape, strides, pads, auto_pad, ceil_mode,
               count_include_pad, dilations):
    """onnx.average_pool: docs/semantics.md section 2 (ONNX) and the choices its docstring documents."""
    k = v.attempt(m_ints, kernel_shape, "kernel_shape")
    rank = len(k) if k is not None else None
    if k is not None and not 1 <= rank <= 3:
        v.add("kernel_shape")
        rank = None
    if rank is not None and len(x_shape) != rank + 2:
        v.add("x", "kernel_shape")

    overflow = set()  # found before the per-axis checks, raised after them (as the front end)

    def per_axis(value, name, n, default, low):
        if value is None:
            return (default,) * n if n else None
        vals = v.attempt(m_ints, value, name, n)
        if vals is not None and any(e < low for e in vals):
            v.add(name)
            return None
        if vals is not None and any(e > INT64_MAX for e in vals):
            v.add(name)  # the front end refuses it: must fit in int64
            return None
        return vals

    if k is not None and any(e < 1 for e in k):
        v.add("kernel_shape")
    if k is not None and any(e > INT64_MAX for e in k):
        v.add("kernel_shape")  # the front end refuses it: must fit in int64
    elif k is not None and all(e >= 1 for e in k) and math.prod(k) > INT64_MAX:
        overflow.add("kernel_shape")  # the window's size must fit in int64 (the descriptor's rule)
    s = per_axis(strides, "strides", rank, 1, 1)
    p = per_axis(pads, "pads", 2 * rank if rank else None, 0, 0)
    auto = v.attempt(m_choice, auto_pad, "auto_pad",
                     ("notset", "valid", "same_upper", "same_lower"))
    ceil = v.attempt(m_flag, ceil_mode, "ceil_mode")
    cip = v.attempt(m_flag, count_include_pad, "count_include_pad")
    d = per_axis(dilations, "dilations", rank, 1, 1)
    if v:
        return None
    sizes = x_shape[2:]
    pb, pe, outs = [], [], []
    for a in range(rank):
        n = sizes[a]
        if n < 1:
            v.add("x")  # checked first on each axis
            continue
        ek = (k[a] - 1) * d[a] + 1
        if ek > INT64_MAX:
            overflow.update(("kernel_shape", "dilations") + CORE_FIELDS)
        if auto in ("same_upper", "same_lower"):
            out = cdiv(n, s[a])
            t = (out - 1) * s[a] + ek - n  # may be negative: applied as a crop (R3)
            trunc = (lambda q: abs(q) // 2 if q >= 0 else -(abs(q) // 2))  # C's q / 2
            b = trunc(t) if auto == "same_upper" else trunc(t + 1)
            e = t - b
        else:
            b, e = (0, 0) if auto == "valid" else (p[a], p[a + rank])
            if n + b + e > INT64_MAX:
                v.add("pads")  # the padded size must fit in int64
                continue
            span = n + b + e - ek
            out = (cdiv(span, s[a]) if ceil else span // s[a]) + 1
            if span < 0 and not (ceil and out >= 1):  # ceil: one overhanging window (R1)
                v.add("kernel_shape", "x", "pads", "dilations")
                continue
            if ceil and (out - 1) * s[a] >= n + b:
                out -= 1
        pb.append(b)
        pe.append(e)
        outs.append(out)
    v.add(*overflow)
    if v:
        return None
    if any(e > INT64_MAX for e in pb + pe + outs):
        v.add("kernel_shape", "pads", "strides", "dilations", *CORE_FIELDS)
        return None
    fields = dict(window=k, strides=s, pb=tuple(pb), pe=tuple(pe), dil=d, include=cip,
                  outs=tuple(outs), overhang=False, override=None)
    return model_core_pool(v, tuple(x_shape), "NCHW", fields, names=ONNX_NAMES)


@fuzz
@given(st.data())
def test_fuzz_onnx_average_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    xcase = draw(x_cases(rank))
    shape = xcase.shape
    sizes = spatial_of(shape, "NCHW", rank)
    ks, ss, ds, pbs, pes = window_params(draw, sizes)
    kernel_shape = seq_of(draw, ks)
    strides = seq_of(draw, ss) if draw(st.integers(0, 3)) else None
    dilations = seq_of(draw, ds) if draw(st.integers(0, 3)) else None
    pads = seq_of(draw, pbs + pes) if draw(st.integers(0, 3)) else None
    auto_pad = draw(st.sampled_from(["NOTSET"] * 4 + ["VALID", "SAME_UPPER", "SAME_LOWER",
                                                      "same_lower", b"VALID"]))
    if draw(st.integers(0, 24)) == 0:
        auto_pad = draw(st.sampled_from(["SAME", "", None, 1, "EXPLICIT"]))
    ceil_mode = draw(bool_attr())
    cip = draw(bool_attr())
    v = Viol()
    exp = model_onnx(v, shape, kernel_shape, strides, pads, auto_pad, ceil_mode, cip,
                                dilations)
    x_violations(v, xcase)
    exp = verdict(v, exp)
    if isinstance(exp, Expect) and exp.too_big():
        return
    note(f"onnx.average_pool(kernel_shape={kernel_shape!r}, strides={strides!r}, pads={pads!r}, "
         f"auto_pad={auto_pad!r}, ceil_mode={ceil_mode!r}, count_include_pad={cip!r}, "
         f"dilations={dilations!r})")
    y = run_case(lambda: av_onnx.average_pool(
        xcase.x, kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
        ceil_mode=ceil_mode, count_include_pad=cip, dilations=dilations), xcase, exp)
    # the peer where the documented behaviours agree (docs/semantics.md section 3: not auto_pad with
    # ceil_mode or dilations, no empty windows), on small finite float32 / float64 inputs
    if (y is not None and xcase.dtype in SUPPORTED[:2] and 0 < xcase.values.size <= 4000
            and small_cfg(exp)):
        auto = (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad).upper()
        dil = [a.d for a in exp.axes]
        if ((auto != "NOTSET" and (m_flag(ceil_mode, "") or max(dil) > 1
                                   or any(a.s > a.k for a in exp.axes)))
                or any(max(a.pb, a.pe) >= (a.k - 1) * a.d + 1 for a in exp.axes)
                or (m_flag(ceil_mode, "") and any(a.s > a.k for a in exp.axes))
                or (m_flag(ceil_mode, "") and any((a.out - 1) * a.s + (a.k - 1) * a.d + 1
                                                  > a.n + a.pb + a.pe for a in exp.axes))
                or not np.isfinite(xcase.values).all()):
            # onnx.reference refuses, crashes or is wrong: NaN / inf, ceil with s > k, and a
            # ceil size that needs padding past the explicit pads, which it splits over both
            # ends (test_onnx.py::test_pin_reference_ceil_extra_pad_shifts_windows)
            return
        from peers import onnx_reference

        attrs = dict(kernel_shape=[a.k for a in exp.axes], strides=[a.s for a in exp.axes],
                     dilations=dil, auto_pad=auto, ceil_mode=int(m_flag(ceil_mode, "")),
                     count_include_pad=int(m_flag(cip, "")))
        if auto == "NOTSET":
            attrs["pads"] = [a.pb for a in exp.axes] + [a.pe for a in exp.axes]
        want = onnx_reference(xcase.values.astype(np.float64), **attrs)
        assert_close(y, want, reference(xcase.values, exp)[1], xcase.dtype)


@fuzz
@given(st.data())
def test_fuzz_onnx_global_average_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    xcase = draw(x_cases(rank))
    shape = xcase.shape
    v = Viol()
    x_violations(v, xcase)
    exp = None
    if not 3 <= len(shape) <= 5:
        v.add("x")
    else:
        exp = model_core_adaptive(v, shape, "NCHW", (1,) * (len(shape) - 2), ("x",))
    exp = verdict(v, exp)
    if isinstance(exp, Invalid):
        exp.names = {"x"}
    y = run_case(lambda: av_onnx.global_average_pool(xcase.x), xcase, exp)
    if y is not None and y.size and xcase.dtype == np.dtype(np.float64):
        axes = tuple(range(2, len(shape)))
        with np.errstate(invalid="ignore"):
            want = xcase.values.mean(axis=axes, keepdims=True)
            want_abs = np.abs(xcase.values).mean(axis=axes, keepdims=True)
        # the bound of every other comparison: relative to the mean |x|, not to a mean that
        # cancels to near zero (a long run found 2.6e-12 relative to -9e-6 = 2e-17 absolute)
        assert_close(y, want, want_abs, xcase.dtype)
