"""Fuzzing the core API (fuzz_model.py has the model and the check): AveragePoolingDesc,
AdaptiveAveragePoolingDesc, average_pool, adaptive_average_pool and output_shape."""

from __future__ import annotations

import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

import avgpool
from fuzz_model import (
    INT64_MAX,
    Axis,
    Expect,
    Invalid,
    Viol,
    bool_attr,
    fill,
    fuzz,
    hash_equal_to_int,
    layout_attr,
    m_ints,
    m_layout,
    model_adaptive_desc,
    model_core_adaptive,
    model_core_pool,
    model_desc,
    model_threads,
    names_one_of,
    out_variants,
    quiet,
    run_case,
    separable_reference,
    seq_of,
    spatial_of,
    threads_attr,
    verdict,
    window_params,
    x_cases,
    x_violations,
)
from reference import ref_adaptive_average_pool, ref_average_pool


@fuzz
@given(st.data())
@quiet
def test_separable_reference_matches_brute_force(data):
    """The separable reference used for large cases agrees with tests/reference.py."""
    draw = data.draw
    rank = draw(st.integers(1, 3))
    sizes = tuple(draw(st.integers(1, {1: 9, 2: 6, 3: 4}[rank])) for _ in range(rank))
    x = fill((2, 3) + sizes, np.dtype(np.float64), draw(st.integers(0, 99)), draw(st.booleans()))
    if draw(st.booleans()):
        outs = tuple(draw(st.integers(1, 7)) for _ in range(rank))
        exp = Expect([Axis(n, out=o, adaptive=True) for n, o in zip(sizes, outs)], 2, 3)
        want = ref_adaptive_average_pool(x, outs)
    else:
        axes = []
        include, overhang = draw(st.booleans()), draw(st.booleans())
        for n in sizes:
            k, s, d = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
            pb, pe = draw(st.integers(0, 3)), draw(st.integers(0, 3))
            o_max = (n + pe + pb - 1) // s + 1 + (2 if overhang else 0)  # past the end
            axes.append(Axis(n, k, s, d, pb, pe, draw(st.integers(1, min(o_max, 6))), include,
                             overhang))
        override = draw(st.sampled_from([None, None, 3, -2]))
        exp = Expect(axes, 2, 3, override=override)
        want = ref_average_pool(x, [a.k for a in axes], [a.s for a in axes],
                                [a.pb for a in axes], [a.pe for a in axes], [a.d for a in axes],
                                include, exp.spatial_out, overhang, override)
    got, _ = separable_reference(x, exp)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


@fuzz
@given(st.data())
def test_fuzz_core_average_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    layout = draw(layout_attr())
    xl = m_layout(layout) or "NCHW"
    xcase = draw(x_cases(rank, xl))
    shape = xcase.shape
    sizes = spatial_of(shape, xl, rank)
    ks, ss, ds, pbs, pes = window_params(draw, sizes)
    kwargs = dict(window_size=seq_of(draw, ks))
    if draw(st.integers(0, 3)):
        kwargs["strides"] = seq_of(draw, ss)
    if draw(st.integers(0, 3)):
        kwargs["dilations"] = seq_of(draw, ds)
    if draw(st.integers(0, 3)):
        kwargs["start_padding"] = seq_of(draw, pbs)
    if draw(st.integers(0, 3)):
        kwargs["end_padding"] = seq_of(draw, pes)
    kwargs["include_padding"] = draw(bool_attr())
    if draw(st.integers(0, 2)) == 0:
        kwargs["count_overhang"] = draw(bool_attr())
    if draw(st.integers(0, 4)) == 0:
        kwargs["divisor_override"] = draw(st.sampled_from([1, 3, -2, 7, 0, 2**63, -(2**63) + 1,
                                                           1.5, True, "2"]))
    if draw(st.integers(0, 3)) == 0:
        # explicit output sizes: up to the padded end (past it with count_overhang)
        outs = []
        for a in range(rank):
            pb = pbs[a] if "start_padding" in kwargs else 0
            pe = pes[a] if "end_padding" in kwargs else 0
            s = ss[a] if "strides" in kwargs else 1
            o_max = (max(sizes[a], 1) + pe + pb - 1) // s + 1
            outs.append(draw(st.integers(1, max(1, min(o_max + 2, 12)))))
        kwargs["output_sizes"] = seq_of(draw, outs)
    num_threads = draw(threads_attr())
    use_desc_object = draw(st.integers(0, 49)) != 0

    v = Viol()
    d = model_desc(v, kwargs["window_size"], kwargs.get("strides"), kwargs.get("start_padding"),
                   kwargs.get("end_padding"), kwargs.get("dilations"), kwargs["include_padding"],
                   kwargs.get("output_sizes"), kwargs.get("count_overhang", False),
                   kwargs.get("divisor_override"))
    if not use_desc_object:
        exp = Invalid("desc")  # average_pool(x, <not a descriptor>) fails on that first
    else:
        exp = model_core_pool(v, shape, layout, d)
        x_violations(v, xcase)
        if not v and exp.too_big():
            # too large to run: the descriptor's output_shape must still agree (whatever
            # num_threads is: see test_num_threads_checked_before_allocating)
            desc = avgpool.AveragePoolingDesc(**kwargs)
            assert desc.output_shape(shape, layout) == exp.shape
            return
        model_threads(v, num_threads)
        exp = verdict(v, exp)
    out, guard = None, None
    if isinstance(exp, Expect):
        out, guard, bad_out = out_variants(draw, exp, xcase)
        if bad_out:
            exp = Invalid("out")
    note(f"AveragePoolingDesc(**{kwargs!r}) layout={layout!r} num_threads={num_threads!r} out="
         f"{None if out is None else (type(out).__name__, getattr(out, 'shape', None))}")

    def call():
        desc = avgpool.AveragePoolingDesc(**kwargs) if use_desc_object else kwargs["window_size"]
        return avgpool.average_pool(xcase.x, desc, layout=layout, out=out,
                                    num_threads=num_threads)

    run_case(call, xcase, exp, out=out, out_guard=guard)


