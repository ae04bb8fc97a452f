"""Fuzzing avgpool.functional against its model (and torch.nn.functional)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

from avgpool import functional
from fuzz_model import (
    CORE_FIELDS,
    INT64_MAX,
    Expect,
    Invalid,
    Viol,
    assert_close,
    bool_attr,
    cdiv,
    front_names,
    fuzz,
    m_flag,
    m_int,
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

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


F_NAMES = front_names({"window_size": "kernel_size", "strides": "stride",
                       "start_padding": "padding", "end_padding": "padding",
                       "output_sizes": "kernel_size", "dilations": "kernel_size"})


def m_expand(value, name, rank, allow_none=False):
    """An int, or a list / tuple of ``rank`` ints, or of 1 for the window arguments (torch's
    convention); an adaptive output size (allow_none) is not broadcast (torch rejects it)."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1 and not allow_none:
            value = tuple(value) * rank
        if len(value) != rank:
            raise Invalid(name)
        return tuple(None if allow_none and e is None else m_int(e, name) for e in value)
    if allow_none and value is None:
        return (None,) * rank
    return (m_int(value, name),) * rank


def model_functional(v: Viol, x_shape, rank, fname, kernel_size, stride, padding, ceil_mode,
                     cip, divisor_override):
    """functional.avg_pool{1,2,3}d: docs/semantics.md section 2 (PyTorch-style)."""
    unbatched = len(x_shape) == rank + 1
    if len(x_shape) not in (rank + 1, rank + 2):
        v.add("x", fname)
    shape = ((1,) + tuple(x_shape)) if unbatched else tuple(x_shape)
    k = v.attempt(m_expand, kernel_size, "kernel_size", rank)
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        s = k
    else:
        s = v.attempt(m_expand, stride, "stride", rank)
    p = v.attempt(m_expand, padding, "padding", rank)
    override = None
    if divisor_override is not None:
        override = v.attempt(m_int, divisor_override, "divisor_override")
    ceil = v.attempt(m_flag, ceil_mode, "ceil_mode")
    include = v.attempt(m_flag, cip, "count_include_pad")
    if v:
        return None
    sizes = shape[2:]
    outs = []
    for a in range(rank):
        if sizes[a] < 1:  # checked axis by axis with the arguments (_frontend.spatial_size)
            v.add("x")
        if k[a] < 1:
            v.add("kernel_size")
        if s[a] < 1:
            v.add("stride")
        if p[a] < 0 or p[a] > k[a] // 2:
            v.add("padding")
        if v:
            continue
        span = sizes[a] + 2 * p[a] - k[a]
        out = (cdiv(span, s[a]) if ceil else span // s[a]) + 1
        if span < 0 and not (ceil and out >= 1):  # ceil: one overhanging window (R1)
            v.add("kernel_size", "x")
            continue
        if ceil and (out - 1) * s[a] >= sizes[a] + p[a]:
            out -= 1
        outs.append(out)
    if rank == 3 and not v and any(n < kk for n, kk in zip(sizes, k)):
        v.add("kernel_size", "x")  # torch's avg_pool3d: the input must hold the kernel (R2)
    if override == 0 or (override is not None and abs(override) > INT64_MAX):
        v.add("divisor_override")
    for name, vals in (("kernel_size", k), ("stride", s), ("padding", p)):
        if any(e > INT64_MAX for e in vals):
            v.add(name, *CORE_FIELDS)
    if v:
        return None
    fields = dict(window=k, strides=s, pb=p, pe=p, dil=(1,) * rank, include=include,
                  outs=tuple(outs), overhang=False, override=override)
    exp = model_core_pool(v, shape, "NCHW", fields, names=F_NAMES)
    if exp is not None:
        exp.unbatched = unbatched
    return exp


def int_or_seq(draw, values):
    """A torch-style size argument: an int, a 1-sequence, a rank-sequence, or garbage."""
    r = draw(st.integers(0, 19))
    if r < 8 and len(set(values)) == 1:
        return values[0] if draw(st.booleans()) else [values[0]]
    if r == 0:
        return draw(st.sampled_from([None, 1.5, "2", True, np.array(values),
                                     np.int64(values[0]), np.array(values[0])]))
    return seq_of(draw, values)


def torch_peer(fn, *args):
    try:
        return fn(*args), None
    except (RuntimeError, ValueError, TypeError, IndexError) as e:
        return None, e


@fuzz
@given(st.data())
def test_fuzz_functional_avg_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    unbatched = draw(st.integers(0, 4)) == 0
    xcase = draw(x_cases(rank, unbatched=unbatched))
    shape = xcase.shape
    sizes = spatial_of(shape, "NCHW", rank, lead=len(shape) - rank) \
        if len(shape) in (rank + 1, rank + 2) else (5,) * rank
    ks, ss, _, _, _ = window_params(draw, sizes, allow_dilation=False)
    ps = [draw(st.sampled_from([0, 0, k // 2, max(0, k // 2 - 1), k // 2 + 1])) for k in ks]
    kernel_size = int_or_seq(draw, ks)
    stride = draw(st.sampled_from([None, [], "x", "x"]))
    stride = int_or_seq(draw, ss) if stride == "x" else stride
    padding = int_or_seq(draw, ps)
    ceil_mode = draw(bool_attr())
    cip = draw(bool_attr())
    divisor_override = draw(st.sampled_from([None] * 6 + [1, 3, -2, 0, 2**63, 1.5]))
    fname = f"avg_pool{rank}d"
    v = Viol()
    exp = model_functional(v, shape, rank, fname, kernel_size, stride, padding,
                                      ceil_mode, cip, divisor_override)
    x_violations(v, xcase)
    exp = verdict(v, exp)
    if isinstance(exp, Expect) and exp.too_big():
        return
    note(f"functional.{fname}(kernel_size={kernel_size!r}, stride={stride!r}, "
         f"padding={padding!r}, ceil_mode={ceil_mode!r}, count_include_pad={cip!r}, "
         f"divisor_override={divisor_override!r})")
    fn = getattr(functional, fname)
    y = run_case(lambda: fn(xcase.x, kernel_size, stride, padding, ceil_mode, cip,
                            divisor_override), xcase, exp)
    # the peer: torch.nn.functional in float64 on small, non-empty inputs (an avg_pool3d input
    # smaller than the kernel is an error for both, ruling R2: y is None then)
    if (y is not None and torch is not None and 0 < xcase.values.size <= 20000
            and small_cfg(exp)):
        a = exp.axes
        t = torch.from_numpy(np.ascontiguousarray(xcase.values.astype(np.float64)))
        k, s, p = [e.k for e in a], [e.s for e in a], [e.pb for e in a]
        if rank == 1:  # torch's avg_pool1d has no divisor_override: avg_pool2d over (1, k)
            t, k, s, p = t[..., None, :], [1] + k, [1] + s, [0] + p
        want, err = torch_peer(getattr(torch.nn.functional, f"avg_pool{max(rank, 2)}d"), t, k,
                               s, p, m_flag(ceil_mode, ""), m_flag(cip, ""), exp.override)
        assert err is None, f"torch rejects a call avgpool accepts: {err}"
        if rank == 1:
            want = want[..., 0, :]
        assert_close(y, want.numpy(), reference(xcase.values, exp)[1], xcase.dtype)


@fuzz
@given(st.data())
def test_fuzz_functional_adaptive_avg_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    unbatched = draw(st.integers(0, 4)) == 0
    xcase = draw(x_cases(rank, unbatched=unbatched))
    shape = xcase.shape
    sizes = spatial_of(shape, "NCHW", rank, lead=len(shape) - rank) \
        if len(shape) in (rank + 1, rank + 2) else (5,) * rank
    outs = [draw(st.sampled_from([1, max(1, min(n, 40)), max(1, min(n, 40)) + 1,
                                  draw(st.integers(1, 9))])) for n in sizes]
    output_size = int_or_seq(draw, outs)
    if (isinstance(output_size, (list, tuple)) and output_size and rank > 1
            and draw(st.integers(0, 4)) == 0):
        output_size = list(output_size)
        output_size[draw(st.integers(0, len(output_size) - 1))] = None
    fname = f"adaptive_avg_pool{rank}d"
    v = Viol()
    if len(shape) not in (rank + 1, rank + 2):
        v.add("x", fname)
    unb = len(shape) == rank + 1
    full = ((1,) + tuple(shape)) if unb else tuple(shape)
    o = v.attempt(m_expand, output_size, "output_size", rank, True)
    exp = None
    if o is not None and len(full) == rank + 2 and any(
            e is None and full[2 + i] < 1 for i, e in enumerate(o)):
        v.add("output_size")  # None takes the input size, here 0
    if o is not None and not v:
        o = tuple(full[2 + i] if e is None else e for i, e in enumerate(o))
        if any(e < 1 for e in o):
            v.add("output_size")
        elif any(e > INT64_MAX for e in o):
            v.add("output_size", "output_sizes")
        else:
            exp = model_core_adaptive(v, full, "NCHW", o, ("output_size",))
            if exp is not None:
                exp.unbatched = unb
    x_violations(v, xcase)
    exp = verdict(v, exp)
    if isinstance(exp, Expect) and exp.too_big():
        return
    note(f"functional.{fname}(output_size={output_size!r})")
    fn = getattr(functional, fname)
    y = run_case(lambda: fn(xcase.x, output_size), xcase, exp)
    if y is not None and torch is not None and 0 < xcase.values.size <= 20000:
        t = torch.from_numpy(np.ascontiguousarray(xcase.values.astype(np.float64)))
        want, err = torch_peer(getattr(torch.nn.functional, fname), t, list(exp.spatial_out))
        assert err is None, f"torch rejects a call avgpool accepts: {err}"
        assert_close(y, want.numpy(), reference(xcase.values, exp)[1], xcase.dtype)
