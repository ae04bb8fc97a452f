"""Fuzzing avgpool.directml against its model."""

from __future__ import annotations

from hypothesis import given, note
from hypothesis import strategies as st

from avgpool import directml
from fuzz_model import (
    Expect,
    Viol,
    bool_attr,
    fuzz,
    model_core_pool,
    model_desc,
    run_case,
    seq_of,
    spatial_of,
    verdict,
    window_params,
    x_cases,
    x_violations,
)


@fuzz
@given(st.data())
def test_fuzz_directml_average_pooling(data):
    draw = data.draw
    rank = draw(st.integers(1, 3))
    xcase = draw(x_cases(rank))
    shape = xcase.shape
    sizes = spatial_of(shape, "NCHW", rank)
    ks, ss, ds, pbs, pes = window_params(draw, sizes)
    args = [seq_of(draw, ks), seq_of(draw, ss), seq_of(draw, pbs), seq_of(draw, pes),
            draw(bool_attr())]
    dilations = seq_of(draw, ds) if draw(st.booleans()) else None
    output_sizes = None
    if draw(st.integers(0, 3)) == 0:
        outs = []
        for a, n in enumerate(sizes):
            o_max = (max(n, 1) + pes[a] + pbs[a] - 1) // ss[a] + 1
            outs.append(draw(st.integers(1, max(1, min(o_max + 1, 12)))))
        output_sizes = seq_of(draw, outs)
    v = Viol()
    d = model_desc(v, args[0], args[1], args[2], args[3], dilations, args[4], output_sizes)
    exp = model_core_pool(v, shape, "NCHW", d)
    x_violations(v, xcase)
    exp = verdict(v, exp)
    if isinstance(exp, Expect) and exp.too_big():
        return
    note(f"directml.average_pooling{tuple(args)!r} dilations={dilations!r} "
         f"output_sizes={output_sizes!r}")
    run_case(lambda: directml.average_pooling(xcase.x, *args, dilations=dilations,
                                              output_sizes=output_sizes), xcase, exp)