@fuzz
@given(st.data())
def test_fuzz_core_adaptive_average_pool(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    layout = draw(layout_attr())
    xl = m_layout(layout) or "NCHW"
    xcase = draw(x_cases(rank, xl))
    shape = xcase.shape
    sizes = spatial_of(shape, xl, rank)
    outs = []
    for n in sizes:
        n = max(1, min(n, 70))
        outs.append(draw(st.sampled_from([1, n, max(1, n // 2), n + 1, 2 * n + 1,
                                          draw(st.integers(1, 12))])))
    if draw(st.integers(0, 14)) == 0:
        outs[draw(st.integers(0, rank - 1))] = draw(st.sampled_from([2**31, 2**40, 2**62]))
    sizes_arg = seq_of(draw, outs)
    form = draw(st.sampled_from(["desc", "tuple", "tuple", "raw"]))
    num_threads = draw(threads_attr())
    if form != "desc" and isinstance(sizes_arg, (list, tuple)) and any(
            hash_equal_to_int(e) for e in sizes_arg) and draw(st.booleans()):
        # warm the descriptor cache with the integer sizes these look like (2.0 hashes like
        # 2): the lookalikes must still raise (test_adaptive_cache_accepts_floats)
        try:
            avgpool.adaptive_average_pool(
                np.ones((1, 1) + (3,) * len(sizes_arg), np.float32),
                tuple(int(getattr(e, "real", e)) if hash_equal_to_int(e) else 1
                      for e in sizes_arg))
        except (ValueError, TypeError):
            pass
    v = Viol()
    outs_m = model_adaptive_desc(v, sizes_arg)
    if v and form != "desc":
        v.add("desc_or_output_sizes")
    exp = model_core_adaptive(v, shape, layout, outs_m)
    x_violations(v, xcase)
    if not v and exp.too_big():  # see test_fuzz_core_average_pool
        desc = avgpool.AdaptiveAveragePoolingDesc(sizes_arg)
        assert desc.output_shape(shape, layout) == exp.shape
        return
    model_threads(v, num_threads)
    exp = verdict(v, exp)
    out, guard = None, None
    if isinstance(exp, Expect):
        out, guard, bad_out = out_variants(draw, exp, xcase)
        if bad_out:
            exp = Invalid("out")
    note(f"output_sizes={sizes_arg!r} ({form}) layout={layout!r} num_threads={num_threads!r}")

    def call():
        arg = sizes_arg
        if form == "desc":
            arg = avgpool.AdaptiveAveragePoolingDesc(sizes_arg)
        elif form == "tuple" and isinstance(sizes_arg, (list, np.ndarray)):
            arg = tuple(sizes_arg)
        return avgpool.adaptive_average_pool(xcase.x, arg, layout=layout, out=out,
                                             num_threads=num_threads)

    run_case(call, xcase, exp, out=out, out_guard=guard)


SHAPE_ENTRIES = [0, 1, 2, 5, 7, 64, 2**20, 2**31, 2**40, 2**62, 2**63 - 1, 2**63, 2**64, -1,
                 -(2**63), 1.0, True, None, "4"]


@fuzz
@given(st.data())
def test_fuzz_output_shape(data):
    """output_shape of both descriptors with huge, negative and malformed input shapes."""
    draw = data.draw
    rank = draw(st.integers(1, 3))
    layout = draw(layout_attr())
    length = rank + 2 if draw(st.integers(0, 9)) else draw(st.integers(0, 6))
    shape = [draw(st.sampled_from(SHAPE_ENTRIES)) if draw(st.integers(0, 2)) == 0 else
             draw(st.integers(1, 9)) for _ in range(length)]
    adaptive = draw(st.booleans())
    v = Viol()
    if adaptive:
        outs = [draw(st.sampled_from([1, 2, 3, 7, 2**20, 2**40, 2**62, 2**63 - 1]))
                for _ in range(rank)]
        arg = seq_of(draw, outs)
        fields = model_adaptive_desc(v, arg)
    else:
        sizes = [e if type(e) is int and 0 < e < 2**63 else 5 for e in shape[2:2 + rank]]
        sizes += [5] * (rank - len(sizes))
        ks, ss, ds, pbs, pes = window_params(draw, [min(e, 9) for e in sizes])
        if draw(st.booleans()):  # huge window / padding against huge sizes
            ks = [draw(st.sampled_from([k, 2**31, 2**62, 2**63 - 1])) for k in ks]
            pbs = [draw(st.sampled_from([p, 2**62, 2**63 - 1])) for p in pbs]
            pes = [draw(st.sampled_from([p, 2**62, 2**63 - 1])) for p in pes]
            ss = [draw(st.sampled_from([s, 2**62])) for s in ss]
        kwargs = dict(window_size=seq_of(draw, ks), strides=seq_of(draw, ss),
                      dilations=tuple(ds), start_padding=seq_of(draw, pbs),
                      end_padding=seq_of(draw, pes), include_padding=draw(st.booleans()))
        if draw(st.integers(0, 3)) == 0:
            kwargs["output_sizes"] = seq_of(draw, [draw(st.sampled_from(
                [1, 2, 3, 2**31, 2**62])) for _ in range(rank)])
            kwargs["count_overhang"] = draw(st.booleans())
        fields = model_desc(v, **{("window" if k == "window_size" else k): e
                                  for k, e in kwargs.items()})
    container = draw(st.sampled_from(["tuple", "list", "array"]))
    if container == "array" and all(type(e) is int and -2**63 <= e <= INT64_MAX for e in shape):
        shape_arg = np.array(shape, np.int64)
    else:
        shape_arg = list(shape) if container == "list" else tuple(shape)
    desc_ok = not v
    shp = v.attempt(m_ints, shape_arg, "input_shape")
    if shp is not None and any(e < 0 or e > INT64_MAX for e in shp):
        v.add("input_shape")
        shp = None
    exp = None
    if shp is not None:
        exp = (model_core_adaptive(v, shp, layout, fields) if adaptive else
               model_core_pool(v, shp, layout, fields))
    if "x" in v.names:
        v.add("input_shape")
    exp = verdict(v, exp)
    note(f"shape={shape_arg!r} layout={layout!r} "
         f"{('adaptive ' + repr(arg)) if adaptive else kwargs!r}")
    try:
        desc = (avgpool.AdaptiveAveragePoolingDesc(arg) if adaptive else
                avgpool.AveragePoolingDesc(**kwargs))
    except (ValueError, TypeError) as e:
        assert not desc_ok, f"valid descriptor raised {e!r}"
        assert names_one_of(str(e), exp.names), (e, exp.names)
        return
    assert desc_ok, f"invalid descriptor (offending {sorted(v.names)}) accepted"
    try:
        got = desc.output_shape(shape_arg, layout)
    except (ValueError, TypeError) as e:
        if isinstance(exp, Invalid):
            assert names_one_of(str(e), exp.names), (e, exp.names)
            return
        if exp.may_fail:
            return
        raise AssertionError(f"valid output_shape raised {type(e).__name__}: {e}") from e
    assert not isinstance(exp, Invalid), f"invalid (offending {exp.names}) returned {got}"
    assert got == exp.shape, (got, exp.shape)
    assert all(type(e) is int for e in got)
